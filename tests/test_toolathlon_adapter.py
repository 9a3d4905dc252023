"""Toolathlon's local-only tasks as an evaluation source (envs/benchmarks/toolathlon/), on a miniature
checkout in Toolathlon's format (tests/fixtures/toolathlon_checkout: ours, not Toolathlon's code).

It runs in this project's Python (`ToolathlonRef.python`; the real adapter makes Toolathlon's own 3.12
environment) with the npm filesystem server scripts/install.sh installs. Real: the preprocess and the
evaluator as modules of the checkout in the benchmark sandbox, the servers, the kernel, the snapshot
shipped to a judge's restore.
"""

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest

from envs.benchmarks.toolathlon.checkout import ToolathlonCheckout, ToolathlonError
from envs.benchmarks.toolathlon.episode import SINGLE_TURN, ToolathlonTaskEnv
from envs.benchmarks.toolathlon.kind import ToolathlonRef
from envs.runtime.episode import Runtime
from schema.config import RuntimeConfig
from tests.conftest import NPM_FS, ROOT

CHECKOUT = ROOT / "tests" / "fixtures" / "toolathlon_checkout"
NODE_DIR = ROOT / ".mcp-servers"
needs_npm = pytest.mark.skipif(not NPM_FS.exists(), reason="npm filesystem server not installed (scripts/install.sh)")


def ref(task: str = "csv-totals") -> ToolathlonRef:
    return ToolathlonRef(str(CHECKOUT), task, sys.executable, str(NODE_DIR))


def test_checkout_lists_local_only_tasks_and_says_why_others_are_not(tmp_path):
    co = ToolathlonCheckout(CHECKOUT)
    assert [t.name for t in co.tasks()] == ["csv-totals"]
    with pytest.raises(ToolathlonError, match="needs-email.*server emails needs an account.*web_search is not provided"):
        co.tasks(["needs-email"])
    with pytest.raises(ToolathlonError, match="no Toolathlon task 'nope'"):
        co.task("nope")
    with pytest.raises(ToolathlonError, match=r"no Toolathlon task '\.\./x'"):
        co.task("../x")
    with pytest.raises(ToolathlonError, match=r"emails: \$\{token.emails_password\} is not available offline"):
        co.server_configs(co.task("needs-email"), tmp_path)
    servers = co.server_configs(co.task("csv-totals"), tmp_path / "ws")
    assert servers["filesystem"]["args"][-1] == str(tmp_path / "ws") and servers["filesystem"]["timeout_s"] == 300
    # Toolathlon's own setup makes configs/global_configs.py; a checkout without it is refused with that step
    bare = tmp_path / "tl"
    shutil.copytree(CHECKOUT, bare)
    (bare / "configs" / "global_configs.py").unlink()
    with pytest.raises(ToolathlonError, match="cp configs/global_configs_example.py configs/global_configs.py"):
        ToolathlonCheckout(bare)


