"""The paper's topology on a simulated cluster, with node loss: `python -m bench.cluster_sim` prints JSON.

Five real raylets on this machine (`ray.cluster_utils.Cluster`) advertise the resources of
configs/cluster-sim.yaml's table (GPUs they do not have). The training driver (launch/train.train)
runs GSPO steps with the collective weight transport while nodes leave:

    after step 1   where every actor landed (the placement table)
    after step 2   the env-only node leaves: its env workers' episodes re-run on the others
    after step 3   generator node gen-a leaves: no node has room for its generator, so the pool
                   serves with one and says so; its env worker's episodes re-run
    after step 4   node gen-c joins: the waiting generator starts there and joins the weight group
                   at the current version
    after step 5   the learner's node leaves: the driver stops with LearnerLost, naming the checkpoint
    then           node learner-2 joins, and `--resume` of the last checkpoint trains to the end

What it proves: placement (PACK, SPREAD, coordinators on the driver's node), replacement and
re-runs across nodes, the driver's stop and resume, the collective transport between processes of
different raylets. What it does not: no GPU, no NCCL, no network between machines (every raylet
shares this machine's loopback and filesystem), no InfiniBand.

tests/test_cluster.py runs `run_scenario` and asserts on its report. `--load` runs it with at least 100
episodes in flight (LOAD) and reports each fault's next step over the median normal step.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: role -> (CPUs, GPUs) advertised: configs/cluster-sim.yaml's table
NODES = {"learner": (3, 2), "gen-a": (2, 2), "gen-b": (2, 2), "env": (2, 0)}
ROLES = {"LearnerRank": "learner_rank", "GeneratorActor": "generator", "EnvWorker": "env_worker", "Judge": "judge",
         "GeneratorPool": "generator_pool", "LearnerGroup": "learner_group"}


def placement(names: dict[str, str]) -> dict[str, list[str]]:
    """Each live actor kind of the run -> the nodes (by role) its actors are on, sorted."""
    import ray

    table: dict[str, list[str]] = {}
    for a in ray._private.state.actors().values():  # the GCS's actor table (no dashboard needed)
        kind = ROLES.get(a["ActorClassName"])
        if kind and a["State"] == "ALIVE":
            table.setdefault(kind, []).append(names.get(a["Address"]["NodeID"], "?"))
    return {k: sorted(v) for k, v in sorted(table.items())}


def wait_dead(node_id: str) -> None:
    """Until the GCS marks a removed node dead (its health checks time out, ~30 s by default): until
    then Ray may still place actors there."""
    import ray

    while any(n["NodeID"] == node_id and n["Alive"] for n in ray.nodes()):
        time.sleep(0.5)


def _metrics(run: Path) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if r["phase"] == "train"]


#: `--load`: at least 100 episodes in flight when the nodes leave ((max_staleness 1 + 1) × 13 groups × 4
#: samples = 104, every env worker's concurrency room for them all)
LOAD = ["train.groups_per_step=13", "rollout.group_size=4", "fabric.env_worker.concurrency=26"]


def run_scenario(out: Path, steps: int = 7, overrides: list[str] | None = None) -> dict[str, Any]:
    import ray
    from ray.cluster_utils import Cluster

    from launch.loopback import loopback_only
    from launch.train import LearnerLost, train
    from schema.load import load_config

    # raylets started while the run loads both cores: more than the 5 s Ray gives them to reach the GCS
    os.environ.setdefault("RAY_gcs_rpc_server_connect_timeout_s", "60")
    # a killed node is marked dead after 5 missed 1 s health checks (Ray's default: 5 × 3 s): the
    # simulation waits for that twice
    os.environ.setdefault("RAY_health_check_period_ms", "1000")
    os.environ.setdefault("RAY_health_check_failure_threshold", "5")
    temp = tempfile.mkdtemp(prefix="rc", dir="/tmp")  # short: Ray's socket paths are limited to 107 bytes
    # Cluster writes its address to the default temp folder's ray_current_cluster whatever temp_dir
    # says, and fails when that folder does not exist (a machine where Ray never ran with its default)
    Path(ray._private.utils.get_ray_address_file(None)).parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    loopback_only()  # every simulated node on 127.0.0.1: nothing listens beyond loopback (launch/loopback.py)
    # no dashboard and no log monitor: nothing here reads them (placement() reads the GCS's actor table;
    # log_to_driver is off), and the dashboard's modules were ~6 s of CPU of a run on 2 cores
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "temp_dir": temp, "include_dashboard": False,
                                                            "include_log_monitor": False,
                                                            "object_store_memory": 200 << 20})
    nodes = {role: cluster.add_node(num_cpus=c, num_gpus=g, object_store_memory=150 << 20)
             for role, (c, g) in NODES.items()}
    names = {n.node_id: role for role, n in nodes.items()} | {cluster.head_node.node_id: "head"}
    ray.init(address=cluster.address, log_to_driver=False,
             runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}})
    gone: dict[str, str] = {}
    report: dict[str, Any] = {"cluster_start_s": round(time.monotonic() - t0, 1), "events": []}
    cfg = load_config(ROOT / "configs" / "cluster-sim.yaml", [f"run.out_dir={out}", f"train.steps={steps}",
                                                              *(overrides or [])])

    def event(what: str, manager: Any, **extra: Any) -> None:
        report["events"].append({"what": what, "at_s": round(time.monotonic() - t0, 1),
                                 "episodes_done": manager.counters["episodes_done"],
                                 "reruns": manager.scheduler.counters["reruns_worker_died"],
                                 "resubmitted": manager.counters["episodes_resubmitted"], **extra})

    async def on_step(step: int, fabric: Any, manager: Any) -> None:
        if step == 1:
            report["placement"] = placement(names)
            print("placement after step 1:", json.dumps(report["placement"]), file=sys.stderr, flush=True)
        elif step == 2:
            event("remove env", manager)
            gone['env'] = nodes['env'].node_id  # killed as a failing machine: no draining
            cluster.remove_node(nodes.pop('env'), allow_graceful=False)
        elif step == 3:
            event("remove gen-a", manager)
            gone['gen-a'] = nodes['gen-a'].node_id  # killed as a failing machine: no draining
            cluster.remove_node(nodes.pop('gen-a'), allow_graceful=False)
            for _ in range(600):  # until the pool says it serves with fewer (its replacement waits)
                stats = await fabric.pool.stats.remote()
                if stats["waiting_for_resources"]:
                    break
                await asyncio.sleep(0.2)
            report["pool_after_gen_a"] = {k: stats[k] for k in ("alive", "waiting_for_resources", "last_error")}
        elif step == 4:
            event("add gen-c", manager)
            # in the main thread (Ray's node start sets signal handlers): the driver's loop waits meanwhile
            nodes["gen-c"] = cluster.add_node(num_cpus=2, num_gpus=2, object_store_memory=150 << 20)
            names[nodes["gen-c"].node_id] = "gen-c"
            for _ in range(900):
                stats = await fabric.pool.stats.remote()
                if stats["alive"] == 2 and not stats["waiting_for_resources"]:
                    break
                await asyncio.sleep(0.2)
            report["pool_after_gen_c"] = {"alive": stats["alive"], "restarts": stats["restarts"],
                                          "versions": (await fabric.pool.health.remote())["versions"],
                                          "weights_epoch": stats["weights_epoch"], "version": stats["version"]}
            report["placement_after_gen_c"] = placement(names)
        elif step == 5:
            event("remove learner", manager)
            gone['learner'] = nodes['learner'].node_id  # killed as a failing machine: no draining
            cluster.remove_node(nodes.pop('learner'), allow_graceful=False)

    try:
        try:
            asyncio.run(train(cfg, on_step=on_step))
            report["stopped"] = None
        except LearnerLost as exc:
            report["stopped"] = str(exc)
            report["checkpoint"] = str(exc.checkpoint)
        first = next(p for p in Path(out).glob("cluster-sim-*") if p.is_dir())
        report["steps"] = [{"step": r["step"], "step_s": round(r["step_s"], 1),
                            "reruns": r["rollout/scheduler_reruns_worker_died"],
                            "workers_replaced": r["rollout/scheduler_workers_replaced"],
                            "max_in_flight": r.get("rollout/max_in_flight")} for r in _metrics(first)]
        # the step after each node left, over the median step no fault touched (the target: <= 3)
        by_step = {s["step"]: s["step_s"] for s in report["steps"]}
        faulted = {3: "env left", 4: "gen-a left"}
        normal = sorted(v for k, v in by_step.items() if k not in faulted and k > 1)
        if normal:
            median = normal[len(normal) // 2]
            report["step_over_normal"] = {why: round(by_step[k] / median, 2) for k, why in faulted.items()
                                          if k in by_step}
        if report["stopped"]:
            t1 = time.monotonic()
            wait_dead(gone["learner"])
            nodes["learner-2"] = cluster.add_node(num_cpus=3, num_gpus=2, object_store_memory=150 << 20)
            names[nodes["learner-2"].node_id] = "learner-2"
            time.sleep(1)  # a run folder name has a one-second clock
            resumed = asyncio.run(train(cfg, resume=report["checkpoint"]))
            report["resume_s"] = round(time.monotonic() - t1, 1)
            report["resumed_steps"] = [r["step"] for r in _metrics(resumed)]
            trained = [(json.loads(line)["group_id"], json.loads(line)["sample_idx"])
                       for run in (first, resumed) for line in (run / "rollouts.jsonl").read_text().splitlines()]
            report["trained_samples"] = len(trained)
            report["trained_twice"] = sum(n - 1 for n in Counter(trained).values() if n > 1)
            last = _metrics(resumed)[-1]
            report["final"] = {k: last[f"rollout/{k}"] for k in ("duplicates", "groups_failed", "episodes_failed")}
        report["total_s"] = round(time.monotonic() - t0, 1)
        return report
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("steps", nargs="?", type=int, default=7,
                        help="GSPO steps in all (at least 6: the learner's node leaves after step 5)")
    parser.add_argument("--load", action="store_true", help="at least 100 episodes in flight (LOAD), and "
                        "each fault's next step over the median normal step")
    args = parser.parse_args()
    if args.steps < 6:
        parser.error(f"steps: {args.steps}; the scenario's last fault comes after step 5, so at least 6")
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(run_scenario(Path(tmp), args.steps, LOAD if args.load else None), indent=2))
