"""GSPO / GRPO / SFT losses against hand-computed values, finite differences and masking."""

import math

import pytest
import torch

from learner.losses import (
    PolicyLossConfig,
    equal_reward_groups,
    get_loss,
    group_advantages,
    register_loss,
)

CFG = PolicyLossConfig()  # paper: clip 3e-4 / 4e-4, seq-mean-token-mean


def flat(rows):
    """[[...], [...]] per-sequence lists -> flat tensor + seq index."""
    vals = torch.tensor([v for r in rows for v in r], dtype=torch.float64)
    seq = torch.tensor([i for i, r in enumerate(rows) for _ in r])
    return vals, seq


def test_gspo_matches_hand_computation():
    logp, seq = flat([[-1.0, -2.0, -0.5], [-0.3, -0.2]])
    old, _ = flat([[-1.0, -2.0, -0.5004], [-0.3, -0.2]])
    mask, _ = flat([[1, 1, 0], [1, 1]])  # the third token of sequence 0 is an observation
    adv = torch.tensor([1.0, -0.5], dtype=torch.float64)
    loss, stats = get_loss("gspo")(logp, old, adv, mask, seq, 2, CFG)
    # sequence 0: masked mean log-ratio over tokens 0,1 = 0 -> s = 1 -> loss_t = -A*1 = -1 (mean -1)
    # sequence 1: log-ratio 0 -> s = 1 -> loss_t = +0.5 (mean 0.5); seq-mean = (-1 + 0.5) / 2
    assert loss.item() == pytest.approx(-0.25)
    # a ratio outside the clip range is clipped for a positive advantage
    old2, _ = flat([[-1.01, -2.01, -0.5], [-0.3, -0.2]])
    loss2, stats2 = get_loss("gspo")(logp, old2, adv, mask, seq, 2, CFG)
    s0 = math.exp(0.01)  # > 1 + 4e-4 -> clipped to 1.0004 for A = +1: max(-s0, -1.0004) = -1.0004
    assert loss2.item() == pytest.approx(((-1.0004) + 0.5) / 2)
    assert stats2["clip_frac"] == pytest.approx(2 / 4) and stats2["seq_ratio_max"] == pytest.approx(s0)


def test_grpo_matches_hand_computation():
    logp, seq = flat([[-1.0, -2.0], [-0.3]])
    old, _ = flat([[-1.0001, -2.0], [-0.3]])
    mask, _ = flat([[1, 1], [1]])
    adv = torch.tensor([2.0, -1.0], dtype=torch.float64)
    cfg = PolicyLossConfig(name="grpo", clip_low=0.2, clip_high=0.2, aggregation="token-mean")
    loss, _ = get_loss("grpo")(logp, old, adv, mask, seq, 2, cfg)
    r0 = math.exp(0.0001)
    assert loss.item() == pytest.approx((-2 * r0 - 2 * 1 + 1 * 1) / 3)


@pytest.mark.parametrize("name", ["gspo", "grpo"])
def test_gradient_matches_finite_differences(name):
    torch.manual_seed(0)
    n = [4, 3]
    logp, seq = flat([[-1.0 - 0.1 * i for i in range(k)] for k in n])
    logp = logp + 0.01 * torch.randn_like(logp)
    old = logp.detach() + 1e-5 * torch.randn_like(logp)  # inside the clip range
    mask, _ = flat([[1, 1, 0, 1], [1, 0, 1]])
    adv = torch.tensor([0.7, -1.3], dtype=torch.float64)
    cfg = PolicyLossConfig(name=name, clip_low=0.2, clip_high=0.2)
    fn = get_loss(name)
    x = logp.clone().requires_grad_(True)
    loss, _ = fn(x, old, adv, mask, seq, 2, cfg)
    (grad,) = torch.autograd.grad(loss, x)
    h = 1e-6
    for i in range(len(logp)):
        e = torch.zeros_like(logp)
        e[i] = h
        fd = (fn(logp + e, old, adv, mask, seq, 2, cfg)[0] - fn(logp - e, old, adv, mask, seq, 2, cfg)[0]) / (2 * h)
        assert grad[i].item() == pytest.approx(fd.item(), abs=1e-6), i
    assert all(grad[mask == 0] == 0)  # observation tokens get no gradient


