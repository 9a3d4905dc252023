"""Toolathlon's local-only tasks on a real checkout with scripted programs in place of a model.

    .venv/bin/python bench/toolathlon_scripted.py ~/Toolathlon [--tasks courses-ta-hws paper-checker ...]

Per task, three episodes, each verdict the task's own evaluator (tasks.finalpool.<t>.evaluation.main):
- `look`: a program lists the workspace and calls claim_done; judged live, and again shipped (the
  bounded snapshot restored and judged elsewhere, as on a Judge actor): both must agree.
- `ground_truth`: the task's groundtruth_workspace copied over the workspace from the host (what a
  perfect agent would leave, for tasks whose evaluator compares files), then judged live.
Prints one JSON object: per task its servers, the tools offered, seconds to open, and each verdict
(reward, error). What the left-out tasks lack is printed first (files missing from the checkout).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LOOK = "import os\nprint(sorted(os.listdir('.'))[:30])\nprint(tools['claim_done']())"


def _verdict(v) -> dict:
    return {"reward": v.reward, "error": (v.error or "")[:300] or None, "cause": v.cause}


async def main() -> int:
    from envs.benchmarks.toolathlon.episode import ToolathlonTaskEnv
    from envs.benchmarks.toolathlon.kind import ToolathlonArgs
    from envs.kinds import ListContext, kind_named
    from envs.runtime.episode import Runtime
    from schema.config import RuntimeConfig

    p = argparse.ArgumentParser()
    p.add_argument("checkout")
    p.add_argument("--tasks", nargs="*", default=[])
    a = p.parse_args()
    said: list[str] = []
    refs = kind_named("toolathlon").refs(ToolathlonArgs(checkout=a.checkout, tasks=a.tasks),
                                         ListContext("toolathlon", said.append))
    out: dict[str, dict] = {}
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        for ref in refs:
            row: dict = {}
            try:
                env = ToolathlonTaskEnv(ref)
                t0 = time.monotonic()
                ep = await env.open(runtime)
                row["open_s"] = round(time.monotonic() - t0, 2)
                row["tools"] = sorted(t["name"] for t in ep.tools())
                r = await ep.run_program(LOOK)
                row["printed"] = r.text[:300]
                await ep.stop()
                row["look_live"] = _verdict(await asyncio.to_thread(env.judge, ep.final_state(), "done"))
                data = await asyncio.to_thread(env.snapshot, ep.final_state())
                await ep.close()
                row["look_shipped"] = _verdict(await asyncio.to_thread(ToolathlonTaskEnv(ref).judge_shipped, data,
                                                                       "done"))
                gt = Path(ref.checkout) / "tasks" / "finalpool" / ref.task / "groundtruth_workspace"
                if gt.is_dir():
                    env = ToolathlonTaskEnv(ref)
                    ep = await env.open(runtime)
                    ws = Path(ep.final_state().workspace)
                    shutil.copytree(gt, ws, dirs_exist_ok=True)
                    await ep.stop()
                    row["ground_truth_live"] = _verdict(await asyncio.to_thread(env.judge, ep.final_state(), "done"))
                    await ep.close()
            except Exception as exc:  # noqa: BLE001 - a bench reports what failed and goes on
                row["failed"] = f"{type(exc).__name__}: {exc}"[:600]
            out[ref.task] = row
            print(ref.task, json.dumps(row)[:400], file=sys.stderr)
    print(json.dumps({"left_out": said, "results": out}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
