"""Faults on the demo, in wall time: one of two env workers killed, then the generator killed.

    .venv/bin/python -m bench.fault_bench [--steps 10] [--kill-worker-at 3] [--kill-generator-at 6] [--no-sft]

The embedded default (configs/local.yaml: the tiny model after its cold-start SFT, 3 groups × 4 per
step, max_staleness 1) with `fabric.env_workers=2`, run by launch/train.py. After step
`--kill-worker-at` one env worker is killed (the scheduler re-runs its episodes, oldest group first,
and starts a replacement); after step `--kill-generator-at` the generator is killed (the pool starts
a replacement with the current weights). Printed as one JSON object: every step's wall time, the
median of the steps no fault touched, and each fault's next step over that median (the target:
at most 3). The in-flight window is reported too: it bounds what a fault can leave to re-run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile

import ray

from launch.metrics import read_metrics
from launch.train import train
from schema.load import load_config


async def main(args: argparse.Namespace) -> dict:
    faults: dict[int, str] = {}

    async def on_step(step, fabric, manager) -> None:
        if step == args.kill_worker_at:
            ray.kill(fabric.env.live[0])
            faults[step + 1] = "env_worker_killed"
        if step == args.kill_generator_at:
            ray.kill((await fabric.pool.handles.remote())[0])
            faults[step + 1] = "generator_killed"

    with tempfile.TemporaryDirectory() as out:
        cfg = load_config("configs/local.yaml", [
            "fabric.env_workers=2", f"train.steps={args.steps}", "train.checkpoint_every=0", "eval.before=false",
            "eval.after=false", "wandb.mode=disabled", f"run.out_dir={out}", f"sft.enabled={not args.no_sft}"])
        try:
            run = await train(cfg, on_step=on_step)
        finally:
            ray.shutdown()
        rows = [r for r in read_metrics(run / "metrics.jsonl") if r["phase"] == "train"]
    steps = {int(r["step"]): r for r in rows}
    normal = statistics.median(r["step_s"] for s, r in steps.items() if s not in faults and s > 1)
    return {"config": "configs/local.yaml + fabric.env_workers=2" + (" (no SFT)" if args.no_sft else ""),
            "step_s": {s: round(r["step_s"], 2) for s, r in steps.items()},
            "normal_step_s_median": round(normal, 2),
            "after_fault": {why: {"step": s, "step_s": round(steps[s]["step_s"], 2),
                                  "over_normal": round(steps[s]["step_s"] / normal, 2)}
                            for s, why in faults.items() if s in steps},
            "episodes_rerun_after_worker_death": rows[-1]["rollout/scheduler_reruns_worker_died"],
            "max_in_flight": rows[-1]["rollout/max_in_flight"],
            "in_flight_bound": (cfg.rollout.max_staleness + 1) * cfg.train.groups_per_step * cfg.rollout.group_size}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--kill-worker-at", type=int, default=3)
    p.add_argument("--kill-generator-at", type=int, default=6)
    p.add_argument("--no-sft", action="store_true", help="skip the cold-start SFT (shorter; the untrained model)")
    print(json.dumps(asyncio.run(main(p.parse_args())), indent=2))
