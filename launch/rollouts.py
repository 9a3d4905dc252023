"""Many judged rollouts of one model on the actor fabric: what difficulty filtering and evaluation
sweeps share with training (same generators, env workers, judges and scheduler, same config sections).

    cfg, section = load_sections("configs/local.yaml", ["filter.samples=4"], "filter", FilterSettings)
    runner = await RolloutRunner.start(cfg, "tiny")
    failed = await runner.run(jobs, cache)        # jobs already in the cache are the caller's to skip
    await runner.close()

The episodes run through the fabric's scheduler (actors/scheduler.py: its retry policy, its
replacement of dead env workers), in the jobs' order. What counts against a sweep or a filter: a
job that fails for good (its generator failed `max_attempts` times, its environment would not open,
workers died under it) is returned as failed and never cached, because an endpoint outage or a
broken generator is not the model's score; a re-run tries those jobs again. A verifier error is a
verdict, cached with reward 0. Every finished rollout is written to the cache at once, so stopping at
any point loses only the rollouts in flight.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from actors.scheduler import EpisodeOutcome
from envs.runtime.untrusted_text import loggable
from launch.rollout_cache import Key, RolloutCache, RolloutRecord, settings_digest
from schema.config import API_PREFIX, TrainConfig
from schema.load import ConfigError
from schema.records import EnvRef, EpisodeRequest

log = logging.getLogger(__name__)

S = TypeVar("S")


class RolloutJob(msgspec.Struct, frozen=True):
    model: str
    harness: str
    task: str
    scale: str
    sample: int
    seed: int
    env: EnvRef  # the environment (of any kind): task and scale are its task_id and scale

    def key(self) -> Key:
        return (self.model, self.harness, self.task, self.scale, self.sample)

    def request(self) -> EpisodeRequest:
        return EpisodeRequest(env=self.env, group_id=f"{self.model}/{self.harness}/{self.task}/{self.scale}",
                              sample_idx=self.sample, harness=self.harness, seed=self.seed)


def outcome_settings(cfg: TrainConfig) -> str:
    """Digest of what changes a rollout's outcome besides (model, harness, task, scale, sample)."""
    f = cfg.fabric
    w = f.env_worker
    # the task libraries read (one: the digest of the runs before sources, whose key was its folder)
    libraries = sorted({str(s.args.get("library", "")) for s in cfg.sources().values() if s.kind == "library"})
    return settings_digest({
        "backend": f.generator.backend, "script": f.generator.script, "limits": msgspec.to_builtins(w.limits),
        "sampling": msgspec.to_builtins(msgspec.structs.replace(w.sampling, seed=None)),
        "runtime": [w.runtime.program_timeout_s, w.runtime.max_output_chars, w.runtime.error_heuristic,
                    w.runtime.show_last_expression],
        "library": libraries[0] if len(libraries) == 1 else libraries})


def check_model(model: str) -> None:
    """Fail before anything starts on a model the pool cannot serve: a path to no folder (env workers
    that could not read its tokenizer died at start, and the error blamed the cluster), a folder
    without a tokenizer, an API model without a name. A name that is no path ("org/name") may be a
    Hugging Face hub id: the generators resolve it."""
    folder = Path(model).expanduser()
    if model != "tiny" and not model.startswith(API_PREFIX) and not folder.is_dir() and (
            folder.exists() or model.startswith(("/", "./", "../", "~"))):
        raise ConfigError(f"model {model!r}: no such folder (a Hugging Face model folder, 'tiny' for the built-in "
                          f"model, or {API_PREFIX}NAME)")
    if folder.is_dir() and not any((folder / f).exists() for f in ("tokenizer.json", "tokenizer_config.json")):
        raise ConfigError(f"model {model!r} has no tokenizer (env workers read it from the model folder); "
                          "save the tokenizer next to the exported weights")
    if model.startswith(API_PREFIX) and not model.removeprefix(API_PREFIX):
        raise ConfigError(f"model {model!r}: name the API model, e.g. {API_PREFIX}gpt-4.1-mini")


def serving_config(cfg: TrainConfig, model: str) -> TrainConfig:
    """`cfg` serving `model`: an API model (`openai:NAME`) gets the pool's openai backend, with the
    endpoint and key variable of `fabric.generator` (base_url, api_key_env) and no GPU."""
    cfg = msgspec.structs.replace(cfg, model=msgspec.structs.replace(cfg.model, path=model))
    if not model.startswith(API_PREFIX):
        return cfg
    gen = msgspec.structs.replace(cfg.fabric.generator, backend="openai", num_gpus=0.0)
    return msgspec.structs.replace(cfg, fabric=msgspec.structs.replace(cfg.fabric, generator=gen))


