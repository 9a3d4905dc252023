"""What training learns from: each outcome's cause (policy or infra), the reward terms, the curriculum.

Real episodes on the real runtime and a shipped task where a cause comes from the runtime (a program
timeout, an OOM, the disk limit, a tool server that will not start); hand-built trajectories where
the rule is arithmetic (reward terms, the curriculum's band)."""


import pytest

from actors.curriculum import CurriculumSampler
from envs.format.kind import library_source
from envs.format.library import get_task, load_task
from envs.format.task_env import LibraryTaskEnv, open_task_episode
from envs.runtime.episode import Runtime
from learner.batch import rl_samples
from rollout.episode import run_episode
from rollout.generators.scripted import ScriptedGenerator
from rollout.rewards import REWARD_TERMS, check_terms, combine, reward_terms, trained_reward
from rollout.teacher import call_text
from schema.config import CurriculumConfig, LoopLimits, PolicyLossConfig, RewardConfig, RuntimeConfig
from schema.outcomes import CAUSES, INFRA_TERMINATIONS, episode_cause, policy_cause
from schema.records import TERMINATIONS, ToolCallSummary, Trajectory, Turn, Verdict
from tests.test_rollout import TASK, renderer, tiny_path, tokenizer  # noqa: F401
from tests.test_task_format import write_task

# ---------------------------------------------------------------- the taxonomy

def test_every_termination_and_verifier_failure_is_on_a_named_side():
    for t in TERMINATIONS:  # each termination is decided: infra by the table, else the policy's
        cause = INFRA_TERMINATIONS.get(t) or policy_cause(0.0, t, [])
        assert cause in CAUSES, t
    assert {INFRA_TERMINATIONS[t] for t in ("generator_error", "env_error")} == {"infra/generator_error",
                                                                                 "infra/env_error"}
    with pytest.raises(TypeError):
        Verdict.failed("no cause given")  # every verifier failure names its side
    with pytest.raises(ValueError, match="unknown outcome cause"):
        Verdict.failed("typo", "infra/judge_eror")
    # the order a failed episode's cause is read in: disk limit, OOM, timeout, other limits, format, answer
    assert policy_cause(1.0, "answer", [["program_timeout"]]) == "policy/solved"
    assert policy_cause(0.0, "disk_limit", [["program_oom"]]) == "policy/disk_limit"
    assert policy_cause(0.0, "max_turns", [["program_timeout"], ["program_oom"]]) == "policy/program_oom"
    assert policy_cause(0.0, "max_turns", [["format: bad JSON"]]) == "policy/max_turns"
    assert policy_cause(0.0, "answer", [["format: bad JSON"]]) == "policy/malformed_calls"
    assert policy_cause(0.0, "answer", [[]]) == "policy/wrong_answer"


def _traj(**kw) -> Trajectory:
    base = dict(task_id="t", scale="v0", harness="ptc", group_id="g", sample_idx=0, policy_version=0, token_ids=[1, 2],
                loss_mask=[0, 1], logprobs=[0.0, -1.0], prompt_len=1, turns=[], final_answer="", termination="answer")
    return Trajectory(**(base | kw))


def test_a_verdicts_cause_wins_over_the_policy_reading_and_a_fabric_termination_over_both():
    t = _traj()
    assert episode_cause(t, "infra/judge_timeout") == "infra/judge_timeout"
    assert episode_cause(t, "policy/state_refused") == "policy/state_refused"
    assert episode_cause(_traj(termination="generator_error"), None) == "infra/generator_error"
    assert episode_cause(_traj(termination="env_error"), "policy/state_refused") == "infra/env_error"


@pytest.fixture
async def tight_runtime():
    rt = Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=3, interrupt_grace_s=3, memory_bytes=768 * 2**20,
                               disk_bytes=2 * 2**20))
    await rt.start()
    yield rt
    await rt.close()


def _program(code: str) -> str:
    return call_text("programmatic_tool_call", {"code": code})


@pytest.mark.parametrize("code, cause", [
    ("import time\ntime.sleep(60)", "policy/program_timeout"),
    ("x = b'x' * (4 * 2**30)", "policy/program_oom"),
    ("for i in range(4):\n    open(f'/workspace/f{i}', 'wb').write(b'x' * 1_000_000)", "policy/disk_limit"),
])
async def test_a_programs_timeout_oom_or_disk_limit_is_the_policys_zero(tight_runtime, renderer, tmp_path,  # noqa: F811
                                                                       code, cause):
    """Real episodes of a shipped task: what the program did is the policy's outcome (trained as 0, not
    re-run), whatever the runtime had to do to stop it."""
    env = LibraryTaskEnv(get_task(TASK), "v0", _cache(tmp_path))
    gen = ScriptedGenerator(renderer.tok, [_program(code), "ANSWER: 0; 0"])
    traj = await run_episode(env, tight_runtime, gen, renderer, "ptc", limits=LoopLimits(max_turns=3))
    assert traj.reward == 0.0 and traj.cause == cause, (traj.termination, [t.errors for t in traj.turns])


