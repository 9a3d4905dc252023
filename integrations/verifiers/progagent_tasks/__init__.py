"""ProgAgent's tasks in verifiers / prime-rl: taskset id `progagent-tasks` (its harness is the default).

    vf-eval progagent-tasks -m MODEL --client.base-url http://HOST:8000/v1 \\
        --env.taskset.library envs/starter_tasks --env.agent.runtime.type subprocess --no-push

verifiers discovers a plug-in by the one Taskset and the one Harness this package exports.
"""

from progagent_tasks.harness import ProgAgentHarness, ProgAgentHarnessConfig
from progagent_tasks.taskset import (
    ProgAgentData,
    ProgAgentState,
    ProgAgentTask,
    ProgAgentTaskset,
    ProgAgentTasksetConfig,
)

__all__ = ["ProgAgentTaskset", "ProgAgentHarness", "ProgAgentTask", "ProgAgentData", "ProgAgentState",
           "ProgAgentTasksetConfig", "ProgAgentHarnessConfig"]
