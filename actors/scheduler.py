"""The one scheduler of episodes on env workers, and its one retry policy.

Training, SFT teacher collection, evaluation before/after, sweeps, difficulty filtering, `harbor run`
and synthesis all run their episodes through `Scheduler`; none talks to env workers directly. A job
is an `EpisodeRequest` (its outcome's result a `Trajectory`) or a synthesized candidate's
`CheckRequest` (a `CheckResult`: its checks run the candidate's programs in the worker's kernels),
under the same queue, priorities and retry policy.

Work is pulled: each live env worker has `concurrency` slots, and each slot takes the next job from
one priority queue (lowest `priority` first, then submission order). A caller that needs some
episodes done before others says so with the priority: the rollout manager gives every episode its
group's admission number, so the re-runs of a dead worker's episodes go before any newer group's,
and a step's groups complete in order.

The retry policy. Every outcome has a cause (schema/outcomes.py): the policy's, or the fabric's
("infra/..."). A policy outcome is delivered as it is. An infra outcome is an attempt and is run
again, until `max_attempts`; then an episode that has a judged trajectory (its verifier, judge or
environment failed) is delivered with it, its infra cause on it (evaluation records it as a verifier
error; training masks it: actors/rollout_manager.py), and one that has none (it did not start, its
generator failed, its workers died) fails for good with its cause as `failure`:
- the env worker died (its actor is gone): the episode goes back to the queue with its priority and
  runs on another worker; a replacement worker starts in the background (`EnvWorkers.new`). Not an
  attempt of the episode, but an episode that sees `max_attempts` workers die under it fails
  ("infra/worker_died"): a program that takes its worker down every time must not take every worker.
- the episode raised (its environment, sandbox or tool servers did not start, a worker-side bug):
  its cause is the step that failed (env_worker.EpisodeFailed); an attempt.
- the generator failed or the environment broke mid-episode (the terminations `generator_error`,
  `env_error`), the verifier crashed or timed out on a readable state, no judge answered, a
  benchmark's evaluator failed inside: an attempt.
- a verifier error the policy caused (its final state cannot be judged) is a verdict: reward 0.
With `rerun_infra=False` (rollout.mask_infra: false, the behaviour of trainers that do not mask)
only generator errors are re-run; every other outcome with a trajectory is delivered as it is, its
infra zero included. Each caller says which failures count against it (its docstring).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Any

import msgspec
import ray

from envs.runtime.untrusted_text import loggable
from schema.outcomes import EpisodeFailed, is_infra
from schema.records import CheckRequest, CheckResult, EpisodeRequest, Trajectory

log = logging.getLogger(__name__)

_DIED = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)


class EpisodeOutcome(msgspec.Struct):
    request: EpisodeRequest | CheckRequest
    trajectory: Trajectory | CheckResult | None  # None when it failed (a CheckResult for a CheckRequest)
    failure: str | None = None  # the infra cause it failed with for good (schema/outcomes.CAUSES)
    detail: str = ""  # the last error, for the log and the report
    attempts: int = 0  # counted attempts (errors and generator errors)
    worker_deaths: int = 0  # workers that died under it (re-run elsewhere)


def _episode_failed(exc: BaseException) -> EpisodeFailed | None:
    """The EpisodeFailed inside a Ray task error (Ray keeps the worker's exception as `cause`)."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, EpisodeFailed) and hasattr(exc, "outcome_cause"):
            return exc
        exc, seen = getattr(exc, "cause", None) or exc.__cause__, seen + 1
    return None


class _Job:
    __slots__ = ("req", "priority", "done", "attempts", "deaths", "detail", "cancelled", "queued")

    def __init__(self, req: EpisodeRequest | CheckRequest, priority: Any, done: Callable[[EpisodeOutcome], None]):
        self.req, self.priority, self.done = req, priority, done
        self.attempts = self.deaths = 0
        self.detail = ""
        self.cancelled = False
        self.queued = False


class EnvWorkers:
    """The live env worker actors and how to make another. `new()` makes a worker (an actor handle);
    every handle ever made is kept in `made` so that the fabric can kill them all at the end."""

    def __init__(self, handles: list[Any], new: Callable[[], Any] | None, concurrency: int):
        self.live = list(handles)
        self.made = list(handles)
        self.new = new
        self.concurrency = concurrency
        self.replaced = 0


class Scheduler:
    def __init__(self, workers: EnvWorkers, max_attempts: int = 3, replace_timeout_s: float = 600.0,
                 rerun_infra: bool = True):
        self.workers = workers
        self.max_attempts = max_attempts
        self.rerun_infra = rerun_infra
        self.replace_timeout_s = replace_timeout_s
        self._queue: asyncio.PriorityQueue[tuple[Any, int, _Job]] = asyncio.PriorityQueue()
        self._order = itertools.count()
        self.queued = 0  # jobs waiting for a slot (not cancelled)
        self._slots: set[asyncio.Task] = set()
        self._idle: dict[int, set[asyncio.Task]] = {}  # by id(handle): its slots waiting for a job
        self._running: dict[Any, _Job] = {}  # ObjectRef -> job
        self._jobs_by_group: dict[str, list[_Job]] = {}
        self._replacing: set[asyncio.Task] = set()
        self.counters = {"episodes_run": 0, "reruns_worker_died": 0, "retries": 0, "failed": 0,
                         "workers_replaced": 0}
        self._started = False
        self._stopped = False
        self._loop: asyncio.AbstractEventLoop | None = None

    # ---------------------------------------------------------------- the queue
    def submit(self, req: EpisodeRequest | CheckRequest, done: Callable[[EpisodeOutcome], None],
               priority: tuple[int, ...] = ()) -> Any:
        """Run `req`; `done(outcome)` is called once, in this event loop, when it has an outcome (unless
        cancelled). Lower `priority` tuples run first (one type for every caller: they share one
        queue). Returns a token for `cancel`."""
        if not isinstance(priority, tuple):
            raise TypeError(f"priority must be a tuple of numbers, not {type(priority).__name__}")
        self._bind_loop()
        job = _Job(req, priority, done)
        self._jobs_by_group.setdefault(req.group_id, []).append(job)
        self._push(job)
        if not self._started:
            self.start()
        return job

    def _bind_loop(self) -> None:
        """The slots live in the event loop that submits. A caller that runs one `asyncio.run` after
        another (a notebook, a test session, a CLI that resumes) gets new slots in its new loop; what was
        queued moves over, and what was running in the old loop (cancelled with it) is lost to it."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        queued = []
        while not self._queue.empty():
            queued.append(self._queue.get_nowait())
        self._queue = asyncio.PriorityQueue()
        for item in queued:
            self._queue.put_nowait(item)
        self._slots, self._running, self._idle = set(), {}, {}
        started, self._loop = self._started, loop
        if started:
            self.start()

    def cancel(self, tokens: list[Any]) -> None:
        """Cancel these submissions (queued: dropped; running: cancelled on their worker); their
        `done` is not called."""
        for job in tokens:
            self._cancel(job)
        self._cancel_running()

    def _cancel(self, job: _Job) -> bool:
        if job.cancelled:
            return False
        job.cancelled = True
        self.queued -= job.queued
        job.queued = False
        group = self._jobs_by_group.get(job.req.group_id)
        if group is not None and job in group:
            group.remove(job)
            if not group:
                del self._jobs_by_group[job.req.group_id]
        return True

    def _cancel_running(self) -> None:
        for ref, job in list(self._running.items()):
            if job.cancelled:
                ray.cancel(ref)

    def _push(self, job: _Job) -> None:
        job.queued = True
        self.queued += 1
        self._queue.put_nowait((job.priority, next(self._order), job))
        if not self.workers.live and not self._replacing:
            self._fail_queued()  # no worker is left and none is coming

    def cancel_group(self, group_id: str) -> int:
        """Drop the group's jobs still queued, and cancel those running (their outcomes are not
        reported). Returns how many were dropped or cancelled."""
        n = sum(self._cancel(job) for job in list(self._jobs_by_group.get(group_id, [])))
        self._cancel_running()
        return n

    @property
    def running(self) -> int:
        return len(self._running)

    async def run_all(self, reqs: list[EpisodeRequest] | list[CheckRequest]) -> list[EpisodeOutcome]:
        """Every request's outcome, in the requests' order (priority = that order)."""
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in reqs]
        tokens = [self.submit(req, lambda out, f=fut: f.done() or f.set_result(out), priority=(i,))
                  for i, (req, fut) in enumerate(zip(reqs, futures, strict=True))]
        try:
            return list(await asyncio.gather(*futures))
        except asyncio.CancelledError:
            self.cancel(tokens)
            raise

    # ---------------------------------------------------------------- the workers' slots
    def start(self) -> None:
        self._started = True
        self._loop = asyncio.get_running_loop()
        for handle in list(self.workers.live):
            self._add_slots(handle)

    def _add_slots(self, handle: Any) -> None:
        for _ in range(max(1, self.workers.concurrency)):
            task = asyncio.get_running_loop().create_task(self._slot(handle))
            self._slots.add(task)
            task.add_done_callback(self._slots.discard)

    async def _next(self) -> _Job:
        while True:
            *_, job = await self._queue.get()
            if not job.cancelled:
                job.queued = False
                self.queued -= 1
                return job

    def _fail_queued(self) -> None:
        """Every queued job fails ("worker_died"): there is no worker to run it, and none coming."""
        while not self._queue.empty():
            *_, job = self._queue.get_nowait()
            if not job.cancelled:
                job.queued = False
                self.queued -= 1
                job.detail = job.detail or "no env worker is left"
                self._finish(job, None, "infra/worker_died")

    async def _slot(self, handle: Any) -> None:
        me, idle = asyncio.current_task(), self._idle.setdefault(id(handle), set())
        while handle in self.workers.live:
            idle.add(me)  # waiting for a job: cancelled if the worker dies meanwhile (_worker_died)
            try:
                job = await self._next()
            finally:
                idle.discard(me)
            if handle not in self.workers.live:  # it died while this slot waited: the job goes to another
                self._push(job)
                return
            ref = handle.run.remote(msgspec.structs.replace(job.req, attempt=job.attempts + job.deaths))
            self._running[ref] = job
            try:
                traj: Trajectory | CheckResult = await ref
            except _DIED as exc:
                self._running.pop(ref, None)
                self._worker_died(handle, exc)
                job.deaths += 1
                job.detail = f"env worker died: {type(exc).__name__}"
                self.counters["reruns_worker_died"] += 1
                self._count("infra/worker_died")
                if job.deaths >= self.max_attempts:
                    self._finish(job, None, "infra/worker_died")
                elif not job.cancelled:
                    self._push(job)
                return
            except asyncio.CancelledError:
                ray.cancel(ref)
                raise
            except Exception as exc:  # noqa: BLE001 - ray.exceptions.TaskCancelledError, a worker-side error
                self._running.pop(ref, None)
                if job.cancelled:
                    continue
                job.attempts += 1
                failed = _episode_failed(exc)
                cause = failed.outcome_cause if failed is not None else "infra/worker_error"
                job.detail = failed.detail[-500:] if failed is not None else f"{type(exc).__name__}: {str(exc)[-500:]}"
                log.warning("episode %s#%d failed (attempt %d, %s): %s", job.req.group_id, job.req.sample_idx,
                            job.attempts, cause, job.detail)
                self._retry_or_fail(job, cause)
                continue
            self._running.pop(ref, None)
            self.counters["episodes_run"] += 1
            if job.cancelled:
                continue
            if isinstance(traj, Trajectory) and self._rerun(traj):
                job.detail = traj.verifier_error or f"the episode ended with {traj.termination}"
                cause = traj.cause or "infra/generator_error"
                if job.attempts + 1 < self.max_attempts or traj.termination == "generator_error":
                    job.attempts += 1
                    self._retry_or_fail(job, cause)
                    continue
                # the last attempt: delivered with its infra cause (module docstring); `attempts` stays the
                # count of those that were run again, so attempts + 1 episodes ran
                self._count(cause)
            self._finish(job, traj, None)

    def _rerun(self, traj: Trajectory) -> bool:
        """Whether this trajectory's outcome is the fabric's, to be run again (module docstring)."""
        if traj.termination == "generator_error":
            return True
        return self.rerun_infra and is_infra(traj.cause)

    def _count(self, cause: str) -> None:
        self.counters[cause] = self.counters.get(cause, 0) + 1

    def _retry_or_fail(self, job: _Job, failure: str) -> None:
        self._count(failure)
        if job.attempts >= self.max_attempts:
            self._finish(job, None, failure)
        else:
            self.counters["retries"] += 1
            self._push(job)

    def _finish(self, job: _Job, traj: Trajectory | CheckResult | None, failure: str | None) -> None:
        group = self._jobs_by_group.get(job.req.group_id)
        if group is not None:
            group.remove(job)
            if not group:
                del self._jobs_by_group[job.req.group_id]
        if failure is not None:
            self.counters["failed"] += 1
            log.error("episode %s#%d failed for good (%s): %s", job.req.group_id, job.req.sample_idx, failure,
                      loggable(job.detail))
        try:
            job.done(EpisodeOutcome(job.req, traj, failure, job.detail, job.attempts, job.deaths))
        except Exception:  # noqa: BLE001 - a caller's callback must not take a worker's slot down
            log.exception("the outcome of %s#%d could not be delivered", job.req.group_id, job.req.sample_idx)

    def _worker_died(self, handle: Any, exc: BaseException) -> None:
        if handle not in self.workers.live:
            return
        self.workers.live.remove(handle)
        if handle in self.workers.made:  # dead: nothing to kill at the end, and nothing to keep
            self.workers.made.remove(handle)
        for slot in self._idle.pop(id(handle), ()):  # its waiting slots hold no job: they just end
            slot.cancel()
        log.warning("an env worker died (%s); %d left; %s", type(exc).__name__, len(self.workers.live),
                    "starting a replacement" if self.workers.new else "no replacement (none can be made)")
        if self.workers.new is not None and not self._stopped:
            task = asyncio.get_running_loop().create_task(self._replace())
            self._replacing.add(task)
            task.add_done_callback(self._replacing.discard)
        elif not self.workers.live:
            self._fail_queued()

    async def _replace(self) -> None:
        """A new env worker in the background; its slots start when it is ready. Retried with a growing
        pause while the cluster has no room for it (a node is being replaced)."""
        delay = 1.0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.replace_timeout_s
        while not self._stopped and loop.time() < deadline:
            handle = self.workers.new()
            self.workers.made.append(handle)
            try:
                await asyncio.wait_for(handle.ready.remote(), max(1.0, deadline - loop.time()))
            except (Exception, TimeoutError) as exc:  # noqa: BLE001 - retried
                log.warning("a replacement env worker did not start (%s); retrying in %.0f s", exc, delay)
                ray.kill(handle)
                await asyncio.sleep(delay)
                delay = min(60.0, delay * 2)
                continue
            self.workers.live.append(handle)
            self.workers.replaced += 1
            self.counters["workers_replaced"] += 1
            self._add_slots(handle)
            return
        log.error("no replacement env worker started within %.0f s", self.replace_timeout_s)
        if not self.workers.live:
            self._replacing.discard(asyncio.current_task())
            self._fail_queued()

    def add_worker(self, handle: Any) -> None:
        """Rollout capacity grows while running: the new worker's slots take the next jobs."""
        self.workers.live.append(handle)
        self.workers.made.append(handle)
        if self._started:
            self._add_slots(handle)

    async def stop(self) -> None:
        """Stop every slot and replacement, and cancel the episodes running on workers."""
        self._stopped = True
        for ref in list(self._running):
            ray.cancel(ref)
        tasks = [*self._slots, *self._replacing]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._running.clear()
