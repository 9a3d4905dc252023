"""The live curriculum: (source, task, scale) draws that follow what the policy can already do.

A group whose samples all pass or all fail has no spread in reward, so GSPO learns nothing from it:
its generation is wasted. The offline pass@8 filter (launch/filter.py) removes such tasks once,
before training; this sampler keeps doing it during training, from the groups the rollout manager
completes, and makes environment *scale* the curriculum's axis:

- a running pass rate per (source, task, scale): the mean pass fraction of its last `window` groups
  (every attempted sample: a masked infra outcome counts as not passed, so that failures made to look
  like the fabric's cannot lift a task to its next scale);
- each task has a *frontier*: its first scale not yet mastered, in the order the source lists its
  scales (v0, v1, v2, v3). A task moves to its next scale when its frontier's rate passes the band's
  top (`high`) over at least `min_groups` groups; past its last scale it is mastered;
- a draw (after the source, by the smooth weighted round robin of SourceSampler): with probability
  `explore` the fixed draw (any task, any scale, by the source's scale weights: nothing is ever
  starved); else a task whose frontier's rate is inside the band (low < rate < high, a rate not yet
  measured counts as inside), at its frontier; if none is, a task not yet mastered, at its frontier
  (the policy's hardest unsolved work); if every task is mastered, the fixed draw.

Every random choice comes from the one seeded generator the rollout manager checkpoints, and the
sampler's own state (windows, frontiers, counters) is in the checkpoint too (`state`/`load`): a
resumed run makes the same next draws. The rollout manager reports groups in admission order when
they are taken (not when they finish), so with `max_staleness: 0` a run's curriculum does not depend
on which episode finished first.
"""

from __future__ import annotations

import statistics

import msgspec

from actors.rollout_manager import SourceSampler
from envs.sources import Source
from schema.config import CurriculumConfig


class CurriculumState(msgspec.Struct):
    windows: dict[str, list[float]] = {}  # "source/task/scale" -> pass fraction of its last groups
    frontier: dict[str, int] = {}  # "source/task" -> index of its frontier scale (len(scales): mastered)
    #: cumulative: draws by how they were picked (picked_band, _frontier, _explore, _mastered), promotions
    counters: dict[str, int] = {}


def _key(*parts: str) -> str:
    return "\x1f".join(parts)  # a separator no task id or scale holds


class CurriculumSampler(SourceSampler):
    def __init__(self, sources: list[Source], seed: int, cfg: CurriculumConfig):
        super().__init__(sources, seed)
        self.cfg = cfg
        self.st = CurriculumState()

    # ---------------------------------------------------------------- what is known
    def rate(self, source: str, task: str, scale: str) -> float | None:
        """The running pass rate, or None before any group of it completed."""
        w = self.st.windows.get(_key(source, task, scale))
        return statistics.fmean(w) if w else None

    def frontier(self, source: str, task: str) -> str | None:
        """The task's frontier scale (None: mastered)."""
        scales = self.by_name[source].scales_of(task)
        i = self.st.frontier.get(_key(source, task), 0)
        return scales[i] if i < len(scales) else None

    def _in_band(self, rate: float | None) -> bool:
        return rate is None or self.cfg.low < rate < self.cfg.high

    def _count(self, key: str, n: int = 1) -> None:
        self.st.counters[key] = self.st.counters.get(key, 0) + n

    # ---------------------------------------------------------------- draws and observations
    def draw(self) -> tuple[str, str, str]:
        src = self._source()
        name = src.name
        if self.rng.random() < self.cfg.explore:
            task, scale = self._fixed(src)
            self._count("picked_explore")
        else:
            open_tasks = [t for t in self.task_ids[name] if self.frontier(name, t) is not None]
            band = [t for t in open_tasks if self._in_band(self.rate(name, t, self.frontier(name, t)))]
            pool = band or open_tasks
            if pool:
                task = self.rng.choice(pool)
                scale = self.frontier(name, task)
                self._count("picked_band" if band else "picked_frontier")
            else:  # every task mastered: the fixed draw
                task, scale = self._fixed(src)
                self._count("picked_mastered")
        return name, task, scale

    def observe(self, source: str, task: str, scale: str, passed: list[bool]) -> None:
        """A completed group's attempted samples (True: solved; a masked one is False). Moves the task's frontier on when its
        frontier's rate passes the band's top."""
        if not passed or source not in self.by_name:
            return
        self._count("groups_observed")
        key = _key(source, task, scale)
        window = self.st.windows.setdefault(key, [])
        window.append(sum(passed) / len(passed))
        del window[:-self.cfg.window]
        if scale == self.frontier(source, task) and len(window) >= self.cfg.min_groups \
                and statistics.fmean(window) > self.cfg.high:
            self.st.frontier[_key(source, task)] = self.st.frontier.get(_key(source, task), 0) + 1
            self._count(f"promoted_from_{scale}")

    # ---------------------------------------------------------------- report and checkpoint
    def report(self) -> dict[str, float]:
        """Cumulative counters, and where the tasks' frontiers are now (`frontier_<scale>`: tasks whose
        frontier is that scale; `mastered`: tasks past their last)."""
        out = {k: float(v) for k, v in self.st.counters.items()}
        for src in self.sources:
            for task in self.task_ids[src.name]:
                f = self.frontier(src.name, task)
                k = f"frontier_{f}" if f is not None else "mastered"
                out[k] = out.get(k, 0.0) + 1
        return out

    def state(self) -> bytes:
        return msgspec.msgpack.encode(self.st)

    def load(self, data: bytes) -> None:
        self.st = msgspec.msgpack.decode(data, type=CurriculumState)
