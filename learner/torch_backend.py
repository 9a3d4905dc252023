"""The `torch` learner backend: a Hugging Face causal LM trained with plain PyTorch.

CPU for tests and the embedded default; one GPU with bf16 autocast; several GPUs with FSDP2
(`fully_shard` per decoder layer) when torch.distributed is initialised with world size > 1.

Data parallel (world size > 1, e.g. `actors.learner_group.LearnerGroup`): each rank is given its own
groups; the normaliser (tokens or sequences), the group metrics and the loss are summed over ranks, and
the loss is scaled by the world size (FSDP averages gradients), so a step of W ranks equals one rank's
step on all the data. FSDP's all-gathers run in every forward, so ranks with fewer packed rows run
rows without loss tokens until all ranks have run as many. Weights, checkpoints and exports are full
(unsharded) state dicts gathered to rank 0, keyed by parameter name: a checkpoint resumes at any
world size.

Interface (shared with the Megatron backend): `train_step(groups)`, `sft_step(samples)`,
`logprobs(samples)`, `weights()`, `save(dir)`, `load(dir)`.
"""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from learner.batch import PackedRow, Sample, pack, rl_samples
from learner.losses import get_loss, token_logprobs
from schema.config import LearnerConfig

#: a row without loss tokens: what a rank with fewer rows runs so that every rank runs as many passes
_EMPTY_ROW = PackedRow(input_ids=[0, 0], position_ids=[0, 1], targets=[0, 0], mask=[0, 0], behaviour=[0.0, 0.0],
                       seq=[0, 0])


