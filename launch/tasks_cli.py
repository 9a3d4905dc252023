"""`progagent tasks list | show TASK | build TASK --scale vN OUT | validate [TASK…] | export-harbor TASK
--scale vN OUT | context-report [--out DIR] | probe [--config C] [key.path=value …]`."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from envs.format.library import LIBRARY_DIR, Task, TaskLoadError, get_task, load_library, load_task
from launch.paths import output_file
from schema.bounds import Count
from schema.load import argument
from schema.records import SCALES

console = Console()


def _task(ref: str, root: Path) -> Task:
    return load_task(ref) if Path(ref).is_dir() else get_task(ref, root)


def cmd_list(args: argparse.Namespace) -> int:
    tasks, errors = load_library(args.root)
    table = Table(title=f"{len(tasks)} tasks in {args.root}")
    for col in ("task", "domain", "tools", "title"):
        table.add_column(col)
    for t in tasks.values():
        table.add_row(t.id, t.spec.domain, str(len(t.spec.tools)), t.spec.title)
    console.print(table)
    for name, err in errors.items():
        console.print(f"[red]broken task {name}:[/] {err}")
    return 1 if errors else 0


def cmd_show(args: argparse.Namespace) -> int:
    task = _task(args.task, args.root)
    console.print(f"[bold]{task.id}[/] ({task.spec.domain}): {task.spec.title}")
    console.print(f"tools: {', '.join(task.spec.tools)}")
    console.print(f"scales: rows {task.spec.scales.rows}, files {task.spec.scales.files}; seed {task.spec.seed}")
    console.print("\n" + task.instruction)
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    from envs.checks.taskcheck import env_stats

    task = _task(args.task, args.root)
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        console.print(f"[red]error:[/] {out} exists and is not an empty folder", soft_wrap=True)
        return 2
    task.build(out, args.scale)
    console.print(json.dumps({"task": task.id, "scale": args.scale, **env_stats(out)}))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from envs.checks.validate import validate_parallel

    if args.tasks:
        tasks, errors = [], {}
        for ref in args.tasks:
            try:
                tasks.append(_task(ref, args.root))
            except TaskLoadError as exc:
                errors[ref] = str(exc)
    else:
        found, errors = load_library(args.root)
        tasks = list(found.values())
    t0 = time.perf_counter()

    def done(rep: dict) -> None:
        mark = "[green]ok[/]" if rep["ok"] else "[red]FAIL[/]"
        sizes = " ".join(f"{s}:{r.get('db_bytes', 0) // 1024}KB/{r.get('rows', 0)}r/{r.get('files', 0)}f"
                         for s, r in rep["scales"].items())
        console.print(f"{mark} {rep['task']:<42} {sizes}  [{time.perf_counter() - t0:.0f}s]")
        for p in rep["problems"]:
            console.print(f"    [red]-[/] {p}")

    with output_file(Path(args.json)) if args.json else contextlib.nullcontext() as report:  # before the work
        reports = validate_parallel(tasks, args.processes, args.concurrency, on_done=done)
        if report is not None:
            report.write(json.dumps(reports, indent=1).encode())
    for name, err in errors.items():
        console.print(f"[red]FAIL[/] {name}: {err}")
    failed = [r["task"] for r in reports if not r["ok"]] + list(errors)
    console.print(f"{len(reports) + len(errors) - len(failed)} of {len(reports) + len(errors)} tasks valid "
                  f"in {time.perf_counter() - t0:.0f} s")
    return 1 if failed else 0


def cmd_export(args: argparse.Namespace) -> int:
    from envs.harbor.export import export_harbor

    out = export_harbor(_task(args.task, args.root), args.scale, args.out, args.verifier)
    console.print(f"Harbor task written to {out}")
    return 0


def cmd_context_report(args: argparse.Namespace) -> int:
    import uvloop

    from envs.checks.context_report import markdown, measure, plot, summarize
    from rollout.tiny_model import project_tokenizer

    found, errors = load_library(args.root)
    tasks = [found[t] for t in args.tasks] if args.tasks else list(found.values())
    rows = uvloop.run(measure(tasks, project_tokenizer(), concurrency=args.concurrency))
    summary = summarize(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "context_report.json").write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    (out / "context_report.md").write_text(markdown(rows, summary) + "\n")
    plot(rows, out / "context_report.png")
    console.print(markdown(rows, summary))
    console.print(f"\nwritten: {out / 'context_report.md'}, {out / 'context_report.png'}")
    return 0 if all(summary["targets"].values()) else 1


def probe_table(rows: list, title: str) -> Table:
    """The probes' verdicts, a row per (source, task, scale): each probe's reward (an error shown as
    such) and whether training refuses the task."""
    probes = list(dict.fromkeys(name for r in rows for name in r.verdicts))
    table = Table(title=title)
    for col in ("source", "task", "scale", *probes, "training"):
        table.add_column(col)
    for r in rows:
        cells = []
        for name in probes:
            v = r.verdicts.get(name)
            cells.append("-" if v is None else f"error ({v.cause})" if v.error else f"{v.reward:g}")
        verdict = f"[red]refused: {', '.join(r.cheats)}[/]" if r.cheats else \
            ("[yellow]no probe ran[/]" if not r.verdicts else "[green]ok[/]")
        table.add_row(r.source, r.task_id, r.scale, *cells, verdict)
    return table


def cmd_probe(args: argparse.Namespace) -> int:
    """Each source's tasks of a config against the cheat probes (envs/probes.py): the table, and 1 when a
    task would be refused for training."""
    from envs.format.task_env import EnvironmentCache
    from envs.kinds import load_env
    from envs.probes import probe_refs
    from envs.sources import resolve_sources
    from schema.load import ConfigError, load_config

    try:
        cfg = load_config(args.config, args.overrides)
        sources = resolve_sources(cfg.sources(), say=console.print)
    except ConfigError as exc:
        console.print(f"[red]config error:[/] {exc}", soft_wrap=True)
        return 2
    cache = EnvironmentCache()
    try:
        rows = [row for src in sources for row in probe_refs(
            src.name, src.refs, lambda ref: load_env(ref, cache, judge_timeout_s=cfg.fabric.judge_timeout_s),
            args.concurrency)]
    finally:
        cache.cleanup()
    console.print(probe_table(rows, f"cheat probes of {args.config}"))
    refused = [r for r in rows if r.cheats]
    for r in refused:  # one whole line each, for scripts and logs (the table wraps to the terminal)
        console.print(f"refused: {r.source} {r.task_id} {r.scale}: {', '.join(r.cheats)}", soft_wrap=True)
    console.print(f"{len(refused)} of {len(rows)} (task, scale) pairs pass a cheat probe: training refuses them")
    return 1 if refused else 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, default=LIBRARY_DIR, help="task library folder")
    sub = parser.add_subparsers(dest="tasks_command", required=True)
    sub.add_parser("list", help="list the task library").set_defaults(tasks_run=cmd_list)
    p = sub.add_parser("show", help="a task's spec and instruction")
    p.add_argument("task")
    p.set_defaults(tasks_run=cmd_show)
    p = sub.add_parser("build", help="build a task's environment at one scale")
    p.add_argument("task")
    p.add_argument("--scale", choices=SCALES, required=True)
    p.add_argument("out")
    p.set_defaults(tasks_run=cmd_build)
    p = sub.add_parser("validate", help="prove each task's claims through the sandboxed runtime")
    p.add_argument("tasks", nargs="*")
    p.add_argument("--processes", type=argument(Count), default=os.cpu_count() or 1, help="worker processes")
    p.add_argument("--concurrency", type=argument(Count), default=2, help="tasks at once in each process")
    p.add_argument("--json", help="write the full report here")
    p.set_defaults(tasks_run=cmd_validate)
    p = sub.add_parser("export-harbor", help="write a task at one scale as a Harbor task")
    p.add_argument("task")
    p.add_argument("--scale", choices=SCALES, required=True)
    p.add_argument("--verifier", choices=("separate", "shared"), default="separate",
                   help="separate: the verifier runs in its own container, given the final state as artifacts "
                   "(Harbor's recommendation, `harbor lint` clean); shared: in the agent's container")
    p.add_argument("out")
    p.set_defaults(tasks_run=cmd_export)
    p = sub.add_parser("probe", help="judge each source's tasks of a config against cheats that solve nothing")
    p.add_argument("--config", default="configs/local.yaml")
    p.add_argument("--concurrency", type=argument(Count), default=2, help="tasks probed at once (default 2)")
    p.add_argument("overrides", nargs="*", help="key.path=value (envs.NAME.args.tasks=[...], ...)")
    p.set_defaults(tasks_run=cmd_probe)
    p = sub.add_parser("context-report", help="DTC vs PTC context tokens of the oracles, per task and scale")
    p.add_argument("tasks", nargs="*")
    p.add_argument("--out", default="runs/context-report")
    p.add_argument("--concurrency", type=argument(Count), default=3)
    p.set_defaults(tasks_run=cmd_context_report)


def run(args: argparse.Namespace) -> int:
    try:
        return args.tasks_run(args)
    except (TaskLoadError, FileExistsError, ValueError) as exc:  # OutputError is a ValueError
        console.print(f"[red]error:[/] {exc}", soft_wrap=True)
        return 2


