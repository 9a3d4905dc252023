"""The training driver: cold-start SFT, then asynchronous GSPO, evaluation before and after.

    progagent train --config configs/local.yaml [key=value ...]
    progagent sft --config configs/local.yaml          # the cold-start stage alone
    ray job submit --working-dir . -- python -m launch.train --config configs/paper-8x8-h200.yaml

The data path (README: "The actor fabric"), which `_loop` reads as: the rollout manager (actors/rollout_manager.py)
keeps env workers busy with groups within the staleness bound → a step takes the next
`groups_per_step` complete groups → the learner takes a GSPO step and publishes version + 1 →
generators load it while rollouts keep going → the manager is told, and admits the next step's
groups. A trajectory passes through this process once, from its env worker to the learner.

Which failures count against training (schema/outcomes.py decides each cause; actors/scheduler.py
re-runs; actors/rollout_manager.py masks): an infra outcome (a judge, tool server, sandbox,
environment or generator failing, env workers dying) is re-run up to `rollout.max_attempts`, then left
out of its group (a group with fewer than 2 valid samples is dropped); a policy outcome trains as its
reward, the combined reward terms of `train.reward` (rollout/rewards.py). Each cause is counted per
step (`rollout/infra/*`, `rollout/policy/*`). A step that does not get its groups within
`train.step_timeout_s` ends the run with a checkpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import msgspec
import ray
from rich.console import Console

from actors.curriculum import CurriculumSampler
from actors.rollout_manager import RolloutManager, SourceSampler
from actors.scheduler import EpisodeOutcome
from envs.sources import Source, check_trainable, resolve_sources
from launch.fabric import Fabric, init_ray, resolve_model
from launch.metrics import (
    MaskedShare,
    MetricsLog,
    StepCounts,
    rollout_metrics,
    signal_metrics,
    source_metrics,
)
from launch.paths import OutputError, output_folder, run_root
from launch.rollouts import check_model
from rollout.rewards import check_terms, trained_reward
from schema.config import RewardConfig, TrainConfig
from schema.load import ConfigError, load_config
from schema.outcomes import is_infra
from schema.records import EpisodeRequest, Trajectory

console = Console()


def _outcomes(outcomes: list[EpisodeOutcome], what: str) -> list[Trajectory]:
    """The trajectories to use: not those the fabric failed (no trajectory, or an infra cause after every
    attempt: a verifier that crashed says nothing of the policy), which are counted and named."""
    def failed(o: EpisodeOutcome) -> bool:
        return o.trajectory is None or is_infra(o.trajectory.cause)

    bad = [o for o in outcomes if failed(o)]
    if bad:
        first = bad[0]
        why = f"{first.failure}: {first.detail[:200]}" if first.trajectory is None else \
            f"{first.trajectory.cause}: {(first.trajectory.verifier_error or '')[:200]}"
        console.print(f"[yellow]{what}: {len(bad)} of {len(outcomes)} episodes failed[/] (first: {why})")
    return [o.trajectory for o in outcomes if not failed(o)]


def load_teacher(path: str) -> list[Trajectory]:
    """sft.teacher's JSONL of trajectories (progagent collect), read whole before anything starts: a
    file that is missing, holds a line that is no trajectory, or holds none is a ConfigError naming
    it (each was found only after the fabric had started)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"sft.teacher: {path}: {exc.strerror or exc} (oracle, or a JSONL of teacher trajectories "
                          "written by progagent collect)") from None
    decoder = msgspec.json.Decoder(Trajectory)
    out = []
    for i, line in enumerate(data.splitlines(), 1):
        if line.strip():
            try:
                out.append(decoder.decode(line))
            except msgspec.DecodeError as exc:
                raise ConfigError(f"sft.teacher: {path}, line {i}: not a trajectory ({exc})") from None
    if not out:
        raise ConfigError(f"sft.teacher: {path} holds no trajectory")
    return out


