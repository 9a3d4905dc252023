"""Harbor export: layout, what the agent's container may hold, and the verifier script end to end."""

import json
import os
import subprocess
import sys
import tomllib

from envs.format.library import load_task
from envs.harbor.export import export_harbor
from tests.test_task_format import write_task


def test_export_layout_solution_and_verifier(tmp_path):
    task = load_task(write_task(tmp_path / "lib"), trusted=True)
    out = export_harbor(task, "v1", tmp_path / "harbor")
    meta = tomllib.loads((out / "task.toml").read_text())
    assert meta["verifier"]["timeout_sec"] > 0 and meta["agent"]["timeout_sec"] > 0
    assert meta["environment"]["network_mode"] == "no-network" and meta["environment"]["memory_mb"] == 2048
    assert meta["schema_version"] == "1.4" and meta["metadata"]["progagent"]["scale"] == "v1"
    assert meta["verifier"]["environment_mode"] == "separate" and meta["artifacts"] == ["/app/env", "/app/answer.txt"]
    server = meta["environment"]["mcp_servers"][0]
    assert server["name"] == "task" and server["transport"] == "stdio" and "envs.format.task_server" in server["args"]
    assert (out / "instruction.md").read_text().startswith("Set item 1 to 5.")
    assert os.access(out / "tests" / "test.sh", os.X_OK) and os.access(out / "solution" / "solve.sh", os.X_OK)
    agent_files = {p.name for p in (out / "environment").rglob("*")}
    assert "verify.py" not in agent_files and "oracle.py" not in agent_files
    assert (out / "environment" / "env" / "db.sqlite").exists()
    assert "FROM python:3.11-slim" in (out / "environment" / "Dockerfile").read_text()

    # the exported tool server lists the task's tools
    env = dict(os.environ, PYTHONPATH=str(out / "environment" / "progagent"))
    probe = ("import asyncio, sys\nfrom mcp import ClientSession, StdioServerParameters\n"
             "from mcp.client.stdio import stdio_client\n"
             "async def main():\n"
             f"    p = StdioServerParameters(command=sys.executable, args=['-m','envs.format.task_server','--task',"
             f"'{out}/environment/progagent/tasks/{task.id}','--root','{out}/environment/env'], env={{'PYTHONPATH': "
             f"'{out}/environment/progagent'}})\n"
             "    async with stdio_client(p) as (r, w), ClientSession(r, w) as c:\n        await c.initialize()\n"
             "        print(sorted(t.name for t in (await c.list_tools()).tools))\n"
             "asyncio.run(main())\n")
    listed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert listed.stdout.strip() == str(sorted(task.spec.tools)), listed.stderr[-500:]

    # solve.py (the oracle over the exported MCP server) solves a copy of the environment, and
    # run_verifier.py scores that state 1 and the untouched state 0
    import shutil

    final = tmp_path / "final"
    shutil.copytree(out / "environment" / "env", final)
    solve_env = dict(os.environ, PROGAGENT_PKG_ROOT=str(out / "environment" / "progagent"),
                     PROGAGENT_ENV_ROOT=str(final), PROGAGENT_ANSWER=str(tmp_path / "solved.txt"))
    r = subprocess.run([sys.executable, str(out / "solution" / "solve.py")], env=solve_env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr[-800:]
    (tmp_path / "empty.txt").write_text("")
    for root, answer, expected in ((final, "solved.txt", 1.0), (out / "environment" / "env", "empty.txt", 0.0)):
        (tmp_path / "answer.txt").write_text((tmp_path / answer).read_text())
        r = subprocess.run([sys.executable, "run_verifier.py", "--final", str(root), "--answer",
                            str(tmp_path / "answer.txt"), "--out", str(tmp_path / "reward.json")],
                           cwd=out / "tests", capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(out / "tests" / "progagent")))
        assert r.returncode == 0, r.stderr
        reward = json.loads((tmp_path / "reward.json").read_text())
        assert reward["reward"] == expected and all(isinstance(v, float) for v in reward.values())
