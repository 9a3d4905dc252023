"""`progagent tasks context-report`: what the same work costs in context under DTC and under PTC.

Each task's oracle runs at v0–v3 through the sandboxed runtime. From the runtime's call log:
- DTC context = Σ over calls of the call as a model would emit it (`<tool_call>{json}</tool_call>`)
  plus its raw result as a tool response (`<tool_response>…</tool_response>`);
- PTC context = Σ over programs of the `programmatic_tool_call` with the code, plus what it printed.
Tokens are counted with the project's tokenizer (rollout/tiny_model.py). The instruction and the
tool descriptions are the same under both and are left out.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from pathlib import Path
from typing import Any

from envs.checks.validate import SolutionRun, run_solution
from envs.format.library import Task
from envs.format.task_env import EnvironmentCache
from envs.runtime.episode import Runtime
from schema.records import SCALES


def context_tokens(run: SolutionRun, tokenizer: Any) -> dict[str, int]:
    def n(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False))

    dtc = sum(n('<tool_call>\n' + json.dumps({"name": c.tool, "arguments": c.arguments}) + '\n</tool_call>')
              + n('<tool_response>\n' + c.result_text + '\n</tool_response>') for c in run.calls)
    ptc = sum(n('<tool_call>\n' + json.dumps({"name": "programmatic_tool_call", "arguments": {"code": code}})
                + '\n</tool_call>') + n('<tool_response>\n' + out + '\n</tool_response>')
              for code, out in zip(run.cells, run.outputs, strict=True))
    return {"dtc_tokens": dtc, "ptc_tokens": ptc, "calls": len(run.calls), "programs": len(run.cells)}


async def measure(tasks: list[Task], tokenizer: Any, concurrency: int = 3) -> list[dict[str, Any]]:
    cache = EnvironmentCache()
    rows: list[dict[str, Any]] = []
    sem = asyncio.Semaphore(concurrency)
    async with Runtime() as runtime:
        async def one(task: Task, scale: str) -> None:
            async with sem:
                run = await run_solution(runtime, task, scale, cache, task.oracle_source)
                rows.append({"task": task.id, "scale": scale, "reward": run.verdict.reward,
                             **context_tokens(run, tokenizer)})
        await asyncio.gather(*(one(t, s) for t in tasks for s in SCALES))
    cache.cleanup()
    return sorted(rows, key=lambda r: (r["task"], r["scale"]))


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_scale = {s: [r for r in rows if r["scale"] == s] for s in SCALES}
    mean = {s: {"dtc": statistics.mean(r["dtc_tokens"] for r in rs), "ptc": statistics.mean(r["ptc_tokens"] for r in rs)}
            for s, rs in by_scale.items() if rs}
    v0, v3 = mean["v0"], mean["v3"]
    return {"mean_tokens": mean,
            "ptc_growth_v0_to_v3": round(v3["ptc"] / v0["ptc"], 3),
            "dtc_growth_v0_to_v3": round(v3["dtc"] / v0["dtc"], 3),
            "ptc_over_dtc_at_v3": round(v3["ptc"] / v3["dtc"], 4),
            "targets": {"ptc_growth_le_1.2": v3["ptc"] / v0["ptc"] <= 1.2, "dtc_growth_ge_4": v3["dtc"] / v0["dtc"] >= 4,
                        "ptc_le_10pct_dtc_at_v3": v3["ptc"] / v3["dtc"] <= 0.10}}


def markdown(rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    lines = ["| task | scale | calls | DTC tokens | PTC tokens | PTC/DTC |", "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['scale']} | {r['calls']} | {r['dtc_tokens']:,} | {r['ptc_tokens']:,} | "
                     f"{r['ptc_tokens'] / max(1, r['dtc_tokens']):.1%} |")
    lines += ["", "| scale | mean DTC tokens | mean PTC tokens |", "|---|---:|---:|"]
    for s, m in summary["mean_tokens"].items():
        lines.append(f"| {s} | {m['dtc']:,.0f} | {m['ptc']:,.0f} |")
    lines += ["", f"DTC growth v0→v3: {summary['dtc_growth_v0_to_v3']}×; PTC growth v0→v3: "
              f"{summary['ptc_growth_v0_to_v3']}×; PTC/DTC at v3: {summary['ptc_over_dtc_at_v3']:.1%}"]
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = list(range(len(SCALES)))
    for key, color, label in (("dtc_tokens", "tab:red", "DTC"), ("ptc_tokens", "tab:blue", "PTC")):
        for task in sorted({r["task"] for r in rows}):
            ys = [next(r[key] for r in rows if r["task"] == task and r["scale"] == s) for s in SCALES]
            ax.plot(xs, ys, color=color, alpha=0.15, linewidth=1)
        means = [statistics.mean(r[key] for r in rows if r["scale"] == s) for s in SCALES]
        ax.plot(xs, means, color=color, linewidth=3, marker="o", label=f"{label} (mean over tasks)")
    ax.set_xticks(xs, SCALES)
    ax.set_yscale("log")
    ax.set_xlabel("environment scale")
    ax.set_ylabel("tokens entering the context")
    ax.set_title("Oracle trajectories: context tokens per task (thin) and mean (thick)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
