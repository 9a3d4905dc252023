"""Many judged rollouts of one model on the actor fabric: what difficulty filtering and evaluation
sweeps share with training (same generators, env workers and judges, same config sections).

    cfg, section = load_sections("configs/local.yaml", ["filter.samples=4"], "filter", FilterSettings)
    runner = await RolloutRunner.start(cfg, "tiny")
    failed = await runner.run(jobs, cache)        # jobs already in the cache are the caller's to skip
    await runner.close()

Work is pulled, not pushed: each env worker gets `concurrency` consumers that take the next job
from one queue, so adding env workers (`fabric.env_workers`) or generators (`fabric.generators`)
adds throughput without any scheduling rule. A job whose worker dies goes back to the queue for
another worker; a job that fails `max_attempts` times is returned as failed (never cached). An
episode that ends with `generator_error` counts as a failure too: an endpoint outage or a broken
generator is not the model's score, and a re-run tries those jobs again.
Every finished rollout is written to the cache at once, so stopping at any point loses only the
rollouts in flight.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from actors.generator_pool import API_PREFIX
from launch.config import ConfigError, TrainConfig
from launch.rollout_cache import Key, RolloutCache, RolloutRecord, settings_digest
from launch.yaml_config import decode, read_tree

log = logging.getLogger(__name__)

S = TypeVar("S")


class RolloutJob(msgspec.Struct, frozen=True):
    model: str
    harness: str
    task: str
    scale: str
    sample: int
    seed: int
    harbor_path: str | None = None  # an imported Harbor task's folder (task = its name, scale = "harbor")

    def key(self) -> Key:
        return (self.model, self.harness, self.task, self.scale, self.sample)


def load_sections(path: str | Path | None, overrides: list[str] | None, section: str,
                  cls: type[S]) -> tuple[TrainConfig, S]:
    """The training config (fabric, tasks, model, W&B, Ray) plus one extra top-level section of the
    same YAML file; `section.key=value` overrides reach the extra section."""
    tree = read_tree(path, overrides)
    extra = tree.pop(section, None) or {}
    return decode(tree, TrainConfig, path), decode(extra, cls, path, section)


def outcome_settings(cfg: TrainConfig) -> str:
    """Digest of what changes a rollout's outcome besides (model, harness, task, scale, sample)."""
    f = cfg.fabric
    w = f.env_worker
    return settings_digest({
        "backend": f.generator.backend, "script": f.generator.script, "limits": msgspec.to_builtins(w.limits),
        "sampling": msgspec.to_builtins(msgspec.structs.replace(w.sampling, seed=None)),
        "runtime": [w.runtime.program_timeout_s, w.runtime.max_output_chars, w.runtime.error_heuristic,
                    w.runtime.show_last_expression],
        "library": cfg.tasks.library_root})


def check_model(model: str) -> None:
    """Fail before anything starts on a model the pool cannot serve."""
    folder = Path(model)
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
                  on_record: Callable[[RolloutRecord], None] | None = None,
                  max_attempts: int = 3) -> list[RolloutJob]:
        """Run `jobs` across the env workers, caching each result; returns the jobs that failed."""
        import ray

        from actors.env_worker import EpisodeRequest

        queue: asyncio.Queue[RolloutJob] = asyncio.Queue()
        for job in jobs:
            queue.put_nowait(job)
        attempts: Counter[Key] = Counter()
        failed: list[RolloutJob] = []
        alive = list(self.fabric.workers)
        per_worker = max(1, self.fabric.worker_cfg.concurrency)

        def retry(job: RolloutJob, why: str) -> None:
            log.warning("rollout %s failed%s", job.key(), why)
            attempts[job.key()] += 1
            if attempts[job.key()] < max_attempts:
                queue.put_nowait(job)
            else:
                failed.append(job)

        async def consume(worker: Any) -> None:
            while not queue.empty():
                job = queue.get_nowait()
                req = EpisodeRequest(task_id=job.task, scale=job.scale, harness=job.harness,
                                     group_id=f"{job.model}/{job.harness}/{job.task}/{job.scale}",
                                     sample_idx=job.sample, seed=job.seed, harbor_path=job.harbor_path)
                self.requests += 1
                t0 = time.perf_counter()
                ref = worker.run.remote(req)
                try:
                    traj = await ref
                except asyncio.CancelledError:
                    ray.cancel(ref)
                    raise
                except Exception as exc:  # noqa: BLE001 - retried (elsewhere if the worker died), then failed
                    worker_died = isinstance(exc, ray.exceptions.RayActorError
                                             | ray.exceptions.ActorUnavailableError)
                    retry(job, f"{' (its env worker died)' if worker_died else ''}: {exc}")
                    if worker_died:
                        if worker in alive:
                            alive.remove(worker)
                        return
                    continue
                if traj.termination == "generator_error":
                    retry(job, f": the generator failed: {await self._generator_error()}")
                    continue
                rec = RolloutRecord.from_trajectory(traj, job.model, cache.settings, job.seed,
                                                    time.perf_counter() - t0)
                cache.add(rec)
                self.done += 1
                if on_record is not None:
                    on_record(rec)

        while not queue.empty() and alive:
            await asyncio.gather(*(consume(w) for w in list(alive) for _ in range(per_worker)))
        while not queue.empty():
            failed.append(queue.get_nowait())
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
