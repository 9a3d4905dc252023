"""The environment kind of imported Harbor tasks (envs/harbor/task.py): `kind: harbor`.

    envs:
      harbor: {kind: harbor, weight: 1, args: {paths: [bench/harbor-example]}}

Each path is a task folder or a dataset folder of them (relative paths from the current directory);
a task runs at the one scale `harbor`, judged by its tests/test.sh on a judge.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from envs.kinds import ListContext, LoadContext, register
from schema.load import ConfigError
from schema.records import EnvRef

if TYPE_CHECKING:
    from envs.harbor.episode import HarborTaskEnv

#: Trajectory.scale of an imported Harbor task (Harbor tasks have one environment size)
HARBOR_SCALE = "harbor"


class HarborRef(EnvRef, frozen=True, tag="harbor"):
    """An imported Harbor task: its folder, as the env workers and judges see it."""

    path: str

    @property
    def task_id(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def scale(self) -> str:
        return HARBOR_SCALE


class HarborArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    paths: list[str]  # task folders, or dataset folders of them


def harbor_tasks(sources: list[str], where: str = "harbor") -> dict[str, str]:
    """{task name: absolute folder} of the Harbor tasks under `sources`; a broken task, or two tasks of
    one name (the name is the cache key), is a ConfigError before anything starts."""
    from envs.harbor.task import HarborTaskError, find_harbor_tasks, load_harbor_task

    found: dict[str, str] = {}
    errors = []
    for src in sources:
        try:
            folders = find_harbor_tasks(Path(src).expanduser().resolve())
        except HarborTaskError as exc:
            errors.append(str(exc))
            continue
        for folder in folders:
            try:
                task = load_harbor_task(folder)
            except HarborTaskError as exc:
                errors.append(str(exc))
                continue
            if task.id in found and found[task.id] != str(task.dir):
                errors.append(f"{task.dir}: a second Harbor task named {task.id!r} (the first: {found[task.id]})")
            found[task.id] = str(task.dir)
    if errors:
        raise ConfigError(f"{where}: " + "; ".join(errors))
    return found


class HarborKind:
    name = "harbor"
    ref_type = HarborRef
    args_type = HarborArgs
    ground_truth_hidden = True  # tests/ and solution/ stay on the host; the verifier runs on a judge
    has_oracle = False

    def refs(self, args: HarborArgs, ctx: ListContext) -> list[HarborRef]:
        found = harbor_tasks(args.paths, f"envs.{ctx.source}.args.paths")
        if not found:
            raise ConfigError(f"envs.{ctx.source}.args.paths: no Harbor task (a folder with task.toml) in {args.paths}")
        return [HarborRef(path) for path in found.values()]

    def load(self, ref: HarborRef, ctx: LoadContext) -> HarborTaskEnv:
        from envs.harbor.episode import HarborTaskEnv
        from envs.harbor.task import load_harbor_task

        return HarborTaskEnv(load_harbor_task(ref.path), ref)


KIND = register(HarborKind())
