"""How often the result rule misjudges real tool outputs: `python -m bench.heuristic_corpus` prints JSON.

Real servers, real calls: the reference MCP servers installed with the project (mcp-server-time,
mcp-server-git, the npm filesystem server) and the test fixture's non-compliant tools (failures said
only in text, as mock benchmark servers do). Each call is labelled with what truly happened (the call
failed, or it returned data — a file whose text starts like an error report is data), then judged by
three rules (envs/runtime/upstream.py):

    rule        the runtime's: isError, else the text heuristic on text results only
    isError     isError alone (`error_heuristic: false`)
    all_text    the heuristic on every result's text, declared structured results too (the old rule)

false_positives: data called an error (a program gets ToolError for a file it could read);
false_negatives: a failure returned as a value (a program fails later, confused).

With `--loca CHECKOUT` (and LOCA's environment made: envs/benchmarks/environment.py) the corpus also
holds calls to LOCA-bench's own servers (canvas, email, excel, filesystem, python_execute, memory) on a
state its generator made (CanvasArrangeExamS2LEnv, preset 8k), run through the LOCA adapter.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from envs.runtime.upstream import Upstream, Upstreams, UpstreamSpec, looks_like_error, result_text, to_native

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
NPM_FS = ROOT / ".mcp-servers" / "node_modules" / ".bin" / "mcp-server-filesystem"
FIXTURE = ROOT / "tests" / "servers" / "fixture_server.py"

#: file contents that are data, though they start like failure reports (logs, reports, notes)
DATA_FILES = {
    "rejects.txt": "Error: 0 rows rejected\nall 120 rows loaded",
    "logins.txt": "Failed logins: none today",
    "page.txt": "Not found",
    "crash.log": "Traceback (most recent call last):\n  File \"app.py\", line 3\nValueError: bad",
    "access.txt": "Permission denied for user bob at 10:02 (expected: he left)",
    "notes.md": "# Notes\nError budget: 0.1%",
}


def cases(data: Path, repo: Path) -> list[tuple[str, dict[str, Any], bool]]:
    """(tool, arguments, truly failed)."""
    out: list[tuple[str, dict[str, Any], bool]] = [
        ("get_current_time", {"timezone": "UTC"}, False),
        ("get_current_time", {"timezone": "Mars/Olympus_Mons"}, True),
        ("convert_time", {"source_timezone": "UTC", "time": "12:30", "target_timezone": "Asia/Tokyo"}, False),
        ("convert_time", {"source_timezone": "UTC", "time": "25:99", "target_timezone": "Asia/Tokyo"}, True),
        ("git_status", {"repo_path": str(repo)}, False),
        ("git_log", {"repo_path": str(repo)}, False),
        ("git_show", {"repo_path": str(repo), "revision": "HEAD"}, False),
        ("git_show", {"repo_path": str(repo), "revision": "no-such-rev"}, True),
        ("git_status", {"repo_path": str(data / "not-a-repo")}, True),
        ("git_diff_unstaged", {"repo_path": str(repo)}, False),
        ("list_directory", {"path": str(data)}, False),
        ("read_text_file", {"path": str(data / "missing.txt")}, True),
        ("get_file_info", {"path": str(data / "missing.txt")}, True),
        ("read_text_file", {"path": "/etc/passwd"}, True),
        ("search_files", {"path": str(data), "pattern": "*.txt"}, False),
        ("legacy_lookup", {"record_id": "a1"}, False),
        ("legacy_lookup", {"record_id": "zz"}, True),
        ("find_email", {"email_id": "e1"}, False),
        ("find_email", {"email_id": "nope"}, True),
        ("get_record", {"record_id": "zz"}, True),
        ("read_report", {"name": "q3.csv"}, False),
        ("note", {"text": "Error: the printer on floor 2 (a user's note)"}, False),
        ("note", {"text": "User 7 not found"}, False),
        ("rows", {"n": 2}, False),
    ]
    out += [("read_text_file", {"path": str(data / name)}, False) for name in DATA_FILES]
    return out


def loca_cases(ws: str, email_id: str) -> list[tuple[str, dict[str, Any], bool]]:
    return [
        ("canvas_list_courses", {}, False),
        ("canvas_get_course", {"course_id": 1}, False),
        ("canvas_get_course", {"course_id": 99999}, True),
        ("canvas_list_assignments", {"course_id": 1}, False),
        # LOCA's canvas answers an unknown course's assignments with an empty list: data, as it says it
        ("canvas_list_assignments", {"course_id": 99999}, False),
        ("get_emails", {}, False),
        ("read_email", {"email_id": email_id}, False),
        ("read_email", {"email_id": "nope"}, True),
        ("search_emails", {"query": "exam"}, False),
        ("search_emails", {"query": "zzzz-no-such-text"}, False),
        ("get_folders", {}, False),
        ("list_directory", {"path": ws}, False),
        ("read_text_file", {"path": f"{ws}/no-such-file.txt"}, True),
        ("read_data_from_excel", {"filepath": f"{ws}/no-such.xlsx", "sheet_name": "Sheet1"}, True),
        ("python_execute", {"code": "print(6 * 7)"}, False),
        # the memory server cannot parse the memory file this task's initial workspace ships (isError)
        ("read_graph", {}, True),
        ("claim_done", {}, False),
    ]


async def measure_loca(checkout: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The LOCA part of the corpus (module docstring): rows as measure() makes them, and the servers."""
    from envs.benchmarks import loca
    from envs.benchmarks.environment import ensure_environment, node_dir_of
    from envs.benchmarks.loca.episode import LocaTaskEnv
    from envs.benchmarks.loca.kind import LocaRef
    from envs.runtime.episode import Runtime
    from schema.config import RuntimeConfig

    python = ensure_environment(loca.ENVIRONMENT, Path.home() / "progagent" / "benchmarks")
    ref = LocaRef(str(Path(checkout).resolve()), "8k", "CanvasArrangeExamS2LEnv", 42, python, node_dir_of(python))
    env = LocaTaskEnv(ref)
    rows: list[dict[str, Any]] = []
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        ep = await env.open(runtime)
        try:
            router = ep.router
            ws = str(Path(ep.final_state().workspace).resolve())
            _, listing = await router.call_raw("get_emails", {})
            email_id = str((to_native(listing, None, True).value or {}).get("emails", [{}])[0].get("id", "1"))
            rows = [await judge_call(router, tool, args, failed) for tool, args, failed in loca_cases(ws, email_id)
                    if tool in router.catalogue]
        finally:
            await ep.close()
    return rows, [f"loca:{s}" for s in env.config["mcp_servers"]]


