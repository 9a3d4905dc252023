"""The episode contract: an environment that one episode runs in.

    env = load_env(TaskRef("hr_cert_compliance", "v2"), cache)      # or HarborRef(folder)
    episode = await env.open(runtime)            # its tool servers and workspace, in a fresh sandbox
    ... the agent loop, given env.instruction and env.limits ...
    await episode.stop()                         # nothing a program left running changes the state now
    verdict = env.judge(episode.final_state(), answer)        # here, on the live final state
    data = env.snapshot(episode.final_state())                # or shipped: bounded bytes (StateRefused)
    verdict = load_env(ref, judge_cache).judge_shipped(data, answer)   # on a judge, within its deadline

Our library's tasks (envs/task_env.LibraryTaskEnv) and imported Harbor tasks
(envs/harbor_run.HarborTaskEnv) implement it; env workers, judges, teachers and in-process runners
(rollout/episode.run_episode) use only this interface, so the next kind of environment (an external
benchmark) is one more implementation and one more `EnvRef` kind (schema/records.py), not a flag.

Rules every implementation keeps, because what the episode leaves is the model's:
- `snapshot` reads the stopped episode's final state without following links, refuses what is not a
  regular file or folder (or, for a container tree, a link kept as a link), and is bounded
  (MAX_STATE_BYTES, MAX_STATE_ENTRIES, MAX_STATE_DEPTH): past that, StateRefused, which the sample's
  verdict records (it is the policy's doing, and it scores 0).
- `judge_shipped` never raises and returns within `judge_timeout_s` (plus restoring the state): a
  verifier that loops, crashes or cannot load is a `Verdict.failed`.
- `judge` runs in the caller's thread; callers put their own deadline on it (run_episode does).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec

from schema.records import EnvRef, HarborRef, TaskRef, Verdict

if TYPE_CHECKING:
    from envs.runtime.episode import Episode, EpisodeState, Runtime
    from envs.task_env import EnvironmentCache

#: the most an episode's final state may hold to be judged (file contents); a task's v3 environment
#: is about 1 MB, so this is room for what programs write, not a target
MAX_STATE_BYTES = 256 * 2**20
MAX_STATE_ENTRIES = 20_000
MAX_STATE_DEPTH = 32
#: how long a stopped episode's state may take to snapshot (it reads at most MAX_STATE_BYTES)
SNAPSHOT_TIMEOUT_S = 60.0


class StateRefused(Exception):
    """A final state that cannot be judged (too large, too deep, or holding what is not a regular file
    or folder): the sample's verdict says why, nothing is read past the refusal."""


class EnvLimits(msgspec.Struct, frozen=True):
    """An environment's own limits (None: none of its own). An episode takes the smaller of these and
    the run's (rollout/episode.run_episode): a run can be stricter than a task, never looser."""

    max_turns: int | None = None
    program_timeout_s: float | None = None
    #: wall clock for the whole agent loop (Harbor's [agent] timeout_sec)
    episode_timeout_s: float | None = None


class EpisodeEnv(Protocol):
    ref: EnvRef
    instruction: str
    limits: EnvLimits
    #: what judge_shipped may take (the verifier's deadline)
    judge_timeout_s: float

    async def open(self, runtime: Runtime) -> Episode:
        """A fresh episode: sandboxed kernel, this environment's tool servers and workspace."""
        ...

    def snapshot(self, state: EpisodeState) -> bytes:
        """The stopped episode's final state as bytes a judge elsewhere restores (StateRefused)."""
        ...

    def judge(self, state: EpisodeState | Path, answer: str) -> Verdict:
        """The verdict of a final state in this process (its folder, or a live episode's state)."""
        ...

    def judge_shipped(self, state: bytes, answer: str) -> Verdict:
        """The verdict of a snapshot: restored in a fresh folder, judged within judge_timeout_s."""
        ...


def load_env(ref: EnvRef, cache: EnvironmentCache | None = None, *, judge_timeout_s: float | None = None) -> EpisodeEnv:
    """The environment `ref` names, as this process sees it (a task library's relative path is taken
    from this checkout's root). `cache`: where library environments are built (a new temporary one when
    None). Raises TaskLoadError or HarborTaskError when it cannot be loaded."""
    if isinstance(ref, TaskRef):
        from envs.library import get_task, library_dir
        from envs.task_env import EnvironmentCache, LibraryTaskEnv

        task = get_task(ref.task_id, library_dir(ref.library))
        return LibraryTaskEnv(task, ref.scale, cache or EnvironmentCache(), library=ref.library,
                              judge_timeout_s=judge_timeout_s)
    if isinstance(ref, HarborRef):
        from envs.harbor_import import load_harbor_task
        from envs.harbor_run import HarborTaskEnv

        return HarborTaskEnv(load_harbor_task(ref.path), ref)
    raise TypeError(f"not an environment reference: {ref!r}")
