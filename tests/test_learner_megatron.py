"""The megatron learner against the torch learner on the tiny model (CPU, every parallel size 1).

megatron-core runs on CPU through `learner.megatron_backend._apply_cpu_patches`; the HF ↔ Megatron
weight conversion is mbridge's. Same log-probs, same GSPO and SFT steps, HF weights that
transformers loads, and a resumed learner that takes the same next step.
"""

import pytest
import torch

pytest.importorskip("megatron.core")
pytest.importorskip("mbridge")

from learner.batch import Sample  # noqa: E402
from learner.config import LearnerConfig, OptimConfig  # noqa: E402
from learner.losses import PolicyLossConfig  # noqa: E402
from learner.megatron_backend import MegatronLearner  # noqa: E402
from learner.torch_backend import TorchLearner  # noqa: E402
from tests.test_learner_torch import groups  # noqa: E402
from tests.test_rollout import tiny_path  # noqa: E402, F401

pytestmark = pytest.mark.megatron


def samples(with_logprobs: bool = True) -> list[Sample]:
    return [Sample(t.token_ids, t.loss_mask, t.logprobs if with_logprobs else None) for g in groups() for t in g]


def assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], atol: float) -> None:
    assert set(a) == set(b)
    worst = max((a[k] - b[k]).abs().max().item() for k in a)
    assert worst <= atol, worst


@pytest.mark.parametrize("budget", [4096, 1])  # all sequences packed in one row / one row per sequence
def test_logprobs_equal_the_torch_backend(tiny_path, budget):  # noqa: F811
    cfg = LearnerConfig(max_tokens_per_micro_batch=budget, temperature=0.7)
    mega = MegatronLearner(tiny_path, cfg).compute_logprobs(samples())
    ref = TorchLearner(tiny_path, cfg).compute_logprobs(samples())
    assert [len(x) for x in mega] == [len(x) for x in ref]
    for a, b in zip(mega, ref, strict=True):
        assert torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-4)


@pytest.mark.parametrize("loss", [PolicyLossConfig(clip_low=0.2, clip_high=0.2),
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
    cfg = LearnerConfig(optim=OptimConfig(lr=1e-3, eps=1e-6))
    ref, mega = TorchLearner(tiny_path, cfg), MegatronLearner(tiny_path, cfg)
    a, b = ref.sft_step(samples(False)), mega.sft_step(samples(False))
    assert b["sft_loss"] == pytest.approx(a["sft_loss"], abs=1e-5) and b["tokens"] == a["tokens"]
    assert_same_weights(mega.weights()[1], ref.weights()[1], atol=5e-5)


def test_exported_weights_load_into_transformers(tiny_path, tmp_path):  # noqa: F811
    from transformers import AutoConfig, AutoModelForCausalLM

    learner = MegatronLearner(tiny_path, LearnerConfig(loss=PolicyLossConfig(clip_low=0.2, clip_high=0.2),
                                                       optim=OptimConfig(lr=1e-3)))
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
                        loss=PolicyLossConfig(clip_low=0.2, clip_high=0.2))
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