def _world() -> tuple[int, int]:
    """(rank, world size) of torch.distributed, (0, 1) when it is not initialised."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class TorchLearner:
    def __init__(self, model_path: str | Path, cfg: LearnerConfig | None = None, lr: float | None = None):
        from transformers import AutoModelForCausalLM

        self.cfg = cfg or LearnerConfig()
        torch.manual_seed(self.cfg.seed)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
        self.model = model.to(self.device)  # type: ignore[arg-type]  # transformers types .to() as a PreTrainedModel method
        if self.cfg.gradient_checkpointing:
            self.model.gradient_checkpointing_enable()
        self.rank, self.world = _world()
        self._architecture = type(self.model).__name__  # FSDP renames the class (FSDPQwen3ForCausalLM)
        #: flash attention keeps packed sequences apart by their position ids (no mask)
        self._flash = "flash" in str(getattr(self.model.config, "_attn_implementation", ""))
        self._packs = self._flash or self.device.type != "cpu"  # `_rows`
        self._maybe_fsdp()
        self.model.train()
        self.reset_optimizer(lr if lr is not None else self.cfg.optim.lr)
        self.step = 0
        self.version = 0

    def reset_optimizer(self, lr: float) -> None:
        """A fresh optimizer and warm-up: the RL stage must not inherit SFT's Adam moments (their
        second moments, from large SFT gradients, would shrink the first RL steps many-fold and
        then let them grow as they decay)."""
        o = self.cfg.optim
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr, betas=o.betas, eps=o.eps,
                                           weight_decay=o.weight_decay)
        warmup = max(0, o.warmup_steps)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)

    def _maybe_fsdp(self) -> None:
        if self.world == 1:
            return
        from torch.distributed.fsdp import fully_shard

        for layer in self.model.model.layers:
            fully_shard(layer)
        fully_shard(self.model)

    def _autocast(self):
        if self.device.type == "cuda" and self.cfg.bf16:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _tensors(self, row: PackedRow) -> dict[str, Any]:
        """The row's tensors and the model's attention mask (None: plain causal attention)."""
        t: dict[str, Any] = row.tensors(self.device)
        single = row.seq[0] == row.seq[-1]  # one sequence: plain causal attention, the fast kernel
        t["attention_mask"] = None if self._flash or single else row.block_causal_mask(self.device)
        return t

    def _row_logprobs(self, t: dict[str, torch.Tensor], only_masked: bool = True) -> torch.Tensor:
        """log πθ of each target; with `only_masked` the LM head runs on the model's own tokens only
        (prompt and observations are most of an agent trajectory: skipping their [T, V] logits is
        most of the saving), and the other positions hold 0.

        Through the root module's forward (`logits_to_keep` picks the positions), where FSDP's hooks
        all-gather the embedding, final norm and head. A row without model tokens still runs the head
        on one position (times 0): every parameter then gets a gradient, so every rank reduce-scatters
        the same FSDP groups."""
        keep: Any = t["mask"].nonzero().flatten() if only_masked else 0  # a tensor of positions, or 0: all
        empty = only_masked and keep.numel() == 0
        if empty:
            keep = torch.zeros(1, dtype=torch.long, device=self.device)
        with self._autocast():
            logits = self.model(input_ids=t["input_ids"], position_ids=t["position_ids"],
                                attention_mask=t["attention_mask"], logits_to_keep=keep, use_cache=False).logits[0]
            lp = token_logprobs(logits, t["targets"] if not only_masked else t["targets"][keep], self.cfg.temperature)
        if not only_masked:
            return lp
        out = torch.zeros(len(t["targets"]), dtype=torch.float32, device=lp.device)
        return out + 0.0 * lp.sum() if empty else out.masked_scatter(t["mask"].bool(), lp)

    # ------------------------------------------------------------------ data parallel
    def _sum(self, *values: float, op: str = "sum") -> list[float]:
        """`values` reduced over the ranks (`op`: sum, max or min); as they are with one rank."""
        if self.world == 1:
            return list(values)
        x = torch.tensor(values, dtype=torch.float64, device=self.device)
        ops = {"sum": torch.distributed.ReduceOp.SUM, "max": torch.distributed.ReduceOp.MAX,
               "min": torch.distributed.ReduceOp.MIN}
        torch.distributed.all_reduce(x, op=ops[op])
        return x.tolist()

    def _rows(self, samples: list[Sample]) -> tuple[list[dict[str, torch.Tensor]], int]:
        """This rank's packed rows as tensors, padded with empty rows to the most rows of any rank
        (FSDP's collectives run in every pass); and how many of them are real.

        On CPU without flash attention each sequence gets a row of its own: a row of several needs
        the dense [T, T] block mask, and attention under an explicit mask runs the math kernel, where
        one sequence runs the causal kernel on its own T² only. A step on 12 sequences of 0.9-2k
        tokens of the tiny model took 3x less CPU this way (forward and backward)."""
        budget = self.cfg.max_tokens_per_micro_batch if self._packs else 0  # 0: one sequence per row
        tensors = [self._tensors(r) for r in pack(samples, budget)]
        real = len(tensors)
        most = int(self._sum(real, op="max")[0])
        return tensors + [self._tensors(_EMPTY_ROW) for _ in range(most - real)], real

    # ------------------------------------------------------------------ log-probs
    @torch.no_grad()
    def logprobs(self, samples: list[Sample]) -> list[list[float]]:
        """Per sample, log πθ of each token given its prefix (0.0 for the first token)."""
        out: list[list[float]] = [[] for _ in samples]
        tensors, real = self._rows(samples)
        for t in tensors[:real]:
            lp = self._row_logprobs(t, only_masked=False).cpu()
            seq = t["seq"].cpu()
            for i in seq.unique().tolist():
                idx = (seq == i).nonzero().flatten()
                out[i] = [0.0] + lp[idx[:-1]].tolist()
        for t in tensors[real:]:
            self._row_logprobs(t, only_masked=False)
        return out

    # ------------------------------------------------------------------ RL
    def train_step(self, groups: list[list[Any]]) -> dict[str, float]:
        """One policy update on complete groups of trajectories (GSPO by default)."""
        samples, metrics = rl_samples(groups, self.cfg.loss)
        if self.world > 1:  # this rank's groups → the step's
            count = sum(len(g) for g in groups)
            r, n, g, f, s = self._sum(metrics["reward_mean"] * count, count, metrics["groups"], metrics["groups_filtered"],
                                      metrics["sequences"])
            metrics = {"reward_mean": r / n if n else 0.0, "groups": g, "groups_filtered": f, "sequences": s}
        if not metrics["sequences"]:
            # no signal (every group filtered): no optimizer step — Adam's momentum would still move
            # the weights — but the version advances, since staleness admission counts steps
            self.version += 1
            return metrics | {"skipped": 1.0}
        return metrics | self._policy_update(samples)

    def _policy_update(self, samples: list[Sample]) -> dict[str, float]:
        """One optimizer step. π_old is πθ before the update, and the update is one step at the end:
        each row's log-probs under πθ, detached, are π_old's (no second forward pass for it: that was
        a third of a step's CPU); they are compared with the generators' behaviour log-probs."""
        lc = self.cfg.loss
        tensors, real = self._rows(samples)
        advantages = torch.tensor([s.advantage for s in samples] or [0.0], device=self.device)
        n_seq = max(1, len(samples))  # a rank without samples runs empty rows only
        total_mask = float(sum(t["mask"].sum() for t in tensors))
        rank_seqs = len({s for t in tensors for s in t["seq"][t["mask"].bool()].tolist()})
        # the step-wide normaliser (tokens or sequences) of every rank's data
        total_mask, seqs_with_tokens = self._sum(total_mask, rank_seqs)
        norm = total_mask if lc.aggregation == "token-mean" else max(1.0, seqs_with_tokens)
        loss_fn = get_loss(lc.name)
        self.optimizer.zero_grad(set_to_none=True)
        total, stats, ds = 0.0, dict[str, float](), []
        for k, t in enumerate(tensors):
            logp = self._row_logprobs(t)
            old = logp.detach()
            diff = old - t["behaviour"]  # log π_old − log π_behaviour
            ds.append(diff[t["mask"].bool()])
            weights = torch.clamp(torch.exp(diff), max=lc.tis_cap) if lc.tis_cap > 0 else None
            loss, row_stats = loss_fn(logp, old, advantages, t["mask"], t["seq"], n_seq, lc, norm=norm,
                                      weights=weights)
            (loss * self.world).backward()  # FSDP averages gradients over ranks; the loss is a share of the step's
            total += loss.item()
            if k < real or not stats:  # the stats of this rank's last real row
                stats = row_stats
        d = torch.cat(ds)
        r = torch.exp(d)
        abs_sum, n_tok, ratio_sum = self._sum(d.abs().sum().item(), d.numel(), r.sum().item())
        r_max, neg_r_min = self._sum(r.max().item() if r.numel() else -float("inf"),
                                     -r.min().item() if r.numel() else -float("inf"), op="max")
        metrics = {"logprob_mismatch_abs_mean": abs_sum / n_tok if n_tok else 0.0,
                   "behaviour_ratio_mean": ratio_sum / n_tok if n_tok else 1.0,
                   "behaviour_ratio_max": r_max if n_tok else 1.0,
                   "behaviour_ratio_min": -neg_r_min if n_tok else 1.0}
        metrics |= {k: v for k, v in stats.items()}
        metrics |= self._optimizer_step()
        metrics["loss"] = self._sum(total)[0]
        metrics["tokens"] = total_mask
        return metrics

    # ------------------------------------------------------------------ SFT
    def sft_step(self, samples: list[Sample]) -> dict[str, float]:
        """One optimizer step of masked cross-entropy over `samples` (accumulated over rows)."""
        tensors, _ = self._rows(samples)
        norm = self._sum(float(sum(t["mask"].sum() for t in tensors)))[0]  # every rank's tokens
        loss_fn = get_loss("sft")
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for t in tensors:
            loss, _ = loss_fn(self._row_logprobs(t), t["mask"], t["seq"], max(1, len(samples)), norm=max(1.0, norm))
            (loss * self.world).backward()  # FSDP averages gradients over ranks
            total += loss.item()
        return {"sft_loss": self._sum(total)[0], "tokens": norm, **self._optimizer_step()}

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
        if hasattr(grad_norm, "full_tensor"):  # a DTensor under FSDP: the norm over all shards
            grad_norm = grad_norm.full_tensor()
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        self.version += 1
        return {"grad_norm": float(grad_norm), "lr": float(self.scheduler.get_last_lr()[0]), "learner_step": float(self.step)}

    # ------------------------------------------------------------------ weights and checkpoints
    def _full_options(self, **kw: Any):
        from torch.distributed.checkpoint.state_dict import StateDictOptions

        return StateDictOptions(full_state_dict=True, cpu_offload=self.world > 1, **kw)

    def _full_model_state(self) -> dict[str, torch.Tensor]:
        """The unsharded state dict (HF names). Collective under FSDP: rank 0 gets it, others {}."""
        if self.world == 1:
            return self.model.state_dict()
        from torch.distributed.checkpoint.state_dict import get_model_state_dict

        return cast(dict[str, torch.Tensor], get_model_state_dict(self.model, options=self._full_options()))

    def weights(self) -> tuple[int, dict[str, torch.Tensor]]:
        """The current policy version and a CPU copy of its weights (HF names), for the generators.
        Collective under FSDP: every rank calls it, rank 0 gets the weights and the others {}."""
        return self.version, {k: v.detach().to("cpu", copy=True) for k, v in self._full_model_state().items()}

    def save(self, path: str | Path) -> Path:
        """Model and optimizer unsharded and keyed by parameter name (any world size resumes from it),
        scheduler, counters and RNG; written by rank 0. Collective under FSDP."""
        from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

        path = Path(path)
        model = self._full_model_state()
        optimizer = get_optimizer_state_dict(self.model, self.optimizer, options=self._full_options())
        if self.rank == 0:
            path.mkdir(parents=True, exist_ok=True)
            state = {
                "model": model, "optimizer": optimizer,
                "scheduler": self.scheduler.state_dict(), "step": self.step, "version": self.version,
                "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate(),
                        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
            }
            tmp = path / "learner.pt.tmp"
            torch.save(state, tmp)
            tmp.replace(path / "learner.pt")  # atomic: a crash mid-save keeps the previous checkpoint
        if self.world > 1:
            torch.distributed.barrier()
        return path

    def load(self, path: str | Path) -> None:
        """Rank 0 reads the checkpoint; under FSDP it broadcasts the tensors (no shared filesystem
        needed) and the counters. Older checkpoints (optimizer keyed by parameter index) load too."""
        from torch.distributed.checkpoint.state_dict import set_model_state_dict, set_optimizer_state_dict

        state: dict[str, Any] | None = None
        if self.rank == 0:
            state = torch.load(Path(path) / "learner.pt", map_location=self.device if self.world == 1 else "cpu",
                               weights_only=False)
            # saved right after reset_optimizer: no moments yet (set_optimizer_state_dict would create
            # zero ones with step 1, and the next step's bias correction would differ from the run's)
            state["fresh_optimizer"] = not state["optimizer"].get("state")
        if self.world > 1:
            box = [{k: v for k, v in state.items() if k not in ("model", "optimizer")} if state else None]
            torch.distributed.broadcast_object_list(box, src=0)
            state = state or {**(box[0] or {}), "model": {}, "optimizer": {}}
        assert state is not None  # rank 0 read it; the others took its counters above
        opts = self._full_options(broadcast_from_rank0=self.world > 1)
        set_model_state_dict(self.model, state["model"], options=opts)
        set_optimizer_state_dict(self.model, self.optimizer, self._by_name(state["optimizer"]), options=opts)
        if state["fresh_optimizer"]:
            self.optimizer.state.clear()
        self.scheduler.load_state_dict(state["scheduler"])
        self.step, self.version = state["step"], state["version"]
        torch.set_rng_state(state["rng"]["torch"])
        np.random.set_state(state["rng"]["numpy"])
        random.setstate(state["rng"]["python"])
        if state["rng"]["cuda"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["rng"]["cuda"])

    def _by_name(self, optimizer: dict) -> dict:
        """An optimizer state keyed by parameter index (`optimizer.state_dict()`, older checkpoints)
        keyed by parameter name instead; a name-keyed one as it is."""
        indices = [i for g in optimizer.get("param_groups", []) for i in g["params"]]
        if not indices or not isinstance(indices[0], int):
            return optimizer
        names = {id(p): n for n, p in self.model.named_parameters()}
        order = [names[id(p)] for g in self.optimizer.param_groups for p in g["params"]]
        return {"state": {order[i]: v for i, v in optimizer["state"].items()},
                "param_groups": [{**g, "params": [order[i] for i in g["params"]]} for g in optimizer["param_groups"]]}

    def export_hf(self, path: str | Path) -> Path:
        """A Hugging Face folder of the current weights (loadable by vLLM and transformers).
        Collective under FSDP: the full weights are gathered and rank 0 writes them."""
        if self.world == 1:
            self.model.save_pretrained(path, safe_serialization=True)
            return Path(path)
        state = self._full_model_state()
        if self.rank == 0:
            self.model.save_pretrained(path, state_dict=state, safe_serialization=True)
            config = Path(path) / "config.json"  # the class FSDP wrapped, not FSDP's subclass
            config.write_text(config.read_text().replace(f'"FSDP{self._architecture}"', f'"{self._architecture}"'))
        torch.distributed.barrier()
        return Path(path)
