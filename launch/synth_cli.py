"""`progagent synth run [--config configs/synth.yaml] [--out runs/synth] [key.path=value …]` and
`progagent synth status [--out runs/synth]`.

`run` synthesizes tasks (synth/pipeline.py) and writes accepted ones to the output library; running
it again with the same --out continues where it stopped (finished stages are not repeated).
Endpoints come from the config or $PROGAGENT_SYNTH_BASE_URL / $OPENAI_BASE_URL and
$PROGAGENT_SYNTH_API_KEY / $OPENAI_API_KEY.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import msgspec
from rich.console import Console
from rich.table import Table

console = Console()


def _table(summary) -> Table:
    table = Table(title=f"synthesis in {summary.out_dir}")
    table.add_column("candidate", overflow="fold")
    for col in ("status", "repairs", "prompt tok", "completion tok", "reason"):
        table.add_column(col)
    for o in summary.outcomes:
        tok = [sum(u.prompt_tokens for u in o.usage_by_stage.values()),
               sum(u.completion_tokens for u in o.usage_by_stage.values())]
        color = "green" if o.status == "accepted" else "red"
        table.add_row(o.candidate, f"[{color}]{o.status}[/]", str(o.repair_rounds), f"{tok[0]:,}", f"{tok[1]:,}",
                      (o.reason.splitlines() or [""])[0][:80])
    for name, err in summary.errors.items():
        table.add_row(name, "[yellow]error[/]", "", "", "", err[:80])
    return table


async def synthesize(cfg, out: str):
    """The pipeline with its checks where `fabric.mode` says (launch/synth_fabric.py for "fabric");
    Ray started here is shut down after."""
    from synth.pipeline import Pipeline

    if cfg.fabric.mode == "local":
        return await Pipeline(cfg, out).run()
    import ray

    from launch.synth_fabric import FabricChecker

    started = not ray.is_initialized()
    try:
        return await Pipeline(cfg, out, checker=await FabricChecker.start(cfg)).run()
    finally:
        if started and ray.is_initialized() and cfg.fabric.ray_address is None:
            ray.shutdown()


def cmd_run(args: argparse.Namespace) -> int:
    import uvloop

    from launch.paths import OutputError, output_folder
    from schema.synth import ConfigError, load_synth_config

    try:
        cfg = load_synth_config(args.config, args.overrides)
        output_folder(Path(args.out))
        if cfg.library_dir:
            output_folder(Path(cfg.library_dir))
    except (ConfigError, OutputError) as exc:
        console.print(f"[red]error:[/] {exc}", soft_wrap=True)
        return 2
    summary = uvloop.run(synthesize(cfg, args.out))
    console.print(_table(summary))
    for stage, u in summary.usage_by_stage.items():
        console.print(f"  {stage:<10} {u.requests:>4} requests {u.prompt_tokens:>10,} prompt {u.completion_tokens:>9,} "
                      "completion tokens")
    console.print(f"{len(summary.accepted)} accepted into {summary.library_dir} in {summary.seconds:.0f} s "
                  f"(stages run {sum(summary.stages_run.values())}, skipped {sum(summary.stages_skipped.values())})")
    return 1 if summary.errors else 0


def cmd_status(args: argparse.Namespace) -> int:
    from synth.pipeline import RunSummary

    path = Path(args.out) / "summary.json"
    if not path.is_file():
        console.print(f"[red]error:[/] {path} does not exist (no finished run in {args.out})")
        return 2
    console.print(_table(msgspec.json.decode(path.read_bytes(), type=RunSummary)))
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="synth_command", required=True)
    p = sub.add_parser("run", help="synthesize, repair, audit and validate tasks (resumable)")
    p.add_argument("--config", default="configs/synth.yaml")
    p.add_argument("--out", default="runs/synth", help="records, revisions and (by default) the output library")
    p.add_argument("overrides", nargs="*", help="key.path=value, e.g. domains=[library] max_repair_rounds=2")
    p.set_defaults(synth_run=cmd_run)
    p = sub.add_parser("status", help="the outcome of the last run in --out")
    p.add_argument("--out", default="runs/synth")
    p.set_defaults(synth_run=cmd_status)


def run(args: argparse.Namespace) -> int:
    return args.synth_run(args)
