"""Harbor tasks read as Harbor reads them (its task model, schema 1.4, and its verifier): fields Harbor
accepts, scripts it executes, and, for what cannot be emulated here, a note or a blocker that says
exactly what. Task folders in Harbor's format, written here from the warehouse-restock fixture."""

import shutil

import pytest

from envs.harbor.episode import check, upstreams, verify
from envs.harbor.task import HarborTaskError, load_harbor_task
from tests.test_harbor_import import FIXTURE

TOML = """schema_version = "1.4"

[task]
name = "tests/warehouse-compat"
description = "warehouse-restock with Harbor 1.4 fields"
authors = [{ name = "ProgAgent tests" }]

[metadata]
difficulty = "easy"

[metadata.progagent]
answer_path = "/app/answer.txt"

[verifier]
timeout_sec = 60.0
environment_mode = "separate"

[agent]
timeout_sec = 600.0

[environment]
build_timeout_sec = 300.0
cpus = 0.5
memory_mb = 1024
storage_mb = 2048
network_mode = "no-network"
workdir = "/app/data"

[[environment.mcp_servers]]
name = "inventory"
transport = "stdio"
command = "python3"
args = ["/opt/inventory/inventory_mcp.py"]

[[environment.mcp_servers]]
name = "remote"
transport = "http"
url = "http://127.0.0.1:9/mcp"
headers = { Authorization = "Bearer ${REMOTE_TOKEN}" }
"""


@pytest.fixture
def task_dir(tmp_path):
    folder = shutil.copytree(FIXTURE, tmp_path / "warehouse-compat")
    (folder / "task.toml").write_text(TOML)
    (folder / "instruction.md").write_text("<!-- harbor-canary GUID 6f1c0e5a -->\n# canary: do not train\n\n"
                                           + (FIXTURE / "instruction.md").read_text())
    return folder


