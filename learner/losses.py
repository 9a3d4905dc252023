"""Policy losses, found by name in a registry (`register_loss`), and group-relative advantages.

Shapes: per-token tensors are flat [N] (sequences packed end to end), with `seq` [N] giving each
token's sequence index and `mask` 1 on the model's own tokens (the loss mask) and 0 on prompt,
observations and padding. A sequence is never split, so per-sequence ratios are exact. `norm` is
the step-wide normaliser, so micro-batches add up to exactly the loss of the whole step.

Group-relative advantage (GRPO/GSPO):   A_i = (r_i − mean_{j∈g(i)} r_j) / (std_{j∈g(i)} r_j + ε)

GSPO (Zheng et al. 2025), as verl's `compute_policy_loss_gspo`:
    log s_i     = Σ_t m_t (log πθ_t − log π_old_t) / Σ_t m_t              (sequence ratio)
    log s_{i,t} = log πθ_t − sg(log πθ_t) + sg(log s_i)                    (token form: value s_i,
                                                                             gradient of log πθ_t;
                                                                             clamped at 10)
    ℓ_{i,t}     = max(−A_i s_{i,t}, −A_i clip(s_{i,t}, 1 − ε_low, 1 + ε_high))
    loss        = mean_i ( Σ_t m_t ℓ_{i,t} / Σ_t m_t )                     (seq-mean-token-mean)
Paper defaults: ε_low 3e-4, ε_high 4e-4, no KL.

GRPO: token-level ratio r_{i,t} = exp(log πθ_t − log π_old_t) with the same clipped surrogate.
SFT: masked cross-entropy, −log πθ_t over the model's own tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from schema.config import PolicyLossConfig  # noqa: F401 - the loss functions' knobs, kept importable from here

LossFn = Callable[..., tuple[torch.Tensor, dict[str, float]]]
LOSSES: dict[str, LossFn] = {}


def register_loss(name: str) -> Callable[[LossFn], LossFn]:
    def deco(fn: LossFn) -> LossFn:
        if name in LOSSES:
            raise ValueError(f"loss {name!r} is already registered")
        LOSSES[name] = fn
        return fn

    return deco


def get_loss(name: str) -> LossFn:
    if name not in LOSSES:
        raise KeyError(f"unknown loss {name!r}; registered: {', '.join(sorted(LOSSES))}")
    return LOSSES[name]


def seq_sum(x: torch.Tensor, seq: torch.Tensor, n_seq: int) -> torch.Tensor:
    """Σ over the tokens of each sequence: flat [N] values, [N] sequence indices → [n_seq]."""
    return torch.zeros(n_seq, dtype=x.dtype, device=x.device).index_add(0, seq, x)


def aggregate(loss: torch.Tensor, mask: torch.Tensor, seq: torch.Tensor, n_seq: int, how: str,
              norm: float | None = None) -> torch.Tensor:
    """Reduce per-token losses; `norm` counts sequences (or tokens, for token-mean) of the step."""
    maskf = mask.to(loss.dtype)
    if how == "token-mean":
        return (loss * maskf).sum() / (norm if norm is not None else maskf.sum().clamp(min=1))
    per_seq = seq_sum(loss * maskf, seq, n_seq)
    count = seq_sum(maskf, seq, n_seq)
    if how == "seq-mean-token-mean":
        per_seq = per_seq / count.clamp(min=1)
    elif how != "seq-mean-token-sum":
        raise ValueError(f"unknown aggregation {how!r}")
    denom = norm if norm is not None else (count > 0).sum().clamp(min=1)
    return per_seq.sum() / denom


def group_advantages(rewards: torch.Tensor, group_ids: list[Any], eps: float = 1e-6,
                     std_normalize: bool = True) -> torch.Tensor:
    """A_i per sequence. A group of one, or one whose rewards are all equal, gets A = 0."""
    adv = torch.zeros(len(group_ids), dtype=torch.float32)
    groups: dict[Any, list[int]] = {}
    for i, g in enumerate(group_ids):
        groups.setdefault(g, []).append(i)
    for idx in groups.values():
        r = rewards[idx].float()
        centred = r - r.mean()
        if std_normalize:
            std = r.std(unbiased=True) if len(idx) > 1 else torch.tensor(0.0)
            centred = centred / (std + eps) if (std + eps) > 0 else torch.zeros_like(centred)
        adv[idx] = centred
    return adv


def equal_reward_groups(rewards: torch.Tensor, group_ids: list[Any]) -> set[Any]:
    """Groups whose rewards are all equal: no learning signal under group-relative advantages."""
    by: dict[Any, list[float]] = {}
    for r, g in zip(rewards.tolist(), group_ids, strict=True):
        by.setdefault(g, []).append(r)
    return {g for g, rs in by.items() if max(rs) == min(rs)}


def _clipped_surrogate(ratio: torch.Tensor, adv: torch.Tensor, cfg: PolicyLossConfig
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    unclipped = -adv * ratio
    clipped = -adv * torch.clamp(ratio, 1 - cfg.clip_low, 1 + cfg.clip_high)
    return torch.maximum(unclipped, clipped), (clipped > unclipped)


@register_loss("gspo")
def gspo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
              seq: torch.Tensor, n_seq: int, cfg: PolicyLossConfig, norm: float | None = None,
              weights: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    maskf = mask.to(logp.dtype)
    count = seq_sum(maskf, seq, n_seq)
    seq_log_ratio = seq_sum((logp - old_logp) * maskf, seq, n_seq) / count.clamp(min=1)
    log_ratio_tok = logp - logp.detach() + seq_log_ratio.detach()[seq]
    # clamped at 10 as verl's compute_policy_loss_gspo (numerical safety: e^10 is far past any clip range)
    loss_tok, was_clipped = _clipped_surrogate(torch.exp(log_ratio_tok.clamp(max=10.0)), advantages[seq], cfg)
    if weights is not None:
        loss_tok = loss_tok * weights
    loss = aggregate(loss_tok, mask, seq, n_seq, cfg.aggregation, norm)
    has = count > 0
    seq_ratio = torch.exp(seq_log_ratio.detach())[has] if has.any() else seq_log_ratio.new_ones(1)
    return loss, {"clip_frac": ((was_clipped.to(logp.dtype) * maskf).sum() / maskf.sum().clamp(min=1)).item(),
                  "seq_ratio_mean": seq_ratio.mean().item(), "seq_ratio_max": seq_ratio.max().item(),
                  "seq_ratio_min": seq_ratio.min().item()}


@register_loss("grpo")
def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
              seq: torch.Tensor, n_seq: int, cfg: PolicyLossConfig, norm: float | None = None,
              weights: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    maskf = mask.to(logp.dtype)
    ratio = torch.exp((logp - old_logp).clamp(max=20.0))
    loss_tok, was_clipped = _clipped_surrogate(ratio, advantages[seq], cfg)
    if weights is not None:
        loss_tok = loss_tok * weights
    loss = aggregate(loss_tok, mask, seq, n_seq, cfg.aggregation, norm)
    r = ratio.detach()[mask.bool()] if mask.any() else ratio.new_ones(1)
    return loss, {"clip_frac": ((was_clipped.to(logp.dtype) * maskf).sum() / maskf.sum().clamp(min=1)).item(),
                  "token_ratio_mean": r.mean().item(), "token_ratio_max": r.max().item(),
                  "token_ratio_min": r.min().item()}


@register_loss("sft")
def sft_loss(logp: torch.Tensor, mask: torch.Tensor, seq: torch.Tensor, n_seq: int,
             aggregation: str = "token-mean", norm: float | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    loss = aggregate(-logp, mask, seq, n_seq, aggregation, norm)
    return loss, {"nll": loss.item()}


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """log softmax(logits / T) gathered at the targets: [..., V] × [...] → [...]."""
    logits = logits.float() / temperature
    return torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
