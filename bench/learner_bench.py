"""Learner throughput per backend on the tiny model, side by side (one JSON object).

    .venv/bin/python -m bench.learner_bench [--groups 8] [--group-size 4] [--length 512] [--steps 3]
                                            [--repeats 2] [--micro-batch-tokens 4096 1]

Each backend takes the same GSPO steps on the same synthetic groups (random tokens, half of each
sequence the model's own, fake behaviour log-probs, rewards varying within a group): one warm-up
step, then the median of `--steps` timed steps. Each backend runs in a fresh process, alternating
with the other `--repeats` times; its fastest repeat counts. Tokens/s counts every token of the step
(prompt and completion) through the forward and backward (π_old is their log-probs, detached) and
the optimizer step. The megatron row is skipped where megatron-core or mbridge is not installed. Two
row layouts by default: sequences packed into rows of 4096 tokens (the megatron backend pads the
row's sequences into a batch; the torch backend on CPU runs a row per sequence whatever the budget,
and packs under a block-causal T×T mask on a GPU without flash attention) and one sequence per row.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch

from learner.losses import PolicyLossConfig
from rollout.tiny_model import build_tiny
from schema.config import LearnerConfig, OptimConfig
from schema.records import Trajectory


def make_groups(n_groups: int, group_size: int, length: int, vocab: int, seed: int = 0) -> list[list[Trajectory]]:
    g = torch.Generator().manual_seed(seed)
    groups = []
    for gi in range(n_groups):
        group = []
        for si in range(group_size):
            n = int(length * (0.75 + 0.5 * torch.rand((), generator=g).item()))
            prompt = n // 2
            ids = torch.randint(10, vocab, (n,), generator=g).tolist()
            mask = [0] * prompt + [1] * (n - prompt)
            group.append(Trajectory(
                task_id="bench", scale="v0", harness="ptc", group_id=f"g{gi}", sample_idx=si, policy_version=0,
                token_ids=ids, loss_mask=mask, logprobs=[-8.0 if m else 0.0 for m in mask], prompt_len=prompt,
                turns=[], final_answer="", termination="answer", reward=float(si % 2)))
        groups.append(group)
    return groups


def time_backend(name: str, args: argparse.Namespace, budget: int) -> dict:
    """One backend's steps in this process: a warm-up step, then the median of `args.steps`."""
    path = build_tiny()
    cfg = LearnerConfig(loss=PolicyLossConfig(clip_low=0.2, clip_high=0.2), optim=OptimConfig(lr=1e-5),
                        max_tokens_per_micro_batch=budget)
    if name == "torch":
        from learner.torch_backend import TorchLearner

        learner = TorchLearner(path, cfg)
    else:
        try:
            from learner.megatron_backend import MegatronLearner
        except ImportError as e:  # the megatron extra is not installed
            return {"backend": name, "skipped": str(e)}
        learner = MegatronLearner(path, cfg)
    groups = make_groups(args.groups, args.group_size, args.length, vocab=4000)
    tokens = sum(len(t.token_ids) for g in groups for t in g)
    learner.train_step(groups)  # warm-up
    times, loss = [], 0.0
    for _ in range(args.steps):
        t0 = time.perf_counter()
        loss = learner.train_step(groups)["loss"]
        times.append(time.perf_counter() - t0)
    step_s = statistics.median(times)
    return {"backend": name, "tokens_per_step": tokens, "seconds_per_step": round(step_s, 3),
            "tokens_per_s": round(tokens / step_s, 1), "loss": loss}


def main(args: argparse.Namespace) -> dict:
    """Each (layout, backend) in a fresh process (one backend's large freed buffers slow the other's
    allocations in a shared process), alternating backends `--repeats` times; the fastest repeat
    counts (other load on the machine comes in bursts)."""
    runs = []
    for budget in args.micro_batch_tokens:
        best: dict[str, dict] = {}
        for _ in range(args.repeats):
            for name in ("torch", "megatron"):
                cmd = [sys.executable, "-m", "bench.learner_bench", "--worker", name, "--micro-batch-tokens",
                       str(budget), "--groups", str(args.groups), "--group-size", str(args.group_size),
                       "--length", str(args.length), "--steps", str(args.steps)]
                proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
                row = json.loads(proc.stdout.strip().splitlines()[-1])
                if name not in best or row.get("seconds_per_step", 0) < best[name].get("seconds_per_step", 0):
                    best[name] = row
        rows = [best["torch"], best["megatron"]]
        run: dict = {"micro_batch_tokens": budget, "backends": rows}
        if "tokens_per_s" in rows[1]:
            run["megatron_over_torch"] = round(rows[1]["tokens_per_s"] / rows[0]["tokens_per_s"], 3)
        runs.append(run)
    return {"model": "tiny", "threads": torch.get_num_threads(), "groups": args.groups,
            "group_size": args.group_size, "mean_length": args.length, "steps": args.steps,
            "repeats": args.repeats, "runs": runs}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    # 4096: sequences packed into rows of up to 4096 tokens; 1: every sequence a row of its own
    parser.add_argument("--micro-batch-tokens", type=int, nargs="+", default=[4096, 1])
    parser.add_argument("--worker", choices=["torch", "megatron"], help=argparse.SUPPRESS)
    a = parser.parse_args()
    if a.worker:
        print(json.dumps(time_backend(a.worker, a, a.micro_batch_tokens[0])))
    else:
        print(json.dumps(main(a), indent=2))
