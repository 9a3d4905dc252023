"""Env workers: each runs up to `concurrency` episodes at once over a warm pool of sandboxed kernels.

One episode: open the task's environment and tool server → agent loop against the generator pool →
stop the sandbox → snapshot the final state (bounded, within SNAPSHOT_TIMEOUT_S) → ship it to a
judge (retried on another judge if one dies) → the judged `Trajectory`. A final state that cannot be
shipped (too large, links, pipes) is the sample's verdict error, never a lost sample.
An imported Harbor task (`EpisodeRequest.harbor_path`) is the same, over its container tree and MCP
servers (envs/harbor_run.py), its tree judged by its own tests/test.sh on the judge.
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
from envs.task_env import EnvironmentCache, StateRefused, Verdict, open_task_episode, snapshot_state
from rollout.agent_loop import ChatRenderer, LoopLimits, run_agent
from rollout.harness import Harness
from rollout.tokenizer import load_tokenizer
from rollout.types import SamplingParams, Trajectory

log = logging.getLogger(__name__)

#: a snapshot reads at most MAX_STATE_BYTES of a stopped sandbox's files; this bounds the step anyway
SNAPSHOT_TIMEOUT_S = 60.0


async def _snapshot(episode: Any, snapshot: Any) -> bytes | str:
    """The stopped episode's final state shipped as bytes, or why it cannot be (a verdict error)."""
    await episode.stop()
    try:
        return await asyncio.wait_for(asyncio.to_thread(snapshot, episode.final_state()), SNAPSHOT_TIMEOUT_S)
    except StateRefused as exc:
        return str(exc)
    except TimeoutError:
        return f"the final state could not be shipped to a judge within {SNAPSHOT_TIMEOUT_S:.0f} s"


class EpisodeRequest(msgspec.Struct, frozen=True):
    task_id: str
    scale: str
    group_id: str
    sample_idx: int
    harness: str = "ptc"
    seed: int | None = None
    #: an imported Harbor task's folder (envs/harbor_import.py), as the env workers and judges see it;
    #: then task_id is its folder name and scale is envs.harbor_run.HARBOR_SCALE. None: a library task.
    harbor_path: str | None = None


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
        self.cfg = cfg
        self.renderer = ChatRenderer(load_tokenizer(resolve_tokenizer(tokenizer_path)))
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

    def _sampling(self, req: EpisodeRequest) -> SamplingParams:
        return self.cfg.sampling if req.seed is None else msgspec.structs.replace(self.cfg.sampling, seed=req.seed)

    async def _client(self) -> PoolClient:
        if self.chat_api is None:
            self.chat_api = await self.pool.chat_api.remote()
        return PoolClient(self.pool, chat_api=self.chat_api)

    async def run(self, req: EpisodeRequest) -> Trajectory:
        if req.harbor_path is not None:
            return await self._run_harbor(req)
        runtime = await self._runtime()
        task = get_task(req.task_id, self.cfg.library_root)
        async with self.sem:
            client = await self._client()
            episode = await open_task_episode(runtime, task, req.scale, self.cache)
            try:
                traj = await run_agent(client, self.renderer, episode, Harness(req.harness),
                                       task.instruction, task_id=task.id, scale=req.scale, group_id=req.group_id,
                                       sample_idx=req.sample_idx, limits=self.cfg.limits,
                                       sampling=self._sampling(req))
                state = await _snapshot(episode, lambda s: snapshot_state(s.env_root))
            finally:
                await episode.close()
        self._log_generator_error(req, traj, client)
        if isinstance(state, str):
            verdict = Verdict(criteria={}, reward=0.0, score=0.0, error=state)
        else:
            verdict = await self._judge("judge", task.id, req.scale, state, traj.final_answer)
        return self._judged(traj, verdict)

    async def _run_harbor(self, req: EpisodeRequest) -> Trajectory:
        """An imported Harbor task: the task's container tree and MCP servers, the same agent loop, and
        its tests/test.sh on a judge (a tree that cannot be shipped is a recorded verifier error)."""
        from envs.harbor_import import load_harbor_task
        from envs.harbor_run import run_harbor_episode, snapshot_tree

        def snapshot(state: Any, answer: str) -> bytes | str:
            try:
                return snapshot_tree(state)
            except StateRefused as exc:
                return str(exc)
            except Exception as exc:  # noqa: BLE001 - an unreadable tree is the sample's verdict, not a lost sample
                return f"the final container tree could not be shipped to a judge: {type(exc).__name__}: {exc}"

        runtime = await self._runtime()
        task = await asyncio.to_thread(load_harbor_task, req.harbor_path)
        async with self.sem:
            client = await self._client()
            traj, state = await run_harbor_episode(runtime, task, req.harness, self.renderer, client, snapshot,
                                                   limits=self.cfg.limits, sampling=self._sampling(req),
                                                   group_id=req.group_id, sample_idx=req.sample_idx)
        self._log_generator_error(req, traj, client)
        if isinstance(state, str):
            verdict = Verdict(criteria={}, reward=0.0, score=0.0, error=state)
        else:
            verdict = await self._judge("judge_harbor", req.harbor_path, state, traj.final_answer)
        return self._judged(traj, verdict)

    @staticmethod
    def _log_generator_error(req: EpisodeRequest, traj: Trajectory, client: PoolClient) -> None:
        if traj.termination == "generator_error":
            log.warning("episode %s:%d ended with generator_error: %s", req.group_id, req.sample_idx,
                        client.last_error)

    def _judged(self, traj: Trajectory, verdict: Verdict) -> Trajectory:
        traj.reward, traj.score, traj.criteria, traj.verifier_error = (verdict.reward, verdict.score,
                                                                      verdict.criteria, verdict.error)
        self.episodes += 1
        return traj

    async def _judge(self, method: str, *args: Any) -> Verdict:
        """`judge.<method>(*args)` on a judge; a judge that dies is retried (on another judge when there
        are several). `judge` for a library task, `judge_harbor` for an imported Harbor task."""
        order = list(range(len(self.judges)))
        random.shuffle(order)
        last: Exception | None = None
        for attempt in range(self.cfg.judge_retries + 1):
            judge = self.judges[order[attempt % len(order)]]
            try:
                return await getattr(judge, method).remote(*args)
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
