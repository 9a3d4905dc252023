"""The learning signal against a policy that optimises it: what a model samples or a program does must
never raise out of the host's parsing and saving, nor turn the policy's failure into a masked infra outcome.

Each test is an attack written as the policy would make it, through the same parser, agent loop,
runtime and records as training uses."""

import json
import re

import msgspec
import pytest

from envs.format.library import get_task
from envs.format.task_env import LibraryTaskEnv
from envs.runtime.episode import Runtime
from rollout.episode import run_episode
from rollout.generators.scripted import ScriptedGenerator
from rollout.parser import MAX_DEPTH, call_blocks, parse_turn, strip_think
from rollout.teacher import call_text
from schema.config import LoopLimits, RuntimeConfig
from schema.records import ToolCallSummary, Trajectory, Turn, Verdict, encodable, escape_surrogates, judged
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


# ---------------------------------------------------------------- a judge's failure is settled by its canary

def _final_state(envs, task, tmp_path, sql: str) -> bytes:
    """The task's built environment with `sql` run on its database: a state a policy's tools could leave."""
    import shutil
    import sqlite3

    from envs.format.task_env import snapshot_state

    root = tmp_path / "final"
    shutil.copytree(envs.get(task, "v0"), root)
    with sqlite3.connect(root / "db.sqlite") as db:
        db.execute(sql)
    return snapshot_state(root)


def test_a_verifier_that_raises_on_the_policys_state_is_the_policys_and_a_broken_one_is_infra(tmp_path):
    """The demo task's verifier indexes row 1 of `items`: a state without it raised IndexError, which
    was `infra/judge_error` (masked, re-run, never pushed down). Through the Judge's own function, the
    same verifier judges the oracle's final state (the canary) → the policy's `judge_rejected_state`.
    A verifier that raises on every state fails its canary too → infra, and says the judge is broken."""
    from actors.judge import judge_shipped
    from envs.format.kind import TaskRef
    from envs.format.library import load_task
    from envs.format.task_env import EnvironmentCache
    from tests.test_task_format import write_task

    library = tmp_path / "library"
    write_task(library, "demo_items")
    broken = write_task(library, "demo_broken")
    (broken / "verify.py").write_text("def verify(ctx):\n    return {'x': 1 / 0}\n")
    cache_root = str(tmp_path / "judge-cache")
    envs = EnvironmentCache(tmp_path / "cache")
    task = load_task(library / "demo_items", trusted=True)
    state = _final_state(envs, task, tmp_path, "delete from items where id = 1")

    verdict = judge_shipped(TaskRef("demo_items", "v0", str(library)), state, "ANSWER: 5", 60.0, cache_root)
    assert verdict.cause == "policy/judge_rejected_state" and "IndexError" in verdict.error, verdict
    assert verdict.metrics == {"judge/canary_judged": 1.0}
    ok = judge_shipped(TaskRef("demo_items", "v0", str(library)), _final_state(
        envs, task, tmp_path / "b", "update items set qty = 5 where id = 1"), "ANSWER: 5", 60.0, cache_root)
    assert ok.reward == 1.0 and ok.error is None  # a judged state never runs the canary
    root, answer = EnvironmentCache(cache_root).canary(task, "v0")  # the canary: the oracle's final state
    assert answer == "ANSWER: 5" and (root / "db.sqlite").is_file()

    verdict = judge_shipped(TaskRef("demo_broken", "v0", str(library)), state, "ANSWER: 5", 60.0, cache_root)
    assert verdict.cause == "infra/judge_error" and "canary failed too" in verdict.error, verdict
    assert verdict.metrics == {"judge/canary_failed": 1.0}


def test_only_failures_a_state_can_cause_are_settled_by_a_canary():
    from schema.outcomes import CANARIED, settled_cause
    from schema.records import settle

    calls = []

    def canary(cause=None):
        calls.append(cause)
        return Verdict.of({"x": False}) if cause is None else Verdict.failed("also", cause)

    for cause in CANARIED:
        assert settle(Verdict.failed("e", cause), canary).cause == "policy/judge_rejected_state"
        assert settle(Verdict.failed("e", cause), lambda: canary("infra/judge_error")).cause == cause
        assert settle(Verdict.failed("e", cause), lambda: canary("policy/state_refused")).cause == \
            "policy/judge_rejected_state"  # an untouched state may be refused by its verifier: it still judged
        assert settle(Verdict.failed("e", cause), lambda: None).cause == cause  # a kind without a canary
        assert settle(Verdict.failed("e", cause), lambda: 1 / 0).cause == cause  # a canary that raises: broken
    n = len(calls)
    for cause in ("infra/judge_unreachable", "infra/snapshot_error", "infra/env_error", "policy/state_refused"):
        assert settle(Verdict.failed("e", cause), canary).cause == cause  # transport, or already decided
    assert settle(Verdict.of({"x": True}), canary).reward == 1.0
    assert len(calls) == n  # none of those ran the canary
    assert settled_cause("infra/judge_timeout", "") == "infra/judge_timeout"


# ---------------------------------------------------------------- masked episodes are visible and bounded

def _record(i: int, passed: bool, cause: str):
    from launch.rollout_cache import RolloutRecord

    return RolloutRecord(model="m", harness="ptc", task="t", scale="v0", sample=i, settings="", seed=i,
                         reward=float(passed), score=float(passed), termination="answer", cause=cause,
                         context_tokens=100, verifier_error=None if cause.startswith("policy/") else "forged")


