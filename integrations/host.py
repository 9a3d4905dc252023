"""What runs ProgAgent episodes inside another framework's worker process, whichever framework it is.

    machinery = await shared(HostLoopConfig(...), load_tokenizer)   # this event loop's, made once
    ref = machinery.catalog.resolve(row_env)                          # a row's names -> the operator's ref
    traj = await machinery.episode(ref, generator, "ptc", limits=..., sampling=..., group_id=...)

A host framework (verl's agent loop, a verifiers harness) makes a new object per sample, so what is
costly lives per process and event loop: the PTC runtime with its warm pool of sandboxed kernels, the
environment cache, the renderer, the episode slots. The first episode of a process checks that the node
can sandbox at all (envs/runtime/preflight.py) and fails with the fix named when it cannot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from envs.episode_env import EpisodeEnv, judge_settled
from envs.format.task_env import EnvironmentCache
from envs.kinds import load_env
from envs.runtime.episode import Runtime
from envs.runtime.preflight import check_host
from envs.sources import Catalog
from integrations.sources import episode_sources
from rollout.agent_loop import ChatRenderer
from rollout.episode import InProcess, Judging, Shipped, run_episode
from rollout.generators.base import Generator
from schema.config import HostLoopConfig, LoopLimits
from schema.load import ConfigError
from schema.records import EnvRef, SamplingParams, Trajectory

log = logging.getLogger(__name__)


@dataclass
class Machinery:
    """One worker process's (one event loop's) episode machinery."""

    config: HostLoopConfig
    runtime: Runtime
    cache: EnvironmentCache
    catalog: Catalog  # the environments a row may name (HostLoopConfig.config / sources / library)
    renderer: ChatRenderer
    stop_ids: frozenset[int]  # the tokens that end a model turn (a token generator's `stop`)
    vocab: int  # token ids are in [0, vocab)
    slots: asyncio.Semaphore

    async def episode(self, ref: EnvRef, generator: Generator, harness: str, *, limits: LoopLimits,
                      sampling: SamplingParams, group_id: str) -> Trajectory:
        """One judged episode of `ref` in a slot of this worker (at most `max_episodes` at once)."""
        async with self.slots:
            env = await asyncio.to_thread(load_env, ref, self.cache, judge_timeout_s=self.config.judge_timeout_s)
            return await run_episode(env, self.runtime, generator, self.renderer, harness, group_id=group_id,
                                     limits=limits, sampling=sampling, judge=judging(env))


_made: dict[asyncio.AbstractEventLoop, Machinery] = {}
_starting: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}


async def shared(config: HostLoopConfig, load_tokenizer: Callable[[], Any]) -> Machinery:
    """This event loop's machinery, made by its first episode (the first config wins; a later sample
    with other settings is told so in the log). `load_tokenizer` runs then, once, in a thread."""
    loop = asyncio.get_running_loop()
    lock = _starting.setdefault(loop, asyncio.Lock())
    async with lock:
        have = _made.get(loop)
        if have is not None:
            if have.config != config:
                log.warning("progagent: this worker runs with its first settings %s, not %s", have.config, config)
            return have
        await asyncio.to_thread(check_host, config.runtime, where="the progagent runtime settings")
        catalog = Catalog(await asyncio.to_thread(
            episode_sources, config=config.config or None, only=config.sources or None, library=config.library or None))
        tokenizer = await asyncio.to_thread(load_tokenizer)
        renderer = ChatRenderer(tokenizer)
        end = tokenizer.convert_tokens_to_ids(renderer.end_text)
        stop_ids = frozenset(i for i in (end, tokenizer.eos_token_id) if isinstance(i, int))
        runtime = await Runtime(config.runtime).start(wait=False)
        made = Machinery(config, runtime, EnvironmentCache(), catalog, renderer, stop_ids, len(tokenizer),
                         asyncio.Semaphore(config.max_episodes))
        _made[loop] = made
        return made


async def close_shared() -> None:
    """Close this event loop's machinery (tests; a worker process's kernels otherwise end with it)."""
    loop = asyncio.get_running_loop()
    made = _made.pop(loop, None)
    _starting.pop(loop, None)
    if made is not None:
        await made.runtime.close()


def host_config(settings: dict[str, Any], where: str) -> HostLoopConfig:
    """A host framework's settings for ProgAgent as HostLoopConfig; an unknown key or a bad value is a
    ConfigError naming `where` (the host's config key) and the field."""
    try:
        return msgspec.convert(settings, HostLoopConfig, strict=False)
    except (msgspec.ValidationError, ValueError, TypeError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def judging(env: EpisodeEnv) -> Judging:
    """Judged in this worker: on the live state when only that can be judged (LOCA-bench), else from
    the stopped episode's bounded snapshot by the environment's own shipped judge (a library task's
    verifier in a forked child that is killed at its deadline: a verifier that hangs costs this worker
    nothing)."""
    if env.judged_in_place:
        return InProcess()
    return Shipped(lambda ref, state, answer: asyncio.to_thread(judge_settled, env, state, answer))
