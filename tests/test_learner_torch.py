"""The torch learner on the tiny model: packing, micro-batching, GSPO steps, SFT, checkpoints."""

import pytest
import torch

from learner.batch import Sample, pack
from learner.losses import PolicyLossConfig
from learner.sft import run_sft
from learner.torch_backend import TorchLearner
from schema.config import LearnerConfig, OptimConfig, SFTConfig
from schema.records import Trajectory
from tests.test_rollout import tiny_path  # noqa: F401


def make_traj(i: int, group: str, reward: float, length: int = 40, prompt: int = 12, vocab: int = 4000) -> Trajectory:
    g = torch.Generator().manual_seed(1000 + i)
    ids = torch.randint(10, vocab, (length,), generator=g).tolist()
    mask = [0] * prompt + [1 if (k // 7) % 2 == 0 else 0 for k in range(length - prompt)]
    lps = [(-5.0 - 0.01 * k) if m else 0.0 for k, m in enumerate(mask)]
    return Trajectory(task_id="t", scale="v0", harness="ptc", group_id=group, sample_idx=i, policy_version=0,
                      token_ids=ids, loss_mask=mask, logprobs=lps, prompt_len=prompt, turns=[], final_answer="",
                      termination="answer", reward=reward)


def groups():
    return [[make_traj(0, "a", 1.0), make_traj(1, "a", 0.0, 33), make_traj(2, "a", 0.0, 51)],
            [make_traj(3, "b", 1.0, 28), make_traj(4, "b", 1.0, 45)]]


def params(learner):
    return {k: v.detach().clone() for k, v in learner.model.state_dict().items()}


def test_packed_rows_equal_separate_forwards(tiny_path):  # noqa: F811
    """Packed rows under the block mask (the GPU's rule without flash attention) give each sequence's
    log-probs as its own row does (CPU's rule: one sequence per row, see TorchLearner._rows)."""
    learner = TorchLearner(tiny_path, LearnerConfig(max_tokens_per_micro_batch=4096))
    samples = [Sample(t.token_ids, t.loss_mask, t.logprobs) for g in groups() for t in g]
    assert len(pack(samples, 4096)) == 1
    assert learner._rows(samples)[1] == len(samples)  # on CPU: a row per sequence
    separate = learner.logprobs(samples)
    learner._packs = True  # as on a GPU: one packed row, the block mask
    assert learner._rows(samples)[1] == 1
    packed = learner.logprobs(samples)
    for a, b in zip(packed, separate, strict=True):
        assert torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-5)


def test_micro_batches_give_the_same_step(tiny_path):  # noqa: F811
    cfg = PolicyLossConfig(clip_low=0.2, clip_high=0.2)
    results = []
    for budget in (4096, 60):
        learner = TorchLearner(tiny_path, LearnerConfig(loss=cfg, optim=OptimConfig(lr=1e-3),
                                                        max_tokens_per_micro_batch=budget))
        learner._packs = budget == 4096  # one packed row, as on a GPU, against CPU's row per sequence
        metrics = learner.train_step(groups())
        results.append((params(learner), metrics))
    (p1, m1), (p2, m2) = results
    # Adam normalises the first step, so float noise in near-zero gradients shows up at ~1e-5 of lr 1e-3
    assert all(torch.allclose(p1[k], p2[k], atol=5e-5) for k in p1)
    assert m1["loss"] == pytest.approx(m2["loss"], abs=1e-6)
    assert m1["groups"] == 2 and m1["sequences"] == 5


def test_gspo_step_metrics_and_equal_group_filter(tiny_path):  # noqa: F811
    learner = TorchLearner(tiny_path, LearnerConfig(loss=PolicyLossConfig(filter_equal_reward_groups=True,
                                                                          tis_cap=2.0)))
    before = params(learner)
    m = learner.train_step(groups())
    assert m["groups_filtered"] == 1 and m["sequences"] == 3  # group "b" has equal rewards
    # behaviour log-probs (fake, -5) differ from the learner's: the mismatch is measured
    assert m["logprob_mismatch_abs_mean"] > 0.5 and m["behaviour_ratio_max"] > 0
    assert m["seq_ratio_mean"] == pytest.approx(1.0)  # π_old is the learner itself before this step
    assert learner.version == 1 and any(not torch.equal(before[k], v) for k, v in params(learner).items())
    weights = params(learner)
    only_equal = learner.train_step([groups()[1]])
    # no signal: no optimizer step (the weights stay), but the version counts the step for admission
    assert only_equal["skipped"] == 1.0 and learner.version == 2 and learner.step == 1
    assert all(torch.equal(weights[k], v) for k, v in params(learner).items())


def test_resumed_learner_takes_the_same_next_step(tiny_path, tmp_path):  # noqa: F811
    cfg = LearnerConfig(optim=OptimConfig(lr=1e-3, warmup_steps=3))
    a = TorchLearner(tiny_path, cfg)
    a.train_step(groups())
    a.train_step(groups())
    a.save(tmp_path / "ckpt")
    torch.rand(3)  # the RNG moves on in the original process; the checkpoint restored it
    a.load(tmp_path / "ckpt")
    a.train_step(groups())
    b = TorchLearner(tiny_path, cfg)
    b.load(tmp_path / "ckpt")
    assert b.step == 2 and b.version == 2
    b.train_step(groups())
    pa, pb = params(a), params(b)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)
    assert a.scheduler.get_last_lr() == b.scheduler.get_last_lr()


def test_checkpoint_taken_right_after_an_optimizer_reset_resumes_exactly(tiny_path, tmp_path):  # noqa: F811
    """SFT ends with a fresh optimizer for RL; a checkpoint then holds no Adam moments, and the resumed
    learner must not invent zero ones at step 1 (its bias correction would differ)."""
    cfg = LearnerConfig(optim=OptimConfig(lr=1e-3))
    a = TorchLearner(tiny_path, cfg)
    a.train_step(groups())
    a.reset_optimizer(cfg.optim.lr)
    a.save(tmp_path / "ckpt")
    a.train_step(groups())
    b = TorchLearner(tiny_path, cfg)
    b.load(tmp_path / "ckpt")
    b.train_step(groups())
    pa, pb = params(a), params(b)
    assert all(torch.equal(pa[k], pb[k]) for k in pa)


def test_sft_lowers_the_loss_on_model_tokens_only(tiny_path):  # noqa: F811
    learner = TorchLearner(tiny_path, LearnerConfig(), lr=3e-3)
    data = [Sample(t.token_ids, t.loss_mask, None) for g in groups() for t in g]
    history = run_sft(learner, data, SFTConfig(epochs=6, batch_size=2, lr=3e-3))
    assert len(history) == 6 * 3
    first = sum(h["sft_loss"] for h in history[:3])
    last = sum(h["sft_loss"] for h in history[-3:])
    assert last < first * 0.8
    # weights(): versioned CPU copy for the generators
    version, weights = learner.weights()
    assert version == 18 and all(t.device.type == "cpu" for t in weights.values())
