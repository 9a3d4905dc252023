"""`progagent harbor check SRC…` and `progagent harbor run SRC… --harness ptc --model M`: Harbor tasks
(ours exported, or a public benchmark's) run through our harnesses and judged by their own tests.

SRC is a Harbor task folder or a dataset folder of them. `check` needs no model: for each task the
untouched container must score 0 and solution/solve.sh must score 1 (exit 1 otherwise). `run` drives
real episodes with a model: `tiny` (the project's tiny model), `openai:NAME` (any OpenAI-compatible
endpoint, `--base-url`), or a Hugging Face model folder, on the actor fabric (generators, env
workers, judges; `--config`, `--set`): it is `progagent eval --harbor SRC sweep.envs=[harbor]` for one
model and harness, so judged rollouts are cached in `--out/rollouts.jsonl` with the sweep's tables.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import msgspec
from rich.console import Console

from envs.harbor.task import HarborTask, HarborTaskError, find_harbor_tasks, load_harbor_task
from schema.bounds import Count, Temperature
from schema.load import argument

console = Console()


def _load(sources: list[str], strict: bool = True) -> tuple[list[HarborTask], dict[str, str]]:
    tasks, errors = [], {}
    for src in sources:
        try:
            folders = find_harbor_tasks(src)
        except HarborTaskError as exc:
            errors[src] = str(exc)
            continue
        for folder in folders:
            try:
                tasks.append(load_harbor_task(folder, strict=strict))
            except HarborTaskError as exc:
                errors[str(folder)] = str(exc)
    for name, err in errors.items():
        console.print(f"[red]broken task {name}:[/] {err}")
    return tasks, errors


def cmd_check(args: argparse.Namespace) -> int:
    from envs.harbor.episode import check

    tasks, errors = _load(args.sources, strict=False)  # a task that cannot run is reported with why
    reports = []
    for task in tasks:
        t0 = time.perf_counter()
        report = check(task)
        reports.append(report)
        mark = "[green]ok[/]" if report.ok else "[red]FAIL[/]"
        oracle = f"{report.oracle.verdict.score:.2f}" if report.oracle else "-"
        untouched = f"{report.nop.verdict.score:.2f}" if report.nop else "-"
        console.print(f"{mark} {task.id:<40} oracle {oracle}  untouched {untouched}  "
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


def cmd_run(args: argparse.Namespace) -> int:
    """The Harbor tasks as an evaluation sweep (launch/eval.py) of one model and harness, on the actor
    fabric: generators, env workers, judges; rollouts cached in `--out`, so a re-run resumes."""
    from launch.eval import out_dir, run_sweep, validate
    from launch.paths import run_root
    from schema.config import SweepSettings
    from schema.load import ConfigError, load_sections

    tasks, errors = _load(args.sources)
    if not tasks:
        return 1
    w = "fabric.env_worker"
    overrides = [f"{w}.limits.max_turns={args.max_turns}", f"{w}.limits.max_new_tokens={args.max_new_tokens}",
                 f"{w}.limits.max_context_tokens={args.max_context_tokens}",
                 f"{w}.sampling.temperature={args.temperature}", f"{w}.concurrency={args.concurrency}",
                 *([f"fabric.generator.base_url={args.base_url}"] if args.base_url else []), *args.overrides]
    source = ["envs.harbor.kind=harbor", f"envs.harbor.args.paths={msgspec.json.encode([str(t.dir) for t in tasks]).decode()}"]
    try:
        cfg, st = load_sections(args.config, [*overrides, *source], "sweep", SweepSettings)
        st = msgspec.structs.replace(st, models=[args.model], harnesses=[args.harness], envs=["harbor"],
                                     samples=args.samples,
                                     out_dir=args.out or str(run_root(cfg.run.out_dir)[0] / "harbor"))
        validate(st)
        out_dir(cfg, st)
    except ConfigError as exc:
        console.print(f"[red]config error:[/] {exc}", soft_wrap=True)
        return 2
    out = run_sweep(cfg, st)
    summary = msgspec.json.decode((out / "summary.json").read_bytes())
    for row in summary["overall"]:
        console.print(f"{row['harness']}: mean reward {row['reward']:.3f} over {row['n']} episodes "
                      f"({row['verifier_errors']} verifier error(s)); per task: {out / 'results_by_task.csv'}")
    return 1 if errors or summary["stats"]["failed"] or not summary["overall"] else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`progagent harbor check|run` (launch/cli.py gives the command its parser)."""
    hsub = parser.add_subparsers(dest="harbor_command", required=True)
    p = hsub.add_parser("check", help="untouched container scores 0, solution/solve.sh scores 1")
    p.add_argument("sources", nargs="+", help="Harbor task folders or dataset folders of them")
    p.add_argument("--json", help="write the full reports here")
    p.add_argument("--notes", dest="verbose_notes", action="store_true", help="show what could not be emulated")
    p.set_defaults(run=cmd_check)
    p = hsub.add_parser("run", help="episodes with a model through a harness on the actor fabric, judged by "
                        "the task's tests")
    p.add_argument("sources", nargs="+", help="Harbor task folders or dataset folders of them")
    p.add_argument("--harness", choices=("ptc", "dtc", "hybrid"), default="ptc")
    p.add_argument("--model", default="tiny", help="tiny | openai:NAME | a Hugging Face model folder")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default $OPENAI_BASE_URL)")
    p.add_argument("--samples", type=argument(Count), default=1, help="episodes per task")
    p.add_argument("--max-turns", type=argument(Count), default=30)
    p.add_argument("--max-new-tokens", type=argument(Count), default=1024)
    p.add_argument("--max-context-tokens", type=argument(Count), default=32_768)
    p.add_argument("--temperature", type=argument(Temperature), default=1.0)
    p.add_argument("--concurrency", type=argument(Count), default=2, help="episodes at once per env worker")
    p.add_argument("--out", default=None, help="output folder: rollouts.jsonl (the cache: a re-run resumes), "
                   "results_by_task.csv, report.md (default <run.out_dir>/harbor)")
    p.add_argument("--config", default="configs/local.yaml", help="fabric settings (generators, env workers, "
                   "judges, Ray)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="a config override, e.g. fabric.env_workers=2 (repeatable)")
    p.set_defaults(run=cmd_run)
