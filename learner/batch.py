"""From trajectories to packed rows of tokens, ready for a forward pass.

Sequences are packed end to end into rows of at most `max_tokens` (first-fit decreasing; a
sequence is never split, one longer than the budget gets a row of its own). Position ids restart
at 0 for each sequence; a block-diagonal causal mask keeps packed sequences from attending to each
other (flash-attention models use the position ids alone and skip the O(T²) mask; the torch
backend on CPU packs one sequence per row instead, where the causal kernel beats the mask 3x).

Per-token fields are aligned with the *input* positions: position p of a sequence x_0..x_{n-1}
predicts x_{p+1}, so `targets[p] = x_{p+1}`, `mask[p] = loss_mask[p+1]`,
`behaviour[p] = logprobs[p+1]`; the last position of each sequence predicts nothing (mask 0).
"""

from __future__ import annotations

from typing import Any

import msgspec
import torch


class Sample(msgspec.Struct):
    token_ids: list[int]
    loss_mask: list[int]
    behaviour_logprobs: list[float] | None = None
    advantage: float = 0.0
    group_id: str = ""
    reward: float = 0.0


class PackedRow(msgspec.Struct):
    input_ids: list[int]
    position_ids: list[int]
    targets: list[int]
    mask: list[int]
    behaviour: list[float]
    seq: list[int]  # index of each token's sequence within the step

    def tensors(self, device: str | torch.device = "cpu") -> dict[str, torch.Tensor]:
        return {
            "input_ids": torch.tensor([self.input_ids], device=device),
            "position_ids": torch.tensor([self.position_ids], device=device),
            "targets": torch.tensor(self.targets, device=device),
            "mask": torch.tensor(self.mask, device=device, dtype=torch.float32),
            "behaviour": torch.tensor(self.behaviour, device=device, dtype=torch.float32),
            "seq": torch.tensor(self.seq, device=device, dtype=torch.long),
        }

    def block_causal_mask(self, device: str | torch.device = "cpu") -> torch.Tensor:
        """[1, 1, T, T] bool: a token attends to earlier tokens of its own sequence only."""
        seq = torch.tensor(self.seq, device=device)
        n = len(self.seq)
        causal = torch.ones(n, n, dtype=torch.bool, device=device).tril()
        return (causal & (seq[:, None] == seq[None, :]))[None, None]


def sample_from_trajectory(traj: Any, advantage: float = 0.0) -> Sample:
    return Sample(token_ids=list(traj.token_ids), loss_mask=list(traj.loss_mask),
                  behaviour_logprobs=list(traj.logprobs), advantage=advantage, group_id=traj.group_id,
                  reward=traj.reward)


def pack(samples: list[Sample], max_tokens: int) -> list[PackedRow]:
    order = sorted(range(len(samples)), key=lambda i: -len(samples[i].token_ids))
    bins: list[list[int]] = []
    sizes: list[int] = []
    for i in order:
        n = len(samples[i].token_ids)
        for b, size in enumerate(sizes):
            if size + n <= max_tokens:
                bins[b].append(i)
                sizes[b] += n
                break
        else:
            bins.append([i])
            sizes.append(n)
    rows = []
    for members in bins:
        row = PackedRow([], [], [], [], [], [])
        for i in sorted(members):
            s = samples[i]
            n = len(s.token_ids)
            lps = s.behaviour_logprobs or [0.0] * n
            row.input_ids += s.token_ids
            row.position_ids += list(range(n))
            row.targets += s.token_ids[1:] + [0]
            row.mask += list(s.loss_mask[1:]) + [0]
            row.behaviour += list(lps[1:]) + [0.0]
            row.seq += [i] * n
        rows.append(row)
    return rows


def rl_samples(groups: list[list[Any]], loss_cfg: Any) -> tuple[list[Sample], dict[str, float]]:
    """Complete groups → samples with group-relative advantages (equal-reward groups optionally
    dropped), and the step's group metrics. Shared by every learner backend."""
    from learner.losses import equal_reward_groups, group_advantages

    trajs = [t for g in groups for t in g]
    rewards = torch.tensor([t.reward for t in trajs], dtype=torch.float32)
    gids = [t.group_id for t in trajs]
    adv = group_advantages(rewards, gids, loss_cfg.adv_eps, loss_cfg.std_normalize)
    if loss_cfg.negative_advantage_scale != 1.0:
        adv = torch.where(adv < 0, adv * loss_cfg.negative_advantage_scale, adv)
    dropped = equal_reward_groups(rewards, gids) if loss_cfg.filter_equal_reward_groups else set()
    keep = [i for i in range(len(trajs)) if gids[i] not in dropped]
    metrics = {"reward_mean": rewards.mean().item() if trajs else 0.0, "groups": float(len(groups)),
               "groups_filtered": float(len(dropped)), "sequences": float(len(keep))}
    return [sample_from_trajectory(trajs[i], adv[i].item()) for i in keep], metrics
