"""The shipped task library: its shape, and `progagent tasks validate` over all of it.

Validation runs every oracle at v0–v3 through the sandboxed runtime and the task's MCP server, and
proves each verifier rejects the untouched state and the task's wrong solutions (see envs/checks/validate.py).
"""

import json
import sqlite3
import subprocess
from collections import Counter

import pytest

from envs.checks.taskcheck import same_environment
from envs.format.library import load_library
from tests.conftest import BIN


def test_library_shape():
    tasks, errors = load_library()
    assert errors == {}
    assert len(tasks) >= 24
    domains = Counter(t.spec.domain for t in tasks.values())
    assert len(domains) >= 12 and max(domains.values()) <= 3
    for task in tasks.values():
        assert len(task.tool_functions()) >= 5, task.id
        assert len(task.wrong_solutions()) >= 2, task.id
        assert "ANSWER" in task.instruction, task.id
        # tasks are not one template with names swapped: their tool sets differ
    tool_sets = [tuple(sorted(t.spec.tools)) for t in tasks.values()]
    assert len(set(tool_sets)) == len(tool_sets)


@pytest.mark.timeout(1500)  # 24 tasks x 4 scales of sandboxed runs: ~2 min here, more on a busy machine
def test_whole_library_validates(tmp_path):
    report = tmp_path / "validate.json"
    r = subprocess.run([str(BIN / "progagent"), "tasks", "validate", "--json", str(report)],
                       capture_output=True, text=True, timeout=1500)
    reports = json.loads(report.read_text())
    failed = {rep["task"]: rep["problems"] for rep in reports if not rep["ok"]}
    assert r.returncode == 0 and not failed, (failed, r.stdout[-3000:], r.stderr[-3000:])
    for rep in reports:
        sizes = [rep["scales"][s] for s in ("v0", "v1", "v2", "v3")]
        assert all(s["oracle_score"] == 1.0 for s in sizes)
        # the environment grows like the paper's (12.7 -> 40.3 files, DB rows x8) from v0 to v3
        assert sizes[3]["rows"] >= 6 * sizes[0]["rows"], rep["task"]
        assert sizes[3]["files"] >= 2.4 * sizes[0]["files"] and sizes[3]["files"] >= 35, rep["task"]
        assert 80_000 <= sizes[0]["db_bytes"] <= 160_000 and 550_000 <= sizes[3]["db_bytes"] <= 800_000, rep["task"]


def test_same_environment_compares_content_not_layout(tmp_path):
    """The determinism check: two builds are the same; the same rows in other pages are the same; one
    changed row, changed file or extra file is not."""
    task = load_library()[0]["retail_loyalty_backfill"]
    a, b = tmp_path / "a", tmp_path / "b"
    task.build(a, "v0")
    task.build(b, "v0")
    assert same_environment(a, b)
    con = sqlite3.connect(b / "db.sqlite")
    con.execute("pragma page_size = 8192")
    con.execute("vacuum")  # the same rows, laid out in pages of another size
    con.close()
    assert (a / "db.sqlite").read_bytes() != (b / "db.sqlite").read_bytes() and same_environment(a, b)
    con = sqlite3.connect(b / "db.sqlite")
    table = con.execute("select name from sqlite_master where type = 'table' order by name").fetchone()[0]
    con.execute(f'delete from "{table}" where rowid = (select min(rowid) from "{table}")')
    con.commit()
    con.close()
    assert not same_environment(a, b)
    task.build(b, "v0")
    some = next(p for p in sorted((b / "workspace").rglob("*")) if p.is_file())
    some.write_bytes(some.read_bytes() + b" ")
    assert not same_environment(a, b)
    task.build(b, "v0")
    (b / "workspace" / "extra.txt").write_text("x")
    assert not same_environment(a, b)