def _cache(tmp_path):
    from envs.format.task_env import EnvironmentCache

    return EnvironmentCache(tmp_path / "cache")


async def test_a_tool_server_that_will_not_start_is_an_infra_failure(tight_runtime, tmp_path):
    """Opening an episode whose tool server dies at start raises with the step named
    ("infra/tool_server_start"): the env worker re-raises it as EpisodeFailed, the scheduler re-runs and
    then masks it (tests/test_fabric.py runs it through the actors)."""
    folder = write_task(tmp_path / "lib")
    (folder / "tools.py").write_text("raise SystemExit('this server cannot start')\n")
    task = load_task(folder)
    with pytest.raises(Exception) as info:
        await open_task_episode(tight_runtime, task, "v0", _cache(tmp_path))
    assert getattr(info.value, "outcome_cause", None) == "infra/tool_server_start", repr(info.value)


# ---------------------------------------------------------------- the learner's side of masking

def test_advantages_are_over_each_groups_valid_samples_only():
    """A group handed to the learner holds its valid samples only (the rollout manager leaves masked ones
    out): the advantage of a 3-sample group is that of those 3, never of a fake zero."""
    g3 = [_traj(group_id="a", sample_idx=i, reward=r) for i, r in enumerate([1.0, 0.0, 1.0])]
    g4 = [_traj(group_id="b", sample_idx=i, reward=r) for i, r in enumerate([1.0, 0.0, 1.0, 0.0])]
    samples, _ = rl_samples([g3, g4], PolicyLossConfig())
    a = [s.advantage for s in samples if s.group_id == "a"]
    assert len(a) == 3 and abs(sum(a)) < 1e-6 and a[0] == pytest.approx(0.57735, rel=1e-3)  # (1 − 2/3) / std
    with_fake_zero, _ = rl_samples([g3 + [_traj(group_id="a", sample_idx=3, reward=0.0)]], PolicyLossConfig())
    assert with_fake_zero[0].advantage > a[0]  # what a trained fake zero would have done: pushed the others up


# ---------------------------------------------------------------- reward terms

def _turns(*codes: str) -> list[Turn]:
    return [Turn(action="program", text="", new_tokens=1, finish_reason="stop",
                 calls=[{"name": "programmatic_tool_call", "arguments": {"code": c}}]) for c in codes]


def test_each_reward_term_on_hand_built_trajectories():
    cfg = RewardConfig(terms={"binary": 1.0, "score": 1.0, "context_efficiency": 0.5, "dtc_like": 0.5},
                       context_budget_tokens=100, context_budgets={"big": 1000})
    raw = 'print(tools["list_items"]())'
    bound = 'r = tools["list_items"](page=1)\nprint(r)'
    dumped = 'import json\nprint(json.dumps(tools["x"]()))'
    summary = 'items = tools["list_items"]()\nprint(len(items["items"]))'
    looped = 'for p in range(3):\n    print(tools["list_items"](page=p))'
    t = _traj(reward=1.0, score=1.0, tool_output_tokens=150, turns=_turns(raw, bound, dumped, summary, looped))
    v = reward_terms(t, cfg)
    assert v == {"binary": 1.0, "score": 1.0, "context_efficiency": 0.5, "dtc_like": 0.0}  # nothing observed
    assert reward_terms(_traj(task_id="big", tool_output_tokens=150), cfg)["context_efficiency"] == 0.0
    assert reward_terms(_traj(tool_output_tokens=10_000), cfg)["context_efficiency"] == 1.0  # bounded
    assert reward_terms(_traj(turns=[]), cfg)["dtc_like"] == 0.0  # no program, nothing to penalise
    assert reward_terms(_traj(score=0.5), cfg)["score"] == 0.5
    assert set(REWARD_TERMS) >= {"binary", "score", "context_efficiency", "dtc_like"}
    echo = _observed(raw, returned=1000, shown=1000)
    t = _traj(turns=[echo, _observed(summary, returned=1000, shown=10), _observed(looped, returned=0, shown=20)])
    assert reward_terms(t, cfg)["dtc_like"] == pytest.approx((1000 + 0.1) / 1030)


