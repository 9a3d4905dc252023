"""The agent loop on the tiny model, the real runtime and a real task, under all three harnesses."""

import math
import re

import pytest
from transformers import AutoTokenizer

from envs.format.library import get_task
from envs.format.task_env import EnvironmentCache, LibraryTaskEnv, open_task_episode
from rollout.agent_loop import ChatRenderer, run_agent
from rollout.generators.hf import HFGenerator
from rollout.generators.scripted import ScriptedGenerator
from rollout.harness import Harness
from rollout.parser import parse_turn
from rollout.program_features import program_features
from rollout.teacher import call_text, oracle_trajectory
from rollout.tiny_model import build_tiny
from schema.config import LoopLimits
from schema.records import Prompt, SamplingParams

TASK = "retail_clearance_markdown"


@pytest.fixture(scope="session")
def tiny_path(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="session")
def tokenizer(tiny_path):
    return AutoTokenizer.from_pretrained(tiny_path)


@pytest.fixture(scope="session")
def renderer(tokenizer):
    return ChatRenderer(tokenizer)


@pytest.fixture(scope="session")
def cache(tmp_path_factory):
    return EnvironmentCache(tmp_path_factory.mktemp("envcache"))


def segments(traj):
    """Runs of equal mask after the prompt: [(mask, ids), ...]."""
    out, ids, mask = [], traj.token_ids[traj.prompt_len:], traj.loss_mask[traj.prompt_len:]
    for i, m in zip(ids, mask, strict=True):
        if out and out[-1][0] == m:
            out[-1][1].append(i)
        else:
            out.append((m, [i]))
    return out


def assert_aligned(traj, renderer, harness, instruction, catalogue):
    tok = renderer.tok
    assert len(traj.token_ids) == len(traj.loss_mask) == len(traj.logprobs)
    assert set(traj.loss_mask[: traj.prompt_len]) <= {0}
    # the whole sequence is the rendered conversation of the raw assistant texts and observations
    messages = [{"role": "system", "content": harness.system_prompt}, {"role": "user", "content": instruction}]
    for turn in traj.turns:
        messages.append({"role": "assistant", "content": turn.text})
        messages += [{"role": "tool", "content": o} for o in turn.observations]
    ended_on_turn = traj.termination in ("answer", "context_limit") and not traj.turns[-1].observations \
        or traj.termination == "answer"
    rendered = tok.apply_chat_template(messages, tools=harness.tools(catalogue), tokenize=False,
                                       add_generation_prompt=not ended_on_turn)
    text = tok.decode(traj.token_ids, skip_special_tokens=False)
    if ended_on_turn:
        text += renderer.turn_close(traj.turns[-1].finish_reason)
    assert text == rendered
    # model tokens are exactly the turns' generations, with behaviour log-probs; nothing else is trained
    model_segments = [ids for m, ids in segments(traj) if m == 1]
    assert len(model_segments) == len(traj.turns)
    for ids, turn in zip(model_segments, traj.turns, strict=True):
        assert len(ids) == turn.new_tokens
        assert tok.decode(ids, skip_special_tokens=False).startswith(turn.text)
    for lp, m in zip(traj.logprobs, traj.loss_mask, strict=True):
        assert (lp <= 0.0 and math.isfinite(lp)) if m else lp == 0.0


@pytest.mark.parametrize("harness_name", ["ptc", "dtc", "hybrid"])
async def test_tiny_model_through_runtime_is_token_aligned(harness_name, tiny_path, renderer, runtime, cache):
    task = get_task(TASK)
    gen = HFGenerator(tiny_path)
    harness = Harness(harness_name)
    async with await open_task_episode(runtime, task, "v0", cache) as ep:
        traj = await run_agent(gen, renderer, ep, harness, task.instruction, task_id=task.id, scale="v0",
                               limits=LoopLimits(max_turns=3, max_new_tokens=24),
                               sampling=SamplingParams(temperature=1.0, seed=0))
        catalogue = ep.tools()
    assert traj.termination in ("answer", "max_turns")
    assert traj.metrics["turns"] == len(traj.turns) >= 1
    assert any(t != 0.0 for t in traj.logprobs)
    assert_aligned(traj, renderer, harness, task.instruction, catalogue)


