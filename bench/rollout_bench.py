"""Rollout throughput per generator backend on the tiny model, side by side (one JSON object).

    .venv/bin/python -m bench.rollout_bench [--episodes 16] [--concurrency 4]

Each backend runs the same episodes (PTC harness, real sandboxed runtime and task server, the
random tiny model sampling at temperature 1): trajectories/min, generated tokens/s, and the share
of wall time spent generating. The vLLM row is skipped where vLLM is not installed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from transformers import AutoTokenizer

from envs.format.library import get_task
from envs.format.task_env import EnvironmentCache, LibraryTaskEnv
from envs.runtime.episode import Runtime
from rollout.agent_loop import ChatRenderer
from rollout.episode import run_episode
from rollout.tiny_model import build_tiny
from schema.config import LoopLimits, RuntimeConfig
from schema.records import SamplingParams

TASK = "retail_clearance_markdown"


async def run_backend(name: str, gen, renderer, args) -> dict:
    task = get_task(TASK)
    cache = EnvironmentCache()
    sem = asyncio.Semaphore(args.concurrency)
    limits = LoopLimits(max_turns=args.turns, max_new_tokens=args.new_tokens)
    async with Runtime(RuntimeConfig(warm_pool=args.concurrency)) as runtime:
        env = LibraryTaskEnv(task, "v0", cache)
        await run_episode(env, runtime, gen, renderer, "ptc", limits=limits, sampling=SamplingParams(seed=0))  # warm-up

        async def one(i: int):
            async with sem:
                return await run_episode(env, runtime, gen, renderer, "ptc", limits=limits,
                                         sampling=SamplingParams(temperature=1.0, seed=i), sample_idx=i)

        t0 = time.perf_counter()
        trajs = await asyncio.gather(*(one(i) for i in range(args.episodes)))
        wall = time.perf_counter() - t0
    cache.cleanup()
    tokens = sum(t.metrics["new_tokens"] for t in trajs)
    return {"backend": name, "episodes": len(trajs), "seconds": round(wall, 2),
            "trajectories_per_min": round(len(trajs) / wall * 60, 1), "generated_tokens_per_s": round(tokens / wall, 1),
            "turns_per_episode": round(sum(len(t.turns) for t in trajs) / len(trajs), 2),
            "generate_share_of_wall": round(sum(t.metrics["generate_s"] for t in trajs) / wall / args.concurrency, 2)}


async def main(args: argparse.Namespace) -> dict:
    path = build_tiny()
    renderer = ChatRenderer(AutoTokenizer.from_pretrained(path))
    from rollout.generators.hf import HFGenerator

    rows = [await run_backend("transformers", HFGenerator(path), renderer, args)]
    try:
        from rollout.generators.vllm_backend import VLLMGenerator

        vgen = await VLLMGenerator(path, max_model_len=8192, gpu_memory_utilization=0.3).start()
    except ImportError:
        rows.append({"backend": "vllm", "skipped": "vLLM is not installed"})
    else:
        try:
            rows.append(await run_backend("vllm", vgen, renderer, args))
        finally:
            await vgen.close()
    out = {"task": TASK, "max_turns": args.turns, "max_new_tokens": args.new_tokens, "backends": rows}
    if len(rows) == 2 and "skipped" not in rows[1]:
        out["vllm_over_transformers_tokens_per_s"] = round(rows[1]["generated_tokens_per_s"]
                                                           / rows[0]["generated_tokens_per_s"], 2)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=128)
    print(json.dumps(asyncio.run(main(parser.parse_args())), indent=2))
