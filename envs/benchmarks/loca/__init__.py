"""LOCA-bench (github.com/hkust-nlp/LOCA-bench) as an evaluation source: checkout.py reads a user's
checkout, driver.py runs in LOCA's own Python, episode.py is the episode environment."""

from pathlib import Path

from envs.benchmarks.environment import BenchmarkEnvironment

#: LOCA's environment: requirements.txt (pinned), its npx servers; LOCA requires Python < 3.13
ENVIRONMENT = BenchmarkEnvironment(
    "loca", Path(__file__).with_name("requirements.txt"),
    ("@modelcontextprotocol/server-filesystem@2026.8.31", "@modelcontextprotocol/server-memory@2026.8.31"), "3.12")
