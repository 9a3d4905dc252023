"""The `megatron` learner backend: a megatron-core GPTModel built from the Hugging Face config.

HF ↔ Megatron conversion (the TransformerConfig from the HF config, the model provider, loading HF
safetensors into the Megatron layout with TP/PP splitting, exporting back to HF names with TP
gathering and PP broadcast) is mbridge's (`AutoBridge.from_config`, `get_model`, `load_weights`,
`export_weights`, `save_weights`); this module writes none of it. Parallel sizes come from
`LearnerConfig.megatron`: tensor / pipeline / context parallel split the model, data parallel is the
rest of the world; every rank calls `train_step` with the same groups (SPMD) and each DP rank takes
its share of the packed rows. On GPU: Megatron's DistributedDataParallel, `get_megatron_optimizer`
(the distributed optimizer when `megatron.distributed_optimizer`), bf16 params with fp32 main params,
Transformer Engine layers when TE is installed, the pipeline schedule when PP > 1.

CPU (tests, no CUDA): `_apply_cpu_patches` lets megatron-core build and run (see its docstring);
without Transformer Engine the model uses megatron-core's local layer spec, whose two layer norms
mbridge's Qwen2/Qwen3 name tables do not list (TE fuses them into the linear layers), so
`_adapted_bridge_class` adds those two names to mbridge's tables; and Megatron's optimizers allocate
on 'cuda' unconditionally, so on CPU `torch.optim.AdamW` steps on the DDP gradient buffers
(`_CPUAdamW`), clipped as Megatron clips. Everything else is the GPU code path. On CPU (gloo) this
runs with tensor and data parallel > 1 too (the tests take 2 ranks); pipeline parallel (embedding
groups, the schedule), context and sequence parallel (TE) and activation recompute need CUDA.

Packed rows become padded batches (one sequence per batch row, right padding, causal attention):
megatron-core's RoPE ignores position ids, so sequences packed end to end in one row would get
wrong positions without TE's THD kernels; right padding under a causal mask is exact.

Interface (shared with the torch backend): `train_step(groups)`, `sft_step(samples)`,
`logprobs(samples)`, `weights()`, `save(dir)`, `load(dir)`, `export_hf(dir)`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import shutil
import socket
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from learner.batch import PackedRow, Sample, pack, rl_samples
from learner.losses import get_loss, token_logprobs
from schema.config import LearnerConfig


def _apply_cpu_patches() -> None:
    """Let megatron-core (0.16.1) and mbridge build and run a GPTModel on a machine without CUDA.

    Applied only when CUDA is absent, once per process (process-wide, like any monkeypatch):
    - `torch.cuda.current_device()` returns "cpu": megatron-core and mbridge allocate buffers, DDP
      grad buffers and RNG state on `torch.cuda.current_device()`; with "cpu" those land on the CPU.
    - `torch.nn.Module.cuda("cpu")` moves to the CPU: mbridge's `get_model` calls
      `module.cuda(torch.cuda.current_device())` unconditionally (it raises without CUDA).
    The third change is not a patch but an argument: the RNG tracker is seeded with
    `model_parallel_cuda_manual_seed(seed, inference_rng_tracker=True)` (see `_init_parallel`),
    whose tracker does not fork CUDA RNG states (there are none to fork on CPU).
    """
    if torch.cuda.is_available() or getattr(torch.nn.Module.cuda, "_progagent_cpu", False):
        return
    original_cuda = torch.nn.Module.cuda

    def cuda(self, device=None):
        return self.to("cpu") if str(device) == "cpu" else original_cuda(self, device)

    cuda._progagent_cpu = True  # type: ignore[attr-defined]
    torch.nn.Module.cuda = cuda  # type: ignore[method-assign]
    torch.cuda.current_device = lambda: "cpu"  # type: ignore[assignment, return-value]


@functools.cache
def _have_te() -> bool:
    try:
        import transformer_engine  # noqa: F401
    except Exception:  # noqa: BLE001 - not installed, or installed without its CUDA libraries
        return False
    return torch.cuda.is_available()


def _adapted_bridge_class(base: type) -> type:
    """mbridge's bridge for this model type, with the two adaptations this environment needs."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_decoder_block_spec

    class Bridge(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            if not _have_te():
                # megatron-core's local spec keeps the pre-attention and pre-MLP norms as modules of
                # their own; TE fuses them into linear_qkv / linear_fc1 (the names mbridge maps)
                self._OTHER_MAPPING: dict[str, list[str]] = {**self._OTHER_MAPPING, "input_layernorm.weight":
                                       ["model.layers.{layer_number}.input_layernorm.weight"]}
                self._MLP_MAPPING: dict[str, list[str]] = {**self._MLP_MAPPING, "pre_mlp_layernorm.weight":
                                     ["model.layers.{layer_number}.post_attention_layernorm.weight"]}

        def _get_transformer_layer_spec(self, vp_stage: int | None = None):
            if _have_te():
                return super()._get_transformer_layer_spec(vp_stage)
            self.has_vp_stage = True
            return get_gpt_decoder_block_spec(self.config, use_transformer_engine=False, vp_stage=vp_stage)

        def _get_gptmodel_args(self) -> dict:
            # transformers 5 moved `rope_theta` into `rope_parameters`; mbridge 0.15 reads the former
            if hasattr(self.hf_config, "rope_theta"):
                return super()._get_gptmodel_args()
            rope = dict(getattr(self.hf_config, "rope_parameters", None) or {})
            if rope.get("rope_type", "default") != "default":
                raise NotImplementedError(f"rope_type {rope.get('rope_type')!r} is not supported")
            return dict(vocab_size=self.hf_config.vocab_size,
                        max_sequence_length=self.hf_config.max_position_embeddings,
                        position_embedding_type="rope", rotary_base=rope["rope_theta"])

    Bridge.__name__ = Bridge.__qualname__ = f"ProgAgent{base.__name__}"
    return Bridge


class _CPUAdamW:
    """Stand-in for Megatron's optimizer on CPU (Megatron's allocate their state on 'cuda').

    `torch.optim.AdamW` over the DDP main grads, with Megatron's parameter groups (no weight decay
    on norms and biases), grad-norm clipping as Megatron's `clip_grad_norm_fp32` (norm over
    non-duplicate grads, summed over the model-parallel group) and its `step()` return value.
    """

    def __init__(self, models: list[torch.nn.Module], lr: float, betas: tuple[float, float], eps: float,
                 weight_decay: float, clip_grad: float):
        from megatron.core import parallel_state as mpu

        named = [(n, p) for m in models for n, p in m.named_parameters() if p.requires_grad]
        decay = [p for n, p in named if p.ndim > 1 and not n.endswith(".bias")]
        no_decay = [p for n, p in named if not (p.ndim > 1 and not n.endswith(".bias"))]
        groups = [{"params": decay, "wd_mult": 1.0}, {"params": no_decay, "wd_mult": 0.0}]
        self.params = [p for _, p in named]
        self.optimizer = torch.optim.AdamW([g for g in groups if g["params"]], lr=lr, betas=betas, eps=eps,
                                           weight_decay=weight_decay)
        self.clip_grad = clip_grad
        self.mp_group = mpu.get_model_parallel_group()

    @property
    def param_groups(self) -> list[dict]:
        return self.optimizer.param_groups

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> tuple[bool, float, None]:
        from megatron.core.tensor_parallel import param_is_not_tensor_parallel_duplicate
        from megatron.core.transformer.module import param_is_not_shared

        for p in self.params:
            main_grad = getattr(p, "main_grad", None)  # megatron's DDP accumulates into it
            p.grad = main_grad.to(p.dtype) if main_grad is not None else p.grad
        grads = [p.grad for p in self.params if p.grad is not None]
        for_norm = [p.grad for p in self.params if p.grad is not None and param_is_not_shared(p)
                    and param_is_not_tensor_parallel_duplicate(p)]
        sq = torch.stack([g.float().pow(2).sum() for g in for_norm]).sum() if for_norm else torch.zeros(())
        if torch.distributed.get_world_size(self.mp_group) > 1:
            torch.distributed.all_reduce(sq, group=self.mp_group)
        norm = float(sq.sqrt())
        coeff = self.clip_grad / (norm + 1e-6)
        if self.clip_grad > 0 and coeff < 1.0:
            for g in grads:
                g.mul_(coeff)
        self.optimizer.step()
        return True, norm, None

    def state_dict(self) -> dict:
        return self.optimizer.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state)


