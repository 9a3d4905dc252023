"""`progagent tasks export-harbor TASK --scale vN OUT`: a task at one scale as a Harbor task.

    OUT/task.toml          Harbor's schema 1.4: [task] [metadata] (ours under [metadata.progagent])
                           [verifier] [agent] [environment] (network_mode) + [[environment.mcp_servers]]
    OUT/instruction.md     the instruction, plus where the final answer goes (/app/answer.txt)
    OUT/environment/       Dockerfile; env/ (db.sqlite + workspace/ at this scale); progagent/ (the
                           task's tool server: envs.taskkit/untrusted_fs/provenance/library/task_server + task.toml, tools.py)
    OUT/tests/test.sh      rebuilds the initial state, runs verify.py, writes /logs/verifier/reward.json
    OUT/solution/solve.sh  runs the oracle program against the task's MCP server

What the agent's container holds is the environment/ folder only: the verifier and the oracle live
in tests/ and solution/, which Harbor uploads after (or instead of) the agent.

The rules `harbor lint` checks, and why they hold here:
- The MCP server's command is self-sufficient: `env PYTHONPATH=… python3 -m …`. MCP clients start a
  server with a short default environment (the MCP Python SDK passes PATH, HOME and a few more), so the
  Dockerfile's ENV would not reach it (`No module named 'envs'`).
- Python dependencies are pinned to the versions this project runs (PINNED).
- The verifier runs in a separate container by default (`verifier="separate"`): Harbor collects the
  final state (/app/env) and the answer file from the agent's container as artifacts and puts them at
  the same paths in a fresh container of the same image, where tests/ is uploaded. The agent never
  shares a container with the verifier's inputs. `verifier="shared"` keeps Harbor's older default.
- Every Harbor agent has a shell in its container: it can change /app/env (the database, the
  workspace) directly instead of through the task's tools. The verifier judges the final state
  whatever changed it, so a Harbor result measures the outcome, not tool use; the README written
  with the export says so.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from pathlib import Path

from envs.format.library import Task, copy_environment
from envs.runtime.sandbox import TASK_CODE

ANSWER_PATH = "/app/answer.txt"
ENV_ROOT = "/app/env"
PKG_ROOT = "/opt/progagent"
_FORMAT = Path(__file__).resolve().parents[1] / "format"

#: the Python packages of the agent's container, pinned to the versions this project runs
PINNED = tuple(f"{name}=={importlib.metadata.version(name)}" for name in ("mcp", "msgspec"))
VERIFIERS = ("separate", "shared")

DOCKERFILE = f"""\
FROM python:3.11-slim
RUN pip install --no-cache-dir {" ".join(PINNED)}
COPY progagent/ {PKG_ROOT}/
COPY env/ {ENV_ROOT}/
ENV PYTHONPATH={PKG_ROOT}
WORKDIR /app
"""

TEST_SH = f"""\
#!/usr/bin/env bash
# Verifier: rebuild the initial state of this scale, check the final state and the answer.
set -u
mkdir -p /logs/verifier
cd /tests && PYTHONPATH=/tests/progagent python3 run_verifier.py --final {ENV_ROOT} --answer {ANSWER_PATH} \\
  --out /logs/verifier/reward.json || echo '{{"reward": 0}}' > /logs/verifier/reward.json
"""

RUN_VERIFIER = '''\
"""Score the final state: writes a flat JSON of numbers (reward, score, one entry per criterion)."""
import argparse, json, tempfile
from pathlib import Path
from envs.format.library import load_task

p = argparse.ArgumentParser()
p.add_argument("--final"); p.add_argument("--answer"); p.add_argument("--out")
a = p.parse_args()
meta = json.loads(Path("export.json").read_text())
task = load_task(Path("tasks") / meta["task"], required=("task.toml", "tools.py", "data.py", "verify.py"),
                 trusted=True)  # Harbor's verifier container is the sandbox
answer = Path(a.answer).read_text() if Path(a.answer).exists() else ""
with tempfile.TemporaryDirectory() as tmp:
    task.build(Path(tmp), meta["scale"])
    criteria = task.verify(Path(a.final), Path(tmp), answer, meta["scale"])
passed = sum(criteria.values())
result = {"reward": float(passed == len(criteria)), "score": passed / len(criteria)}
result.update({f"criterion_{k}": float(v) for k, v in criteria.items()})
Path(a.out).write_text(json.dumps(result))
print(json.dumps(result))
'''

SOLVE_SH = """\
#!/usr/bin/env bash
set -eu
python3 /solution/solve.py
"""

SOLVE_PY = f'''\
"""Run the oracle program with `tools` backed by the task's MCP server; write the final answer."""
import asyncio, json, os, sys
from pathlib import Path

PKG = os.environ.get("PROGAGENT_PKG_ROOT", "{PKG_ROOT}")
ENV = os.environ.get("PROGAGENT_ENV_ROOT", "{ENV_ROOT}")
ANSWER = os.environ.get("PROGAGENT_ANSWER", "{ANSWER_PATH}")
HERE = Path(__file__).resolve().parent
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


class ToolError(Exception):
    pass


