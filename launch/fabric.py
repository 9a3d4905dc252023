"""Starting the actor fabric from a config: Ray, the model, generators, judges, env workers and the
scheduler of their episodes, the learner."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

import ray
from ray.util.placement_group import remove_placement_group

from actors.env_worker import EnvWorker
from actors.generator_pool import GeneratorPool
from actors.judge import Judge
from actors.learner_group import LearnerGroup, LearnerPlacement, learner_placement_group
from actors.scheduler import EnvWorkers, Scheduler
from launch.loopback import loopback_only
from schema.config import TrainConfig

log = logging.getLogger(__name__)


def init_ray(cfg: TrainConfig) -> None:
    if ray.is_initialized():
        return
    env = {"env_vars": {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}}
    if cfg.ray.address:
        ray.init(address=cfg.ray.address, runtime_env=env, log_to_driver=False)
    else:
        # "local": a new in-process cluster even where another one runs (ray.init() would join it), on
        # loopback only (launch/loopback.py)
        loopback_only()
        ray.init(address="local", num_cpus=cfg.ray.num_cpus or max(4, os.cpu_count() or 2), include_dashboard=False,
                 runtime_env=env, log_to_driver=False)


def resolve_model(cfg: TrainConfig) -> str:
    if cfg.model.path == "tiny":
        from rollout.tiny_model import build_tiny

        return str(build_tiny())
    return cfg.model.path


def learner_placement(cfg: TrainConfig) -> LearnerPlacement:
    """The learner group's bundles: `fabric.learner_num_gpus` shared among `learner.ranks` rank actors."""
    f, ranks = cfg.fabric, cfg.learner.ranks
    if ranks == 1:  # placed as any actor: no CPU of its own, a GPU share that may be fractional
        return LearnerPlacement(ranks=1, gpus_per_rank=f.learner_num_gpus, cpus_per_rank=0.0,
                                threads=f.learner_threads, reserved=False)
    return LearnerPlacement(ranks=ranks, gpus_per_rank=f.learner_num_gpus / ranks, cpus_per_rank=f.learner_cpus_per_rank,
                            strategy=f.learner_placement, threads=f.learner_threads)


def resource_plan(cfg: TrainConfig) -> dict[str, dict[str, float]]:
    """What each kind of actor of `cfg` asks of the cluster, in Ray's resources (totals per kind).
    Coordinators (the generator pool, the learner group's front, judges) ask for no CPU."""
    f, ranks = cfg.fabric, cfg.learner.ranks
    learner = {"GPU": f.learner_num_gpus, "CPU": f.learner_cpus_per_rank * ranks if ranks > 1 else 0.0}
    return {"learner": learner,
            "generators": {"GPU": f.generators * f.generator.num_gpus, "CPU": f.generators * f.generator.num_cpus},
            "env_workers": {"GPU": 0.0, "CPU": f.env_workers * f.env_worker.num_cpus}}


def check_fits(plan: dict[str, dict[str, float]], available: dict[str, float]) -> None:
    """Refuse at once a run the cluster cannot hold in total (its actors would wait for ever)."""
    for res in ("GPU", "CPU"):
        need = sum(kind.get(res, 0.0) for kind in plan.values())
        if need > available.get(res, 0.0) + 1e-9:
            parts = ", ".join(f"{k} {v[res]:g}" for k, v in plan.items() if v.get(res))
            raise RuntimeError(f"this run needs {need:g} {res}s ({parts}) and the Ray cluster has "
                               f"{available.get(res, 0.0):g} (`ray status`); shrink the fabric section or add nodes "
                               "(on an autoscaling cluster: ray.check_resources=false)")


