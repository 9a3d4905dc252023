"""Teacher trajectories for cold-start SFT.

The oracle teacher turns a task's oracle into trajectories that go through the real agent loop,
runtime and task server, so the SFT data has exactly the token layout RL will see:
- PTC (and Hybrid): one `programmatic_tool_call` per oracle cell, then the oracle's final answer;
- DTC: the same tool calls one per turn, taken from the PTC run's call log, then the final answer.
An API teacher (`openai:MODEL`) drives the same loop through the OpenAI-compatible backend.
Trajectories are kept when their criterion score reaches `min_score` (0.7 in the paper).
"""

from __future__ import annotations

import json
from typing import Any

from envs.library import Task, split_cells
from envs.runtime.episode import Episode, Runtime
from envs.task_env import EnvironmentCache, judge_episode, open_task_episode
from rollout.agent_loop import ChatRenderer, LoopLimits, run_agent
from rollout.generators.scripted import ScriptedGenerator
from rollout.harness import Harness
from rollout.types import SamplingParams, Trajectory

READ_ANSWER = "print(final_answer)"


def call_text(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


class _AnswerAfterScript(ScriptedGenerator):
    """Replays tool calls, then answers with the kernel's `final_answer` (read without a turn)."""

    def __init__(self, tokenizer: Any, replies: list[str], episode: Episode, answer: str | None = None):
        super().__init__(tokenizer, replies)
        self.episode = episode
        self.answer = answer

    async def generate(self, prompt_token_ids, sampling):
        if not self.replies:
            if self.answer is None:
                result = await self.episode.run_program(READ_ANSWER)
                self.answer = result.text if not result.is_error else ""
            self.replies.append(self.answer)
        return await super().generate(prompt_token_ids, sampling)


async def oracle_trajectory(runtime: Runtime, task: Task, scale: str, harness: str, renderer: ChatRenderer,
                            cache: EnvironmentCache, limits: LoopLimits | None = None,
                            group_id: str = "", sample_idx: int = 0, transport: str | None = None) -> Trajectory:
    limits = limits or LoopLimits(max_turns=400, max_context_tokens=1 << 20, max_new_tokens=1 << 14,
                                  max_calls_per_turn=1)
    cells = split_cells(task.oracle_source)
    answer: str | None = None
    if harness == "dtc":
        # the calls the oracle makes, then the same calls one per turn in a fresh episode
        probe = await open_task_episode(runtime, task, scale, cache, transport)
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
    return await generator_trajectory(
        runtime, task, scale, harness, renderer, cache,
        lambda episode: _AnswerAfterScript(renderer.tok, replies, episode, answer), limits=limits,
        sampling=SamplingParams(temperature=1.0, max_new_tokens=limits.max_new_tokens),
        group_id=group_id or f"oracle-{task.id}-{scale}", sample_idx=sample_idx, transport=transport)


async def generator_trajectory(runtime: Runtime, task: Task, scale: str, harness: str, renderer: ChatRenderer,
                               cache: EnvironmentCache, generator: Any, limits: LoopLimits | None = None,
                               sampling: SamplingParams | None = None, group_id: str = "",
                               sample_idx: int = 0, transport: str | None = None) -> Trajectory:
    """One judged episode driven by any generator (a policy, an API teacher), or by a callable that
    makes one from the open episode (the oracle teacher reads the kernel's final answer). `transport`:
    how the task's MCP server runs (envs/task_env.py; None: the task's own, "sandboxed" unless shipped)."""
    episode = await open_task_episode(runtime, task, scale, cache, transport)
    try:
        if callable(generator) and not hasattr(generator, "generate"):
            generator = generator(episode)
        traj = await run_agent(generator, renderer, episode, Harness(harness), task.instruction, task_id=task.id,
                               scale=scale, group_id=group_id or f"{task.id}-{scale}", sample_idx=sample_idx,
                               limits=limits, sampling=sampling)
        verdict = await judge_episode(episode, task, scale, traj.final_answer, cache)
    finally:
        await episode.close()
    traj.reward, traj.score, traj.criteria, traj.verifier_error = (verdict.reward, verdict.score, verdict.criteria,
                                                                  verdict.error)
    return traj
