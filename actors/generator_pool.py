"""Generator actors and the pool that routes to them.

`GeneratorActor` holds one backend (rollout/generators: transformers | vllm | replay, or openai: an
OpenAI-compatible chat endpoint, for evaluating API models). `GeneratorPool` is an async actor in
front of N of them:
- least-loaded routing (fewest requests in flight), so one slow generator does not hold a queue;
- versioned weights: `load_weights(version, ref)` reaches every generator; the pool keeps the
  latest (version, ref) so a generator that is restarted comes back with the current weights;
- health: a request that fails because its generator died is retried on another one, and the dead
  one is replaced in the background; `health()` pings all and replaces the silent ones;
- busy fraction per generator (time with at least one request in flight / wall time), the number
  the async-vs-sync benchmark reports.

Token backends serve `generate` (ids in, ids out). A chat backend (`openai`) serves
`generate_chat(messages, tools, sampling)` instead, routed the same way; `PoolClient(chat_api=True)`
makes the agent loop send it messages, and it never loads weights (its version stays 0).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import ray

from schema.config import API_PREFIX, GeneratorSpec
from schema.records import Generation, SamplingParams

log = logging.getLogger(__name__)

CHAT_BACKENDS = ("openai",)


def build_backend(spec: GeneratorSpec, model: str) -> Any:
    """A backend of `spec` serving `model` (a Hugging Face folder; for "openai" the API model name)."""
    if spec.backend == "transformers":
        from rollout.generators.hf import HFGenerator

        return HFGenerator(model, device="cuda" if spec.num_gpus else "cpu", threads=spec.threads)
    if spec.backend == "vllm":
        from rollout.generators.vllm_backend import VLLMGenerator

        return VLLMGenerator(model, max_model_len=spec.max_model_len,
                             gpu_memory_utilization=spec.gpu_memory_utilization,
                             tensor_parallel_size=spec.tensor_parallel_size)
    if spec.backend == "replay":
        from rollout.generators.replay import ReplayGenerator

        return ReplayGenerator(model, spec.script, threads=spec.threads)
    if spec.backend == "openai":
        from rollout.generators.openai_backend import OpenAIGenerator

        return OpenAIGenerator(model.removeprefix(API_PREFIX), base_url=spec.base_url or None,
                               api_key_env=spec.api_key_env)
    raise ValueError(f"unknown generator backend {spec.backend!r}; expected 'transformers', 'vllm', 'replay' "
                     "or 'openai'")


def _cause(exc: BaseException) -> BaseException:
    """The backend's own exception inside Ray's wrappers (whose text is a remote traceback)."""
    while isinstance(exc, ray.exceptions.RayTaskError) and exc.cause is not None:
        exc = exc.cause
    return exc


def resolve_tokenizer(path: str) -> str:
    """The folder env workers load the tokenizer from. An API model has no tokenizer of ours: its
    replies are tokenised with the project tokenizer (the trajectory's ids; never trained on)."""
    if not path.startswith(API_PREFIX):
        return path
    from rollout.tiny_model import build_tiny

    return str(build_tiny(with_model=False))


@ray.remote
class GeneratorActor:
    def __init__(self, spec: GeneratorSpec, model: str):
        self.spec = spec
        self.backend = build_backend(spec, model)

    async def generate(self, prompt_token_ids: list[int], sampling: SamplingParams) -> Generation:
        return await self.backend.generate(prompt_token_ids, sampling)

    async def generate_chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                            sampling: SamplingParams) -> tuple[str, str]:
        return await self.backend.generate_chat(messages, tools, sampling)

    async def load_weights(self, version: int, weights: dict[str, Any]) -> int:
        await self.backend.load_weights(version, weights)
        return version

    async def ping(self) -> int:
        return self.backend.policy_version


