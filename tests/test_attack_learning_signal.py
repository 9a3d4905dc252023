"""The learning signal against a policy that optimises it: what a model samples or a program does must
never raise out of the host's parsing and saving, nor turn the policy's failure into a masked infra outcome.

Each test is an attack written as the policy would make it, through the same parser, agent loop,
runtime and records as training uses."""

import json
import re

import msgspec
import pytest

from envs.format.task_env import LibraryTaskEnv
from envs.format.library import get_task
from envs.runtime.episode import Runtime
from rollout.episode import run_episode
from rollout.generators.scripted import ScriptedGenerator
from rollout.parser import MAX_DEPTH, call_blocks, parse_turn, strip_think
from rollout.teacher import call_text
from schema.config import LoopLimits, RuntimeConfig
from schema.records import Trajectory, Turn, ToolCallSummary, Verdict, encodable, escape_surrogates, judged
from tests.test_rollout import TASK, cache, renderer, tiny_path, tokenizer  # noqa: F401

PTC = {"programmatic_tool_call": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}}


# ---------------------------------------------------------------- the parser never raises on a sample

def test_a_call_nested_a_thousand_deep_is_a_format_error_not_an_exception():
    for depth in (MAX_DEPTH + 1, 1_000, 100_000):
        deep = "[" * depth + "]" * depth
        turn = parse_turn(f'<tool_call>{{"name": "programmatic_tool_call", "arguments": {{"code": {deep}}}}}</tool_call>',
                          PTC)
        assert not turn.calls and not turn.is_answer
        assert len(turn.errors) == 1 and "nested deeper than" in turn.errors[0], turn.errors
        # twice-encoded arguments go through the same decoder
        twice = json.dumps(json.dumps({"code": json.loads("[" * 200 + "]" * 200)}))
        turn = parse_turn(f'<tool_call>{{"name": "programmatic_tool_call", "arguments": {twice}}}</tool_call>', PTC)
        assert not turn.calls and turn.errors
    ok = "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2)  # what a tool could need is still parsed
    tools = {"t": {"type": "object", "properties": {"x": {}}}}
    assert parse_turn(f'<tool_call>{{"name": "t", "arguments": {{"x": {ok}}}}}</tool_call>', tools).calls


@pytest.mark.parametrize("where", ["value", "key", "name", "twice"])
def test_a_lone_surrogate_escape_in_a_call_is_a_format_error(where):
    """`"\\ud800"` in JSON decodes to a string no UTF-8 encoder takes: it crashed the tokenizer when
    echoed in an error observation and the run's save when the call was recorded."""
    bad = "\\ud800"
    body = {"value": f'{{"name": "programmatic_tool_call", "arguments": {{"code": "print(1)  # {bad}"}}}}',
            "key": f'{{"name": "programmatic_tool_call", "arguments": {{"code": "1", "{bad}": 1}}}}',
            "name": f'{{"name": "tool{bad}", "arguments": {{}}}}',
            "twice": '{"name": "programmatic_tool_call", "arguments": ' + json.dumps('{"code": "\\ud800"}') + "}"}[where]
    turn = parse_turn(f"<tool_call>{body}</tool_call>", PTC)
    assert not turn.calls and len(turn.errors) == 1
    # arguments encoded twice that do not decode stay a string: "must be a JSON object"
    assert ("must be a JSON object" if where == "twice" else "lone surrogate") in turn.errors[0]
    for error in turn.errors:
        error.encode("utf-8")  # what the model is told is text a tokenizer takes
    # a surrogate *pair* is one character (an emoji) and stays a call
    fine = parse_turn('<tool_call>{"name": "programmatic_tool_call", "arguments": {"code": "print(\'\\ud83d\\ude00\')"}}'
                      '</tool_call>', PTC)
    assert fine.calls and fine.calls[0].arguments["code"] == "print('\U0001F600')"


def _regex_blocks(text):
    return [m.group(1) for m in re.finditer(r"<tool_call>(.*?)</tool_call>", text, re.S)]


