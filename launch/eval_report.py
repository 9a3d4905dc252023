"""Evaluation sweep tables and plots from cached rollout records.

pass@k is the unbiased estimator of Chen et al. (2021) from n samples with c correct:

    pass@k = 1 - C(n - c, k) / C(n, k)        (k <= n; 1.0 when n - c < k)

computed per (model, harness, scale, task) and averaged over tasks. "Correct" is reward 1 (every
verifier criterion passes). The other columns are means over rollouts: criterion score, turns, tool
calls, tool-output and context tokens, termination reasons (fractions), and program structures per
program (rollout/program_features.py; a DTC-like program is one tool call without control flow).
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from launch.rollout_cache import RolloutRecord
from schema.outcomes import is_infra
from schema.records import TERMINATIONS

HARNESS_ORDER = ("dtc", "ptc", "hybrid")
STRUCTURES = ("loops", "conditionals", "try_except", "comprehensions", "function_defs")
LABELS = {"dtc": "DTC", "ptc": "PTC", "hybrid": "Hybrid"}


def pass_at_k(n: int, c: int, k: int) -> float:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def cell_row(recs: list[RolloutRecord], ks: list[int]) -> dict[str, Any]:
    """The numbers of one (model, harness, scale, task) cell."""
    n, c = len(recs), sum(r.passed for r in recs)
    row: dict[str, Any] = {"n": n, "correct": c}
    for k in ks:
        if k <= n:
            row[f"pass@{k}"] = pass_at_k(n, c, k)
    row["reward"] = _mean([r.reward for r in recs])
    row["score"] = _mean([r.score for r in recs])
    row["turns"] = _mean([r.turns for r in recs])
    row["tool_calls"] = _mean([r.tool_calls for r in recs])
    row["tool_output_tokens"] = _mean([r.tool_output_tokens for r in recs])
    row["context_tokens"] = _mean([r.context_tokens for r in recs])
    for t in TERMINATIONS:
        row[f"term_{t}"] = _mean([float(r.termination == t) for r in recs])
    programs = sum(r.metrics.get("programs", 0.0) for r in recs)
    row["programs"] = programs / n if n else 0.0
    for s in (*STRUCTURES, "dtc_like"):
        total = sum(r.metrics.get(f"program_{s}", 0.0) for r in recs)
        row[f"per_program_{s}"] = total / programs if programs else 0.0
    row["verifier_errors"] = sum(1 for r in recs if r.verifier_error)
    row["infra"] = sum(1 for r in recs if is_infra(r.cause))  # in n and pass@k as not passed
    return row


def by_task(records: list[RolloutRecord], ks: list[int]) -> list[dict[str, Any]]:
    cells: dict[tuple, list[RolloutRecord]] = defaultdict(list)
    for r in records:
        cells[(r.model, r.harness, r.scale, r.task)].append(r)
    rows = []
    for (model, harness, scale, task), recs in sorted(cells.items(), key=lambda kv: _order(kv[0])):
        rows.append({"model": model, "harness": harness, "scale": scale, "task": task} | cell_row(recs, ks))
    return rows


def _order(key: tuple) -> tuple:
    """Models as given, harnesses as DTC, PTC, Hybrid, then scales and tasks."""
    model, harness, *rest = key
    h = HARNESS_ORDER.index(harness) if harness in HARNESS_ORDER else len(HARNESS_ORDER)
    return (model, h, harness, *rest)


def summarise(task_rows: list[dict[str, Any]], by: tuple[str, ...]) -> list[dict[str, Any]]:
    """Task rows averaged per `by` (pass@k: mean over tasks; the rest: weighted by rollouts)."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in task_rows:
        groups[tuple(r[b] for b in by)].append(r)
    out = []
    for key, rows in sorted(groups.items(), key=lambda kv: _order(kv[0])):
        n = sum(r["n"] for r in rows)
        row: dict[str, Any] = dict(zip(by, key, strict=True)) | {"tasks": len(rows), "n": n,
                                                                "correct": sum(r["correct"] for r in rows)}
        for col in rows[0]:
            if col.startswith("pass@"):
                vals = [r[col] for r in rows if col in r]
                row[col] = _mean(vals) if len(vals) == len(rows) else float("nan")
            elif col not in row and col not in ("model", "harness", "scale", "task") \
                    and not col.startswith("per_"):
                row[col] = sum(r[col] * r["n"] for r in rows) / n if n else 0.0
        programs = sum(r["programs"] * r["n"] for r in rows)
        for col in [c for c in rows[0] if c.startswith("per_program_")]:
            row[col] = sum(r[col] * r["programs"] * r["n"] for r in rows) / programs if programs else 0.0
        row["verifier_errors"] = sum(r["verifier_errors"] for r in rows)
        row["infra"] = sum(r["infra"] for r in rows)
        out.append(row)
    return out


def write_csv(rows: list[dict[str, Any]], path: Path) -> Path:
    cols = list(dict.fromkeys(c for r in rows for c in r))
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: (round(v, 4) if isinstance(v, float) else v) for c, v in r.items()})
    return path


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "–" if math.isnan(v) else f"{v:.3f}" if abs(v) < 10 else f"{v:.0f}"
    return str(v)


