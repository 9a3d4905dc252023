"""The one-shot GPU check, fitted to the GPU machine this project is lent: one H200 (or H100), no
network, Python 3.12 with torch (CUDA) and transformers, and none of vLLM, Ray, msgspec, mcp or
megatron-core. What can travel does (scripts/gpu_wheels.sh: msgspec, megatron-core, mbridge, verl and
what its loss module imports, as cp312 wheels); vLLM and Ray cannot (their wheels are far over what one
call may carry), so the checks that need them are named in the report as not run, with the reason.

    bash scripts/gpu_wheels.sh                     # here: the wheels into .whl/ (git-ignored)
    bash scripts/gpu_check.sh                      # there (device run, carry .whl): the JSON report

In one process, each check timed and recorded (a failure stops only the checks that need its result):

    preflight        CUDA and each check's packages: without CUDA it stops at once (exit 2), naming why
    tiny_model       the tiny model the project builds (tokenizer and weights)
    hf_cuda          the transformers generator on CUDA in bf16: generations with behaviour log-probs
    logprob_parity   the same weights in CUDA bf16 and CPU fp32: log-probs of those generations
    gspo_bf16        the torch learner on CUDA with bf16 autocast: a GSPO step on those generations
    megatron_bf16    a megatron-core GSPO step (mbridge) on CUDA in bf16, one rank
    verl_gspo_cuda   verl's compute_policy_loss_gspo against our GSPO loss on CUDA: loss and gradient

It prints one JSON report (and writes it to --out). Exit status 0 when every check that ran passed.
`--rehearse` runs the same checks' code on the CPU (no megatron: it needs CUDA or the tests' patches),
to find a broken check here before device time is spent on it: a rehearsal verifies nothing on a GPU,
and its report says `"device": "cpu (rehearsal)"`.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.abc
import importlib.machinery
import json
import platform
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: what each check imports (a check whose packages are missing is reported as not run, with them)
NEEDS = {
    "tiny_model": ("msgspec", "transformers", "tokenizers", "safetensors", "jinja2"),
    "hf_cuda": ("msgspec", "transformers"),
    "logprob_parity": ("msgspec", "transformers"),
    "gspo_bf16": ("msgspec", "transformers"),
    "megatron_bf16": ("msgspec", "megatron.core", "mbridge"),
    "verl_gspo_cuda": ("msgspec", "verl", "tensordict", "omegaconf"),
}
#: what cannot run on the lent machine, and why (the report says so rather than skipping quietly)
NOT_RUN = {
    "vllm_cuda": "vLLM is not on the machine's image and its wheel (hundreds of MB) is over what one call may "
                 "carry (64 MiB): the vLLM engine on CUDA and its staged weight receive are unchecked",
    "nccl_weights": "the collective weight transport over NCCL needs one GPU per rank (two) and a vLLM engine to "
                    "receive; one GPU is lent",
    "fabric": "Ray is not on the image and its wheel is over the carry limit: the actor fabric runs on the CPU "
              "twin only (the test suite)",
}
#: tolerances: bf16 against fp32 log-probs; fp32 GSPO loss and gradient against verl's
PARITY_MAX = 0.25
PARITY_MEAN = 0.05
LOSS_TOL = 1e-5


def _available(name: str) -> str | None:
    """The module's version (or "?"), or None when it does not import."""
    try:
        return getattr(importlib.import_module(name), "__version__", "?")
    except Exception:  # noqa: BLE001 - a module that fails to import is missing for the checks that need it
        return None


