"""The run folder's plots (PNG) and a short Markdown report, from metrics.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

from launch.metrics import read_metrics
from schema.records import SCALES

PLOTS = {
    "reward": [("rollout/reward", "reward"), ("rollout/score", "criterion score")],
    "pass_rate_per_scale": [(f"rollout/pass_rate_{s}", s) for s in SCALES],
    "tool_calls": [("rollout/tool_calls_direct", "direct"), ("rollout/tool_calls_program", "from programs")],
    "tool_output_tokens": [("rollout/tool_output_tokens", "tool-output tokens"),
                           ("rollout/context_tokens", "context tokens")],
    "program_structures": [("rollout/program_loops", "loops"), ("rollout/program_conditionals", "conditionals"),
                           ("rollout/program_try_except", "try/except"),
                           ("rollout/program_comprehensions", "comprehensions"),
                           ("rollout/program_function_defs", "function defs")],
    "dtc_like_rate": [("rollout/dtc_like_rate", "DTC-like programs")],
    "staleness": [("staleness_mean", "mean"), ("staleness_max", "max")],
    "learning_signal": [("rollout/zero_variance_groups", "groups with zero reward variance"),
                        ("rollout/reward_trained", "trained reward")],
    "throughput": [("trajectories_per_min", "trajectories/min"), ("generator_busy", "generator busy fraction")],
}


def running_mean(values: list[float], window: int = 3) -> list[float]:
    return [sum(values[max(0, i - window + 1):i + 1]) / len(values[max(0, i - window + 1):i + 1])
            for i in range(len(values))]


def _reward_context(ax, train: list[dict], evals: dict[str, dict]) -> None:
    """A step's reward comes from a few groups and is noisy: draw its running mean, and the
    evaluation before and after training (same seeds both times) as reference lines."""
    pts = [(r["step"], r["rollout/reward"]) for r in train if "rollout/reward" in r]
    if len(pts) >= 3:
        steps, values = zip(*pts, strict=True)
        window = max(3, len(pts) // 4)
        ax.plot(steps, running_mean(list(values), window), color="C0", linewidth=2.5, alpha=0.5,
                label=f"reward, running mean of {window}")
    for n, (tag, r) in enumerate(sorted(evals.items(), key=lambda kv: kv[0] != "before")):
        if f"eval_{tag}/reward" in r:
            ax.axhline(r[f"eval_{tag}/reward"], linestyle="--", color=f"C{n + 3}", label=f"eval {tag}")


def _weights(run: Path) -> dict[str, float]:
    """The run's source weights, from its config.json (a config without `envs:`: its one source)."""
    try:
        cfg = json.loads((run / "config.json").read_text())
    except (OSError, ValueError):
        return {}
    weights = {} if cfg.get("tasks") is None and cfg.get("envs") else {"tasks": 1.0}
    return weights | {name: float(spec.get("weight", 1.0)) for name, spec in (cfg.get("envs") or {}).items()}


def source_table(run: Path, train: list[dict]) -> list[str]:
    """Per source: its weight's share, the share of groups admitted and trained on (counted, over the
    whole run), and its mean reward, pass rate and tool-output tokens over the steps that had it."""
    if not train:
        return []
    last = train[-1]
    names = sorted({k.split("/", 2)[2] for k in last if k.startswith("rollout/groups_admitted/")})
    if not names:
        return []
    weights = _weights(run)
    total_w = sum(weights.get(n, 0.0) for n in names) or 1.0
    admitted = {n: last.get(f"rollout/groups_admitted/{n}", 0.0) for n in names}
    trained = {n: last.get(f"rollout/groups_trained/{n}", 0.0) for n in names}
    lines = ["", "| source | weight share | groups admitted | groups trained | reward | pass rate | "
                 "tool-output tokens |", "|---|---:|---:|---:|---:|---:|---:|"]
    def mean(n: str, key: str) -> float:
        xs = [r[f"source/{n}/{key}"] for r in train if f"source/{n}/{key}" in r]
        return sum(xs) / len(xs) if xs else float("nan")

    for n in names:
        lines.append(f"| {n} | {weights.get(n, 0.0) / total_w:.0%} | {admitted[n]:.0f} "
                     f"({admitted[n] / max(1.0, sum(admitted.values())):.0%}) | {trained[n]:.0f} "
                     f"({trained[n] / max(1.0, sum(trained.values())):.0%}) | {mean(n, 'reward'):.3f} | "
                     f"{mean(n, 'pass_rate'):.3f} | {mean(n, 'tool_output_tokens'):.0f} |")
    return lines


