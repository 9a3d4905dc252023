"""Run metrics: one JSONL file (the source of the plots and the report) and W&B with the same keys.

W&B mode: "auto" is online when WANDB_API_KEY is set and offline otherwise; "disabled" turns it off.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from schema.outcomes import is_infra
from schema.records import SCALES, TERMINATIONS


def rollout_metrics(trajs: list[Any], prefix: str = "rollout") -> dict[str, float]:
    """What a batch of trajectories says: reward, pass rate per scale, tools, context, programs."""
    if not trajs:
        return {}
    m: dict[str, float] = {}

    def mean(xs: list[float]) -> float:
        return float(statistics.fmean(xs)) if xs else 0.0

    m[f"{prefix}/episodes"] = float(len(trajs))
    m[f"{prefix}/verifier_errors"] = float(sum(t.verifier_error is not None for t in trajs))
    m[f"{prefix}/reward"] = mean([t.reward for t in trajs])
    m[f"{prefix}/score"] = mean([t.score for t in trajs])
    for s in SCALES:
        sub = [t for t in trajs if t.scale == s]
        if sub:
            m[f"{prefix}/pass_rate_{s}"] = mean([float(t.reward == 1.0) for t in sub])
            m[f"{prefix}/score_{s}"] = mean([t.score for t in sub])
    for key in ("turns", "tool_calls_direct", "tool_calls_program", "programs", "format_errors", "tool_errors",
                "program_errors", "program_loops", "program_conditionals", "program_try_except",
                "program_comprehensions", "program_function_defs", "program_dtc_like"):
        m[f"{prefix}/{key}"] = mean([t.metrics.get(key, 0.0) for t in trajs])
    programs = sum(t.metrics.get("programs", 0.0) for t in trajs)
    m[f"{prefix}/dtc_like_rate"] = sum(t.metrics.get("program_dtc_like", 0.0) for t in trajs) / programs \
        if programs else 0.0
    m[f"{prefix}/tool_output_tokens"] = mean([t.tool_output_tokens for t in trajs])
    m[f"{prefix}/context_tokens"] = mean([t.context_tokens for t in trajs])
    m[f"{prefix}/response_tokens"] = mean([sum(t.loss_mask) for t in trajs])
    for reason in TERMINATIONS:
        m[f"{prefix}/termination_{reason}"] = mean([float(t.termination == reason) for t in trajs])
    m[f"{prefix}/verifier_errors"] = float(sum(1 for t in trajs if t.verifier_error))
    return m


def signal_metrics(groups: list[list[Any]], trained: list[list[float]]) -> dict[str, float]:
    """What a step trains on, by cause and by reward: `rollout/policy/<cause>` (its samples by the
    policy's cause), `rollout/infra_trained` (samples with an infra cause: fake zeros, only without
    masking), `rollout/zero_variance_groups` (the share of its groups whose trained rewards are all equal:
    no GSPO signal), `rollout/reward_trained` and each reward term's mean (`rollout/reward_<term>`)."""
    trajs = [t for g in groups for t in g]
    if not trajs:
        return {}
    m: dict[str, float] = {"rollout/infra_trained": float(sum(is_infra(t.cause) for t in trajs))}
    for t in trajs:
        if t.cause and not is_infra(t.cause):
            m[f"rollout/{t.cause}"] = m.get(f"rollout/{t.cause}", 0.0) + 1
    m["rollout/zero_variance_groups"] = statistics.fmean(float(max(r) == min(r)) for r in trained if r)
    m["rollout/reward_trained"] = statistics.fmean(r for rs in trained for r in rs)
    for key in sorted({k for t in trajs for k in t.metrics if k.startswith("reward/") and k != "reward/trained"}):
        m[f"rollout/reward_{key.split('/', 1)[1]}"] = statistics.fmean(t.metrics.get(key, 0.0) for t in trajs)
    return m


