"""The learner as a group of rank actors (real Ray, real torch.distributed over gloo, FSDP2 on CPU).

Two ranks take the same steps as one TorchLearner on all the data: GSPO (also with fewer groups than
ranks), SFT; publish gives full weights; a checkpoint resumes on a fresh group; the placement group
holds the requested bundles.
"""

import json
from pathlib import Path

import msgspec
import pytest
import ray
import torch

from actors.learner_group import LearnerGroup, LearnerPlacement
from learner.losses import PolicyLossConfig
from learner.sft import run_sft, sft_samples
from learner.torch_backend import TorchLearner
from schema.config import LearnerConfig, OptimConfig, SFTConfig, WeightTransportConfig
from schema.load import ConfigError
from tests.test_learner_torch import groups
from tests.test_rollout import tiny_path  # noqa: F401

# clipping wide enough for lr 1e-3 steps to show; 60-token rows: several per rank, more on one rank
# than the other; Adam eps 1e-5 keeps float noise in near-zero gradients (cross-rank summation order)
# from being scaled up to ±lr by the fresh optimizers' first steps
CFG = LearnerConfig(loss=PolicyLossConfig(clip_low=0.2, clip_high=0.2), optim=OptimConfig(lr=1e-3, eps=1e-5),
                    sft=SFTConfig(epochs=1, batch_size=3, lr=2e-3), max_tokens_per_micro_batch=60)
ROOT = Path(__file__).resolve().parents[1]
TWO = LearnerPlacement(ranks=2, cpus_per_rank=1, threads=1)
CFG2 = msgspec.structs.replace(CFG, fsdp_ranks=2)  # the same learner as two FSDP ranks


def published(group) -> tuple[int, dict[str, torch.Tensor]]:
    update = ray.get(group.weights_offer.remote(WeightTransportConfig(), 0, 0))
    return update.version, ray.get(update.ref[0])


def assert_close(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], atol: float = 5e-5) -> None:
    assert set(a) == set(b)
    assert all(a[k].shape == b[k].shape for k in a)  # full tensors, not FSDP shards
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    assert worst <= atol, worst


def test_two_ranks_step_as_one_learner_and_resume(ray_session, tiny_path, tmp_path):  # noqa: F811
    torch.set_num_threads(1)
    group = LearnerGroup.options(num_cpus=0).remote(str(tiny_path), CFG2, TWO)
    pg = ray.get(group.placement_group.remote())
    table = ray.util.placement_group_table(pg)
    assert table["state"] == "CREATED" and table["strategy"] == "PACK"
    assert list(table["bundles"].values()) == [{"CPU": 1.0}, {"CPU": 1.0}]

    ref = TorchLearner(tiny_path, CFG)
    for batch in (groups(), groups()[:1]):  # rank 0 gets group a, rank 1 group b; then rank 1 gets none
        m_group, m_ref = ray.get(group.train_step.remote(batch)), ref.train_step(batch)
        for k in ("loss", "tokens", "sequences", "groups", "reward_mean", "lr", "logprob_mismatch_abs_mean",
                  "behaviour_ratio_max", "behaviour_ratio_min"):
            assert m_group[k] == pytest.approx(m_ref[k], rel=1e-5, abs=1e-6), k
        assert m_group["grad_norm"] == pytest.approx(m_ref["grad_norm"], rel=1e-3)
        version, weights = published(group)
        assert version == ref.version and all(t.device.type == "cpu" for t in weights.values())
        assert_close(weights, ref.weights()[1])

    trajs = [t for g in groups() for t in g]
    history = ray.get(group.sft.remote(trajs))  # batches of 3 and 2 sequences, split 2+1 and 1+1
    ref.reset_optimizer(CFG.sft.lr)  # as LearnerGroup.sft: SFT's own optimizer, then a fresh one for RL
    ref_history = run_sft(ref, sft_samples(trajs), CFG.sft)
    ref.reset_optimizer(CFG.optim.lr)
    assert [h["sft_loss"] for h in history] == pytest.approx([h["sft_loss"] for h in ref_history], rel=1e-5)
    assert [h["tokens"] for h in history] == [h["tokens"] for h in ref_history]
    assert_close(published(group)[1], ref.weights()[1])

    ray.get(group.save.remote(str(tmp_path / "ckpt")))
    ray.get(group.train_step.remote(groups()))
    after = published(group)
    ray.get(group.shutdown.remote())

    fresh = LearnerGroup.options(num_cpus=0).remote(str(tiny_path), CFG2, TWO)
    assert ray.get(fresh.load.remote(str(tmp_path / "ckpt"))) == 4
    ray.get(fresh.train_step.remote(groups()))
    resumed = published(fresh)
    assert resumed[0] == after[0] == 5
    assert all(torch.equal(resumed[1][k], after[1][k]) for k in after[1])

    # the checkpoint is unsharded: one process resumes it too
    single = TorchLearner(tiny_path, CFG)
    single.load(tmp_path / "ckpt")
    single.train_step(groups())
    assert_close(single.weights()[1], after[1])

    from transformers import AutoModelForCausalLM

    exported = AutoModelForCausalLM.from_pretrained(ray.get(fresh.export_hf.remote(str(tmp_path / "hf"))))
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == ["Qwen3ForCausalLM"]
    state = exported.state_dict()
    assert all(torch.equal(state[k], resumed[1][k]) for k in resumed[1])
    ray.get(fresh.shutdown.remote())


