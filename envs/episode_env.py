"""The episode contract: an environment that one episode runs in.

    env = load_env(TaskRef("hr_cert_compliance", "v2"), cache)   # any kind's reference: envs/kinds.py
    episode = await env.open(runtime)            # its tool servers and workspace, in a fresh sandbox
    ... the agent loop, given env.instruction and env.limits ...
    await episode.stop()                         # nothing a program left running changes the state now
    verdict = env.judge(episode.final_state(), answer)        # here, on the live final state
    data = env.snapshot(episode.final_state())                # or shipped: bounded bytes (StateRefused)
    verdict = load_env(ref, judge_cache).judge_shipped(data, answer)   # on a judge, within its deadline

Our library's tasks (envs/format/task_env.LibraryTaskEnv) and imported Harbor tasks
(envs/harbor/episode.HarborTaskEnv), LOCA-bench, Toolathlon and MCPMark tasks (envs/benchmarks/)
implement it; env workers, judges, teachers and in-process runners (rollout/episode.run_episode) use
only this interface, so the next kind of environment is one more implementation and one more
registered kind (envs/kinds.py) in its own package, not a flag.

Rules every implementation keeps, because what the episode leaves is the model's:
- `snapshot` reads the stopped episode's final state without following links, refuses what is not a
  regular file or folder (or, for a container tree, a link kept as a link), and is bounded
  (MAX_STATE_BYTES, MAX_STATE_ENTRIES, MAX_STATE_DEPTH): past that, StateRefused, which the sample's
  verdict records (it is the policy's doing, and it scores 0).
- `judge_shipped` never raises and returns within `judge_timeout_s` (plus restoring the state): a
  verifier that loops, crashes or cannot load is a `Verdict.failed`.
- a judge's failure on the episode's state is settled by the kind's canary (`judge_canary`,
  `judge_settled`): the policy's when the same judge judges the known-good state, the fabric's when
  it fails there too.
- `judge` runs in the caller's thread; callers put their own deadline on it (run_episode does).
- `judged_in_place`: True when only the process holding the live state can judge it (a benchmark
  whose evaluator belongs to the object that generated the state: LOCA-bench); the env worker then
  judges it itself, under the same deadline, and `judge_shipped` returns a Verdict error saying so.
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import msgspec

from envs.runtime import untrusted_fs
from schema.records import EnvRef, Verdict, settle

if TYPE_CHECKING:
    from envs.runtime.episode import Episode, EpisodeState, Runtime

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


def snapshot(sources: list[tuple[Path, str]], *, links: bool = False, max_bytes: int = MAX_STATE_BYTES) -> bytes:
    """A stopped episode's final state as tar bytes: each (host path, name in the archive) of `sources`,
    streamed to a temporary file as it is read, nothing followed (envs/runtime/untrusted_fs.write_tar).
    Pipes, devices, sparse files, more than `max_bytes` of content, MAX_STATE_ENTRIES entries or
    MAX_STATE_DEPTH levels, and links unless `links` (kept as links, never followed), are a StateRefused.
    The episode must be stopped first: a thread a program left behind must not change what is read."""
    with tempfile.TemporaryFile(prefix="progagent-state-") as f:
        try:
            untrusted_fs.write_tar(f, sources, max_bytes=max_bytes, links=links, max_entries=MAX_STATE_ENTRIES,
                                   max_depth=MAX_STATE_DEPTH)
        except untrusted_fs.PathRefused as exc:
            raise StateRefused(f"the final state cannot be judged: {exc}") from None
        f.seek(0)
        return f.read()


def unjudgeable(root: str | Path, *, max_bytes: int = MAX_STATE_BYTES) -> str | None:
    """Why the tree under `root` cannot be handed to a judge that reads it where it is (a judge of a live
    state), or None: a pipe a reader would block on, a device, a socket, a link that would take it
    elsewhere, or past the state's caps (the same as `snapshot`'s). What the policy left there is its own
    doing: the caller's verdict is `policy/state_refused`, and the judge never waits on it."""
    total = 0
    try:
        for entry in untrusted_fs.walk(root, max_depth=MAX_STATE_DEPTH, max_entries=MAX_STATE_ENTRIES):
            if not (entry.is_file or entry.is_dir):
                return (f"the final state cannot be judged: {entry.path[:200]!r} is "
                        f"{untrusted_fs.describe_mode(entry.st.st_mode)}")
            total += entry.st.st_size if entry.is_file else 0
            if total > max_bytes:
                return f"the final state cannot be judged: it holds more than {max_bytes:,} bytes"
    except FileNotFoundError:
        return None
    except untrusted_fs.PathRefused as exc:
        return f"the final state cannot be judged: {exc}"
    return None


