"""The `transformers` backend: a Hugging Face causal LM on CPU (tests, the embedded default).

Requests are served one at a time in a worker thread (the model is not re-entrant); the tiny model
generates ~250 tokens/s on one core, which is what the CPU demo needs.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import torch

from rollout.generators.base import GeneratorError
from rollout.types import Generation, SamplingParams


class HFGenerator:
    def __init__(self, model_path: str | Path, device: str = "cpu", dtype: str = "float32", threads: int | None = None):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, dtype)).to(device).eval()
        self.device = device
        self.policy_version = 0
        self._lock = threading.Lock()
        self.eos_ids = sorted({i for i in (self.tokenizer.eos_token_id, self.tokenizer.convert_tokens_to_ids("<|im_end|>"))
                               if i is not None})

    def _generate(self, prompt: list[int], sampling: SamplingParams) -> Generation:
        with self._lock, torch.no_grad():
            if sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            ids = torch.tensor([prompt], device=self.device)
            greedy = sampling.temperature <= 0
            out = self.model.generate(
                ids, attention_mask=torch.ones_like(ids), do_sample=not greedy,
                temperature=None if greedy else sampling.temperature, top_p=None if greedy else sampling.top_p,
                top_k=None, max_new_tokens=sampling.max_new_tokens,
                eos_token_id=self.eos_ids + list(sampling.stop_token_ids), pad_token_id=self.tokenizer.pad_token_id,
                return_dict_in_generate=True, output_logits=True)
            new = out.sequences[0, len(prompt):].tolist()
            temp = 1.0 if greedy else sampling.temperature
            logits = torch.stack(out.logits, dim=0)[: len(new), 0].float() / temp
            logprobs = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(new).unsqueeze(1)).squeeze(1).tolist()
            stops = set(self.eos_ids) | set(sampling.stop_token_ids)
            finish = "stop" if new and new[-1] in stops else "length"
            return Generation(token_ids=new, logprobs=logprobs, finish_reason=finish, policy_version=self.policy_version)

    async def generate(self, prompt_token_ids: list[int], sampling: SamplingParams) -> Generation:
        try:
            return await asyncio.to_thread(self._generate, list(prompt_token_ids), sampling)
        except Exception as exc:  # noqa: BLE001
            raise GeneratorError(f"transformers generate failed: {type(exc).__name__}: {exc}") from exc

    async def load_weights(self, version: int, weights: dict[str, Any]) -> None:
        def load() -> None:
            with self._lock:
                missing, unexpected = self.model.load_state_dict(weights, strict=False)
                if unexpected:
                    raise GeneratorError(f"unexpected weights: {unexpected[:5]}")
                self.policy_version = version

        await asyncio.to_thread(load)

    async def close(self) -> None:
        return None
