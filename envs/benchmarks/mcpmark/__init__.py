"""MCPMark (github.com/eval-sys/mcpmark) as an evaluation source: its filesystem tasks from a local
data cache the user provides (episode.py, `kind: mcpmark`); its postgres tasks, each on a PostgreSQL
server of its own, are the subpackage postgres/ (`kind: mcpmark_postgres`)."""

from pathlib import Path

from envs.benchmarks.environment import BenchmarkEnvironment

#: the npm filesystem server MCPMark launches with npx; verify.py needs only the standard library
ENVIRONMENT = BenchmarkEnvironment("mcpmark", Path(__file__).with_name("requirements.txt"),
                                   ("@modelcontextprotocol/server-filesystem@2026.8.31",), "3.11")
