"""Every generator backend meets the generator contract (rollout/generators/base.Generator),
checked statically: the type check of `.ci/run` (mypy, `[tool.mypy]` in pyproject.toml) reads this
module; nothing imports it at run time. A backend whose methods drift from the Protocol (another
signature, a sync `generate`, a missing `close`) fails the suite here, not in a run.

The token backends, the chat-API backend (it reads the prompt's messages: one contract, no flag)
and the oracle's script (rollout/teacher.OracleGenerator) alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rollout.episode import TurnWriter
    from rollout.generators.base import Generator
    from rollout.generators.hf import HFGenerator
    from rollout.generators.openai_backend import OpenAIGenerator
    from rollout.generators.replay import ReplayGenerator
    from rollout.generators.scripted import ScriptedGenerator
    from rollout.generators.vllm_backend import VLLMGenerator
    from rollout.teacher import OracleGenerator, OracleTurns

    def generators(hf: HFGenerator, vllm: VLLMGenerator, replay: ReplayGenerator, scripted: ScriptedGenerator,
                   api: OpenAIGenerator, oracle: OracleGenerator) -> list[Generator]:
        return [hf, vllm, replay, scripted, api, oracle]

    def turn_writers(oracle: OracleTurns) -> list[TurnWriter]:
        """The teachers an env worker can hold beside its policy (actors/env_worker.PolicyTurns)."""
        return [oracle]
