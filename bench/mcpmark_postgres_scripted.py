"""MCPMark's postgres tasks on a real checkout, with scripted programs in place of a model.

    .venv/bin/python bench/mcpmark_postgres_scripted.py ~/mcpmark [--backups ~/mcpmark/postgres_state]

For every task that can run here (kind `mcpmark_postgres`: the repository-only security tasks, plus a
category per backup given), two episodes on their own servers: one whose program sends the task's
ground_truth.sql through postgres-mcp's execute_sql (tasks without one get only the second), one that
only looks (list_schemas). Each verdict is the task's own verify.py, run while the server is up. Prints
one JSON object: per task and program the reward, the verifier error if any, and the seconds to open,
run and judge.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LOOK = "print(tools['list_schemas']())"


def ground_truth_program(sql: str) -> str:
    return f"out = tools['execute_sql'](sql={sql!r})\nprint(str(out)[:2000])"


async def episode(env, runtime, program: str) -> dict:
    t0 = time.monotonic()
    ep = await env.open(runtime)
    t1 = time.monotonic()
    r = await ep.run_program(program)
    await ep.stop()
    t2 = time.monotonic()
    verdict = await asyncio.to_thread(env.judge, ep.final_state(), "")
    t3 = time.monotonic()
    await ep.close()
    return {"reward": verdict.reward, "error": verdict.error, "printed": r.text[:300],
            "open_s": round(t1 - t0, 2), "run_s": round(t2 - t1, 2), "judge_s": round(t3 - t2, 2)}


async def main() -> int:
    from envs.benchmarks.mcpmark.postgres.episode import MCPMarkPostgresTaskEnv
    from envs.benchmarks.mcpmark.postgres.kind import MCPMarkPostgresArgs
    from envs.kinds import ListContext, kind_named
    from envs.runtime.episode import Runtime
    from schema.config import RuntimeConfig

    p = argparse.ArgumentParser()
    p.add_argument("checkout")
    p.add_argument("--backups", default="")
    p.add_argument("--suite", default="standard")
    a = p.parse_args()
    refs = kind_named("mcpmark_postgres").refs(MCPMarkPostgresArgs(checkout=a.checkout, backups=a.backups,
                                                                   suite=a.suite),
                                               ListContext("mcpmark_postgres", lambda m: print(m, file=sys.stderr)))
    out: dict[str, dict] = {}
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        for ref in refs:
            env = MCPMarkPostgresTaskEnv(ref)
            gt = env.dir / "ground_truth.sql"
            runs = {}
            if gt.is_file():
                runs["ground_truth"] = await episode(env, runtime, ground_truth_program(gt.read_text()))
            runs["look_only"] = await episode(env, runtime, LOOK)
            out[ref.task] = runs
    print(json.dumps({"tasks_runnable": len(refs), "results": out}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
