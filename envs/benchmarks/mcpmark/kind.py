"""The environment kind of MCPMark's filesystem tasks (envs/benchmarks/mcpmark/): `kind: mcpmark`.

    envs:
      mcpmark: {kind: mcpmark, args: {checkout: ~/mcpmark, data_dir: ~/mcpmark/test_environments}}

At the one scale `mcpmark`, from a local data cache of the unzipped categories (ProgAgent never
downloads MCPMark's data), judged by each task's verify.py on a judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from envs.kinds import ListContext, LoadContext, register
from schema.load import ConfigError
from schema.records import EnvRef

if TYPE_CHECKING:
    from envs.benchmarks.mcpmark.episode import MCPMarkTaskEnv

#: Trajectory.scale of an MCPMark task
MCPMARK_SCALE = "mcpmark"


class MCPMarkRef(EnvRef, frozen=True, tag="mcpmark"):
    """An MCPMark filesystem task: the user's checkout, their local data cache (the unzipped
    categories), MCPMark's task name ([easy:]<category>__<task>); `python`, `node_dir` as in LocaRef."""

    checkout: str
    data_dir: str
    task: str
    python: str
    node_dir: str = ""

    @property
    def task_id(self) -> str:
        return self.task

    @property
    def scale(self) -> str:
        return MCPMARK_SCALE


class MCPMarkArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    checkout: str
    data_dir: str  # the unzipped categories (MCPMark's $FILESYSTEM_TEST_ROOT, e.g. <checkout>/test_environments)
    tasks: list[str] = []  # MCPMark task names ([easy:]<category>__<task>); [] = every cached task of `suite`
    suite: str = "standard"
    python: str = ""  # MCPMark's interpreter; "" = the environment ProgAgent makes (as loca's)
    node_dir: str = ""


class MCPMarkKind:
    name = "mcpmark"
    ref_type = MCPMarkRef
    args_type = MCPMarkArgs
    ground_truth_hidden = True  # verify.py and the expected state stay outside the benchmark sandbox
    has_oracle = False

    def refs(self, args: MCPMarkArgs, ctx: ListContext) -> list[MCPMarkRef]:
        from envs.benchmarks import mcpmark
        from envs.benchmarks.environment import benchmark_python
        from envs.benchmarks.mcpmark.checkout import MCPMarkCheckout, MCPMarkError

        where = f"envs.{ctx.source}.args"
        try:
            co = MCPMarkCheckout(args.checkout, args.data_dir)
            tasks = [t.task_id for t in co.tasks(args.tasks or None, args.suite)]
        except MCPMarkError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if not tasks:
            raise ConfigError(f"{where}: no {args.suite} filesystem task has its category in {args.data_dir}")
        python, node_dir = benchmark_python(mcpmark.ENVIRONMENT, args.python, args.node_dir, where, ctx.say)
        return [MCPMarkRef(str(co.path), str(co.data_dir), t, python, node_dir) for t in tasks]

    def load(self, ref: MCPMarkRef, ctx: LoadContext) -> MCPMarkTaskEnv:
        from envs.benchmarks.mcpmark.episode import MCPMarkTaskEnv

        return MCPMarkTaskEnv(ref, judge_timeout_s=ctx.judge_timeout_s)


KIND = register(MCPMarkKind())
