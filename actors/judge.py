"""Judges: the verifiers of shipped final states, outside any model sandbox.

One method for every kind of environment: `judge(ref, state, answer)` loads the environment `ref`
names (envs/episode_env.load_env) and returns `env.judge_shipped(state, answer)` settled by the kind's
canary when it failed (envs/episode_env.judge_settled: whose the failure is), which never raises
and keeps its own deadline (a library task's verifier in a forked child, a Harbor task's tests/test.sh
killed at its timeout). An environment that no longer loads is a recorded verifier error too, so a
judge never loses a sample and a verifier never takes the judge down.

The environments' initial states (what a library verifier compares against) are built on demand,
once per (task, scale), into this judge's own cache folder.
"""

from __future__ import annotations

import asyncio
import random

import ray

from envs.episode_env import judge_settled
from envs.kinds import load_env
from envs.runtime import scratch
from schema.records import EnvRef, Verdict


def judge_shipped(ref: EnvRef, state: bytes, answer: str, timeout_s: float, cache_root: str) -> Verdict:
    """The verdict of a shipped final state, in this process (the Judge actor runs it in a thread)."""
    from envs.format.task_env import EnvironmentCache

    try:
        env = load_env(ref, EnvironmentCache(cache_root), judge_timeout_s=timeout_s)
    except Exception as exc:  # noqa: BLE001 - TaskLoadError, HarborTaskError, a library gone from this node
        return Verdict.failed(f"{type(exc).__name__}: {exc}", "infra/judge_error")
    return judge_settled(env, state, answer)


@ray.remote(max_restarts=-1)
class Judge:
    def __init__(self, timeout_s: float = 60.0, inject_errors: float = 0.0, seed: int = 0):
        """`inject_errors`: this share of verdicts fail as a crashed verifier's would (fabric.inject_judge_errors:
        fault-tolerance tests and benches), drawn from a generator seeded with `seed`."""
        self.timeout_s = timeout_s  # a library verifier's deadline (a Harbor task's is its own)
        self.cache_root = str(scratch.make("progagent-judge-"))
        self.judged = 0
        self.inject_errors = inject_errors
        self.faults = random.Random(seed)
        self.injected = 0

    async def judge(self, ref: EnvRef, state: bytes, answer: str) -> Verdict:
        self.judged += 1
        if self.inject_errors and self.faults.random() < self.inject_errors:
            self.injected += 1
            return Verdict.failed("injected: the verifier crashed (fabric.inject_judge_errors)", "infra/judge_error")
        return await asyncio.to_thread(judge_shipped, ref, state, answer, self.timeout_s, self.cache_root)

    async def injected_errors(self) -> int:
        return self.injected

    async def ping(self) -> int:
        return self.judged