def _observed(code: str, returned: int, shown: int, direct: bool = False) -> Turn:
    """A turn whose call showed the model `shown` characters after its tools returned `returned`."""
    call = {"name": "list_items", "arguments": {}} if direct else \
        {"name": "programmatic_tool_call", "arguments": {"code": code}}
    return Turn(action="call" if direct else "program", text="", new_tokens=1, finish_reason="stop", calls=[call],
                observations=["x" * shown, "Note: a parser note is not the call's output"],
                tool_calls=[ToolCallSummary(tool="list_items", ok=True, source="direct" if direct else "program",
                                            result_chars=returned)] if returned else [])


def test_dtc_like_measures_what_entered_the_context_not_how_the_program_was_written():
    """The term read program syntax: `if True:` around the call, a one-item loop, a no-op program before
    it or a direct call avoided it while the same raw tool output entered the context. Now each of those
    scores as the plain echo does, and only reducing what was fetched lowers it."""
    cfg = RewardConfig(terms={"binary": 1.0, "dtc_like": 0.5})
    plain = reward_terms(_traj(turns=[_observed('print(tools["list_items"]())', 5000, 5000)]), cfg)["dtc_like"]
    assert plain == 1.0
    for dressed in (_traj(turns=[_observed('if True:\n    print(tools["list_items"]())', 5000, 5000)]),
                    _traj(turns=[_observed('for _ in [0]:\n    print(tools["list_items"]())', 5000, 5000)]),
                    _traj(turns=[_observed("x = 1", 0, 0), _observed('print(tools["list_items"]())', 5000, 5000)]),
                    _traj(turns=[_observed("", 5000, 5000, direct=True)])):
        assert reward_terms(dressed, cfg)["dtc_like"] == plain, dressed.turns
    reduced = _traj(turns=[_observed('print(len(tools["list_items"]()["items"]))', 5000, 3)])
    assert reward_terms(reduced, cfg)["dtc_like"] < 0.001


def test_terms_combine_within_zero_and_one_and_their_weights_change_the_trained_reward():
    efficient = _traj(reward=1.0, score=1.0, tool_output_tokens=50)
    wasteful = _traj(reward=1.0, score=1.0, tool_output_tokens=400)
    failed = _traj(reward=0.0, score=0.5, tool_output_tokens=400)
    binary = RewardConfig()
    assert [trained_reward(t, binary) for t in (efficient, wasteful, failed)] == [1.0, 1.0, 0.0]
    ctx = RewardConfig(terms={"binary": 1.0, "context_efficiency": 0.3}, context_budget_tokens=100)
    assert [trained_reward(t, ctx) for t in (efficient, wasteful, failed)] == [1.0, pytest.approx(0.7), 0.0]
    assert wasteful.metrics["reward/context_efficiency"] == 1.0 and wasteful.metrics["reward/trained"] == \
        pytest.approx(0.7)  # each term's value is logged on the episode
    heavier = RewardConfig(terms={"binary": 1.0, "context_efficiency": 0.6}, context_budget_tokens=100)
    assert trained_reward(wasteful, heavier) == pytest.approx(0.4)
    mixed = RewardConfig(terms={"binary": 1.0, "score": 3.0})
    assert trained_reward(failed, mixed) == pytest.approx(0.375)  # gains averaged by weight
    for cfg in (ctx, heavier, mixed, RewardConfig(terms={"score": 1.0, "context_efficiency": 0.5,
                                                          "dtc_like": 0.5})):
        for t in (efficient, wasteful, failed, _traj(reward=1.0, score=1.0, tool_output_tokens=10**6,
                                                    turns=_turns('print(tools["a"]())'))):
            assert 0.0 <= combine(reward_terms(t, cfg), cfg) <= 1.0
    with pytest.raises(ValueError, match="sum to 1.5 > 1"):
        check_terms(RewardConfig(terms={"binary": 1.0, "context_efficiency": 1.0, "dtc_like": 0.5}))
    with pytest.raises(ValueError, match="needs a gain term"):
        check_terms(RewardConfig(terms={"context_efficiency": 0.5}))
    with pytest.raises(ValueError, match="unknown term"):
        check_terms(RewardConfig(terms={"binary": 1.0, "brevity": 0.1}))


