"""The trajectory buffer: groups of G samples per (task, scale, group), versioned and staleness-bounded.

Rules (one obvious place for them):
- A sample is identified by (group_id, sample_idx). A second copy — an episode re-run after its
  worker died, whose first run did arrive after all — is dropped: nothing is counted twice.
- A group is complete when it holds G distinct samples; complete groups leave in completion order.
- Staleness of a group at learner version v: v − min(policy_version of its samples). A group with
  staleness > `max_staleness` is dropped (counted) instead of trained on; `max_staleness = 0` is
  synchronous on-policy training. How many rollouts may be in flight is decided by the dispatcher
  (launch/dispatch.py) with the same bound, so dropping is the exception.
- Backpressure: `add` refuses new samples beyond `capacity` (the dispatcher waits).
- `state()` / `load_state()` carry the contents and counters through checkpoints.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import ray

from rollout.types import Trajectory


class BufferConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    group_size: int = 4
    max_staleness: int = 1
    capacity: int = 4096


class BufferState(msgspec.Struct):
    pending: dict[str, list[Trajectory]]
    complete: list[str]
    seen: list[tuple[str, int]]
    counters: dict[str, int]


@ray.remote
class TrajectoryBuffer:
    def __init__(self, cfg: BufferConfig):
        self.cfg = cfg
        self.pending: dict[str, list[Trajectory]] = {}
        self.complete: list[str] = []
        self.seen: set[tuple[str, int]] = set()
        self.counters = {"added": 0, "duplicates": 0, "dropped_stale": 0, "groups_out": 0, "refused": 0}
        self._changed = asyncio.Condition()

    def size(self) -> int:
        return sum(len(v) for v in self.pending.values())

    async def add(self, traj: Trajectory) -> bool:
        key = (traj.group_id, traj.sample_idx)
        if key in self.seen:
            self.counters["duplicates"] += 1
            return False
        if self.size() >= self.cfg.capacity:
            self.counters["refused"] += 1
            return False
        self.seen.add(key)
        group = self.pending.setdefault(traj.group_id, [])
        group.append(traj)
        self.counters["added"] += 1
        if len(group) == self.cfg.group_size:
            self.complete.append(traj.group_id)
        async with self._changed:
            self._changed.notify_all()
        return True

    def _pop_fresh(self, n: int, version: int) -> list[list[Trajectory]]:
        out = []
        while self.complete and len(out) < n:
            gid = self.complete.pop(0)
            group = self.pending.pop(gid)
            staleness = version - min(t.policy_version for t in group)
            if staleness > self.cfg.max_staleness:
                self.counters["dropped_stale"] += 1
                continue
            out.append(sorted(group, key=lambda t: t.sample_idx))
        self.counters["groups_out"] += len(out)
        return out

    async def take(self, n: int, version: int, timeout_s: float | None = None) -> list[list[Trajectory]]:
        """Wait for `n` complete, fresh-enough groups (fewer if the timeout passes)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        taken: list[list[Trajectory]] = []
        async with self._changed:
            while True:
                taken += self._pop_fresh(n - len(taken), version)
                if len(taken) >= n:
                    return taken
                remaining = None if deadline is None else deadline - loop.time()
                if remaining is not None and remaining <= 0:
                    return taken
                try:
                    await asyncio.wait_for(self._changed.wait(), remaining)
                except TimeoutError:
                    return taken

    def stats(self) -> dict[str, Any]:
        return {**self.counters, "pending_samples": self.size(), "complete_groups": len(self.complete)}

    def state(self) -> bytes:
        return msgspec.msgpack.encode(BufferState(pending=self.pending, complete=self.complete,
                                                  seen=sorted(self.seen), counters=self.counters))

    def load_state(self, data: bytes) -> dict[str, Any]:
        st = msgspec.msgpack.decode(data, type=BufferState)
        self.pending, self.complete = st.pending, st.complete
        self.seen = {tuple(k) for k in st.seen}
        self.counters = st.counters
        return self.stats()