def signal_table(train: list[dict]) -> list[str]:
    """What the run trained on, by cause, over the whole run: each policy cause (trained as its reward)
    and each infra cause (attempts re-run; samples masked; groups dropped; fake zeros trained without
    masking), the share of zero-variance groups, and the curriculum's frontiers at the end."""
    if not train:
        return []

    def total(key: str) -> float:
        return sum(r.get(key, 0.0) for r in train)

    keys = sorted({k for r in train for k in r if k.startswith(("rollout/policy/", "rollout/infra/"))})
    lines = ["", "| outcome | count over the run |", "|---|---:|"]
    lines += [f"| {k.removeprefix('rollout/')} | {total(k):.0f} |" for k in keys]
    lines.append(f"| infra samples trained as zeros | {total('rollout/infra_trained'):.0f} |")
    zv = [r["rollout/zero_variance_groups"] for r in train if "rollout/zero_variance_groups" in r]
    if zv:
        lines.append(f"| groups with zero reward variance (mean share per step) | {sum(zv) / len(zv):.0%} |")
    last = train[-1]
    frontier = {k.removeprefix("curriculum/"): v for k, v in last.items()
                if k.startswith("curriculum/frontier_") or k == "curriculum/mastered"}
    if frontier:
        lines.append("| curriculum at the end | " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(frontier.items()))
                     + " |")
    return lines


def write_report(run: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(run / "metrics.jsonl")
    train = [r for r in rows if r["phase"] == "train"]
    sft = [r for r in rows if r["phase"] == "sft"]
    evals = {("before" if r["step"] == 0 else "after"): r for r in rows if r["phase"] == "eval"}
    plots = run / "plots"
    plots.mkdir(exist_ok=True)
    for name, series in PLOTS.items():
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for n, (key, label) in enumerate(series):
            pts = [(r["step"], r[key]) for r in train if key in r]
            # a fraction next to a rate gets its own axis, so neither is flattened
            axis = ax.twinx() if name == "throughput" and n == 1 else ax
            if pts:
                axis.plot(*zip(*pts, strict=True), marker="o", label=label, color=f"C{n}")
                if axis is not ax:
                    axis.set_ylabel(label)
                    axis.set_ylim(0, 1.05)
        if name == "reward":
            _reward_context(ax, train, evals)
        ax.set_xlabel("GSPO step")
        ax.set_title(name.replace("_", " "))
        ax.grid(alpha=0.3)
        handles = [h for a in fig.axes for h in a.get_legend_handles_labels()[0]]
        if handles:
            ax.legend(handles=handles, loc="best")
        fig.tight_layout()
        fig.savefig(plots / f"{name}.png", dpi=110)
        plt.close(fig)
    if sft:
        fig, ax = plt.subplots(figsize=(6, 3.6))
        ax.plot([r["step"] for r in sft], [r["sft_loss"] for r in sft])
        ax.set_xlabel("SFT step")
        ax.set_title("SFT loss")
        fig.tight_layout()
        fig.savefig(plots / "sft_loss.png", dpi=110)
        plt.close(fig)

    lines = [f"# Run {run.name}", ""]
    if sft:
        lines.append(f"- SFT: {len(sft)} steps, loss {sft[0]['sft_loss']:.3f} → {sft[-1]['sft_loss']:.3f}")
    if train:
        first, last = train[0], train[-1]
        lines.append(f"- GSPO: {len(train)} steps; reward {first.get('rollout/reward', 0):.3f} → "
                     f"{last.get('rollout/reward', 0):.3f}; score {first.get('rollout/score', 0):.3f} → "
                     f"{last.get('rollout/score', 0):.3f}")
        lines.append(f"- throughput {last.get('trajectories_per_min', 0):.1f} trajectories/min; generator busy "
                     f"{last.get('generator_busy', 0):.0%}; mean staleness "
                     f"{sum(r.get('staleness_mean', 0) for r in train) / len(train):.2f}")
    if evals:
        lines += ["", "| evaluation | reward | score | " + " | ".join(f"pass {s}" for s in SCALES) + " |",
                  "|---|---:|---:|" + "---:|" * len(SCALES)]
        for tag, r in evals.items():
            p = f"eval_{tag}"
            lines.append(f"| {tag} | {r.get(f'{p}/reward', 0):.3f} | {r.get(f'{p}/score', 0):.3f} | "
                         + " | ".join(f"{r.get(f'{p}/pass_rate_{s}', float('nan')):.2f}" for s in SCALES) + " |")
    lines += source_table(run, train)
    lines += signal_table(train)
    lines += ["", "Plots: " + ", ".join(f"[{p.stem}](plots/{p.name})" for p in sorted(plots.glob('*.png')))]
    report = run / "report.md"
    report.write_text("\n".join(lines) + "\n")
    return report
