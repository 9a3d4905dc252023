"""The cross-benchmark table in the shape of the paper's main results (`eval --suite paper`).

    write_paper(out, records, sources)   # paper.md, paper.csv, paper.json, paper.png in the sweep's folder

One row per (model, harness), one column group per benchmark: pass rate (pass@1 over every rollout:
the mean of binary rewards), mean context tokens and mean tool-output tokens per rollout; then, per
model and benchmark, the PTC/DTC ratios of the three (the paper's claim is in them: PTC keeps the
pass rate while tool outputs stay out of context). A benchmark is the kind of the source a rollout's
(task, scale) belongs to: MCPMark's filesystem and postgres sources are one benchmark. A benchmark
without a source in the config is a row of the status table saying how to add it, never an error;
rollouts the fabric failed (`infra/...` causes) are counted in a column of their own and enter the pass
rate as not passed (a rate over valid rollouts alone would report 2 solved and 6 forged infra failures
as 1.00); the token means are over judged rollouts.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

#: the benchmarks of the paper's table (and the library), in its order, and the kinds that feed each
BENCHMARKS: dict[str, tuple[str, ...]] = {
    "Library": ("library", "harbor"),
    "LOCA-bench": ("loca",),
    "MCPMark": ("mcpmark", "mcpmark_postgres"),
    "MCP-Atlas": ("mcp_atlas",),
    "Toolathlon": ("toolathlon",),
}
HOW = {
    "Library": "envs: {NAME: {kind: library}} (or the config's tasks:)",
    "LOCA-bench": "--loca CHECKOUT",
    "MCPMark": "--mcpmark CHECKOUT envs.mcpmark.args.data_dir=DIR, or --mcpmark-postgres CHECKOUT",
    "MCP-Atlas": "envs: {atlas: {kind: mcp_atlas, args: {checkout: ..., tasks_file: ..., judge_base_url: ...}}}",
    "Toolathlon": "--toolathlon CHECKOUT",
}
METRICS = ("pass_rate", "context_tokens", "tool_output_tokens")


def benchmark_of_kind(kind: str) -> str:
    return next((b for b, kinds in BENCHMARKS.items() if kind in kinds), kind)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def paper_rows(records: list[Any], sources: list[Any]) -> list[dict[str, Any]]:
    """One row per (model, harness, benchmark) that has rollouts."""
    where: dict[tuple[str, str], str] = {}
    for src in sources:
        for ref in src.refs:
            where[(ref.task_id, ref.scale)] = benchmark_of_kind(src.kind.name)
    cells: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    for r in records:
        cells[(r.model, r.harness, where.get((r.task, r.scale), "other"))].append(r)
    rows = []
    for (model, harness, bench), recs in cells.items():
        judged = [r for r in recs if not r.cause.startswith("infra/")]
        rows.append({"model": model, "harness": harness, "benchmark": bench, "rollouts": len(recs),
                     "infra_failed": len(recs) - len(judged), "tasks": len({(r.task, r.scale) for r in recs}),
                     "pass_rate": _mean([float(r.passed) for r in recs]),
                     "context_tokens": _mean([float(r.context_tokens) for r in judged]),
                     "tool_output_tokens": _mean([float(r.tool_output_tokens) for r in judged])})
    order = list(BENCHMARKS)
    rows.sort(key=lambda x: (x["model"], x["harness"], order.index(x["benchmark"]) if x["benchmark"] in order else 99))
    return rows


def ratio_rows(rows: list[dict[str, Any]], num: str = "ptc", den: str = "dtc") -> list[dict[str, Any]]:
    """Per (model, benchmark) with both harnesses: num/den of each metric."""
    by = {(r["model"], r["harness"], r["benchmark"]): r for r in rows}
    out = []
    for (model, harness, bench), r in by.items():
        other = by.get((model, den, bench))
        if harness != num or other is None:
            continue
        ratios = {}
        for m in METRICS:
            a, b = r[m], other[m]
            ratios[f"{m}_ratio"] = a / b if a is not None and b else None
        out.append({"model": model, "benchmark": bench, "ratio": f"{num}/{den}", **ratios})
    return out


def status_rows(sources: list[Any]) -> list[dict[str, Any]]:
    """Every benchmark: the sources that feed it and their task count, or how to add it."""
    out = []
    for bench, kinds in BENCHMARKS.items():
        feeding = [s for s in sources if s.kind.name in kinds]
        if feeding:
            out.append({"benchmark": bench, "status": "configured",
                        "sources": ", ".join(f"{s.name} ({len(s.task_ids)} tasks)" for s in feeding)})
        else:
            out.append({"benchmark": bench, "status": "not configured", "sources": f"add it with {HOW[bench]}"})
    return out


def _cell(v: Any, pct: bool = False) -> str:
    if v is None:
        return "—"
    if pct:
        return f"{100 * v:.1f}"
    return f"{v / 1000:.1f}k" if v >= 1000 else f"{v:.0f}"


def markdown(rows: list[dict[str, Any]], ratios: list[dict[str, Any]], status: list[dict[str, Any]],
             header: list[str]) -> str:
    benches = [b for b in BENCHMARKS if any(r["benchmark"] == b for r in rows)] + \
        sorted({r["benchmark"] for r in rows} - set(BENCHMARKS))
    lines = [*header, "", "## Main results", "",
             "Each benchmark: pass rate (%) / mean context tokens / mean tool-output tokens per rollout.", "",
             "| model | harness | " + " | ".join(benches) + " |", "|" + " --- |" * (2 + len(benches))]
    by = {(r["model"], r["harness"], r["benchmark"]): r for r in rows}
    for model, harness in dict.fromkeys((r["model"], r["harness"]) for r in rows):
        cells = []
        for b in benches:
            r = by.get((model, harness, b))
            cells.append("—" if r is None else f"{_cell(r['pass_rate'], True)} / {_cell(r['context_tokens'])} / "
                         f"{_cell(r['tool_output_tokens'])}")
        lines.append(f"| {Path(model).name or model} | {harness} | " + " | ".join(cells) + " |")
    if ratios:
        lines += ["", "## PTC / DTC", "", "| model | benchmark | pass rate | context tokens | tool-output tokens |",
                  "| --- | --- | --- | --- | --- |"]
        for r in ratios:
            lines.append(f"| {Path(r['model']).name or r['model']} | {r['benchmark']} | " + " | ".join(
                "—" if r[f"{m}_ratio"] is None else f"{r[f'{m}_ratio']:.2f}" for m in METRICS) + " |")
    lines += ["", "## Benchmarks", "", "| benchmark | status | sources |", "| --- | --- | --- |"]
    lines += [f"| {s['benchmark']} | {s['status']} | {s['sources']} |" for s in status]
    infra = sum(r["infra_failed"] for r in rows)
    if infra:
        lines += ["", f"{infra} rollout(s) failed for the fabric's reasons (infra causes): counted as not passed in "
                      f"the pass rates, left out of the token means."]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    benches = list(dict.fromkeys(r["benchmark"] for r in rows))
    series = list(dict.fromkeys((r["model"], r["harness"]) for r in rows))
    if not benches:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / max(1, len(series))
    by = {(r["model"], r["harness"], r["benchmark"]): r for r in rows}
    for ax, metric, label in ((axes[0], "pass_rate", "pass rate"), (axes[1], "context_tokens", "context tokens")):
        for i, (model, harness) in enumerate(series):
            ys = [(by.get((model, harness, b)) or {}).get(metric) or 0.0 for b in benches]
            ax.bar([x + i * width for x in range(len(benches))], ys, width, label=f"{Path(model).name} {harness}")
        ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(benches))], benches, rotation=20)
        ax.set_ylabel(label)
    axes[0].set_ylim(0, 1)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_paper(out: Path, records: list[Any], sources: list[Any], header: list[str] | None = None) -> Path:
    """paper.md (the table), paper.csv (its rows), paper.json (rows, ratios, status), paper.png."""
    rows, status = paper_rows(records, sources), status_rows(sources)
    ratios = ratio_rows(rows)
    (out / "paper.md").write_text(markdown(rows, ratios, status, header or ["# Main results"]))
    with open(out / "paper.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["model", "harness", "benchmark", "tasks", "rollouts", "infra_failed", *METRICS])
        w.writeheader()
        w.writerows(rows)
    (out / "paper.json").write_text(json.dumps({"rows": rows, "ratios": ratios, "benchmarks": status}, indent=1))
    plot(rows, out / "paper.png")
    return out / "paper.md"
