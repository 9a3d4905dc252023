"""A Judge forks each verifier's child from one of its threads while its other threads build
environments (task data.py, SQLite). A child forked while another thread held one of SQLite's
process-wide mutexes waits on it forever at its first connect: a judge timeout no verifier caused,
which the cheat probes read as "refuses nothing". envs/format/task_env.FORK_GUARD keeps them apart."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from envs.format.library import get_task
from envs.format.task_env import EnvironmentCache, verify_in_child
from schema.records import Verdict


def _opens_sqlite(path: str) -> Verdict:
    for _ in range(5):
        con = sqlite3.connect(path)
        con.execute("select count(*) from sqlite_master").fetchone()
        con.close()
    return Verdict.of({"opened": True})


def test_verifier_children_forked_beside_environment_builds_never_hang(tmp_path: Path):
    task = get_task("hr_leave_carryover")
    stop = threading.Event()

    def build_forever() -> None:  # a second judge thread, building fresh environments as fast as it can
        n = 0
        while not stop.is_set():
            cache = EnvironmentCache(tmp_path / f"cache{n}")
            cache.get(task, "v0")
            n += 1

    builders = [threading.Thread(target=build_forever, daemon=True) for _ in range(2)]
    for t in builders:
        t.start()
    try:
        db = str(tmp_path / "probe.sqlite")
        sqlite3.connect(db).close()
        verdicts = [verify_in_child(_opens_sqlite, (db,), timeout_s=10) for _ in range(60)]
    finally:
        stop.set()
        for t in builders:
            t.join(30)
    assert [v.error for v in verdicts if v.error] == []
    assert all(v.reward == 1.0 for v in verdicts)
