"""The generator contract: a prompt in, token ids and behaviour log-probs out.

    async generate(prompt, sampling) -> Generation(token_ids, logprobs, finish_reason, policy_version)
    load_weights(version, weights)     # a state dict (name -> tensor), published by the learner
    receive_weights(update, rank)      # optional: a backend whose workers are other processes (vLLM)
                                       # takes part in a collective update itself (rollout/weights/)

A `Prompt` holds the conversation twice: its exact token ids, and the same turns as chat messages
with the tool schemas. A token backend (transformers, vLLM, replay, scripted, the oracle's script)
samples after `prompt.token_ids` and returns the exact ids it sampled (never re-tokenised text)
with the log-prob of each under the sampling distribution (logits / temperature, before top-p
truncation), so the learner can train on exactly what was generated and measure the train/inference
mismatch. A chat-API backend (rollout/generators/openai_backend.py) sends `prompt.messages` and
`prompt.tools` and returns its reply tokenised with the project tokenizer, with zero log-probs: an
API model's turns are evaluated, never trained on. The agent loop calls `generate` and nothing else.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from schema.records import Generation, Prompt, SamplingParams


@runtime_checkable
class Generator(Protocol):
    policy_version: int

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation: ...

    async def load_weights(self, version: int, weights: dict[str, Any]) -> None: ...

    async def close(self) -> None: ...


class GeneratorError(RuntimeError):
    """The backend failed to produce a generation (the rollout records `generator_error`)."""