def test_a_task_whose_files_the_checkout_lacks_is_left_out_or_refused_naming_them(tmp_path):
    """A git work tree without some tracked files (a partial copy: Toolathlon's large PDFs and archives),
    or with Git LFS pointers in their place: the task is left out, said with the files, or refused when named."""
    import subprocess

    co_dir = shutil.copytree(CHECKOUT, tmp_path / "tl")
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x",
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", "-C", str(co_dir), *argv], check=True, env=env)
    co = ToolathlonCheckout(co_dir)
    assert [t.name for t in co.tasks()] == ["csv-totals"]  # a whole checkout: nothing left out
    ws = co_dir / "tasks" / "finalpool" / "csv-totals" / "initial_workspace"
    victim = sorted(p for p in ws.rglob("*") if p.is_file())[0]
    victim.unlink()
    said: list[str] = []
    assert co.tasks(say=said.append) == []
    rel = str(victim.relative_to(co_dir))
    assert said == [f"Toolathlon task csv-totals left out: 1 of its files are missing from the checkout ({rel}; "
                    "a full clone has them)"]
    with pytest.raises(ToolathlonError, match=f"files missing from the checkout .*csv-totals: {rel}"):
        co.tasks(["csv-totals"])
    victim.write_bytes(b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 4194304\n")
    with pytest.raises(ToolathlonError, match=f"csv-totals: {rel}"):
        co.tasks(["csv-totals"])


SOLVE = """
import csv, glob
total = sum(int(r["amount"]) for f in sorted(glob.glob("sales/*.csv")) for r in csv.DictReader(open(f)))
tools["write_file"](path=WS + "/total.txt", content=str(total))
print("total", total)
"""


@needs_npm
async def test_an_episode_runs_toolathlons_preprocess_servers_and_evaluator(tmp_path):
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        env = ToolathlonTaskEnv(ref())
        ep = await env.open(runtime)
        ws = next(Path(runtime.root).glob("envs/toolathlon-*")).resolve() / "state" / "workspace"
        # the prompt: the agent system prompt with its placeholders filled, single-turn mode, the task
        assert f"Accessible workspace directory: {ws}" in env.instruction and "!!<<<<" not in env.instruction
        assert SINGLE_TURN.strip() in env.instruction and env.instruction.rstrip().endswith("total.txt in the workspace.")
        names = {t["name"] for t in ep.tools()}
        assert {"read_text_file", "write_file", "claim_done", "python_execute"} <= names
        # the preprocess ran in the benchmark sandbox: q2 unpacked
        r = await ep.run_program("import os\nprint(sorted(os.listdir('sales')), os.path.exists('q2.json.gz.src'))")
        assert "['q1.csv', 'q2.csv'] False" in r.text, r.text
        # Toolathlon's python_execute runs in the workspace, sandboxed: the checkout is read-only
        r = await ep.call_tool("python_execute", {"code": f"open('{CHECKOUT}/pwned', 'w')"})
        assert "No such file or directory" in r.text and not (CHECKOUT / "pwned").exists()
        r = await ep.run_program(f"WS = {str(ws)!r}\n" + SOLVE)
        assert "total 49" in r.text, r.text
        await ep.stop()
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "49")
        assert verdict.reward == 1.0 and verdict.criteria == {"toolathlon_evaluator": True}, verdict
        # shipped to a judge elsewhere: the bounded snapshot, restored, judged by the same evaluator
        data = await asyncio.to_thread(env.snapshot, ep.final_state())
        await ep.close()
        assert not ws.exists()
        shipped = await asyncio.to_thread(ToolathlonTaskEnv(ref()).judge_shipped, data, "49")
        assert shipped.reward == 1.0 and shipped.error is None, shipped

        env = ToolathlonTaskEnv(ref())
        ep = await env.open(runtime)
        await ep.stop()
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "")
        assert verdict.reward == 0.0 and verdict.error is None and verdict.criteria == {"toolathlon_evaluator": False}
        await ep.close()


def test_a_task_that_is_not_local_is_refused_before_anything_runs():
    with pytest.raises(ToolathlonError, match="needs-email is not local-only"):
        ToolathlonTaskEnv(ref("needs-email"))


@needs_npm
async def test_a_link_planted_where_the_host_writes_is_never_followed(tmp_path):
    """The evaluator's trajectory log is the host's file: a server the model drives (python_execute) can
    write next to the workspace, so a link planted there must not redirect the host's write."""
    target = tmp_path / "host-file.txt"
    target.write_text("host data")
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        env = ToolathlonTaskEnv(ref())
        ep = await env.open(runtime)
        for name in ("traj_log.json", "evaluation.log"):
            r = await ep.call_tool("python_execute", {"code": f"import os\nos.symlink({str(target)!r}, '../{name}')"})
            # the folder holding the workspace is not the server's any more: the link lands in its sandbox only
            state = next(Path(runtime.root).glob("envs/toolathlon-*")) / "state"
            assert not os.path.lexists(state / name), r.text
        await ep.stop()
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "49")
        await ep.close()
    assert target.read_text() == "host data" and verdict.error is None


@needs_npm
async def test_the_ground_truth_is_out_of_the_models_reach(tmp_path):
    """Through python_execute the model copied the task's groundtruth_workspace out of the checkout (mounted
    whole into every server) and scored 1.0, live and shipped. Servers now see none of the checkout, and
    the evaluator reads a host-owned copy of the task folder."""
    gt = CHECKOUT / "tasks" / "finalpool" / "csv-totals" / "groundtruth_workspace" / "total.txt"
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        env = ToolathlonTaskEnv(ref())
        ep = await env.open(runtime)
        steal = (f"import shutil, os\nshutil.copy({str(gt)!r}, 'total.txt')\n")
        r = await ep.call_tool("python_execute", {"code": steal})
        assert "No such file or directory" in r.text, r.text
        r = await ep.call_tool("python_execute", {"code": "import os\nprint([p for p in os.listdir('/') ])\n"
                                                          f"print(os.path.exists({str(CHECKOUT)!r}))"})
        assert "False" in r.text, r.text
        await ep.stop()
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "")
        data = await asyncio.to_thread(env.snapshot, ep.final_state())
        await ep.close()
    assert verdict.reward == 0.0 and verdict.error is None
    assert (await asyncio.to_thread(ToolathlonTaskEnv(ref()).judge_shipped, data, "")).reward == 0.0
    assert gt.read_text().strip() == "49"  # the checkout's own copy untouched