class _RayStandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """verl's package imports Ray when it is imported (verl/protocol.py), for annotations only
    (`ray.ObjectRef`); its loss functions never touch it. The image has no Ray and Ray cannot be
    carried, so for the verl check an empty module stands in for it: any use of Ray raises."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name == "ray" or name.startswith("ray."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = types.ModuleType(spec.name)
        module.__path__ = []  # type: ignore[attr-defined]
        module.ObjectRef = type("ObjectRef", (), {})  # type: ignore[attr-defined]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


DEVICE = "cuda"


def preflight(rehearse: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"python": platform.python_version()}
    torch_version = _available("torch")
    out["torch"] = torch_version
    if torch_version is None:
        out["error"] = "torch does not import: the GPU check needs the machine's PyTorch"
        return out
    import torch

    out["cuda"] = torch.cuda.is_available()
    if rehearse:
        out["device"] = "cpu (rehearsal)"
    elif not out["cuda"]:
        out["error"] = ("CUDA is not available (torch.cuda.is_available() is False): the GPU check runs on a lent GPU "
                        "machine (bash scripts/gpu_check.sh there); nothing was checked")
        return out
    else:
        out["device"] = torch.cuda.get_device_name(0)
        out["capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
    if importlib.util.find_spec("ray") is None:
        sys.meta_path.insert(0, _RayStandIn())
        out["ray"] = "absent (an empty stand-in lets verl's loss module import)"
    names = sorted({n for needs in NEEDS.values() for n in needs})
    out["packages"] = {n: _available(n) for n in names}
    return out


class Report:
    def __init__(self, packages: dict[str, str | None]):
        self.checks: dict[str, dict[str, Any]] = {}
        self.packages = packages

    def run(self, name: str, fn: Any, *args: Any) -> Any:
        missing = [n for n in NEEDS.get(name, ()) if self.packages.get(n) is None]
        if missing:
            self.checks[name] = {"ok": None, "not_run": f"missing {', '.join(missing)} (bash scripts/gpu_wheels.sh "
                                                         "here, then carry .whl)"}
            print(f"[gpu_check] {name}: not run (missing {', '.join(missing)})", file=sys.stderr, flush=True)
            return None
        t0 = time.monotonic()
        try:
            result = fn(*args)
            self.checks[name] = {"ok": True, "s": round(time.monotonic() - t0, 1), **(result[1] if result else {})}
            print(f"[gpu_check] {name}: ok ({self.checks[name]['s']} s)", file=sys.stderr, flush=True)
            return result[0] if result else None
        except Exception as exc:  # noqa: BLE001
            self.checks[name] = {"ok": False, "s": round(time.monotonic() - t0, 1),
                                 "error": f"{type(exc).__name__}: {exc}"[:2000], "trace": traceback.format_exc()[-3000:]}
            print(f"[gpu_check] {name}: FAILED {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return None

    def passed(self, name: str) -> bool:
        return bool(self.checks.get(name, {}).get("ok"))


def _trajectories(gens: list[Any], prompt: list[int]) -> list[list[Any]]:
    from schema.records import Trajectory

    return [[Trajectory(task_id="gpu_check", scale="v0", harness="ptc", group_id="g", sample_idx=i, policy_version=0,
                        token_ids=prompt + g.token_ids, loss_mask=[0] * len(prompt) + [1] * len(g.token_ids),
                        logprobs=[0.0] * len(prompt) + list(g.logprobs), prompt_len=len(prompt), turns=[],
                        final_answer="", termination="answer", reward=float(i % 2))
             for i, g in enumerate(gens)]]


def _logprobs(model: Any, ids: list[int], start: int) -> Any:
    import torch

    x = torch.tensor([ids], device=next(model.parameters()).device)
    with torch.no_grad():
        logits = model(x).logits[0, start - 1:-1].float()
    return torch.log_softmax(logits, -1).gather(1, x[0, start:, None])[:, 0].cpu()


def verl_parity() -> tuple[None, dict[str, Any]]:
    """Our GSPO loss and verl's on the same CUDA tensors (fp32): random rollouts of several lengths,
    masked observation tokens, log-ratios inside and outside the paper's clip range."""
    import torch
    from verl.trainer.ppo import core_algos
    from verl.workers.config.actor import ActorConfig
    from verl.workers.config.actor import PolicyLossConfig as VerlPolicyLoss

    from learner.losses import PolicyLossConfig, get_loss

    dev = torch.device(DEVICE)
    worst = {"loss": 0.0, "grad": 0.0}
    for seed, spread in ((0, 1e-4), (1, 3e-3), (2, 0.5)):
        g = torch.Generator().manual_seed(seed)
        lengths = [int(torch.randint(8, 300, (1,), generator=g)) for _ in range(8)]
        old = [-torch.rand(n, generator=g) * 3 for n in lengths]
        new = [o + torch.randn(n, generator=g) * spread for o, n in zip(old, lengths, strict=True)]
        mask = [(torch.rand(n, generator=g) < 0.7).float() for n in lengths]
        adv = torch.randn(len(lengths), generator=g)
        cfg = PolicyLossConfig(aggregation="seq-mean-token-mean")
        ours_new = torch.cat(new).to(dev).requires_grad_(True)
        seq = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)]).to(dev)
        loss_a, _ = get_loss("gspo")(ours_new, torch.cat(old).to(dev), adv.to(dev), torch.cat(mask).to(dev), seq,
                                     len(lengths), cfg)
        loss_a.backward()
        width = max(lengths)

        def padded(rows: list[Any], width: int = width) -> Any:
            out = torch.zeros(len(rows), width)
            for i, r in enumerate(rows):
                out[i, : len(r)] = r
            return out.to(dev)

        verl_new = padded(new).requires_grad_(True)
        actor = ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1, clip_ratio=cfg.clip_low,
                            clip_ratio_low=cfg.clip_low, clip_ratio_high=cfg.clip_high, loss_agg_mode=cfg.aggregation,
                            policy_loss=VerlPolicyLoss(loss_mode="gspo"), global_batch_info={})
        loss_b, _ = core_algos.compute_policy_loss_gspo(padded(old), verl_new, adv[:, None].expand(-1, width).to(dev),
                                                        padded(mask), loss_agg_mode=cfg.aggregation, config=actor)
        loss_b.backward()
        grads_a = ours_new.grad.split(lengths)
        worst["loss"] = max(worst["loss"], abs(loss_a.item() - loss_b.item()))
        for i, n in enumerate(lengths):
            worst["grad"] = max(worst["grad"], (grads_a[i] - verl_new.grad[i, :n]).abs().max().item())
    assert worst["loss"] < LOSS_TOL and worst["grad"] < LOSS_TOL, worst
    return None, {"max_abs_loss_diff": worst["loss"], "max_abs_grad_diff": worst["grad"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="")
    p.add_argument("--rehearse", action="store_true", help="the checks' code on the CPU (verifies no GPU path)")
    args = p.parse_args()
    global DEVICE
    DEVICE = "cpu" if args.rehearse else "cuda"
    t_start = time.monotonic()
    report: dict[str, Any] = {"preflight": preflight(args.rehearse), "not_run": dict(NOT_RUN)}

    def finish(code: int) -> int:
        report["total_s"] = round(time.monotonic() - t_start, 1)
        text = json.dumps(report, indent=2, default=str)
        print(text)
        if args.out:
            Path(args.out).write_text(text)
        return code

    if "error" in report["preflight"]:
        print(f"gpu_check: {report['preflight']['error']}", file=sys.stderr)
        return finish(2)
    import torch

    checks = Report(report["preflight"]["packages"])
    report["checks"] = checks.checks

    def tiny_model() -> tuple[Any, dict[str, Any]]:
        from rollout.tiny_model import build_tiny

        return build_tiny(), {}

    tiny = checks.run("tiny_model", tiny_model)
    prompt = list(range(10, 60))
    gens: list[Any] | None = None

    def hf_cuda() -> tuple[Any, dict[str, Any]]:
        from rollout.generators.hf import HFGenerator
        from schema.records import Prompt, SamplingParams

        gen = HFGenerator(tiny, device=DEVICE, dtype="bfloat16")

        async def four() -> list[Any]:
            try:
                return [await gen.generate(Prompt(prompt), SamplingParams(temperature=1.0, max_new_tokens=32, seed=s))
                        for s in range(4)]
            finally:
                await gen.close()

        out = asyncio.run(four())
        assert all(g.token_ids and len(g.logprobs) == len(g.token_ids) for g in out)
        return out, {"tokens": sum(len(g.token_ids) for g in out)}

    if tiny:
        gens = checks.run("hf_cuda", hf_cuda)

    def logprob_parity() -> tuple[None, dict[str, Any]]:
        from transformers import AutoModelForCausalLM

        cuda = AutoModelForCausalLM.from_pretrained(tiny, dtype=torch.bfloat16).to(DEVICE).eval()
        cpu = AutoModelForCausalLM.from_pretrained(tiny, dtype=torch.float32).eval()
        diffs = torch.cat([(_logprobs(cuda, prompt + g.token_ids, len(prompt)) -
                            _logprobs(cpu, prompt + g.token_ids, len(prompt))).abs() for g in gens or []])
        sampled = torch.cat([(torch.tensor(g.logprobs) - _logprobs(cpu, prompt + g.token_ids, len(prompt))).abs()
                             for g in gens or []])
        stats = {"max_abs_diff": round(diffs.max().item(), 5), "mean_abs_diff": round(diffs.mean().item(), 5),
                 "sampler_vs_cpu_max": round(sampled.max().item(), 5)}
        assert stats["max_abs_diff"] < PARITY_MAX and stats["mean_abs_diff"] < PARITY_MEAN, stats
        return None, stats

    if gens:
        checks.run("logprob_parity", logprob_parity)

    def gspo_bf16() -> tuple[None, dict[str, Any]]:
        from learner.torch_backend import TorchLearner
        from schema.config import LearnerConfig, OptimConfig

        learner = TorchLearner(tiny, LearnerConfig(optim=OptimConfig(lr=1e-3), bf16=True, max_tokens_per_micro_batch=4096))
        assert learner.device.type == DEVICE
        m = learner.train_step(_trajectories(gens or [], prompt))
        assert learner.version == 1 and all(v == v for v in m.values())  # no NaN
        peak = torch.cuda.max_memory_allocated() / 2**30 if DEVICE == "cuda" else 0.0
        return None, {"loss": m.get("loss"), "mismatch": m.get("logprob_mismatch_abs_mean"), "peak_gib": round(peak, 2)}

    if gens:
        checks.run("gspo_bf16", gspo_bf16)
        if DEVICE == "cuda":
            torch.cuda.empty_cache()

    def megatron_bf16() -> tuple[None, dict[str, Any]]:
        import os

        from learner.megatron_backend import MegatronLearner
        from schema.config import LearnerConfig, OptimConfig

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29533")
        mega = MegatronLearner(tiny, LearnerConfig(backend="megatron", optim=OptimConfig(lr=1e-3), bf16=True))
        m = mega.train_step(_trajectories(gens or [], prompt))
        assert all(v == v for v in m.values())
        return None, {"loss": m.get("loss")}

    if gens and not args.rehearse:
        checks.run("megatron_bf16", megatron_bf16)
    elif args.rehearse:
        report["not_run"]["megatron_bf16"] = "a rehearsal: megatron-core needs CUDA (or the tests' CPU patches)"
    checks.run("verl_gspo_cuda", verl_parity)

    report["ok"] = all(c["ok"] is not False for c in checks.checks.values())
    return finish(0 if report["ok"] else 1)


if __name__ == "__main__":
    sys.exit(main())
