"""Records that cross process boundaries: sampling settings, generations, turns, trajectories,
verdicts, and the request for one episode with a reference to the environment it runs in.

`Trajectory` is the unit in the buffer and on disk. Its token ids are exactly the
generator's output for model turns and the rendered observations in between; `loss_mask` is 1 on
model tokens only and `logprobs` holds the behaviour log-prob of each model token (0.0 elsewhere).

An `EnvRef` names an episode environment so that any process can open or judge it
(envs/kinds.load_env). Each kind of environment defines its own tagged subclass in its own package
and registers itself (envs/kinds.py): nothing here names a kind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgspec

from schema.bounds import Count, PositiveFraction, Temperature
from schema.outcomes import CANARIED, check_cause, episode_cause, is_infra, settled_cause

log = logging.getLogger(__name__)

#: the four environment scales of every library task (v0 smallest to v3 largest: README "Tasks")
SCALES = ("v0", "v1", "v2", "v3")


class SamplingParams(msgspec.Struct, frozen=True):
    """Bounds are checked where a config is decoded (schema/load.py): 0 is greedy."""

    temperature: Temperature = 1.0
    top_p: PositiveFraction = 1.0
    max_new_tokens: Count = 512
    seed: int | None = None
    stop_token_ids: list[int] = []


class Prompt(msgspec.Struct, frozen=True):
    """What a generator is asked to continue: the exact token ids of the conversation so far (what a
    token generator samples after, and what the trajectory trains on) and the same conversation as
    chat messages with the tool schemas (what a chat-API generator sends). Each backend reads what it
    needs, so one contract serves both (rollout/generators/base.py)."""

    token_ids: list[int]
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []


class Generation(msgspec.Struct):
    token_ids: list[int]
    logprobs: list[float]  # behaviour log-prob of each generated token under the sampling distribution
    finish_reason: str  # "stop" (an end token was produced) | "length" (max_new_tokens reached)
    policy_version: int = 0
    #: what a chat API reported for this request (its cost; 0 for our own generators)
    api_prompt_tokens: int = 0
    api_completion_tokens: int = 0
    #: a chat API's own assistant message (content, tool calls with their ids, reasoning), sent back
    #: verbatim in the conversation's next request (rollout/generators/openai_backend.py)
    api_message: dict[str, Any] | None = None


class ToolCallSummary(msgspec.Struct):
    tool: str
    ok: bool
    source: str  # "direct" | "program"
    result_chars: int = 0


class Turn(msgspec.Struct):
    """One model turn and what came back."""

    action: str  # "program" | "call" | "answer" | "invalid"
    text: str  # the model's decoded reply
    new_tokens: int
    finish_reason: str
    calls: list[dict[str, Any]] = []  # parsed calls: {"name", "arguments"}
    observations: list[str] = []  # tool-response texts appended to the context
    observation_tokens: int = 0
    tool_calls: list[ToolCallSummary] = []
    errors: list[str] = []  # format errors (parsing), tool errors, program errors
    generate_s: float = 0.0
    execute_s: float = 0.0
    policy_version: int = 0


#: why an episode's agent loop ended (rollout/agent_loop.py): a final answer, a limit of the loop (turns,
#: context, the response budget, the environment's wall clock), the generator or the environment failing,
#: or the runtime ending the episode at its disk limit. generator_error and env_error are the fabric's
#: (re-run, then masked); the rest are the policy's (schema/outcomes.py)
TERMINATIONS = ("answer", "max_turns", "context_limit", "response_limit", "time_limit", "generator_error",
                "env_error", "disk_limit")


class Trajectory(msgspec.Struct):
    task_id: str
    scale: str
    harness: str
    group_id: str
    sample_idx: int
    policy_version: int  # the oldest policy version that produced a token of it
    token_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    prompt_len: int
    turns: list[Turn]
    final_answer: str
    termination: str  # one of TERMINATIONS
    reward: float = 0.0
    score: float = 0.0
    criteria: dict[str, bool] = {}
    verifier_error: str | None = None
    context_tokens: int = 0
    tool_output_tokens: int = 0
    metrics: dict[str, float] = {}
    policy_versions: list[int] = []  # version per model turn (async rollouts may span an update)
    uid: str = ""  # unique per (group_id, sample_idx, attempt): dedup key in the buffer
    source: str = ""  # the config source (envs:) training drew it from ("" outside training)
    #: why it ended as it did (schema/outcomes.py): "policy/..." trains as its reward, "infra/..." is masked
    cause: str = ""

    @property
    def response_len(self) -> int:
        return len(self.token_ids) - self.prompt_len


class Verdict(msgspec.Struct):
    """What a judge says of an episode's final state and answer."""

    criteria: dict[str, bool]
    reward: float  # 1.0 when every criterion passes, else 0.0 (binary, as in the paper)
    score: float  # fraction of criteria passed
    error: str | None = None  # the verifier could not judge (reward 0; `cause` says whose doing it was)
    #: why it could not judge (schema/outcomes.CAUSES): "infra/..." is re-run and masked, "policy/..." a zero
    cause: str | None = None
    #: what the environment records with the verdict, into the trajectory's metrics (a benchmark's
    #: state seed and launch time: LOCA generates due dates from the clock)
    metrics: dict[str, float] = {}

    @classmethod
    def failed(cls, reason: str, cause: str, metrics: dict[str, float] | None = None) -> Verdict:
        """No verdict could be reached: reward and score 0, `reason` kept as the error and `cause`
        (schema/outcomes.CAUSES) deciding whether the zero is the policy's or the fabric's. Every
        caller names the cause: no verifier failure lands on a side by default."""
        return cls(criteria={}, reward=0.0, score=0.0, error=reason, cause=check_cause(cause), metrics=metrics or {})

    @classmethod
    def of(cls, criteria: dict[str, bool]) -> Verdict:
        """The verdict of a verifier's criteria (reward 1 only when all pass)."""
        passed = sum(criteria.values())
        return cls(criteria=criteria, reward=float(passed == len(criteria)), score=passed / max(1, len(criteria)))


