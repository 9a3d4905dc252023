"""LOCA-bench end to end on a real checkout with a scripted model: every harness, chosen presets.

    .venv/bin/python bench/loca_scripted.py ~/LOCA-bench --presets 8k 64k --tasks SetConfCrDdlS2LEnv --out /tmp/loca

The tiny model is forced through one script (the replay backend): a direct call (DTC, hybrid), a
program that looks around the workspace and calls LOCA's claim_done (PTC, hybrid), then an answer.
It does not solve the tasks; what it shows is that the whole path runs on LOCA's own state, servers
and evaluator (each rollout's verdict is LOCA's), and what each harness puts into context at each
preset. Prints one JSON object: per (harness, preset) the pass rate, context and tool-output tokens,
verifier errors and episode seconds, read from the sweep's own tables.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROGRAM = """import os
ws = os.getcwd()
files = sorted(os.listdir(ws))
print(len(files), 'files in the workspace:', files[:20])
if 'read_graph' in tools:  # the memory server reads its graph (CanvasArrangeExam's memory.json)
    graph = tools['read_graph']()
    print('memory entities:', len(graph.get('entities', [])) if isinstance(graph, dict) else str(graph)[:200])
print(tools['claim_done']())
"""


def script() -> list[str]:
    direct = json.dumps({"name": "list_allowed_directories", "arguments": {}})
    program = json.dumps({"name": "programmatic_tool_call", "arguments": {"code": PROGRAM}})
    return [f"<tool_call>\n{direct}\n</tool_call>", f"<tool_call>\n{program}\n</tool_call>",
            "ANSWER: I looked at the workspace and claimed the task done."]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("checkout")
    p.add_argument("--presets", nargs="+", default=["8k", "64k"])
    p.add_argument("--tasks", nargs="*", default=[])
    p.add_argument("--seeds", nargs="*", type=int, default=[42])
    p.add_argument("--harnesses", default="dtc,ptc,hybrid")
    p.add_argument("--out", default="/tmp/loca-scripted")
    args = p.parse_args()

    from launch.eval import run_sweep
    from rollout.tiny_model import build_tiny
    from schema.config import SweepSettings
    from schema.load import load_sections

    tiny = str(build_tiny())
    loca = {"checkout": str(Path(args.checkout).expanduser().resolve()), "presets": args.presets,
            "tasks": args.tasks, "seeds": args.seeds}
    overrides = ["wandb.mode=disabled", "fabric.generator.backend=replay",
                 f"fabric.generator.script={json.dumps(script())}",
                 "fabric.env_worker.limits={max_turns: 4, max_new_tokens: 1024, max_context_tokens: 131072}",
                 "fabric.env_worker.concurrency=2", f"sweep.out_dir={args.out}", f"sweep.models=[{tiny}]",
                 "sweep.envs=[loca]", "sweep.samples=1", f"sweep.harnesses=[{args.harnesses}]",
                 "envs.loca.kind=loca", f"envs.loca.args={json.dumps(loca)}"]
    cfg, st = load_sections(ROOT / "configs" / "local.yaml", overrides, "sweep", SweepSettings)
    out = run_sweep(cfg, st)
    rows = list(csv.DictReader((out / "results_by_scale.csv").open()))
    records = [json.loads(line) for line in (out / "rollouts.jsonl").open() if '"harness"' in line]
    print(json.dumps({"checkout": loca["checkout"], "by_scale": rows,
                      "rollouts": [{k: r.get(k) for k in ("harness", "task", "scale", "reward", "termination",
                                                          "verifier_error", "context_tokens", "tool_output_tokens",
                                                          "tool_calls", "seconds")} | {"metrics": r.get("metrics")}
                                   for r in records]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
