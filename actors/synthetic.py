"""A synthetic env worker: the env worker's interface (`ready`, `run`, `ping`, `close`) with no model,
sandbox or judge behind it, for the rollout manager's soak benchmark (bench/soak_bench.py) and its
tests at hundreds of episodes in flight.

Each `run(request)` sleeps a latency drawn from a long-tailed distribution and returns a small
trajectory. Everything it returns is a function of the request alone (its seed, its key and its
attempt), never of timing, so two runs with the same requests see the same trajectories:
- latency: lognormal (median `median_s`, `sigma`), with a `tail_p` chance of `tail_s` more;
- a generator error (`termination == "generator_error"`) with probability `generator_error_p` per
  attempt, and for `broken_p` of the keys on every attempt (their group fails);
- a verifier error (an infra cause: the judge crashed) with probability `verifier_error_p` per
  attempt, and for `judge_broken_p` of the keys on every attempt (masked after max_attempts);
- reward 1 with probability 1/2, or `pass_by_scale[scale]` (a scripted policy: solves v0, never v1);
  16 token ids from the seed.
`policy_version` is the version last given to `load_weights` (what a generator would report).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import random
import statistics

import msgspec
import ray

from schema.records import EpisodeRequest, Trajectory


class SyntheticSpec(msgspec.Struct, frozen=True):
    median_s: float = 0.02
    sigma: float = 0.6
    tail_p: float = 0.02
    tail_s: float = 0.5
    generator_error_p: float = 0.02
    broken_p: float = 0.002
    verifier_error_p: float = 0.02
    judge_broken_p: float = 0.0
    pass_by_scale: dict[str, float] = {}


_NORMAL = statistics.NormalDist()


def _unit(*parts: object) -> float:
    """A number in [0, 1) fixed by `parts`."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def synthetic_trajectory(req: EpisodeRequest, spec: SyntheticSpec, version: int) -> Trajectory:
    key = (req.group_id, req.sample_idx)
    rng = random.Random(req.seed if req.seed is not None else hash(key))
    tokens = [rng.randrange(1, 1000) for _ in range(16)]
    generator_failed = _unit("gen", *key, req.attempt) < spec.generator_error_p or _unit("broken", *key) < spec.broken_p
    verifier_failed = _unit("verifier", *key, req.attempt) < spec.verifier_error_p \
        or _unit("judge_broken", *key) < spec.judge_broken_p
    reward = 0.0 if verifier_failed else float(_unit("reward", *key) < spec.pass_by_scale.get(req.env.scale, 0.5))
    cause = "infra/generator_error" if generator_failed else "infra/judge_error" if verifier_failed \
        else "policy/solved" if reward else "policy/wrong_answer"
    return Trajectory(task_id=req.env.task_id, scale=req.env.scale, harness=req.harness, group_id=req.group_id,
                      sample_idx=req.sample_idx, policy_version=version, token_ids=tokens, loss_mask=[0] * 4 + [1] * 12,
                      logprobs=[0.0] * 4 + [-1.0] * 12, prompt_len=4, turns=[], final_answer="ANSWER: x",
                      termination="generator_error" if generator_failed else "answer", reward=reward, score=reward,
                      verifier_error="synthetic verifier error" if verifier_failed else None,
                      policy_versions=[version], cause=cause)


@ray.remote
class SyntheticEnvWorker:
    def __init__(self, spec: SyntheticSpec | None = None):
        self.spec = spec or SyntheticSpec()
        self.version = 0
        self.episodes = 0

    async def ready(self) -> str:
        return "synthetic"

    async def load_weights(self, version: int) -> int:
        self.version = version
        return version

    async def run(self, req: EpisodeRequest) -> Trajectory:
        s = self.spec
        u = _unit("latency", req.group_id, req.sample_idx, req.attempt)
        z = _NORMAL.inv_cdf(min(max(u, 1e-9), 1 - 1e-9))
        latency = s.median_s * math.exp(s.sigma * z) + (s.tail_s if _unit("tail", req.group_id, req.sample_idx) < s.tail_p else 0)
        await asyncio.sleep(latency)
        self.episodes += 1
        return synthetic_trajectory(req, s, self.version)

    async def ping(self) -> int:
        return self.episodes

    async def close(self) -> None:
        return None

