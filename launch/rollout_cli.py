"""`progagent model build-tiny OUT` and `progagent collect --teacher oracle|openai:MODEL --harness …`."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import msgspec
from rich.console import Console

from envs.format.library import LIBRARY_DIR, load_library
from schema.records import SCALES

console = Console()


def cmd_build_tiny(args: argparse.Namespace) -> int:
    from rollout.tiny_model import TinyConfig, build_tiny

    t0 = time.perf_counter()
    out = build_tiny(args.out, TinyConfig(vocab_size=args.vocab_size, hidden_size=args.hidden_size,
                                          num_layers=args.layers, seed=args.seed))
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(out)
    console.print(f"tiny Qwen3 model at {out} (vocab {cfg.vocab_size}, hidden {cfg.hidden_size}, "
                  f"{cfg.num_hidden_layers} layers) in {time.perf_counter() - t0:.1f} s")
    return 0


async def collect(args: argparse.Namespace) -> int:
    teacher = args.teacher
    if teacher != "oracle" and not teacher.startswith("openai:"):  # before loading anything
        console.print(f"[red]error:[/] --teacher must be 'oracle' or 'openai:MODEL', got {teacher!r}")
        return 2
    from envs.format.task_env import EnvironmentCache, LibraryTaskEnv
    from envs.runtime.episode import Runtime
    from rollout.agent_loop import ChatRenderer
    from rollout.episode import run_episode
    from rollout.teacher import oracle_trajectory
    from rollout.tiny_model import build_tiny
    from rollout.tokenizer import load_tokenizer
    from schema.config import LoopLimits, RuntimeConfig

    found, errors = load_library(args.root)
    for name, err in errors.items():
        console.print(f"[yellow]skipping broken task {name}:[/] {err}")
    tasks = [found[t] for t in args.tasks] if args.tasks else list(found.values())
    scales = args.scales.split(",")
    renderer = ChatRenderer(load_tokenizer(args.model or build_tiny()))
    generator = None
    if teacher.startswith("openai:"):
        from rollout.generators.openai_backend import OpenAIGenerator

        generator = OpenAIGenerator(teacher.split(":", 1)[1], base_url=args.base_url, tokenizer=renderer.tok)
    cache = EnvironmentCache()
    kept = total = 0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    sem = asyncio.Semaphore(args.concurrency)
    encoder = msgspec.json.Encoder()
    async with Runtime(RuntimeConfig(warm_pool=args.concurrency)) as runtime:
        with out.open("wb") as fh:
            async def one(task, scale, i):
                nonlocal kept, total
                async with sem:
                    env = LibraryTaskEnv(task, scale, cache)
                    if generator is None:
                        traj = await oracle_trajectory(runtime, env, args.harness, renderer, sample_idx=i)
                    else:
                        traj = await run_episode(env, runtime, generator, renderer, args.harness,
                                                 limits=LoopLimits(max_turns=args.max_turns), sample_idx=i)
                total += 1
                if traj.score >= args.min_score:
                    kept += 1
                    fh.write(encoder.encode(traj) + b"\n")
                console.print(f"{task.id} {scale} #{i}: score {traj.score:.2f} {traj.termination} "
                              f"({len(traj.token_ids)} tokens)")

            await asyncio.gather(*(one(t, s, i) for t in tasks for s in scales for i in range(args.samples)))
    cache.cleanup()
    console.print(f"kept {kept} of {total} trajectories (score >= {args.min_score}) in {out}")
    return 0 if kept else 1


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="model_command", required=True)
    p = sub.add_parser("build-tiny", help="train the tokenizer and initialise the tiny Qwen3 model")
    p.add_argument("out", nargs="?", default=None, help="output folder (default: the cache)")
    p.add_argument("--vocab-size", type=int, default=4096)
    p.add_argument("--hidden-size", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=cmd_build_tiny)


def add_collect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--teacher", default="oracle", help="oracle | openai:MODEL")
    parser.add_argument("--harness", choices=("ptc", "dtc", "hybrid"), default="ptc")
    parser.add_argument("--tasks", nargs="*", default=None)
    parser.add_argument("--scales", default=",".join(SCALES))
    parser.add_argument("--samples", type=int, default=1, help="trajectories per task and scale")
    parser.add_argument("--min-score", type=float, default=0.7)
    parser.add_argument("--max-turns", type=int, default=30)
    parser.add_argument("--model", default=None, help="tokenizer folder (default: the tiny model)")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--root", type=Path, default=LIBRARY_DIR)
    parser.add_argument("--out", required=True, help="JSONL file of trajectories")
    parser.set_defaults(run=lambda a: asyncio.run(collect(a)))
