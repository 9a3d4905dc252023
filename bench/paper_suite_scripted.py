"""`eval --suite paper` over every benchmark checkout given, with a scripted model: the table's path end to end.

    .venv/bin/python bench/paper_suite_scripted.py --loca ~/LOCA-bench --toolathlon ~/Toolathlon \
        --mcpmark ~/mcpmark --atlas ~/mcp-atlas --atlas-tasks ~/mcp-atlas.parquet --out /tmp/paper-suite

The tiny model is forced through one script (the replay backend): a program that lists the tools it
was given and the workspace, then an answer. It solves nothing; what it shows is one sweep over the
library and each benchmark given (each judged by its own evaluator), DTC and PTC, written as the
paper's table (paper.md) with the benchmarks not given as rows saying how to add them. Prints
paper.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PROGRAM = "import os\nprint(sorted(tools)[:12])\nprint(sorted(os.listdir('.'))[:12])\n"


def script() -> list[str]:
    program = json.dumps({"name": "programmatic_tool_call", "arguments": {"code": PROGRAM}})
    return [f"<tool_call>\n{program}\n</tool_call>", "ANSWER: I looked at what I was given."]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--loca", default="")
    p.add_argument("--loca-tasks", nargs="*", default=["CanvasArrangeExamS2LEnv", "SetConfCrDdlS2LEnv"])
    p.add_argument("--toolathlon", default="")
    p.add_argument("--toolathlon-tasks", nargs="*", default=[])
    p.add_argument("--mcpmark", default="", help="a checkout: its repository-only postgres tasks")
    p.add_argument("--atlas", default="", help="an MCP-Atlas checkout (with --atlas-tasks): its claims judged by "
                   "its scorer against a replayed judge on loopback (each claim: not_fulfilled)")
    p.add_argument("--atlas-tasks", default="")
    p.add_argument("--out", default="/tmp/paper-suite")
    args = p.parse_args()

    from launch.eval import run_sweep
    from rollout.tiny_model import build_tiny
    from schema.config import SweepSettings
    from schema.load import load_sections

    tiny = str(build_tiny())
    overrides = ["wandb.mode=disabled", "fabric.generator.backend=replay",
                 f"fabric.generator.script={json.dumps(script())}",
                 "fabric.env_worker.limits={max_turns: 3, max_new_tokens: 1024, max_context_tokens: 131072}",
                 "fabric.env_worker.concurrency=2", f"sweep.out_dir={args.out}", f"sweep.models=[{tiny}]",
                 "sweep.samples=1", "sweep.harnesses=[dtc,ptc]", "sweep.suite=paper", "tasks.scales={v0: 1.0, v3: 1.0}"]
    if args.loca:
        loca = {"checkout": str(Path(args.loca).expanduser().resolve()), "presets": ["8k"], "tasks": args.loca_tasks,
                "seeds": [42]}
        overrides += ["envs.loca.kind=loca", f"envs.loca.args={json.dumps(loca)}"]
    if args.toolathlon:
        tl = {"checkout": str(Path(args.toolathlon).expanduser().resolve()), "tasks": args.toolathlon_tasks}
        overrides += ["envs.toolathlon.kind=toolathlon", f"envs.toolathlon.args={json.dumps(tl)}"]
    if args.mcpmark:
        overrides += ["envs.mcpmark_pg.kind=mcpmark_postgres",
                      f"envs.mcpmark_pg.args={json.dumps({'checkout': str(Path(args.mcpmark).expanduser().resolve())})}"]
    judge = None
    if args.atlas:
        from bench.atlas_scripted import replay_judge

        judge, url, _ = replay_judge(["not_fulfilled"])
        atlas = {"checkout": str(Path(args.atlas).expanduser().resolve()), "judge_base_url": url,
                 "tasks_file": str(Path(args.atlas_tasks).expanduser().resolve())}
        overrides += ["envs.atlas.kind=mcp_atlas", f"envs.atlas.args={json.dumps(atlas)}"]
    cfg, st = load_sections(ROOT / "configs" / "local.yaml", overrides, "sweep", SweepSettings)
    try:
        out = run_sweep(cfg, st)
    finally:
        if judge is not None:
            judge.shutdown()
    print(json.dumps(json.loads((out / "paper.json").read_text()), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
