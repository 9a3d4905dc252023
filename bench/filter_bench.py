"""Difficulty-filter throughput as env workers are added (one JSON object, ratios side by side).

    .venv/bin/python -m bench.filter_bench [--workers 1 2 4] [--samples 12]

The same filter job (one shipped task, k samples at each of the given scales) runs on fabrics with
1, 2 and 4 env workers, each worker with the same per-worker concurrency, one generator. The policy
is the tiny model forced through a fixed script (the `replay` backend: real forward passes, fixed
actions) whose program spends `--env-seconds` in the sandbox, so the load is environment-bound and
adding env workers should add throughput until the machine's cores run out. Reports rollouts/min
per setting (fabric start excluded) and its ratio to one worker.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time

import ray

from bench.fabric_bench import script
from envs.format.library import LIBRARY_DIR
from launch.filter import filter_tasks
from launch.loopback import loopback_only
from launch.rollouts import RolloutRunner
from schema.config import FilterSettings
from schema.load import load_sections


async def run(workers: int, args: argparse.Namespace, out: str) -> dict:
    cfg, st = load_sections("configs/local.yaml", [
        f"tasks.library_root={LIBRARY_DIR}", "tasks.tasks=[retail_clearance_markdown]", "wandb.mode=disabled",
        "fabric.generator.backend=replay", f"fabric.generator.script={json.dumps(script(args.env_seconds))}",
        "fabric.generators=1", f"fabric.env_workers={workers}",
        f"fabric.env_worker.concurrency={args.concurrency}",
        f"fabric.env_worker.runtime={{warm_pool: {args.concurrency}, program_timeout_s: 60}}",
        "fabric.env_worker.limits={max_turns: 3, max_new_tokens: 256, max_context_tokens: 8192}",
        f"filter.samples={args.samples}", f"filter.scales={json.dumps(args.scales)}", "filter.model=tiny",
        f"filter.out_dir={out}/workers{workers}",
    ], "filter", FilterSettings)
    t0 = time.perf_counter()
    runner = await RolloutRunner.start(cfg, "tiny")
    start_s = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        _, decisions = await filter_tasks(cfg, st, runner)
        seconds = time.perf_counter() - t0
    finally:
        await runner.close()
    return {"env_workers": workers, "rollouts": runner.done, "seconds": round(seconds, 1),
            "rollouts_per_min": round(runner.done / seconds * 60, 1), "fabric_start_s": round(start_s, 1),
            "decision": decisions[0].decision}


async def main(args: argparse.Namespace) -> dict:
    loopback_only()  # launch/loopback.py
    ray.init(address="local", num_cpus=max(8, 2 + max(args.workers)), include_dashboard=False, log_to_driver=False,
             _temp_dir=tempfile.mkdtemp(prefix="fb", dir="/tmp"),
             runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}})
    try:
        with tempfile.TemporaryDirectory() as out:
            runs = [await run(w, args, out) for w in args.workers]
    finally:
        ray.shutdown()
    base = runs[0]["rollouts_per_min"]
    return {"load": {"env_seconds_per_episode": args.env_seconds, "samples_per_scale": args.samples,
                     "scales": args.scales, "env_worker_concurrency": args.concurrency, "generators": 1,
                     "cores": os.cpu_count()},
            "runs": runs,
            "rollouts_per_min_over_1_worker": {str(r["env_workers"]): round(r["rollouts_per_min"] / base, 2)
                                               for r in runs}}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--samples", type=int, default=12, help="rollouts per scale")
    p.add_argument("--scales", nargs="+", default=["v0", "v1"])
    p.add_argument("--env-seconds", type=float, default=2.0)
    p.add_argument("--concurrency", type=int, default=2, help="episodes at once per env worker")
    print(json.dumps(asyncio.run(main(p.parse_args())), indent=2))
