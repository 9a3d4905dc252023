"""Records that cross process boundaries: sampling settings, generations, turns, trajectories.

`Trajectory` is the unit in the buffer and on disk (DESIGN.md §3). Its token ids are exactly the
generator's output for model turns and the rendered observations in between; `loss_mask` is 1 on
model tokens only and `logprobs` holds the behaviour log-prob of each model token (0.0 elsewhere).
"""

from __future__ import annotations

from typing import Any

import msgspec


class SamplingParams(msgspec.Struct, frozen=True):
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 512
    seed: int | None = None
    stop_token_ids: list[int] = []


class Generation(msgspec.Struct):
    token_ids: list[int]
    logprobs: list[float]  # behaviour log-prob of each generated token under the sampling distribution
    finish_reason: str  # "stop" (an end token was produced) | "length" (max_new_tokens reached)
    policy_version: int = 0


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


#: why an episode's agent loop ended (rollout/agent_loop.py): a final answer, a limit of the loop, the
#: generator or the environment failing, or the runtime ending the episode at its disk limit
TERMINATIONS = ("answer", "max_turns", "context_limit", "generator_error", "env_error", "disk_limit")


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

    @property
    def response_len(self) -> int:
        return len(self.token_ids) - self.prompt_len