@pytest.mark.megatron
def test_megatron_data_parallel_group_steps_as_one_torch_learner(ray_session, tiny_path):  # noqa: F811
    """Megatron ranks as the group's actors: its parallel state over the group's gloo world (DP 2);
    every rank gets all groups and takes its share of the rows."""
    pytest.importorskip("megatron.core")
    pytest.importorskip("mbridge")
    from schema.config import MegatronConfig

    cfg = LearnerConfig(backend="megatron", loss=CFG.loss, optim=CFG.optim, max_tokens_per_micro_batch=60,
                        megatron=MegatronConfig(data_parallel=2))
    group = LearnerGroup.options(num_cpus=0).remote(str(tiny_path), cfg, TWO)
    ref = TorchLearner(tiny_path, CFG)
    m_group, m_ref = ray.get(group.train_step.remote(groups())), ref.train_step(groups())
    assert m_group["loss"] == pytest.approx(m_ref["loss"], rel=1e-5, abs=1e-6)
    assert m_group["tokens"] == m_ref["tokens"]
    version, weights = published(group)
    assert version == 1
    assert_close(weights, ref.weights()[1])
    ray.get(group.shutdown.remote())


def test_fabric_config_gives_the_placement():
    from launch.fabric import learner_placement
    from schema.load import load_config

    paper = load_config(ROOT / "configs" / "paper-8x8-h200.yaml")
    p = learner_placement(paper)
    assert paper.learner.ranks == 16  # TP 4 × PP 2 × DP 2: the ranks are the megatron sizes' product
    assert p.ranks == 16 and p.bundles() == [{"CPU": 4.0, "GPU": 1.0}] * 16 and p.strategy == "PACK"
    with pytest.raises(ValueError, match="whole number"):
        learner_placement(load_config(None, ["learner.fsdp_ranks=4", "fabric.learner_num_gpus=2"]))
    one = learner_placement(load_config(ROOT / "configs" / "local.yaml", ["fabric.learner_num_gpus=0.5"]))
    assert one.ranks == 1 and not one.reserved and one.gpus_per_rank == 0.5 and one.cpus_per_rank == 0.0  # as any actor
    with pytest.raises(ConfigError, match="learner_ranks"):  # derived now: the old field is refused by name
        load_config(None, ["fabric.learner_ranks=4"])

def test_a_run_the_cluster_cannot_hold_is_refused_before_any_actor_starts(ray_session):
    from launch.fabric import Fabric
    from schema.load import load_config

    cfg = load_config(ROOT / "configs" / "local.yaml", ["fabric.env_workers=400", "fabric.learner_num_gpus=2"])
    before = len([a for a in ray._private.state.actors().values() if a["State"] != "DEAD"])
    with pytest.raises(RuntimeError, match=r"needs 2 GPUs \(learner 2\) and the Ray cluster has 0.*ray.check_resources"):
        Fabric(cfg, "unused")
    assert len([a for a in ray._private.state.actors().values() if a["State"] != "DEAD"]) == before


async def test_a_fabric_that_cannot_start_stops_at_its_deadline(ray_session):
    """A cluster that cannot place an env worker (no node has its CPUs; totals unchecked as on an
    autoscaling cluster) ends in an error at `fabric.start_timeout_s`, not an endless wait."""
    from launch.fabric import Fabric
    from schema.load import load_config

    cfg = load_config(ROOT / "configs" / "local.yaml", ["fabric.env_worker.num_cpus=500", "ray.check_resources=false",
                                                         "fabric.start_timeout_s=3"])
    fabric = Fabric(cfg, str(ROOT / "unused"), with_learner=False)
    try:
        with pytest.raises(RuntimeError, match=r"did not start within fabric.start_timeout_s=3 s"):
            await fabric.ready()
    finally:
        await fabric.close()
    with pytest.raises(Exception, match="start_timeout_s must be > 0"):
        load_config(None, ["fabric.start_timeout_s=0"])
