"""The learner backend in an actor: updates, SFT, versioned weights for the generators, checkpoints."""

from __future__ import annotations

from typing import Any

import ray

from learner.base import build_learner
from rollout.weights.base import Outbox
from schema.config import LearnerConfig, WeightTransportConfig
from schema.records import WeightUpdate


@ray.remote
class LearnerActor:
    def __init__(self, model_path: str, cfg: LearnerConfig, threads: int | None = None):
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.model_path = model_path
        self.cfg = cfg
        self.learner = build_learner(model_path, cfg)
        self.outbox = Outbox()

    def train_step(self, groups: list[list[Any]]) -> dict[str, float]:
        return self.learner.train_step(groups)

    def sft(self, trajectories: list[Any]) -> list[dict[str, float]]:
        """Cold-start SFT with its own optimizer at the SFT learning rate; RL then starts a fresh one
        at the RL learning rate, as separate SFT and RL jobs would."""
        from learner.sft import run_sft, sft_samples

        self.learner.reset_optimizer(self.cfg.sft.lr)
        try:
            return run_sft(self.learner, sft_samples(trajectories), self.cfg.sft)
        finally:
            self.learner.reset_optimizer(self.cfg.optim.lr)

    def weights_offer(self, transport: WeightTransportConfig, epoch: int, world_size: int) -> WeightUpdate:
        """The current weights, offered by `transport` (rollout/weights/): the generator pool then has
        every generator receive while `weights_send` sends."""
        version, weights = self.learner.weights()
        return self.outbox.offer(transport, version, weights, epoch, world_size)

    def weights_send(self, update: WeightUpdate) -> None:
        self.outbox.send(update)

    def compute_logprobs(self, samples: list[Any]) -> list[list[float]]:
        """log πθ of each token of each `learner.batch.Sample` (the train/inference mismatch, checks)."""
        return self.learner.compute_logprobs(samples)

    def version(self) -> int:
        return self.learner.version

    def save(self, path: str) -> str:
        return str(self.learner.save(path))

    def load(self, path: str) -> int:
        self.learner.load(path)
        return self.learner.version

    def export_hf(self, path: str) -> str:
        """A Hugging Face folder (weights + config + the tokenizer): what vLLM, transformers and
        `progagent eval` load."""
        from transformers import AutoTokenizer

        out = self.learner.export_hf(path)
        AutoTokenizer.from_pretrained(self.model_path).save_pretrained(out)
        return str(out)
