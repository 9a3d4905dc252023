"""The actor fabric, asynchronous vs synchronous, on an environment-bound load (one JSON object).

    .venv/bin/python -m bench.fabric_bench [--steps 12] [--staleness 6] [--generators 1] [--env-seconds 8]

Same fabric, same load, two settings of the staleness bound: `max_staleness=0` (synchronous:
generate a step's groups, train, repeat) and `--staleness` (rollouts for later steps run while the
learner trains and while other episodes wait on their sandboxes). The policy is the tiny model
forced through a fixed script (the `replay` backend: real forward passes, fixed actions) whose
program spends a long-tailed time in the sandbox (log-normal per episode, mean `--env-seconds`,
spread `--sigma`, as agent episodes are: most short, a few very long), so the environment, not
generation, is the bottleneck. Synchronous mode waits for each step's slowest episode and leaves the
generators idle meanwhile; asynchronous mode keeps up to `--concurrency` episodes in flight within
the staleness bound. Reports, over the steady state (after `--warmup` steps, while the
asynchronous buffer fills), trained trajectories/min (consumed by the learner) for both, their
ratio, and the generators' busy fraction (time with at least one request in flight).

On one small machine the generators, sandboxes and learner share the same CPU cores, so the more
episodes run at once, the slower each forward pass. The defaults (one generator, env time mean 8 s,
staleness 6, 64 episodes at once) keep that generator fed without a second one competing for the
cores; the README lists this and the other settings measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import tempfile

import ray

from launch.metrics import read_metrics
from launch.train import train
from schema.load import load_config


def script(env_seconds: float, sigma: float) -> list[str]:
    # log-normal with mean env_seconds: mu = ln(mean) - sigma^2 / 2; `{seed}` is each sample's seed
    mu = math.log(env_seconds) - sigma * sigma / 2
    code = ("import random, time\nfiles = tools['list_files']()\n"
            f"time.sleep(min(30.0, random.Random({{seed}}).lognormvariate({mu:.4f}, {sigma})))\n"
            "print(len(str(files)))")
    call = json.dumps({"name": "programmatic_tool_call", "arguments": {"code": code}})
    return [f"<tool_call>\n{call}\n</tool_call>", "ANSWER: 0; 0.00"]


async def run(max_staleness: int, args: argparse.Namespace, out: str) -> dict:
    overrides = [
        "tasks.library_root=envs/tasks", "tasks.tasks=[retail_clearance_markdown]", "tasks.scales={v0: 1.0}",
        "fabric.generator.backend=replay", f"fabric.generator.script={json.dumps(script(args.env_seconds, args.sigma))}",
        f"fabric.generators={args.generators}", f"fabric.env_worker.concurrency={args.concurrency}",
        f"fabric.env_worker.runtime={{warm_pool: {args.warm_pool}, program_timeout_s: 60}}",
        "fabric.env_worker.limits={max_turns: 3, max_new_tokens: 256, max_context_tokens: 8192}",
        f"rollout.group_size={args.group_size}", f"rollout.max_staleness={max_staleness}",
        f"train.groups_per_step={args.groups}", f"train.steps={args.steps}", "train.checkpoint_every=0",
        "sft.enabled=false", "eval.before=false", "eval.after=false", "wandb.mode=disabled",
        f"run.out_dir={out}", f"run.name=staleness{max_staleness}", "ray.num_cpus=8",
    ]
    cfg = load_config("configs/local.yaml", overrides)
    try:
        run_dir = await train(cfg)
    finally:
        ray.shutdown()
    rows = [r for r in read_metrics(run_dir / "metrics.jsonl") if r["phase"] == "train"]
    # steady state: after the first `--warmup` steps (the asynchronous buffer fills during them).
    # The pool's busy fraction is cumulative since the loop started, so busy seconds = fraction x time.
    elapsed = [sum(r["step_s"] for r in rows[: i + 1]) for i in range(len(rows))]
    busy = [r["generator_busy"] * t for r, t in zip(rows, elapsed, strict=True)]
    w = min(args.warmup, len(rows) - 1)
    t0, b0 = (elapsed[w - 1], busy[w - 1]) if w else (0.0, 0.0)
    steady = rows[w:]
    trained = sum(r["groups"] * args.group_size for r in steady)
    loop_s = elapsed[-1] - t0
    return {"max_staleness": max_staleness, "steps": len(rows), "measured_steps": len(steady),
            "trained_trajectories_per_min": round(trained / loop_s * 60, 1),
            "generator_busy_fraction": round((busy[-1] - b0) / loop_s, 3),
            "generator_busy_fraction_incl_warmup": round(rows[-1]["generator_busy"], 3),
            "mean_staleness": round(sum(r["staleness_mean"] for r in steady) / len(steady), 2),
            "mean_step_s": round(loop_s / len(steady), 2)}


async def main(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as out:
        sync = await run(0, args, out)
        asyn = await run(args.staleness, args, out)
    return {"load": {"env_seconds_mean": args.env_seconds, "env_seconds_lognormal_sigma": args.sigma,
                     "group_size": args.group_size,
                     "groups_per_step": args.groups, "env_worker_concurrency": args.concurrency,
                     "generators": args.generators, "warm_pool": args.warm_pool},
            "synchronous": sync, "asynchronous": asyn,
            "async_over_sync_trained_trajectories_per_min": round(
                asyn["trained_trajectories_per_min"] / max(1e-9, sync["trained_trajectories_per_min"]), 2)}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--groups", type=int, default=2)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--staleness", type=int, default=6)
    p.add_argument("--env-seconds", type=float, default=8.0)
    p.add_argument("--sigma", type=float, default=1.5, help="log-normal spread of the env time (0: fixed)")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--warm-pool", type=int, default=32)
    p.add_argument("--generators", type=int, default=1)
    p.add_argument("--warmup", type=int, default=2, help="first steps left out of the measurement (buffer filling)")
    print(json.dumps(asyncio.run(main(p.parse_args())), indent=2))