class RolloutRunner:
    """The rollout side of the fabric (generators, judges, env workers) for one model."""

    def __init__(self, fabric: Any, model: str):
        self.fabric = fabric
        self.model = model
        self.requests = 0  # episodes sent to env workers, retries included
        self.done = 0

    @classmethod
    async def start(cls, cfg: TrainConfig, model: str) -> RolloutRunner:
        from launch.fabric import Fabric, init_ray, resolve_model

        check_model(model)
        cfg = serving_config(cfg, model)
        if model.startswith(API_PREFIX):  # built here once, not by each env worker at the same time
            from rollout.tiny_model import build_tiny

            build_tiny(with_model=False)
        init_ray(cfg)
        runner = cls(Fabric(cfg, resolve_model(cfg), with_learner=False), model)
        await runner.fabric.ready()
        return runner

    async def run(self, jobs: list[RolloutJob], cache: RolloutCache,
                  on_record: Callable[[RolloutRecord], None] | None = None) -> list[RolloutJob]:
        """Run `jobs` through the scheduler, caching each result; returns the jobs that failed."""
        loop = asyncio.get_running_loop()
        failed: list[RolloutJob] = []

        def done(job: RolloutJob, out: EpisodeOutcome, fut: asyncio.Future) -> None:
            self.requests += out.attempts + out.worker_deaths + (out.trajectory is not None)
            if out.trajectory is None:
                log.warning("rollout %s failed (%s): %s", job.key(), out.failure, loggable(out.detail))
                failed.append(job)
            else:
                rec = RolloutRecord.from_trajectory(out.trajectory, job.model, cache.settings, job.seed,
                                                    out.trajectory.metrics.get("episode_s", 0.0))
                cache.add(rec)
                self.done += 1
                if on_record is not None:
                    on_record(rec)
            if not fut.done():
                fut.set_result(None)

        futures, tokens = [], []
        scheduler = self.fabric.scheduler
        for i, job in enumerate(jobs):
            fut = loop.create_future()
            futures.append(fut)
            tokens.append(scheduler.submit(job.request(), lambda out, j=job, f=fut: done(j, out, f), priority=(i,)))
        try:
            await asyncio.gather(*futures)
        except asyncio.CancelledError:  # interrupted: what is still queued or running is not wanted
            scheduler.cancel(tokens)
            raise
        if failed and any(j.env is None for j in failed):
            log.warning("the generator pool's last error: %s", loggable(await self._generator_error()))
        return failed

    async def _generator_error(self) -> str:
        """The pool's last error: the episode records only that generation failed."""
        try:
            return (await self.fabric.pool.stats.remote())["last_error"]
        except Exception as exc:  # noqa: BLE001 - a warning's detail, never a reason to stop the run
            return f"(the generator pool does not answer: {exc})"

    async def episodes_on_workers(self) -> int:
        """Episodes the env workers report having finished (their own count, for checks)."""
        counts = await asyncio.gather(*(w.ping.remote() for w in self.fabric.workers), return_exceptions=True)
        return sum(c for c in counts if isinstance(c, int))

    async def close(self) -> None:
        await self.fabric.close()


async def run_models(cfg: TrainConfig, jobs: list[RolloutJob], cache: RolloutCache,
                     runners: dict[str, RolloutRunner] | None = None,
                     on_record: Callable[[RolloutRecord], None] | None = None) -> dict[str, Any]:
    """Run the jobs not in the cache, one model at a time (a fabric per model, started only when
    that model has work left). `runners` are started fabrics to use instead (tests, notebooks)."""
    todo = [j for j in jobs if j.key() not in cache]
    stats = {"jobs": len(jobs), "cached": len(jobs) - len(todo), "run": 0, "failed": []}
    for model in dict.fromkeys(j.model for j in todo):
        mine = [j for j in todo if j.model == model]
        given = (runners or {}).get(model)
        runner = given or await RolloutRunner.start(cfg, model)
        try:
            before = runner.requests
            failed = await runner.run(mine, cache, on_record)
            stats["run"] += runner.requests - before
            stats["failed"] += [list(j.key()) for j in failed]
        finally:
            if given is None:
                await runner.close()
    return stats