async def main():
    task_dir = next(Path(PKG, "tasks").iterdir())
    params = StdioServerParameters(command=sys.executable, args=["-m", "envs.format.task_server", "--task",
                                   str(task_dir), "--root", ENV], env={{"PYTHONPATH": PKG}})
    async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        loop = asyncio.get_running_loop()

        def make(name):
            def call(**kw):
                res = asyncio.run_coroutine_threadsafe(session.call_tool(name, kw), loop).result()
                text = "\\n".join(c.text for c in res.content if c.type == "text")
                if res.is_error:
                    raise ToolError(text)
                if res.structured_content is not None:
                    sc = res.structured_content
                    return sc["result"] if set(sc) == {{"result"}} else sc
                try:
                    return json.loads(text)
                except ValueError:
                    return text
            return call

        names = [t.name for t in (await session.list_tools()).tools]
        ns = {{"tools": {{n: make(n) for n in names}}, "ToolError": ToolError, "__name__": "__main__"}}
        source = (HERE / "oracle.py").read_text()
        await asyncio.to_thread(exec, compile(source, "oracle.py", "exec"), ns)
        Path(ANSWER).write_text(str(ns.get("final_answer", "")))


asyncio.run(main())
'''


def task_toml(task: Task, scale: str, verifier: str = "separate") -> str:
    separate = """environment_mode = "separate"
""" if verifier == "separate" else ""
    artifacts = f"""
# collected from the agent's container and put at the same paths in the verifier's
artifacts = ["{ENV_ROOT}", "{ANSWER_PATH}"]
""" if verifier == "separate" else ""
    server_args = json.dumps([f"PYTHONPATH={PKG_ROOT}", "python3", "-m", "envs.format.task_server", "--task",
                              f"{PKG_ROOT}/tasks/{task.id}", "--root", ENV_ROOT])
    return f"""\
schema_version = "1.4"
{artifacts}
[task]
name = "progagent/{task.id}-{scale}"
description = {json.dumps(task.spec.title)}
authors = [{{ name = "ProgAgent" }}]
keywords = ["progagent", "mcp", "{task.spec.domain}", "scale-{scale}"]

[metadata]
category = "{task.spec.domain}"
tags = ["progagent", "mcp", "{task.spec.domain}", "scale-{scale}"]

[metadata.progagent]
task = "{task.id}"
scale = "{scale}"
answer_path = "{ANSWER_PATH}"

[verifier]
timeout_sec = 120.0
{separate}
[agent]
timeout_sec = 1800.0

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 2048
network_mode = "no-network"

[[environment.mcp_servers]]
name = "task"
transport = "stdio"
command = "env"
args = {server_args}
"""


README = f"""\
# Exported from ProgAgent

A ProgAgent task at one environment scale, in Harbor's task format. Its tools are served by the MCP
server `task` (stdio, started from the image: `env PYTHONPATH={PKG_ROOT} python3 -m envs.format.task_server`).

What a result means: a Harbor agent has a shell in its container, so it can change {ENV_ROOT} (the
task's database and workspace) directly instead of through the task's tools. The verifier (tests/test.sh)
judges the final state and the answer in {ANSWER_PATH}, whatever changed them: a Harbor run measures
the outcome, not how the tools were used. ProgAgent's own runtime gives the model the tools only.
With the default separate verifier, tests/ and the initial state it rebuilds exist only in the
verifier's container; the agent's container never holds them.
"""


def _copy_kit(dst: Path) -> None:
    """The repository modules a task's server and verifier import (envs/runtime/sandbox.TASK_CODE)."""
    for rel, src in TASK_CODE.items():
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst / rel)
    shutil.copy2(_FORMAT / "task_server.py", dst / "envs" / "format" / "task_server.py")


def export_harbor(task: Task, scale: str, out: str | Path, verifier: str = "separate") -> Path:
    """The task at `scale` as a Harbor task folder `out` (module docstring); `verifier`: "separate"
    (its own container, Harbor's recommendation) or "shared" (the agent's container)."""
    if verifier not in VERIFIERS:
        raise ValueError(f"verifier {verifier!r}: expected one of {', '.join(VERIFIERS)}")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty")
    task.scale(scale)  # validates the name
    env_dir, tests, solution = out / "environment", out / "tests", out / "solution"
    # environment: what the agent's container holds (no verifier, no oracle)
    with __import__("tempfile").TemporaryDirectory() as tmp:
        task.build(Path(tmp), scale)
        copy_environment(Path(tmp), env_dir / "env")
    _copy_kit(env_dir / "progagent")
    (env_dir / "progagent" / "tasks" / task.id).mkdir(parents=True)
    for name in ("task.toml", "tools.py"):
        shutil.copy2(task.dir / name, env_dir / "progagent" / "tasks" / task.id / name)
    (env_dir / "Dockerfile").write_text(DOCKERFILE)
    # tests: the verifier and what it needs to rebuild the initial state
    _copy_kit(tests / "progagent")
    (tests / "tasks" / task.id).mkdir(parents=True)
    for name in ("task.toml", "tools.py", "data.py", "verify.py", "instruction.md"):
        shutil.copy2(task.dir / name, tests / "tasks" / task.id / name)
    (tests / "export.json").write_text(json.dumps({"task": task.id, "scale": scale}))
    (tests / "run_verifier.py").write_text(RUN_VERIFIER)
    (tests / "test.sh").write_text(TEST_SH)
    # solution: the oracle
    solution.mkdir()
    shutil.copy2(task.dir / "oracle.py", solution / "oracle.py")
    (solution / "solve.py").write_text(SOLVE_PY)
    (solution / "solve.sh").write_text(SOLVE_SH)
    for script in (tests / "test.sh", solution / "solve.sh"):
        script.chmod(0o755)
    (out / "task.toml").write_text(task_toml(task, scale, verifier))
    (out / "README.md").write_text(README)
    (out / "instruction.md").write_text(
        task.instruction.rstrip() + f"\n\nThe task's tools are served by the MCP server `task`. When you are done, "
        f"write your final answer (including the ANSWER line) to `{ANSWER_PATH}`.\n")
    return out