def settle(verdict: Verdict, canary: Callable[[], Verdict | None]) -> Verdict:
    """`verdict`, or, when it is a judge's failure that the judged state could cause (CANARIED), the
    same failure with its cause settled by `canary()` (schema.outcomes.settled_cause): the judge's
    verdict on its kind's known-good state, in the same kind of process, or None when the kind has no
    canary. A canary that raises is a failed canary. Metrics say what happened: `judge/canary_judged`
    (the failure became the policy's), `judge/canary_failed` (the judge is unhealthy: alert on it)."""
    if verdict.error is None or verdict.cause not in CANARIED:
        return verdict
    try:
        proof = canary()
    except Exception as exc:  # noqa: BLE001 - a canary that cannot even run is a broken judge
        proof = Verdict.failed(f"the canary raised {type(exc).__name__}: {exc}", "infra/judge_error")
    if proof is None:
        return verdict
    canary_cause = proof.cause if proof.error is not None else None
    cause = settled_cause(verdict.cause, canary_cause)
    if is_infra(cause):
        # the alert: a judge that cannot judge a known-good state is broken (its text escaped by repr)
        log.error("a judge failed on its known-good canary state too (%s): the judge is unhealthy: %r", cause,
                  (proof.error or "")[:500])
        return Verdict.failed(f"{verdict.error} (its canary failed too: {proof.error})", cause,
                              {**verdict.metrics, "judge/canary_failed": 1.0})
    return Verdict.failed(f"{verdict.error} (the same judge judged its known-good canary state: the episode's "
                          f"state made it fail)", cause, {**verdict.metrics, "judge/canary_judged": 1.0})