def md_table(rows: list[dict[str, Any]], cols: list[str]) -> list[str]:
    rule = "|" + "|".join("---" if i < 2 else "---:" for i in range(len(cols))) + "|"
    lines = ["| " + " | ".join(cols) + " |", rule]
    lines += ["| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return lines


def _pivot(rows: list[dict[str, Any]], metric: str, scales: list[str]) -> list[dict[str, Any]]:
    """One row per (model, harness), one column per scale."""
    table: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        t = table.setdefault((r["model"], r["harness"]), {"model": r["model"], "harness": r["harness"]})
        t[r["scale"]] = r.get(metric, float("nan"))
    return list(table.values())


def write_markdown(path: Path, scale_rows: list[dict[str, Any]], overall: list[dict[str, Any]],
                   ks: list[int], scales: list[str], header: list[str]) -> Path:
    pk = [f"pass@{k}" for k in ks if any(f"pass@{k}" in r for r in overall)]
    lines = [*header, "", "## Overall (all scales)", "",
             "pass@k is over every attempted rollout: `infra` of the `n` failed for the fabric's reasons and count "
             "as not passed.", "",
             *md_table(overall, ["model", "harness", "tasks", "n", "infra", *pk, "score", "turns", "tool_calls",
                                 "tool_output_tokens", "context_tokens", "programs", "per_program_dtc_like"])]
    for metric, title in (("pass@1", "Pass rate (pass@1) by environment scale"),
                          ("score", "Mean criterion score by scale"),
                          ("context_tokens", "Context tokens by scale"),
                          ("tool_output_tokens", "Tool-output tokens by scale")):
        lines += ["", f"## {title}", "",
                  *md_table(_pivot(scale_rows, metric, scales), ["model", "harness", *scales])]
    lines += ["", "## Termination reasons (fraction of rollouts)", "",
              *md_table(overall, ["model", "harness", *[f"term_{t}" for t in TERMINATIONS]]),
              "", "## Program structures (per program)", "",
              *md_table(overall, ["model", "harness", "programs", *[f"per_program_{s}" for s in (*STRUCTURES,
                                                                                              "dtc_like")]])]
    path.write_text("\n".join(lines) + "\n")
    return path


def _label(row: dict[str, Any]) -> str:
    return f"{Path(row['model']).name or row['model']} {LABELS.get(row['harness'], row['harness'])}"


def write_plots(out: Path, scale_rows: list[dict[str, Any]], overall: list[dict[str, Any]], ks: list[int],
                scales: list[str]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in scale_rows))
    paths = []
    for metric, ylabel in (("pass@1", "pass rate (pass@1)"), ("context_tokens", "context tokens"),
                           ("tool_output_tokens", "tool-output tokens"), ("score", "criterion score")):
        # the shape of the paper's Figure 3: x = environment scale, one line per harness
        fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 3.6), squeeze=False)
        for ax, model in zip(axes[0], models, strict=True):
            for i, row in enumerate(r for r in _pivot(scale_rows, metric, scales) if r["model"] == model):
                xs = [s for s in scales if s in row]
                ax.plot(xs, [row[s] for s in xs], marker="o", label=LABELS.get(row["harness"], row["harness"]),
                        color=f"C{i}")
            ax.set_title(Path(model).name or model)
            ax.set_xlabel("environment scale")
            ax.set_ylabel(ylabel)
            if metric in ("pass@1", "score"):
                ax.set_ylim(-0.02, 1.02)
            ax.grid(alpha=0.3)
            ax.legend(loc="best")
        fig.tight_layout()
        name = {"pass@1": "pass_rate_vs_scale"}.get(metric, f"{metric}_vs_scale")
        fig.savefig(out / f"{name}.png", dpi=110)
        plt.close(fig)
        paths.append(out / f"{name}.png")

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6))
    for i, r in enumerate(overall):
        label = _label(r)
        xs = [k for k in ks if f"pass@{k}" in r]
        ax1.plot(xs, [r[f"pass@{k}"] for k in xs], marker="o", label=label, color=f"C{i}")
    ax1.set_xticks(ks)
    ax1.set_xlabel("k")
    ax1.set_ylabel("pass@k")
    ax1.set_ylim(-0.02, 1.02)
    ax1.set_title("pass@k (all scales)")
    ax1.grid(alpha=0.3)
    ax1.legend(loc="best")
    width = 0.8 / max(1, len(overall))
    for i, r in enumerate(overall):
        vals = [r[f"per_program_{s}"] for s in (*STRUCTURES, "dtc_like")]
        ax2.bar([j + i * width for j in range(len(vals))], vals, width,
                label=_label(r), color=f"C{i}")
    ax2.set_xticks([j + width * (len(overall) - 1) / 2 for j in range(len(STRUCTURES) + 1)],
                   [s.replace("_", " ") for s in (*STRUCTURES, "DTC-like")], rotation=20)
    ax2.set_title("program structures per program")
    ax2.legend(loc="best")
    fig.tight_layout()
    fig.savefig(out / "pass_at_k_and_programs.png", dpi=110)
    plt.close(fig)
    paths.append(out / "pass_at_k_and_programs.png")
    return paths


def _plain(v: Any) -> Any:
    """JSON has no NaN: a pass@k that cannot be computed (k > n somewhere) becomes null."""
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    return v


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    path.write_text(json.dumps(_plain(payload), indent=2))
    return path
