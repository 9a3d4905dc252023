"""`progagent model build-tiny OUT` and `progagent collect --teacher oracle|openai:MODEL --harness …`."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import IO, Any

import msgspec
from rich.console import Console

from launch.paths import OutputError, output_file
from schema.bounds import Count, Fraction
from schema.load import argument

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


def collect_overrides(args: argparse.Namespace) -> list[str]:
    """The command's shorthands as config overrides (the `tasks:` source, the loop, the endpoint)."""
    enc = msgspec.json.encode
    out = [f"fabric.env_worker.harness={args.harness}", f"fabric.env_worker.limits.max_turns={args.max_turns}",
           f"fabric.env_worker.concurrency={args.concurrency}"]
    out += [f"tasks.library_root={enc(str(Path(args.root).resolve())).decode()}"] if args.root else []
    out += [f"tasks.tasks={enc(args.tasks).decode()}"] if args.tasks else []
    out += [f"tasks.scales={enc({s: 1.0 for s in args.scales.split(',')}).decode()}"] if args.scales else []
    out += [f"model.path={enc(str(args.model)).decode()}"] if args.model else []
    out += [f"fabric.generator.base_url={args.base_url}"] if args.base_url else []
    return [*out, *args.overrides]


async def collect(args: argparse.Namespace) -> int:
    """Teacher trajectories (SFT data) on the actor fabric, from the config's sources (envs/sources.py):
    the oracle of every (task, scale) of the sources whose kind has one, or an API model's episodes of
    every source; those scoring at least --min-score go to --out, one JSON line each."""
    teacher = args.teacher
    if teacher != "oracle" and not teacher.startswith("openai:"):  # before loading anything
        console.print(f"[red]error:[/] --teacher must be 'oracle' or 'openai:MODEL', got {teacher!r}")
        return 2
    import ray

    from envs.sources import resolve_sources
    from launch.rollouts import RolloutRunner
    from schema.load import ConfigError, load_config
    from schema.records import EpisodeRequest

    try:
        cfg = load_config(args.config, collect_overrides(args))
        sources = resolve_sources(cfg.sources(), say=console.print)
    except ConfigError as exc:
        console.print(f"[red]config error:[/] {exc}", soft_wrap=True)
        return 2
    oracle = teacher == "oracle"
    reqs = [EpisodeRequest(env=r, group_id=f"collect-{src.name}-{r.task_id}-{r.scale}", sample_idx=i,
                           harness=args.harness, generator="oracle" if oracle else "policy")
            for src in sources if src.kind.has_oracle or not oracle for r in src.refs for i in range(args.samples)]
    if not reqs:
        console.print("[red]error:[/] no source has an oracle program (library tasks do): use --teacher openai:MODEL")
        return 2
    out = Path(args.out)
    try:  # opened before the episodes run: a path that cannot be written loses no work
        with output_file(out) as fh:
            started = not ray.is_initialized()
            runner = await RolloutRunner.start(cfg, cfg.model.path if oracle else teacher)
            try:
                outcomes = await runner.fabric.scheduler.run_all(reqs)
            finally:
                await runner.close()
                if started and ray.is_initialized():
                    ray.shutdown()
            kept = _write_kept(outcomes, fh, args.min_score)
    except OutputError as exc:
        console.print(f"[red]error:[/] --out {exc}", soft_wrap=True)
        return 2
    console.print(f"kept {kept} of {len(outcomes)} trajectories (score >= {args.min_score}) in {out}")
    return 0 if kept else 1


def _write_kept(outcomes: list[Any], fh: IO[bytes], min_score: float) -> int:
    """Each trajectory scoring at least `min_score`, one JSON line; how many."""
    encoder = msgspec.json.Encoder()
    kept = 0
    for o in outcomes:
        t = o.trajectory
        if t is None:
            console.print(f"[yellow]{o.request.group_id} #{o.request.sample_idx} failed:[/] {o.failure}: "
                          f"{o.detail[:200]}")
            continue
        console.print(f"{t.task_id} {t.scale} #{t.sample_idx}: score {t.score:.2f} {t.termination} "
                      f"({len(t.token_ids)} tokens)")
        if t.score >= min_score:
            kept += 1
            fh.write(encoder.encode(t) + b"\n")
    return kept


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="model_command", required=True)
    p = sub.add_parser("build-tiny", help="train the tokenizer and initialise the tiny Qwen3 model")
    p.add_argument("out", nargs="?", default=None, help="output folder (default: the cache)")
    p.add_argument("--vocab-size", type=argument(Count), default=4096)
    p.add_argument("--hidden-size", type=argument(Count), default=128)
    p.add_argument("--layers", type=argument(Count), default=2)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=cmd_build_tiny)
    p = sub.add_parser("import-gguf", help="convert a GGUF model file (llama.cpp's format) to a Hugging Face folder")
    p.add_argument("gguf", help="the .gguf file")
    p.add_argument("out", help="the Hugging Face folder to write (new or empty)")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    p.set_defaults(run=cmd_import_gguf)


def cmd_import_gguf(args: argparse.Namespace) -> int:
    from rollout.model_import import import_gguf

    try:
        console.print(f"[green]{import_gguf(args.gguf, args.out, args.dtype)}[/]")
    except (FileNotFoundError, FileExistsError, ValueError) as exc:
        console.print(f"[red]error:[/] {exc}", soft_wrap=True)
        return 2
    return 0


def add_collect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=None, help="a run config whose sources are collected (default: the "
                        "shipped library)")
    parser.add_argument("--teacher", default="oracle", help="oracle | openai:MODEL")
    parser.add_argument("--harness", choices=("ptc", "dtc", "hybrid"), default="ptc")
    parser.add_argument("--tasks", nargs="*", default=None, help="the `tasks:` source's tasks (tasks.tasks)")
    parser.add_argument("--scales", default=None, help="the `tasks:` source's scales, comma-separated (tasks.scales)")
    parser.add_argument("--samples", type=argument(Count), default=1, help="trajectories per task and scale")
    parser.add_argument("--min-score", type=argument(Fraction), default=0.7)
    parser.add_argument("--max-turns", type=argument(Count), default=30)
    parser.add_argument("--model", default=None, help="the model whose tokenizer renders the turns (model.path)")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL)")
    parser.add_argument("--concurrency", type=argument(Count), default=2, help="episodes at once per env worker")
    parser.add_argument("--root", type=Path, default=None, help="the `tasks:` source's library (tasks.library_root)")
    parser.add_argument("--out", required=True, help="JSONL file of trajectories")
    parser.add_argument("overrides", nargs="*", help="key.path=value")
    parser.set_defaults(run=lambda a: asyncio.run(collect(a)))
