"""The kinds of episode environment (envs/episode_env.py), and how any process loads one from the
reference a request carries (schema/records.EnvRef): a task of a task library, an imported Harbor
task, a LOCA-bench configuration, a local-only Toolathlon
task or an MCPMark filesystem task. The next kind is one more reference type and one more branch here."""

from __future__ import annotations

from envs.episode_env import EpisodeEnv
from envs.format.library import get_task, library_dir
from envs.format.task_env import EnvironmentCache, LibraryTaskEnv
from schema.records import EnvRef, HarborRef, LocaRef, MCPMarkRef, TaskRef, ToolathlonRef


def load_env(ref: EnvRef, cache: EnvironmentCache | None = None, *, judge_timeout_s: float | None = None) -> EpisodeEnv:
    """The environment `ref` names, as this process sees it (a task library's relative path is taken
    from this checkout's root). `cache`: where library environments are built (a new temporary one when
    None). Raises TaskLoadError or HarborTaskError when it cannot be loaded."""
    if isinstance(ref, TaskRef):
        task = get_task(ref.task_id, library_dir(ref.library))
        return LibraryTaskEnv(task, ref.scale, cache or EnvironmentCache(), library=ref.library,
                              judge_timeout_s=judge_timeout_s)
    if isinstance(ref, HarborRef):  # imported here: it brings the runtime, which a library judge never needs
        from envs.harbor.episode import HarborTaskEnv
        from envs.harbor.task import load_harbor_task

        return HarborTaskEnv(load_harbor_task(ref.path), ref)
    if isinstance(ref, LocaRef):
        from envs.benchmarks.loca.episode import LocaTaskEnv

        return LocaTaskEnv(ref, judge_timeout_s=judge_timeout_s)
    if isinstance(ref, ToolathlonRef):
        from envs.benchmarks.toolathlon.episode import ToolathlonTaskEnv

        return ToolathlonTaskEnv(ref, judge_timeout_s=judge_timeout_s)
    if isinstance(ref, MCPMarkRef):
        from envs.benchmarks.mcpmark.episode import MCPMarkTaskEnv

        return MCPMarkTaskEnv(ref, judge_timeout_s=judge_timeout_s)
    raise TypeError(f"not an environment reference: {ref!r}")
