"""Every environment kind of this checkout meets the kind contract (envs/kinds.EnvKind), checked
statically: the type check of `.ci/run` (mypy, `[tool.mypy]` in pyproject.toml) reads this module;
nothing imports it at run time. `register` checks the same shape when a kind's module is imported,
so a kind of your own that drifts fails there (tests/test_env_kinds.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envs.benchmarks.loca.kind import LocaArgs, LocaKind, LocaRef
    from envs.benchmarks.mcpmark.kind import MCPMarkArgs, MCPMarkKind, MCPMarkRef
    from envs.benchmarks.toolathlon.kind import ToolathlonArgs, ToolathlonKind, ToolathlonRef
    from envs.format.kind import LibraryArgs, LibraryKind, TaskRef
    from envs.harbor.kind import HarborArgs, HarborKind, HarborRef
    from envs.kinds import EnvKind

    def kinds(library: LibraryKind, harbor: HarborKind, loca: LocaKind, toolathlon: ToolathlonKind,
              mcpmark: MCPMarkKind) -> list[EnvKind[Any, Any]]:
        typed: tuple[EnvKind[TaskRef, LibraryArgs], EnvKind[HarborRef, HarborArgs], EnvKind[LocaRef, LocaArgs],
                     EnvKind[ToolathlonRef, ToolathlonArgs], EnvKind[MCPMarkRef, MCPMarkArgs]] = (
            library, harbor, loca, toolathlon, mcpmark)
        return list(typed)
