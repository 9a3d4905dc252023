"""Why an episode ended as it did: its *cause*, on one of two sides.

- **policy**: what the model did — it solved the task, answered wrong, wrote malformed calls, ran a
  program past its timeout, memory or disk, or hit the loop's turn, context, response or time limit,
  or left a final state that cannot be judged (links, special files, too large). A policy outcome
  trains as its reward (0 for every failure here).
- **infra**: what the fabric did — a verifier crashed or timed out on a state it could read, no judge
  answered, a benchmark's evaluator failed inside, the environment, its tool servers or its sandbox
  would not start, the environment broke in the host mid-episode, the generator failed, the env
  worker died. An infra outcome is re-run (up to `rollout.max_attempts`), then *masked*: left out
  of its group, never trained as a zero (actors/rollout_manager.py).

Why it matters: under GSPO's group-normalised advantage every fake zero pushes each other sample of
its group up. Why the side is decided by evidence: a masked sample is never pushed down, is re-run
and replaced, and counted over valid samples alone would lift a pass rate, so a policy that learned
to make its judge fail on what it left would turn its zeros into masks. What the policy can make
unjudgeable (its final state) is on the policy side, and a judge's failure that the state could cause
(CANARIED) is settled by the kind's canary (settled_cause).

A cause is written `"<side>/<name>"` (`"infra/judge_timeout"`), as in the per-step metrics
(`rollout/infra/judge_timeout`). The table below is the one place that decides each; README
"Fault tolerance" lists it.
"""

from __future__ import annotations

from typing import Any

#: the policy's outcomes: trained as their reward
POLICY = {
    "solved": "every criterion passed",
    "wrong_answer": "answered, and some criterion failed",
    "malformed_calls": "its calls did not parse (format errors) and it never got the answer right",
    "program_timeout": "a program ran past its timeout",
    "program_oom": "a program ran out of memory (killed, or MemoryError)",
    "disk_limit": "its files passed the episode's disk limit: the runtime ended the episode",
    "max_turns": "it used every turn without a final answer",
    "context_limit": "the conversation outgrew the context",
    "response_limit": "the response outgrew the host trainer's response budget",
    "time_limit": "the environment's wall clock for the episode ran out",
    "state_refused": "its final state cannot be judged (links, special files, past the size cap)",
    "judge_rejected_state": "the judge failed on the state it left and judged its kind's known-good canary state",
    "answer_too_long": "its answer is longer than the judge takes (an LLM judge's budget)",
}
#: the fabric's outcomes: re-run, then masked (never trained as 0)
INFRA = {
    "judge_error": "the verifier raised, crashed or could not load the environment",
    "judge_timeout": "the verifier did not finish within its deadline",
    "judge_unreachable": "no judge actor answered",
    "evaluator_error": "a benchmark's own evaluator failed inside",
    "snapshot_error": "the final state could not be read for shipping within its deadline",
    "env_open": "the environment would not open",
    "tool_server_start": "a tool server of the environment would not start",
    "sandbox_start": "the episode's sandboxed kernel would not start",
    "env_error": "the environment broke in the host mid-episode",
    "generator_error": "the generator failed",
    "worker_died": "env workers died under the episode",
    "worker_error": "the env worker raised outside the environment",
}
SIDES = ("policy", "infra")
#: a judge's failures that the state it judged can cause (a verifier raising on a table the program
#: dropped, an evaluator looping on what it reads): decided by the kind's canary (settled_cause). The
#: rest of INFRA is the fabric's without one: no judge answered, the transport or the environment failed
CANARIED = ("infra/judge_error", "infra/judge_timeout", "infra/evaluator_error")
CAUSES = tuple(f"policy/{c}" for c in POLICY) + tuple(f"infra/{c}" for c in INFRA)

#: an agent loop's terminations that are the fabric's doing (schema.records.TERMINATIONS): the rest are
#: the policy's (its own name is its cause when it did not solve the task)
INFRA_TERMINATIONS = {"generator_error": "infra/generator_error", "env_error": "infra/env_error"}
_LIMITS = ("disk_limit", "max_turns", "context_limit", "response_limit", "time_limit")


def check_cause(cause: str) -> str:
    """`cause` if it is one of CAUSES; a ValueError naming them otherwise (a typo must not silently
    land on one side)."""
    if cause not in CAUSES:
        raise ValueError(f"unknown outcome cause {cause!r}; expected one of {', '.join(CAUSES)}")
    return cause


def is_infra(cause: str) -> bool:
    return cause.startswith("infra/")


def settled_cause(cause: str, canary_cause: str | None) -> str:
    """Whose a judge's failure on an episode's state is, by evidence (the rule of DESIGN "Outcome
    causes"): a failure in CANARIED is the policy's (`policy/judge_rejected_state`) when the same judge,
    in the same kind of process, judged its kind's canary (a known-good state the policy never
    touched) without an infra cause of its own (`canary_cause` is None: passed; or a policy cause: an
    untouched state can fail its criteria). A canary that failed too (an infra cause) keeps the failure
    infra: the judge itself is broken. `canary_cause` is "" when the kind has no canary: the failure
    stays as it was. Why: a policy that learned to make its judge fail (a lock left held, a value the
    verifier cannot parse, error words in a file) would otherwise turn each of its zeros into a masked
    sample that is re-run and never pushed down."""
    if cause not in CANARIED or canary_cause == "":
        return cause
    if canary_cause is not None and is_infra(canary_cause):
        return cause
    return "policy/judge_rejected_state"


def policy_cause(reward: float, termination: str, turn_errors: list[list[str]]) -> str:
    """The cause of a judged episode the fabric did not fail: solved, or the first of: the disk
    limit, a program out of memory, a program timeout, another loop limit, malformed calls, a wrong
    answer. `turn_errors`: each turn's error labels (rollout/agent_loop.py: "program_timeout",
    "program_oom", "format: ...")."""
    if reward >= 1.0:
        return "policy/solved"
    if termination == "disk_limit":
        return "policy/disk_limit"
    flat = [e for errors in turn_errors for e in errors]
    if "program_oom" in flat:
        return "policy/program_oom"
    if "program_timeout" in flat:
        return "policy/program_timeout"
    if termination in _LIMITS:
        return f"policy/{termination}"
    if any(e.startswith("format:") for e in flat):
        return "policy/malformed_calls"
    return "policy/wrong_answer"


def episode_cause(traj: Any, verdict_cause: str | None) -> str:
    """A judged trajectory's cause: the fabric's termination, else the verdict's own cause when the
    verifier could not judge, else the policy's (policy_cause)."""
    if traj.termination in INFRA_TERMINATIONS:
        return INFRA_TERMINATIONS[traj.termination]
    if verdict_cause:
        return verdict_cause
    return policy_cause(traj.reward, traj.termination, [t.errors for t in traj.turns])


class EpisodeFailed(Exception):
    """An episode that has no trajectory to train on, with its cause (an env worker raises it; the
    scheduler reads the cause and re-runs). args: (cause, detail)."""

    def __init__(self, cause: str, detail: str):
        super().__init__(check_cause(cause), detail)
        self.outcome_cause, self.detail = cause, detail

    def __str__(self) -> str:
        return f"{self.outcome_cause}: {self.detail}"
