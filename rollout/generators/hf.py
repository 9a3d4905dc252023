"""The `transformers` backend: a Hugging Face causal LM on CPU (tests, the embedded default).

Concurrent requests are decoded together (static batching: whatever is queued when a batch starts,
up to `max_batch` rows, left-padded, one forward per token with a KV cache). On a small model each
forward costs about the same for one row as for eight, so an env worker running several episodes
gets several times the tokens/s of one-at-a-time `generate`. Each row samples with its own
`torch.Generator` (seeded from `SamplingParams.seed`), so a seeded request draws the same tokens
whatever else shares its batch, up to float rounding of the padded batch.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import torch

from rollout.generators.base import GeneratorError
from schema.records import Generation, Prompt, SamplingParams


def _sample(logp: torch.Tensor, sampling: SamplingParams, gen: torch.Generator) -> int:
    """One token from a row of log-probs (logits / temperature); greedy when temperature <= 0."""
    if sampling.temperature <= 0:
        return int(torch.argmax(logp))
    probs = logp.exp()
    if sampling.top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True)
        keep = (torch.cumsum(sorted_p, dim=-1) - sorted_p) < sampling.top_p  # always keeps the first
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_p[keep])
    return int(torch.multinomial(probs, 1, generator=gen))


class HFGenerator:
    def __init__(self, model_path: str | Path, device: str = "cpu", dtype: str = "float32", threads: int | None = None,
                 max_batch: int = 8):
        from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache
        from transformers.cache_utils import DynamicLayer

        if threads:
            torch.set_num_threads(threads)
        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, dtype))
        self.model = model.to(device).eval()  # type: ignore[arg-type]  # transformers types .to() as a PreTrainedModel method
        #: `_prefill` runs prompts one by one: on CPU (a GPU runs a padded batch in parallel, and its
        #: attention kernels take the mask), where every layer's cache is a plain full-attention one
        #: (no sliding window), so the caches can be padded afterwards
        self._prefill_each = torch.device(device).type == "cpu" and all(
            type(layer) is DynamicLayer for layer in DynamicCache(config=self.model.config).layers)
        self.device = device
        self.max_batch = max_batch
        self.policy_version = 0
        self._lock = threading.Lock()  # the model is not re-entrant: batches and weight loads take turns
        self._queue: list[tuple[list[int], SamplingParams, asyncio.Future]] = []
        self._server: asyncio.Task | None = None
        self.batches = 0
        self.rows = 0
        self.eos_ids: list[int] = sorted({i for i in (self.tokenizer.eos_token_id,
                                                      self.tokenizer.convert_tokens_to_ids("<|im_end|>"))
                                          if isinstance(i, int)})
        pad = self.tokenizer.pad_token_id
        self.pad_id: int = int(pad) if isinstance(pad, int) else self.eos_ids[0]

    def _generate_batch(self, reqs: list[tuple[list[int], SamplingParams]]) -> list[Generation]:
        with self._lock, torch.no_grad():
            n, width = len(reqs), max(len(p) for p, _ in reqs)
            ids = torch.full((n, width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((n, width), dtype=torch.long)
            for i, (prompt, _) in enumerate(reqs):
                ids[i, width - len(prompt):] = torch.tensor(prompt)
                mask[i, width - len(prompt):] = 1
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            gens = []
            for _, sampling in reqs:
                seed = sampling.seed if sampling.seed is not None else int(torch.randint(0, 2**62, (1,)))
                gens.append(torch.Generator().manual_seed(seed))
            stops = [set(self.eos_ids) | set(s.stop_token_ids) for _, s in reqs]
            new: list[list[int]] = [[] for _ in reqs]
            logprobs: list[list[float]] = [[] for _ in reqs]
            finish = ["length"] * n
            active = [s.max_new_tokens > 0 for _, s in reqs]
            # behaviour log-probs: logits / temperature (1 for greedy), before top-p truncation
            temps = torch.tensor([[s.temperature if s.temperature > 0 else 1.0] for _, s in reqs])
            logits, cache = self._prefill([p for p, _ in reqs], ids, mask, positions)
            while True:
                logp = torch.log_softmax(logits.float().cpu() / temps, dim=-1)
                step = torch.full((n, 1), self.pad_id, dtype=torch.long)
                for i, (_, sampling) in enumerate(reqs):
                    if not active[i]:
                        continue
                    tok = _sample(logp[i], sampling, gens[i])
                    new[i].append(tok)
                    logprobs[i].append(float(logp[i, tok]))
                    step[i, 0] = tok
                    if tok in stops[i]:
                        finish[i], active[i] = "stop", False
                    elif len(new[i]) >= sampling.max_new_tokens:
                        active[i] = False
                if not any(active):
                    break
                mask = torch.cat([mask, torch.ones((n, 1), dtype=torch.long)], dim=1)
                positions = positions[:, -1:] + 1
                out = self.model(input_ids=step.to(self.device), attention_mask=mask.to(self.device),
                                 position_ids=positions.to(self.device), past_key_values=cache, use_cache=True)
                logits, cache = out.logits[:, -1], out.past_key_values
            self.batches += 1
            self.rows += n
            return [Generation(token_ids=new[i], logprobs=logprobs[i], finish_reason=finish[i],
                               policy_version=self.policy_version) for i in range(n)]

    def _prefill(self, prompts: list[list[int]], ids: torch.Tensor, mask: torch.Tensor,
                 positions: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """(each prompt's last logits, the batch's KV cache). The LM head runs on the last position
        only. On CPU, where every layer's cache is plain full attention, each prompt runs alone and the caches
        are left-padded into the batch's (the decode steps' mask hides the padding, as it hid the
        prompt's): a padded batch needs an attention mask, and attention under a mask runs the math
        kernel over the whole width, where one prompt runs the causal kernel. On the tiny model, 8
        prompts of 0.7-1.5k tokens took 0.24 s of CPU this way and 0.67 s as one padded batch (and 0.9 s
        with the LM head on every position, as before)."""
        if len(prompts) == 1 or not self._prefill_each:
            out = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                             position_ids=positions.to(self.device), use_cache=True, logits_to_keep=1)
            return out.logits[:, -1], out.past_key_values
        from transformers import DynamicCache

        width = ids.shape[1]
        outs = [self.model(input_ids=torch.tensor([p], device=self.device), use_cache=True, logits_to_keep=1)
                for p in prompts]
        cache = DynamicCache(config=self.model.config)
        for layer in range(len(cache.layers)):
            keys, values = ([torch.nn.functional.pad(getattr(o.past_key_values.layers[layer], kind),
                                                     (0, 0, width - len(p), 0))
                             for o, p in zip(outs, prompts, strict=True)] for kind in ("keys", "values"))
            cache.update(torch.cat(keys), torch.cat(values), layer)
        return torch.cat([o.logits[:, -1] for o in outs]), cache

    async def _serve(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch:]
            try:
                gens = await asyncio.to_thread(self._generate_batch, [(p, s) for p, s, _ in batch])
            except Exception as exc:  # noqa: BLE001 - every request of the batch gets the error
                err = GeneratorError(f"transformers generate failed: {type(exc).__name__}: {exc}")
                for _, _, fut in batch:
                    if not fut.done():
                        fut.set_exception(err)
                continue
            for (_, _, fut), gen in zip(batch, gens, strict=True):
                if not fut.done():
                    fut.set_result(gen)

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation:
        if not prompt.token_ids:
            raise GeneratorError("transformers generate failed: empty prompt")
        fut = asyncio.get_running_loop().create_future()
        self._queue.append((list(prompt.token_ids), sampling, fut))
        if self._server is None or self._server.done():
            self._server = asyncio.create_task(self._serve())
        return await fut

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