def test_masked_tokens_get_no_gradient_through_the_model():
    torch.manual_seed(0)
    vocab, T = 11, 6
    logits = torch.randn(T, vocab, requires_grad=True)
    targets = torch.randint(0, vocab, (T,))
    mask = torch.tensor([0, 1, 1, 0, 0, 1.0])
    seq = torch.zeros(T, dtype=torch.long)
    from learner.losses import token_logprobs

    logp = token_logprobs(logits, targets)
    loss, _ = get_loss("gspo")(logp, logp.detach(), torch.tensor([1.0]), mask, seq, 1, CFG)
    loss.backward()
    assert logits.grad[mask == 0].abs().max() == 0 and logits.grad[mask == 1].abs().max() > 0
    logits.grad = None
    sft, _ = get_loss("sft")(token_logprobs(logits, targets), mask, seq, 1)
    sft.backward()
    assert logits.grad[mask == 0].abs().max() == 0
    assert sft.item() == pytest.approx(-(token_logprobs(logits, targets) * mask).sum().item() / 3)


def test_group_advantages_and_equal_reward_filter():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    gids = ["a", "a", "a", "b", "b", "c"]
    adv = group_advantages(rewards, gids, eps=0.0)
    std_a = torch.tensor([1.0, 0.0, 0.0]).std().item()
    assert adv[0].item() == pytest.approx((1 - 1 / 3) / std_a)
    assert adv[1].item() == pytest.approx((0 - 1 / 3) / std_a)
    assert adv[3:].tolist() == [0.0, 0.0, 0.0]  # equal rewards, and a group of one, carry no signal
    assert equal_reward_groups(rewards, gids) == {"b", "c"}


def test_micro_batch_normaliser_adds_up():
    logp, seq = flat([[-1.0, -2.0], [-0.3, -0.2, -0.1]])
    old = logp + 1e-5
    mask, _ = flat([[1, 1], [1, 0, 1]])
    adv = torch.tensor([0.5, -1.0], dtype=torch.float64)
    whole, _ = get_loss("gspo")(logp, old, adv, mask, seq, 2, CFG)
    part0, _ = get_loss("gspo")(logp[:2], old[:2], adv, mask[:2], seq[:2], 2, CFG, norm=2)
    part1, _ = get_loss("gspo")(logp[2:], old[2:], adv, mask[2:], seq[2:], 2, CFG, norm=2)
    assert (part0 + part1).item() == pytest.approx(whole.item())


def test_registry():
    with pytest.raises(KeyError, match="registered: .*gspo"):
        get_loss("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_loss("gspo")(lambda: None)


def test_negative_advantage_scale_keeps_positive_advantages():
    from types import SimpleNamespace

    from learner.batch import rl_samples

    def traj(gid, k, r):
        return SimpleNamespace(token_ids=[1, 2, 3], loss_mask=[0, 1, 1], logprobs=[0.0, -1.0, -1.0], reward=r,
                               group_id=gid, sample_idx=k)

    groups = [[traj("a", 0, 1.0), traj("a", 1, 0.0), traj("a", 2, 0.0)], [traj("b", 0, 1.0), traj("b", 1, 1.0)]]
    full, _ = rl_samples(groups, PolicyLossConfig())
    scaled, m = rl_samples(groups, PolicyLossConfig(negative_advantage_scale=0.25, filter_equal_reward_groups=True))
    assert m["groups_filtered"] == 1.0 and len(scaled) == 3  # group b has no signal
    assert [s.advantage for s in scaled] == pytest.approx(
        [full[0].advantage, 0.25 * full[1].advantage, 0.25 * full[2].advantage])
    assert full[0].advantage > 0 > full[1].advantage
