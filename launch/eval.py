"""Evaluation sweeps: model(s) × harness × the sources' (task, scale) cells, n samples each, on the fabric.

    progagent eval --config configs/local.yaml sweep.models=[tiny,runs/x/hf] sweep.samples=8

Each (model, harness, task, scale, sample) is one judged rollout, cached in `<out>/rollouts.jsonl`
(launch/rollout_cache.py), so an interrupted sweep run again does only what is missing. From the
cache: `results_by_task.csv`, `results_by_scale.csv`, `results.csv` (per model and harness),
`report.md`, `summary.json`, plots (pass rate against scale per harness: the shape of the paper's
Figure 3; context and tool-output tokens against scale; pass@k; program structures) and W&B rows
when enabled. The metrics are defined in launch/eval_report.py.

API models (`openai:NAME`, any OpenAI-compatible chat endpoint) run on the same fabric: the pool
serves them with its openai backend (the prompt's messages in, Hermes text out, tokenised with the
project tokenizer, zero log-probs: never trained on), and the same judges score them. The endpoint
and the name of the variable holding its key come from `fabric.generator` (a key never goes in a config):

    OPENAI_API_KEY=... progagent eval sweep.models=[openai:NAME,runs/x/hf] \
        fabric.generator.base_url=http://host:8000/v1 fabric.generator.api_key_env=OPENAI_API_KEY

A rollout whose generator failed (HTTP errors after the client's retries, a malformed reply) is
retried and then reported as failed, never cached; the warning says what to check.

What a sweep runs is the config's sources (envs/sources.py: `envs:`, and `tasks:` as the source
"tasks"), each at its own scales, `sweep.envs=[NAMES]` picking some; any kind registered in
envs/kinds.py joins the same way. `--harbor PATH` (repeatable), `--loca CHECKOUT`, `--toolathlon
CHECKOUT`, `--mcpmark CHECKOUT` and `--mcpmark-postgres CHECKOUT` each add the source of that kind, named after it; its other settings
are `envs.<kind>.args.*`:

    progagent eval --model openai:NAME --harbor bench/some-dataset sweep.envs=[harbor] sweep.harnesses=[ptc]
    progagent eval --model openai:NAME --loca ~/LOCA-bench envs.loca.args.presets=[8k,64k] sweep.envs=[loca]

Harbor tasks run at the one scale `harbor` (their tests/test.sh on a judge); each LOCA-bench
configuration is a task whose scale is its preset, judged by LOCA's evaluator on the env worker that
holds the state; Toolathlon's local-only tasks at `toolathlon`, MCPMark's filesystem tasks (from a
local cache of its data, `envs.mcpmark.args.data_dir`: nothing is downloaded) and its postgres
tasks (`envs.mcpmark_postgres.args.backups`: the categories' backups) at `mcpmark`. The plots'
x axis is the library's scales when a library source runs, else the other sources' scales (LOCA's
presets: the paper's Figure 3, pass rate and context tokens against environment-state size). MCP-Atlas
(`kind: mcp_atlas`) is a source of the config only: it needs a task file and a judge endpoint.
`--suite paper` (sweep.suite) also writes the paper's main-results table over every benchmark
(launch/paper_report.py).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import msgspec
from rich.console import Console

from envs.sources import Source, resolve_sources
from launch import eval_report as rep
from launch.paths import OutputError, output_folder, run_root
from launch.rollout_cache import RolloutCache, rollout_seed
from launch.rollouts import (
    RolloutJob,
    RolloutRunner,
    check_model,
    outcome_settings,
    run_models,
)
from schema.config import SweepSettings, TrainConfig
from schema.load import ConfigError, load_sections
from schema.records import SCALES

console = Console()

#: the command-line flags that add a source of a kind (`--loca CHECKOUT`: envs.loca, kind loca, args.checkout)
SOURCE_FLAGS = {"harbor": "paths", "loca": "checkout", "toolathlon": "checkout", "mcpmark": "checkout",
                "mcpmark_postgres": "checkout"}


def validate(st: SweepSettings) -> None:
    from rollout.harness import HARNESSES

    if st.suite not in ("", "paper"):
        raise ConfigError(f"sweep.suite: {st.suite!r} is not a suite (\"paper\", or \"\" for none)")
    bad = [h for h in st.harnesses if h not in HARNESSES]
    if bad or st.samples < 1 or not st.harnesses:
        raise ConfigError(f"sweep: unknown harnesses {bad} or no work (samples={st.samples})")
    if any(k > st.samples for k in st.ks):  # such a k was left out of the report without a word
        raise ConfigError(f"sweep.ks: pass@k needs k samples, and sweep.samples is {st.samples}: "
                          f"{sorted(k for k in st.ks if k > st.samples)} cannot be estimated (leave ks out for "
                          f"1, 2, 4, ... up to samples)")
    for m in st.models:
        check_model(m)


def sweep_sources(cfg: TrainConfig, st: SweepSettings) -> list[Source]:
    """The sources a sweep runs (sweep.envs, [] = all), listed (ConfigError before anything starts)."""
    return resolve_sources(cfg.sources(), st.envs or None, say=console.print, where="sweep.envs")


def out_dir(cfg: TrainConfig, st: SweepSettings) -> Path:
    """The sweep's folder (sweep.out_dir, else <run.out_dir>/eval-<run.name>), made; a ConfigError when it
    cannot be (a file there was a traceback)."""
    path = Path(st.out_dir) if st.out_dir else run_root(cfg.run.out_dir)[0] / f"eval-{cfg.run.name}"
    try:
        return output_folder(path)
    except OutputError as exc:
        raise ConfigError(f"sweep.out_dir: {exc}") from None


def jobs(st: SweepSettings, models: list[str], sources: list[Source]) -> list[RolloutJob]:
    """Sample-major order: a sweep stopped early has every cell at a similar n."""
    cells = [r for src in sources for r in src.refs]
    return [RolloutJob(m, h, r.task_id, r.scale, k, rollout_seed(st.seed, r.task_id, r.scale, k), r)
            for k in range(st.samples) for m in models for h in st.harnesses for r in cells]


def _describe(sources: list[Source]) -> str:
    return " + ".join(f"{len(s.task_ids)} task(s) of {s.name} ({s.kind.name}; scales {', '.join(s.scale_weights)})"
                      for s in sources)


async def sweep(cfg: TrainConfig, st: SweepSettings, runners: dict[str, RolloutRunner] | None = None) -> Path:
    from launch.metrics import MetricsLog

    validate(st)
    sources = sweep_sources(cfg, st)
    out = out_dir(cfg, st)
    models = st.models or [cfg.model.path]
    scales = list(dict.fromkeys(sc for src in sources for sc in src.scale_weights))
    todo = jobs(st, models, sources)
    cache = RolloutCache(out / "rollouts.jsonl", outcome_settings(cfg))
    console.print(f"sweep: {len(todo)} rollouts ({len(models)} model(s) × {len(st.harnesses)} harness(es) × "
                  f"({_describe(sources)}) × {st.samples}); {len(cache)} cached in {out}")
    t0 = time.time()
    step = max(1, len(todo) // 10)

    def progress(rec) -> None:
        if len(cache) % step == 0:
            console.print(f"  {len(cache)} rollouts cached ({time.time() - t0:.0f} s)")

    try:
        stats = await run_models(cfg, todo, cache, runners, progress)
    finally:
        cache.close()
    records = [cache.get(j.key()) for j in todo if j.key() in cache]
    ks = sorted(set(st.ks) | {1}) if st.ks else [2**i for i in range(st.samples.bit_length())]
    task_rows = rep.by_task(records, ks)
    scale_rows = rep.summarise(task_rows, ("model", "harness", "scale"))
    overall = rep.summarise(task_rows, ("model", "harness"))
    rep.write_csv(task_rows, out / "results_by_task.csv")
    rep.write_csv(scale_rows, out / "results_by_scale.csv")
    rep.write_csv(overall, out / "results.csv")
    header = [f"# Evaluation sweep `{out.name}`", "",
              f"- models: {', '.join(models)}; harnesses: {', '.join(st.harnesses)}; {_describe(sources)}; "
              f"n = {st.samples} per cell",
              f"- rollouts: {stats['run']} run now, {stats['cached']} from the cache, "
              f"{len(stats['failed'])} failed; {time.time() - t0:.0f} s"]
    rep.write_markdown(out / "report.md", scale_rows, overall, ks, scales, header)
    plotted = [sc for sc in scales if sc in SCALES] or scales  # one x axis: the library's scales, else the others'
    rep.write_plots(out, [r for r in scale_rows if r["scale"] in plotted], overall, ks, plotted)
    rep.write_json(out / "summary.json", {
        "settings": msgspec.to_builtins(st), "models": models, "stats": stats, "overall": overall,
        "by_scale": scale_rows,
        "sources": {src.name: {"kind": src.kind.name, "scales": list(src.scale_weights), "tasks": src.task_ids,
                               "refs": [msgspec.to_builtins(r) for r in src.refs]} for src in sources}})
    if st.suite == "paper":
        from launch.paper_report import write_paper

        paper = write_paper(out, records, sources, [f"# Main results `{out.name}`", "", header[2]])
        console.print(f"paper table → {paper}")
    log = MetricsLog(out, out.name, msgspec.to_builtins(cfg) | {"sweep": msgspec.to_builtins(st)},
                     cfg.wandb.mode, cfg.wandb.project, cfg.wandb.entity)
    for i, scale in enumerate(scales):  # W&B x axis = scale index: each harness's curve over v0..v3 (, harbor)
        log.log("sweep", i, {f"sweep/{r['model'].replace('/', '_')}/{r['harness']}/{k}": v
                            for r in scale_rows if r["scale"] == scale for k, v in r.items()
                            if isinstance(v, int | float)})
    log.close()
    console.print(f"[bold green]sweep done[/]: {stats['run']} run, {stats['cached']} cached, "
                  f"{len(stats['failed'])} failed → {out / 'report.md'}")
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/local.yaml")
    p.add_argument("--model", action="append", default=None, help="a model to evaluate (repeatable); "
                   "default sweep.models or model.path")
    p.add_argument("--out", default=None, help="output folder (a re-run with the same folder resumes)")
    p.add_argument("--harbor", action="append", default=None, metavar="PATH",
                   help="a Harbor task folder or a dataset folder of them (repeatable): the source envs.harbor; "
                   "sweep.envs=[harbor] runs it alone")
    p.add_argument("--loca", default=None, metavar="CHECKOUT",
                   help="a LOCA-bench checkout: the source envs.loca (envs.loca.args.presets=[8k,64k] picks the "
                   "presets, envs.loca.args.tasks=[...] the task types); sweep.envs=[loca] runs LOCA-bench alone")
    p.add_argument("--toolathlon", default=None, metavar="CHECKOUT",
                   help="a Toolathlon checkout: the source envs.toolathlon, its local-only tasks "
                   "(or envs.toolathlon.args.tasks=[...])")
    p.add_argument("--mcpmark", default=None, metavar="CHECKOUT",
                   help="an MCPMark checkout: the source envs.mcpmark, its filesystem tasks whose data is in "
                   "envs.mcpmark.args.data_dir (a local cache of the unzipped categories: nothing is downloaded)")
    p.add_argument("--mcpmark-postgres", dest="mcpmark_postgres", default=None, metavar="CHECKOUT",
                   help="an MCPMark checkout: the source envs.mcpmark_postgres, its postgres tasks, each on a "
                   "PostgreSQL server of its own (envs.mcpmark_postgres.args.backups: a folder of the categories' "
                   ".backup files; without it the repository-only tasks)")
    p.add_argument("--suite", default=None, choices=["paper"],
                   help="paper: also the table in the shape of the paper's main results (paper.md: pass rate, "
                   "context and tool-output tokens per benchmark and harness, PTC/DTC ratios; a benchmark not "
                   "configured is a row saying how to add it)")
    p.add_argument("overrides", nargs="*", help="key.path=value (sweep.samples=8, sweep.harnesses=[ptc], ...)")


def flag_overrides(args: argparse.Namespace) -> list[str]:
    """`--harbor/--loca/--toolathlon/--mcpmark` as the overrides of a source of that kind, named after
    it (envs.loca.kind=loca, envs.loca.args.checkout=...); its other settings are envs.<kind>.args.*."""
    out = []
    for kind, field in SOURCE_FLAGS.items():
        value = getattr(args, kind, None)
        if not value:
            continue
        paths = [str(Path(p).expanduser().resolve()) for p in (value if isinstance(value, list) else [value])]
        out += [f"envs.{kind}.kind={kind}",
                f"envs.{kind}.args.{field}={msgspec.json.encode(paths if field == 'paths' else paths[0]).decode()}"]
    return out


def run(args: argparse.Namespace) -> int:
    extra = ([f"sweep.models={msgspec.json.encode(args.model).decode()}"] if args.model else []) + \
        ([f"sweep.out_dir={args.out}"] if args.out else []) + flag_overrides(args) + \
        ([f"sweep.suite={args.suite}"] if getattr(args, "suite", None) else [])
    try:
        cfg, st = load_sections(args.config, [*args.overrides, *extra], "sweep", SweepSettings)
        validate(st)
        sweep_sources(cfg, st)
        out_dir(cfg, st)
    except ConfigError as exc:
        console.print(f"[red]config error:[/] {exc}", soft_wrap=True)
        return 2
    run_sweep(cfg, st)
    return 0


def run_sweep(cfg: TrainConfig, st: SweepSettings) -> Path:
    """`sweep` from a command line: Ray started here is shut down after."""
    import ray

    started = not ray.is_initialized()  # a Ray someone else started (a notebook, a test) stays up
    try:
        return asyncio.run(sweep(cfg, st))
    finally:
        if started and ray.is_initialized() and cfg.ray.address is None:
            ray.shutdown()
