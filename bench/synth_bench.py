"""Synthesis candidates per minute on the actor fabric with 1, 2 and 4 env workers, in one run.

    .venv/bin/python -m bench.synth_bench [--candidates 4] [--workers 1 2 4] [--out bench-synth.json]

The models are replayed (tests/fixtures/synth_replay: the recorded planner, builder and auditor of
`library_overdue_fines`) by an OpenAI-compatible endpoint on loopback that answers each request by
what it asks (the stage from the prompt, the auditor's turn from the conversation), so any number of
candidates run at once; everything else is real: each candidate is constructed, fails its first
execute (the recorded broken oracle), is repaired, executed again, audited at v3 (the oracle on an env
worker, the auditor's episode from the generator pool, judged on a judge) and validated at v0-v3, all
through the scheduler on env workers (launch/synth_fabric.py). Candidates/min counts accepted
candidates over the pipeline's wall time (the fabric's start apart); the JSON has each run and the
ratios to one worker. On a 2-core machine more workers mostly share the same two cores: the ratio
says what the fabric adds there, not what a cluster gives.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import time
from pathlib import Path

from tests.servers.chat_endpoint import ChatEndpoint

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "synth_replay"
PLANNER, BUILDER, AUDITOR = "planner-mini-2026-06", "builder-large-2026-09", "auditor-pro-2026-08"
AUDIT_TURNS = ["audit_1_files", "audit_2_rules", "audit_3_assess", "audit_4_answer"]


def recorded(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


def intents_reply(n: int) -> dict:
    """The recorded intent, n times under n task ids."""
    reply = recorded("intents_library")
    text = reply["choices"][0]["message"]["content"]
    block = re.search(r"```json\n(.*?)\n```", text, re.S)
    assert block is not None, "the recorded intents reply has no JSON block"
    one = json.loads(block.group(1))["intents"][0]
    many = [dict(one, task_id=f"{one['task_id']}_{i}") for i in range(n)]
    reply["choices"][0]["message"]["content"] = f"```json\n{json.dumps({'intents': many}, indent=1)}\n```"
    return reply


class KeyedReplay:
    """Answers by what a request asks, not by arrival order (candidates interleave)."""

    def __init__(self, candidates: int):
        self.intents = intents_reply(candidates)
        self.counts: dict[str, int] = {}
        self.problems: list[str] = []
        self.endpoint = ChatEndpoint(self._answer)
        self.url = self.endpoint.url

    def _answer(self, path: str, body: dict) -> tuple[int, dict]:
        name, reply = self.route(body)
        self.counts[name] = self.counts.get(name, 0) + 1
        return (500 if name == "unknown" else 200), reply

    def route(self, body: dict) -> tuple[str, dict]:
        model, messages = body["model"], body["messages"]
        user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        if model == PLANNER:
            return "intents", self.intents
        if model == BUILDER and user.startswith("Build the environment"):
            return "construct", recorded("construct")
        if model == BUILDER and user.startswith("Here is the environment"):
            return "verifier", recorded("verifier_broken")
        if model == BUILDER and " failed the " in user:
            return "repair", recorded("repair_oracle")
        if model == AUDITOR and body.get("tools"):
            turn = sum(1 for m in messages if m["role"] == "assistant")
            if turn < len(AUDIT_TURNS):
                return AUDIT_TURNS[turn], recorded(AUDIT_TURNS[turn])
        self.problems.append(f"{model}: {user[:120]!r}")
        return "unknown", {"error": {"message": "the replay has no answer for this request"}}


async def one_run(workers: int, candidates: int, replay: KeyedReplay) -> dict:
    import ray

    from launch.synth_fabric import FabricChecker
    from schema.synth import load_synth_config
    from synth.pipeline import Pipeline

    url = replay.url
    cfg = load_synth_config(ROOT / "configs" / "synth.yaml", [
        "domains=[library]", f"intents_per_domain={candidates}", f"concurrency={candidates}", "max_repair_rounds=2",
        f"models={{intents: {{model: {PLANNER}, base_url: '{url}'}}, construct: {{model: {BUILDER}, "
        f"base_url: '{url}'}}, audit: {{model: {AUDITOR}, base_url: '{url}'}}}}",
        "audit.max_turns=8", "runtime.program_timeout_s=60", f"fabric.env_workers={workers}", "fabric.concurrency=4",
        "fabric.num_cpus=0.5"])
    t0 = time.perf_counter()
    checker = await FabricChecker.start(cfg)
    started_s = time.perf_counter() - t0
    out = Path(tempfile.mkdtemp(prefix=f"synth-bench-{workers}w-"))
    t1 = time.perf_counter()
    try:
        summary = await Pipeline(cfg, out, checker=checker).run()
    finally:
        ray.shutdown()
    wall = time.perf_counter() - t1
    return {"env_workers": workers, "candidates": candidates, "accepted": len(summary.accepted),
            "errors": summary.errors, "fabric_start_s": round(started_s, 1), "pipeline_s": round(wall, 1),
            "candidates_per_min": round(len(summary.accepted) / wall * 60, 2)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--candidates", type=int, default=4)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--out", default="bench-synth.json")
    args = p.parse_args()
    runs = []
    for w in args.workers:
        replay = KeyedReplay(args.candidates)
        runs.append(asyncio.run(one_run(w, args.candidates, replay)))
        runs[-1]["replay_problems"] = replay.problems
        print(json.dumps(runs[-1]), flush=True)
    base = runs[0]["candidates_per_min"] or float("nan")
    result = {"runs": runs, "ratio_to_first": {str(r["env_workers"]): round(r["candidates_per_min"] / base, 2)
                                               for r in runs}}
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result["ratio_to_first"]))


if __name__ == "__main__":
    main()