def test_reports_count_pass_rates_over_every_attempted_episode_with_infra_apart():
    """2 solved of 8, the other 6 forged as infra: the paper table said 1.00 (valid samples only)."""
    from types import SimpleNamespace

    from envs.format.kind import TaskRef
    from launch.eval_report import by_task, summarise
    from launch.paper_report import paper_rows

    records = [_record(i, True, "policy/solved") for i in range(2)] + \
        [_record(i, False, "infra/judge_timeout") for i in range(2, 8)]
    source = SimpleNamespace(kind=SimpleNamespace(name="library"), refs=[TaskRef("t", "v0")])
    (row,) = paper_rows(records, [source])
    assert row["pass_rate"] == 0.25 and row["infra_failed"] == 6 and row["rollouts"] == 8
    (task,) = by_task(records, [1])
    assert task["pass@1"] == 0.25 and task["infra"] == 6 and task["n"] == 8
    (overall,) = summarise([task], ("model", "harness"))
    assert overall["infra"] == 6 and overall["pass@1"] == 0.25


def test_the_curriculum_counts_masked_samples_as_not_passed():
    """What the manager hands the curriculum (actors/curriculum.py): one solved sample and three masked
    is a rate of 0.25, not 1.0 over the one valid sample."""
    from actors.rollout_manager import Group

    g = Group(seq=0, group_id="g", task_id="t", scale="v0", samples={0: _traj(reward=1.0), 2: _traj(reward=0.0)},
              masked={1: "infra/judge_timeout", 3: "infra/judge_error"})
    assert g.attempted_passes() == [True, False, False, False]


def test_a_step_whose_masked_share_passes_the_bound_is_loud_and_a_run_that_stays_above_it_stops():
    from launch.metrics import MaskedShare

    guard = MaskedShare(max_share=0.2, max_steps=3)
    assert guard({"rollout/infra/masked": 2.0}, 8) == (0.2, None, None)  # at the bound: quiet
    row = {"rollout/infra/masked": 6.0, "rollout/infra/judge_timeout": 9.0, "rollout/infra/groups_dropped": 1.0,
           "rollout/infra/env_error": 0.0}
    share, warning, stop = guard(row, 2)
    assert share == 0.75 and "6 of 8 samples masked" in warning and "judge_timeout (9)" in warning and stop is None
    assert "env_error" not in warning
    guard(row, 2)
    assert guard({"rollout/infra/masked": 0.0}, 8)[2] is None  # a quiet step resets the count
    for _ in range(2):
        assert guard(row, 2)[2] is None
    _, _, stop = guard(row, 2)
    assert stop and "for 3 steps in a row" in stop and "judge_timeout (9)" in stop


def _harbor_variant(tmp_path, test_sh: str, score_py: str):
    """The starter Harbor task with its tests replaced: a third-party task's own judge."""
    import shutil

    from tests.conftest import ROOT

    folder = tmp_path / "harbor-task"
    shutil.copytree(ROOT / "envs" / "starter_harbor" / "warehouse-restock", folder)
    (folder / "tests" / "test.sh").write_text(test_sh)
    (folder / "tests" / "score.py").write_text(score_py)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 60.0", "timeout_sec = 5.0", 1))
    return folder


SCORE_PY = """
import os, subprocess
try:
    value = float(open("/app/prediction.txt").read())
except FileNotFoundError:
    value = 0.0
if os.path.exists("/app/model.py"):  # a task whose test runs what the agent wrote
    subprocess.run(["python3", "/app/model.py"], check=False)
print(value)
"""
TEST_SH = "#!/bin/bash\nmkdir -p /logs/verifier\npython3 /tests/score.py > /logs/verifier/reward.txt\n"


@pytest.mark.parametrize("planted, was", [({"prediction.txt": "nan"}, "infra/judge_error"),
                                          ({"model.py": "while True:\n    pass\n"}, "infra/judge_timeout")])
def test_a_harbor_judge_that_fails_on_what_the_agent_left_is_the_agents(tmp_path, planted, was):
    """A prediction of `nan` makes the task's test.sh write no valid reward, and a script of the agent's
    that its test runs loops until test.sh is killed: each was infra (masked, re-run). The same tests judge
    the untouched container tree (the canary): the agent's zero, `judge_rejected_state`."""
    from envs.episode_env import judge_settled
    from envs.harbor.episode import HarborTaskEnv, snapshot_tree
    from envs.harbor.task import load_harbor_task

    env = HarborTaskEnv(load_harbor_task(_harbor_variant(tmp_path, TEST_SH, SCORE_PY)))
    tree = env.task.materialize(tmp_path / "tree")
    for name, text in planted.items():
        (tree / "app" / name).write_text(text)
    state = snapshot_tree(tree)
    assert env.judge_shipped(state, "").cause == was  # the judge's own failure, before it is settled
    verdict = judge_settled(env, state, "")
    assert verdict.cause == "policy/judge_rejected_state" and verdict.reward == 0.0, verdict
    canary = env.judge_canary()
    assert canary.error is None and canary.reward == 0.0


async def test_a_live_judge_that_raises_is_a_judge_error_settled_by_the_canary():
    """A judge of a live state reads what the policy left; one that raised ended run_episode with the env
    worker's own error (infra/worker_error, masked). It is a judge error, settled by the kind's canary."""
    from types import SimpleNamespace

    from rollout.episode import InProcess

    class Raising:
        judge_timeout_s = 10.0

        def __init__(self, canary):
            self.judge_canary = canary

        def judge(self, state, answer):
            raise RuntimeError("the verifier tripped on what the policy left")

    episode = SimpleNamespace(final_state=lambda: "state")
    judged_fine = await InProcess().final(Raising(lambda: Verdict.of({"x": False})), episode, "")
    assert judged_fine.cause == "policy/judge_rejected_state" and "RuntimeError" in judged_fine.error
    broken = await InProcess().final(Raising(lambda: Verdict.failed("also", "infra/judge_error")), episode, "")
    assert broken.cause == "infra/judge_error" and broken.metrics == {"judge/canary_failed": 1.0}
