"""One judged episode in any environment: the only place that opens, drives, stops and judges one.

    traj = await run_episode(env, runtime, generator, renderer, "ptc")           # judged here
    traj = await run_episode(env, runtime, generator, renderer, "ptc",
                             judge=Shipped(call_judge))                           # judged on a Judge actor

The steps (envs/episode_env.py for the contract): open the environment in the runtime → the agent
loop (rollout/agent_loop.py) → stop the sandbox (nothing a program left running changes the state
after this) → the judging's `final` on the stopped state, within its deadline → close → the
judging's `verdict` → the trajectory with its verdict (schema/records.judged).

Limits: an episode takes the smaller of the run's and the environment's: turns (LoopLimits.max_turns
and the task's [limits] max_turns), the per-program timeout (the runtime's program_timeout_s and
the task's), and the environment's wall clock for the whole loop (Harbor's [agent] timeout_sec). The
harness tells the model the limits that apply (its tool description), so they are built here.

A generator, the environment and the judge can fail; none of it raises out of here except the
environment failing to open (the caller's scheduler re-runs such an episode): a failed generation
is the `generator_error` termination, a verifier that cannot judge is a `Verdict.failed`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from envs.episode_env import SNAPSHOT_TIMEOUT_S, EpisodeEnv, StateRefused
from envs.runtime.episode import Episode, Runtime, mark_cause
from rollout.agent_loop import ChatRenderer, run_agent
from rollout.generators.base import Generator
from rollout.harness import Harness
from schema.config import LoopLimits
from schema.records import EnvRef, SamplingParams, Trajectory, Verdict, judged, settle


class Judging(Protocol):
    """How an episode is judged: `final` runs on the stopped episode (before it closes), `verdict`
    after it closed (so a slow judge elsewhere does not hold the episode's folders)."""

    async def final(self, env: EpisodeEnv, episode: Episode, answer: str) -> Any: ...

    async def verdict(self, env: EpisodeEnv, final: Any, answer: str) -> Verdict: ...


class InProcess:
    """The verifier runs here, in a thread, on the live final state, within the environment's judge
    deadline (past it a Verdict error; the thread is left to end); a failure is settled by the kind's
    canary (schema.records.settle), within the deadline again: a canary past it keeps the failure the
    fabric's."""

    async def final(self, env: EpisodeEnv, episode: Episode, answer: str) -> Verdict:
        verdict = await self._within(env, env.judge, episode.final_state(), answer)
        if verdict.error is None:  # a verdict reached needs no canary (settle returns it as it is)
            return verdict
        return await self._within(env, settle, verdict, env.judge_canary)

    @staticmethod
    async def _within(env: EpisodeEnv, fn: Callable[..., Verdict], *args: Any) -> Verdict:
        """`fn(*args)` in a thread within the judge's deadline; a judge that raises is a judge error (a
        live judge reads what the policy left: settled by the canary, never an env worker's own error)."""
        try:
            return await asyncio.wait_for(asyncio.to_thread(fn, *args), env.judge_timeout_s)
        except TimeoutError:
            return Verdict.failed(f"the verifier did not finish within {env.judge_timeout_s:.0f} s", "infra/judge_timeout")
        except Exception as exc:  # noqa: BLE001 - the verdict says why; the episode is not lost
            return Verdict.failed(f"the verifier raised {type(exc).__name__}: {exc}", "infra/judge_error")

    async def verdict(self, env: EpisodeEnv, final: Verdict, answer: str) -> Verdict:
        return final


class Shipped:
    """The final state is snapshotted (bounded, within SNAPSHOT_TIMEOUT_S) and judged elsewhere by
    `call(ref, state, answer)` (a Judge actor). A state that cannot be shipped is the verdict."""

    def __init__(self, call: Callable[[EnvRef, bytes, str], Awaitable[Verdict]]):
        self.call = call

    async def final(self, env: EpisodeEnv, episode: Episode, answer: str) -> bytes | Verdict:
        try:
            return await asyncio.wait_for(asyncio.to_thread(env.snapshot, episode.final_state()), SNAPSHOT_TIMEOUT_S)
        except StateRefused as exc:
            return Verdict.failed(str(exc), "policy/state_refused")
        except TimeoutError:
            return Verdict.failed(f"the final state could not be shipped to a judge within {SNAPSHOT_TIMEOUT_S:.0f} s",
                                  "infra/snapshot_error")
        except Exception as exc:  # noqa: BLE001 - an unreadable state is the sample's verdict, not a lost sample
            cause = "policy/state_refused" if isinstance(exc, OSError) else "infra/snapshot_error"
            return Verdict.failed(f"the final state could not be shipped to a judge: {type(exc).__name__}: {exc}", cause)

    async def verdict(self, env: EpisodeEnv, final: bytes | Verdict, answer: str) -> Verdict:
        return final if isinstance(final, Verdict) else await self.call(env.ref, final, answer)


@dataclass(frozen=True)
class EpisodePlan:
    """Who writes one episode's model turns and under which loop limits and sampling: what a
    `TurnWriter` makes for an env worker, which then runs every plan the same way (run_episode)."""

    env: EpisodeEnv
    generator: Generator | Callable[[Episode], Generator]
    limits: LoopLimits | None = None
    sampling: SamplingParams | None = None


class TurnWriter(Protocol):
    """The generator seam of an env worker: a plan for one episode of `env` through `harness` — the
    policy (the generator pool) or a teacher (a library task's oracle: rollout/teacher.OracleTurns).
    An env worker holds one per name (EpisodeRequest.generator), so a new teacher is one more entry and
    no branch in the worker."""

    async def plan(self, env: EpisodeEnv, runtime: Runtime, harness: str, sampling: SamplingParams) -> EpisodePlan: ...


def _least(*values: float | None) -> float | None:
    given = [v for v in values if v is not None]
    return min(given) if given else None


async def run_episode(env: EpisodeEnv, runtime: Runtime, generator: Generator | Callable[[Episode], Generator],
                      renderer: ChatRenderer, harness: str, *,
                      group_id: str = "", sample_idx: int = 0, limits: LoopLimits | None = None,
                      sampling: SamplingParams | None = None, judge: Judging | None = None) -> Trajectory:
    """One judged episode (module docstring). `generator` is a Generator, or a callable that makes one
    from the open episode (the oracle teacher reads the kernel's final answer)."""
    limits = limits or LoopLimits()
    judge = judge or InProcess()
    config = runtime.config
    own = env.limits
    turns = int(_least(limits.max_turns, own.max_turns))
    program_timeout = float(_least(config.program_timeout_s, own.program_timeout_s))
    deadline = None if own.episode_timeout_s is None else time.monotonic() + own.episode_timeout_s
    tools = Harness(harness, max_output_chars=config.max_output_chars, program_timeout_s=program_timeout)
    t0 = time.monotonic()
    try:
        episode = await env.open(runtime)
    except Exception as exc:  # the runtime marks the step (sandbox, tool servers); anything else: the environment
        mark_cause(exc, "infra/env_open")
        raise
    try:
        if not isinstance(generator, Generator):  # made from the open episode (the oracle reads its kernel)
            generator = generator(episode)
        traj = await run_agent(generator, renderer, episode, tools, env.instruction, task_id=env.ref.task_id,
                               scale=env.ref.scale, group_id=group_id or f"{env.ref.task_id}-{env.ref.scale}",
                               sample_idx=sample_idx, limits=msgspec.structs.replace(limits, max_turns=turns),
                               sampling=sampling, deadline=deadline,
                               followup=lambda answer: env.next_instruction(episode, answer))
        await episode.stop()
        final = await judge.final(env, episode, traj.final_answer)
    finally:
        await episode.close()
    traj = judged(traj, await judge.verdict(env, final, traj.final_answer))
    traj.metrics["episode_s"] = time.monotonic() - t0  # open to verdict, this episode's wall time
    return traj
