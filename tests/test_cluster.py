"""The cluster path on one machine: the paper config's resource arithmetic against 8 nodes × 8 GPUs,
and the paper's topology scaled down to a simulated cluster of real raylets (bench/cluster_sim.py)
with an env node, a generator node and the learner's node removed mid-run."""

from pathlib import Path

import pytest

from launch.fabric import check_fits, resource_plan
from schema.load import load_config
from tests.conftest import ROOT

#: an H200 node as the paper's cluster has them (Ray's logical resources)
NODE = {"GPU": 8.0, "CPU": 192.0}


def test_the_paper_config_fits_eight_nodes_of_eight_gpus():
    cfg = load_config(ROOT / "configs" / "paper-8x8-h200.yaml")
    plan = resource_plan(cfg)
    assert plan == {"learner": {"GPU": 16.0, "CPU": 64.0}, "generators": {"GPU": 48.0, "CPU": 96.0},
                    "env_workers": {"GPU": 0.0, "CPU": 256.0}}  # the table in the config's comments
    check_fits(plan, {k: 8 * v for k, v in NODE.items()})
    with pytest.raises(RuntimeError, match=r"needs 64 GPUs \(learner 16, generators 48\) and the Ray cluster has 56"):
        check_fits(plan, {k: 7 * v for k, v in NODE.items()})
    # node by node, as Ray places them: the learner's 16 bundles PACKed on whole nodes first, then one
    # engine per free GPU, then the env workers SPREAD (one per node in turn)
    f, ranks = cfg.fabric, cfg.learner.ranks
    nodes = [dict(NODE) for _ in range(8)]
    for _ in range(ranks):
        n = next(n for n in nodes if n["GPU"] >= f.learner_num_gpus / ranks)
        n["GPU"] -= f.learner_num_gpus / ranks
        n["CPU"] -= f.learner_cpus_per_rank
    assert [n["GPU"] for n in nodes[:2]] == [0.0, 0.0]  # two whole nodes: each TP group on one NVLink domain
    for _ in range(f.generators):
        n = next(n for n in nodes if n["GPU"] >= f.generator.num_gpus)
        n["GPU"] -= f.generator.num_gpus
        n["CPU"] -= f.generator.num_cpus
    for i in range(f.env_workers):
        nodes[i % 8]["CPU"] -= f.env_worker.num_cpus
    assert all(n["GPU"] == 0 for n in nodes) and min(n["CPU"] for n in nodes) == 192 - 64
    assert cfg.fabric.weights.kind == "collective" and cfg.fabric.weights.backend == "nccl"


@pytest.mark.slow
@pytest.mark.timeout(600)  # five raylets, three node losses and a resume on one machine: the suite's 300 s is per test of one fabric
def test_paper_topology_on_a_simulated_cluster_survives_node_loss(tmp_path: Path):
    from bench.cluster_sim import run_scenario

    r = run_scenario(tmp_path, steps=7)
    where = r["placement"]
    assert where["learner_rank"] == ["learner", "learner"]  # PACKed together on the learner's node
    assert sorted(where["generator"]) == ["gen-a", "gen-b"]  # off the learner's node, one per GPU node
    assert where["generator_pool"] == ["head"] and where["learner_group"] == ["head"]  # with the driver
    assert len(set(where["env_worker"])) == 4  # SPREAD: four workers on four nodes
    # gen-a gone: no node has 2 free GPUs, so the pool serves with one and says so
    assert r["pool_after_gen_a"]["alive"] == 1 and r["pool_after_gen_a"]["waiting_for_resources"] == 1
    assert "serving with 1 of 2" in r["pool_after_gen_a"]["last_error"]
    # gen-c joins: the waiting generator starts there, in a new weight group, at the current version
    after = r["pool_after_gen_c"]
    assert after["alive"] == 2 and after["restarts"] == 1 and after["versions"] == [after["version"]] * 2
    assert sorted(r["placement_after_gen_c"]["generator"]) == ["gen-b", "gen-c"]
    assert after["weights_epoch"] >= 2
    # the env workers on the env and gen-a nodes were replaced (SPREAD puts four workers on four of
    # the five nodes, so those two held one or two); what they were running ran again elsewhere
    assert [s["step"] for s in r["steps"]] == [1, 2, 3, 4, 5]
    lost = sum(node in ("env", "gen-a") for node in where["env_worker"])
    assert lost >= 1 and r["steps"][-1]["workers_replaced"] == lost
    # the learner's node gone: a clean stop that names the checkpoint; --resume continues to the end
    assert "the learner is gone after step 5" in r["stopped"] and f"--resume {r['checkpoint']}" in r["stopped"]
    assert r["resumed_steps"] == [6, 7]
    assert r["trained_twice"] == 0 and r["trained_samples"] == 7 * 2 * 2  # every step's 2 groups of 2, once
    assert r["final"] == {"duplicates": 0.0, "groups_failed": 0.0, "episodes_failed": 0.0}
