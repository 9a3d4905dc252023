"""ProgAgent sources as a verifiers v1 Taskset: one task per (source, task, scale), judged by ProgAgent.

Each task's data names its environment (any ProgAgent kind: a library task, a Harbor task, LOCA-bench,
...) and the harness (DTC, PTC or hybrid) its episode runs through. The episode itself runs in
ProgAgent's sandboxed runtime (progagent_tasks/harness.py), which leaves its verdict and its episode
report in the trace's state; the task's reward is the verdict's (1.0 when every criterion of the
verifier passes), its metrics the report's fixed keys (integrations/episode_info.py).
"""

from __future__ import annotations

import json
from typing import Literal

import verifiers.v1 as vf
from pydantic import Field

from envs.format.task_env import EnvironmentCache
from envs.sources import row_document
from integrations.episode_info import EPISODE_INFO_KEYS
from integrations.sources import episode_sources, instruction_of


class ProgAgentData(vf.TaskData):
    env: str  # the environment's names, envs/sources.row_document as JSON (the harness's sources open it)
    harness: Literal["ptc", "dtc", "hybrid"] = "ptc"
    source: str = ""  # the ProgAgent source it came from
    scale: str = ""


class ProgAgentState(vf.State):
    """What the harness leaves for the task's reward and metrics."""

    reward: float | None = None  # None: no verdict was reached (the episode did not run to its judge)
    info: dict[str, float] = Field(default_factory=dict)
    termination: str = ""
    verifier_error: str | None = None


class ProgAgentTask(vf.Task[ProgAgentData, ProgAgentState]):
    @vf.reward(weight=1.0)
    async def solved(self, trace: vf.Trace) -> float:
        """ProgAgent's verdict: 1.0 when every criterion of the task's verifier passed."""
        return float(trace.state.reward or 0.0)

    @vf.metric
    async def progagent(self, trace: vf.Trace) -> dict[str, float]:
        """The episode report, the same keys for every episode (0 where it never ran)."""
        return {k: float(trace.state.info.get(k, 0.0)) for k in EPISODE_INFO_KEYS}


class ProgAgentTasksetConfig(vf.TasksetConfig):
    config: str | None = None
    """A ProgAgent config file whose sources (`envs:`, or `tasks:`) are the tasks (default: ProgAgent's
    shipped library, or `library`)."""
    sources: list[str] = Field(default_factory=list)
    """Only these sources of `config`."""
    library: str | None = None
    """One task library folder instead of a config (e.g. envs/starter_tasks)."""
    tasks: list[str] = Field(default_factory=list)
    """With `library`: only these task ids."""
    scales: list[str] = Field(default_factory=list)
    """With `library`: only these scales (v0..v3)."""
    harness: Literal["ptc", "dtc", "hybrid"] = "ptc"
    """How the model acts: one tool call per turn (dtc), programs (ptc), or both (hybrid)."""


class ProgAgentTaskset(vf.Taskset[ProgAgentTask, ProgAgentTasksetConfig]):
    def load(self):
        c = self.config
        sources = episode_sources(config=c.config, only=c.sources, library=c.library, tasks=c.tasks,
                                  scales=c.scales)
        cache = EnvironmentCache()
        for source in sources:
            for ref in source.refs:
                data = ProgAgentData(prompt=instruction_of(ref, cache), id=f"{source.name}/{ref.task_id}@{ref.scale}",
                                     name=ref.task_id, env=json.dumps(row_document(ref, source.name)), harness=c.harness,
                                     source=source.name, scale=ref.scale)
                yield ProgAgentTask(data, c.task)
