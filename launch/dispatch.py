"""Keeps env workers busy with episodes, within the staleness bound, and files results in the buffer.

Staleness rule (AReaL's, in one line): with learner version v, at most
    (max_staleness + v + 1) × groups_per_step
groups may have been submitted in total (consumed, buffered or running). So no rollout can start
more than `max_staleness` versions before the step that consumes it; `max_staleness = 0` is the
synchronous loop (generate a step's groups, train, repeat). A multi-turn episode that spans a
weight update records each turn's version; its group's staleness uses the oldest.

Failures: an episode whose env worker dies is re-run on another worker with the same
(group_id, sample_idx); the buffer drops a second copy, so nothing is lost or counted twice.
Checkpoints hold the requests still running (`pending`); a resumed run submits them again, so
the groups that were half done at the checkpoint complete instead of leaking.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any

import msgspec
import ray

from actors.env_worker import EpisodeRequest

log = logging.getLogger(__name__)


class TaskSampler:
    """(task, scale) pairs drawn with the configured scale mix, reproducibly."""

    def __init__(self, task_ids: list[str], scale_weights: dict[str, float], seed: int):
        if not task_ids:
            raise ValueError("no tasks to train on")
        self.task_ids = sorted(task_ids)
        self.scales = [s for s, w in sorted(scale_weights.items()) if w > 0]
        self.weights = [scale_weights[s] for s in self.scales]
        self.rng = random.Random(seed)

    def draw(self) -> tuple[str, str]:
        return self.rng.choice(self.task_ids), self.rng.choices(self.scales, self.weights)[0]


class RolloutDispatcher:
    def __init__(self, workers: list[Any], buffer: Any, sampler: TaskSampler, group_size: int,
                 groups_per_step: int, max_staleness: int, harness: str, seed: int = 0,
                 on_result: Callable[[Any], None] | None = None, max_attempts: int = 3):
        self.workers = list(workers)
        self.in_flight = [0] * len(self.workers)
        self.dead: set[int] = set()
        self.buffer = buffer
        self.sampler = sampler
        self.group_size = group_size
        self.groups_per_step = groups_per_step
        self.max_staleness = max_staleness
        self.harness = harness
        self.seed = seed
        self.on_result = on_result
        self.max_attempts = max_attempts
        self.version = 0
        self.submitted_groups = 0
        self.counters = {"episodes_done": 0, "episodes_rerun": 0, "episodes_failed": 0, "episodes_resubmitted": 0}
        #: submitted and not yet in the buffer, by (group_id, sample_idx): what a checkpoint must keep
        self.pending: dict[tuple[str, int], EpisodeRequest] = {}
        self._resume: list[EpisodeRequest] = []
        self._tasks: set[asyncio.Task] = set()
        self._refs: set[Any] = set()  # episodes running on workers, cancelled by stop()
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task | None = None

    # -- staleness-bounded admission
    def capacity(self) -> int:
        return (self.max_staleness + self.version + 1) * self.groups_per_step - self.submitted_groups

    def set_version(self, version: int) -> None:
        self.version = version
        self._wake.set()

    def add_worker(self, handle: Any) -> None:
        """Rollout capacity grows while running: the new worker takes the next episodes."""
        self.workers.append(handle)
        self.in_flight.append(0)
        self._wake.set()

    def _pick(self) -> int:
        alive = [i for i in range(len(self.workers)) if i not in self.dead]
        if not alive:
            raise RuntimeError("every env worker is dead")
        return min(alive, key=lambda i: self.in_flight[i])

    # -- running
    def start(self) -> None:
        for req in self._resume:  # a resumed run first finishes the groups the checkpoint left half done
            self.counters["episodes_resubmitted"] += 1
            self._spawn(req)
        self._resume = []
        self._loop_task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            while self.capacity() > 0:
                self._submit_group()
            self._wake.clear()
            await self._wake.wait()

    def _submit_group(self) -> None:
        task_id, scale = self.sampler.draw()
        gid = f"g{self.submitted_groups:06d}-{task_id}-{scale}"
        self.submitted_groups += 1
        for k in range(self.group_size):
            self._spawn(EpisodeRequest(task_id=task_id, scale=scale, group_id=gid, sample_idx=k, harness=self.harness,
                                       seed=self.seed * 1_000_003 + self.submitted_groups * 97 + k))

    def _spawn(self, req: EpisodeRequest) -> None:
        self.pending[(req.group_id, req.sample_idx)] = req
        task = asyncio.create_task(self._run(req))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, req: EpisodeRequest) -> None:
        for attempt in range(self.max_attempts):
            i = self._pick()
            self.in_flight[i] += 1
            ref = self.workers[i].run.remote(req)
            self._refs.add(ref)
            try:
                traj = await ref
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError):
                log.warning("env worker %d died during %s#%d; re-running it elsewhere", i, req.group_id,
                            req.sample_idx)
                self.dead.add(i)
                self.counters["episodes_rerun"] += 1
                continue
            except Exception:  # noqa: BLE001 - a failed episode is retried, then counted
                log.exception("episode %s#%d failed (attempt %d)", req.group_id, req.sample_idx, attempt + 1)
                self.counters["episodes_rerun"] += 1
                continue
            finally:
                self.in_flight[i] -= 1
                self._refs.discard(ref)
            await self.buffer.add.remote(traj)
            self.pending.pop((req.group_id, req.sample_idx), None)
            self.counters["episodes_done"] += 1
            if self.on_result:
                self.on_result(traj)
            return
        self.counters["episodes_failed"] += 1
        self.pending.pop((req.group_id, req.sample_idx), None)
        log.error("episode %s#%d failed %d times; its group will not complete", req.group_id, req.sample_idx,
                  self.max_attempts)

    async def stop(self) -> None:
        """Stop submitting and cancel the episodes still running (their work is not needed)."""
        if self._loop_task:
            self._loop_task.cancel()
        for ref in list(self._refs):
            ray.cancel(ref)
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def state(self) -> dict[str, Any]:
        """Take it BEFORE the buffer's state, then `drop_buffered` the keys that state holds: every
        unconsumed sample is then in exactly one of the two, however episodes and snapshots interleave."""
        return {"submitted_groups": self.submitted_groups, "version": self.version,
                "rng": self.sampler.rng.getstate(), **self.counters,
                "pending": [msgspec.to_builtins(r) for r in self.pending.values()]}

    @staticmethod
    def drop_buffered(state: dict[str, Any], buffered: set[tuple[str, int]]) -> dict[str, Any]:
        """`state` without the pending requests whose (group_id, sample_idx) the buffer already holds
        (its `seen`): filed after `state` was taken, or filed by a task that stop() cancelled while
        `buffer.add` was under way, before it could drop its `pending` entry. A resume then re-runs
        only what is missing, and nothing is both buffered and re-run."""
        return {**state, "pending": [r for r in state["pending"] if (r["group_id"], r["sample_idx"]) not in buffered]}

    def load_state(self, st: dict[str, Any]) -> None:
        self.submitted_groups = st["submitted_groups"]
        self.version = st["version"]
        rng = st["rng"]
        self.sampler.rng.setstate((rng[0], tuple(rng[1]), rng[2]))
        for k in self.counters:
            self.counters[k] = st.get(k, 0)
        self._resume = [msgspec.convert(r, EpisodeRequest) for r in st.get("pending", [])]
