"""Env workers: each runs up to `concurrency` episodes at once over a warm pool of sandboxed kernels.

One episode: open the task's environment and tool server → agent loop against the generator pool →
ship the final state to a judge (retried on another judge if one dies) → the judged `Trajectory`.
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
from envs.library import LIBRARY_DIR, get_task
from envs.runtime.config import RuntimeConfig
from envs.runtime.episode import Runtime
from envs.task_env import EnvironmentCache, Verdict, open_task_episode, snapshot_state
from rollout.agent_loop import ChatRenderer, LoopLimits, run_agent
from rollout.harness import Harness
from rollout.types import SamplingParams, Trajectory

log = logging.getLogger(__name__)


class EpisodeRequest(msgspec.Struct, frozen=True):
    task_id: str
    scale: str
    group_id: str
    sample_idx: int
    harness: str = "ptc"
    seed: int | None = None


class EnvWorkerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    concurrency: int = 4
    harness: str = "ptc"
    limits: LoopLimits = LoopLimits()
    sampling: SamplingParams = SamplingParams()
    runtime: RuntimeConfig = RuntimeConfig(warm_pool=2)
    judge_retries: int = 3
    library_root: str = str(LIBRARY_DIR)
    num_cpus: float = 1.0


@ray.remote
class EnvWorker:
    def __init__(self, cfg: EnvWorkerConfig, tokenizer_path: str, pool: Any, judges: list[Any]):
        from transformers import AutoTokenizer

        self.cfg = cfg
        self.renderer = ChatRenderer(AutoTokenizer.from_pretrained(resolve_tokenizer(tokenizer_path)))
        self.pool = pool
        self.chat_api: bool | None = None  # the pool's, asked once
        self.judges = judges
        self.cache = EnvironmentCache()
        self.runtime: Runtime | None = None
        self.sem = asyncio.Semaphore(cfg.concurrency)
        self.episodes = 0

    async def _runtime(self) -> Runtime:
        if self.runtime is None:
            self.runtime = await Runtime(self.cfg.runtime).start()
        return self.runtime

    async def ready(self) -> str:
        await self._runtime()
        return self.runtime.limits_mode

    async def run(self, req: EpisodeRequest) -> Trajectory:
        runtime = await self._runtime()
        task = get_task(req.task_id, self.cfg.library_root)
        sampling = self.cfg.sampling if req.seed is None else msgspec.structs.replace(self.cfg.sampling, seed=req.seed)
        async with self.sem:
            if self.chat_api is None:
                self.chat_api = await self.pool.chat_api.remote()
            client = PoolClient(self.pool, chat_api=self.chat_api)
            episode = await open_task_episode(runtime, task, req.scale, self.cache)
            try:
                traj = await run_agent(client, self.renderer, episode, Harness(req.harness),
                                       task.instruction, task_id=task.id, scale=req.scale, group_id=req.group_id,
                                       sample_idx=req.sample_idx, limits=self.cfg.limits, sampling=sampling)
                state = await asyncio.to_thread(snapshot_state, episode.final_state().env_root)
            finally:
                await episode.close()
        if traj.termination == "generator_error":
            log.warning("episode %s:%d ended with generator_error: %s", req.group_id, req.sample_idx,
                        client.last_error)
        verdict = await self._judge(task.id, req.scale, state, traj.final_answer)
        traj.reward, traj.score, traj.criteria, traj.verifier_error = (verdict.reward, verdict.score,
                                                                      verdict.criteria, verdict.error)
        self.episodes += 1
        return traj

    async def _judge(self, task_id: str, scale: str, state: bytes, answer: str) -> Verdict:
        """A judge that dies is retried (on another judge when there are several)."""
        order = list(range(len(self.judges)))
        random.shuffle(order)
        last: Exception | None = None
        for attempt in range(self.cfg.judge_retries + 1):
            judge = self.judges[order[attempt % len(order)]]
            try:
                return await judge.judge.remote(task_id, scale, state, answer)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
                last = exc
                await asyncio.sleep(0.2 * (attempt + 1))  # a restarting judge needs a moment
        return Verdict(criteria={}, reward=0.0, score=0.0, error=f"no judge answered: {last}")

    async def oracle(self, task_id: str, scale: str, harness: str) -> Trajectory:
        """A teacher trajectory from the task's oracle (cold-start SFT data), judged in process."""
        from rollout.teacher import oracle_trajectory

        runtime = await self._runtime()
        async with self.sem:
            return await oracle_trajectory(runtime, get_task(task_id, self.cfg.library_root), scale, harness,
                                           self.renderer, self.cache)

    async def ping(self) -> int:
        return self.episodes

    async def close(self) -> None:
        if self.runtime is not None:
            await self.runtime.close()
        self.cache.cleanup()
