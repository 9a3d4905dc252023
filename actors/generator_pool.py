"""Generator actors and the pool that routes to them.

`GeneratorActor` holds one backend (rollout/generators: transformers | vllm | replay, or openai: an
OpenAI-compatible chat endpoint, for evaluating API models). `GeneratorPool` is an async actor in
front of N of them:
- least-loaded routing (fewest requests in flight), so one slow generator does not hold a queue;
- versioned weights: `update_weights(learner, transport)` takes the learner's current weights to every
  generator by the configured transport (rollout/weights/); a generator that is restarted is routed
  to only once it serves the current version (the object store's last update again, or a collective
  update with it as a new member);
- health: a request that fails because its generator died is retried on another one, and the dead
  one is replaced in the background; `health()` pings all and replaces the silent ones;
- busy fraction per generator (time with at least one request in flight / wall time), the number
  the async-vs-sync benchmark reports.

Every backend serves `generate(prompt, sampling)` (rollout/generators/base.py): token backends read
the prompt's ids, a chat backend (`openai`) its messages and tools; the agent loop does not know
which it talks to. A chat backend never loads weights (its version stays 0).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import ray

from actors.startup import collector_paused
from envs.runtime.untrusted_text import loggable
from rollout.weights.base import WeightTransferError, make_receiver
from schema.config import API_PREFIX, GeneratorSpec, WeightTransportConfig
from schema.records import Generation, Prompt, SamplingParams, WeightUpdate

log = logging.getLogger(__name__)

CHAT_BACKENDS = ("openai",)


def build_backend(spec: GeneratorSpec, model: str) -> Any:
    """A backend of `spec` serving `model` (a Hugging Face folder; for "openai" the API model name)."""
    if spec.backend == "transformers":
        import torch

        from rollout.generators.hf import HFGenerator

        cuda = bool(spec.num_gpus) and torch.cuda.is_available()
        if spec.num_gpus and not cuda:  # a simulated cluster advertises GPUs it has not
            log.warning("generator given %g GPU(s) but CUDA is not available here: serving on the CPU", spec.num_gpus)
        return HFGenerator(model, device="cuda" if cuda else "cpu", threads=spec.threads)
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
        with collector_paused():  # actors/startup.py: ~0.8 s of CPU less per start
            self.backend = build_backend(spec, model)
        self._receivers: dict[str, Any] = {}  # by transport kind: a collective's keeps its group

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation:
        return await self.backend.generate(prompt, sampling)

    async def receive_weights(self, update: WeightUpdate, rank: int) -> int:
        """Take part in one weight update (rollout/weights/): fetch it from the object store, or join
        the collective as `rank` — in the backend's own worker processes where it has them (vLLM),
        else here, into host memory while this actor keeps serving, then loaded between two batches."""
        if update.kind == "collective" and hasattr(self.backend, "receive_weights"):
            await self.backend.receive_weights(update, rank)
            return update.version
        receiver = self._receivers.setdefault(update.kind, make_receiver(update.kind))

        def receive() -> dict[str, Any]:
            got: dict[str, Any] = {}
            for part in receiver.receive(update, rank):
                got.update(part)
            return got

        await self.backend.load_weights(update.version, await asyncio.to_thread(receive))
        return update.version

    def workers(self) -> int:
        """Processes of this generator that take part in a collective update (vLLM: one per TP rank)."""
        return self.spec.tensor_parallel_size if self.spec.backend == "vllm" else 1

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
        self.source: Any = None  # the learner (actor or group) that weights are pulled from
        self.transport = WeightTransportConfig()
        self.last_update: WeightUpdate | None = None  # object_store: handed again to a replacement
        self.epoch = 0  # collective: the membership; a new one whenever a generator joins
        self._group_key: tuple[str, ...] | None = None  # the actors of the current epoch's group
        self.waiting = 0  # replacements that no node has room for yet
        self.placement_wait_s = 15.0  # after this a replacement still pending is reported as waiting
        self.health_interval_s = 5.0
        self._watcher: asyncio.Task | None = None
        self._weights_lock = asyncio.Lock()  # one update at a time (a replacement's and the driver's)
        self.started = time.monotonic()
        self.restarts = 0
        self.errors = 0  # requests that failed on a live generator (an endpoint error, a backend bug)
        self.last_error = ""
        self._restarting: dict[int, asyncio.Task] = {}

    def _new_actor(self) -> Any:
        return GeneratorActor.options(num_cpus=self.spec.num_cpus, num_gpus=self.spec.num_gpus,
                                      max_concurrency=1000).remote(self.spec, self.model)

    async def _watch(self) -> None:
        """Ping every generator every `health_interval_s`: a generator whose node left is found and
        replaced even when no request happens to reach it (rollouts may be paused at the staleness
        bound while the learner steps)."""
        while True:
            await asyncio.sleep(self.health_interval_s)
            with contextlib.suppress(Exception):
                await self.health()

    async def ready(self) -> int:
        """Every generator up; one that died starting (its node left) is replaced in the background."""
        if self._watcher is None:
            self._watcher = asyncio.create_task(self._watch())
        results = await asyncio.gather(*(s.handle.ping.remote() for s in self.slots), return_exceptions=True)
        for i, r in enumerate(results):
            if isinstance(r, (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)):
                self._replace(i)
            elif isinstance(r, Exception):
                raise r
        return sum(s.alive for s in self.slots)

    def _serves_api_model(self) -> bool:
        """An API model (a chat backend): nothing to load, its weights are not ours."""
        return self.spec.backend in CHAT_BACKENDS

    def _pick(self) -> int:
        alive = [i for i, s in enumerate(self.slots) if s.alive]
        if not alive:
            raise RuntimeError("no generator is alive")
        return min(alive, key=lambda i: self.slots[i].in_flight)

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation:
        return await self._route("generate", prompt, sampling)

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

    async def _restart(self, i: int, tries: int = 3) -> None:
        """A replacement for generator i, routed to only once it serves the current weights."""
        log.warning("generator %d died; starting a replacement with weights v%d", i, self.version)
        for attempt in range(1, tries + 1):
            slot = _Slot(self._new_actor())
            slot.alive = False
            try:
                await self._placed(i, slot)
                async with self._weights_lock:  # the current version before it is routed to
                    if self.transport.kind == "collective" and self.source is not None:
                        await self._update([slot])
                    elif self.transport.kind != "collective" and self.last_update is not None:
                        await slot.handle.receive_weights.remote(self.last_update, 0)
            except Exception as exc:  # noqa: BLE001
                log.error("replacement %d for generator %d failed: %s", attempt, i, loggable(_cause(exc)))
                with contextlib.suppress(Exception):
                    ray.kill(slot.handle)
                continue
            slot.alive = True
            self.slots[i] = slot
            self.restarts += 1
            return
        log.error("generator %d stays down after %d replacements failed", i, tries)

    async def _placed(self, i: int, slot: _Slot) -> None:
        """Wait for a replacement to come up. One that no node has room for (its node left the
        cluster, and no other has the GPUs) waits for one to join, and the pool says it serves
        with fewer generators meanwhile (stats: `waiting_for_resources`)."""
        up = asyncio.ensure_future(slot.handle.ping.remote())
        done, _ = await asyncio.wait({up}, timeout=self.placement_wait_s)
        if not done:
            self.waiting += 1
            alive = sum(s.alive for s in self.slots)
            log.warning("generator %d: no node has room for its replacement (%g GPUs, %g CPUs); the pool serves "
                        "with %d of %d generators until a node with room joins", i, self.spec.num_gpus,
                        self.spec.num_cpus, alive, len(self.slots))
            self.last_error = f"generator {i} waits for a node with room; serving with {alive} of {len(self.slots)}"
            try:
                await up
            finally:
                self.waiting -= 1
        else:
            up.result()

    async def update_weights(self, learner: Any, transport: WeightTransportConfig) -> int:
        """The learner's current weights to every live generator, by `transport` (rollout/weights/);
        the learner is kept as the source for replacements. Returns the version they now serve; a
        generator that failed its part is replaced (and gets this version before it is routed to)."""
        if self._serves_api_model():
            return self.version  # an API model: nothing to load, its version stays 0
        self.source, self.transport = learner, transport
        async with self._weights_lock:
            for attempt in range(1, 4):  # a generator that died mid-update: again with the others
                try:
                    await self._update([])
                    break
                except WeightTransferError as exc:
                    if attempt == 3:
                        raise
                    log.warning("weight update failed (attempt %d): %s", attempt, loggable(exc))
        return self.version

    async def _update(self, joining: list[_Slot]) -> None:
        """One update to the live generators and `joining`; call with the weights lock held."""
        members = [(i, s) for i, s in enumerate(self.slots) if s.alive] + [(-1, s) for s in joining]
        collective = self.transport.kind == "collective"
        if collective:
            sizes = await asyncio.gather(*(s.handle.workers.remote() for _, s in members), return_exceptions=True)
            dead = [i for (i, _), n in zip(members, sizes, strict=True) if isinstance(n, Exception) and i >= 0]
            for i in dead:
                self._replace(i)
            if any(isinstance(n, Exception) for (i, _), n in zip(members, sizes, strict=True) if i < 0):
                raise WeightTransferError("a joining generator died before the update")
            members = [m for m, n in zip(members, sizes, strict=True) if not isinstance(n, Exception)]
            sizes = [n for n in sizes if not isinstance(n, Exception)]
            world = 1 + sum(sizes)
            ranks = [1 + sum(sizes[:k]) for k in range(len(members))]
            key = tuple(s.handle._actor_id.hex() for _, s in members)
            if key != self._group_key:  # a process group has a fixed membership: a new one
                self.epoch, self._group_key = self.epoch + 1, key
        else:
            world, ranks = 0, [0] * len(members)
        update = await self.source.weights_offer.remote(self.transport, self.epoch, world)
        send = self.source.weights_send.remote(update)
        results = await asyncio.gather(send, *(s.handle.receive_weights.remote(update, r)
                                               for (_, s), r in zip(members, ranks, strict=True)),
                                       return_exceptions=True)
        if any(isinstance(r, Exception) for r in results):
            self._group_key = None  # the members' state is unknown: the next update forms a new group
        failed = [(i, _cause(r)) for (i, _), r in zip(members, results[1:], strict=True) if isinstance(r, Exception)]
        for i, _ in failed:
            if i >= 0:
                self._replace(i)
        if isinstance(results[0], Exception):
            raise WeightTransferError(f"the learner's send of version {update.version} failed: {_cause(results[0])}")
        if any(i < 0 for i, _ in failed):
            raise WeightTransferError(f"a joining generator failed version {update.version}: "
                                      f"{next(e for i, e in failed if i < 0)}")
        if failed:
            log.warning("%d generator(s) failed weight version %d and are replaced: %s", len(failed), update.version,
                        failed[0][1])
        self.version = update.version
        if not collective:
            self.last_update = update

    async def health(self) -> dict[str, Any]:
        slots = list(self.slots)
        results = await asyncio.gather(*(asyncio.wait_for(s.handle.ping.remote(), 30) for s in slots),
                                       return_exceptions=True)
        for i, (slot, r) in enumerate(zip(slots, results, strict=True)):
            if isinstance(r, Exception) and self.slots[i] is slot:  # (not a replacement made meanwhile)
                self._replace(i)
        return {"alive": sum(s.alive for s in self.slots), "versions": [r if isinstance(r, int) else None
                                                                     for r in results]}

    async def stats(self) -> dict[str, Any]:
        now = time.monotonic()
        wall = max(1e-9, now - self.started)
        return {"generators": len(self.slots), "restarts": self.restarts, "version": self.version,
                "weights_epoch": self.epoch, "waiting_for_resources": self.waiting,
                "alive": sum(s.alive for s in self.slots),
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
    """The Generator interface over a GeneratorPool actor, for the agent loop in env workers."""

    def __init__(self, pool: Any):
        self.pool = pool
        self.policy_version = 0
        self.last_error = ""  # why the last request failed (the episode only records generator_error)

    async def _call(self, method: str, *args: Any) -> Any:
        from rollout.generators.base import GeneratorError

        try:
            return await getattr(self.pool, method).remote(*args)
        except Exception as exc:  # noqa: BLE001
            self.last_error = str(_cause(exc))
            raise GeneratorError(f"generator pool failed: {self.last_error}") from exc

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation:
        gen = await self._call("generate", prompt, sampling)
        self.policy_version = gen.policy_version
        return gen

    async def load_weights(self, version: int, weights: dict[str, Any]) -> None:
        raise NotImplementedError("weights are loaded through the pool, not through a client")

    async def close(self) -> None:
        return None
