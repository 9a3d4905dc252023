"""Learner throughput per backend on the tiny model, side by side (one JSON object).

    .venv/bin/python -m bench.learner_bench [--groups 8] [--group-size 4] [--length 512] [--steps 3]
                                            [--micro-batch-tokens 4096 1]

Each backend takes the same GSPO steps on the same synthetic groups (random tokens, half of each
sequence the model's own, fake behaviour log-probs, rewards varying within a group): one warm-up
step, then `--steps` timed steps taken alternately by the backends (median per backend, so other
load on the machine hits both alike). Tokens/s counts every token of the step (prompt and completion)
through the π_old forward, the forward and backward, and the optimizer step. The megatron row is
skipped where megatron-core or mbridge is not installed. Two row layouts by default: sequences
packed into rows of 4096 tokens (the torch backend then attends through a block-causal T×T mask, the
megatron backend pads the row's sequences into a batch) and one sequence per row.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from learner.config import LearnerConfig, OptimConfig
from learner.losses import PolicyLossConfig
from rollout.tiny_model import build_tiny
from rollout.types import Trajectory


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


def run_backends(learners: dict[str, object], groups, steps: int) -> list[dict]:
    """Warm up each learner, then time their steps alternately (the median of each): other load on
    the machine then hits every backend alike."""
    tokens = sum(len(t.token_ids) for g in groups for t in g)
    for learner in learners.values():
        learner.train_step(groups)
    times: dict[str, list[float]] = {name: [] for name in learners}
    losses: dict[str, float] = {}
    for _ in range(steps):
        for name, learner in learners.items():
            t0 = time.perf_counter()
            losses[name] = learner.train_step(groups)["loss"]
            times[name].append(time.perf_counter() - t0)
    rows = []
    for name in learners:
        step_s = statistics.median(times[name])
        rows.append({"backend": name, "tokens_per_step": tokens, "seconds_per_step": round(step_s, 3),
                     "tokens_per_s": round(tokens / step_s, 1), "loss": losses[name]})
    return rows


def main(args: argparse.Namespace) -> dict:
    from learner.torch_backend import TorchLearner

    try:
        from learner.megatron_backend import MegatronLearner
    except ImportError as e:  # the megatron extra is not installed
        MegatronLearner, missing = None, str(e)
    path = build_tiny()
    groups = make_groups(args.groups, args.group_size, args.length, vocab=4000)
    runs = []
    for budget in args.micro_batch_tokens:
        cfg = LearnerConfig(loss=PolicyLossConfig(clip_low=0.2, clip_high=0.2), optim=OptimConfig(lr=1e-5),
                            max_tokens_per_micro_batch=budget)
        learners = {"torch": TorchLearner(path, cfg)}
        if MegatronLearner is not None:
            learners["megatron"] = MegatronLearner(path, cfg)
        rows = run_backends(learners, groups, args.steps)
        if MegatronLearner is None:
            rows.append({"backend": "megatron", "skipped": missing})
        run: dict = {"micro_batch_tokens": budget, "backends": rows}
        if "tokens_per_s" in rows[1]:
            run["megatron_over_torch"] = round(rows[1]["tokens_per_s"] / rows[0]["tokens_per_s"], 3)
        runs.append(run)
    return {"model": "tiny", "threads": torch.get_num_threads(), "groups": args.groups,
            "group_size": args.group_size, "mean_length": args.length, "steps": args.steps, "runs": runs}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--steps", type=int, default=3)
    # 4096: sequences packed into rows of up to 4096 tokens; 1: every sequence a row of its own
    parser.add_argument("--micro-batch-tokens", type=int, nargs="+", default=[4096, 1])
    print(json.dumps(main(parser.parse_args()), indent=2))
