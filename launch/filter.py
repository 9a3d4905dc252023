"""Difficulty filtering: keep the tasks a policy solves sometimes, at every environment scale.

    progagent filter --config configs/local.yaml --model runs/x/hf filter.samples=8

For each task and scale, k rollouts (default 8) of one policy under one harness (default PTC) run
on the fabric; the pass rate is the fraction with reward 1. A task is kept when

    low < pass rate < high     at every filtered scale     (defaults: 0 < p < 0.8)

so tasks the policy never solves (no learning signal in a group) or nearly always solves (no signal
either, and no headroom) are removed. Rollouts are cached in `<out>/rollouts.jsonl`
(launch/rollout_cache.py): a re-run skips finished ones. Writes `filter_report.md` and
`filter_report.json` (kept and removed tasks with their pass rates per scale and the reason).
A task with rollouts missing (failed after retries) is "incomplete": neither kept nor removed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from pathlib import Path

import msgspec
from rich.console import Console

from envs.sources import resolve_sources
from launch.paths import OutputError, output_folder, run_root
from launch.rollout_cache import RolloutCache, RolloutRecord, rollout_seed
from launch.rollouts import (
    RolloutJob,
    RolloutRunner,
    check_model,
    outcome_settings,
    run_models,
)
from schema.config import TASKS_SOURCE, FilterSettings, TrainConfig
from schema.load import ConfigError, load_sections
from schema.outcomes import is_infra

console = Console()


class TaskDecision(msgspec.Struct, frozen=True):
    task: str
    decision: str  # "kept" | "removed" | "incomplete"
    reason: str
    passes: dict[str, int]  # scale -> rollouts with reward 1
    rollouts: dict[str, int]  # scale -> rollouts finished
    pass_rates: dict[str, float]
    source: str = ""  # the config source (envs:) of the task


def decide(task: str, records: list[RolloutRecord], st: FilterSettings, scales: list[str] | None = None,
           source: str = "") -> TaskDecision:
    """Removed as soon as one finished scale is outside the bounds; kept only when all are inside.
    `scales`: the task's filtered scales (default filter.scales). A rollout the fabric failed (an
    infra cause after every attempt: schema/outcomes.py) says nothing of the task's difficulty: it is
    not counted, and a scale it leaves short stays incomplete, named."""
    scales = scales if scales is not None else st.scales
    infra = [r for r in records if is_infra(r.cause)]
    records = [r for r in records if not is_infra(r.cause)]
    passes = {s: sum(r.passed for r in records if r.scale == s) for s in scales}
    done = {s: sum(1 for r in records if r.scale == s) for s in scales}
    rates = {s: passes[s] / done[s] if done[s] else float("nan") for s in scales}
    missing = [s for s in scales if done[s] < st.samples]
    too_hard = [s for s in scales if s not in missing and rates[s] <= st.low]
    too_easy = [s for s in scales if s not in missing and rates[s] >= st.high]

    def at(scales: list[str]) -> str:
        return ", ".join(f"{s} ({passes[s]}/{done[s]})" for s in scales)

    if too_hard or too_easy:  # decided even when other scales are still missing
        why = [f"too hard (pass rate <= {st.low:g}) at {at(too_hard)}"] if too_hard else []
        why += [f"too easy (pass rate >= {st.high:g}) at {at(too_easy)}"] if too_easy else []
        reason = "; ".join(why)
        return TaskDecision(task, "removed", reason, passes, done, rates, source)
    if missing:
        lost = f"; {len(infra)} rollout(s) failed by the fabric ({', '.join(sorted({r.cause for r in infra}))})" \
            if infra else ""
        return TaskDecision(task, "incomplete", f"rollouts missing at {at(missing)}{lost}", passes, done, rates,
                            source)
    reason = f"{st.low:g} < pass rate < {st.high:g} at {at(scales)}"
    return TaskDecision(task, "kept", reason, passes, done, rates, source)


def out_dir(cfg: TrainConfig, st: FilterSettings) -> Path:
    """The filter's folder (filter.out_dir, else <run.out_dir>/filter-<run.name>), made; a ConfigError when
    it cannot be (a file there was a traceback)."""
    path = Path(st.out_dir) if st.out_dir else run_root(cfg.run.out_dir)[0] / f"filter-{cfg.run.name}"
    try:
        return output_folder(path)
    except OutputError as exc:
        raise ConfigError(f"filter.out_dir: {exc}") from None


def validate(st: FilterSettings) -> None:
    from rollout.harness import HARNESSES

    if st.harness not in HARNESSES:
        raise ConfigError(f"filter: harness must be one of {HARNESSES}")
    if st.samples < 1 or not 0.0 <= st.low < st.high <= 1.0:
        raise ConfigError(f"filter: need samples >= 1 and 0 <= low < high <= 1 (got {st.samples}, {st.low}, "
                          f"{st.high})")
    if st.model:
        check_model(st.model)


def write_report(out: Path, model: str, st: FilterSettings, decisions: list[TaskDecision], stats: dict) -> Path:
    kept = [d.task for d in decisions if d.decision == "kept"]
    removed = [d.task for d in decisions if d.decision == "removed"]
    incomplete = [d.task for d in decisions if d.decision == "incomplete"]
    scales = list(dict.fromkeys(s for d in decisions for s in d.rollouts))
    payload = {"model": model, "harness": st.harness, "samples": st.samples, "scales": scales,
               "bounds": {"low": st.low, "high": st.high, "strict": True}, "kept": kept, "removed": removed,
               "incomplete": incomplete, "rollouts": stats,
               "tasks": [msgspec.to_builtins(d) | {"pass_rates": {s: None if math.isnan(r) else r  # no NaN in JSON
                                                                  for s, r in d.pass_rates.items()}}
                         for d in decisions]}
    (out / "filter_report.json").write_text(json.dumps(payload, indent=2))
    lines = [f"# Difficulty filter `{out.name}`", "",
             f"- policy `{model}`, harness {st.harness.upper()}, k = {st.samples} rollouts per task and scale",
             f"- kept when {st.low:g} < pass rate < {st.high:g} at every scale of the task ({', '.join(scales)})",
             f"- **{len(kept)} kept**, {len(removed)} removed, {len(incomplete)} incomplete, of {len(decisions)}",
             f"- rollouts: {stats['run']} run now, {stats['cached']} cached, {len(stats['failed'])} failed",
             "", "| source | task | " + " | ".join(scales) + " | decision | reason |",
             "|---|---|" + "---:|" * len(scales) + "---|---|"]
    for d in decisions:
        cells = [f"{d.passes[s]}/{d.rollouts[s]}" + (f" ({d.pass_rates[s]:.2f})" if d.rollouts[s] else "")
                 if s in d.rollouts else "" for s in scales]
        lines.append(f"| {d.source} | {d.task} | " + " | ".join(cells) + f" | {d.decision} | {d.reason} |")
    lines += ["", "Kept tasks as config overrides (of the kinds whose settings take `tasks`):", ""]
    for source in dict.fromkeys(d.source for d in decisions):
        ids = [d.task for d in decisions if d.source == source and d.decision == "kept"]
        key = "tasks.tasks" if source == TASKS_SOURCE else f"envs.{source}.args.tasks"
        lines.append(f"    {key}=[{','.join(ids)}]")
    (out / "filter_report.md").write_text("\n".join(lines) + "\n")
    return out / "filter_report.md"


async def filter_tasks(cfg: TrainConfig, st: FilterSettings,
                       runner: RolloutRunner | None = None) -> tuple[Path, list[TaskDecision]]:
    validate(st)
    sources = resolve_sources(cfg.sources(), st.envs or None, say=console.print, where="filter.envs")
    out = out_dir(cfg, st)
    model = st.model or cfg.model.path
    cells = [(src.name, r) for src in sources for r in src.refs if not st.scales or r.scale in st.scales]
    if not cells:
        raise ConfigError(f"filter.scales: {st.scales} are scales of no task of the filtered sources")
    tasks = list(dict.fromkeys((name, r.task_id) for name, r in cells))
    # sample-major: an interrupted run has every (task, scale) at a similar count
    todo = [RolloutJob(model, st.harness, r.task_id, r.scale, k, rollout_seed(st.seed, r.task_id, r.scale, k), r)
            for k in range(st.samples) for _, r in cells]
    cache = RolloutCache(out / "rollouts.jsonl", outcome_settings(cfg))
    console.print(f"filter: {len(tasks)} task(s), {len(cells)} (task, scale) cells × k={st.samples} with {model} "
                  f"({st.harness}); {len(cache)} rollouts cached in {out}")
    t0 = time.time()
    try:
        stats = await run_models(cfg, todo, cache, {model: runner} if runner else None)
    finally:
        cache.close()
    stats["seconds"] = round(time.time() - t0, 1)
    records = [r for r in map(cache.get, (j.key() for j in todo)) if r is not None]
    decisions = [decide(t, [r for r in records if r.task == t], st,
                        [r.scale for name, r in cells if name == src and r.task_id == t], src) for src, t in tasks]
    report = write_report(out, model, st, decisions, stats)
    kept = sum(d.decision == "kept" for d in decisions)
    console.print(f"[bold green]filter done[/]: {kept} of {len(tasks)} kept → {report}")
    return out, decisions


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/local.yaml")
    p.add_argument("--model", default=None,
                   help="policy: 'tiny' or a HF folder (default filter.model or model.path)")
    p.add_argument("--out", default=None, help="output folder (a re-run with the same folder resumes)")
    p.add_argument("overrides", nargs="*", help="key.path=value (filter.samples=8, filter.high=0.8, ...)")


def run(args: argparse.Namespace) -> int:
    import ray

    extra = [f"filter.model={args.model}"] if args.model else []
    extra += [f"filter.out_dir={args.out}"] if args.out else []
    try:
        cfg, st = load_sections(args.config, [*args.overrides, *extra], "filter", FilterSettings)
        validate(st)
    except ConfigError as exc:
        console.print(f"[red]config error:[/] {exc}", soft_wrap=True)
        return 2
    started = not ray.is_initialized()  # a Ray someone else started (a notebook, a test) stays up
    try:  # the sources and scales are checked there, before anything starts
        _, decisions = asyncio.run(filter_tasks(cfg, st))
    except ConfigError as exc:
        console.print(f"[red]config error:[/] {exc}", soft_wrap=True)
        return 2
    finally:
        if started and ray.is_initialized() and cfg.ray.address is None:
            ray.shutdown()
    return 1 if any(d.decision == "incomplete" for d in decisions) else 0
