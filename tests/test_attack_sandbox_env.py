"""What a sandboxed program learns about its host from /proc: bubblewrap is pid 1 of every sandbox,
and its environment and command line are readable there. For each of the four sandboxes (the
kernel, the task tool host, the synthesis code child, a Harbor container view), the worker's
secrets and host paths must not be in any /proc/*/environ or /proc/*/cmdline the program can read.
"""

import json
import re
import textwrap
from pathlib import Path

import pytest

from envs.format.code_runner import CodeRunner
from envs.format.library import load_task
from envs.format.task_env import EnvironmentCache, open_task_episode
from envs.harbor.episode import run_script
from envs.harbor.task import load_harbor_task
from tests.test_task_format import write_task

SECRET = "sk-progagent-test-4b1d9e0c7a"
FIXTURE = Path(__file__).parent.parent / "envs" / "starter_harbor" / "warehouse-restock"

# what every probe prints: each readable process's environment and command line
PROBE_PY = '''
import json, os
def _proc():
    out = {}
    for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
        entry = {}
        for name in ("environ", "cmdline"):
            try:
                entry[name] = open(f"/proc/{pid}/{name}", "rb").read().replace(b"\\0", b" ").decode(errors="replace")
            except OSError as exc:
                entry[name] = f"<{type(exc).__name__}>"
        out[pid] = entry
    return out
'''


@pytest.fixture
def secret_env(monkeypatch, tmp_path):
    monkeypatch.setenv("PROGAGENT_TEST_API_KEY", SECRET)
    monkeypatch.setenv("WANDB_API_KEY", SECRET)
    return [SECRET, str(tmp_path)]


def assert_clean(seen: dict, forbidden: list[str]) -> None:
    assert "1" in seen, seen  # pid 1 (bubblewrap) is there to be read
    text = json.dumps(seen)
    for word in forbidden:
        assert word not in text, (word, seen)
    assert re.match(r"^\S*bwrap --args 3 -- ", seen["1"]["cmdline"]), seen["1"]
    assert seen["1"]["environ"] == "PATH=/usr/bin:/bin LANG=C.UTF-8 ", seen["1"]


async def test_the_kernel_sandbox_shows_no_host_environment_or_paths(runtime, secret_env):
    async with await runtime.open_episode() as ep:
        r = await ep.run_program(PROBE_PY + "print(json.dumps(_proc()))")
        assert_clean(json.loads(r.text), secret_env + [str(runtime.root)])


TOOLS_PROBE = PROBE_PY + '''
from envs.taskkit import Env, page, tool


@tool
def proc(env: Env) -> str:
    """What this tool's process can read of /proc."""
    return json.dumps(_proc())


@tool
def list_items(env: Env, page_no: int = 1) -> dict:
    """Items."""
    return page(env.query("select id from items order by id"), page_no, 2)
'''


async def test_the_tool_host_sandbox_shows_no_host_environment_or_paths(runtime, secret_env, tmp_path):
    folder = write_task(tmp_path / "tasks", "probe_env", toml=textwrap.dedent('''\
        id = "probe_env"
        domain = "x"
        title = "Probe"
        tools = ["proc", "list_items"]
        '''))
    (folder / "tools.py").write_text(TOOLS_PROBE)
    cache = EnvironmentCache(tmp_path / "cache")
    ep = await open_task_episode(runtime, load_task(folder), "v0", cache, "sandboxed")
    try:
        r = await ep.call_tool("proc", {})
        assert not r.is_error, r.text
        assert_clean(json.loads(json.loads(r.text) if r.text.startswith('"') else r.text),
                     secret_env + [str(runtime.root), str(folder)])
    finally:
        await ep.close()


async def test_the_synthesis_code_child_shows_no_host_environment_or_paths(runtime, secret_env, tmp_path):
    folder = write_task(tmp_path / "tasks", "probe_build")
    (folder / "data.py").write_text(PROBE_PY + textwrap.dedent('''
        import sqlite3
        def build(root, scale, seed):
            sqlite3.connect(root / "db.sqlite").close()
            (root / "workspace" / "proc.json").write_text(json.dumps(_proc()))
        '''))
    runner = CodeRunner(timeout_s=60, mode="bwrap", limits=runtime.limits)
    out = tmp_path / "built"
    load_task(folder, runner=runner).build(out, "v0")
    assert_clean(json.loads((out / "workspace" / "proc.json").read_text()), secret_env + [str(out), str(folder)])


def test_the_harbor_container_view_shows_no_host_environment_or_paths(secret_env, tmp_path):
    task = load_harbor_task(FIXTURE)
    tree = task.materialize(tmp_path / "tree")
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "probe.py").write_text(PROBE_PY + "print(json.dumps(_proc()))\n")
    (probe / "probe.sh").write_text("python3 /probe/probe.py\n")
    log = tmp_path / "out.txt"
    run = run_script(task, tree, "/probe/probe.sh", binds=[(probe, "/probe")], env={}, timeout_s=30, log_file=log)
    assert run.exit_code == 0, run.output_tail
    assert_clean(json.loads(log.read_text()), secret_env + [str(tree)])
