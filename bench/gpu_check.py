"""The one-shot GPU check: run when a GPU machine is lent (one H200, no network, minutes of time).

    PYTHONUNBUFFERED=1 python -m bench.gpu_check [--out report.json]      (scripts/gpu_check.sh)

In one process, in order, each check timed and recorded whether it passes or fails (a failure does
not stop the later checks that do not depend on it):

    preflight    CUDA and the packages each check needs: a missing one is named at once (exit 2)
    vllm_cuda    the vLLM engine (CUDA) on the tiny model the project builds: two generations with
                 behaviour log-probs
    gspo_bf16    the torch learner on the GPU in bf16 autocast: a GSPO step on those generations
    nccl_weights the collective transport over NCCL (rollout/weights/collective.py) from the learner
                 into the vLLM engine's worker; then the engine's log-probs of a fixed continuation
                 against the learner's (within bf16 tolerance) and the version tag
    gloo_weights only if NCCL refused: the same transfer over gloo into the CUDA engine (NCCL needs
                 one GPU per rank and both ranks share the one GPU of a lent machine)
    megatron     a megatron-core GSPO step (mbridge) on the GPU, if the image has both

It prints one JSON report (and writes it to --out). Exit status 0 when every check that ran passed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REQUIRED = ("torch", "msgspec", "transformers", "tokenizers", "safetensors", "vllm", "jinja2")
OPTIONAL = ("megatron.core", "mbridge")


def preflight() -> dict[str, Any]:
    found, missing = {}, []
    for name in REQUIRED + OPTIONAL:
        try:
            found[name] = getattr(importlib.import_module(name), "__version__", "?")
        except Exception as exc:  # noqa: BLE001
            if name in REQUIRED:
                missing.append(f"{name} ({type(exc).__name__}: {exc})")
            else:
                found[name] = None
    out: dict[str, Any] = {"python": platform.python_version(), "packages": found, "missing": missing}
    if "torch" in found:
        import torch

        out["cuda"] = torch.cuda.is_available()
        if out["cuda"]:
            out["device"] = torch.cuda.get_device_name(0)
            out["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    return out


class Report:
    def __init__(self) -> None:
        self.checks: dict[str, dict[str, Any]] = {}

    def run(self, name: str, fn: Any, *args: Any) -> Any:
        t0 = time.monotonic()
        try:
            result = fn(*args)
            self.checks[name] = {"ok": True, "s": round(time.monotonic() - t0, 1), **(result[1] if result else {})}
            print(f"[gpu_check] {name}: ok ({self.checks[name]['s']} s)", file=sys.stderr, flush=True)
            return result[0] if result else None
        except Exception as exc:  # noqa: BLE001
            self.checks[name] = {"ok": False, "s": round(time.monotonic() - t0, 1),
                                 "error": f"{type(exc).__name__}: {exc}"[:2000],
                                 "trace": traceback.format_exc()[-3000:]}
            print(f"[gpu_check] {name}: FAILED {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return None


def _trajectories(gens: list[Any], prompt: list[int]) -> list[list[Any]]:
    from schema.records import Trajectory

    trajs = [Trajectory(task_id="gpu_check", scale="v0", harness="ptc", group_id="g", sample_idx=i,
                        policy_version=0, token_ids=prompt + g.token_ids,
                        loss_mask=[0] * len(prompt) + [1] * len(g.token_ids),
                        logprobs=[0.0] * len(prompt) + list(g.logprobs), prompt_len=len(prompt), turns=[],
                        final_answer="", termination="answer", reward=float(i % 2))
             for i, g in enumerate(gens)]
    return [trajs]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="")
    args = p.parse_args()
    t_start = time.monotonic()
    report: dict[str, Any] = {"preflight": preflight()}
    pf = report["preflight"]
    if pf["missing"] or not pf.get("cuda"):
        report["error"] = ("missing packages: " + "; ".join(pf["missing"])) if pf["missing"] else \
            "CUDA is not available (torch.cuda.is_available() is False): this check needs a GPU"
        print(json.dumps(report, indent=2))
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=2))
        return 2

    import torch

    from learner.torch_backend import TorchLearner
    from rollout.generators.vllm_backend import VLLMGenerator
    from rollout.tiny_model import build_tiny
    from rollout.weights.collective import CollectiveSender
    from schema.config import LearnerConfig, OptimConfig, WeightTransportConfig
    from schema.records import Prompt, SamplingParams

    checks = Report()
    tiny = checks.run("tiny_model", lambda: (build_tiny(), {}))
    prompt = list(range(10, 60))
    loop = asyncio.new_event_loop()
    engine = VLLMGenerator(tiny, max_model_len=4096, gpu_memory_utilization=0.25, dtype="bfloat16")

    def vllm_cuda():
        loop.run_until_complete(engine.start())
        gens = [loop.run_until_complete(engine.generate(Prompt(prompt), SamplingParams(temperature=1.0, max_new_tokens=24,
                                                                                seed=s))) for s in range(4)]
        assert all(g.token_ids and len(g.logprobs) == len(g.token_ids) for g in gens)
        return gens, {"tokens": sum(len(g.token_ids) for g in gens)}

    gens = checks.run("vllm_cuda", vllm_cuda) if tiny else None
    cfg = LearnerConfig(optim=OptimConfig(lr=1e-3), bf16=True, max_tokens_per_micro_batch=4096)
    learner = checks.run("learner_load", lambda: (TorchLearner(tiny, cfg), {})) if tiny else None

    def gspo_bf16():
        assert learner.device.type == "cuda"
        m = learner.train_step(_trajectories(gens, prompt))
        assert learner.version == 1 and all(v == v for v in m.values())  # no NaN
        return None, {"loss": m.get("loss"), "mismatch": m.get("logprob_mismatch_abs_mean"),
                      "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}

    stepped = learner is not None and gens is not None and checks.run("gspo_bf16", gspo_bf16) is None and \
        checks.checks["gspo_bf16"]["ok"]

    def transfer(backend: str):
        from learner.batch import Sample

        version, weights = learner.weights()
        sender = CollectiveSender(WeightTransportConfig(kind="collective", backend=backend, bucket_mb=64, timeout_s=60))
        update = sender.offer(version, weights, epoch=1, world_size=2)
        t0 = time.monotonic()

        async def both():
            await asyncio.gather(asyncio.to_thread(sender.send, update), engine.receive_weights(update, 1))

        loop.run_until_complete(both())
        moved_s = time.monotonic() - t0
        out = loop.run_until_complete(engine.generate(Prompt(prompt), SamplingParams(temperature=1.0, max_new_tokens=16,
                                                                             seed=7)))
        [ref] = learner.logprobs([Sample(prompt + out.token_ids, [0] * len(prompt) + [1] * len(out.token_ids))])
        diff = max(abs(a - b) for a, b in zip(out.logprobs, ref[len(prompt):], strict=True))
        assert out.policy_version == version, (out.policy_version, version)
        assert diff < 0.1, f"engine vs learner log-probs differ by {diff:.4f} (bf16 tolerance 0.1)"
        return None, {"version": version, "buckets": len(update.buckets), "transfer_s": round(moved_s, 2),
                      "max_abs_logprob_diff": round(diff, 5)}

    if stepped:
        checks.run("nccl_weights", transfer, "nccl")
        if not checks.checks["nccl_weights"]["ok"]:
            checks.run("gloo_weights", transfer, "gloo")
    loop.run_until_complete(engine.close())
    learner = None  # noqa: F841  (the GPU memory for the megatron check)
    torch.cuda.empty_cache()

    if pf["packages"].get("megatron.core") and pf["packages"].get("mbridge") and gens is not None:
        def megatron():
            import os

            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", "29533")
            from learner.megatron_backend import MegatronLearner

            mega = MegatronLearner(tiny, LearnerConfig(backend="megatron", optim=OptimConfig(lr=1e-3), bf16=True))
            m = mega.train_step(_trajectories(gens, prompt))
            return None, {"loss": m.get("loss")}

        checks.run("megatron", megatron)
    else:
        checks.checks["megatron"] = {"ok": None, "skipped": "megatron-core or mbridge is not installed"}

    report["checks"] = checks.checks
    report["total_s"] = round(time.monotonic() - t_start, 1)
    report["ok"] = all(c["ok"] is not False for c in checks.checks.values())
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