def _here() -> Any:
    """Coordinators (the generator pool, the learner group's front) live on the driver's node: they
    hold no GPU and little CPU, and a run cannot outlive its driver's node anyway, while a worker
    node may leave the cluster under them."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    # hard: a soft affinity is not kept for actors that ask for no CPU (measured, Ray 2.x)
    return NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)


class Fabric:
    """Handles to every actor of a run. `scheduler` runs episodes on the env workers (replacing a
    worker that dies); `publish` moves weights from the learner to the generators.

    `model_path` is what the generators serve and the env workers tokenise with (the run's model, or
    the model an evaluation names). `with_learner=False` starts the rollout side only (generators,
    judges, env workers): what evaluation sweeps and difficulty filtering reuse.
    """

    def __init__(self, cfg: TrainConfig, model_path: str, with_learner: bool = True):
        f = cfg.fabric
        self.cfg = cfg
        self.model_path = model_path
        plan = resource_plan(cfg)
        if not with_learner:
            plan.pop("learner")
        if cfg.ray.check_resources:
            check_fits(plan, ray.cluster_resources())
        placement = self.learner_pg = None
        if with_learner and cfg.learner.ranks > 1:  # reserved first: the generators would take the GPUs
            placement = learner_placement(cfg)
            self.learner_pg = learner_placement_group(placement)
        self.pool = GeneratorPool.options(max_concurrency=10_000, num_cpus=0, scheduling_strategy=_here()).remote(
            f.generator, f.generators, model_path)
        # judges and env workers SPREAD: every node's CPUs, and a lost node takes only its share
        self.judges = [Judge.options(num_cpus=0, max_concurrency=64, scheduling_strategy="SPREAD").remote(
            f.judge_timeout_s, f.inject_judge_errors, cfg.run.seed * 1000 + i) for i in range(f.judges)]
        self.worker_cfg = f.env_worker
        self.env = EnvWorkers([self.new_worker() for _ in range(f.env_workers)], self.new_worker,
                              f.env_worker.concurrency)
        self.scheduler = Scheduler(self.env, max_attempts=cfg.rollout.max_attempts, rerun_infra=cfg.rollout.mask_infra)
        self.learner = None
        if with_learner:  # one facade for any number of ranks (actors/learner_group.py)
            self.learner = LearnerGroup.options(num_cpus=0, scheduling_strategy=_here()).remote(
                model_path, cfg.learner, placement or learner_placement(cfg), self.learner_pg)
        self.version = 0

    @property
    def workers(self) -> list[Any]:
        """The env workers alive now."""
        return self.env.live

    def new_worker(self) -> Any:
        return EnvWorker.options(num_cpus=self.worker_cfg.num_cpus, max_concurrency=1000,
                                 scheduling_strategy="SPREAD").remote(
            self.worker_cfg, self.model_path, self.pool, self.judges)

    async def ready(self) -> dict[str, Any]:
        """The fabric once its env workers and generators answer, within `fabric.start_timeout_s`."""
        timeout = self.cfg.fabric.start_timeout_s
        try:
            return await asyncio.wait_for(self._ready(), timeout)
        except TimeoutError:
            raise RuntimeError(f"the fabric did not start within fabric.start_timeout_s={timeout:.0f} s: "
                               "does the cluster have the CPUs/GPUs its env workers and generators ask for? "
                               "(`ray status` shows pending demands)") from None

    async def _ready(self) -> dict[str, Any]:
        for attempt in range(6):  # a worker placed on a node that is leaving (not yet marked dead): another
            live = list(self.env.live)
            results = await asyncio.gather(*(w.ready.remote() for w in live), return_exceptions=True)
            dead = [w for w, r in zip(live, results, strict=True) if isinstance(r, ray.exceptions.RayActorError)]
            for r in results:
                if isinstance(r, Exception) and not isinstance(r, ray.exceptions.RayActorError):
                    raise r
            if not dead:
                break
            log.warning("%d env worker(s) died while starting (their node left?); starting others", len(dead))
            for w in dead:
                self.env.live.remove(w)
                self.env.made.remove(w)
                self.env.live.append(new := self.new_worker())
                self.env.made.append(new)
            await asyncio.sleep(2 ** attempt)
        else:
            raise RuntimeError("env workers kept dying while starting: is a node of the cluster failing?")
        await self.pool.ready.remote()
        return {"limits": sorted(set(results)), "generators": self.cfg.fabric.generators,
                "env_workers": len(self.env.live), "judges": len(self.judges)}

    async def close(self) -> None:
        """Stop the scheduler, close the env workers' sandboxes, then kill this run's actors
        (generators and learner ranks too), so a driver that keeps its Ray cluster (a notebook, a test
        session, a sweep) keeps no idle actors. Dead actors are fine."""
        await self.scheduler.stop()
        # bounded: a worker that never started (or stopped answering) would take its close() for ever;
        # it is killed below either way
        closing = [asyncio.ensure_future(w.close.remote()) for w in self.env.live]
        if closing:
            _, late = await asyncio.wait(closing, timeout=10.0)
            for f in late:
                f.cancel()
        handles = [*self.env.made, *self.judges, self.learner]
        try:
            handles += await asyncio.wait_for(self.pool.handles.remote(), 30.0)
        except (ray.exceptions.RayError, TimeoutError):
            pass
        for handle in (*handles, self.pool):
            if handle is not None:
                with contextlib.suppress(ray.exceptions.RayError):
                    ray.kill(handle)
        if self.learner_pg is not None:  # its bundles would hold the learner's GPUs from a resumed run
            with contextlib.suppress(Exception):
                remove_placement_group(self.learner_pg)

    async def publish(self) -> int:
        """The learner's weights to every generator by `fabric.weights` (rollout/weights/)."""
        self.version = await self.pool.update_weights.remote(self.learner, self.cfg.fabric.weights)
        return self.version
