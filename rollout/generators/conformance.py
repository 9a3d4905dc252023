"""Every generator backend meets the generator contract (rollout/generators/base.Generator),
checked statically: the type check of `.ci/run` (mypy, `[tool.mypy]` in pyproject.toml) reads this
module; nothing imports it at run time. A backend whose methods drift from the Protocol (another
signature, a sync `generate`, a missing `close`) fails the suite here, not in a run.

The chat-API backend (openai_backend.OpenAIGenerator) is left out on purpose: it has the methods,
but its `generate` raises (it answers `generate_chat`), so passing this check would say nothing
true; it gets its own contract with the chat-API adapter."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rollout.generators.base import Generator
    from rollout.generators.hf import HFGenerator
    from rollout.generators.replay import ReplayGenerator
    from rollout.generators.scripted import ScriptedGenerator
    from rollout.generators.vllm_backend import VLLMGenerator

    def token_generators(hf: HFGenerator, vllm: VLLMGenerator, replay: ReplayGenerator,
                         scripted: ScriptedGenerator) -> list[Generator]:
        return [hf, vllm, replay, scripted]
