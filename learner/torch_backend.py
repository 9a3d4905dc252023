"""The `torch` learner backend: a Hugging Face causal LM trained with plain PyTorch.

CPU for tests and the embedded default; one GPU with bf16 autocast; several GPUs with FSDP2
(`fully_shard` per decoder layer) when torch.distributed is initialised with world size > 1.

Interface (shared with the Megatron backend): `train_step(groups)`, `sft_step(samples)`,
`compute_logprobs(samples)`, `weights()`, `save(dir)`, `load(dir)`.
"""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from learner.batch import PackedRow, Sample, pack, rl_samples
from learner.config import LearnerConfig
from learner.losses import get_loss, token_logprobs


class TorchLearner:
    def __init__(self, model_path: str | Path, cfg: LearnerConfig | None = None, lr: float | None = None):
        from transformers import AutoModelForCausalLM

        self.cfg = cfg or LearnerConfig()
        torch.manual_seed(self.cfg.seed)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).to(self.device)
        if self.cfg.gradient_checkpointing:
            self.model.gradient_checkpointing_enable()
        self._maybe_fsdp()
        self.model.train()
        o = self.cfg.optim
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr if lr is not None else o.lr,
                                           betas=o.betas, eps=o.eps, weight_decay=o.weight_decay)
        warmup = max(0, o.warmup_steps)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)
        self.step = 0
        self.version = 0

    def _maybe_fsdp(self) -> None:
        if not (torch.distributed.is_available() and torch.distributed.is_initialized()
                and torch.distributed.get_world_size() > 1):
            return
        from torch.distributed.fsdp import fully_shard

        for layer in self.model.model.layers:
            fully_shard(layer)
        fully_shard(self.model)

    def _autocast(self):
        if self.device.type == "cuda" and self.cfg.bf16:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _tensors(self, row: PackedRow) -> dict[str, torch.Tensor]:
        t = row.tensors(self.device)
        flash = "flash" in str(getattr(self.model.config, "_attn_implementation", ""))
        single = row.seq[0] == row.seq[-1]  # one sequence: plain causal attention, the fast kernel
        t["attention_mask"] = None if flash or single else row.block_causal_mask(self.device)
        return t

    def _row_logprobs(self, t: dict[str, torch.Tensor], only_masked: bool = True) -> torch.Tensor:
        """log πθ of each target; with `only_masked` the LM head runs on the model's own tokens only
        (prompt and observations are most of an agent trajectory: skipping their [T, V] logits is
        most of the saving), and the other positions hold 0."""
        with self._autocast():
            hidden = self.model.model(input_ids=t["input_ids"], position_ids=t["position_ids"],
                                      attention_mask=t["attention_mask"]).last_hidden_state[0]
            if not only_masked:
                return token_logprobs(self.model.lm_head(hidden), t["targets"], self.cfg.temperature)
            sel = t["mask"].bool()
            out = torch.zeros(len(t["targets"]), dtype=torch.float32, device=hidden.device)
            if sel.any():
                out = out.masked_scatter(sel, token_logprobs(self.model.lm_head(hidden[sel]), t["targets"][sel],
                                                             self.cfg.temperature))
            return out

    # ------------------------------------------------------------------ log-probs
    @torch.no_grad()
    def compute_logprobs(self, samples: list[Sample]) -> list[list[float]]:
        """Per sample, log πθ of each token given its prefix (0.0 for the first token)."""
        out: list[list[float]] = [[] for _ in samples]
        for row in pack(samples, self.cfg.max_tokens_per_micro_batch):
            t = self._tensors(row)
            lp = self._row_logprobs(t, only_masked=False).cpu()
            seq = t["seq"].cpu()
            for i in seq.unique().tolist():
                idx = (seq == i).nonzero().flatten()
                out[i] = [0.0] + lp[idx[:-1]].tolist()
        return out

    # ------------------------------------------------------------------ RL
    def train_step(self, groups: list[list[Any]]) -> dict[str, float]:
        """One policy update on complete groups of trajectories (GSPO by default)."""
        samples, metrics = rl_samples(groups, self.cfg.loss)
        if not samples:
            return metrics | {"skipped": 1.0}
        return metrics | self._policy_update(samples)

    def _policy_update(self, samples: list[Sample]) -> dict[str, float]:
        lc = self.cfg.loss
        rows = pack(samples, self.cfg.max_tokens_per_micro_batch)
        tensors = [self._tensors(r) for r in rows]
        advantages = torch.tensor([s.advantage for s in samples], device=self.device)
        n_seq = len(samples)
        # π_old on the learner (before the update), compared with the generators' behaviour log-probs
        with torch.no_grad():
            olds = [self._row_logprobs(t) for t in tensors]
        diffs, ratios = [], []
        for t, old in zip(tensors, olds, strict=True):
            m = t["mask"].bool()
            diffs.append((old - t["behaviour"])[m])
            ratios.append(torch.exp(old - t["behaviour"])[m])
        d, r = torch.cat(diffs), torch.cat(ratios)
        metrics = {"logprob_mismatch_abs_mean": d.abs().mean().item() if d.numel() else 0.0,
                   "behaviour_ratio_mean": r.mean().item() if r.numel() else 1.0,
                   "behaviour_ratio_max": r.max().item() if r.numel() else 1.0,
                   "behaviour_ratio_min": r.min().item() if r.numel() else 1.0}
        total_mask = sum(t["mask"].sum() for t in tensors)
        seqs_with_tokens = len({s for t in tensors for s in t["seq"][t["mask"].bool()].tolist()})
        norm = float(total_mask) if lc.aggregation == "token-mean" else float(max(1, seqs_with_tokens))
        loss_fn = get_loss(lc.name)
        self.optimizer.zero_grad(set_to_none=True)
        total, stats = 0.0, {}
        for t, old in zip(tensors, olds, strict=True):
            logp = self._row_logprobs(t)
            weights = torch.clamp(torch.exp(old - t["behaviour"]), max=lc.tis_cap) if lc.tis_cap > 0 else None
            loss, stats = loss_fn(logp, old, advantages, t["mask"], t["seq"], n_seq, lc, norm=norm, weights=weights)
            loss.backward()
            total += loss.item()
        metrics |= {k: v for k, v in stats.items()}
        metrics |= self._optimizer_step()
        metrics["loss"] = total
        metrics["tokens"] = float(total_mask)
        return metrics

    # ------------------------------------------------------------------ SFT
    def sft_step(self, samples: list[Sample]) -> dict[str, float]:
        """One optimizer step of masked cross-entropy over `samples` (accumulated over rows)."""
        rows: list[PackedRow] = pack(samples, self.cfg.max_tokens_per_micro_batch)
        tensors = [self._tensors(r) for r in rows]
        norm = float(sum(t["mask"].sum() for t in tensors))
        loss_fn = get_loss("sft")
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for t in tensors:
            loss, _ = loss_fn(self._row_logprobs(t), t["mask"], t["seq"], len(samples), norm=max(1.0, norm))
            loss.backward()
            total += loss.item()
        return {"sft_loss": total, "tokens": norm, **self._optimizer_step()}

    def set_lr(self, lr: float) -> None:
        """Change the peak learning rate (SFT and RL use different ones); warm-up still applies."""
        for group in self.optimizer.param_groups:
            group["initial_lr"] = lr
        self.scheduler.base_lrs = [lr for _ in self.scheduler.base_lrs]
        for group, factor in zip(self.optimizer.param_groups, [self.scheduler.lr_lambdas[0](self.scheduler.last_epoch)]
                                 * len(self.optimizer.param_groups), strict=True):
            group["lr"] = lr * factor

    def _optimizer_step(self) -> dict[str, float]:
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optim.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        self.version += 1
        return {"grad_norm": float(grad_norm), "lr": self.scheduler.get_last_lr()[0], "learner_step": float(self.step)}

    # ------------------------------------------------------------------ weights and checkpoints
    def weights(self) -> tuple[int, dict[str, torch.Tensor]]:
        """The current policy version and a CPU copy of its weights (HF names), for the generators."""
        return self.version, {k: v.detach().to("cpu", copy=True) for k, v in self.model.state_dict().items()}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        state = {
            "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(), "step": self.step, "version": self.version,
            "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate(),
                    "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
        }
        tmp = path / "learner.pt.tmp"
        torch.save(state, tmp)
        tmp.replace(path / "learner.pt")  # atomic: a crash mid-save keeps the previous checkpoint
        return path

    def load(self, path: str | Path) -> None:
        state = torch.load(Path(path) / "learner.pt", map_location=self.device, weights_only=False)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step, self.version = state["step"], state["version"]
        torch.set_rng_state(state["rng"]["torch"])
        np.random.set_state(state["rng"]["numpy"])
        random.setstate(state["rng"]["python"])
        if state["rng"]["cuda"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["rng"]["cuda"])

    def export_hf(self, path: str | Path) -> Path:
        """A Hugging Face folder of the current weights (loadable by vLLM and transformers)."""
        self.model.save_pretrained(path, safe_serialization=True)
        return Path(path)
