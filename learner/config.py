"""Learner settings: one Struct per concern, decoded from the run config."""

from __future__ import annotations

import msgspec

from learner.losses import PolicyLossConfig


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
