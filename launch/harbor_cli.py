"""`progagent harbor check SRC…` and `progagent harbor run SRC… --harness ptc --model M`: Harbor tasks
(ours exported, or a public benchmark's) run through our harnesses and judged by their own tests.

SRC is a Harbor task folder or a dataset folder of them. `check` needs no model: for each task the
untouched container must score 0 and solution/solve.sh must score 1 (exit 1 otherwise). `run` drives
real episodes with a model: `tiny` (the project's tiny model), `openai:NAME` (any OpenAI-compatible
endpoint, `--base-url`), or a Hugging Face model folder; trajectories go to `--out` as JSONL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from pathlib import Path

import msgspec
from rich.console import Console

from envs.harbor_import import HarborTask, HarborTaskError, find_harbor_tasks, load_harbor_task

console = Console()


def _load(sources: list[str]) -> tuple[list[HarborTask], dict[str, str]]:
    tasks, errors = [], {}
    for src in sources:
        try:
            folders = find_harbor_tasks(src)
        except HarborTaskError as exc:
            errors[src] = str(exc)
            continue
        for folder in folders:
            try:
                tasks.append(load_harbor_task(folder))
            except HarborTaskError as exc:
                errors[str(folder)] = str(exc)
    for name, err in errors.items():
        console.print(f"[red]broken task {name}:[/] {err}")
    return tasks, errors


def cmd_check(args: argparse.Namespace) -> int:
    from envs.harbor_run import check

    tasks, errors = _load(args.sources)
    reports = []
    for task in tasks:
        t0 = time.perf_counter()
        report = check(task)
        reports.append(report)
        mark = "[green]ok[/]" if report.ok else "[red]FAIL[/]"
        oracle = report.oracle.verdict.score if report.oracle else float("nan")
        console.print(f"{mark} {task.id:<40} oracle {oracle:.2f}  untouched {report.nop.verdict.score:.2f}  "
                      f"[{time.perf_counter() - t0:.1f}s]")
        if report.error:
            console.print(f"    [red]-[/] {report.error}")
        for note in report.notes if args.verbose_notes else ():
            console.print(f"    [yellow]note:[/] {note}")
    if args.json:
        Path(args.json).write_bytes(msgspec.json.format(msgspec.json.encode(reports)))
    failed = [r for r in reports if not r.ok]
    console.print(f"{len(reports) - len(failed)} of {len(reports) + len(errors)} Harbor tasks pass the oracle check")
    return 1 if failed or errors else 0


def _generator(model: str, base_url: str | None):
    """(generator, tokenizer) for `tiny`, `openai:NAME` or a Hugging Face model folder."""
    from rollout.tiny_model import build_tiny, project_tokenizer

    if model.startswith("openai:"):
        from rollout.generators.openai_backend import OpenAIGenerator

        return OpenAIGenerator(model.split(":", 1)[1], base_url=base_url), project_tokenizer()
    from rollout.generators.hf import HFGenerator

    gen = HFGenerator(build_tiny() if model == "tiny" else model)
    return gen, gen.tokenizer


async def run_episodes(args: argparse.Namespace) -> int:
    from envs.harbor_run import harbor_trajectory
    from envs.runtime.config import RuntimeConfig
    from envs.runtime.episode import Runtime
    from rollout.agent_loop import ChatRenderer, LoopLimits
    from rollout.types import SamplingParams

    tasks, errors = _load(args.sources)
    generator, tokenizer = _generator(args.model, args.base_url)
    renderer = ChatRenderer(tokenizer)
    limits = LoopLimits(max_turns=args.max_turns, max_new_tokens=args.max_new_tokens)
    sampling = SamplingParams(temperature=args.temperature, max_new_tokens=args.max_new_tokens)
    sem = asyncio.Semaphore(args.concurrency)
    encoder = msgspec.json.Encoder()
    rewards: list[float] = []
    with open(args.out, "wb") if args.out else contextlib.nullcontext() as out:
        async with Runtime(RuntimeConfig(warm_pool=args.concurrency)) as runtime:
            async def one(task: HarborTask, i: int) -> None:
                async with sem:
                    traj = await harbor_trajectory(runtime, task, args.harness, renderer, generator, limits=limits,
                                                   sampling=sampling, sample_idx=i)
                rewards.append(traj.reward)
                if out:
                    out.write(encoder.encode(traj) + b"\n")
                error = f"  [red]{traj.verifier_error[:200]}[/]" if traj.verifier_error else ""
                console.print(f"{task.id} #{i}: reward {traj.reward:.0f} score {traj.score:.2f} {traj.termination} "
                              f"({len(traj.turns)} turns){error}")

            await asyncio.gather(*(one(t, i) for t in tasks for i in range(args.samples)))
    if rewards:
        console.print(f"{args.harness}: mean reward {sum(rewards) / len(rewards):.3f} over {len(rewards)} episodes")
    return 1 if errors or not rewards else 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("harbor", help="Harbor tasks (exported or a public benchmark): oracle check, model runs")
    hsub = parser.add_subparsers(dest="harbor_command", required=True)
    p = hsub.add_parser("check", help="untouched container scores 0, solution/solve.sh scores 1")
    p.add_argument("sources", nargs="+", help="Harbor task folders or dataset folders of them")
    p.add_argument("--json", help="write the full reports here")
    p.add_argument("--notes", dest="verbose_notes", action="store_true", help="show what could not be emulated")
    p.set_defaults(run=cmd_check)
    p = hsub.add_parser("run", help="episodes with a model through a harness, judged by the task's tests")
    p.add_argument("sources", nargs="+", help="Harbor task folders or dataset folders of them")
    p.add_argument("--harness", choices=("ptc", "dtc", "hybrid"), default="ptc")
    p.add_argument("--model", default="tiny", help="tiny | openai:NAME | a Hugging Face model folder")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL)")
    p.add_argument("--samples", type=int, default=1, help="episodes per task")
    p.add_argument("--max-turns", type=int, default=30)
    p.add_argument("--max-new-tokens", type=int, default=1024)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--out", default=None, help="JSONL file of judged trajectories")
    p.set_defaults(run=lambda a: asyncio.run(run_episodes(a)))
