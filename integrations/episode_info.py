"""What a host framework logs of one ProgAgent episode: the same numeric keys for every episode.

    info = episode_info(traj)      # {"score": 0.5, "acc": 0.0, "termination_answer": 1.0, ...}

verl builds one array per key of `reward_extra_info` from its first sample's keys, and averages every
array in its validation metrics; verifiers logs metrics by name. So every key is here for every
episode (an episode that never answered has zeros, not missing keys), every value is a float, and a
string such as the termination is one indicator per possible value (its mean is then the share of
episodes that ended that way). `reward` is not a key: verl adds its own.
"""

from __future__ import annotations

from schema.outcomes import is_infra
from schema.records import TERMINATIONS, Trajectory

#: the keys, in order; `termination_<t>` for every t of schema.records.TERMINATIONS
EPISODE_INFO_KEYS: tuple[str, ...] = (
    "acc",  # 1.0 when the verdict's reward is 1 (verl's validation reads `acc` as accuracy)
    "score",  # the fraction of the verifier's criteria that passed
    "criteria_passed", "criteria_total",
    "verifier_error",  # 1.0 when the verifier could not judge (the reward is then 0)
    #: 1.0 when the outcome was the fabric's, not the policy's (schema/outcomes.py): a host that cannot mask
    #: (verl) can at least see how many of its zeros are fake
    "infra",
    "turns", "programs", "tool_calls_program", "tool_calls_direct", "tool_errors",
    "context_tokens",  # the whole sequence the model saw at its last turn
    "tool_output_tokens",  # tokens of tool output that entered the context
    "response_tokens", "dtc_like_rate",  # programs that make one call and print its raw result
    "policy_version",  # the oldest weights' version that wrote a token of it
    *(f"termination_{t}" for t in TERMINATIONS),
)


def episode_info(traj: Trajectory) -> dict[str, float]:
    """`traj` as EPISODE_INFO_KEYS (module docstring)."""
    m = traj.metrics
    info = {
        "acc": float(traj.reward >= 1.0),
        "score": float(traj.score),
        "criteria_passed": float(sum(traj.criteria.values())),
        "criteria_total": float(len(traj.criteria)),
        "verifier_error": float(traj.verifier_error is not None),
        "infra": float(is_infra(traj.cause)),
        "turns": float(len(traj.turns)),
        "programs": float(m.get("programs", 0.0)),
        "tool_calls_program": float(m.get("tool_calls_program", 0.0)),
        "tool_calls_direct": float(m.get("tool_calls_direct", 0.0)),
        "tool_errors": float(m.get("tool_errors", 0.0)),
        "context_tokens": float(traj.context_tokens),
        "tool_output_tokens": float(traj.tool_output_tokens),
        "response_tokens": float(traj.response_len),
        "dtc_like_rate": float(m.get("dtc_like_rate", 0.0)),
        "policy_version": float(traj.policy_version),
    }
    for t in TERMINATIONS:
        info[f"termination_{t}"] = float(traj.termination == t)
    assert tuple(info) == EPISODE_INFO_KEYS  # one place defines the keys; a new one goes in both
    return info
