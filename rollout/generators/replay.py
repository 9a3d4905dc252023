"""A replay backend: the model is forced to emit a fixed script of replies (one per turn).

For benchmarks and debugging of the fabric (like slime's rollout-only mode): the generator does
real work — one forward pass of the model over prompt + reply gives real behaviour log-probs — but
what the episode does is fixed, so a load can be made environment-bound or generation-bound on
purpose. The turn is the number of assistant turns already in the prompt.

`{seed}` in a reply is replaced by the request's sampling seed, so one script can act differently
per sample (a program that solves the task only for some seeds gives known pass rates: the
difficulty filter's tests).
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import torch

from rollout.generators.scripted import forced_logprobs
from schema.records import Generation, Prompt, SamplingParams


class ReplayGenerator:
    def __init__(self, model_path: str | Path, script: list[str], threads: int | None = None):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
        self.texts = list(script)
        self.script = [self.tokenizer.encode(s, add_special_tokens=False) for s in script]
        self.end_id = self.tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.assistant = self.tokenizer.encode("<|im_start|>assistant", add_special_tokens=False)
        self.policy_version = 0
        self._lock = threading.Lock()

    def _turn(self, ids: list[int]) -> int:
        n, k = 0, len(self.assistant)
        for i in range(len(ids) - k + 1):
            if ids[i:i + k] == self.assistant:
                n += 1
        return max(0, n - 1)

    def _generate(self, prompt: list[int], sampling: SamplingParams) -> Generation:
        turn = min(self._turn(prompt), len(self.script) - 1)
        reply = self.script[turn]
        if "{seed}" in self.texts[turn]:
            text = self.texts[turn].replace("{seed}", str(sampling.seed))
            reply = self.tokenizer.encode(text, add_special_tokens=False)
        reply = reply + [self.end_id]
        reply = reply[: sampling.max_new_tokens]
        with self._lock:
            lps = forced_logprobs(self.model, prompt, reply, sampling.temperature)
        finish = "stop" if reply[-1] == self.end_id else "length"
        return Generation(token_ids=reply, logprobs=lps, finish_reason=finish, policy_version=self.policy_version)

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation:
        return await asyncio.to_thread(self._generate, list(prompt.token_ids), sampling)

    async def load_weights(self, version: int, weights: dict[str, Any]) -> None:
        def load() -> None:
            with self._lock:
                self.model.load_state_dict(weights, strict=False)
                self.policy_version = version

        await asyncio.to_thread(load)

    async def close(self) -> None:
        return None
