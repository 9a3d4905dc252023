"""The training driver: cold-start SFT, then asynchronous GSPO, evaluation before and after.

    progagent train --config configs/local.yaml [key=value ...]
    progagent sft --config configs/local.yaml          # the cold-start stage alone
    ray job submit --working-dir . -- python -m launch.train --config configs/paper-8x8-h200.yaml

The data path (DESIGN.md §2): env workers run episodes against the generator pool and judges →
the buffer groups them → the learner takes complete, fresh-enough groups, takes a GSPO step and
publishes version + 1 → generators load it while rollouts keep going.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import msgspec
import ray
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from launch.config import ConfigError, TrainConfig, load_config
from launch.dispatch import RolloutDispatcher, TaskSampler
from launch.fabric import Fabric, init_ray, resolve_model, task_ids
from launch.metrics import MetricsLog, rollout_metrics

console = Console()


async def teacher_data(fabric: Fabric, cfg: TrainConfig, tasks: list[str]) -> list:
    if cfg.sft.teacher != "oracle":
        from rollout.types import Trajectory

        decoder = msgspec.json.Decoder(Trajectory)
        return [decoder.decode(line) for line in Path(cfg.sft.teacher).read_bytes().splitlines() if line.strip()]
    scales = [s for s, w in cfg.tasks.scales.items() if w > 0]
    jobs = [(t, s) for t in tasks for s in scales]
    workers = fabric.workers
    trajs = await asyncio.gather(*(workers[i % len(workers)].oracle.remote(t, s, cfg.fabric.env_worker.harness)
                                   for i, (t, s) in enumerate(jobs)))
    return [t for t in trajs if t.score >= cfg.sft.min_score]


async def evaluate(fabric: Fabric, cfg: TrainConfig, tasks: list[str], tag: str) -> dict[str, float]:
    from actors.env_worker import EpisodeRequest

    scales = [s for s, w in cfg.tasks.scales.items() if w > 0]
    # one seed per (task, scale, sample): the instruction is the same at every scale, so a seed shared
    # across scales would draw the same first turn everywhere; the same seeds before and after training
    reqs = [EpisodeRequest(task_id=t, scale=s, group_id=f"eval-{tag}-{t}-{s}", sample_idx=k,
                           harness=cfg.fabric.env_worker.harness, seed=10_000 + 1_000 * i + 100 * j + k)
            for i, t in enumerate(tasks) for j, s in enumerate(scales) for k in range(cfg.eval.samples)]
    workers = fabric.workers
    trajs = await asyncio.gather(*(workers[i % len(workers)].run.remote(r) for i, r in enumerate(reqs)))
    return rollout_metrics(list(trajs), prefix=f"eval_{tag}")


def _reward_view(groups: list[list], reward: str) -> list[list]:
    if reward == "binary":
        return groups
    return [[msgspec.structs.replace(t, reward=t.score) for t in g] for g in groups]


async def train(cfg: TrainConfig, resume: str | None = None, sft_only: bool = False) -> Path:
    out = Path(cfg.run.out_dir) / f"{cfg.run.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_bytes(msgspec.json.format(msgspec.json.encode(cfg), indent=2))
    log = MetricsLog(out, out.name, msgspec.to_builtins(cfg), cfg.wandb.mode, cfg.wandb.project, cfg.wandb.entity)
    init_ray(cfg)
    tasks = task_ids(cfg)
    fabric = Fabric(cfg, resolve_model(cfg))
    try:
        return await _run(fabric, cfg, tasks, log, out, resume, sft_only)
    finally:
        await fabric.close()


async def _run(fabric: Fabric, cfg: TrainConfig, tasks: list[str], log: MetricsLog, out: Path, resume: str | None,
               sft_only: bool) -> Path:
    info = await fabric.ready()
    console.print(f"[bold]fabric ready[/]: {info}; run folder {out}")
    t_start = time.time()

    if cfg.sft.enabled and resume is None:
        data = await teacher_data(fabric, cfg, tasks)
        history = await fabric.learner.sft.remote(data)
        for i, h in enumerate(history):
            log.log("sft", i, h)
        console.print(f"SFT on {len(data)} teacher trajectories: loss {history[0]['sft_loss']:.3f} → "
                      f"{history[-1]['sft_loss']:.3f} ({len(history)} steps)")
    if sft_only:
        await fabric.publish()
        return await finish(fabric, cfg, tasks, log, out, t_start, step=0)
    start_step = 0
    dispatcher = RolloutDispatcher(fabric.workers, fabric.buffer, TaskSampler(tasks, cfg.tasks.scales, cfg.run.seed),
                                   cfg.buffer.group_size, cfg.train.groups_per_step, cfg.buffer.max_staleness,
                                   cfg.fabric.env_worker.harness, cfg.run.seed)
    if resume is not None:
        start_step = await restore(fabric, dispatcher, Path(resume))
    version = await fabric.publish()
    dispatcher.set_version(version)
    if cfg.eval.before and resume is None:
        log.log("eval", 0, await evaluate(fabric, cfg, tasks, "before"))

    await fabric.pool.reset_stats.remote()
    dispatcher.start()
    done = start_step
    progress = Progress(SpinnerColumn(), TextColumn("[bold]GSPO[/]"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.description}"), TimeElapsedColumn(), console=console)
    bar = progress.add_task("", total=cfg.train.steps, completed=start_step)
    progress.start()
    for step in range(start_step, cfg.train.steps):
        t0 = time.time()
        groups = await fabric.buffer.take.remote(cfg.train.groups_per_step, version, cfg.train.step_timeout_s)
        if not groups:
            console.print("[red]no complete groups arrived in time; stopping[/]")
            break
        wait_s = time.time() - t0
        metrics = await fabric.learner.train_step.remote(_reward_view(groups, cfg.train.reward))
        version = await fabric.publish()
        dispatcher.set_version(version)
        trajs = [t for g in groups for t in g]
        if cfg.run.save_rollouts:
            save_rollouts(out / "rollouts.jsonl", step + 1, trajs)
        staleness = [version - 1 - t.policy_version for t in trajs]
        pool = await fabric.pool.stats.remote()
        row = metrics | rollout_metrics(trajs) | {
            "staleness_mean": sum(staleness) / len(staleness), "staleness_max": float(max(staleness)),
            "step_s": time.time() - t0, "wait_for_data_s": wait_s,
            "generator_busy": sum(pool["busy_fraction"]) / len(pool["busy_fraction"]),
            "trajectories_per_min": dispatcher.counters["episodes_done"] / max(1e-9, time.time() - t_start) * 60,
            **{f"buffer/{k}": float(v) for k, v in (await fabric.buffer.stats.remote()).items()},
            **{f"dispatch/{k}": float(v) for k, v in dispatcher.counters.items()}}
        log.log("train", step + 1, row)
        done = step + 1
        progress.console.print(f"step {step + 1}/{cfg.train.steps}: reward {row['rollout/reward']:.3f} "
                               f"score {row['rollout/score']:.3f} loss {metrics.get('loss', 0):.4f} "
                               f"staleness {row['staleness_mean']:.2f} ({row['step_s']:.1f} s)")
        progress.update(bar, advance=1, description=f"reward {row['rollout/reward']:.2f} · "
                        f"{row['trajectories_per_min']:.0f} traj/min · generators busy {row['generator_busy']:.0%}")
        if cfg.train.checkpoint_every and (step + 1) % cfg.train.checkpoint_every == 0:
            await checkpoint(fabric, dispatcher, out / "checkpoint", step + 1)
    progress.stop()
    await dispatcher.stop()
    await checkpoint(fabric, dispatcher, out / "checkpoint", done)
    return await finish(fabric, cfg, tasks, log, out, t_start, step=cfg.train.steps)


def save_rollouts(path: Path, step: int, trajs: list) -> None:
    """What the model did, readable: one JSON line per trajectory without its token ids."""
    with path.open("ab") as f:
        for t in trajs:
            row = msgspec.to_builtins(t)
            for key in ("token_ids", "loss_mask", "logprobs"):
                row.pop(key, None)
            f.write(msgspec.json.encode({"step": step, **row}) + b"\n")


async def finish(fabric: Fabric, cfg: TrainConfig, tasks: list[str], log: MetricsLog, out: Path, t_start: float,
                 step: int) -> Path:
    """Evaluation after, the trained model as a Hugging Face folder (for `progagent eval`, vLLM),
    plots and the report."""
    if cfg.eval.after:
        log.log("eval", step, await evaluate(fabric, cfg, tasks, "after"))
    await fabric.learner.export_hf.remote(str(out / "model"))
    log.close()
    from launch.report import write_report

    write_report(out)
    console.print(f"[bold green]done[/] in {time.time() - t_start:.0f} s: {out} (model: {out / 'model'})")
    return out


class _BufferKeys(msgspec.Struct):
    """The part of a buffer state (actors.buffer.BufferState) a checkpoint reads back: the keys of
    every trajectory filed. Decoding only it skips the trajectories themselves."""

    seen: list[tuple[str, int]]


async def checkpoint(fabric: Fabric, dispatcher: RolloutDispatcher, path: Path, step: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    await fabric.learner.save.remote(str(path / "learner"))
    state = dispatcher.state()  # before the buffer's: see RolloutDispatcher.state
    buffered = await fabric.buffer.state.remote()
    seen = {(gid, idx) for gid, idx in msgspec.msgpack.decode(buffered, type=_BufferKeys).seen}
    driver = {"step": step, "dispatcher": RolloutDispatcher.drop_buffered(state, seen)}
    (path / "buffer.msgpack").write_bytes(buffered)
    (path / "driver.json").write_text(json.dumps(driver))


async def restore(fabric: Fabric, dispatcher: RolloutDispatcher, path: Path) -> int:
    await fabric.learner.load.remote(str(path / "learner"))
    await fabric.buffer.load_state.remote((path / "buffer.msgpack").read_bytes())
    driver = json.loads((path / "driver.json").read_text())
    dispatcher.load_state(driver["dispatcher"])
    return driver["step"]


def run(args: argparse.Namespace, sft_only: bool = False) -> int:
    try:
        cfg = load_config(args.config, args.overrides)
    except ConfigError as exc:
        console.print(f"[red]config error:[/] {exc}")
        return 2
    if sft_only and not cfg.sft.enabled:
        console.print("[red]config error:[/] sft.enabled is false; nothing to do")
        return 2
    try:
        asyncio.run(train(cfg, getattr(args, "resume", None), sft_only=sft_only))
    finally:
        if ray.is_initialized() and cfg.ray.address is None:
            ray.shutdown()
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="configs/local.yaml")
    p.add_argument("--resume", default=None, help="a checkpoint folder of an earlier run")
    p.add_argument("overrides", nargs="*", help="key.path=value")
    sys.exit(run(p.parse_args()))
