"""The generator contract: token ids in, token ids and behaviour log-probs out.

    async generate(prompt_token_ids, sampling) -> Generation(token_ids, logprobs, finish_reason, policy_version)
    load_weights(version, weights)     # a state dict (name -> tensor), published by the learner
    receive_weights(update, rank)      # optional: a backend whose workers are other processes (vLLM)
                                       # takes part in a collective update itself (rollout/weights/)

Every backend returns the exact ids it sampled (never re-tokenised text) and the log-prob of each
under the sampling distribution (logits / temperature, before top-p truncation), so the learner
can train on exactly what was generated and measure the train/inference mismatch.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from schema.records import Generation, SamplingParams


@runtime_checkable
class Generator(Protocol):
    policy_version: int

    async def generate(self, prompt_token_ids: list[int], sampling: SamplingParams) -> Generation: ...

    async def load_weights(self, version: int, weights: dict[str, Any]) -> None: ...

    async def close(self) -> None: ...


class GeneratorError(RuntimeError):
    """The backend failed to produce a generation (the rollout records `generator_error`)."""