@dataclass
class _MicroBatch:
    """A packed row as a padded batch: sequence b of the row is batch row b, right-padded to T."""

    seqs: list[int]  # sample index of each batch row
    flat: dict[str, torch.Tensor]  # the row's flat [N] fields (targets, mask, behaviour, seq)
    input_ids: torch.Tensor  # [B, T]
    position_ids: torch.Tensor  # [B, T]
    targets: torch.Tensor  # [B, T]
    bi: torch.Tensor  # [N] batch row of each flat token
    ti: torch.Tensor  # [N] position of each flat token
    dummy: bool = False  # a placeholder for a data-parallel rank without rows (no loss, no output)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MegatronLearner:
    def __init__(self, model_path: str | Path, cfg: LearnerConfig | None = None, lr: float | None = None):
        self.cfg = cfg or LearnerConfig()
        self.model_path = Path(model_path)
        self.cuda = torch.cuda.is_available()
        if not self.cuda:
            _apply_cpu_patches()
        random.seed(self.cfg.seed)
        np.random.seed(self.cfg.seed)
        torch.manual_seed(self.cfg.seed)
        self._init_parallel()
        self.device = torch.device("cuda", torch.cuda.current_device()) if self.cuda else torch.device("cpu")
        self.dtype = torch.bfloat16 if (self.cuda and self.cfg.bf16) else torch.float32
        # Megatron's optimizers need CUDA (see _CPUAdamW); DDP's grad layout follows the optimizer
        self._distributed_optimizer = self.cuda and self.cfg.megatron.distributed_optimizer
        self.bridge = self._build_bridge()
        self.models = self._build_models()
        o = self.cfg.optim
        self.optimizer = self._build_optimizer(lr if lr is not None else o.lr)
        self.scheduler = self._build_scheduler(lr if lr is not None else o.lr)
        self.step = 0
        self.version = 0

    # ------------------------------------------------------------------ construction
    def _init_parallel(self) -> None:
        from megatron.core import parallel_state as mpu
        from megatron.core import tensor_parallel

        m = self.cfg.megatron
        dist = torch.distributed
        if not dist.is_initialized():
            if "WORLD_SIZE" in os.environ:  # torchrun / a launcher set RANK, WORLD_SIZE, MASTER_*
                if self.cuda:
                    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
                dist.init_process_group("nccl" if self.cuda else "gloo")
            else:
                dist.init_process_group("nccl" if self.cuda else "gloo", rank=0, world_size=1,
                                        init_method=f"tcp://127.0.0.1:{_free_port()}")
        world = dist.get_world_size()
        model_parallel = m.tensor_parallel * m.pipeline_parallel * m.context_parallel
        if world % model_parallel or world // model_parallel != m.data_parallel:
            raise ValueError(f"world size {world} != tensor {m.tensor_parallel} × pipeline "
                             f"{m.pipeline_parallel} × context {m.context_parallel} × data {m.data_parallel}")
        if mpu.model_parallel_is_initialized():
            have = (mpu.get_tensor_model_parallel_world_size(), mpu.get_pipeline_model_parallel_world_size(),
                    mpu.get_context_parallel_world_size())
            if have != (m.tensor_parallel, m.pipeline_parallel, m.context_parallel):
                raise ValueError(f"megatron parallel state already initialised with (tp, pp, cp) = {have}")
        else:
            mpu.initialize_model_parallel(tensor_model_parallel_size=m.tensor_parallel,
                                          pipeline_model_parallel_size=m.pipeline_parallel,
                                          context_parallel_size=m.context_parallel)
        tensor_parallel.model_parallel_cuda_manual_seed(self.cfg.seed, inference_rng_tracker=not self.cuda)
        self.tp, self.pp, self.cp = m.tensor_parallel, m.pipeline_parallel, m.context_parallel
        self.dp = mpu.get_data_parallel_world_size()
        self.dp_rank = mpu.get_data_parallel_rank()
        if self.cp > 1 and not _have_te():
            raise ValueError("context parallelism needs Transformer Engine attention (GPU)")
        if m.sequence_parallel and m.tensor_parallel > 1 and not _have_te():
            raise ValueError("sequence parallelism needs Transformer Engine norms (GPU)")

    def _build_bridge(self):
        from mbridge import AutoBridge
        from transformers import AutoConfig

        hf_config = AutoConfig.from_pretrained(self.model_path)
        base = type(AutoBridge.from_config(hf_config, dtype=self.dtype))
        bridge = _adapted_bridge_class(base)(hf_config, dtype=self.dtype)
        extra: dict[str, Any] = {
            "sequence_parallel": self.cfg.megatron.sequence_parallel and self.tp > 1,
            "masked_softmax_fusion": _have_te(),  # a CUDA kernel the local spec would need built
        }
        if self.cfg.gradient_checkpointing and not self.cuda:
            warnings.warn("gradient_checkpointing is ignored on CPU: megatron-core's activation recompute "
                          "saves and restores CUDA RNG states", stacklevel=2)
        elif self.cfg.gradient_checkpointing:
            extra |= {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}
        bridge.set_extra_args(**extra)
        if hf_config.vocab_size % self.tp:
            raise ValueError(f"vocab size {hf_config.vocab_size} is not divisible by tensor parallel {self.tp}")
        return bridge

    def _build_models(self) -> list[Any]:  # megatron-core's DDP wrappers (no_sync, zero_grad_buffer)
        ddp = {"grad_reduce_in_fp32": True, "overlap_grad_reduce": False,
               "use_distributed_optimizer": self._distributed_optimizer}
        models = self.bridge.get_model(wrap_with_ddp=True, bf16=self.dtype == torch.bfloat16, fp16=False,
                                       ddp_config=ddp, data_parallel_random_init=False)
        self.bridge.load_weights(models, str(self.model_path))
        for m in models:
            m.train()
        self.tied = bool(getattr(self.bridge.hf_config, "tie_word_embeddings", False))
        return models

    def _build_optimizer(self, lr: float):
        o = self.cfg.optim
        if not self.cuda:
            return _CPUAdamW(self.models, lr, o.betas, o.eps, o.weight_decay, o.grad_clip)
        from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer

        oc = OptimizerConfig(optimizer="adam", lr=lr, min_lr=0.0, weight_decay=o.weight_decay,
                             adam_beta1=o.betas[0], adam_beta2=o.betas[1], adam_eps=o.eps, clip_grad=o.grad_clip,
                             bf16=self.dtype == torch.bfloat16, params_dtype=self.dtype,
                             use_distributed_optimizer=self._distributed_optimizer)
        return get_megatron_optimizer(oc, self.models)

    def _build_scheduler(self, lr: float):
        from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler

        o = self.cfg.optim
        warmup = max(0, o.warmup_steps)
        sched = OptimizerParamScheduler(self.optimizer, init_lr=0.0, max_lr=lr, min_lr=0.0, lr_warmup_steps=warmup,
                                        lr_decay_steps=warmup + 1, lr_decay_style="constant",
                                        start_wd=o.weight_decay, end_wd=o.weight_decay, wd_incr_steps=1,
                                        wd_incr_style="constant")
        # Megatron warms up to lr·n/W at step n, the torch backend (LambdaLR) to lr·(n+1)/W: counting one
        # step ahead gives both backends the same schedule
        sched.step(1)
        return sched

    # ------------------------------------------------------------------ parallel helpers
    def _from_last_stage(self, obj: Any) -> Any:
        """`obj` as the last pipeline stage has it, on every stage."""
        if self.pp == 1:
            return obj
        from megatron.core import parallel_state as mpu

        box = [obj]
        torch.distributed.broadcast_object_list(box, src=mpu.get_pipeline_model_parallel_last_rank(),
                                                group=mpu.get_pipeline_model_parallel_group())
        return box[0]

    def _dp_gather(self, obj: Any) -> list[Any]:
        """`obj` of every data-parallel rank (over the gloo DP group)."""
        if self.dp == 1:
            return [obj]
        from megatron.core import parallel_state as mpu

        out: list[Any] = [None] * self.dp
        torch.distributed.all_gather_object(out, obj, group=mpu.get_data_parallel_group_gloo())
        return out

    # ------------------------------------------------------------------ batches and forward
    def _micro_batches(self, rows: list[PackedRow]) -> list[_MicroBatch]:
        """This data-parallel rank's rows (round robin), as padded batches on the device."""
        mine = [(r, False) for r in rows[self.dp_rank::self.dp]]
        if not mine:  # collectives need every rank: a row without loss tokens
            mine = [(rows[0], True)]
        multiple = (2 * self.cp if self.cp > 1 else 1) * (self.tp if self.bridge.config.sequence_parallel else 1)
        out = []
        for row, dummy in mine:
            starts = [k for k, p in enumerate(row.position_ids) if p == 0] + [len(row.position_ids)]
            spans = list(zip(starts[:-1], starts[1:], strict=True))
            width = max(e - s for s, e in spans)
            width = -(-width // multiple) * multiple
            ids = torch.zeros(len(spans), width, dtype=torch.long)
            targets = torch.zeros(len(spans), width, dtype=torch.long)
            bi, ti = [], []
            for b, (s, e) in enumerate(spans):
                ids[b, : e - s] = torch.tensor(row.input_ids[s:e])
                targets[b, : e - s] = torch.tensor(row.targets[s:e])
                bi += [b] * (e - s)
                ti += list(range(e - s))
            flat = row.tensors(self.device)
            if dummy:
                flat["mask"] = torch.zeros_like(flat["mask"])
            out.append(_MicroBatch(
                seqs=[row.seq[s] for s, _ in spans], flat=flat, input_ids=ids.to(self.device),
                position_ids=torch.arange(width).expand(len(spans), width).contiguous().to(self.device),
                targets=targets.to(self.device), bi=torch.tensor(bi, device=self.device),
                ti=torch.tensor(ti, device=self.device), dummy=dummy))
        return out

    def _model_inputs(self, mb: _MicroBatch) -> dict[str, Any]:
        ids, pos = mb.input_ids, mb.position_ids
        if self.cp > 1:
            from mbridge.core.util import split_data_cp_rank

            ids, pos = split_data_cp_rank(ids, self.cp, 1), split_data_cp_rank(pos, self.cp, 1)
        if _have_te():
            mask = None  # TE's causal kernels; right padding never precedes a real token
        else:  # the local spec needs an explicit mask (True = masked out)
            width = ids.shape[1]
            mask = ~torch.ones(width, width, dtype=torch.bool, device=self.device).tril()[None, None]
        return {"input_ids": ids, "position_ids": pos, "attention_mask": mask}

    def _logprobs(self, mb: _MicroBatch, logits: torch.Tensor) -> torch.Tensor:
        """Flat [N] log-probs of the row's targets from [B, T(/cp), V/tp] logits."""
        from megatron.core import parallel_state as mpu
        from megatron.core.tensor_parallel import vocab_parallel_cross_entropy

        if self.cp == 1:
            if self.tp == 1:  # the torch backend's own function (one fused log-softmax)
                return token_logprobs(logits, mb.targets, self.cfg.temperature)[mb.bi, mb.ti]
            return -vocab_parallel_cross_entropy(logits.float() / self.cfg.temperature, mb.targets)[mb.bi, mb.ti]
        from mbridge.core.util import split_data_cp_rank

        targets = split_data_cp_rank(mb.targets, self.cp, 1)
        lp = -vocab_parallel_cross_entropy(logits.float() / self.cfg.temperature, targets)
        # every CP rank holds chunks (r, 2cp-1-r) of the sequence: gather them all (the gather's
        # backward sums the ranks' gradients)
        from torch.distributed.nn.functional import all_gather  # differentiable, unlike torch.distributed's

        chunks = all_gather(lp, group=mpu.get_context_parallel_group())
        half = lp.shape[1] // 2
        pieces: list[torch.Tensor] = [lp] * (2 * self.cp)
        for r, c in enumerate(chunks):
            pieces[r], pieces[2 * self.cp - 1 - r] = c[:, :half], c[:, half:]
        return torch.cat(pieces, dim=1)[mb.bi, mb.ti]

    def _run(self, mbs: list[_MicroBatch], fn, forward_only: bool) -> list[Any]:
        """Forward (and backward) over the micro-batches; `fn(k, mb, logp) -> (loss | None, info)`.

        Returns the infos of this rank's micro-batches on the last pipeline stage ([] elsewhere).
        The loss of a micro-batch is a share of the step's loss (normalised step-wide), so shares add
        up: Megatron's DDP averages gradients over data × context ranks, hence the factor `dp` (the
        CP gather's backward already sums the CP copies).
        """
        grad = contextlib.nullcontext() if not forward_only else torch.no_grad()
        if self.pp == 1:
            model, infos = self.models[0], []
            with grad:
                for k, mb in enumerate(mbs):
                    sync = forward_only or k == len(mbs) - 1
                    with contextlib.nullcontext() if sync else model.no_sync():
                        loss, info = fn(k, mb, self._logprobs(mb, model(**self._model_inputs(mb))))
                        if not forward_only:
                            (loss * self.dp).backward()
                    infos.append(info)
            return infos
        from megatron.core.pipeline_parallel import get_forward_backward_func

        n = len(mbs)

        def forward_step(data_iterator, model):
            k, mb = next(data_iterator)
            output = model(**self._model_inputs(mb))

            def loss_func(out: torch.Tensor):
                loss, info = fn(k, mb, self._logprobs(mb, out))
                loss = out.sum() * 0.0 if loss is None else loss
                return loss * self.dp * n / self.cp, info  # the schedule scales by cp / n

            return output, loss_func

        with grad:
            return list(get_forward_backward_func()(
                forward_step_func=forward_step, data_iterator=iter(list(enumerate(mbs))), model=self.models,
                num_microbatches=n, seq_length=max(mb.input_ids.shape[1] for mb in mbs),
                micro_batch_size=max(mb.input_ids.shape[0] for mb in mbs), forward_only=forward_only))

    # ------------------------------------------------------------------ log-probs
    def logprobs(self, samples: list[Sample]) -> list[list[float]]:
        """Per sample, log πθ of each token given its prefix (0.0 for the first token)."""
        if not samples:
            return []
        mbs = self._micro_batches(pack(samples, self.cfg.max_tokens_per_micro_batch))
        infos = self._run(mbs, lambda k, mb, logp: (None, logp.detach().float().cpu()), forward_only=True)
        local: dict[int, list[float]] = {}
        for mb, lp in zip(mbs, infos, strict=False):
            if mb.dummy:
                continue
            seq = mb.flat["seq"].cpu()
            for i in mb.seqs:
                idx = (seq == i).nonzero().flatten()
                local[i] = [0.0] + lp[idx[:-1]].tolist()
        merged: dict[int, list[float]] = {}
        for part in self._dp_gather(local):
            merged |= part
        merged = self._from_last_stage(merged)
        return [merged[i] for i in range(len(samples))]

    # ------------------------------------------------------------------ RL
    def train_step(self, groups: list[list[Any]]) -> dict[str, float]:
        """One policy update on complete groups of trajectories (GSPO by default)."""
        samples, metrics = rl_samples(groups, self.cfg.loss)
        if not samples:
            # no signal (every group filtered): no optimizer step — Adam's momentum would still move
            # the weights — but the version advances, since staleness admission counts steps
            self.version += 1
            return metrics | {"skipped": 1.0}
        return metrics | self._policy_update(samples)

    def _policy_update(self, samples: list[Sample]) -> dict[str, float]:
        """One optimizer step; π_old is each micro-batch's log-probs under πθ, detached, as in the
        torch backend (the update is one step at the end: no forward-only pass for π_old)."""
        lc = self.cfg.loss
        rows = pack(samples, self.cfg.max_tokens_per_micro_batch)
        mbs = self._micro_batches(rows)
        advantages = torch.tensor([s.advantage for s in samples], device=self.device)
        n_seq = len(samples)
        # the step-wide normaliser, from all rows (every rank packs the same rows)
        total_mask = float(sum(sum(r.mask) for r in rows))
        seqs_with_tokens = len({s for r in rows for s, m in zip(r.seq, r.mask, strict=True) if m})
        norm = total_mask if lc.aggregation == "token-mean" else float(max(1, seqs_with_tokens))
        loss_fn = get_loss(lc.name)
        # π_old against the generators' behaviour log-probs, summed over this rank's micro-batches
        part = {"abs": 0.0, "n": 0, "ratio": 0.0, "max": -float("inf"), "min": float("inf")}

        def policy_loss(k: int, mb: _MicroBatch, logp: torch.Tensor):
            nonlocal part
            old, t = logp.detach(), mb.flat
            diff = old - t["behaviour"]  # log π_old − log π_behaviour
            d = diff[t["mask"].bool()]
            if d.numel():
                r = torch.exp(d)
                part = {"abs": part["abs"] + d.abs().sum().item(), "n": part["n"] + d.numel(),
                        "ratio": part["ratio"] + r.sum().item(), "max": max(part["max"], r.max().item()),
                        "min": min(part["min"], r.min().item())}
            weights = torch.clamp(torch.exp(diff), max=lc.tis_cap) if lc.tis_cap > 0 else None
            loss, stats = loss_fn(logp, old, advantages, t["mask"], t["seq"], n_seq, lc, norm=norm, weights=weights)
            return loss, {"loss": loss.item(), **stats}

        self._zero_grad()
        infos = self._run(mbs, policy_loss, forward_only=False)
        parts = [p for p in self._dp_gather(part) if p["n"]]
        n_tok = sum(p["n"] for p in parts)
        metrics = {"logprob_mismatch_abs_mean": sum(p["abs"] for p in parts) / n_tok if n_tok else 0.0,
                   "behaviour_ratio_mean": sum(p["ratio"] for p in parts) / n_tok if n_tok else 1.0,
                   "behaviour_ratio_max": max(p["max"] for p in parts) if n_tok else 1.0,
                   "behaviour_ratio_min": min(p["min"] for p in parts) if n_tok else 1.0}
        metrics = self._from_last_stage(metrics)  # π_old exists on the last pipeline stage only
        stats = self._step_stats(infos)
        metrics |= {k: v for k, v in stats.items() if k != "loss"}
        metrics |= self._optimizer_step()
        metrics["loss"] = stats["loss"]
        metrics["tokens"] = total_mask
        return metrics

    def _step_stats(self, infos: list[dict[str, float]]) -> dict[str, float]:
        """The summed loss over all ranks' micro-batches, and the last micro-batch's loss stats (as the
        torch backend reports them)."""
        local = {"loss": sum(i["loss"] for i in infos), "last": dict(infos[-1]) if infos else {}}
        parts = self._dp_gather(local)
        stats = {**parts[0]["last"], "loss": sum(p["loss"] for p in parts)}
        return self._from_last_stage(stats)

    # ------------------------------------------------------------------ SFT
    def sft_step(self, samples: list[Sample]) -> dict[str, float]:
        """One optimizer step of masked cross-entropy over `samples` (accumulated over rows)."""
        rows = pack(samples, self.cfg.max_tokens_per_micro_batch)
        mbs = self._micro_batches(rows)
        norm = float(sum(sum(r.mask) for r in rows))
        loss_fn = get_loss("sft")

        def sft_loss(k: int, mb: _MicroBatch, logp: torch.Tensor):
            t = mb.flat
            loss, _ = loss_fn(logp, t["mask"], t["seq"], len(samples), norm=max(1.0, norm))
            return loss, {"loss": loss.item()}

        self._zero_grad()
        infos = self._run(mbs, sft_loss, forward_only=False)
        total = self._step_stats(infos)["loss"]
        return {"sft_loss": total, "tokens": norm, **self._optimizer_step()}

    def reset_optimizer(self, lr: float) -> None:
        """A fresh optimizer and schedule (see TorchLearner.reset_optimizer: RL after SFT)."""
        self.optimizer = self._build_optimizer(lr)
        self.scheduler = self._build_scheduler(lr)

    def set_lr(self, lr: float) -> None:
        """Change the peak learning rate (SFT and RL use different ones); warm-up still applies."""
        self.scheduler.max_lr = float(lr)
        for group in self.optimizer.param_groups:
            if "max_lr" in group:  # Megatron's param groups carry their own
                group["max_lr"] = float(lr)
        self.scheduler.step(0)

    def _zero_grad(self) -> None:
        for m in self.models:
            m.zero_grad_buffer()
        self.optimizer.zero_grad()

    def _optimizer_step(self) -> dict[str, float]:
        from megatron.core.distributed import finalize_model_grads

        finalize_model_grads(self.models)  # DP reduction, tied-embedding and sequence-parallel norm grads
        _, grad_norm, _ = self.optimizer.step()
        self.scheduler.step(1)
        self.step += 1
        self.version += 1
        return {"grad_norm": float(grad_norm or 0.0), "lr": float(self.optimizer.param_groups[0]["lr"]),
                "learner_step": float(self.step)}

    # ------------------------------------------------------------------ weights and checkpoints
    def weights(self) -> tuple[int, dict[str, torch.Tensor]]:
        """The current policy version and a CPU copy of its weights (HF names), for the generators.

        Collective: every rank of the model-parallel group must call it (mbridge gathers TP shards
        and broadcasts PP stages); every rank gets the full state dict.
        """
        out = {name: t.detach().to("cpu", copy=True) for name, t in self.bridge.export_weights(self.models)}
        if self.tied and "lm_head.weight" not in out and "model.embed_tokens.weight" in out:
            out["lm_head.weight"] = out["model.embed_tokens.weight"].clone()  # as HF's state_dict lists it
        return self.version, out

    def _rank_file(self, path: Path, kind: str) -> Path:
        from megatron.core import parallel_state as mpu

        return path / (f"{kind}_tp{mpu.get_tensor_model_parallel_rank():02d}"
                       f"_pp{mpu.get_pipeline_model_parallel_rank():03d}.pt")

    def save(self, path: str | Path) -> Path:
        """Model, optimizer, scheduler, counters and RNG; one file per model-parallel rank."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if self._distributed_optimizer:  # collective over DP: the sharded Adam state gathered on DP rank 0
            self.optimizer.save_parameter_state(str(self._rank_file(path, "optim_params")))
        if self.dp_rank == 0:
            state = {
                "model": [m.state_dict() for m in self.models], "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(), "step": self.step, "version": self.version,
                "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate(),
                        "cuda": torch.cuda.get_rng_state_all() if self.cuda else None,
                        "tracker": self._tracker_states()},
            }
            target = self._rank_file(path, "learner")
            tmp = target.with_suffix(".pt.tmp")
            torch.save(state, tmp)
            tmp.replace(target)  # atomic: a crash mid-save keeps the previous checkpoint
        torch.distributed.barrier()
        return path

    def _tracker_states(self):
        if not self.cuda:
            return None
        from megatron.core.tensor_parallel import get_cuda_rng_tracker

        return get_cuda_rng_tracker().get_states()

    def load(self, path: str | Path) -> None:
        path = Path(path)
        state = torch.load(self._rank_file(path, "learner"), map_location=self.device, weights_only=False)
        for m, sd in zip(self.models, state["model"], strict=True):
            m.load_state_dict(sd)
        self.optimizer.load_state_dict(state["optimizer"])
        if self._distributed_optimizer:
            self.optimizer.load_parameter_state(str(self._rank_file(path, "optim_params")))
        self.scheduler.num_steps = 0  # load_state_dict adds the saved count
        self.scheduler.load_state_dict(state["scheduler"])
        self.step, self.version = state["step"], state["version"]
        rng = state["rng"]
        torch.set_rng_state(rng["torch"].cpu())
        np.random.set_state(rng["numpy"])
        random.setstate(rng["python"])
        if self.cuda and rng["cuda"] is not None:
            torch.cuda.set_rng_state_all([s.cpu() for s in rng["cuda"]])
        if self.cuda and rng["tracker"] is not None:
            from megatron.core.tensor_parallel import get_cuda_rng_tracker

            get_cuda_rng_tracker().set_states(rng["tracker"])

    def export_hf(self, path: str | Path) -> Path:
        """A Hugging Face folder of the current weights (loadable by vLLM and transformers), written
        by mbridge's `save_weights` (safetensors + config.json), plus the generation config."""
        path = Path(path)
        self.bridge.save_weights(self.models, str(path))
        if torch.distributed.get_rank() == 0 and (self.model_path / "generation_config.json").exists():
            shutil.copy(self.model_path / "generation_config.json", path / "generation_config.json")
        torch.distributed.barrier()
        return path
