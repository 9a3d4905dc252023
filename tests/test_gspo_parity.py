"""Our GSPO loss against verl's `compute_policy_loss_gspo` (the verl extra): the same loss and the
same gradient, to 1e-6, for every aggregation both have, locally and with step-wide normalisers.

verl works on padded [B, T] tensors, we on packed [N] tokens with a sequence index; the same
sequences are given to both (padding is masked out on verl's side). The cases are random rollouts
with realistic shapes: sequences of different lengths, observation tokens masked out, log-ratios
inside and outside the clip range (and one past verl's numerical clamp at 10), advantages of both
signs, a sequence with no model tokens."""

import pytest
import torch

from learner.losses import PolicyLossConfig, get_loss

core_algos = pytest.importorskip("verl.trainer.ppo.core_algos", reason="the verl extra (scripts/install.sh installs it)")
from verl.workers.config.actor import ActorConfig  # noqa: E402
from verl.workers.config.actor import PolicyLossConfig as VerlPolicyLoss  # noqa: E402

#: ours → verl's name; both also share the per-step normaliser (ours `norm`, verl's global_batch_info)
MODES = ("seq-mean-token-mean", "token-mean", "seq-mean-token-sum")


def rollouts(seed: int, n_seq: int = 6, spread: float = 1e-3):
    """Per-sequence tensors: log-probs now and at rollout, loss mask, advantage."""
    g = torch.Generator().manual_seed(seed)
    seqs = []
    for i in range(n_seq):
        length = int(torch.randint(3, 40, (1,), generator=g))
        old = -torch.rand(length, generator=g, dtype=torch.float64) * 3
        new = old + torch.randn(length, generator=g, dtype=torch.float64) * spread
        mask = (torch.rand(length, generator=g) < 0.7).to(torch.float64)
        if i == n_seq - 1:
            mask.zero_()  # an episode whose model tokens were all cut: no loss, no gradient
        adv = float(torch.randn(1, generator=g))
        seqs.append((new, old, mask, adv))
    return seqs


def ours(seqs, cfg: PolicyLossConfig, norm):
    new = torch.cat([s[0] for s in seqs]).clone().requires_grad_(True)
    old = torch.cat([s[1] for s in seqs])
    mask = torch.cat([s[2] for s in seqs])
    seq = torch.cat([torch.full((len(s[0]),), i) for i, s in enumerate(seqs)])
    adv = torch.tensor([s[3] for s in seqs], dtype=torch.float64)
    loss, _ = get_loss("gspo")(new, old, adv, mask, seq, len(seqs), cfg, norm=norm)
    loss.backward()
    return loss.detach(), [g.clone() for g in new.grad.split([len(s[0]) for s in seqs])]


def verls(seqs, cfg: PolicyLossConfig, batch_info: dict):
    width = max(len(s[0]) for s in seqs)

    def padded(k):
        out = torch.zeros(len(seqs), width, dtype=torch.float64)
        for i, s in enumerate(seqs):
            out[i, : len(s[k])] = s[k]
        return out

    new = padded(0).requires_grad_(True)
    adv = torch.tensor([s[3] for s in seqs], dtype=torch.float64)[:, None].expand(-1, width)
    actor = ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1, clip_ratio=cfg.clip_low,
                        clip_ratio_low=cfg.clip_low, clip_ratio_high=cfg.clip_high, loss_agg_mode=cfg.aggregation,
                        policy_loss=VerlPolicyLoss(loss_mode="gspo"), global_batch_info=dict(batch_info))
    loss, _ = core_algos.compute_policy_loss_gspo(padded(1), new, adv, padded(2), loss_agg_mode=cfg.aggregation,
                                                  config=actor)
    loss.backward()
    return loss.detach(), [new.grad[i, : len(s[0])].clone() for i, s in enumerate(seqs)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("spread", [1e-4, 3e-3, 0.5])  # inside the clip range, outside, far outside
@pytest.mark.parametrize("step_wide", [False, True])
def test_gspo_loss_and_gradient_match_verl(mode, spread, step_wide):
    for seed in range(4):
        seqs = rollouts(seed, spread=spread)
        cfg = PolicyLossConfig(aggregation=mode)  # the paper's clip 3e-4 / 4e-4
        if not step_wide:
            norm, info = None, {}
        elif mode == "token-mean":  # the step's model tokens, this micro-batch one of several
            norm = float(sum(s[2].sum() for s in seqs)) * 3
            info = {"dp_size": 1, "batch_num_tokens": norm}
        else:  # the step's sequences
            norm, info = 20.0, {"dp_size": 1, "global_batch_size": 20}
        loss_a, grads_a = ours(seqs, cfg, norm)
        loss_b, grads_b = verls(seqs, cfg, info)
        assert loss_a.item() == pytest.approx(loss_b.item(), abs=1e-6, rel=1e-6), (mode, spread, seed)
        for a, b in zip(grads_a, grads_b, strict=True):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)
        assert any(g.abs().sum() > 0 for g in grads_a)  # a case with a gradient, not a vacuous match


def test_past_the_numerical_clamp_both_agree():
    """A sequence whose log-ratio is past 10 (a stale sample, a bad behaviour log-prob): the ratio is
    clamped at e^10 as verl does, so both give the same (clipped) loss instead of inf."""
    new = torch.tensor([-0.1, -0.2, -0.1], dtype=torch.float64)
    seqs = [(new, new - 12.0, torch.ones(3, dtype=torch.float64), -1.0), *rollouts(7, n_seq=3)]
    for mode in MODES:
        cfg = PolicyLossConfig(aggregation=mode)
        loss_a, grads_a = ours(seqs, cfg, None)
        loss_b, grads_b = verls(seqs, cfg, {})
        assert torch.isfinite(loss_a) and loss_a.item() == pytest.approx(loss_b.item(), rel=1e-6)
        for a, b in zip(grads_a, grads_b, strict=True):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)