async def teacher_data(fabric: Fabric, cfg: TrainConfig, sources: list[Source],
                       teacher: list[Trajectory] | None = None) -> list[Trajectory]:
    """SFT data: the teacher JSONL's trajectories (`teacher`, read by load_teacher), or the oracle of
    every (task, scale) of the sources whose kind has one, through the harness (failed episodes are
    left out; scores below sft.min_score too)."""
    if cfg.sft.teacher != "oracle":
        return teacher if teacher is not None else load_teacher(cfg.sft.teacher)  # train() reads it first
    harness = cfg.fabric.env_worker.harness
    reqs = [EpisodeRequest(env=r, group_id=f"oracle-{src.name}-{r.task_id}-{r.scale}", sample_idx=0, harness=harness,
                           generator="oracle") for src in sources if src.kind.has_oracle for r in src.refs]
    if not reqs:
        raise ConfigError("sft.teacher: oracle, but no training source's kind has an oracle program (library tasks "
                          "do): give a JSONL of teacher trajectories (progagent collect) or sft.enabled=false")
    trajs = _outcomes(await fabric.scheduler.run_all(reqs), "SFT teacher")
    return [t for t in trajs if t.score >= cfg.sft.min_score]


async def evaluate(fabric: Fabric, cfg: TrainConfig, sources: list[Source], tag: str) -> dict[str, float]:
    """The evaluation episodes (eval_requests), with each source's metrics beside the whole's; failed
    episodes are counted (`eval_<tag>/failed`), not scored."""
    reqs = eval_requests(cfg, sources, tag)
    outcomes = await fabric.scheduler.run_all([r for _, r in reqs])
    by_group = {r.group_id: name for name, r in reqs}
    trajs = [msgspec.structs.replace(t, source=by_group[t.group_id])
             for t in _outcomes(outcomes, f"evaluation {tag}")]
    return rollout_metrics(trajs, prefix=f"eval_{tag}") | source_metrics(trajs, prefix=f"eval_{tag}/source") | \
        {f"eval_{tag}/failed": float(len(outcomes) - len(trajs))}


def eval_requests(cfg: TrainConfig, sources: list[Source], tag: str) -> list[tuple[str, EpisodeRequest]]:
    """eval.samples episodes per (source, task, scale) through the run's harness at eval.temperature.
    One seed per (task, scale, sample): the instruction is the same at every scale, so a seed shared
    across scales would draw the same first turn everywhere; the same seeds before and after training
    (and, for the first source, the seeds of runs before sources existed)."""
    harness = cfg.fabric.env_worker.harness
    out = []
    for n, src in enumerate(sources):
        tasks, scales = src.task_ids, list(src.scale_weights)
        for r in src.refs:
            i, j = tasks.index(r.task_id), scales.index(r.scale)
            out += [(src.name, EpisodeRequest(env=r, group_id=f"eval-{tag}-{src.name}-{r.task_id}-{r.scale}",
                                              sample_idx=k, harness=harness, temperature=cfg.eval.temperature,
                                              seed=1_000_000 * n + 10_000 + 1_000 * i + 100 * j + k))
                    for k in range(cfg.eval.samples)]
    return out


def reward_view(groups: list[list[Trajectory]], reward: RewardConfig) -> list[list[Trajectory]]:
    """The groups as the learner sees them: each trajectory's reward the combined reward terms
    (rollout/rewards.py; each term's value is written into its metrics, for rollouts.jsonl)."""
    return [[msgspec.structs.replace(t, reward=trained_reward(t, reward)) for t in g] for g in groups]


def probed(cfg: TrainConfig, trained: list[Source]) -> list[Source]:
    """The training sources less the (task, scale) pairs a cheat probe passes (envs/probes.py), each
    refusal said; a ConfigError when nothing is left to train on."""
    from envs.format.task_env import EnvironmentCache
    from envs.kinds import load_env
    from envs.probes import probe_sources

    cache = EnvironmentCache()
    try:
        kept, rows = probe_sources(trained, lambda ref: load_env(ref, cache, judge_timeout_s=cfg.fabric.judge_timeout_s),
                                   say=lambda line: console.print(f"[yellow]{line}[/]", soft_wrap=True))
    finally:
        cache.cleanup()
    console.print(f"cheat probes: {sum(bool(r.cheats) for r in rows)} of {len(rows)} (task, scale) pairs refused for "
                  f"training")
    unjudged = [r for r in rows if any(v.error for v in r.verdicts.values())]
    if unjudged:  # a probe whose judge failed refuses nothing: say so, or a broken judge reads as a clean task
        first = next(v.error for v in unjudged[0].verdicts.values() if v.error)
        console.print(f"[yellow]cheat probes: the judge failed on {len(unjudged)} of {len(rows)} pairs, which are not "
                      f"refused (first: {unjudged[0].task_id} at {unjudged[0].scale}: {first})[/]", soft_wrap=True)
    if not kept:
        raise ConfigError("every training task passes a cheat probe (tasks probe shows them): nothing to train on")
    return kept


