"""Reward terms, found by name in a registry (`register_reward_term`), as losses are, and the one
rule that combines them (train.reward in the config: schema/config.RewardConfig).

    terms = reward_terms(traj, cfg)          # {"binary": 1.0, "context_efficiency": 0.25}
    r = combine(terms, cfg)                  # 1.0 × (1 − 0.3 × 0.25) = 0.925 with weight 0.3

A term is a gain (what was achieved: `binary`, `score`) or a penalty (how it was done:
`context_efficiency`, `dtc_like`), each a number in [0, 1] of one judged trajectory. Gains are
averaged by weight into G; penalties scale it down:

    reward = G × (1 − Σ_p w_p · penalty_p)        in [0, 1] when Σ_p w_p ≤ 1 (checked: check_terms)

Why multiplicative: a failed episode stays at 0 whatever it cost (a penalty never ranks one failure
above another, which would teach failing cheaply), and a group whose samples all pass still has a
spread when they differ in how much data they pulled into the context: GSPO has something to learn
from groups that binary rewards would leave at zero variance.

The paper's thesis is that programs keep intermediate data out of the context; these terms make that
the reward's business, and they measure behaviour (what entered the context), never program syntax:
a policy optimises the reward, and a term that read syntax would pay for `if True:` around the same
call. `context_efficiency` uses the same counter as the context report (Trajectory.tool_output_tokens:
observation tokens that entered the context); `dtc_like` compares, turn by turn, what the tools
returned with what came back to the model (echoed_chars).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from schema.config import RewardConfig

TermFn = Callable[[Any, RewardConfig], float]


@dataclass(frozen=True)
class RewardTerm:
    name: str
    kind: str  # "gain" | "penalty"
    fn: TermFn
    doc: str


REWARD_TERMS: dict[str, RewardTerm] = {}


def register_reward_term(name: str, kind: str) -> Callable[[TermFn], TermFn]:
    """Register `fn(trajectory, reward_config) -> float in [0, 1]` as a gain or a penalty."""
    if kind not in ("gain", "penalty"):
        raise ValueError(f"a reward term is a 'gain' or a 'penalty', not {kind!r}")

    def deco(fn: TermFn) -> TermFn:
        if name in REWARD_TERMS:
            raise ValueError(f"reward term {name!r} is already registered")
        REWARD_TERMS[name] = RewardTerm(name, kind, fn, (fn.__doc__ or "").strip().split("\n")[0])
        return fn

    return deco


def check_terms(cfg: RewardConfig) -> None:
    """A ValueError unless every term is registered, some gain has a positive weight and the
    penalties' weights sum to at most 1 (so that the combined reward stays in [0, 1])."""
    unknown = [n for n in cfg.terms if n not in REWARD_TERMS]
    if unknown:
        raise ValueError(f"train.reward.terms: unknown term(s) {', '.join(unknown)}; registered: "
                         f"{', '.join(sorted(REWARD_TERMS))}")
    if sum(w for n, w in cfg.terms.items() if REWARD_TERMS[n].kind == "gain") <= 0:
        raise ValueError(f"train.reward.terms needs a gain term with a positive weight (binary or score), got "
                         f"{cfg.terms}")
    penalties = sum(w for n, w in cfg.terms.items() if REWARD_TERMS[n].kind == "penalty")
    if penalties > 1.0 + 1e-9:
        raise ValueError(f"train.reward.terms: the penalties' weights sum to {penalties:g} > 1: the reward would "
                         f"leave [0, 1]")


def reward_terms(traj: Any, cfg: RewardConfig) -> dict[str, float]:
    """Each configured term's value on `traj`, clamped to [0, 1] (a term's bug must not leave the range)."""
    return {name: min(1.0, max(0.0, float(REWARD_TERMS[name].fn(traj, cfg)))) for name in cfg.terms}


def combine(values: dict[str, float], cfg: RewardConfig) -> float:
    """The trained reward of the terms' values (module docstring)."""
    gains = {n: w for n, w in cfg.terms.items() if REWARD_TERMS[n].kind == "gain" and w > 0}
    g = sum(w * values[n] for n, w in gains.items()) / sum(gains.values())
    p = sum(w * values[n] for n, w in cfg.terms.items() if REWARD_TERMS[n].kind == "penalty")
    return min(1.0, max(0.0, g * (1.0 - p)))


def trained_reward(traj: Any, cfg: RewardConfig) -> float:
    """The combined reward of `traj`; each term's value is written into its metrics as
    `reward/<term>` (the per-episode log: rollouts.jsonl, the run's metrics) and the combined one as
    `reward/trained`."""
    values = reward_terms(traj, cfg)
    r = combine(values, cfg)
    traj.metrics.update({f"reward/{n}": v for n, v in values.items()} | {"reward/trained": r})
    return r


# ---------------------------------------------------------------- the terms

@register_reward_term("binary", "gain")
def binary(traj: Any, cfg: RewardConfig) -> float:
    """1 when every criterion passed (the verdict's reward: the paper's)."""
    return float(traj.reward)


@register_reward_term("score", "gain")
def score(traj: Any, cfg: RewardConfig) -> float:
    """The fraction of criteria that passed (denser: partial credit)."""
    return float(traj.score)


@register_reward_term("context_efficiency", "penalty")
def context_efficiency(traj: Any, cfg: RewardConfig) -> float:
    """Tool-output tokens past the task's budget, as a share of the budget, capped at 1: 0 within the
    budget, 1 at twice it or more."""
    budget = cfg.context_budgets.get(traj.task_id, cfg.context_budget_tokens)
    return min(1.0, max(0, traj.tool_output_tokens - budget) / budget)


def echoed_chars(returned: int, shown: int) -> float:
    """How much of a turn's observation is its tools' output echoed without reduction: `shown` characters
    came back to the model after its tools returned `returned`. min(shown, returned) scaled by how little
    was reduced (shown / returned, at most 1): a program that prints what it fetched echoes all of it, one
    that fetched 10,000 characters and printed a 100-character summary echoes 1 (100 × 0.01), a turn that
    called no tool echoes nothing."""
    if returned <= 0 or shown <= 0:
        return 0.0
    return min(shown, returned) * min(1.0, shown / returned)


@register_reward_term("dtc_like", "penalty")
def dtc_like(traj: Any, cfg: RewardConfig) -> float:
    """The share of the observations' characters that is tool output echoed without reduction
    (echoed_chars, turn by turn: what its tool calls returned against what its calls showed the model):
    a direct call's raw result counts whole, whatever wraps a program (0 when nothing was observed)."""
    echoed = shown_total = 0.0
    for t in traj.turns:
        shown = sum(len(o) for o in t.observations[: len(t.calls)])  # the calls' outputs, not parser notes
        shown_total += shown
        echoed += echoed_chars(sum(c.result_chars for c in t.tool_calls), shown)
    return echoed / shown_total if shown_total else 0.0
