"""Env workers: each runs up to `concurrency` episodes at once over a warm pool of sandboxed kernels.

One episode (rollout/episode.run_episode): open the environment the request names (a library task,
an imported Harbor task: envs/episode_env.py) → the plan of the request's generator, one of the
worker's TurnWriters (the policy: the generator pool; the oracle: a library task's reference
program; rollout/episode.py) → agent loop → stop the sandbox → snapshot the final state (bounded) → ship it to a judge (retried on another judge if one
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
from envs.episode_env import EpisodeEnv
from envs.format.task_env import EnvironmentCache
from envs.kinds import load_env
from envs.runtime.episode import Runtime
from envs.runtime.untrusted_text import loggable
from rollout.agent_loop import ChatRenderer
from rollout.episode import EpisodePlan, InProcess, Shipped, TurnWriter, run_episode
from rollout.teacher import OracleTurns
from rollout.tokenizer import load_tokenizer
from schema.config import EnvWorkerConfig, LoopLimits
from schema.outcomes import EpisodeFailed
from schema.records import (
    GENERATORS,
    CheckRequest,
    CheckResult,
    EnvRef,
    EpisodeRequest,
    SamplingParams,
    Trajectory,
    Verdict,
)

log = logging.getLogger(__name__)


class PolicyTurns:
    """The policy as an env worker's TurnWriter: the generator pool writes the turns, under the
    worker's loop limits and the episode's sampling."""

    def __init__(self, pool: Any, limits: LoopLimits):
        self.pool = pool
        self.limits = limits

    async def plan(self, env: EpisodeEnv, runtime: Runtime, harness: str, sampling: SamplingParams) -> EpisodePlan:
        return EpisodePlan(env=env, generator=PoolClient(self.pool), limits=self.limits, sampling=sampling)


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
        self.writers: dict[str, TurnWriter] = {"policy": PolicyTurns(pool, cfg.limits),
                                               "oracle": OracleTurns(self.renderer.tok)}

    async def _runtime(self) -> Runtime:
        if self.runtime is None:
            self.runtime = await Runtime(self.cfg.runtime).start()
        return self.runtime

    async def ready(self) -> str:
        await self._runtime()
        return self.runtime.limits_mode


    async def run(self, req: EpisodeRequest | CheckRequest) -> Trajectory | CheckResult:
        if isinstance(req, CheckRequest):
            return await self._check(req)
        writer = self.writers.get(req.generator)
        if writer is None:
            raise ValueError(f"unknown episode generator {req.generator!r}; expected one of {', '.join(GENERATORS)}")
        try:
            runtime = await self._runtime()
        except Exception as exc:
            raise EpisodeFailed("infra/sandbox_start", f"the runtime did not start: {type(exc).__name__}: {exc}") from None
        try:
            env = await asyncio.to_thread(load_env, req.env, self.cache)
        except Exception as exc:
            raise EpisodeFailed("infra/env_open", f"{type(exc).__name__}: {str(exc)[-2000:]}") from None
        async with self.sem:
            plan = await writer.plan(env, runtime, req.harness, episode_sampling(self.cfg.sampling, req))
            try:
                traj = await run_episode(plan.env, runtime, plan.generator, self.renderer, req.harness,
                                         group_id=req.group_id, sample_idx=req.sample_idx, limits=plan.limits,
                                         sampling=plan.sampling,
                                         judge=InProcess() if env.judged_in_place else Shipped(self._judge))
            except Exception as exc:  # the step that failed marked its cause (envs/runtime/episode.mark_cause)
                cause = getattr(exc, "outcome_cause", None) or "infra/worker_error"
                raise EpisodeFailed(cause, f"{type(exc).__name__}: {str(exc)[-2000:]}") from None
        if traj.termination == "generator_error" and isinstance(plan.generator, PoolClient):
            log.warning("episode %s:%d ended with generator_error: %s", req.group_id, req.sample_idx,
                        loggable(plan.generator.last_error))
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
        return Verdict.failed(f"no judge answered: {last}", "infra/judge_unreachable")

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
