"""A generator that replays given replies as token ids: the oracle teacher, and forced decoding.

Each call to `generate` returns the next reply, tokenised and closed with the end token, so a
scripted conversation goes through the same agent loop, parser, runtime and token accounting as a
sampled one. With `scorer` (an HFGenerator) the log-probs are the scoring model's, computed by a
forward pass over prompt + reply; otherwise they are 0.0 (SFT data needs none).
"""

from __future__ import annotations

from typing import Any

from rollout.generators.base import GeneratorError
from schema.records import Generation, Prompt, SamplingParams


def forced_logprobs(model: Any, prompt: list[int], reply: list[int], temperature: float) -> list[float]:
    """log softmax(logits / T) of each reply token given the prompt and the reply before it.
    torch is imported here, not at the top: the oracle teacher replays without a scorer on every env
    worker, and importing torch there cost each env worker's process ~3 s of CPU at start.

    The LM head runs on the reply's positions only (`logits_to_keep`, transformers' causal LMs): with
    a long prompt the head over every position was a third of the forward pass (a 4,000-token prompt
    on the tiny model: 0.26 s of CPU, 0.19 s with it). A model whose forward takes no such argument
    gets every position, as before."""
    import torch

    ids = torch.tensor([list(prompt) + list(reply)])
    keep = len(reply) + 1  # the last prompt position predicts the first reply token
    with torch.no_grad():
        try:
            out = model(ids, logits_to_keep=keep)
        except TypeError:
            out = model(ids)
        logits = out.logits[0, -keep:-1].float()
    temp = temperature if temperature > 0 else 1.0
    return torch.log_softmax(logits / temp, -1).gather(1, torch.tensor(reply)[:, None])[:, 0].tolist()


class ScriptedGenerator:
    def __init__(self, tokenizer: Any, replies: list[str], scorer: Any = None):
        self.tokenizer = tokenizer
        self.replies = list(replies)
        self.scorer = scorer
        self.policy_version = 0
        self.end_id = tokenizer.convert_tokens_to_ids("<|im_end|>")

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation:
        if not self.replies:
            raise GeneratorError("the script has no more replies")
        ids = self.tokenizer.encode(self.replies.pop(0), add_special_tokens=False) + [self.end_id]
        finish = "stop"
        if len(ids) > sampling.max_new_tokens:
            ids, finish = ids[: sampling.max_new_tokens], "length"
        logprobs = [0.0] * len(ids)
        if self.scorer is not None:
            logprobs = forced_logprobs(self.scorer.model, prompt.token_ids, ids, sampling.temperature)
        return Generation(token_ids=ids, logprobs=logprobs, finish_reason=finish, policy_version=self.policy_version)

    async def load_weights(self, version: int, weights: dict[str, Any]) -> None:
        self.policy_version = version

    async def close(self) -> None:
        return None
