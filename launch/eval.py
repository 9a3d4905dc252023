"""Evaluation sweeps: model(s) × harness × environment scale × task, n samples each, on the fabric.

    progagent eval --config configs/local.yaml sweep.models=[tiny,runs/x/hf] sweep.samples=8

Each (model, harness, task, scale, sample) is one judged rollout, cached in `<out>/rollouts.jsonl`
(launch/rollout_cache.py), so an interrupted sweep run again does only what is missing. From the
cache: `results_by_task.csv`, `results_by_scale.csv`, `results.csv` (per model and harness),
`report.md`, `summary.json`, plots (pass rate against scale per harness: the shape of the paper's
Figure 3; context and tool-output tokens against scale; pass@k; program structures) and W&B rows
when enabled. The metrics are defined in launch/eval_report.py.

API models (`openai:NAME`, any OpenAI-compatible chat endpoint) run on the same fabric: the pool
serves them with its openai backend (`generate_chat`: messages in, Hermes text out), env workers
tokenise their replies with the project tokenizer (zero log-probs; never trained on), and the same
judges score them. The endpoint and the name of the variable holding its key come from
`fabric.generator` (a key never goes in a config):

    OPENAI_API_KEY=... progagent eval sweep.models=[openai:NAME,runs/x/hf] \
        fabric.generator.base_url=http://host:8000/v1 fabric.generator.api_key_env=OPENAI_API_KEY

A rollout whose generator failed (HTTP errors after the client's retries, a malformed reply) is
retried and then reported as failed, never cached; the warning says what to check.

Imported Harbor tasks (envs/harbor/task.py: a benchmark we did not write, or our own exports) join
a sweep with `--harbor PATH` (repeatable) or `sweep.harbor: [PATH, ...]`, each a task folder or a
dataset folder of them (relative paths from the current directory). They run on the same env workers
and judges (their tests/test.sh on the judge), at the one scale `harbor`, cached like every rollout;
their rows are in the CSV tables and the report (not the plots, whose x axis is the library's scales,
unless only Harbor tasks run). `sweep.scales=[]` leaves the library out:

    progagent eval --model openai:NAME --harbor bench/some-dataset sweep.scales=[] sweep.harnesses=[ptc]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import msgspec
from rich.console import Console

from envs.harbor.task import HarborTaskError, find_harbor_tasks, load_harbor_task
from launch import eval_report as rep
from launch.paths import run_root
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
from schema.records import HARBOR_SCALE, SCALES

console = Console()


def validate(st: SweepSettings) -> None:
    from rollout.harness import HARNESSES

    bad = [h for h in st.harnesses if h not in HARNESSES] + [s for s in st.scales if s not in SCALES]
    if bad or st.samples < 1 or not st.harnesses or not (st.scales or st.harbor):
        raise ConfigError(f"sweep: unknown harnesses/scales {bad} or no work (samples={st.samples})")
    for m in st.models:
        check_model(m)
    harbor_tasks(st.harbor)


def harbor_tasks(sources: list[str]) -> dict[str, str]:
    """{task name: absolute folder} of the Harbor tasks under `sources`; a broken task, or two tasks of
    one name (the name is the cache key), is a ConfigError before anything starts."""
    found: dict[str, str] = {}
    errors = []
    for src in sources:
        try:
            folders = find_harbor_tasks(Path(src).expanduser())
        except HarborTaskError as exc:
            errors.append(str(exc))
            continue
        for folder in folders:
            try:
                task = load_harbor_task(folder)
            except HarborTaskError as exc:
                errors.append(str(exc))
                continue
            if task.id in found and found[task.id] != str(task.dir):
                errors.append(f"{task.dir}: a second Harbor task named {task.id!r} (the first: {found[task.id]})")
            found[task.id] = str(task.dir)
    if errors:
        raise ConfigError("sweep.harbor: " + "; ".join(errors))
    return found


def out_dir(cfg: TrainConfig, st: SweepSettings) -> Path:
    return Path(st.out_dir) if st.out_dir else run_root(cfg.run.out_dir)[0] / f"eval-{cfg.run.name}"


def jobs(st: SweepSettings, models: list[str], tasks: list[str], harbor: dict[str, str] | None = None,
         library: str = "") -> list[RolloutJob]:
    """Sample-major order: a sweep stopped early has every cell at a similar n. `harbor`: {name: folder}."""
    cells = [(t, s, None) for t in tasks for s in st.scales]
    cells += [(t, HARBOR_SCALE, path) for t, path in (harbor or {}).items()]
    return [RolloutJob(m, h, t, s, k, rollout_seed(st.seed, t, s, k), library, path)
            for k in range(st.samples) for m in models for h in st.harnesses for t, s, path in cells]


async def sweep(cfg: TrainConfig, st: SweepSettings, runners: dict[str, RolloutRunner] | None = None) -> Path:
    from launch.fabric import task_ids
    from launch.metrics import MetricsLog

    validate(st)
    out = out_dir(cfg, st)
    out.mkdir(parents=True, exist_ok=True)
    models = st.models or [cfg.model.path]
    tasks = task_ids(cfg) if st.scales else []
    harbor = harbor_tasks(st.harbor)
    scales = [*st.scales, *([HARBOR_SCALE] if harbor else [])]
    todo = jobs(st, models, tasks, harbor, cfg.tasks.library_root)
    cache = RolloutCache(out / "rollouts.jsonl", outcome_settings(cfg))
    console.print(f"sweep: {len(todo)} rollouts ({len(models)} model(s) × {len(st.harnesses)} harness(es) × "
                  f"({len(tasks)} task(s) × {len(st.scales)} scale(s) + {len(harbor)} Harbor task(s)) × "
                  f"{st.samples}); {len(cache)} cached in {out}")
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
    ks = sorted(k for k in set(st.ks) | {1} if k <= st.samples)
    task_rows = rep.by_task(records, ks)
    scale_rows = rep.summarise(task_rows, ("model", "harness", "scale"))
    overall = rep.summarise(task_rows, ("model", "harness"))
    rep.write_csv(task_rows, out / "results_by_task.csv")
    rep.write_csv(scale_rows, out / "results_by_scale.csv")
    rep.write_csv(overall, out / "results.csv")
    header = [f"# Evaluation sweep `{out.name}`", "",
              f"- models: {', '.join(models)}; harnesses: {', '.join(st.harnesses)}; scales: "
              f"{', '.join(scales)}; {len(tasks)} task(s)"
              f"{f' + {len(harbor)} Harbor task(s) (scale {HARBOR_SCALE})' if harbor else ''}; "
              f"n = {st.samples} per cell",
              f"- rollouts: {stats['run']} run now, {stats['cached']} from the cache, "
              f"{len(stats['failed'])} failed; {time.time() - t0:.0f} s"]
    rep.write_markdown(out / "report.md", scale_rows, overall, ks, scales, header)
    rep.write_plots(out, [r for r in scale_rows if r["scale"] in (st.scales or scales)], overall, ks,
                    st.scales or scales)
    rep.write_json(out / "summary.json", {"settings": msgspec.to_builtins(st), "models": models, "tasks": tasks,
                                          "harbor_tasks": harbor, "stats": stats, "overall": overall,
                                          "by_scale": scale_rows})
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
                   help="a Harbor task folder or a dataset folder of them (repeatable; instead of sweep.harbor); "
                   "sweep.scales=[] runs the Harbor tasks only")
    p.add_argument("overrides", nargs="*", help="key.path=value (sweep.samples=8, sweep.harnesses=[ptc], ...)")


def run(args: argparse.Namespace) -> int:
    harbor = [str(Path(p).expanduser().resolve()) for p in args.harbor or []]
    extra = ([f"sweep.models={msgspec.json.encode(args.model).decode()}"] if args.model else []) + \
        ([f"sweep.out_dir={args.out}"] if args.out else []) + \
        ([f"sweep.harbor={msgspec.json.encode(harbor).decode()}"] if harbor else [])
    try:
        cfg, st = load_sections(args.config, [*args.overrides, *extra], "sweep", SweepSettings)
        validate(st)
    except ConfigError as exc:
        console.print(f"[red]config error:[/] {exc}")
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
