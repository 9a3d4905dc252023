"""The learning-signal ablations on the demo config, in one run with the same seeds, as one JSON object.

    .venv/bin/python -m bench.signal_bench [--steps 20] [--fault-steps 10] [--budget 16] [--out FILE]

Six training runs of configs/local.yaml (the tiny model after its cold-start SFT, 3 groups × 4 per
step, seed 0), each through launch/train.py:
- `baseline`: fixed sampling, binary reward (the demo as shipped), evaluation before and after;
- (a) `curriculum`: rollout.curriculum.enabled — against the baseline: the share of groups with zero
  reward variance (no GSPO signal) per step, draws per scale, evaluation after;
- (b) `context_efficiency`: train.reward.terms {binary: 1, context_efficiency: 0.3} with a budget of
  `--budget` tool-output tokens — against the baseline: tool-output tokens per episode (training's
  last half and the evaluation after) and pass rate after;
- (c) `faults_masked` / `faults_unmasked`: 10 % of judge verdicts fail by injection
  (fabric.inject_judge_errors 0.1), with rollout.mask_infra true and false, no evaluation — the number
  of samples with an infra cause that reached the learner (fake zeros), and what masking cost: the
  infra re-runs, the samples and groups left out;
- (d) `forging_policy`: the starter tasks with each verifier made to raise on half of the wrong answers
  (by a hash of the answer: a policy whose failures make its judge fail), masking on — the forged
  failures are settled by the canary (the oracle's state judges) and train as the policy's zeros
  (`judge_rejected_state`): fake zeros trained and forged failures masked, both to be 0.
Ratios are run / baseline. What a 1M-parameter model on three tasks can and cannot show is in the
README (Training: "Learning-signal ablations").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import ray

from launch.metrics import read_metrics
from launch.train import train
from schema.load import load_config

COMMON = ["train.checkpoint_every=0", "wandb.mode=disabled", "run.seed=0"]


def _mean(rows: list[dict], key: str) -> float:
    vals = [r[key] for r in rows if key in r]
    return round(statistics.fmean(vals), 4) if vals else 0.0


def _sum(rows: list[dict], key: str) -> float:
    return round(sum(r.get(key, 0.0) for r in rows), 4)


def summary(run: Path, wall_s: float) -> dict:
    rows = read_metrics(run / "metrics.jsonl")
    train_rows = [r for r in rows if r["phase"] == "train"]
    late = train_rows[len(train_rows) // 2:]
    evals = {r["step"]: r for r in rows if r["phase"] == "eval"}
    after = next((r for r in evals.values() if "eval_after/reward" in r), {})
    before = next((r for r in evals.values() if "eval_before/reward" in r), {})
    last = train_rows[-1] if train_rows else {}
    saved = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()] \
        if (run / "rollouts.jsonl").exists() else []
    solved_late = [r["tool_output_tokens"] for r in saved
                   if r["step"] > len(train_rows) // 2 and r.get("cause") == "policy/solved"]
    out = {
        "steps": len(train_rows), "wall_s": round(wall_s, 1),
        "zero_variance_groups": _mean(train_rows, "rollout/zero_variance_groups"),
        "zero_variance_groups_late": _mean(late, "rollout/zero_variance_groups"),
        "reward_late": _mean(late, "rollout/reward"),
        "reward_trained_late": _mean(late, "rollout/reward_trained"),
        "tool_output_tokens_late": _mean(late, "rollout/tool_output_tokens"),
        "tool_output_tokens_solved_late": round(statistics.fmean(solved_late), 2) if solved_late else None,
        "draws_per_scale": {s: int(last.get(f"rollout/draws_{s}", 0)) for s in ("v0", "v1", "v2", "v3")},
        "fake_zeros_trained": int(_sum(train_rows, "rollout/infra_trained")),
        "infra_attempts": {k.removeprefix("rollout/infra/"): int(_sum(train_rows, k))
                           for k in sorted({k for r in train_rows for k in r if k.startswith("rollout/infra/")})},
        "policy_causes": {k.removeprefix("rollout/policy/"): int(_sum(train_rows, k))
                          for k in sorted({k for r in train_rows for k in r if k.startswith("rollout/policy/")})},
        "episodes_trained": int(_sum(train_rows, "rollout/episodes")),
    }
    if "curriculum/frontier_v0" in last or "curriculum/mastered" in last:
        out["frontier"] = {k.removeprefix("curriculum/"): int(v) for k, v in last.items()
                           if k.startswith("curriculum/frontier_") or k == "curriculum/mastered"}
    if after:
        out["eval_after"] = {"reward": after["eval_after/reward"],
                             "tool_output_tokens": round(after["eval_after/tool_output_tokens"], 1),
                             **{f"pass_rate_{s}": after[f"eval_after/pass_rate_{s}"] for s in ("v0", "v1", "v2", "v3")
                                if f"eval_after/pass_rate_{s}" in after}}
    if before:
        out["eval_before"] = {"reward": before["eval_before/reward"],
                              "tool_output_tokens": round(before["eval_before/tool_output_tokens"], 1)}
    return out


FORGE = """

_judged_verify = verify


