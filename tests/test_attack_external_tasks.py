"""Tasks that did not ship with ProgAgent never run their code in a host process.

The attack: a library whose data.py, tools.py, verify.py and wrong solutions each, when imported,
write a marker file at a host path. Loaded through every entry point that takes a library
(`progagent tasks --root … validate`, an episode as env workers open it for training, evaluation
and filtering, the judge), the markers must never appear, and the task must still work: its code
runs in bubblewrap, where that host path does not exist.
"""

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from actors.judge import judge_shipped
from envs.format import provenance
from envs.format.code_runner import SandboxedTask
from envs.format.hosted_tools import HostedTaskTools
from envs.format.kind import TaskRef
from envs.format.library import LIBRARY_DIR, get_task, load_library, load_task
from envs.format.task_env import EnvironmentCache, judge, open_task_episode, snapshot_state
from tests.test_task_format import write_task

ROOT = Path(__file__).resolve().parents[1]
TASK = "marked_items"


def planted(marker_dir: Path, name: str) -> str:
    """Code that leaves a file on the host when imported there (inside bubblewrap the path is absent)."""
    return textwrap.dedent(f'''\
        import os as _os
        try:
            with open({str(marker_dir)!r} + "/{name}-" + str(_os.getpid()), "w") as _f:
                _f.write("ran in a host process")
        except OSError:
            pass
        ''')