async def test_concurrent_requests_decode_as_one_batch_with_their_own_seeds(tiny_path):
    """Batching must not change what a seeded request samples, and the log-probs stay the model's."""
    import asyncio

    from rollout.generators.scripted import forced_logprobs

    gen = HFGenerator(tiny_path)
    assert gen._prefill_each  # on CPU: each prompt prefills alone, its cache padded into the batch's
    prompts = [[5, 6, 7], list(range(20, 60)), [9] * 15]
    params = [SamplingParams(temperature=1.0, max_new_tokens=n, seed=i) for i, n in enumerate((30, 12, 30))]
    alone = [await gen.generate(Prompt(p), s) for p, s in zip(prompts, params, strict=True)]
    before = gen.batches
    together = await asyncio.gather(*(gen.generate(Prompt(p), s) for p, s in zip(prompts, params, strict=True)))
    assert gen.batches - before < len(prompts)  # at least two requests shared a forward pass
    for p, s, a, b in zip(prompts, params, alone, together, strict=True):
        assert a.token_ids == b.token_ids and len(a.token_ids) <= s.max_new_tokens
        assert a.finish_reason == ("stop" if a.token_ids[-1] in gen.eos_ids else "length")
        forced = forced_logprobs(gen.model, p, b.token_ids, 1.0)
        assert max(abs(x - y) for x, y in zip(b.logprobs, forced, strict=True)) < 1e-4
    gen._prefill_each = False  # as on a GPU, or with sliding-window layers: the prompts prefill as one padded batch
    padded = await asyncio.gather(*(gen.generate(Prompt(p), s) for p, s in zip(prompts, params, strict=True)))
    assert [g.token_ids for g in padded] == [g.token_ids for g in together]
    greedy = SamplingParams(temperature=0.0, max_new_tokens=10)
    g1, g2 = await asyncio.gather(gen.generate(Prompt(prompts[0]), greedy), gen.generate(Prompt(prompts[0]), greedy))
    assert g1.token_ids == g2.token_ids


async def test_termination_reasons(tiny_path, renderer, runtime, cache):
    task = get_task(TASK)
    gen = HFGenerator(tiny_path)
    harness = Harness("ptc")
    async with await open_task_episode(runtime, task, "v0", cache) as ep:
        # every reply is cut at 8 tokens: error observations until max_turns
        traj = await run_agent(gen, renderer, ep, harness, task.instruction, task_id=task.id, scale="v0",
                               limits=LoopLimits(max_turns=2, max_new_tokens=8),
                               sampling=SamplingParams(temperature=0.0))
        assert traj.termination == "max_turns" and len(traj.turns) == 2
        assert all("cut at 8 tokens" in t.observations[0] for t in traj.turns)
        assert traj.metrics["format_errors"] == 2
        # a context budget that the prompt almost fills
        scripted = ScriptedGenerator(renderer.tok, [call_text("programmatic_tool_call", {"code": "print('x' * 4000)"})])
        prompt_len = len(renderer.prompt(harness.system_prompt, task.instruction, harness.tools(ep.tools()))[1])
        traj = await run_agent(scripted, renderer, ep, harness, task.instruction, task_id=task.id, scale="v0",
                               limits=LoopLimits(max_turns=5, max_context_tokens=prompt_len + 200))
        assert traj.termination == "context_limit" and len(traj.turns) == 1
        assert traj.token_ids[-1] == renderer.tok.convert_tokens_to_ids("<|im_end|>")
        # a response budget (verl's response_length): the episode ends within it, never cut after judging
        small = call_text("programmatic_tool_call", {"code": "print('x' * 20)"})
        for budget in (60, 150, 400):
            scripted = ScriptedGenerator(renderer.tok, [small] * 6)
            traj = await run_agent(scripted, renderer, ep, harness, task.instruction, task_id=task.id, scale="v0",
                                   limits=LoopLimits(max_turns=6, max_response_tokens=budget, max_new_tokens=64))
            assert len(traj.token_ids) - traj.prompt_len <= budget
            assert traj.termination == "response_limit", (budget, traj.termination)
            assert len(traj.token_ids) == len(traj.loss_mask) == len(traj.logprobs)
        with pytest.raises(ValueError, match="max_response_tokens"):
            LoopLimits(max_response_tokens=0)
        scripted = ScriptedGenerator(renderer.tok, ["All done.\nANSWER: 0; 0"])
        traj = await run_agent(scripted, renderer, ep, harness, task.instruction, task_id=task.id, scale="v0",
                               limits=LoopLimits(max_response_tokens=4096))
        assert traj.termination == "answer" and traj.final_answer == "All done.\nANSWER: 0; 0"
        scripted = ScriptedGenerator(renderer.tok, [])
        traj = await run_agent(scripted, renderer, ep, harness, task.instruction, task_id=task.id, scale="v0")
        assert traj.termination == "generator_error" and traj.turns == []