def restore(data: bytes, dst: str | Path, *, links: bool = False, max_bytes: int = MAX_STATE_BYTES) -> Path:
    """What `snapshot` made, under `dst`: folders and regular files (and links, kept as links, when
    `links`: a container tree's absolute targets resolve inside its container view), never written
    outside `dst`, set-id bits dropped (tarfile's "data" filter, or "tar" for links), at most
    `max_bytes` of content, MAX_STATE_ENTRIES members and MAX_STATE_DEPTH levels (StateRefused)."""
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        total = 0
        for n, member in enumerate(tar):
            total += member.size
            kind_ok = member.isfile() or member.isdir() or (links and member.issym())
            if n >= MAX_STATE_ENTRIES or total > max_bytes or not kind_ok \
                    or member.name.count("/") > MAX_STATE_DEPTH + 1:
                raise StateRefused(f"the shipped state cannot be restored: {member.name[:200]!r} "
                                   f"({n + 1} members, {total:,} bytes)")
            tar.extract(member, dst, filter="tar" if links else "data")
    return dst


class EnvLimits(msgspec.Struct, frozen=True):
    """An environment's own limits (None: none of its own). An episode takes the smaller of these and
    the run's (rollout/episode.run_episode): a run can be stricter than a task, never looser."""

    max_turns: int | None = None
    program_timeout_s: float | None = None
    #: wall clock for the whole agent loop (Harbor's [agent] timeout_sec)
    episode_timeout_s: float | None = None


T = TypeVar("T")


class LiveStates(Generic[T]):
    """What an environment holds for each of its open episodes (a benchmark's work folder, a driver
    process, a multi-step episode's progress), found again from the episode's state by `judge`.

        self._live = LiveStates()
        self._live.track(episode, value, cleanup)     # at open; `cleanup` runs when the episode closes
        value = self._live.get(state)                 # in judge / snapshot: None when not open here
    """

    def __init__(self) -> None:
        self._by_root: dict[str, T] = {}

    def track(self, episode: Episode, value: T, cleanup: Callable[[], Awaitable[None]] | None = None) -> None:
        key = episode.final_state().env_root
        self._by_root[key] = value

        async def forget() -> None:
            self._by_root.pop(key, None)
            if cleanup is not None:
                await cleanup()

        episode.on_close(forget)

    def get(self, state: EpisodeState | str | Path) -> T | None:
        return self._by_root.get(state if isinstance(state, str) else
                                 str(state) if isinstance(state, Path) else state.env_root)


class OneStep:
    """`next_instruction` of a single-step environment (the episode ends at its answer)."""

    async def next_instruction(self, episode: Episode, answer: str) -> str | None:
        return None


class EpisodeEnv(Protocol):
    @property
    def ref(self) -> EnvRef:
        """What names this environment (its kind's reference: read-only, so each kind's own type fits)."""
        ...

    instruction: str
    limits: EnvLimits
    #: what judge_shipped may take (the verifier's deadline)
    judge_timeout_s: float
    #: judged where the episode ran, never shipped (module docstring)
    judged_in_place: bool

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

    def judge_untouched(self, answer: str) -> Verdict | None:
        """The judge's verdict, in this process, on this environment's untouched state (built or copied
        as an episode would start from, no program run) with `answer`; None when the kind cannot judge
        a state outside an episode. What the generic cheat probes are made of (envs/probes.py)."""
        ...

    def cheat_probes(self) -> dict[str, Callable[[], Verdict]]:
        """This kind's own cheap cheats, by name, each judged when called (envs/probes.py): {} for most."""
        ...

    def judge_canary(self) -> Verdict | None:
        """The same judge's verdict, in this process, on this kind's canary: a known-good state the
        policy never touched (a library task's oracle state, an untouched container tree or workspace),
        or None when the kind has none. Called only after the judge failed on an episode's state
        (judge_settled), to decide whose the failure is (schema.outcomes.settled_cause)."""
        ...

    async def next_instruction(self, episode: Episode, answer: str) -> str | None:
        """After an answer: the next instruction of a multi-step task, or None (the episode ends:
        every single-step environment)."""
        ...


def judge_settled(env: EpisodeEnv, state: bytes, answer: str) -> Verdict:
    """`env.judge_shipped(state, answer)`, a failure of it settled by the kind's canary in this same
    process (schema.records.settle): every shipped judging goes through here (a Judge actor, a host
    framework's worker)."""
    return settle(env.judge_shipped(state, answer), env.judge_canary)
