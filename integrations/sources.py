"""ProgAgent sources for a host framework's task list: from a ProgAgent config or one library folder.

    sources = episode_sources(config="configs/mixture.yaml", only=["starter"])
    sources = episode_sources(library="envs/starter_tasks", tasks=["hr_leave_decisions"], scales=["v0"])
    text = instruction_of(ref, cache)       # what a row or task shows before its episode opens

verl's dataset rows and verifiers' tasks list the same (task, scale) pairs ProgAgent's own trainer
draws from (envs/sources.py), with every error a ConfigError before anything runs.
"""

from __future__ import annotations

import sys
from typing import Any

from envs.kinds import load_env
from envs.sources import Source, resolve_sources
from schema.config import SourceSpec
from schema.load import load_config
from schema.records import EnvRef


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def episode_sources(*, config: str | None = None, only: list[str] | None = None, overrides: list[str] | None = None,
                    library: str | None = None, tasks: list[str] | None = None,
                    scales: list[str] | None = None) -> list[Source]:
    """The sources of a ProgAgent config (`only` those named), or of one task library (its `tasks` at
    its `scales`; all when empty)."""
    if library:
        spec = SourceSpec("library", 1.0, {s: 1.0 for s in scales or []},
                          {"library": library, "tasks": list(tasks or [])})
        return resolve_sources({"library": spec}, say=_say)
    cfg = load_config(config, overrides or [])
    return resolve_sources(cfg.sources(), only or None, say=_say)


def instruction_of(ref: EnvRef, cache: Any) -> str:
    """The instruction shown before the episode opens: the environment's own when it is known then
    (a library or Harbor task), else a line naming the task (a benchmark makes it at open)."""
    try:
        text = load_env(ref, cache).instruction
    except Exception:  # noqa: BLE001 - display text only; the episode loads the environment for real
        text = ""
    return text or f"ProgAgent task {ref.task_id} at scale {ref.scale}"
