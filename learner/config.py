"""Learner settings: one Struct per concern, decoded from the run config."""

from __future__ import annotations

import msgspec


class PolicyLossConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The policy loss by registry name (learner/losses.py) and its knobs; here, without torch, so that
    reading a run config does not import it."""

    name: str = "gspo"
    clip_low: float = 3e-4
    clip_high: float = 4e-4
    aggregation: str = "seq-mean-token-mean"  # | "token-mean" | "seq-mean-token-sum"
    adv_eps: float = 1e-6
    std_normalize: bool = True
    filter_equal_reward_groups: bool = False
    #: truncated importance sampling: weight tokens by min(π_old_learner / π_behaviour, cap); 0 = off
    tis_cap: float = 0.0
    #: scale of negative advantages (1 = GSPO as published). A tiny model shares most parameters
    #: between tokens: pushing down a failed sample's plausible code tokens also pushes down the same
    #: tokens on the correct path (already near p = 1, so the positive samples' gradient is small);
    #: < 1 keeps the update dominated by what worked. See the notes of configs/local.yaml.
    negative_advantage_scale: float = 1.0


class OptimConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    lr: float = 1e-6
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    grad_clip: float = 1.0
    warmup_steps: int = 0


class MegatronConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    context_parallel: int = 1
    data_parallel: int = 1
    distributed_optimizer: bool = True
    sequence_parallel: bool = False


class SFTConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    epochs: int = 3
    batch_size: int = 64  # sequences per optimizer step, reached by gradient accumulation
    lr: float = 1e-5
    warmup_steps: int = 0
    seed: int = 0


class LearnerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    backend: str = "torch"  # "torch" | "megatron"
    loss: PolicyLossConfig = PolicyLossConfig()
    optim: OptimConfig = OptimConfig()
    sft: SFTConfig = SFTConfig()
    megatron: MegatronConfig = MegatronConfig()
    #: packed rows per forward pass hold at most this many tokens (gradient accumulation over rows)
    max_tokens_per_micro_batch: int = 16_384
    temperature: float = 1.0  # log-probs are of logits / temperature, as the generators report them
    bf16: bool = True  # autocast on GPU; CPU runs in float32
    gradient_checkpointing: bool = False
    seed: int = 0
