"""Cold-start SFT: masked cross-entropy on teacher trajectories (paper: 3 epochs, batch 64, lr 1e-5).

Batches of `batch_size` sequences are one optimizer step each, reached by gradient accumulation
over packed rows; the order is reshuffled every epoch with a seeded generator.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from learner.batch import Sample, sample_from_trajectory
from schema.config import SFTConfig


def sft_samples(trajectories: list[Any]) -> list[Sample]:
    return [sample_from_trajectory(t) for t in trajectories]


def run_sft(learner: Any, samples: list[Sample], cfg: SFTConfig,
            on_step: Callable[[dict[str, float]], None] | None = None) -> list[dict[str, float]]:
    rng = random.Random(cfg.seed)
    history = []
    for epoch in range(cfg.epochs):
        order = list(range(len(samples)))
        rng.shuffle(order)
        for start in range(0, len(order), cfg.batch_size):
            batch = [samples[i] for i in order[start:start + cfg.batch_size]]
            metrics = learner.sft_step(batch) | {"epoch": float(epoch)}
            history.append(metrics)
            if on_step:
                on_step(metrics)
    return history
