"""The weight transports (rollout/weights/) end to end: a real torch learner actor after a GSPO step,
a real generator pool of transformers generators, real Ray; the collective over gloo (the NCCL path
is the same code on GPUs: bench/gpu_check.py).

After a transfer by each transport the generators' behaviour log-probs for a fixed sequence are the
learner's, and the version tag is the learner's; a peer that never joins fails the update within
the deadline with an error that says so; a generator killed mid-run comes back with the current
version (the collective forms a new group with it).
"""

import asyncio
import time

import pytest
import ray
import torch

from actors.generator_pool import GeneratorPool
from actors.learner_group import LearnerGroup, LearnerPlacement
from learner.batch import Sample
from learner.losses import PolicyLossConfig
from rollout.weights.base import WeightTransferError
from rollout.weights.collective import CollectiveReceiver, CollectiveSender, pack, plan_buckets, unpack
from schema.config import GeneratorSpec, LearnerConfig, OptimConfig, WeightTransportConfig
from schema.records import Prompt, SamplingParams
from tests.test_learner_torch import groups
from tests.test_rollout import tiny_path  # noqa: F401

OBJECT_STORE = WeightTransportConfig()
COLLECTIVE = WeightTransportConfig(kind="collective", backend="gloo", bucket_mb=1, timeout_s=20)
CFG = LearnerConfig(loss=PolicyLossConfig(clip_low=0.2, clip_high=0.2), optim=OptimConfig(lr=5e-3))


def test_buckets_pack_every_dtype_and_respect_the_bound():
    weights = {"a": torch.randn(300_000), "b": torch.ones(3, 5, dtype=torch.bfloat16),
               "c": torch.tensor(7, dtype=torch.int64), "d": torch.randn(70, 3).half(), "e": torch.randn(10)}
    buckets = plan_buckets(weights, 1 << 20)
    assert [m.name for b in buckets for m in b] == list(weights)  # in order, each once
    assert len(buckets) == 2  # "a" (1.2 MB) alone: larger than a bucket
    got = {}
    for b in buckets:
        got.update(unpack(pack(weights, b, "cpu"), b))
    assert all(got[k].dtype == v.dtype and torch.equal(got[k], v) for k, v in weights.items())


def test_a_peer_that_never_joins_fails_within_the_deadline():
    weights = {"w": torch.zeros(4)}
    sender = CollectiveSender(WeightTransportConfig(kind="collective", backend="gloo", timeout_s=2))
    update = sender.offer(1, weights, epoch=1, world_size=2)
    start = time.monotonic()
    with pytest.raises(WeightTransferError, match="did not form within 2 s.*some never joined"):
        sender.send(update)
    assert time.monotonic() - start < 30  # the deadline held; nothing hangs
    # the receiving side alone: its learner never comes
    lonely = sender.offer(1, weights, epoch=2, world_size=2)
    sender._drop()  # nobody listens at that address any more
    start = time.monotonic()
    with pytest.raises(WeightTransferError, match="rank 1 waited"):
        list(CollectiveReceiver().receive(lonely, 1))
    assert time.monotonic() - start < 30


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


def test_a_failed_update_closes_only_its_own_group():
    """A retried update (a new epoch) can start while the failed one still waits out its deadline in
    another thread; the failed one must not close the group the new one formed."""
    import threading

    cfg = WeightTransportConfig(kind="collective", backend="gloo", timeout_s=4)
    weights = {"w": torch.arange(4.0)}
    recv = CollectiveReceiver()
    dead = CollectiveSender(cfg)
    stale = dead.offer(1, weights, epoch=1, world_size=2)
    dead._drop()  # its learner never comes
    errors = []

    def stale_receive():
        try:
            list(recv.receive(stale, 1))
        except WeightTransferError as exc:
            errors.append(exc)

    waiting = threading.Thread(target=stale_receive)
    waiting.start()
    time.sleep(0.5)
    sender = CollectiveSender(cfg)
    for version in (2, 3):
        update = sender.offer(version, weights, epoch=2, world_size=2)
        send = threading.Thread(target=sender.send, args=(update,))
        send.start()
        got = {}
        for part in recv.receive(update, 1):
            got.update(part)
        send.join()
        assert torch.equal(got["w"], weights["w"])
        if version == 2:
            waiting.join()  # the stale update fails now, after the new group formed
    assert errors and recv.group is not None and recv.group.epoch == 2


def test_a_peer_without_the_groups_token_cannot_join_or_send():
    """The store is a TCP listener anyone who reaches the node can connect to (a sandbox with the host's
    network, another tenant): without the group's token a peer finds none of its keys, so it neither
    joins nor stands in for the learner; the real members' update goes through beside it."""
    import threading

    import msgspec

    cfg = WeightTransportConfig(kind="collective", backend="gloo", timeout_s=4)
    weights = {"w": torch.arange(6.0)}
    sender = CollectiveSender(cfg)
    update = sender.offer(1, weights, epoch=1, world_size=2)
    assert update.host != "" and len(update.token) == 32
    assert sender.listen.getsockname()[0] == update.host  # the node's address, not every interface
    # an intruder claims rank 1 with a guessed token; the real receiver comes too
    forged = msgspec.structs.replace(update, token="0" * 32)
    intruder_errors = []

    def intrude():
        try:
            list(CollectiveReceiver().receive(forged, 1))
        except WeightTransferError as exc:
            intruder_errors.append(exc)

    intruder = threading.Thread(target=intrude)
    intruder.start()
    send = threading.Thread(target=sender.send, args=(update,))
    send.start()
    got = {}
    for part in CollectiveReceiver().receive(update, 1):
        got.update(part)
    send.join()
    intruder.join()
    assert torch.equal(got["w"], weights["w"])
    assert intruder_errors and "did not form" in str(intruder_errors[0])
    # a sender without the token: the receiver never takes its data
    rogue = CollectiveSender(cfg)
    rogue_update = rogue.offer(2, {"w": torch.full((6,), 666.0)}, epoch=2, world_size=2)
    victim_view = msgspec.structs.replace(rogue_update, token=update.token)  # what the receiver was told
    threading.Thread(target=lambda: pytest.raises(WeightTransferError, rogue.send, rogue_update), daemon=True).start()
    with pytest.raises(WeightTransferError):
        list(CollectiveReceiver().receive(victim_view, 1))