@pytest.fixture
def library(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    lib = tmp_path / "lib"
    folder = write_task(lib, TASK, toml=textwrap.dedent(f'''\
        id = "{TASK}"
        domain = "inventory"
        title = "Demo"
        tools = ["list_items", "set_qty", "explode", "read_file", "count"]
        seed = 1
        '''))
    for name in ("data.py", "tools.py", "verify.py"):
        text = (folder / name).read_text().replace("scale.n_rows(3)", "scale.n_rows(400)")  # the db grows with scale
        (folder / name).write_text(planted(markers, name) + text)
    (folder / "wrong").mkdir()
    for i, qty in enumerate((4, 6)):
        (folder / "wrong" / f"qty_{qty}.py").write_text(
            planted(markers, f"wrong{i}") + f"tools['set_qty'](item_id=1, qty={qty})\nfinal_answer = 'ANSWER: {qty}'\n")
    return lib, markers


def test_validate_runs_another_librarys_code_only_in_the_sandbox(library):
    lib, markers = library
    run = subprocess.run([sys.executable, "-m", "launch.cli", "tasks", "--root", str(lib), "validate",
                          "--processes", "1"], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "1 of 1 tasks valid" in run.stdout
    assert sorted(os.listdir(markers)) == []


async def test_episodes_and_judges_run_another_librarys_code_only_in_the_sandbox(library, runtime, tmp_path):
    lib, markers = library
    task = get_task(TASK, lib)
    assert isinstance(task, SandboxedTask) and task.provenance == "external" and task.tool_transport == "sandboxed"
    with pytest.raises(Exception, match="did not ship"):
        task.module("tools")
    cache = EnvironmentCache(tmp_path / "cache")
    ep = await open_task_episode(runtime, task, "v0", cache)  # as an env worker opens it (train, eval, filter)
    try:
        assert isinstance(ep.router.upstreams["task"], HostedTaskTools)
        r = await ep.run_program(task.oracle_source)
        assert not r.is_error, r.text
        await ep.stop()
        state = snapshot_state(ep.final_state().env_root)
        in_process = await asyncio.to_thread(judge, task, "v0", ep.final_state(), "ANSWER: 5", cache)
    finally:
        await ep.close()
    assert in_process.reward == 1.0, in_process
    by_judge = await asyncio.to_thread(judge_shipped, TaskRef(TASK, "v0", str(lib)), state, "ANSWER: 5", 60,
                                       str(tmp_path / "judge-cache"))
    assert by_judge.reward == 1.0, by_judge
    assert sorted(os.listdir(markers)) == []


def test_shipped_means_the_shipped_folder_with_the_shipped_bytes(tmp_path, monkeypatch):
    shipped = get_task("retail_clearance_markdown")
    assert shipped.provenance == "shipped" and not isinstance(shipped, SandboxedTask)
    assert provenance.main(["--check"]) == 0  # the manifest matches the folders
    # the same files anywhere else: external
    import shutil

    copy = shutil.copytree(LIBRARY_DIR / "retail_clearance_markdown", tmp_path / "retail_clearance_markdown")
    assert isinstance(load_task(copy), SandboxedTask)
    # a shipped folder whose bytes changed (a task dropped in, or edited): external
    key = "tasks/retail_clearance_markdown"
    known = provenance._manifest()
    known[key] = dict(known[key], **{"tools.py": "0" * 64})
    monkeypatch.setattr(provenance, "_KNOWN", known)
    assert isinstance(get_task("retail_clearance_markdown"), SandboxedTask)
    tasks, _ = load_library(tmp_path)
    assert all(isinstance(t, SandboxedTask) for t in tasks.values())


async def test_a_tool_reply_past_the_limit_is_dropped_unbuffered_and_the_server_restarts(runtime, tmp_path):
    """tools.py of a task that did not ship runs in the tool host; its replies come back as lines over a
    pipe. A tool that answers with 100 MB must cost the host at most about MAX_LINE_BYTES, be the call's
    error, and leave the next call working (the child is restarted over the same environment)."""
    import tracemalloc

    from envs.format.hosted_tools import MAX_LINE_BYTES

    folder = write_task(tmp_path / "lib", "huge_replies", toml=textwrap.dedent('''\
        id = "huge_replies"
        domain = "inventory"
        title = "Demo"
        tools = ["list_items", "set_qty", "explode", "read_file", "count", "huge"]
        seed = 1
        '''))
    with open(folder / "tools.py", "a") as f:
        f.write('\n\n@tool\ndef huge(env: Env, n: int) -> str:\n    """n bytes of text."""\n    return "x" * n\n')
    task = get_task("huge_replies", tmp_path / "lib")
    ep = await open_task_episode(runtime, task, "v0", EnvironmentCache(tmp_path / "cache"))
    try:
        small = await ep.run_program("print(len(tools['huge'](n=1000)))")
        assert small.text.strip() == "1000", small.text
        tracemalloc.start()
        try:
            r = await ep.run_program("try:\n    tools['huge'](n=100_000_000)\nexcept ToolError as e:\n"
                                     "    print('refused:', e)")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 3 * MAX_LINE_BYTES, f"the host held {peak:,} bytes for one reply"
        assert "refused:" in r.text and "larger than" in r.text, r.text
        again = await ep.run_program("print(tools['count']())")
        assert again.text.strip() == "3", again.text
    finally:
        await ep.close()


async def test_a_tool_reply_of_too_many_values_is_refused_unparsed(runtime, tmp_path):
    """The same pipe, a reply within the byte limit but of many small values (a program can make a
    tool return every row it inserted): parsed, the SDK's server converts and serializes it again,
    hundreds of MB of the host for a few MB of line. Counted before parsing, it is the call's error,
    the child answered (so it stays in step) and the next call works."""
    import tracemalloc

    folder = write_task(tmp_path / "lib", "many_values", toml=textwrap.dedent('''\
        id = "many_values"
        domain = "inventory"
        title = "Demo"
        tools = ["list_items", "set_qty", "explode", "read_file", "count", "many"]
        seed = 1
        '''))
    with open(folder / "tools.py", "a") as f:
        f.write('\n\n@tool\ndef many(env: Env, n: int) -> list:\n    """n small rows."""\n'
                '    return [{"i": i} for i in range(n)]\n')
    task = get_task("many_values", tmp_path / "lib")
    ep = await open_task_episode(runtime, task, "v0", EnvironmentCache(tmp_path / "cache"))
    try:
        small = await ep.run_program("print(len(tools['many'](n=20_000)))")
        assert small.text.strip() == "20000", small.text
        tracemalloc.start()
        try:
            r = await ep.run_program("try:\n    tools['many'](n=300_000)\nexcept ToolError as e:\n"
                                     "    print('refused:', e)")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert "refused:" in r.text and "the reply holds about 600,0" in r.text, r.text
        assert peak < 40 * 2**20, f"the host held {peak:,} bytes for one reply"
        again = await ep.run_program("print(tools['count']())")
        assert again.text.strip() == "3", again.text
    finally:
        await ep.close()
