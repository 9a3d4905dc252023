"""The integrations' generators meet ProgAgent's generator contract (rollout/generators/base.Generator),
checked statically by the type check (`[tool.mypy]` in pyproject.toml); nothing imports this at run
time. verl's servers written as a Generator must stay one, or the agent loop's episode cannot use it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from integrations.verl.server_generator import ServerGenerator
    from rollout.generators.base import Generator

    def generators(verl_server: ServerGenerator) -> list[Generator]:
        return [verl_server]
