"""LOCA-bench states at load, and an env worker holding them killed: `python -m bench.loca_fault_bench`.

LOCA's states are judged in place (envs/benchmarks/loca/episode.py): the env worker that generated a
state holds the driver process whose evaluator judges it, so a worker that dies loses every live state
it held. This runs `--episodes` LOCA episodes through the fabric's scheduler on `--workers` env workers
(all in flight at once: each worker's concurrency is its share), with a replay model that solves the
task, and kills one env worker once `--kill-after` episodes have finished. Printed as one JSON object:

    in_flight_at_kill    episodes running when the worker died (its share were LOCA states it held)
    reruns               episodes the scheduler re-ran because their worker died
    judged / passed      rollouts LOCA's evaluator judged, and passed (every one must pass: each re-run
                         generated a fresh state and was judged by LOCA's evaluator again)
    verifier_errors      must be 0 (a lost state is re-run, never a verdict)
    wall_s, per_min      the run's wall time and throughput

The checkout is tests/fixtures/loca_checkout copied with one more preset (`load`: the inventory and
claim_done servers only, so that many states fit in memory), in this project's Python and node_dir.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "loca_checkout"
SOLVE = """
import json
items = json.loads(tools["list_items"]())
threshold = int(open("policy.txt").read().split(":")[1])
low = sorted(i["sku"] for i in items if i["qty"] < threshold)
for sku in low:
    tools["flag_item"](sku=sku)
open("low_stock.txt", "w").write("\\n".join(low))
print(len(low), "flagged")
"""


def load_checkout(dst: Path, seeds: int) -> Path:
    """The fixture with a `load` preset: `seeds` configurations, two servers each."""
    shutil.copytree(FIXTURE, dst, ignore=shutil.ignore_patterns("__pycache__"))
    servers = {"inventory": {"enabled": True, "type": "inventory", "params": {"data_dir": "{task_workspace}/local_db/inventory"}},
               "claim_done": {"enabled": True, "type": "claim_done", "params": {}}}
    configs = [{"name": "ShelfAuditS2LEnv", "env_class": "gem.envs.shelf_audit_s2l.shelf_audit_s2l.ShelfAuditS2LEnv",
                "env_params": {"num_items": 6, "threshold": 5, "seed": s}, "mcp_servers": servers}
               for s in range(1, seeds + 1)]
    (dst / "task-configs" / "final_load_set_config.json").write_text(json.dumps({"configurations": configs}))
    return dst


async def main(args: argparse.Namespace) -> dict:
    import ray

    from envs.benchmarks.loca.kind import KIND, LocaArgs
    from envs.kinds import ListContext
    from launch.rollout_cache import RolloutCache
    from launch.rollouts import RolloutJob, RolloutRunner, outcome_settings
    from rollout.tiny_model import build_tiny
    from schema.load import load_config

    tmp = Path(tempfile.mkdtemp(prefix="loca-fault-"))
    checkout = load_checkout(tmp / "loca", args.seeds)
    program = json.dumps({"name": "programmatic_tool_call", "arguments": {"code": SOLVE}})
    script = [f"<tool_call>\n{program}\n</tool_call>", "ANSWER: done"]
    share = -(-args.episodes // args.workers)
    cfg = load_config(ROOT / "configs" / "local.yaml", [
        "wandb.mode=disabled", "fabric.generator.backend=replay", f"fabric.generator.script={json.dumps(script)}",
        f"fabric.env_workers={args.workers}", f"fabric.env_worker.concurrency={share}",
        "fabric.env_worker.harness=ptc", f"ray.num_cpus={args.workers + 2}",
        "fabric.env_worker.limits={max_turns: 3, max_new_tokens: 1024, max_context_tokens: 16384}",
        "fabric.env_worker.runtime={warm_pool: 0, program_timeout_s: 120}"])
    refs = KIND.refs(LocaArgs(checkout=str(checkout), presets=["load"], python=sys.executable,
                              node_dir=str(ROOT / ".mcp-servers")), ListContext("loca"))
    tiny = str(build_tiny())
    jobs = [RolloutJob(tiny, "ptc", r.task_id, r.scale, k, k, r)
            for k in range(-(-args.episodes // len(refs))) for r in refs][: args.episodes]
    cache = RolloutCache(tmp / "rollouts.jsonl", outcome_settings(cfg))
    runner = await RolloutRunner.start(cfg, tiny)
    killed: dict = {}

    def on_record(rec) -> None:
        if not killed and len(cache) >= args.kill_after:
            killed["at_done"] = len(cache)
            killed["in_flight"] = len(runner.fabric.scheduler._running)
            victim = runner.fabric.env.live[0]
            killed["t"] = time.time()
            ray.kill(victim)

    t0 = time.time()
    try:
        failed = await runner.run(jobs, cache, on_record)
        counters = dict(runner.fabric.scheduler.counters)
    finally:
        await runner.close()
        ray.shutdown()
    records = list(cache)
    wall = time.time() - t0
    cache.close()
    shutil.rmtree(tmp, ignore_errors=True)
    return {"episodes": args.episodes, "workers": args.workers, "concurrency_per_worker": share,
            "killed_after_done": killed.get("at_done"), "in_flight_at_kill": killed.get("in_flight"),
            "reruns": counters.get("reruns_worker_died"), "failed": len(failed), "judged": len(records),
            "passed": sum(r.reward == 1.0 for r in records),
            "verifier_errors": sum(r.verifier_error is not None for r in records),
            "wall_s": round(wall, 1), "per_min": round(len(records) / wall * 60, 1)}


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--kill-after", type=int, default=8)
    print(json.dumps(asyncio.run(main(p.parse_args())), indent=2))
