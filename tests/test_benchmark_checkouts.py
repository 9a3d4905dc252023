"""The benchmarks' own checkouts, when the machine has them (CI does not: each test is skipped with how
to give it one). Scripted programs stand in for a model; every verdict is the benchmark's own evaluator.

    PROGAGENT_LOCA=~/LOCA-bench         a LOCA-bench clone
    PROGAGENT_TOOLATHLON=~/Toolathlon   a Toolathlon clone (the tiancihe fork's tasks), global_configs.py made
    PROGAGENT_MCPMARK=~/mcpmark         an MCPMark clone
    PROGAGENT_ATLAS=~/mcp-atlas         an MCP-Atlas clone; PROGAGENT_ATLAS_TASKS its task file
"""

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from envs.kinds import ListContext, kind_named
from envs.runtime.episode import Runtime
from schema.config import RuntimeConfig


def checkout(var: str, what: str) -> Path:
    path = os.environ.get(var, "")
    if not path or not Path(path).expanduser().is_dir():
        pytest.skip(f"no {what} checkout here: set {var} to one")
    return Path(path).expanduser()


NEW_TOOLATHLON = ["courses-ta-hws", "excel-data-transformation", "paper-checker", "ppt-analysis",
                  "reimbursement-form-filler"]


async def test_toolathlons_five_new_local_tasks_open_and_are_judged_live_and_shipped():
    from envs.benchmarks.toolathlon.episode import ToolathlonTaskEnv
    from envs.benchmarks.toolathlon.kind import ToolathlonArgs

    co = checkout("PROGAGENT_TOOLATHLON", "Toolathlon")
    refs = kind_named("toolathlon").refs(ToolathlonArgs(checkout=str(co), tasks=NEW_TOOLATHLON),
                                         ListContext("toolathlon", lambda m: None))
    passes = {}
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        for ref in refs:
            env = ToolathlonTaskEnv(ref)
            ep = await env.open(runtime)
            await ep.run_program("print(tools['claim_done']())")
            await ep.stop()
            live = await asyncio.to_thread(env.judge, ep.final_state(), "done")
            data = await asyncio.to_thread(env.snapshot, ep.final_state())
            await ep.close()
            shipped = await asyncio.to_thread(ToolathlonTaskEnv(ref).judge_shipped, data, "done")
            assert live.error is None and shipped.error is None and live.reward == shipped.reward == 0.0, ref.task
            gt = co / "tasks" / "finalpool" / ref.task / "groundtruth_workspace"
            if not gt.is_dir():
                continue
            env = ToolathlonTaskEnv(ref)
            ep = await env.open(runtime)
            shutil.copytree(gt, ep.final_state().workspace, dirs_exist_ok=True)
            await ep.stop()
            passes[ref.task] = (await asyncio.to_thread(env.judge, ep.final_state(), "done")).reward
            await ep.close()
    # the evaluators that compare the workspace with the ground truth's files pass it
    assert passes["excel-data-transformation"] == passes["reimbursement-form-filler"] == 1.0, passes


async def test_mcpmarks_repository_only_postgres_tasks_pass_with_their_ground_truth_sql():
    from envs.benchmarks.mcpmark.postgres.episode import MCPMarkPostgresTaskEnv
    from envs.benchmarks.mcpmark.postgres.kind import MCPMarkPostgresArgs

    co = checkout("PROGAGENT_MCPMARK", "MCPMark")
    refs = kind_named("mcpmark_postgres").refs(MCPMarkPostgresArgs(checkout=str(co)), ListContext("pg", lambda m: None))
    assert {r.task for r in refs} >= {"security__rls_business_access", "security__user_permission_audit"}
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        for ref in refs:
            env = MCPMarkPostgresTaskEnv(ref)
            sql = (env.dir / "ground_truth.sql").read_text()
            for program, want in ((f"tools['execute_sql'](sql={sql!r})", 1.0), ("print(tools['list_schemas']())", 0.0)):
                ep = await env.open(runtime)
                await ep.run_program(program)
                await ep.stop()
                verdict = await asyncio.to_thread(env.judge, ep.final_state(), "")
                await ep.close()
                assert verdict.error is None and verdict.reward == want, (ref.task, program[:40], verdict)


def test_mcp_atlas_lists_its_offline_tasks_from_the_users_file():
    from envs.benchmarks.atlas.kind import AtlasArgs

    co = checkout("PROGAGENT_ATLAS", "MCP-Atlas")
    tasks = os.environ.get("PROGAGENT_ATLAS_TASKS", "")
    if not tasks:
        pytest.skip("set PROGAGENT_ATLAS_TASKS to MCP-Atlas's task file (parquet or CSV)")
    said = []
    refs = kind_named("mcp_atlas").refs(AtlasArgs(checkout=str(co), tasks_file=tasks, judge_base_url="http://127.0.0.1:9"),
                                        ListContext("atlas", said.append))
    assert refs and any("run offline here" in s for s in said)
    assert all(not r.task.required or set(r.task.required) <= {"filesystem", "git", "memory", "calculator",
                                                                "cli-mcp-server", "desktop-commander",
                                                                "mcp-server-code-runner"} for r in refs)


async def test_every_loca_task_type_opens_at_two_presets_and_is_judged_by_its_evaluator():
    """PROGAGENT_LOCA=~/LOCA-bench: its 15 task types, seed 42, at 8k and 64k: every server starts, the
    evaluator judges (no verifier error), and CanvasArrangeExam's memory server reads its graph."""
    from envs.benchmarks.loca.episode import LocaTaskEnv
    from envs.benchmarks.loca.kind import LocaArgs

    co = checkout("PROGAGENT_LOCA", "LOCA-bench")
    refs = kind_named("loca").refs(LocaArgs(checkout=str(co), presets=["8k", "64k"], seeds=[42]),
                                   ListContext("loca", lambda m: None))
    assert len({r.task_id for r in refs}) == 15 and {r.scale for r in refs} == {"8k", "64k"}
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        for ref in refs:
            env = LocaTaskEnv(ref)
            ep = await env.open(runtime)
            program = "print(tools['claim_done']())"
            if "CanvasArrangeExam" in ref.task_id:
                program = "print(len(tools['read_graph']()['entities']))\n" + program
            r = await ep.run_program(program)
            await ep.stop()
            verdict = await asyncio.to_thread(env.judge, ep.final_state(), "done")
            await ep.close()
            assert verdict.error is None and "Error" not in r.text, (ref.task_id, ref.scale, r.text, verdict)