def test_the_old_string_reward_is_refused_with_the_new_form():
    from schema.load import ConfigError, load_config

    with pytest.raises(ConfigError, match=r"train.reward.terms=\{binary: 1.0\}"):
        load_config(None, ["train.reward=score"])
    assert load_config(None, ["train.reward.terms={score: 1.0}"]).train.reward.terms == {"score": 1.0}


# ---------------------------------------------------------------- the curriculum's rule

def _sampler(tasks=("a", "b", "c"), **kw) -> CurriculumSampler:
    return CurriculumSampler([library_source(list(tasks), {"v0": 1.0, "v1": 1.0})], 0,
                             CurriculumConfig(enabled=True, **({"explore": 0.0} | kw)))


def test_the_curriculum_draws_inside_the_band_then_the_frontier_then_anything():
    s = _sampler()
    first = {s.draw()[1:] for _ in range(60)}
    assert first == {("a", "v0"), ("b", "v0"), ("c", "v0")}  # nothing measured: every frontier is in the band
    s.observe("tasks", "a", "v0", [True, False, False, False])  # 0.25: inside (0, 0.8)
    s.observe("tasks", "b", "v0", [False] * 4)  # 0.0: too hard (outside, below)
    s.observe("tasks", "c", "v0", [True] * 4)  # 1.0: past the top -> c moves to v1 (unmeasured: in the band)
    assert s.frontier("tasks", "c") == "v1" and s.report()["promoted_from_v0"] == 1
    assert {s.draw()[1:] for _ in range(60)} == {("a", "v0"), ("c", "v1")}
    s.observe("tasks", "a", "v0", [False] * 4)  # a's rate over its window: 0.125, still inside
    s.observe("tasks", "c", "v1", [False] * 4)
    assert {s.draw()[1:] for _ in range(60)} == {("a", "v0")}
    s.observe("tasks", "a", "v0", [False] * 4)
    s.observe("tasks", "a", "v0", [False] * 4)
    s.observe("tasks", "a", "v0", [False] * 4)  # its window of 4 is all zeros now: out of the band
    assert {s.draw()[1:] for _ in range(90)} == {("a", "v0"), ("b", "v0"), ("c", "v1")}  # none inside: frontiers
    for t in ("a", "b", "c"):
        for scale in ("v0", "v1"):
            for _ in range(4):  # a window of passes (an old failure in it holds the rate down)
                s.observe("tasks", t, scale, [True] * 4)
    assert s.report()["mastered"] == 3
    assert {sc for _, _, sc in (s.draw() for _ in range(60))} == {"v0", "v1"}  # all mastered: the fixed draw
    explore = _sampler(explore=1.0)
    explore.observe("tasks", "a", "v0", [True] * 4)
    assert {explore.draw()[1:] for _ in range(200)} == {(t, sc) for t in "abc" for sc in ("v0", "v1")}


def test_the_difficulty_filter_does_not_count_the_fabrics_failures():
    """pass@k filtering reads the same causes: a rollout whose verifier crashed on every attempt says
    nothing of the task's difficulty, so it is not a failure of the task; the scale stays incomplete, named."""
    from launch.filter import decide
    from launch.rollout_cache import RolloutRecord
    from schema.config import FilterSettings

    def rec(i: int, reward: float, cause: str) -> RolloutRecord:
        return RolloutRecord(model="m", harness="ptc", task="t", scale="v0", sample=i, settings="", seed=i,
                             reward=reward, score=reward, termination="answer", cause=cause)

    st = FilterSettings(samples=4, scales=["v0"])
    ok = [rec(0, 1.0, "policy/solved"), rec(1, 0.0, "policy/wrong_answer"), rec(2, 0.0, "policy/wrong_answer")]
    kept = decide("t", ok + [rec(3, 0.0, "policy/wrong_answer")], st)
    assert kept.decision == "kept" and kept.pass_rates == {"v0": 0.25}
    partial = decide("t", ok + [rec(3, 0.0, "infra/judge_error")], st)
    assert partial.decision == "incomplete" and "1 rollout(s) failed by the fabric (infra/judge_error)" in partial.reason
    assert partial.rollouts == {"v0": 3}


# ---------------------------------------------------------------- attacks: a failure dressed as the fabric's

REPORT_VERIFY = """
def verify(ctx):
    text = ctx.final.read_text("report.txt")
    if "boom" in text:
        raise RuntimeError("a verifier bug")
    return {"reported": text.strip() == "5"}
"""