def test_harbor_1_4_fields_are_read(task_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("REMOTE_TOKEN", "s3cret")
    monkeypatch.setenv("PROGAGENT_HARBOR_PASS_ENV", "REMOTE_TOKEN")
    task = load_harbor_task(task_dir)
    assert task.blockers == [] and task.config.environment.cpus == 0.5
    assert task.instruction == (FIXTURE / "instruction.md").read_text()  # the canary lines are not the agent's
    assert task.workdir == "/app/data"  # [environment] workdir overrides the Dockerfile's WORKDIR
    assert task.config.network is False and "--share-net" not in task.container_argv(task.materialize(tmp_path / "t")).options()
    with pytest.raises(HarborTaskError, match="'remote' is a URL server"):  # the operator's opt-in first
        upstreams(task, tmp_path / "t", tmp_path / "s")
    remote = next(u for u in upstreams(task, tmp_path / "t", tmp_path / "s", url_server_hosts=["127.0.0.1:9"])
                  if u.name == "remote")
    assert remote.spec.transport == "" and remote.spec.url == "http://127.0.0.1:9/mcp"  # "http" = streamable HTTP
    assert remote.spec.headers == {"Authorization": "Bearer s3cret"}
    notes = "\n".join(task.layout.notes)
    assert "cpus = 0.5 is not enforced" in notes and "verifier.environment_mode = separate" in notes
    assert "not emulated: environment.build_timeout_sec, environment.storage_mb" in notes
    assert "Dockerfile:1: FROM python:3.12-slim: the image is not pulled" in notes
    assert 'Dockerfile:3: RUN is not executed (pip install --no-cache-dir "mcp>=2.3,<3")' in notes


def test_a_legacy_progagent_table_and_allow_internet_are_read_with_a_note(tmp_path):
    folder = shutil.copytree(FIXTURE, tmp_path / "legacy")
    (folder / "task.toml").write_text((FIXTURE / "task.toml").read_text() + '\n[progagent]\nanswer_path = "/app/out.txt"\n')
    task = load_harbor_task(folder)
    assert task.answer_path == "/app/out.txt" and task.config.network is False
    notes = "\n".join(task.layout.notes)
    assert "[progagent] is read as [metadata.progagent]" in notes and "allow_internet is deprecated" in notes


@pytest.mark.parametrize("script, reward", [
    ("#!/usr/bin/env python3\nimport pathlib\npathlib.Path('/logs/verifier/reward.txt').write_text('0.25')\n", 0.25),
    ("echo 1 > /logs/verifier/reward.txt\n", 1.0),  # no shebang: bash, as Harbor's exec shell
    ('#!/bin/bash\necho \'{"correctness": 1, "performance": 0}\' > /logs/verifier/reward.json\n', 0.5),
])
def test_test_sh_is_executed_through_its_shebang(task_dir, tmp_path, script, reward):
    (task_dir / "tests" / "test.sh").write_text(script)
    task = load_harbor_task(task_dir)
    run = verify(task, task.materialize(tmp_path / "tree"), None)
    assert run.verdict.error is None and run.verdict.reward == reward, run


def test_what_cannot_run_faithfully_is_a_blocker_that_says_what(task_dir):
    (task_dir / "environment" / "docker-compose.yaml").write_text(
        "services:\n  main:\n    build: .\n  api-server:\n    build: ./api-server\n")
    (task_dir / "tests" / "test.sh").write_text("#!/bin/bash\napt-get update\napt-get install -y curl\n"
                                                "curl -LsSf https://astral.sh/uv/install.sh | sh\n"
                                                "uvx --with pytest pytest /tests/test_state.py\n")
    with pytest.raises(HarborTaskError, match="cannot run faithfully here"):
        load_harbor_task(task_dir)
    task = load_harbor_task(task_dir, strict=False)
    text = "\n".join(task.blockers)
    assert "docker-compose.yaml: its services (api-server, main) are sidecar containers" in text
    assert "test.sh:3: `apt-get install -y curl` installs software at run time" in text
    assert "test.sh:4: `curl -LsSf https://astral.sh/uv/install.sh | sh`" in text and "test.sh:5: `uvx" in text
    report = check(task)  # not run: the report says why
    assert not report.ok and report.nop is None and "sidecar containers" in report.error


SHELL_SERVER = """
import subprocess
from mcp.server.mcpserver import MCPServer

server = MCPServer("shell")


@server.tool()
def run(command: str) -> str:
    \"\"\"Run a shell command in /app.\"\"\"
    out = subprocess.run(command, shell=True, cwd="/app", capture_output=True, text=True, timeout=30)
    return out.stdout + out.stderr


if __name__ == "__main__":
    server.run()
"""


def write_multi_step(folder):
    """A multi-step task in Harbor's layout: shared helpers in tests/, per-step instruction, tests,
    solution, a step workdir with setup.sh, a step verifier env, min_reward on the first step."""
    (folder / "environment").mkdir(parents=True)
    (folder / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\nCOPY shell.py /opt/shell/\n")
    (folder / "environment" / "shell.py").write_text(SHELL_SERVER)
    (folder / "task.toml").write_text(
        'schema_version = "1.1"\n[environment]\nworkdir = "/app"\n\n'
        '[[environment.mcp_servers]]\nname = "shell"\ntransport = "stdio"\ncommand = "python3"\n'
        'args = ["/opt/shell/shell.py"]\n\n'
        '[[steps]]\nname = "make"\nmin_reward = 1.0\n\n'
        '[[steps]]\nname = "count"\n[steps.verifier.env]\nEXPECTED = "3"\n')
    (folder / "tests").mkdir()
    (folder / "tests" / "helpers.sh").write_text("pass() { echo 1 > /logs/verifier/reward.txt; exit 0; }\n"
                                                 "fail() { echo 0 > /logs/verifier/reward.txt; exit 0; }\n")
    steps = {
        "make": ("Create /app/items.txt with three lines.", "printf 'a\\nb\\nc\\n' > /app/items.txt",
                 "[ -f /app/items.txt ] && pass; fail"),
        "count": ("Write the number of lines of items.txt to /app/count.txt.", "wc -l < /app/items.txt > /app/count.txt",
                  '[ "$(cat /app/count.txt 2>/dev/null)" = "$EXPECTED" ] && [ -f /app/seeded ] && pass; fail'),
    }
    for name, (instruction, solve, test) in steps.items():
        d = folder / "steps" / name
        for sub in ("tests", "solution"):
            (d / sub).mkdir(parents=True)
        (d / "instruction.md").write_text(instruction)
        (d / "solution" / "solve.sh").write_text(f"#!/bin/bash\nset -e\n{solve}\n")
        (d / "tests" / "test.sh").write_text(f"#!/bin/bash\nsource /tests/helpers.sh\n{test}\n")
    (folder / "steps" / "count" / "workdir").mkdir()
    (folder / "steps" / "count" / "workdir" / "setup.sh").write_text("touch /app/seeded\n")
    return folder


def test_a_multi_step_task_is_checked_step_by_step(tmp_path):
    folder = write_multi_step(tmp_path / "two-steps")
    task = load_harbor_task(folder)
    report = check(task)
    assert report.ok, report.error
    assert report.oracle.rewards == {"reward": 1.0} and report.nop.rewards == {"reward": 0.0}
    notes = "\n".join(report.notes)
    assert "oracle step make: rewards {'reward': 1.0}" in notes and "oracle step count: rewards {'reward': 1.0}" in notes
    assert "untouched step make: below min_reward 1.0" in notes and "the remaining steps are skipped" in notes
    # the mean over the verified steps (Harbor's default); "final" takes the last step's
    from envs.harbor.episode import step_rewards

    runs = [{"reward": 1.0}, {"reward": 0.0, "x": 1.0}]
    assert step_rewards(runs, None) == {"reward": 0.5, "x": 0.5} and step_rewards(runs, "final") == {"reward": 0.0,
                                                                                                       "x": 1.0}


async def test_an_exported_mcp_server_starts_with_only_an_mcp_clients_default_environment(tmp_path):
    """MCP clients start stdio servers with a short default environment (PATH, HOME, …), never the
    Dockerfile's ENV: the exported command must carry what it needs (PYTHONPATH) itself."""
    from envs.format.library import get_task, library_dir
    from envs.harbor.export import export_harbor
    from envs.harbor.task import BASE_PATH
    from envs.runtime.sandbox import BWRAP_ENV, launch_argv
    from envs.runtime.upstream import Upstream, UpstreamSpec

    folder = export_harbor(get_task("support_sla_escalation", library_dir("")), "v0", tmp_path / "x")
    task = load_harbor_task(folder)
    server = task.config.environment.mcp_servers[0]
    assert server.command == "env" and server.args[0] == "PYTHONPATH=/opt/progagent"
    tree = task.materialize(tmp_path / "tree")
    bare = {"PATH": BASE_PATH, "HOME": "/root"}  # no Dockerfile ENV: no PYTHONPATH
    argv = launch_argv(task.container_argv(tree, env=bare), [server.command, *server.args], tmp_path / "s")
    up = Upstream(UpstreamSpec("task", command=argv, env=BWRAP_ENV))
    await up.start()
    try:
        assert len(up.tools) >= 3
    finally:
        await up.close()


async def test_a_multi_step_episode_is_one_conversation_verified_step_by_step(runtime, tmp_path):
    """Each answer closes a step: it is verified on the live tree and the next step's instruction is
    the next user turn; the last step is verified after the episode stopped. A step below its
    min_reward ends the episode, and the steps never reached count 0."""
    from envs.harbor.episode import HarborTaskEnv
    from rollout.agent_loop import ChatRenderer
    from rollout.episode import run_episode
    from rollout.generators.scripted import ScriptedGenerator
    from rollout.teacher import call_text
    from rollout.tiny_model import project_tokenizer
    from schema.config import LoopLimits

    renderer = ChatRenderer(project_tokenizer())
    task = load_harbor_task(write_multi_step(tmp_path / "two-steps"))
    limits = LoopLimits(max_turns=8, max_context_tokens=1 << 16, max_new_tokens=1 << 12)
    make = call_text("run", {"command": "printf 'a\\nb\\nc\\n' > items.txt"})
    count = call_text("run", {"command": "wc -l < items.txt > count.txt"})
    env = HarborTaskEnv(task)
    assert env.judged_in_place and env.instruction.startswith("Create /app/items.txt")
    solved = await run_episode(env, runtime, ScriptedGenerator(renderer.tok, [make, "ANSWER: made", count, "ANSWER: 3"]),
                               renderer, "dtc", limits=limits)
    assert solved.termination == "answer" and solved.final_answer.endswith("3") and len(solved.turns) == 4
    assert solved.reward == 1.0 and solved.criteria == {"step_make": True, "step_count": True}, solved
    assert "Write the number of lines" in renderer.tok.decode(solved.token_ids)  # step 2 was a user turn
    lazy = await run_episode(HarborTaskEnv(task), runtime, ScriptedGenerator(renderer.tok, ["ANSWER: done", count]),
                             renderer, "dtc", limits=limits)
    assert len(lazy.turns) == 1 and lazy.reward == 0.0 and lazy.criteria == {"step_make": False, "step_count": False}
    half = await run_episode(HarborTaskEnv(task), runtime, ScriptedGenerator(renderer.tok, [make, "ANSWER: made",
                             "ANSWER: skipped"]), renderer, "dtc", limits=limits)
    assert half.reward == 0.5 and half.criteria == {"step_make": True, "step_count": False}, half
