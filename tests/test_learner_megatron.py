"""The megatron learner against the torch learner on the tiny model (CPU).

megatron-core runs on CPU through `learner.megatron_backend._apply_cpu_patches`; the HF ↔ Megatron
weight conversion is mbridge's. Same log-probs, same GSPO and SFT steps, HF weights that
transformers loads, and a resumed learner that takes the same next step; then the same with two
gloo ranks as tensor parallel 2 and as data parallel 2 (this file is also the ranks' script).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("megatron.core")
pytest.importorskip("mbridge")

from learner.batch import Sample  # noqa: E402
from learner.losses import PolicyLossConfig  # noqa: E402
from learner.megatron_backend import MegatronLearner  # noqa: E402
from learner.torch_backend import TorchLearner  # noqa: E402
from schema.config import LearnerConfig, MegatronConfig, OptimConfig  # noqa: E402
from tests.test_learner_torch import groups  # noqa: E402
from tests.test_rollout import tiny_path  # noqa: E402, F401

pytestmark = pytest.mark.megatron
GSPO = PolicyLossConfig(clip_low=0.2, clip_high=0.2)  # clipping wide enough for lr 1e-3 steps to show


def samples(with_logprobs: bool = True) -> list[Sample]:
    return [Sample(t.token_ids, t.loss_mask, t.logprobs if with_logprobs else None) for g in groups() for t in g]


def assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], atol: float) -> None:
    assert set(a) == set(b)
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    assert worst <= atol, worst


@pytest.mark.parametrize("budget", [4096, 1])  # all sequences packed in one row / one row per sequence
def test_logprobs_equal_the_torch_backend(tiny_path, budget):  # noqa: F811
    cfg = LearnerConfig(max_tokens_per_micro_batch=budget, temperature=0.7)
    mega = MegatronLearner(tiny_path, cfg).logprobs(samples())
    ref = TorchLearner(tiny_path, cfg).logprobs(samples())
    assert [len(x) for x in mega] == [len(x) for x in ref]
    for a, b in zip(mega, ref, strict=True):
        assert torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-4)


@pytest.mark.parametrize("loss", [GSPO,
                                  PolicyLossConfig(clip_low=0.2, clip_high=0.2, filter_equal_reward_groups=True,
                                                   tis_cap=2.0, aggregation="token-mean")])
def test_gspo_step_equals_the_torch_backend(tiny_path, loss):  # noqa: F811
    ref = TorchLearner(tiny_path, LearnerConfig(loss=loss, optim=OptimConfig(lr=1e-3)))
    # several micro-batches on the megatron side: gradient accumulation must add up to the same step
    mega = MegatronLearner(tiny_path, LearnerConfig(loss=loss, optim=OptimConfig(lr=1e-3),
                                                    max_tokens_per_micro_batch=60))
    m_ref, m_mega = ref.train_step(groups()), mega.train_step(groups())
    assert set(m_ref) == set(m_mega)
    for k in m_ref:
        tol = 1e-3 * abs(m_ref[k]) if k == "grad_norm" else 1e-5 * max(1.0, abs(m_ref[k]))  # see below
        assert m_mega[k] == pytest.approx(m_ref[k], abs=tol), k
    # torch's clip_grad_norm_ sums squares in float32 on CPU (~1e-4 relative); Adam's first step
    # normalises the gradients, so float noise in near-zero gradients shows up at ~1e-5 of lr 1e-3
    assert_same_weights(mega.weights()[1], ref.weights()[1], atol=5e-5)
    assert mega.version == ref.version == 1


def test_sft_step_equals_the_torch_backend(tiny_path):  # noqa: F811
    # Adam eps 1e-6: with 1e-8 a gradient of ~1e-9 (one element of a down_proj here) is normalised to
    # ±lr, and its float noise with it
    cfg = LearnerConfig(optim=OptimConfig(lr=1e-6, eps=1e-6))
    ref, mega = TorchLearner(tiny_path, cfg), MegatronLearner(tiny_path, cfg)
    for learner in (ref, mega):
        learner.set_lr(1e-3)  # the SFT learning rate, as the learner actor sets it
    a, b = ref.sft_step(samples(False)), mega.sft_step(samples(False))
    assert b["sft_loss"] == pytest.approx(a["sft_loss"], abs=1e-5) and b["tokens"] == a["tokens"]
    assert b["lr"] == a["lr"] == 1e-3
    assert_same_weights(mega.weights()[1], ref.weights()[1], atol=5e-5)


def test_exported_weights_load_into_transformers(tiny_path, tmp_path):  # noqa: F811
    from transformers import AutoConfig, AutoModelForCausalLM

    learner = MegatronLearner(tiny_path, LearnerConfig(loss=GSPO, optim=OptimConfig(lr=1e-3)))
    learner.train_step(groups())  # weights that differ from the checkpoint's
    version, state = learner.weights()
    assert version == 1 and all(t.device.type == "cpu" for t in state.values())
    hf = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(tiny_path), dtype=torch.float32)
    hf.load_state_dict(state, strict=True)  # HF names and shapes, nothing missing or left over
    hf.tie_weights()
    exported = AutoModelForCausalLM.from_pretrained(learner.export_hf(tmp_path / "hf"), dtype=torch.float32)
    ids = torch.tensor([samples()[0].token_ids[:32], samples()[1].token_ids[:32]])
    mb = learner._micro_batches([_row(ids)])[0]
    with torch.no_grad():
        mega_logits = learner.models[0](**learner._model_inputs(mb))
        for model in (hf, exported):
            assert torch.allclose(model(input_ids=ids).logits, mega_logits, atol=1e-4)


def _row(ids: torch.Tensor):
    from learner.batch import pack

    return pack([Sample(x.tolist(), [1] * len(x)) for x in ids], 10_000)[0]


def test_resumed_learner_takes_the_same_next_step(tiny_path, tmp_path):  # noqa: F811
    cfg = LearnerConfig(optim=OptimConfig(lr=1e-3, warmup_steps=3),
                        loss=GSPO)
    a = MegatronLearner(tiny_path, cfg)
    lrs = [a.train_step(groups())["lr"] for _ in range(2)]
    assert lrs == pytest.approx([2e-3 / 3, 1e-3])  # the torch backend's warmup: lr·(n+1)/W
    a.save(tmp_path / "ckpt")
    torch.rand(3)  # the RNG moves on in the original process; the checkpoint restored it
    a.load(tmp_path / "ckpt")
    ma = a.train_step(groups())
    b = MegatronLearner(tiny_path, cfg)
    b.load(tmp_path / "ckpt")
    assert b.step == 2 and b.version == 2
    mb = b.train_step(groups())
    assert ma["lr"] == mb["lr"] and ma["loss"] == mb["loss"]
    wa, wb = a.weights()[1], b.weights()[1]
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


SIZES = [{"tensor_parallel": 2}, {"data_parallel": 2}]


def test_two_ranks_take_the_single_process_step(tiny_path, tmp_path):  # noqa: F811
    """torchrun, 2 CPU ranks (gloo): TP 2 splits every layer and the vocabulary, DP 2 shares the rows
    (60-token micro-batches: several per rank); log-probs, metrics and weights as one torch process.
    One launch runs both layouts, one after the other (megatron's parallel state is rebuilt between
    them): a launch is two processes importing megatron-core, seconds of CPU each."""
    ref = TorchLearner(tiny_path, LearnerConfig(loss=GSPO, optim=OptimConfig(lr=1e-3)))
    ref_lp = ref.logprobs(samples())
    ref_metrics = ref.train_step(groups())
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", __file__,
                           str(tiny_path), str(tmp_path), json.dumps(SIZES)], env=env, timeout=300,
                          capture_output=True, text=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    for i, sizes in enumerate(SIZES):
        out = torch.load(tmp_path / f"rank0-{i}.pt", weights_only=False)
        assert out["sizes"] == sizes
        for a, b in zip(out["logprobs"], ref_lp, strict=True):
            assert torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-4), sizes
        for k in ref_metrics:
            tol = 1e-3 * abs(ref_metrics[k]) if k == "grad_norm" else 1e-5 * max(1.0, abs(ref_metrics[k]))
            assert out["metrics"][k] == pytest.approx(ref_metrics[k], abs=tol), (sizes, k)
        assert_same_weights(out["weights"], ref.weights()[1], atol=5e-5)
        assert out["resumed_version"] == 1


def _rank_main(tiny: str, out_dir: str, layouts: str) -> None:
    from megatron.core import parallel_state as mpu

    for i, sizes in enumerate(json.loads(layouts)):
        cfg = LearnerConfig(loss=GSPO, optim=OptimConfig(lr=1e-3), max_tokens_per_micro_batch=60,
                            megatron=MegatronConfig(**sizes))
        learner = MegatronLearner(tiny, cfg)
        assert (learner.tp, learner.dp) == (sizes.get("tensor_parallel", 1), sizes.get("data_parallel", 1))
        logprobs = learner.logprobs(samples())
        metrics = learner.train_step(groups())
        weights = learner.weights()[1]
        learner.save(Path(out_dir) / f"ckpt-{i}")
        learner.train_step(groups())
        learner.load(Path(out_dir) / f"ckpt-{i}")
        if torch.distributed.get_rank() == 0:
            torch.save({"sizes": sizes, "logprobs": logprobs, "metrics": metrics, "weights": weights,
                        "resumed_version": learner.version}, Path(out_dir) / f"rank0-{i}.pt")
        torch.distributed.barrier()
        del learner
        mpu.destroy_model_parallel()  # the next layout builds its own groups over the same gloo world


if __name__ == "__main__":
    _rank_main(*sys.argv[1:4])