async def judge_call(router: Upstreams, tool: str, args: dict[str, Any], failed: bool) -> dict[str, Any]:
    try:
        info, raw = await router.call_raw(tool, args)
    except Exception as exc:  # noqa: BLE001 - a protocol-level error: a failure, not judged by text
        return {"tool": tool, "failed": failed, "protocol_error": str(exc)[:120]}
    text = result_text(raw)
    ours = not to_native(raw, info, True).ok
    return {"tool": tool, "args": args, "failed": failed, "is_error": bool(raw.is_error),
            "structured": raw.structured_content is not None, "text": text[:100],
            "rule": ours, "isError": bool(raw.is_error), "all_text": bool(raw.is_error) or looks_like_error(text)}


async def measure(loca_checkout: str | None = None) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="heur-"))
    try:
        data, repo = tmp / "data", tmp / "repo"
        data.mkdir()
        for name, text in DATA_FILES.items():
            (data / name).write_text(text)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        (repo / "a.txt").write_text("x")
        subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm",
                        "Error: fix the crash on empty input"], check=True)
        specs = [UpstreamSpec("time", [str(BIN / "mcp-server-time")]), UpstreamSpec("git", [str(BIN / "mcp-server-git")]),
                 UpstreamSpec("fx", [sys.executable, str(FIXTURE)])]
        if NPM_FS.exists():
            specs.append(UpstreamSpec("fs", [str(NPM_FS), str(data)]))
        router = Upstreams([Upstream(s) for s in specs])
        await router.start()
        rows = []
        try:
            for tool, args, failed in cases(data, repo):
                if tool in router.catalogue:
                    rows.append(await judge_call(router, tool, args, failed))
        finally:
            await router.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    servers = [s.name for s in specs]
    if loca_checkout:
        loca_rows, loca_servers = await measure_loca(loca_checkout)
        rows += loca_rows
        servers += loca_servers
    judged = [r for r in rows if "rule" in r]
    report: dict[str, Any] = {"calls": len(judged), "truly_failed": sum(r["failed"] for r in judged),
                              "servers": servers, "rules": {}}
    for rule in ("rule", "isError", "all_text"):
        fp = [r for r in judged if r[rule] and not r["failed"]]
        fn = [r for r in judged if not r[rule] and r["failed"]]
        report["rules"][rule] = {"false_positives": len(fp), "false_negatives": len(fn),
                                 "fp_cases": [f"{r['tool']}: {r['text'][:60]!r}" for r in fp],
                                 "fn_cases": [f"{r['tool']}: {r['text'][:60]!r}" for r in fn]}
    return report


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--loca", default=None, metavar="CHECKOUT", help="add calls to LOCA-bench's servers")
    print(json.dumps(asyncio.run(measure(p.parse_args().loca)), indent=2))