def _shipped_state(tmp_path: Path, total: str) -> bytes:
    """A workspace as an episode would ship it: the model's total.txt and the episode's launch time."""
    import json

    from envs.benchmarks.toolathlon.episode import META, launch_time_now
    from envs.episode_env import snapshot

    ws, meta = tmp_path / "ws", tmp_path / "meta"
    ws.mkdir(parents=True)
    meta.mkdir()
    (ws / "total.txt").write_text(total)
    (meta / META).write_text(json.dumps({"launch_time": launch_time_now()}))
    return snapshot([(ws, "workspace"), (meta, "meta")])


def test_error_words_in_the_agents_files_are_a_wrong_answer_and_only_an_evaluator_that_cannot_load_is_infra(tmp_path):
    """The evaluator prints what it read ("got SyntaxError"): that made a wrong total.txt
    `infra/evaluator_error` (masked) when the host searched its output for error words. Now the exit
    status decides: the evaluator ran and exited 1 → the policy's zero. An evaluator that cannot load
    (its own syntax error) is infra, and stays infra after its canary (it cannot judge the untouched
    workspace either)."""
    from envs.episode_env import judge_settled

    for words in ("SyntaxError", "ModuleNotFoundError: No module named x", "ImportError"):
        verdict = ToolathlonTaskEnv(ref()).judge_shipped(_shipped_state(tmp_path / words[:6], words), "")
        assert verdict.error is None and verdict.reward == 0.0, verdict
    broken = tmp_path / "checkout"
    shutil.copytree(CHECKOUT, broken)
    (broken / "tasks" / "finalpool" / "csv-totals" / "evaluation" / "main.py").write_text("def broken(:\n")
    env = ToolathlonTaskEnv(ToolathlonRef(str(broken), "csv-totals", sys.executable, str(NODE_DIR)))
    state = _shipped_state(tmp_path / "b", "49")
    verdict = env.judge_shipped(state, "")
    assert verdict.cause == "infra/evaluator_error" and "cannot load" in verdict.error, verdict
    settled = judge_settled(env, state, "")
    assert settled.cause == "infra/evaluator_error" and settled.metrics == {"judge/canary_failed": 1.0}, settled


@pytest.mark.parametrize("how", ["file_link", "folder_link", "hard_link", "huge"])
@pytest.mark.parametrize("name", ["task.md", "agent_system_prompt.md"])
def test_a_prompt_file_that_is_not_the_checkouts_own_never_reaches_the_model_or_the_evaluator(tmp_path, name, how):
    """docs/task.md and docs/agent_system_prompt.md come from a third-party checkout: read without
    following a link (the file's or the docs folder's), only a regular file with one name and at most
    1 MiB, else refused naming the file; the secret it points at is in no prompt, error or log."""
    from tests.test_mcpmark_adapter import ATTACKS, SECRET, plant

    co = shutil.copytree(CHECKOUT, tmp_path / "tl")
    (tmp_path / "outside").mkdir()
    plant(co / "tasks" / "finalpool" / "csv-totals" / "docs" / name, how, tmp_path / "outside")
    env = ToolathlonTaskEnv(ToolathlonRef(str(co), "csv-totals", sys.executable, str(NODE_DIR)))
    first = "agent_system_prompt.md" if how == "folder_link" else name  # a linked docs/: the first file read
    with pytest.raises(ToolathlonError, match=rf"csv-totals/docs/{first}: .*{ATTACKS[how]}") as refused:
        env.prompt(tmp_path / "ws", "2025-01-01 00:00:00 Wednesday")
    assert SECRET not in str(refused.value) and env.instruction == ""
    if name == "task.md":  # the evaluator's trajectory log quotes it too: a judge error, never the secret
        verdict = env.evaluate(tmp_path / "state", "2025-01-01 00:00:00 Wednesday", "")
        assert verdict.cause == "infra/evaluator_error" and "SECRET" not in verdict.error, verdict
    assert "Sum the" in ToolathlonTaskEnv(ref()).prompt(tmp_path / "ws", "t")  # the checkout's own files read as before
