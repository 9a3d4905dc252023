"""The learner contract, and the one place a backend is chosen by its config.

    train_step(groups) -> metrics           # one policy update on complete groups (GSPO by default)
    sft_step(samples) -> metrics            # one supervised step (cold start)
    logprobs(samples) -> per-token log πθ of each sample's targets
    reset_optimizer(lr) / set_lr(lr)
    weights() -> (version, state dict)      # HF names, for the generators
    save(path) -> path / load(path)         # checkpoints (the optimizer and RNG states included)
    export_hf(path) -> path                 # a transformers-loadable model folder
    version                                 # the policy version: +1 per update (staleness counts it)

Both backends (torch_backend.TorchLearner: one process or FSDP ranks; megatron_backend.MegatronLearner:
TP/PP/CP/DP ranks) meet it; the type check of `.ci/run` holds them to it (learner/conformance.py), so an
actor or group that calls a learner calls the same methods on either.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from learner.batch import Sample
    from schema.config import LearnerConfig


class Learner(Protocol):
    version: int

    def train_step(self, groups: list[list[Any]]) -> dict[str, float]: ...

    def sft_step(self, samples: list[Sample]) -> dict[str, float]: ...

    def logprobs(self, samples: list[Sample]) -> list[list[float]]: ...

    def reset_optimizer(self, lr: float) -> None: ...

    def set_lr(self, lr: float) -> None: ...

    def weights(self) -> tuple[int, dict[str, Any]]: ...

    def save(self, path: str | Path) -> Path: ...

    def load(self, path: str | Path) -> None: ...

    def export_hf(self, path: str | Path) -> Path: ...


def build_learner(model_path: str, cfg: LearnerConfig, lr: float | None = None) -> Learner:
    """The backend `cfg.backend` names, on this process's rank (imported here: each brings its framework)."""
    if cfg.backend == "torch":
        from learner.torch_backend import TorchLearner

        return TorchLearner(model_path, cfg, lr=lr)
    if cfg.backend == "megatron":
        from learner.megatron_backend import MegatronLearner

        return MegatronLearner(model_path, cfg, lr=lr)
    raise ValueError(f"unknown learner backend {cfg.backend!r}; expected 'torch' or 'megatron'")