def sampler_for(cfg: TrainConfig, trained: list[Source]) -> SourceSampler:
    """The fixed weights, or the live curriculum (rollout.curriculum.enabled)."""
    if cfg.rollout.curriculum.enabled:
        return CurriculumSampler(trained, cfg.run.seed, cfg.rollout.curriculum)
    return SourceSampler(trained, cfg.run.seed)


#: called after each GSPO step with (step, fabric, manager): to watch a run from a notebook, or to inject
#: a fault at a chosen step (tests/test_train_driver.py kills an env worker)
OnStep = Callable[[int, Fabric, RolloutManager], Awaitable[None]]


async def train(cfg: TrainConfig, resume: str | None = None, sft_only: bool = False,
                on_step: OnStep | None = None) -> Path:
    sources = resolve_sources(cfg.sources(), say=console.print)  # ConfigError before anything is made
    trained = check_trainable(sources)
    try:
        check_terms(cfg.train.reward)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    check_model(cfg.model.path)
    resumed_at = checkpoint_step(Path(resume)) if resume else 0
    teacher = load_teacher(cfg.sft.teacher) if cfg.sft.enabled and resume is None and cfg.sft.teacher != "oracle" \
        else None
    if cfg.train.probe:  # after the cheap checks; a resumed run probes again: the same tasks are refused
        trained = probed(cfg, trained)
    root, moved = run_root(cfg.run.out_dir)
    if moved:
        console.print(f"[yellow]{moved}[/]", soft_wrap=True)
    try:
        out = output_folder(root / f"{cfg.run.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    except OutputError as exc:  # a file at run.out_dir was a traceback
        raise ConfigError(f"run.out_dir: {exc}") from None
    console.print(f"run folder {out}", soft_wrap=True)  # whole, for scripts that read it
    (out / "config.json").write_bytes(msgspec.json.format(msgspec.json.encode(cfg), indent=2))
    log = MetricsLog(out, out.name, msgspec.to_builtins(cfg), cfg.wandb.mode, cfg.wandb.project, cfg.wandb.entity)
    init_ray(cfg)
    fabric = Fabric(cfg, resolve_model(cfg))
    try:
        console.print(f"[bold]fabric ready[/]: {await fabric.ready()}; run folder {out}")
        manager = RolloutManager(fabric.scheduler, sampler_for(cfg, trained), cfg.rollout,
                                 cfg.train.groups_per_step, harness=cfg.fabric.env_worker.harness, seed=cfg.run.seed)
        if resume:
            await restore(fabric, manager, Path(resume))
        step = resumed_at
        if cfg.sft.enabled and resume is None:
            await cold_start(fabric, cfg, trained, log, teacher)
        manager.set_version(await fabric.publish())
        if not sft_only:
            if cfg.eval.before and resume is None:
                log.log("eval", 0, await evaluate(fabric, cfg, sources, "before"))
            await _loop(fabric, manager, cfg, log, out, step, on_step)
        if cfg.eval.after:
            log.log("eval", cfg.train.steps, await evaluate(fabric, cfg, sources, "after"))
        await fabric.learner.export_hf.remote(str(out / "model"))
    finally:
        log.close()
        await fabric.close()
    from launch.report import write_report

    write_report(out)
    console.print(f"[bold green]done[/]: {out} (model: {out / 'model'})")
    return out


async def cold_start(fabric: Fabric, cfg: TrainConfig, sources: list[Source], log: MetricsLog,
                     teacher: list[Trajectory] | None = None) -> None:
    data = await teacher_data(fabric, cfg, sources, teacher)
    if not data:
        raise RuntimeError("no teacher trajectory reached sft.min_score: nothing to train SFT on")
    history = await fabric.learner.sft.remote(data)
    for i, h in enumerate(history):
        log.log("sft", i, h)
    console.print(f"SFT on {len(data)} teacher trajectories: loss {history[0]['sft_loss']:.3f} → "
                  f"{history[-1]['sft_loss']:.3f} ({len(history)} steps)")


async def _loop(fabric: Fabric, manager: RolloutManager, cfg: TrainConfig, log: MetricsLog, out: Path,
                step: int, on_step: OnStep | None = None) -> None:
    """GSPO steps from `step` to train.steps; a checkpoint every train.checkpoint_every and at the end."""
    await fabric.pool.reset_stats.remote()
    manager.start()
    lost: LearnerLost | None = None
    t_start, episodes_at_start = time.time(), manager.counters["episodes_done"]
    counts = StepCounts()
    counts(manager.stats())  # a resumed run counts from here
    masking = MaskedShare(cfg.rollout.max_masked_share, cfg.rollout.max_masked_steps)
    try:
        while step < cfg.train.steps:
            t0 = time.time()
            groups = await manager.take(cfg.train.groups_per_step, cfg.train.step_timeout_s)
            if len(groups) < cfg.train.groups_per_step:
                why = manager.stalled or f"within train.step_timeout_s ({cfg.train.step_timeout_s:.0f} s)"
                console.print(f"[red]step {step + 1} got {len(groups)} of {cfg.train.groups_per_step} groups: "
                              f"{why}; stopping[/]")
                break
            wait_s = time.time() - t0
            view = reward_view(groups, cfg.train.reward)
            metrics = await fabric.learner.train_step.remote(view)
            manager.updated(await fabric.publish())
            step += 1
            trajs = [t for g in groups for t in g]
            if cfg.run.save_rollouts:
                save_rollouts(out / "rollouts.jsonl", step, trajs)
            staleness = [manager.version - 1 - t.policy_version for t in trajs]
            pool = await fabric.pool.stats.remote()
            done = manager.counters["episodes_done"] - episodes_at_start
            stats = manager.stats()
            row = metrics | rollout_metrics(trajs) | source_metrics(trajs) | counts(stats) | signal_metrics(
                groups, [[t.reward for t in g] for g in view]) | {
                "staleness_mean": sum(staleness) / len(staleness), "staleness_max": float(max(staleness)),
                "step_s": time.time() - t0, "wait_for_data_s": wait_s,
                "generator_busy": sum(pool["busy_fraction"]) / len(pool["busy_fraction"]),
                "trajectories_per_min": done / max(1e-9, time.time() - t_start) * 60,
                **{f"rollout/{k}" if not k.startswith("curriculum/") else k: float(v) for k, v in stats.items()}}
            row["rollout/masked_share"], warning, stop = masking(row, len(trajs))
            log.log("train", step, row)
            if warning:
                console.print(f"[bold red]step {step}: {warning}[/]")
            console.print(f"step {step}/{cfg.train.steps}: reward {row['rollout/reward']:.3f} "
                          f"score {row['rollout/score']:.3f} loss {metrics.get('loss', 0):.4f} "
                          f"staleness {row['staleness_mean']:.2f} in flight {manager.in_flight} "
                          f"({row['step_s']:.1f} s)")
            if cfg.train.checkpoint_every and step % cfg.train.checkpoint_every == 0:
                await checkpoint(fabric, manager, out / "checkpoint", step)
            if on_step is not None:
                await on_step(step, fabric, manager)
            if stop:
                console.print(f"[red]{stop}; stopping[/]")
                break
    except Exception as exc:
        if await _learner_alive(fabric):
            raise
        lost = LearnerLost(out / "checkpoint", step, exc)
        raise lost from exc
    finally:
        try:
            if lost is None:
                await last_checkpoint(fabric, manager, out / "checkpoint", step)
        finally:
            manager.stop()


async def last_checkpoint(fabric: Fabric, manager: RolloutManager, path: Path, step: int) -> None:
    """The checkpoint a run ends with, however it ends (its last step, a stall, an error of its own). A
    learner that is gone by then (its node left while the run stalled) is a LearnerLost naming the last
    checkpoint that was written, like a loss found mid-step: every loss of the learner reads the same."""
    try:
        await checkpoint(fabric, manager, path, step)
    except Exception as exc:
        if await _learner_alive(fabric):
            raise
        raise LearnerLost(path, step, exc) from exc


class LearnerLost(RuntimeError):
    """The learner (a rank, or its node) is gone: the run stops; `--resume` the last checkpoint."""

    def __init__(self, checkpoint: Path, step: int, cause: BaseException):
        self.checkpoint, self.step = checkpoint, step
        saved = checkpoint / "driver.json"
        at = json.loads(saved.read_text())["step"] if saved.exists() else None
        where = (f"the last checkpoint is {checkpoint} (step {at}); resume when the cluster has the learner's "
                 f"resources again, with the same --config and overrides and --resume {checkpoint}"
                 if at is not None else "no checkpoint was written yet (train.checkpoint_every): start again")
        while isinstance(cause, ray.exceptions.RayTaskError) and cause.cause is not None:
            cause = cause.cause  # the error inside Ray's wrappers (whose text is a remote traceback)
        super().__init__(f"the learner is gone after step {step} ({type(cause).__name__}): its node may have left "
                         f"the cluster; the run stopped; {where}")


async def _learner_alive(fabric: Fabric, timeout_s: float = 60.0) -> bool:
    try:
        await asyncio.wait_for(fabric.learner.version.remote(), timeout_s)
        return True
    except Exception:  # noqa: BLE001
        return False


def save_rollouts(path: Path, step: int, trajs: list[Trajectory]) -> None:
    """What the model did, readable: one JSON line per trajectory without its token ids."""
    with path.open("ab") as f:
        for t in trajs:
            row = msgspec.to_builtins(t)
            for key in ("token_ids", "loss_mask", "logprobs"):
                row.pop(key, None)
            f.write(msgspec.json.encode({"step": step, **row}) + b"\n")


def _write(path: Path, data: bytes) -> None:
    """Replace `path` whole or not at all (a run killed mid-write keeps the previous checkpoint)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


async def checkpoint(fabric: Fabric, manager: RolloutManager, path: Path, step: int) -> None:
    """The learner at `step`, and the manager's one state (every sample not yet trained on, with the
    requests still running), taken at one instant."""
    path.mkdir(parents=True, exist_ok=True)
    await fabric.learner.save.remote(str(path / "learner"))
    _write(path / "rollouts.msgpack", manager.state())
    _write(path / "driver.json", json.dumps({"step": step}).encode())


def checkpoint_step(path: Path) -> int:
    """The step of the checkpoint in `path`, checked before anything starts: a folder that is not one
    `checkpoint` wrote whole is a ConfigError naming what it lacks (it was a traceback once the fabric
    had started)."""
    missing = [name for name in ("driver.json", "rollouts.msgpack", "learner") if not (path / name).exists()]
    if missing:
        raise ConfigError(f"--resume {path}: not a checkpoint (no {', '.join(missing)}; a run's checkpoint is its "
                          f"run folder's checkpoint/)")
    try:
        step = json.loads((path / "driver.json").read_text())["step"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"--resume {path}: driver.json is unreadable ({exc})") from None
    if not isinstance(step, int) or step < 0:
        raise ConfigError(f"--resume {path}: driver.json's step is {step!r}, not a step number")
    return step


async def restore(fabric: Fabric, manager: RolloutManager, path: Path) -> None:
    """The manager's and the learner's state from a checkpoint `checkpoint_step` has checked."""
    try:  # the sources first: a checkpoint of another config is refused before the learner loads it
        manager.load_state((path / "rollouts.msgpack").read_bytes())
    except ValueError as exc:
        raise ConfigError(f"--resume {path}: {exc}") from None
    await fabric.learner.load.remote(str(path / "learner"))


def run(args: argparse.Namespace, sft_only: bool = False) -> int:
    try:
        cfg = load_config(args.config, args.overrides)
    except ConfigError as exc:
        console.print(f"[red]config error:[/] {exc}", soft_wrap=True)
        return 2
    if sft_only and not cfg.sft.enabled:
        console.print("[red]config error:[/] sft.enabled is false; nothing to do")
        return 2
    try:
        asyncio.run(train(cfg, getattr(args, "resume", None), sft_only=sft_only))
    except ConfigError as exc:
        console.print(f"[red]config error:[/] {exc}", soft_wrap=True)
        return 2
    except LearnerLost as exc:
        console.print(f"[red]{exc}[/]", soft_wrap=True)
        return 3
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