class _Slot:
    def __init__(self, handle: Any):
        self.handle = handle
        self.in_flight = 0
        self.alive = True
        self.busy_s = 0.0
        self._busy_since: float | None = None

    def begin(self) -> None:
        if self.in_flight == 0:
            self._busy_since = time.monotonic()
        self.in_flight += 1

    def end(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0 and self._busy_since is not None:
            self.busy_s += time.monotonic() - self._busy_since
            self._busy_since = None

    def busy(self, now: float) -> float:
        return self.busy_s + (now - self._busy_since if self._busy_since is not None else 0.0)


@ray.remote
class GeneratorPool:
    def __init__(self, spec: GeneratorSpec, n: int, model: str, max_retries: int = 3):
        self.spec = spec
        self.model = model
        self.max_retries = max_retries
        self.slots = [_Slot(self._new_actor()) for _ in range(n)]
        self.version = 0
        self.weights_ref: Any = None
        self.started = time.monotonic()
        self.restarts = 0
        self.errors = 0  # requests that failed on a live generator (an endpoint error, a backend bug)
        self.last_error = ""
        self._restarting: dict[int, asyncio.Task] = {}

    def _new_actor(self) -> Any:
        return GeneratorActor.options(num_cpus=self.spec.num_cpus, num_gpus=self.spec.num_gpus,
                                      max_concurrency=1000).remote(self.spec, self.model)

    async def ready(self) -> int:
        await asyncio.gather(*(s.handle.ping.remote() for s in self.slots))
        return len(self.slots)

    async def chat_api(self) -> bool:
        """Whether clients must send messages (`generate_chat`) rather than token ids."""
        return self.spec.backend in CHAT_BACKENDS

    def _pick(self) -> int:
        alive = [i for i, s in enumerate(self.slots) if s.alive]
        if not alive:
            raise RuntimeError("no generator is alive")
        return min(alive, key=lambda i: self.slots[i].in_flight)

    async def generate(self, prompt_token_ids: list[int], sampling: SamplingParams) -> Generation:
        return await self._route("generate", prompt_token_ids, sampling)

    async def generate_chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                            sampling: SamplingParams) -> tuple[str, str]:
        return await self._route("generate_chat", messages, tools, sampling)

    async def _route(self, method: str, *args: Any) -> Any:
        """To the least-loaded live generator; retried elsewhere only when that generator died (a
        backend's own error, e.g. an endpoint's HTTP 500 after its retries, goes back to the caller)."""
        last: Exception | None = None
        for _ in range(self.max_retries + 1):
            while not any(s.alive for s in self.slots):
                await asyncio.sleep(0.05)  # every generator is restarting
            i = self._pick()
            slot = self.slots[i]
            slot.begin()
            try:
                return await getattr(slot.handle, method).remote(*args)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
                last = exc
                self._replace(i)
            except Exception as exc:
                self.errors += 1
                self.last_error = str(_cause(exc))
                raise
            finally:
                slot.end()
        raise RuntimeError(f"generation failed after {self.max_retries + 1} attempts: {last}")

    def _replace(self, i: int) -> None:
        if i in self._restarting and not self._restarting[i].done():
            return
        self.slots[i].alive = False
        self._restarting[i] = asyncio.create_task(self._restart(i))

    async def _restart(self, i: int) -> None:
        log.warning("generator %d died; starting a replacement with weights v%d", i, self.version)
        handle = self._new_actor()
        if self.weights_ref is not None:
            await handle.load_weights.remote(self.version, self.weights_ref)
        else:
            await handle.ping.remote()
        self.slots[i] = _Slot(handle)
        self.restarts += 1

    async def load_weights(self, version: int, weights_ref: Any) -> int:
        """Every live generator loads `version`; the ref is kept for generators started later.
        `weights_ref` arrives wrapped in a list so that Ray passes the reference, not the value."""
        if await self.chat_api():
            return self.version  # an API model: nothing to load, its version stays 0
        ref = weights_ref[0] if isinstance(weights_ref, list) else weights_ref
        self.version, self.weights_ref = version, ref
        results = await asyncio.gather(*(s.handle.load_weights.remote(version, ref) for s in self.slots if s.alive),
                                       return_exceptions=True)
        for i, r in enumerate(results):
            if isinstance(r, Exception):
                self._replace(i)
        return version

    async def health(self) -> dict[str, Any]:
        results = await asyncio.gather(*(asyncio.wait_for(s.handle.ping.remote(), 30) for s in self.slots),
                                       return_exceptions=True)
        for i, r in enumerate(results):
            if isinstance(r, Exception):
                self._replace(i)
        return {"alive": sum(s.alive for s in self.slots), "versions": [r if isinstance(r, int) else None
                                                                     for r in results]}

    async def stats(self) -> dict[str, Any]:
        now = time.monotonic()
        wall = max(1e-9, now - self.started)
        return {"generators": len(self.slots), "restarts": self.restarts, "version": self.version,
                "errors": self.errors, "last_error": self.last_error,
                "busy_fraction": [round(s.busy(now) / wall, 4) for s in self.slots],
                "in_flight": [s.in_flight for s in self.slots]}

    async def reset_stats(self) -> None:
        self.started = time.monotonic()
        for s in self.slots:
            s.busy_s = 0.0
            s._busy_since = time.monotonic() if s.in_flight else None

    async def handles(self) -> list[Any]:
        return [s.handle for s in self.slots]


class PoolClient:
    """The Generator interface over a GeneratorPool actor, for the agent loop in env workers.
    `chat_api` (the pool's `chat_api()`) makes the loop call `generate_chat` with the messages."""

    def __init__(self, pool: Any, chat_api: bool = False):
        self.pool = pool
        self.chat_api = chat_api
        self.policy_version = 0
        self.last_error = ""  # why the last request failed (the episode only records generator_error)

    async def _call(self, method: str, *args: Any) -> Any:
        from rollout.generators.base import GeneratorError

        try:
            return await getattr(self.pool, method).remote(*args)
        except Exception as exc:  # noqa: BLE001
            self.last_error = str(_cause(exc))
            raise GeneratorError(f"generator pool failed: {self.last_error}") from exc

    async def generate(self, prompt_token_ids: list[int], sampling: SamplingParams) -> Generation:
        gen = await self._call("generate", prompt_token_ids, sampling)
        self.policy_version = gen.policy_version
        return gen

    async def generate_chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                            sampling: SamplingParams) -> tuple[str, str]:
        return await self._call("generate_chat", messages, tools, sampling)

    async def load_weights(self, version: int, weights: dict[str, Any]) -> None:
        raise NotImplementedError("weights are loaded through the pool, not through a client")

    async def close(self) -> None:
        return None
