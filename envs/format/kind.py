"""The environment kind of a task library (envs/format/TASK_FORMAT.md): `kind: library`.

    envs:
      starter: {kind: library, weight: 3, args: {library: envs/starter_tasks, tasks: []}}

Each task of the library at each of the four scales (SCALES); a source's `scales:` picks and weights
them. Judged on a judge from a shipped snapshot; each task has an oracle program (cold-start SFT).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from envs.kinds import ListContext, LoadContext, register
from schema.config import TASKS_SOURCE
from schema.load import ConfigError
from schema.records import SCALES, EnvRef

if TYPE_CHECKING:
    from envs.format.task_env import LibraryTaskEnv
    from envs.sources import Source


class TaskRef(EnvRef, frozen=True, tag="task"):
    """A task of a task library at one environment scale. `library`: the library's folder as the env
    workers and judges see it ("" = the shipped library; a relative path from each checkout's root)."""

    task_id: str
    scale: str
    library: str = ""


class LibraryArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    #: "" = the shipped library (envs/tasks); a relative path is taken from the repository root of each
    #: process (envs/format/library.library_dir), so every node finds it in its own checkout
    library: str = ""
    tasks: list[str] = []  # task ids; [] = the whole library


class LibraryKind:
    name = "library"
    ref_type = TaskRef
    args_type = LibraryArgs
    ground_truth_hidden = True  # the verifier runs on a judge; the sandbox sees the workspace and tools only
    has_oracle = True

    def task_ids(self, args: LibraryArgs, source: str) -> list[str]:
        from envs.format.library import library_dir, load_library

        root = library_dir(args.library)
        if not root.is_dir():
            raise ConfigError(f"envs.{source}.args.library: {root} is not a folder")
        tasks, errors = load_library(root)
        if errors:
            raise ConfigError(f"envs.{source}: broken tasks in {root}: {errors}")
        unknown = [t for t in args.tasks if t not in tasks]
        if unknown:
            raise ConfigError(f"envs.{source}.args.tasks: unknown tasks {unknown} (known: {', '.join(sorted(tasks))})")
        return list(args.tasks) or sorted(tasks)

    def refs(self, args: LibraryArgs, ctx: ListContext) -> list[TaskRef]:
        return [TaskRef(t, s, args.library) for t in self.task_ids(args, ctx.source) for s in SCALES]

    def load(self, ref: TaskRef, ctx: LoadContext) -> LibraryTaskEnv:
        from envs.format.library import get_task, library_dir
        from envs.format.task_env import EnvironmentCache, LibraryTaskEnv

        task = get_task(ref.task_id, library_dir(ref.library))
        return LibraryTaskEnv(task, ref.scale, ctx.cache or EnvironmentCache(), library=ref.library,
                              judge_timeout_s=ctx.judge_timeout_s)


KIND = register(LibraryKind())


def library_source(task_ids: list[str], scale_weights: dict[str, float], name: str = TASKS_SOURCE,
                   library: str = "") -> Source:
    """A library source of these tasks without reading the library (the manager's tests and benches
    draw task ids that need not exist)."""
    from envs.sources import Source

    weights = {s: w for s, w in scale_weights.items() if w > 0}
    return Source(name, KIND, 1.0, weights, [TaskRef(t, s, library) for t in task_ids for s in weights])
