"""MCP-Atlas (github.com/scaleapi/mcp-atlas) as an evaluation source: its tasks whose servers run
offline, on a per-episode copy of its /data state, judged by its own claims scorer against an
OpenAI-compatible endpoint the user names (episode.py, `kind: mcp_atlas`)."""

from pathlib import Path

from envs.benchmarks.environment import BenchmarkEnvironment

#: the npm servers of Atlas's template that run offline, at its pins, except desktop-commander: its pin
#: 0.2.7 is not on npm, and 0.2.10 (the next published) has every tool Atlas's tasks name
NODE_PACKAGES = ("@modelcontextprotocol/server-filesystem@2026.7.10", "@modelcontextprotocol/server-memory@2025.8.4",
                 "@wonderwhy-er/desktop-commander@0.2.10", "mcp-server-code-runner@0.1.7")
ENVIRONMENT = BenchmarkEnvironment("mcp-atlas", Path(__file__).with_name("requirements.txt"), NODE_PACKAGES, "3.12")
