"""Env workers: each runs up to `concurrency` episodes at once over a warm pool of sandboxed kernels.

One episode (rollout/episode.run_episode): open the environment the request names (a library task, an
imported Harbor task: envs/episode_env.py) → agent loop against the generator pool → stop the
sandbox → snapshot the final state (bounded) → ship it to a judge (retried on another judge if one
dies) → the judged `Trajectory`. A final state that cannot be shipped (too large, links, pipes) is
the sample's verdict error, never a lost sample. An environment that cannot open raises: the
scheduler (actors/scheduler.py) decides what a failed episode means.

Rollout capacity (env workers, CPUs) scales apart from generation capacity (generators, GPUs).
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any

import msgspec
import ray

from actors.generator_pool import PoolClient, resolve_tokenizer
from envs.format.task_env import EnvironmentCache
from envs.kinds import kind_of, load_env
from envs.runtime.episode import Runtime
from rollout.agent_loop import ChatRenderer
from rollout.episode import InProcess, Shipped, run_episode
from rollout.tokenizer import load_tokenizer
from schema.config import EnvWorkerConfig
from schema.records import (
    DRIVERS,
    CheckRequest,
    CheckResult,
    EnvRef,
    EpisodeRequest,
    SamplingParams,
    Trajectory,
    Verdict,
)

log = logging.getLogger(__name__)


def episode_sampling(base: SamplingParams, req: EpisodeRequest) -> SamplingParams:
    """The sampling of one episode: the worker's, with the request's seed and temperature when it has them."""
    if req.seed is not None:
        base = msgspec.structs.replace(base, seed=req.seed)
    if req.temperature is not None:
        base = msgspec.structs.replace(base, temperature=req.temperature)
    return base


@ray.remote
class EnvWorker:
    def __init__(self, cfg: EnvWorkerConfig, tokenizer_path: str, pool: Any, judges: list[Any]):
        self.cfg = cfg
        self.renderer = ChatRenderer(load_tokenizer(resolve_tokenizer(tokenizer_path)))
        self.pool = pool
        self.judges = judges
        self.cache = EnvironmentCache()
        self.runtime: Runtime | None = None
        self.sem = asyncio.Semaphore(cfg.concurrency)
        self.runners: dict[tuple[float, str], Any] = {}  # code runners of synthesized candidates (_check)
        self.episodes = 0

    async def _runtime(self) -> Runtime:
        if self.runtime is None:
            self.runtime = await Runtime(self.cfg.runtime).start()
        return self.runtime

    async def ready(self) -> str:
        await self._runtime()
        return self.runtime.limits_mode


    async def _client(self) -> PoolClient:
        return PoolClient(self.pool)

    async def run(self, req: EpisodeRequest | CheckRequest) -> Trajectory | CheckResult:
        if isinstance(req, CheckRequest):
            return await self._check(req)
        if req.driver == "oracle":
            return await self._oracle(req)
        if req.driver != "policy":
            raise ValueError(f"unknown episode driver {req.driver!r}; expected one of {', '.join(DRIVERS)}")
        runtime = await self._runtime()
        env = await asyncio.to_thread(load_env, req.env, self.cache)
        async with self.sem:
            client = await self._client()
            traj = await run_episode(env, runtime, client, self.renderer, req.harness, group_id=req.group_id,
                                     sample_idx=req.sample_idx, limits=self.cfg.limits, sampling=episode_sampling(self.cfg.sampling, req),
                                     judge=InProcess() if env.judged_in_place else Shipped(self._judge))
        if traj.termination == "generator_error":
            log.warning("episode %s:%d ended with generator_error: %s", req.group_id, req.sample_idx,
                        client.last_error)
        self.episodes += 1
        return traj

    async def _judge(self, ref: EnvRef, state: bytes, answer: str) -> Verdict:
        """A judge's verdict; a judge that dies is retried (on another judge when there are several)."""
        order = list(range(len(self.judges)))
        random.shuffle(order)
        last: Exception | None = None
        for attempt in range(self.cfg.judge_retries + 1):
            judge = self.judges[order[attempt % len(order)]]
            try:
                return await judge.judge.remote(ref, state, answer)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
                last = exc
                # a restarting judge needs a moment, seconds on a loaded node (0.5, 1, 2 s between the default four
                # attempts); giving up sooner records a verifier error, a zero that is the fabric's, not the policy's
                if attempt < self.cfg.judge_retries:
                    await asyncio.sleep(min(8.0, 0.5 * 2**attempt))
        return Verdict.failed(f"no judge answered: {last}")

    async def _oracle(self, req: EpisodeRequest) -> Trajectory:
        """A teacher trajectory from a library task's oracle (cold-start SFT data), judged in process."""
        from rollout.teacher import oracle_trajectory

        kind = kind_of(req.env)
        if not kind.has_oracle:
            raise ValueError(f"environments of kind {kind.name!r} have no oracle program (library tasks do)")
        runtime = await self._runtime()
        env = await asyncio.to_thread(load_env, req.env, self.cache)
        async with self.sem:
            traj = await oracle_trajectory(runtime, env, req.harness, self.renderer, group_id=req.group_id,
                                           sample_idx=req.sample_idx)
        self.episodes += 1
        return traj

    async def _check(self, req: CheckRequest) -> CheckResult:
        """A synthesized candidate's check (synth/checks.py) on this worker's runtime and cache; its code
        runs in the code sandbox the request names, its programs in this worker's kernels."""
        from envs.format.code_runner import CodeRunner
        from synth.checks import run_check

        runtime = await self._runtime()
        key = (req.code_timeout_s, req.code_sandbox)
        if key not in self.runners:
            self.runners[key] = await asyncio.to_thread(CodeRunner, req.code_timeout_s, req.code_sandbox,
                                                        runtime.limits)
        async with self.sem:
            outputs = await run_check(req, runtime, self.cache, self.runners[key])
        self.episodes += 1
        return CheckResult(req.stage, outputs)

    async def ping(self) -> int:
        return self.episodes

    async def close(self) -> None:
        if self.runtime is not None:
            await self.runtime.close()
        self.cache.cleanup()