def test_the_linear_block_scan_finds_what_the_lazy_regex_found():
    """The parser finds blocks with str.find (one pass): the lazy regex it replaces rescanned the rest
    of the turn from every unclosed tag (quadratic in a turn of unclosed tags). Same blocks, same text
    around them, on hand-made and random turns."""
    import random

    rng = random.Random(7)
    pieces = ["<tool_call>", "</tool_call>", "x", '{"name": "a"}', "<think>", "</think>", "\n", "<tool_", "call>"]
    samples = ["", "<tool_call>", "</tool_call>", "<tool_call><tool_call>a</tool_call></tool_call>",
               "a<tool_call>b</tool_call>c<tool_call>d"]
    samples += ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 30))) for _ in range(2_000)]
    for text in samples:
        blocks, rest = call_blocks(text)
        assert blocks == _regex_blocks(text), text
        assert rest == re.sub(r"<tool_call>(.*?)</tool_call>", "", text, flags=re.S), text
        assert strip_think(text) == re.sub(r"<think>.*?</think>", "", text, flags=re.S).strip(), text
    # a whole turn of unclosed tags: one error, no call
    flood = parse_turn("<tool_call>" * 50_000, PTC)
    assert not flood.calls and flood.errors == [flood.errors[0]] and "not closed" in flood.errors[0]


# ---------------------------------------------------------------- every record is saved whatever it holds

def _traj(**kw) -> Trajectory:
    base = dict(task_id="t", scale="v0", harness="ptc", group_id="g", sample_idx=0, policy_version=0, token_ids=[1, 2],
                loss_mask=[0, 1], logprobs=[0.0, -1.0], prompt_len=1, turns=[], final_answer="", termination="answer")
    return Trajectory(**(base | kw))


def test_a_trajectory_holding_lone_surrogates_is_judged_into_one_that_every_writer_takes():
    """A program can ask for tools["\\ud800"] (the bridge's JSON carries the escape, and the call record
    keeps the name); a verifier can quote it back. Every trajectory passes `judged`, which escapes them,
    so rollouts.jsonl, the checkpoint's msgpack and SFT files save it."""
    turn = Turn(action="program", text="t", new_tokens=1, finish_reason="stop",
                calls=[{"name": "programmatic_tool_call", "arguments": {"code": "tools['\udcff']()"}}],
                observations=["KeyError: '\ud800'"], tool_calls=[ToolCallSummary(tool="x\ud800", ok=False, source="program")],
                errors=["program_KeyError"])
    traj = judged(_traj(turns=[turn], final_answer="\udfff"), Verdict.failed("quoted \ud800", "policy/state_refused"))
    for encode in (msgspec.json.encode, msgspec.msgpack.encode):
        encode(traj)
    assert traj.turns[0].tool_calls[0].tool == "x\\ud800" and traj.final_answer == "\\udfff"
    assert traj.verifier_error == "quoted \\ud800" and traj.cause == "policy/state_refused"
    clean = _traj()
    assert encodable(clean) is clean  # nothing to escape: the same object, no copy
    assert escape_surrogates("é\U0001F600") == "é\U0001F600"


# ---------------------------------------------------------------- sampled into a real episode

@pytest.fixture
async def runtime():
    rt = Runtime(RuntimeConfig(warm_pool=0))
    await rt.start()
    yield rt
    await rt.close()


async def test_sampled_surrogates_and_deep_calls_are_the_policys_and_the_episode_goes_on(runtime, renderer, tokenizer,  # noqa: F811
                                                                                               cache):  # noqa: F811
    """Through the agent loop on a real kernel: a 1,000-deep call, a program whose code holds a lone
    surrogate, a program that prints one and asks for a tool by such a name, then a final answer. No
    step raises; the episode is the policy's (malformed calls / wrong answer, never infra) and saves."""
    deep = "[" * 1_000 + "]" * 1_000
    replies = [f'<tool_call>{{"name": "programmatic_tool_call", "arguments": {{"code": {deep}}}}}</tool_call>',
               '<tool_call>{"name": "programmatic_tool_call", "arguments": {"code": "print(\'\\udcff\')"}}</tool_call>',
               call_text("programmatic_tool_call", {"code": "print(chr(0xd800))\ntry:\n    tools[chr(0xdcff)]()\n"
                                                            "except Exception as e:\n    print(type(e).__name__)"}),
               "done"]
    env = LibraryTaskEnv(get_task(TASK), "v0", cache)
    traj = await run_episode(env, runtime, ScriptedGenerator(tokenizer, replies), renderer, "ptc",
                             limits=LoopLimits(max_turns=6, max_new_tokens=4096))
    assert traj.termination == "answer" and traj.cause.startswith("policy/"), (traj.cause, traj.termination)
    assert traj.metrics["format_errors"] == 2, [t.errors for t in traj.turns]
    assert "\\ud800" in traj.turns[2].observations[0]  # printed, escaped before the tokenizer
    msgspec.json.encode(traj)
    msgspec.msgpack.encode(traj)