class MaskedShare:
    """The guard on masking (rollout.max_masked_share, max_masked_steps): each step's share of masked
    samples, `masked / (masked + trained)` from the step's `rollout/infra/masked` count (StepCounts);
    a step above the bound gets a warning naming the step's infra causes, and `max_steps` such steps in
    a row a reason to stop the run. Why: a masked sample is never pushed down, so a run whose masked
    share stays high either has a broken fabric or a policy that learned to look like one; either way
    its pass rates and its gradient no longer say what the policy does."""

    def __init__(self, max_share: float, max_steps: int):
        self.max_share, self.max_steps, self.above = max_share, max_steps, 0

    def __call__(self, row: dict[str, float], trained: int) -> tuple[float, str | None, str | None]:
        """(the step's masked share, a warning or None, a reason to stop or None)."""
        masked = row.get("rollout/infra/masked", 0.0)
        share = masked / (masked + trained) if masked + trained else 0.0
        if share <= self.max_share:
            self.above = 0
            return share, None, None
        self.above += 1
        causes = ", ".join(f"{k.removeprefix('rollout/infra/')} ({v:.0f})" for k, v in sorted(row.items())
                           if k.startswith("rollout/infra/") and k not in ("rollout/infra/masked",
                                                                             "rollout/infra/groups_dropped") and v > 0)
        warning = (f"{masked:.0f} of {masked + trained:.0f} samples masked ({share:.0%} > rollout.max_masked_share "
                   f"{self.max_share:.0%}); infra causes this step: {causes or 'none counted'}")
        stop = (f"the masked share stayed above rollout.max_masked_share ({self.max_share:.0%}) for {self.above} "
                f"steps in a row ({causes or 'no cause counted'}): the pass rates and the gradient no longer "
                f"say what the policy does") if self.above >= self.max_steps else None
        return share, warning, stop


class StepCounts:
    """Per-step counts from cumulative counters (the rollout manager's and its scheduler's): each call
    returns what changed since the last, under the step's metric names:
    `rollout/infra/<cause>` (infra attempts, re-run or masked), `rollout/infra/masked` (samples left out
    for good), `rollout/infra/groups_dropped` (groups left with too few valid samples) and
    `curriculum/draws_<scale>` (groups drawn at each scale)."""

    def __init__(self) -> None:
        self.last: dict[str, float] = {}

    def __call__(self, stats: dict[str, float]) -> dict[str, float]:
        names = {"samples_masked": "rollout/infra/masked", "groups_dropped_infra": "rollout/infra/groups_dropped"}
        for k in stats:
            if k.startswith("scheduler_infra/"):
                names[k] = f"rollout/{k.removeprefix('scheduler_')}"
            elif k.startswith("draws_"):
                names[k] = f"curriculum/{k}"
        out = {}
        for k, name in names.items():
            now = float(stats.get(k, 0.0))
            out[name] = now - self.last.get(k, 0.0)
            self.last[k] = now
        return out


def source_metrics(trajs: list[Any], prefix: str = "source") -> dict[str, float]:
    """Per config source (Trajectory.source): episodes, reward, pass rate and tool-output tokens, as
    `<prefix>/<source>/<metric>` (a mixture's sources side by side)."""
    m: dict[str, float] = {}
    for name in sorted({t.source for t in trajs}):
        sub = [t for t in trajs if t.source == name]
        m[f"{prefix}/{name}/episodes"] = float(len(sub))
        m[f"{prefix}/{name}/reward"] = statistics.fmean(t.reward for t in sub)
        m[f"{prefix}/{name}/pass_rate"] = statistics.fmean(float(t.reward == 1.0) for t in sub)
        m[f"{prefix}/{name}/tool_output_tokens"] = statistics.fmean(t.tool_output_tokens for t in sub)
    return m


class MetricsLog:
    def __init__(self, out_dir: Path, run_name: str, config: dict[str, Any], wandb_mode: str = "auto",
                 project: str = "progagent", entity: str | None = None):
        self.path = out_dir / "metrics.jsonl"
        self.fh = self.path.open("a")
        self.t0 = time.time()
        self.wandb = None
        mode = wandb_mode
        if mode == "auto":
            mode = "online" if os.environ.get("WANDB_API_KEY") else "offline"
        if mode != "disabled":
            try:
                import wandb

                self.wandb = wandb.init(project=project, entity=entity, name=run_name, mode=mode, config=config,
                                        dir=str(out_dir), reinit=True)
            except Exception as exc:  # noqa: BLE001 - tracking must never stop training
                print(f"W&B disabled: {exc}")
        self.mode = mode if self.wandb else "disabled"

    def log(self, phase: str, step: int, metrics: dict[str, float]) -> None:
        row = {"phase": phase, "step": step, "time_s": round(time.time() - self.t0, 2), **metrics}
        self.fh.write(json.dumps(row) + "\n")
        self.fh.flush()
        if self.wandb is not None:
            self.wandb.log({f"{phase}/{k}" if "/" not in k else k: v for k, v in metrics.items()
                            if isinstance(v, int | float)} | {"phase_step": step})

    def close(self) -> None:
        self.fh.close()
        if self.wandb is not None:
            self.wandb.finish()


def read_metrics(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
