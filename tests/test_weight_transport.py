"""The weight transports (rollout/weights/) end to end: a real torch learner actor after a GSPO step,
a real generator pool of transformers generators, real Ray; the collective over gloo (the NCCL path
is the same code on GPUs: bench/gpu_check.py).

After a transfer by each transport the generators' behaviour log-probs for a fixed sequence are the
learner's, and the version tag is the learner's; a generator killed mid-run comes back with the
current version (the collective forms a new group with it). The collective's own rules (deadlines,
tokens, buckets), which need no Ray: tests/test_weight_collective.py.
"""

import asyncio

import ray
import torch

from actors.generator_pool import GeneratorPool
from actors.learner_group import LearnerGroup, LearnerPlacement
from learner.batch import Sample
from learner.losses import PolicyLossConfig
from schema.config import GeneratorSpec, LearnerConfig, OptimConfig, WeightTransportConfig
from schema.records import Prompt, SamplingParams
from tests.test_learner_torch import groups
from tests.test_rollout import tiny_path  # noqa: F401

OBJECT_STORE = WeightTransportConfig()
COLLECTIVE = WeightTransportConfig(kind="collective", backend="gloo", bucket_mb=1, timeout_s=20)
CFG = LearnerConfig(loss=PolicyLossConfig(clip_low=0.2, clip_high=0.2), optim=OptimConfig(lr=5e-3))


async def _logprobs(pool, learner, seed: int) -> tuple[list[float], list[float], int]:
    """The generator's behaviour log-probs of its own sample, and the learner's for the same tokens."""
    prompt = list(range(10, 40))
    gen = await pool.generate.remote(Prompt(prompt), SamplingParams(temperature=1.0, max_new_tokens=8, seed=seed))
    ids = prompt + gen.token_ids
    [lp] = await learner.logprobs.remote([Sample(ids, [0] * len(prompt) + [1] * len(gen.token_ids))])
    return gen.logprobs, lp[len(prompt):], gen.policy_version


async def test_each_transport_gives_the_generators_the_learners_policy(ray_session, tiny_path):  # noqa: F811
    torch.set_num_threads(1)
    learner = LearnerGroup.options(num_cpus=0).remote(str(tiny_path), CFG, LearnerPlacement(cpus_per_rank=0, threads=1,
                                                                                           reserved=False))
    spec = GeneratorSpec(backend="transformers", num_cpus=0)
    pool = GeneratorPool.options(max_concurrency=1000).remote(spec, 2, str(tiny_path))
    try:
        await pool.ready.remote()
        base_gen, base_learner, v0 = await _logprobs(pool, learner, 1)
        assert v0 == 0
        metrics = await learner.train_step.remote(groups())  # one GSPO step: the policy moves
        assert metrics["groups"] == 2
        version = await learner.version.remote()
        assert version == 1
        _, moved, _ = await _logprobs(pool, learner, 1)  # same sample from the old generator weights
        assert max(abs(a - b) for a, b in zip(moved, base_learner, strict=True)) > 1e-3

        for transport in (OBJECT_STORE, COLLECTIVE):
            assert await pool.update_weights.remote(learner, transport) == version
            for seed in (2, 3):
                gen, ref, tag = await _logprobs(pool, learner, seed)
                assert tag == version
                assert max(abs(a - b) for a, b in zip(gen, ref, strict=True)) < 1e-4, transport.kind
            assert (await pool.health.remote())["versions"] == [version, version]

        # a second collective update reuses the group (same members, same epoch)
        epoch = (await pool.stats.remote())["weights_epoch"]
        await learner.train_step.remote(groups())
        assert await pool.update_weights.remote(learner, COLLECTIVE) == 2
        assert (await pool.stats.remote())["weights_epoch"] == epoch

        # a generator killed mid-run: its replacement joins a new group and serves the current version
        ray.kill((await pool.handles.remote())[0])
        outs = await asyncio.gather(*(pool.generate.remote(Prompt(list(range(10, 30))), SamplingParams(max_new_tokens=2,
                                                                                               seed=i))
                                      for i in range(4)))
        assert all(o.policy_version == 2 for o in outs)  # never the replacement's base weights
        for _ in range(300):
            stats = await pool.stats.remote()
            if stats["restarts"] == 1:
                break
            await asyncio.sleep(0.2)
        assert stats["restarts"] == 1
        assert (await pool.health.remote())["versions"] == [2, 2]
        assert (await pool.stats.remote())["weights_epoch"] == epoch + 1
        for seed in range(4, 8):  # least-loaded routing reaches both, the replacement included
            gen, ref, tag = await _logprobs(pool, learner, seed)
            assert tag == 2 and max(abs(a - b) for a, b in zip(gen, ref, strict=True)) < 1e-4
    finally:
        for h in [*(await pool.handles.remote()), pool, learner]:
            ray.kill(h)