def escape_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as its escape (`\\ud800`): what no UTF-8 encoder,
    tokenizer or record file accepts, made text that every one does. A text without one is returned
    as it is (the common case costs one encode)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _escaped(value: Any) -> Any:
    """A builtins value (msgspec.to_builtins) with every string escaped (escape_surrogates)."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    return value


def encodable(traj: Trajectory) -> Trajectory:
    """`traj` itself when it encodes, else a copy whose strings are escaped (escape_surrogates).

    Why: a trajectory holds text the model sampled or a program chose (a tool call's arguments, a tool's
    name a program asked for, observations, the verifier's words) and must be saved whatever it holds:
    rollouts.jsonl, the checkpoint's buffer and SFT files are msgspec JSON or msgpack, which refuse a
    lone surrogate, and one such string would end a training run at its next save. Every trajectory
    passes here once it is judged (`judged`), so no writer needs a guard of its own."""
    try:
        msgspec.msgpack.encode(traj)
        return traj
    except UnicodeEncodeError:
        return msgspec.convert(_escaped(msgspec.to_builtins(traj)), Trajectory)


def judged(traj: Trajectory, verdict: Verdict) -> Trajectory:
    """`traj` with `verdict`'s reward, score, criteria and error, and the episode's cause (the one
    place a verdict meets a trajectory), made encodable (`encodable`)."""
    traj.reward, traj.score, traj.criteria, traj.verifier_error = (verdict.reward, verdict.score,
                                                                  verdict.criteria, verdict.error)
    traj.metrics.update(verdict.metrics)
    traj.cause = episode_cause(traj, verdict.cause if verdict.error is not None else None)
    return encodable(traj)


class EnvRef(msgspec.Struct, frozen=True):
    """The base of every environment reference: a frozen, tagged subclass per environment kind
    (envs/kinds.py), defined in the kind's own module, naming one task at one scale so that any
    process can open or judge it (envs.kinds.load_env). Every reference has a `task_id` and a
    `scale` (fields or properties): the cache key, the group and the report's rows use them."""

    @property
    def task_id(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} has no task_id")

    @property
    def scale(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} has no scale")


#: who writes the model's turns of an episode (EpisodeRequest.generator; an env worker's TurnWriters)
GENERATORS = ("policy", "oracle")


class EpisodeRequest(msgspec.Struct, frozen=True):
    """One episode to run: where, which sample of which group, through which harness, and which of the
    env worker's generators writes the model's turns: "policy" (the generator pool: training,
    evaluation) or "oracle" (a library task's reference program through the same loop: cold-start SFT
    data). Both are TurnWriters (rollout/episode.py) the worker runs the same way."""

    env: EnvRef
    group_id: str
    sample_idx: int
    harness: str = "ptc"
    seed: int | None = None
    generator: str = "policy"
    temperature: float | None = None  # None: the env worker's sampling temperature
    attempt: int = 0  # how many times it ran before (the scheduler's count of failed attempts and re-runs)

    @property
    def key(self) -> tuple[str, int]:
        return (self.group_id, self.sample_idx)


#: the checks of a synthesized candidate an env worker runs (synth/checks.py)
CHECKS = ("execute", "oracle", "validate")


class CheckRequest(msgspec.Struct, frozen=True):
    """One check of a synthesized candidate task, run on an env worker through the scheduler like an
    episode (synth/checks.py): "execute" (build twice, the untouched environment, the oracle and every
    wrong solution at `scale`), "oracle" (the oracle alone at `scale`: the audit's reference) or
    "validate" (the library validator at all four scales). `folder`: the candidate's task folder as
    the env workers see it (one machine, or storage every node mounts); its code runs in the code
    sandbox of `code_sandbox` with `code_timeout_s` per run, its programs in the worker's kernels."""

    stage: str
    folder: str
    scale: str
    group_id: str
    code_timeout_s: float = 60.0
    code_sandbox: str = "auto"
    sample_idx: int = 0
    attempt: int = 0

    @property
    def key(self) -> tuple[str, int]:
        return (self.group_id, self.sample_idx)


class CheckResult(msgspec.Struct):
    """A check's report (the dict synth/checks.py returns for its stage)."""

    stage: str
    outputs: dict[str, Any]


class TensorMeta(msgspec.Struct, array_like=True, frozen=True):
    """One tensor of a weight update: its name (Hugging Face's), dtype name and shape."""

    name: str
    dtype: str
    shape: list[int]


class WeightUpdate(msgspec.Struct, frozen=True):
    """What a generator needs to take part in one weight update (rollout/weights/).

    `object_store`: `ref` holds [ObjectRef] of the state dict. `collective`: the process group's
    address and membership epoch (a new epoch = a new group: a generator joined or was replaced),
    and the buckets, each a list of tensors packed end to end, broadcast from rank 0 in order;
    `token`, the group's secret (it travels over Ray only): a peer without it finds nothing in the
    group's store, and every header carries it, so a receiver refuses a sender that is not the group's.
    """

    version: int
    kind: str
    ref: Any = None
    host: str = ""
    port: int = 0
    world_size: int = 0
    epoch: int = 0
    backend: str = "gloo"
    buckets: list[list[TensorMeta]] = []
    timeout_s: float = 300.0
    token: str = ""
