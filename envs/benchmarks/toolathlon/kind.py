"""The environment kind of Toolathlon's local-only tasks (envs/benchmarks/toolathlon/): `kind: toolathlon`.

    envs:
      toolathlon: {kind: toolathlon, args: {checkout: ~/Toolathlon, tasks: []}}

At the one scale `toolathlon`, judged by Toolathlon's evaluator on a judge. The checkout is the user's
own clone, after Toolathlon's own setup step that makes configs/global_configs.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from envs.kinds import ListContext, LoadContext, register
from schema.load import ConfigError
from schema.records import EnvRef

if TYPE_CHECKING:
    from envs.benchmarks.toolathlon.episode import ToolathlonTaskEnv

#: Trajectory.scale of a Toolathlon task (Toolathlon has one environment size)
TOOLATHLON_SCALE = "toolathlon"


class ToolathlonRef(EnvRef, frozen=True, tag="toolathlon"):
    """A local-only Toolathlon task: the user's checkout and the task's folder name under
    tasks/finalpool/; `python` and `node_dir` as in LocaRef (Toolathlon's environment)."""

    checkout: str
    task: str
    python: str
    node_dir: str = ""

    @property
    def task_id(self) -> str:
        return self.task

    @property
    def scale(self) -> str:
        return TOOLATHLON_SCALE


class ToolathlonArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    checkout: str
    tasks: list[str] = []  # task folder names under tasks/finalpool/; [] = every local-only task
    python: str = ""  # Toolathlon's interpreter; "" = the environment ProgAgent makes (as loca's)
    node_dir: str = ""


class ToolathlonKind:
    name = "toolathlon"
    ref_type = ToolathlonRef
    args_type = ToolathlonArgs
    ground_truth_hidden = True  # groundtruth_workspace/ and the evaluator stay outside the benchmark sandbox
    has_oracle = False

    def refs(self, args: ToolathlonArgs, ctx: ListContext) -> list[ToolathlonRef]:
        from envs.benchmarks import toolathlon
        from envs.benchmarks.environment import benchmark_python
        from envs.benchmarks.toolathlon.checkout import ToolathlonCheckout, ToolathlonError

        where = f"envs.{ctx.source}.args"
        try:
            co = ToolathlonCheckout(args.checkout)
            tasks = [t.name for t in co.tasks(args.tasks or None, say=ctx.say)]
        except ToolathlonError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if not tasks:
            raise ConfigError(f"{where}: no local-only task in {args.checkout}")
        python, node_dir = benchmark_python(toolathlon.ENVIRONMENT, args.python, args.node_dir, where, ctx.say)
        return [ToolathlonRef(str(co.path), t, python, node_dir) for t in tasks]

    def load(self, ref: ToolathlonRef, ctx: LoadContext) -> ToolathlonTaskEnv:
        from envs.benchmarks.toolathlon.episode import ToolathlonTaskEnv

        return ToolathlonTaskEnv(ref, judge_timeout_s=ctx.judge_timeout_s)


KIND = register(ToolathlonKind())