@pytest.mark.parametrize("trusted", [True, False])
@pytest.mark.parametrize("code, cause", [
    ("open('/workspace/report.txt', 'wb').write(b'\\xff\\xfe' * 100)", "policy/state_refused"),  # not UTF-8
    ("import os\nos.mkfifo('/workspace/report.txt')", "policy/state_refused"),  # a FIFO where a file is read
    ("print('wrote nothing')", "policy/state_refused"),  # the file the verifier reads was never written
    # the verifier raises on what the program wrote and judges its canary (the oracle's state): the policy's
    ("open('/workspace/report.txt', 'w').write('boom')", "policy/judge_rejected_state"),
    ("open('/workspace/report.txt', 'w').write('5')", "policy/solved"),
])
async def test_a_state_the_verifier_cannot_read_is_the_policys_zero_not_a_masked_crash(
        tight_runtime, renderer, tmp_path, trusted, code, cause):  # noqa: F811
    """Masking must not be a way out of a zero. Programs cannot reach the database (tools write it); what
    a verifier reads of theirs is the workspace, through taskkit's reads, which refuse a hostile file with
    a ToolError: that is the policy's state_refused, judged in place and shipped (forked child; a task that
    did not ship: its sandboxed runner, the error under its own name), never a masked verifier crash. A
    verifier that raises on a state the program wrote, and judges its kind's canary, is the policy's too
    (schema.outcomes.settled_cause); one that fails its canary as well is the fabric's
    (tests/test_attack_learning_signal.py)."""
    from rollout.episode import Shipped

    folder = write_task(tmp_path / "lib")
    (folder / "verify.py").write_text(REPORT_VERIFY)
    env = LibraryTaskEnv(load_task(folder, trusted=trusted), "v0", _cache(tmp_path))
    for judge in (None, Shipped(lambda ref, state, answer: _judge_shipped(env, state, answer))):
        gen = ScriptedGenerator(renderer.tok, [_program(code), "ANSWER: 5"])
        traj = await run_episode(env, tight_runtime, gen, renderer, "ptc", limits=LoopLimits(max_turns=3), judge=judge)
        assert traj.cause == cause, (judge, traj.verifier_error, [t.observations for t in traj.turns])


async def _judge_shipped(env, state, answer):
    """As a Judge actor and a host's worker judge a shipped state (envs/episode_env.judge_settled)."""
    import asyncio

    from envs.episode_env import judge_settled

    return await asyncio.to_thread(judge_settled, env, state, answer)


async def test_a_link_in_the_final_state_or_a_self_raised_memoryerror_stays_on_the_policys_side(
        tight_runtime, renderer, tmp_path):  # noqa: F811
    from rollout.episode import Shipped

    env = LibraryTaskEnv(get_task(TASK), "v0", _cache(tmp_path))
    called = []

    async def never(ref, state, answer):
        called.append(1)
        return Verdict.failed("the judge was reached", "infra/judge_error")

    link = _program("import os\nos.symlink('/etc/passwd', '/workspace/passwd')\nprint('linked')")
    traj = await run_episode(env, tight_runtime, ScriptedGenerator(renderer.tok, [link, "ANSWER: 0; 0"]), renderer,
                             "ptc", limits=LoopLimits(max_turns=3), judge=Shipped(never))
    assert traj.cause == "policy/state_refused" and not called, traj.verifier_error
    fake = _program("raise MemoryError('pretend')")
    traj = await run_episode(env, tight_runtime, ScriptedGenerator(renderer.tok, [fake, "ANSWER: 0; 0"]), renderer,
                             "ptc", limits=LoopLimits(max_turns=3))
    assert traj.cause == "policy/program_oom"  # whatever a program raises, it is its own outcome


def test_a_program_too_deep_to_parse_is_unparseable_not_a_crash_of_the_host():
    """Model code reaches the host's parser twice (the episode's program metrics on the env worker, the
    dtc_like term in the driver): a program nested past the parser's recursion (a long unary or binary chain)
    raised RecursionError / MemoryError out of ast.parse, which would have failed its episode as the fabric's
    (masked) or taken the driver's step down. It is a program that does not parse, the policy's."""
    from rollout.program_features import program_features

    for code in ("x=" + "-" * 5000 + "1", "x=" + "a+" * 100_000 + "a", "x=" + "not " * 5000 + "1"):
        assert program_features(code)["syntax_error"] == 1
    t = _traj(turns=_turns("x=" + "-" * 5000 + "1", 'print(tools["a"]())'))
    assert reward_terms(t, RewardConfig(terms={"binary": 1.0, "dtc_like": 0.5}))["dtc_like"] == 0.0  # reads no code