async def test_malformed_actions_become_error_observations(renderer, runtime, cache):
    task = get_task(TASK)
    bad = [
        '<tool_call>\n{"name": "programmatic_tool_call", "arguments": {"code": "print(1)"\n</tool_call>',  # bad JSON
        call_text("delete_everything", {}),                                  # unknown tool
        call_text("programmatic_tool_call", {"program": "print(1)"}),         # wrong argument
        call_text("programmatic_tool_call", {"code": "print('first')"})
        + call_text("programmatic_tool_call", {"code": "print('second')"}),  # two calls
        call_text("programmatic_tool_call", {"code": "print('ran')"}) + " and now the answer is 4",  # text after
        "<tool_call>\n{\"name\": \"programmatic_tool_call\"",                # unclosed
        call_text("programmatic_tool_call", {"code": "tools['set_price'](sku='nope', new_price=1)"}),  # tool error
        "ANSWER: 0; 0",
    ]
    harness = Harness("ptc")
    async with await open_task_episode(runtime, task, "v0", cache) as ep:
        traj = await run_agent(ScriptedGenerator(renderer.tok, bad), renderer, ep, harness, task.instruction,
                               task_id=task.id, scale="v0")
        catalogue = ep.tools()
    assert traj.termination == "answer" and len(traj.turns) == 8
    obs = [t.observations for t in traj.turns[:7]]
    assert "is not valid JSON" in obs[0][0]
    assert "unknown tool 'delete_everything'" in obs[1][0] and "programmatic_tool_call" in obs[1][0]
    assert "missing required argument(s) code; unknown argument(s) program" in obs[2][0]
    assert obs[3][0] == "first" and "call 2 ('programmatic_tool_call') was not run" in obs[3][1]
    assert obs[4][0] == "ran" and "text after </tool_call> is ignored" in obs[4][1]
    assert "was not closed" in obs[5][0]
    assert "ToolError" in obs[6][0]
    assert traj.metrics["format_errors"] == 5  # JSON, unknown, arguments, second call, unclosed
    assert traj.metrics["program_errors"] == 1
    assert_aligned(traj, renderer, harness, task.instruction, catalogue)


@pytest.mark.parametrize("harness_name", ["ptc", "dtc", "hybrid"])
async def test_oracle_teacher_trajectories_pass(harness_name, renderer, runtime, cache):
    task = get_task(TASK)
    traj = await oracle_trajectory(runtime, LibraryTaskEnv(task, "v0", cache), harness_name, renderer)
    assert traj.termination == "answer" and traj.reward == 1.0, (traj.criteria, traj.final_answer)
    if harness_name == "dtc":
        assert traj.metrics["tool_calls_direct"] > 5 and traj.metrics["tool_calls_program"] == 0
    else:
        assert traj.metrics["tool_calls_program"] > 5 and traj.metrics["programs"] >= 2


