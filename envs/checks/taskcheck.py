"""Fast in-process checks of a task folder, for authors and the synthesis pipeline.

This runs tools as plain Python calls (with a JSON round trip, as MCP would do) and programs with
`exec`, so it is NOT a sandbox: use it only on code you trust (an author's own task; the folder is
loaded as trusted, envs/format/provenance.py). `progagent tasks validate` runs the same checks through the
real sandboxed runtime, and runs any task that did not ship in bubblewrap.

    python -m envs.checks.taskcheck TASK_ID [--scales v0,v1,v2,v3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from envs.format.library import MAX_ENVIRONMENT_BYTES, Task, TaskLoadError, get_task, load_task
from envs.runtime import untrusted_fs
from schema.records import SCALES


def _dump_digest(db: Path) -> str:
    h = hashlib.sha256()
    con = sqlite3.connect(db)
    try:
        for line in con.iterdump():
            h.update(line.encode())
    finally:
        con.close()
    return h.hexdigest()


def _workspace_files(root: Path) -> list[str]:
    return [p for p, _ in untrusted_fs.list_files(root / "workspace", max_entries=untrusted_fs.DEFAULT_MAX_ENTRIES)]


def same_environment(a: Path, b: Path) -> bool:
    """Whether two built environments hold the same database content and workspace files.

    The databases are compared as bytes first: a deterministic build writes identical pages, and
    reading them is cheap where the SQL dump is a Python loop over every row (most of this check's
    cost at v3). Only databases whose bytes differ are compared row by row, since the same rows can
    be laid out in different pages."""
    files = _workspace_files(a)
    cap = MAX_ENVIRONMENT_BYTES
    if files != _workspace_files(b) or any(untrusted_fs.read_file(a / "workspace", p, cap)
                                           != untrusted_fs.read_file(b / "workspace", p, cap) for p in files):
        return False
    da, db = a / "db.sqlite", b / "db.sqlite"
    return da.read_bytes() == db.read_bytes() or _dump_digest(da) == _dump_digest(db)


def env_stats(root: Path) -> dict[str, Any]:
    con = sqlite3.connect(root / "db.sqlite")
    tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
    rows = sum(con.execute(f'select count(*) from "{t}"').fetchone()[0] for t in tables)
    con.close()
    files = untrusted_fs.list_files(root / "workspace", max_entries=untrusted_fs.DEFAULT_MAX_ENTRIES)
    return {"db_bytes": (root / "db.sqlite").stat().st_size, "rows": rows, "tables": len(tables),
            "files": len(files), "file_bytes": sum(n for _, n in files)}


def check_task(task: Task, scales: tuple[str, ...] = SCALES) -> dict[str, Any]:
    """Every check the validator makes, in process. Returns a report; `ok` says if all passed."""
    report: dict[str, Any] = {"task": task.id, "scales": {}, "problems": []}
    problems = report["problems"]
    tools = task.tool_functions()
    if len(tools) < 5:
        problems.append(f"only {len(tools)} tools; at least 5 required")
    wrong = task.wrong_solutions()
    if len(wrong) < 2:
        problems.append(f"only {len(wrong)} wrong solutions in wrong/; at least 2 required")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for scale in scales:
            initial, work, again = tmp / scale / "initial", tmp / scale / "work", tmp / scale / "again"
            task.build(initial, scale)
            task.build(again, scale)
            rep: dict[str, Any] = env_stats(initial)
            if not same_environment(initial, again):
                problems.append(f"{scale}: building twice gives different bytes")
            task.build(work, scale)
            crit = task.verify(work, initial, "", scale)
            if all(crit.values()):
                problems.append(f"{scale}: verifier passes on the untouched environment with an empty answer")
            task.build(work, scale)
            t0 = time.perf_counter()
            try:
                answer, stdout, calls = task.run_program(work, task.oracle_source)
            except Exception as exc:  # noqa: BLE001 - report, do not crash the checker
                problems.append(f"{scale}: oracle raised {type(exc).__name__}: {exc}")
                report["scales"][scale] = rep
                continue
            rep["oracle_s"] = round(time.perf_counter() - t0, 3)
            rep["oracle_calls"] = len(calls)
            rep["oracle_printed_chars"] = len(stdout)
            rep["raw_result_chars"] = sum(c["result_chars"] for c in calls)
            crit = task.verify(work, initial, answer, scale)
            rep["oracle_criteria"] = crit
            if not all(crit.values()):
                problems.append(f"{scale}: oracle fails {[k for k, v in crit.items() if not v]}; answer={answer!r}")
            for name, source in wrong.items():
                task.build(work, scale)
                try:
                    w_answer, _, _ = task.run_program(work, source)
                except Exception as exc:  # noqa: BLE001
                    problems.append(f"{scale}: wrong/{name}.py raised {type(exc).__name__}: {exc}")
                    continue
                if all(task.verify(work, initial, w_answer, scale).values()):
                    problems.append(f"{scale}: verifier passes wrong/{name}.py")
            report["scales"][scale] = rep
    sizes = [report["scales"].get(s, {}) for s in scales]
    for key in ("db_bytes", "files"):
        vals = [s.get(key, 0) for s in sizes]
        if any(b <= a for a, b in zip(vals, vals[1:], strict=False)):
            problems.append(f"{key} does not grow with scale: {vals}")
    report["ok"] = not problems
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", help="task id in envs/tasks or a path to a task folder")
    parser.add_argument("--scales", default=",".join(SCALES))
    args = parser.parse_args(argv)
    try:
        task = load_task(args.task, trusted=True) if Path(args.task).is_dir() else get_task(args.task, trusted=True)
    except TaskLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report = check_task(task, tuple(args.scales.split(",")))
    print(json.dumps(report, indent=1, default=str))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
