"""Toolathlon (github.com/hkust-nlp/Toolathlon), its local-only tasks, as an evaluation source:
checkout.py reads a user's checkout, local_tools.py serves the local tools it asks for, episode.py is
the episode environment."""

from pathlib import Path

from envs.benchmarks.environment import BenchmarkEnvironment

#: Toolathlon's environment for its local-only tasks (it pins Python 3.12.11)
ENVIRONMENT = BenchmarkEnvironment(
    "toolathlon", Path(__file__).with_name("requirements.txt"),
    ("@modelcontextprotocol/server-filesystem@2026.8.31", "@modelcontextprotocol/server-memory@2026.8.31"), "3.12")
