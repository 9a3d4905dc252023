"""The rollout manager of training: admission, dispatch (through the scheduler), the groups being
filled, and the staleness accounting, in one object with one state.

The rule (AReaL's, in groups). With `v` the number of GSPO updates the learner has taken in this run
(never its SFT steps), `B` = groups_per_step and `s` = max_staleness, a new group is admitted while

    capacity = (s + v + 1) × B − (accepted + running) > 0

and the trajectories it holds plus those on their way leave room for one more group under
`rollout.capacity` (a full manager stops admission until the learner takes some: backpressure).

- running: admitted groups that are neither complete nor failed;
- accepted: complete groups, buffered or already trained on, minus those dropped as stale.
A group dropped as stale and a group that failed leave both counts: each frees its slot.

Infra outcomes (schema/outcomes.py). With `rollout.mask_infra` (the default) an episode whose
outcome was still the fabric's after `max_attempts` (the scheduler re-ran it: it failed for good, or
came back judged with an infra cause) is *masked*: left out of its group, whose advantage is then over its valid samples; a group left with fewer than MIN_VALID
valid samples is dropped ("infra"), counted, and frees its slot. No sample with an infra cause is
ever handed to the learner. Without masking an episode that failed for good fails its group (it can
never complete), and an infra verdict is a sample like any other: trained as its zero.

Invariants (tests/test_rollout_manager.py checks them at load):
- trained + buffered + dropped (stale or infra) + failed + running = admitted, for groups; every
  (group_id, sample_idx) is trained, masked, dropped, failed, buffered or pending, exactly once;
- episodes in flight (queued or running on env workers) ≤ (s + 1) × B × G: accepted ≥ v × B,
  because every update consumed B accepted groups;
- staleness of a trained group (learner version − the oldest policy version of its samples) ≤ s,
  else it is dropped, not trained on.

Order. Groups are consumed in admission order: a step takes the next B complete groups by admission
number, waiting for the oldest ones to complete (a failed group is skipped). Its episodes carry that
number as their scheduler priority, so after an env worker dies its episodes are re-run group by
group, the oldest first: the next step waits for one step's worth of episodes plus those re-runs,
not for a queue of everything in flight. It also makes a run reproducible: the batch of a step
depends on the seeds and the outcomes, not on which episode finished first, and a resumed run
takes the same batches as an uninterrupted one.

`state()` is everything a checkpoint needs (counters, the sampler, every group with the
trajectories it holds and the requests still pending), taken at one instant in the driver's event
loop: nothing is patched together from two states. `load_state` resumes: pending requests are
submitted again with their priorities.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any

import msgspec

from actors.scheduler import EpisodeOutcome, Scheduler
from envs.sources import Source
from schema.config import TASKS_SOURCE, RolloutConfig
from schema.outcomes import is_infra
from schema.records import EnvRef, EpisodeRequest, Trajectory

log = logging.getLogger(__name__)

#: a group needs this many valid samples for a group-relative advantage (one sample has no baseline)
MIN_VALID = 2
#: this many groups in a row dropped for infra failures, none accepted between, and the manager stops
#: admitting (`stalled` says why): the fabric cannot produce a valid sample (a tool server that never
#: starts, a judge that always fails), and admitting more would only burn the cluster until the step's
#: timeout. At least this many, or two steps' worth of groups, whichever is more.
STALL_GROUPS = 8


class SourceSampler:
    """(source, task, scale) draws, reproducibly. The source by smooth weighted round robin (nginx's:
    each draw adds every source's weight to its credit, takes the source with the most credit and
    takes the total from it), so that the groups of each source track the weights within one group
    at every point of a run, not only on average; then one of its tasks uniformly and a scale of that
    task by the source's scale weights, from the seeded generator. With one source nothing is drawn
    for it: the draws are those of the sampler before sources existed (a task, then a scale), so an
    old checkpoint's random state continues the same sequence.

    The sampler seam the rollout manager uses: `draw`, `ref`, and `observe` (the groups it takes),
    `report` (its counters for the step's metrics), `state` / `load` (its own part of a checkpoint):
    no-ops here, where the weights are fixed; the live curriculum (actors/curriculum.py) fills them."""

    def __init__(self, sources: list[Source], seed: int):
        self.sources = [s for s in sources if s.weight > 0]
        if not self.sources:
            raise ValueError("no source has a positive weight: nothing to train on")
        self.by_name = {s.name: s for s in self.sources}
        self.task_ids = {s.name: sorted(s.task_ids) for s in self.sources}
        self.credit = {s.name: 0.0 for s in self.sources}
        self.rng = random.Random(seed)

    def _source(self) -> Source:
        if len(self.sources) == 1:
            return self.sources[0]
        total = 0.0
        for s in self.sources:
            self.credit[s.name] += s.weight
            total += s.weight
        best = max(self.sources, key=lambda s: self.credit[s.name])  # ties: the first in config order
        self.credit[best.name] -= total
        return best

    def _fixed(self, src: Source) -> tuple[str, str]:
        """A task of `src` uniformly, then a scale of it by the source's scale weights."""
        task = self.rng.choice(self.task_ids[src.name])
        scales = src.scales_of(task)
        return task, self.rng.choices(scales, [src.scale_weights[s] for s in scales])[0]

    def draw(self) -> tuple[str, str, str]:
        src = self._source()
        return src.name, *self._fixed(src)

    def observe(self, source: str, task: str, scale: str, passed: list[bool]) -> None:
        """A taken group's attempted samples (True: solved; masked: False): nothing to learn for fixed weights."""

    def report(self) -> dict[str, float]:
        return {}

    def state(self) -> bytes:
        return b""

    def load(self, data: bytes) -> None:
        """Fixed weights keep no state of their own (a curriculum's, from another config, is not used)."""

    def ref(self, source: str, task_id: str, scale: str) -> EnvRef:
        """The reference of a drawn (source, task, scale); a ValueError names what the config no longer has
        (a checkpoint of another config)."""
        src = self.by_name.get(source)
        ref = src.ref(task_id, scale) if src is not None else None
        if ref is None:
            have = ", ".join(self.by_name)
            raise ValueError(f"the checkpoint holds a group of source {source!r}, task {task_id!r} at scale {scale!r}, "
                             f"which this config's sources ({have}) do not have: resume with the config the run "
                             f"started with")
        return ref


class Group(msgspec.Struct):
    """One group of G samples of a (task, scale): what it holds and what is still running."""

    seq: int  # admission number: the group's place in the consumption order
    group_id: str
    task_id: str
    scale: str
    samples: dict[int, Trajectory] = {}
    source: str = TASKS_SOURCE  # the config source it was drawn from (checkpoints before sources: "tasks")
    pending: list[int] = []  # sample indices still queued or running
    failed: str | None = None
    masked: dict[int, str] = {}  # sample index -> the infra cause it failed with for good (left out)

    def attempted_passes(self) -> list[bool]:
        """Whether each attempted sample passed, by index: a masked one did not (a rate over valid
        samples alone would let failures dressed as the fabric's lift it)."""
        return [i in self.samples and self.samples[i].reward >= 1.0 for i in sorted({*self.samples, *self.masked})]


class ManagerState(msgspec.Struct):
    updates: int
    version: int
    admitted: int
    accepted: int
    counters: dict[str, int]
    rng: list[Any]
    groups: list[Group]  # not yet trained on, dropped or failed, in admission order
    credit: dict[str, float] = {}  # the sampler's round-robin credit per source (one source: none)
    curriculum: bytes = b""  # the curriculum sampler's own state (actors/curriculum.py), when it has one


class RolloutManager:
    def __init__(self, scheduler: Scheduler, sampler: SourceSampler, cfg: RolloutConfig, groups_per_step: int, *,
                 harness: str, seed: int = 0,
                 on_retire: Callable[[Group, str], None] | None = None):
        """`on_retire(group, why)`: told of every group that leaves the manager, `why` one of
        "trained", "stale" (dropped), "infra" (dropped: too few valid samples), "failed" (a ledger for
        checks; the manager keeps none)."""
        self.scheduler = scheduler
        self.sampler = sampler
        self.cfg = cfg
        self.groups_per_step = groups_per_step
        self.harness = harness
        self.seed = seed
        self.on_retire = on_retire
        self.updates = 0  # GSPO updates in this run
        self.version = 0  # the learner's policy version (counts SFT steps too: staleness compares versions)
        self.admitted = 0
        self.accepted = 0
        self.groups: dict[str, Group] = {}
        self.counters = {"groups_trained": 0, "groups_dropped_stale": 0, "groups_dropped_infra": 0, "groups_failed": 0,
                         "admission_held_full": 0, "episodes_done": 0, "episodes_failed": 0, "samples_masked": 0,
                         "episodes_resubmitted": 0, "duplicates": 0, "max_in_flight": 0}
        self._changed = asyncio.Event()
        self._started = False
        self.infra_drops_in_a_row = 0
        self.stalled: str | None = None  # why admission stopped (STALL_GROUPS), for the driver's message

    # ---------------------------------------------------------------- accounting
    @property
    def running(self) -> int:
        return sum(1 for g in self.groups.values() if g.failed is None and g.pending)

    @property
    def held(self) -> int:
        """Trajectories held (in complete groups waiting, and in groups being filled)."""
        return sum(len(g.samples) for g in self.groups.values())

    @property
    def in_flight(self) -> int:
        """Episodes queued or running on env workers for this manager's groups."""
        return sum(len(g.pending) for g in self.groups.values() if g.failed is None)

    def capacity(self) -> int:
        s, b = self.cfg.max_staleness, self.groups_per_step
        return (s + self.updates + 1) * b - (self.accepted + self.running)

    # ---------------------------------------------------------------- admission and dispatch
    def start(self) -> None:
        """Start admitting (and re-submit what a loaded state left pending)."""
        self._started = True
        for g in sorted(self.groups.values(), key=lambda g: g.seq):
            for idx in g.pending:
                self.counters["episodes_resubmitted"] += 1
                self._submit(g, idx)
        self._admit()

    def _admit(self) -> None:
        if not self._started or self.stalled is not None:
            return
        while self.capacity() > 0:
            if self.held + self.in_flight + self.cfg.group_size > self.cfg.capacity:
                self.counters["admission_held_full"] += 1  # the manager is full: the learner must take some first
                break
            source, task_id, scale = self.sampler.draw()
            seq = self.admitted
            self.admitted += 1
            g = Group(seq=seq, group_id=f"g{seq:06d}-{task_id}-{scale}", task_id=task_id, scale=scale,
                      pending=list(range(self.cfg.group_size)), source=source)
            self.counters[f"groups_admitted/{source}"] = self.counters.get(f"groups_admitted/{source}", 0) + 1
            self.counters[f"draws_{scale}"] = self.counters.get(f"draws_{scale}", 0) + 1
            self.groups[g.group_id] = g
            for idx in g.pending:
                self._submit(g, idx)
        self.counters["max_in_flight"] = max(self.counters["max_in_flight"], self.in_flight)

    def request(self, g: Group, idx: int) -> EpisodeRequest:
        return EpisodeRequest(env=self.sampler.ref(g.source, g.task_id, g.scale), group_id=g.group_id, sample_idx=idx,
                              harness=self.harness, seed=self.seed * 1_000_003 + g.seq * 97 + idx)

    def _submit(self, g: Group, idx: int) -> None:
        self.scheduler.submit(self.request(g, idx), self._file, priority=(g.seq, idx))

    def _file(self, out: EpisodeOutcome) -> None:
        """An episode's outcome into its group (called by the scheduler, once per request)."""
        g = self.groups.get(out.request.group_id)
        idx = out.request.sample_idx
        if g is None or g.failed is not None or idx not in g.pending:
            self.counters["duplicates"] += 1
            return
        g.pending.remove(idx)
        traj = out.trajectory
        infra = traj is not None and self.cfg.mask_infra and is_infra(traj.cause)
        if traj is None and not self.cfg.mask_infra:
            self.counters["episodes_failed"] += 1
            self._fail(g, f"{out.failure}: {out.detail}")
        elif traj is None or infra:
            self.counters["episodes_failed" if traj is None else "episodes_done"] += 1
            g.masked[idx] = (out.failure if traj is None else traj.cause) or "infra/worker_error"
            self.counters["samples_masked"] += 1
            key = f"masked/{g.masked[idx]}"
            self.counters[key] = self.counters.get(key, 0) + 1
        else:
            self.counters["episodes_done"] += 1
            g.samples[idx] = msgspec.structs.replace(out.trajectory, source=g.source)
        if g.failed is None and not g.pending:
            self._complete(g)
        self._admit()
        self._changed.set()

    @staticmethod
    def valid(g: Group) -> list[Trajectory]:
        """The samples a group trains on, by index (with masking an infra outcome never became one: _file)."""
        return [g.samples[i] for i in sorted(g.samples)]

    def _complete(self, g: Group) -> None:
        """Its last episode is in: accepted, or dropped with too few valid samples (masking)."""
        if self.cfg.mask_infra and len(self.valid(g)) < MIN_VALID:
            log.warning("group %s dropped: %d valid samples (%d masked: %s)", g.group_id, len(self.valid(g)),
                        len(g.masked), ", ".join(sorted(set(g.masked.values()))))
            self.counters["groups_dropped_infra"] += 1
            self._retire(g, "infra")
            del self.groups[g.group_id]
            self.infra_drops_in_a_row += 1
            if self.infra_drops_in_a_row >= max(STALL_GROUPS, 2 * self.groups_per_step) and self.stalled is None:
                causes = sorted({c for c in g.masked.values()})
                self.stalled = (f"the last {self.infra_drops_in_a_row} groups were all dropped for infra failures "
                                f"(the last one's: {', '.join(causes) or 'unknown'}): the fabric cannot produce "
                                f"valid samples; admission stopped")
                log.error("%s", self.stalled)
                self._changed.set()
            return
        self.infra_drops_in_a_row = 0
        self.accepted += 1

    def _fail(self, g: Group, why: str) -> None:
        """The group can never complete: its samples are dropped and its slot freed."""
        log.warning("group %s failed (%s); its %d finished samples are dropped", g.group_id, why, len(g.samples))
        g.failed = why
        self._retire(g, "failed")
        self.scheduler.cancel_group(g.group_id)
        g.pending = []
        g.samples = {}
        self.counters["groups_failed"] += 1
        del self.groups[g.group_id]

    def _retire(self, g: Group, why: str) -> None:
        if self.on_retire is not None:
            self.on_retire(g, why)

    # ---------------------------------------------------------------- the learner's side
    def updated(self, version: int) -> None:
        """The learner took a GSPO update and published `version`: one more step's groups may start."""
        self.updates += 1
        self.version = version
        self._admit()

    def set_version(self, version: int) -> None:
        """The learner's current policy version (after SFT, or a restore), without an update."""
        self.version = version

    def _next_ready(self) -> Group | None | bool:
        """The oldest group if it is complete (True: the oldest is still running; None: nothing admitted)."""
        if not self.groups:
            return None
        g = min(self.groups.values(), key=lambda g: g.seq)
        return g if not g.pending else True

    async def take(self, n: int, timeout_s: float | None = None) -> list[list[Trajectory]]:
        """The next `n` groups in admission order, complete and fresh enough (stale ones are dropped and
        their slots freed); fewer if `timeout_s` passes first."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        taken: list[list[Trajectory]] = []
        while len(taken) < n:
            nxt = self._next_ready()
            if isinstance(nxt, Group):
                del self.groups[nxt.group_id]
                group = self.valid(nxt)
                # a curriculum learns in admission order (actors/curriculum.py), from every attempted episode
                self.sampler.observe(nxt.source, nxt.task_id, nxt.scale, nxt.attempted_passes())
                staleness = self.version - min(t.policy_version for t in group)
                if staleness > self.cfg.max_staleness:
                    self.accepted -= 1
                    self.counters["groups_dropped_stale"] += 1
                    self._retire(nxt, "stale")
                    self._admit()
                    continue
                self.counters["groups_trained"] += 1
                key = f"groups_trained/{nxt.source}"
                self.counters[key] = self.counters.get(key, 0) + 1
                self._retire(nxt, "trained")
                taken.append(group)
                continue
            if not self._started or (self.stalled is not None and self.running == 0):
                break
            self._changed.clear()
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                break
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                break
        self._admit()  # what was taken made room under `capacity`
        return taken

    def stop(self) -> None:
        """No more admissions; the episodes still queued or running are cancelled (a checkpoint taken
        before keeps them as pending, and a resumed run submits them again)."""
        self._started = False
        for g in self.groups.values():
            if g.pending:
                self.scheduler.cancel_group(g.group_id)
        self._changed.set()

    # ---------------------------------------------------------------- checkpoints
    def stats(self) -> dict[str, float]:
        report = self.sampler.report()
        return {**self.counters, "admitted": self.admitted, "accepted": self.accepted, "running": self.running,
                "in_flight": self.in_flight, "held": self.held, "capacity": self.capacity(),
                "updates": self.updates, **{f"scheduler_{k}": v for k, v in self.scheduler.counters.items()},
                **{f"curriculum/{k}": v for k, v in report.items()}}

    def state(self) -> bytes:
        st = ManagerState(updates=self.updates, version=self.version, admitted=self.admitted, accepted=self.accepted,
                          counters=dict(self.counters), rng=list(self.sampler.rng.getstate()),
                          groups=sorted(self.groups.values(), key=lambda g: g.seq), credit=dict(self.sampler.credit),
                          curriculum=self.sampler.state())
        return msgspec.msgpack.encode(st)

    def load_state(self, data: bytes) -> None:
        st = msgspec.msgpack.decode(data, type=ManagerState)
        for g in st.groups:  # a checkpoint of another config is refused here, before anything is submitted
            self.sampler.ref(g.source, g.task_id, g.scale)
        self.updates, self.version, self.admitted, self.accepted = st.updates, st.version, st.admitted, st.accepted
        self.counters.update(st.counters)
        self.sampler.rng.setstate((st.rng[0], tuple(st.rng[1]), st.rng[2]))
        self.sampler.credit.update({k: v for k, v in st.credit.items() if k in self.sampler.credit})
        if st.curriculum:
            self.sampler.load(st.curriculum)
        self.groups = {g.group_id: g for g in st.groups}
