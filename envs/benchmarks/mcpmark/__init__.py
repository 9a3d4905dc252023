"""MCPMark (github.com/eval-sys/mcpmark), its filesystem tasks, as an evaluation source, from a local
data cache the user provides (episode.py). Its postgres tasks need a PostgreSQL server with MCPMark's
databases restored and are not supported."""

from pathlib import Path

from envs.benchmarks.environment import BenchmarkEnvironment

#: the npm filesystem server MCPMark launches with npx; verify.py needs only the standard library
ENVIRONMENT = BenchmarkEnvironment("mcpmark", Path(__file__).with_name("requirements.txt"),
                                   ("@modelcontextprotocol/server-filesystem@2026.8.31",), "3.11")
