"""Every environment kind of this checkout meets the kind contract (envs/kinds.EnvKind), checked
statically, and so does each kind's episode environment (envs/episode_env.EpisodeEnv): the type check of `.ci/run` (mypy, `[tool.mypy]` in pyproject.toml) reads this module;
nothing imports it at run time. `register` checks the same shape when a kind's module is imported,
so a kind of your own that drifts fails there (tests/test_env_kinds.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envs.benchmarks.loca.episode import LocaTaskEnv
    from envs.benchmarks.loca.kind import LocaArgs, LocaKind, LocaRef
    from envs.benchmarks.mcpmark.episode import MCPMarkTaskEnv
    from envs.benchmarks.mcpmark.kind import MCPMarkArgs, MCPMarkKind, MCPMarkRef
    from envs.benchmarks.toolathlon.episode import ToolathlonTaskEnv
    from envs.benchmarks.toolathlon.kind import ToolathlonArgs, ToolathlonKind, ToolathlonRef
    from envs.episode_env import EpisodeEnv
    from envs.format.kind import LibraryArgs, LibraryKind, TaskRef
    from envs.format.task_env import LibraryTaskEnv
    from envs.harbor.episode import HarborTaskEnv
    from envs.harbor.kind import HarborArgs, HarborKind, HarborRef
    from envs.kinds import EnvKind

    def kinds(library: LibraryKind, harbor: HarborKind, loca: LocaKind, toolathlon: ToolathlonKind,
              mcpmark: MCPMarkKind) -> list[EnvKind[Any, Any]]:
        typed: tuple[EnvKind[TaskRef, LibraryArgs], EnvKind[HarborRef, HarborArgs], EnvKind[LocaRef, LocaArgs],
                     EnvKind[ToolathlonRef, ToolathlonArgs], EnvKind[MCPMarkRef, MCPMarkArgs]] = (
            library, harbor, loca, toolathlon, mcpmark)
        return list(typed)

    def episode_envs(library: LibraryTaskEnv, harbor: HarborTaskEnv, loca: LocaTaskEnv, toolathlon: ToolathlonTaskEnv,
                     mcpmark: MCPMarkTaskEnv) -> list[EpisodeEnv]:
        return [library, harbor, loca, toolathlon, mcpmark]