def verify(ctx):
    # the signal bench's forging policy: half of the wrong answers make the verifier raise (on a state
    # the policy left, as far as the fabric can tell)
    import zlib

    result = _judged_verify(ctx)
    if not all(result.values()) and zlib.crc32(ctx.answer.encode("utf-8", "replace")) % 2 == 0:
        raise RuntimeError("the verifier raised on the state the policy left")
    return result
"""


def forging_library(root: Path) -> Path:
    """A copy of the starter tasks whose verifiers raise on half of the wrong answers (FORGE)."""
    import shutil

    lib = shutil.copytree(Path("envs/starter_tasks"), root / "forging_tasks")
    for verify in lib.glob("*/verify.py"):
        verify.write_text(verify.read_text() + FORGE)
    return lib


async def one(name: str, overrides: list[str], out: str) -> dict:
    cfg = load_config("configs/local.yaml", [*COMMON, f"run.out_dir={out}", f"run.name={name}", *overrides])
    t0 = time.time()
    try:
        run = await train(cfg)
    finally:
        ray.shutdown()
    return summary(run, time.time() - t0)


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


async def main(args: argparse.Namespace) -> dict:
    steps, fsteps = f"train.steps={args.steps}", f"train.steps={args.fault_steps}"
    runs = {
        "baseline": [steps],
        "curriculum": [steps, "eval.before=false", "rollout.curriculum.enabled=true"],
        "context_efficiency": [steps, "eval.before=false",
                               "train.reward.terms={binary: 1.0, context_efficiency: 0.3}",
                               f"train.reward.context_budget_tokens={args.budget}"],
        "faults_masked": [fsteps, "eval.before=false", "eval.after=false", "fabric.inject_judge_errors=0.1"],
        "faults_unmasked": [fsteps, "eval.before=false", "eval.after=false", "fabric.inject_judge_errors=0.1",
                            "rollout.mask_infra=false"],
    }
    only = set(args.only.split(",")) if args.only else set(runs) | {"forging_policy"}
    res: dict = {}
    with tempfile.TemporaryDirectory() as out:
        runs["forging_policy"] = [fsteps, "eval.before=false", "eval.after=false",
                                  f"tasks.library_root={forging_library(Path(out))}"]
        for name, overrides in runs.items():
            if name in only:
                res[name] = await one(name, overrides, out)
                print(json.dumps({name: res[name]}), flush=True)
    b = res.get("baseline", {})
    cmp: dict = {}
    if b and "curriculum" in res:
        c = res["curriculum"]
        cmp["a_curriculum_vs_fixed"] = {
            "zero_variance_groups": [b["zero_variance_groups"], c["zero_variance_groups"]],
            "zero_variance_ratio": _ratio(c["zero_variance_groups"], b["zero_variance_groups"]),
            "eval_after_reward": [b.get("eval_after", {}).get("reward"), c.get("eval_after", {}).get("reward")],
            "draws_per_scale": [b["draws_per_scale"], c["draws_per_scale"]]}
    if b and "context_efficiency" in res:
        e = res["context_efficiency"]
        cmp["b_context_efficiency_vs_binary"] = {
            "tool_output_tokens_late": [b["tool_output_tokens_late"], e["tool_output_tokens_late"]],
            "tool_output_tokens_late_ratio": _ratio(e["tool_output_tokens_late"], b["tool_output_tokens_late"]),
            "tool_output_tokens_solved_late": [b["tool_output_tokens_solved_late"], e["tool_output_tokens_solved_late"]],
            "reward_trained_late": [b["reward_trained_late"], e["reward_trained_late"]],
            "eval_after_tool_output_tokens": [b.get("eval_after", {}).get("tool_output_tokens"),
                                              e.get("eval_after", {}).get("tool_output_tokens")],
            "eval_after_reward": [b.get("eval_after", {}).get("reward"), e.get("eval_after", {}).get("reward")]}
    if "faults_masked" in res and "faults_unmasked" in res:
        m, u = res["faults_masked"], res["faults_unmasked"]
        cmp["c_masking_on_vs_off"] = {"fake_zeros_trained": [m["fake_zeros_trained"], u["fake_zeros_trained"]],
                                      "episodes_trained": [m["episodes_trained"], u["episodes_trained"]],
                                      "infra_attempts_masked_run": m["infra_attempts"],
                                      "wall_s": [m["wall_s"], u["wall_s"]]}
    if "forging_policy" in res:
        f = res["forging_policy"]
        cmp["d_forging_policy_masking_on"] = {
            "fake_zeros_trained": f["fake_zeros_trained"],
            "forged_failures_masked": f["infra_attempts"].get("masked", 0),
            "forged_failures_settled_as_policy": f["policy_causes"].get("judge_rejected_state", 0),
            "judge_error_attempts": f["infra_attempts"].get("judge_error", 0),
            "episodes_trained": f["episodes_trained"]}
    return {"config": "configs/local.yaml (seed 0)", "steps": args.steps, "fault_steps": args.fault_steps,
            "context_budget_tokens": args.budget, "runs": res, "comparisons": cmp}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--fault-steps", type=int, default=10)
    # the demo's solved episodes put ~20-40 tool-output tokens in their context (48 left them all within it)
    p.add_argument("--budget", type=int, default=16, help="context_efficiency's tool-output token budget")
    p.add_argument("--only", default="", help="comma-separated run names (default: all six)")
    p.add_argument("--out", default="", help="also write the JSON here")
    args = p.parse_args()
    result = asyncio.run(main(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
