"""Teacher trajectories for cold-start SFT.

The oracle teacher turns a task's oracle into trajectories that go through the real agent loop,
runtime and task server, so the SFT data has exactly the token layout RL will see:
- PTC (and Hybrid): one `programmatic_tool_call` per oracle cell, then the oracle's final answer;
- DTC: the same tool calls one per turn, taken from the PTC run's call log, then the final answer.
An API teacher (`openai:MODEL`) drives the same loop (rollout/episode.run_episode) through the
OpenAI-compatible backend.
Trajectories are kept when their criterion score reaches `min_score` (0.7 in the paper).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from envs.episode_env import EpisodeEnv
from envs.format.library import split_cells
from envs.format.task_env import LibraryTaskEnv
from envs.kinds import kind_of
from envs.runtime.episode import Episode, Runtime
from rollout.agent_loop import ChatRenderer
from rollout.episode import EpisodePlan, run_episode
from rollout.generators.scripted import ScriptedGenerator
from schema.config import LoopLimits
from schema.records import Generation, Prompt, SamplingParams, Trajectory

READ_ANSWER = "print(final_answer)"


def call_text(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


class OracleGenerator(ScriptedGenerator):
    """Replays tool calls, then answers with the kernel's `final_answer` (read without a turn)."""

    def __init__(self, tokenizer: Any, replies: list[str], episode: Episode, answer: str | None = None):
        super().__init__(tokenizer, replies)
        self.episode = episode
        self.answer = answer

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation:
        if not self.replies:
            if self.answer is None:
                result = await self.episode.run_program(READ_ANSWER)
                self.answer = result.text if not result.is_error else ""
            self.replies.append(self.answer)
        return await super().generate(prompt, sampling)


#: the oracle's loop limits: its cells are not the model's, so the run's turn and context limits do not bind it
ORACLE_LIMITS = LoopLimits(max_turns=400, max_context_tokens=1 << 20, max_new_tokens=1 << 14, max_calls_per_turn=1)


async def oracle_plan(runtime: Runtime, env: LibraryTaskEnv, harness: str, tokenizer: Any,
                      limits: LoopLimits | None = None) -> EpisodePlan:
    """The task's oracle as the writer of an episode's turns through `harness` (module docstring)."""
    limits = limits or ORACLE_LIMITS
    cells = split_cells(env.task.oracle_source)
    answer: str | None = None
    if harness == "dtc":
        # the calls the oracle makes, then the same calls one per turn in a fresh episode
        probe = await env.open(runtime)
        try:
            for cell in cells:
                await probe.run_program(cell)
            calls = [(c.tool, c.arguments) for c in probe.call_log]
            answer = (await probe.run_program(READ_ANSWER)).text
        finally:
            await probe.close()
        replies = [call_text(name, args) for name, args in calls]
    else:
        replies = [call_text("programmatic_tool_call", {"code": cell}) for cell in cells]
    # the oracle's cells are not the model's: the task's own turn limit does not apply to them
    return EpisodePlan(env=_without_turn_limit(env),
                       generator=lambda episode: OracleGenerator(tokenizer, replies, episode, answer),
                       limits=limits, sampling=SamplingParams(temperature=1.0, max_new_tokens=limits.max_new_tokens))


class OracleTurns:
    """The oracle teacher as an env worker's TurnWriter (rollout/episode.py): environments whose kind
    has an oracle program (library tasks); any other is refused with the reason."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer

    async def plan(self, env: EpisodeEnv, runtime: Runtime, harness: str, sampling: SamplingParams) -> EpisodePlan:
        kind = kind_of(env.ref)
        if not kind.has_oracle or not isinstance(env, LibraryTaskEnv):
            raise ValueError(f"environments of kind {kind.name!r} have no oracle program (library tasks do)")
        return await oracle_plan(runtime, env, harness, self.tokenizer)


async def oracle_trajectory(runtime: Runtime, env: LibraryTaskEnv, harness: str, renderer: ChatRenderer,
                            limits: LoopLimits | None = None, group_id: str = "", sample_idx: int = 0) -> Trajectory:
    """The task's oracle as a trajectory judged in process (oracle_plan)."""
    plan = await oracle_plan(runtime, env, harness, renderer.tok, limits)
    return await run_episode(plan.env, runtime, plan.generator, renderer, harness, limits=plan.limits,
                             sampling=plan.sampling, group_id=group_id or f"oracle-{env.task.id}-{env.scale}",
                             sample_idx=sample_idx)


def _without_turn_limit(env: LibraryTaskEnv) -> LibraryTaskEnv:
    import copy

    free = copy.copy(env)
    free.limits = msgspec.structs.replace(env.limits, max_turns=None)
    return free