#: a chat model's template with no tools section (SmolLM2-Instruct's shape: ChatML, `tools` ignored)
CHATML_NO_TOOLS = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
                   "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def test_a_template_without_tools_gets_them_stated_and_a_rewriting_one_is_refused(tiny_path):
    """A model whose template drops `tools` still sees every tool and the call format the parser reads
    (stated in the system message); a template that rewrites earlier turns, or none, is refused."""
    tok = AutoTokenizer.from_pretrained(tiny_path)
    assert not ChatRenderer(tok).states_tools  # ours renders the tools itself
    tok.chat_template = CHATML_NO_TOOLS
    r = ChatRenderer(tok)
    harness = Harness("hybrid")
    specs = harness.tools([{"name": "lookup_order", "description": "Find an order", "inputSchema": {
        "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}])
    text, ids = r.prompt(harness.system_prompt, "Find order 7.", specs)
    assert r.states_tools and text.startswith("<|im_start|>system\n" + harness.system_prompt)
    assert "lookup_order" in text and "programmatic_tool_call" in text and "<tool_call>" in text
    assert tok.decode(ids) == text and text.endswith("<|im_start|>assistant\n")
    assert r.observation(["ok"]) == "<|im_start|>tool\nok<|im_end|>\n<|im_start|>assistant\n"
    tok.chat_template = ("{% for m in messages %}{% if m.role != 'assistant' or loop.last %}<|im_start|>{{ m.role }}\n"
                         "{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}"
                         "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    with pytest.raises(ValueError, match="not append-only for (user|tool) turns"):
        ChatRenderer(tok)
    tok.chat_template = None
    with pytest.raises(ValueError, match="no chat template"):
        ChatRenderer(tok)


def test_parser_and_program_features():
    tools = {"f": {"properties": {"a": {}}, "required": ["a"]}}
    assert parse_turn("just an answer", tools).is_answer
    assert parse_turn("<think>hmm <tool_call></think>done", tools).answer == "done"
    p = parse_turn('<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>', tools)
    assert p.calls[0].arguments == {"a": 1} and not p.errors  # double-encoded arguments are accepted
    f = program_features("r = tools['x'](a=1)\nprint(r)")
    assert f["dtc_like"] == 1 and f["tool_calls"] == 1
    f = program_features("out = [tools['x'](a=i) for i in range(3)]\ntry:\n    pass\nexcept ToolError:\n    pass")
    assert f["dtc_like"] == 0 and f["comprehensions"] == 1 and f["try_except"] == 1
    assert program_features("def (")["syntax_error"] == 1


def test_collect_and_build_tiny_commands(tmp_path, tiny_path):
    import json
    import subprocess

    import torch
    from safetensors.torch import load_file

    from tests.conftest import BIN

    r = subprocess.run([str(BIN / "progagent"), "model", "build-tiny", str(tmp_path / "tiny")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and (tmp_path / "tiny" / "model.safetensors").exists(), r.stderr[-1000:]
    # deterministic: the command's build (another process) is byte-for-byte the session's build_tiny()
    assert (tmp_path / "tiny" / "tokenizer.json").read_bytes() == (tiny_path / "tokenizer.json").read_bytes()
    wa, wb = load_file(tmp_path / "tiny" / "model.safetensors"), load_file(tiny_path / "model.safetensors")
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    # an --out that cannot be written is refused before any episode runs (it was found after all of them)
    r = subprocess.run([str(BIN / "progagent"), "collect", "--tasks", TASK, "--scales", "v0", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and f"--out {tmp_path} is a folder" in r.stdout, r.stdout + r.stderr
    assert "Started a local Ray instance" not in r.stdout + r.stderr
    out = tmp_path / "sft.jsonl"
    out.write_text("an earlier collection\n")  # replaced whole once the new one is written
    r = subprocess.run([str(BIN / "progagent"), "collect", "--teacher", "oracle", "--harness", "dtc", "--tasks", TASK,
                        "--scales", "v0", "--model", str(tmp_path / "tiny"), "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["harness"] == "dtc" and rows[0]["score"] == 1.0
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]  # the file it wrote first is gone
    assert len(rows[0]["token_ids"]) == len(rows[0]["loss_mask"]) and sum(rows[0]["loss_mask"]) > 100
    r = subprocess.run([str(BIN / "progagent"), "collect", "--teacher", "gpt-4", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "--teacher must be 'oracle' or 'openai:MODEL'" in r.stdout


def _limited_task(root, max_turns: int, program_timeout_s: float):
    """A task of our format whose task.toml sets its own [limits]."""
    import textwrap

    from envs.format.library import load_task
    from tests.test_task_format import write_task

    folder = write_task(root, "limited_items", toml=textwrap.dedent(f'''\
        id = "limited_items"
        domain = "inventory"
        title = "Demo"
        tools = ["list_items", "set_qty", "explode", "read_file", "count"]
        seed = 1

        [limits]
        max_turns = {max_turns}
        program_timeout_s = {program_timeout_s}
        '''))
    return load_task(folder, trusted=True)


SLEEPY = call_text("programmatic_tool_call", {"code": "import time\ntime.sleep(8)\nprint('woke')"})


async def test_an_episode_keeps_the_smaller_of_the_runs_and_the_tasks_limits(renderer, tmp_path):
    """The runtime's program_timeout_s and a task's [limits] are what an episode runs under (the harness
    had always passed its own 120 s, and task.toml's [limits] were never read)."""
    from envs.runtime.episode import Runtime
    from rollout.episode import run_episode
    from schema.config import RuntimeConfig

    cache = EnvironmentCache(tmp_path / "cache")
    loose = _limited_task(tmp_path / "loose", max_turns=40, program_timeout_s=120)
    strict = _limited_task(tmp_path / "strict", max_turns=2, program_timeout_s=2)
    async with Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=2, interrupt_grace_s=3)) as rt:
        # the run's 2 s program timeout, under a task that allows 120
        traj = await run_episode(LibraryTaskEnv(loose, "v0", cache), rt, ScriptedGenerator(renderer.tok, [SLEEPY]),
                                 renderer, "ptc", limits=LoopLimits(max_turns=1))
        assert "timed out" in traj.turns[0].observations[0] and "woke" not in traj.turns[0].observations[0]
        assert traj.turns[0].execute_s < 7
    async with Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=60, interrupt_grace_s=3)) as rt:
        # the task's 2 s and 2 turns, under a run that allows 60 s and 5 turns
        env = LibraryTaskEnv(strict, "v0", cache)
        traj = await run_episode(env, rt, ScriptedGenerator(renderer.tok, [SLEEPY] * 4 + ["done"]), renderer, "ptc",
                                 limits=LoopLimits(max_turns=5))
        assert len(traj.turns) == 2 and traj.termination == "max_turns"
        assert "timed out" in traj.turns[0].observations[0] and traj.turns[0].execute_s < 7


def test_evaluation_samples_at_its_own_temperature():
    """EvalStage.temperature reaches every evaluation episode's sampling (it was never read)."""
    from actors.env_worker import episode_sampling
    from launch.train import eval_requests
    from schema.load import load_config

    cfg = load_config(None, ["eval.temperature=0.3", "eval.samples=2", "fabric.env_worker.sampling.temperature=1.0",
                             "tasks.scales={v0: 1.0, v2: 1.0}"])
    from envs.format.kind import library_source

    reqs = [r for _, r in eval_requests(cfg, [library_source(["a", "b"], cfg.sources()["tasks"].scales)], "before")]
    assert len(reqs) == 2 * 2 * 2 and {r.temperature for r in reqs} == {0.3}
    assert len({r.seed for r in reqs}) == len(reqs)
    sampling = episode_sampling(cfg.fabric.env_worker.sampling, reqs[0])
    assert sampling.temperature == 0.3 and sampling.seed == reqs[0].seed


@pytest.mark.parametrize("override,field,where", [
    ("fabric.env_worker.library_root=x", "library_root", "tasks.library_root"),
    ("fabric.generator.model=x", "model", "model.path"),
    ("fabric.learner_ranks=4", "learner_ranks", "fsdp_ranks"),
    ("buffer.group_size=4", "buffer", "`rollout`")])
def test_fields_that_did_nothing_are_refused_by_name(override, field, where):
    """They were overwritten or restated another field (library_root, generator.model, learner_ranks), or
    moved (`buffer` is `rollout`): a config that sets them is told so, and where it went, before
    anything starts."""
    from schema.load import ConfigError, load_config

    with pytest.raises(ConfigError, match=f"unknown field `{field}`.*{re.escape(where)}"):
        load_config(None, [override])


def test_the_processes_that_serve_no_model_do_not_import_torch():
    """An env worker, a judge and the synthesis worker run programs and tools, never a model: each is a
    process of its own (a Ray actor), and torch's import is ~3 s of CPU per process on this machine
    (the oracle teacher's scripted generator imported it for a scorer it rarely has)."""
    import subprocess
    import sys

    code = ("import sys, actors.env_worker, actors.judge, actors.synthetic, rollout.teacher\n"
            "print(sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout
