"""Tasks as episodes of the runtime: built environments, the task's MCP server, the judge.

    cache = EnvironmentCache()
    ep = await open_task_episode(runtime, task, "v2", cache)     # kernel + task tool server
    ... ep.run_program(...) / ep.call_tool(...) ...
    verdict = judge(task, "v2", ep.final_state(), answer, cache)  # outside any sandbox
    await ep.close()

Environments are built once per (task, scale) into the cache and copied into each episode (a group
of 16 rollouts builds once). The verifier reads the episode's final state and a pristine copy of
the initial state; neither it nor the oracle is ever inside the sandbox.

Where the task's tools.py runs (`transport`, see `task_upstream`; by default the task's own
`Task.tool_transport`: "inprocess" for a shipped task, "sandboxed" for any other, envs/format/provenance.py):
- "inprocess" (the library's own, shipped tasks): in this process, the SDK's in-memory
  transport, no process start per episode;
- "stdio": `python -m envs.format.task_server` as a plain child process (no isolation; shipped tasks only);
- "sandboxed" (every task that did not ship: model-written ones, other libraries): tools.py runs in `python -m envs.format.tool_host` inside
  bubblewrap, under the runtime's memory and process limits (`open_task_episode`; with cgroups its
  own cgroup, emptied when the episode closes, so threads and processes a tool started end with
  it); the MCP server is in this process and forwards each call to it (envs/format/hosted_tools.py). The
  host imports no MCP SDK: a start is ~0.3 s of CPU where an SDK server in the sandbox was 1-2.5 s
  (the SDK server, `envs.format.task_server`, is still what serves a tools.py whose signatures the host's
  protocol cannot describe). It sees /usr, the Python installation (read-only, task library
  folders under it hidden), the five envs/ modules it imports (envs/__init__, library, taskkit,
  task_server, tool_host; read-only, /opt/progagent), of the task folder only task.toml and tools.py
  (read-only, /task/<id>/), the episode's environment (db.sqlite + workspace/, read-write, /env) and
  a private /tmp; every namespace unshared (no network but its own `lo`), no capabilities, a
  cleared environment, a new session, killed with its parent. Not there: the host's home (beyond
  the Python installation), the repository, its task libraries, the task's data.py, verify.py,
  oracle.py and wrong/, other episodes.

Judging (EnvironmentCache, judge, snapshot/restore) needs none of the runtime: the runtime and the MCP
SDK are imported where an episode is opened, so a judge process does not pay their import (~1 s).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envs.episode_env import MAX_STATE_BYTES, EnvLimits, OneStep, restore, snapshot
from envs.format.kind import TaskRef
from envs.format.library import Task, copy_environment
from envs.runtime import scratch
from envs.runtime.sandbox import TASK_CODE, Sandbox, launch_argv
from schema.records import Verdict

if TYPE_CHECKING:
    from envs.runtime.episode import Episode, EpisodeState, Runtime
    from envs.runtime.limits import LimitBackend
    from envs.runtime.upstream import Upstream, UpstreamSpec

TASK_UPSTREAM = "task"
TRANSPORTS = ("inprocess", "stdio", "sandboxed")
#: what the sandboxed task server imports from the repository (bound file by file, read-only)
SERVER_CODE = {**TASK_CODE, **{f"envs/format/{n}": Path(__file__).resolve().with_name(n)
                               for n in ("task_server.py", "tool_host.py")}}
#: the task files the server loads (envs.format.task_server.main); nothing else of the task folder is bound
SERVED_FILES = ("task.toml", "tools.py")
IN_CODE = "/opt/progagent"
IN_TASK = "/task"
IN_ENV = "/env"

#: Held by every thread of this process while it runs task code that opens SQLite (building an
#: environment, running an oracle) and by `verify_in_child` while it forks. A fork copies only the
#: forking thread: a child forked while another thread held one of SQLite's process-wide mutexes
#: waits on it forever at its first `sqlite3.connect`, a judge timeout that no verifier caused.
FORK_GUARD = threading.RLock()


class EnvironmentCache:
    """Built environments by (task, scale, seed, code fingerprint); safe across threads."""

    def __init__(self, root: str | Path | None = None):
        self._tmp = None if root else str(scratch.make("progagent-envs-"))
        self.root = Path(root or self._tmp)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def key(self, task: Task, scale: str) -> str:
        h = hashlib.sha256((task.dir / "data.py").read_bytes())
        h.update(json.dumps([scale, task.spec.seed, task.spec.scales.rows, task.spec.scales.files]).encode())
        return f"{task.id}/{scale}-{h.hexdigest()[:12]}"

    def _built(self, key: str, build: Callable[[Path], None]) -> Path:
        """The folder `key`, made once by `build(folder)` (the first caller's; the others wait on its
        lock). Built aside, then renamed: other processes sharing the cache never see a half build,
        and one left by an interrupted build is replaced."""
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            path = self.root / key
            path.parent.mkdir(parents=True, exist_ok=True)
            if not (path / ".complete").exists():
                tmp = path.parent / f".{path.name}.{os.getpid()}.{threading.get_ident()}"
                shutil.rmtree(tmp, ignore_errors=True)
                build(tmp)
                (tmp / ".complete").write_text("")
                if path.exists() and not (path / ".complete").exists():
                    shutil.rmtree(path, ignore_errors=True)
                try:
                    tmp.rename(path)
                except OSError:  # another process finished first
                    shutil.rmtree(tmp, ignore_errors=True)
            return path

    def get(self, task: Task, scale: str) -> Path:
        """The environment of `task` at `scale`, built once (task data.py)."""

        def build(folder: Path) -> None:
            with FORK_GUARD:
                task.build(folder, scale)

        return self._built(self.key(task, scale), build)

    def canary(self, task: Task, scale: str) -> tuple[Path, str]:
        """The oracle's final state of `task` at `scale` and its final answer: built once (the
        environment, then oracle.py run over a copy), kept beside the environment. What a judge's
        canary is judged on (LibraryTaskEnv.judge_canary): every criterion passes there."""

        def build(folder: Path) -> None:
            shutil.copytree(self.get(task, scale), folder)
            (folder / ".complete").unlink(missing_ok=True)
            with FORK_GUARD:
                answer, _, _ = task.run_program(folder, task.oracle_source)
            (folder / ".answer").write_text(answer)

        path = self._built(self.key(task, scale) + ".oracle", build)
        return path, (path / ".answer").read_text()

    def cleanup(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)


def sandboxed_server_argv(task: Task, env_root: Path, module: str = "envs.format.task_server") -> list[str]:
    """`python -m envs.format.task_server` (or `module`: envs.format.tool_host) for `task` over `env_root`, inside
    bubblewrap (module docstring), started through `launch_argv` (its options kept next to `env_root`,
    outside it: `env_root` is bound into the sandbox)."""
    folder = Path(task.dir).resolve()
    task_dir = f"{IN_TASK}/{folder.name}"  # the folder keeps its name: load_task checks it against the id
    box = Sandbox(chdir="/tmp").with_python()
    for rel, src in SERVER_CODE.items():
        box.bind(src, f"{IN_CODE}/{rel}")
    for name in SERVED_FILES:
        box.bind(folder / name, f"{task_dir}/{name}")
    box.bind(Path(env_root).resolve(), IN_ENV, writable=True)
    box.setenv({"HOME": "/tmp", "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/local/bin:/usr/bin:/bin",
                         "LANG": "C.UTF-8", "PYTHONPATH": IN_CODE, "PYTHONDONTWRITEBYTECODE": "1",
                         "PYTHONUNBUFFERED": "1", "USER": "sandbox"})
    return launch_argv(box, [sys.executable, "-m", module, "--task", task_dir, "--root", IN_ENV],
                       Path(env_root).resolve().parent / "sandbox")


def task_upstream(task: Task, env_root: Path, transport: str | None = None, *, limits: LimitBackend | None = None,
                  errlog: Path | None = None) -> Upstream | UpstreamSpec:
    """The task's MCP server over one episode's environment, served by `transport` (module docstring;
    None: the task's own). A task whose code must stay sandboxed is served "sandboxed" only.

    "sandboxed" runs inside `limits` (a fresh cgroup/rlimit set per server start) when given."""
    from envs.format.task_server import build_server
    from envs.runtime.upstream import Upstream, UpstreamSpec

    transport = transport or task.tool_transport
    if task.tool_transport == "sandboxed" and transport != "sandboxed":
        raise ValueError(f"task {task.id!r} did not ship with ProgAgent ({task.provenance}): its tools.py is "
                         f"served only by the 'sandboxed' transport, not {transport!r}")

    if transport == "inprocess":
        return Upstream(UpstreamSpec(TASK_UPSTREAM), server_object=build_server(task, env_root))
    if transport == "stdio":
        return UpstreamSpec(TASK_UPSTREAM, [sys.executable, "-m", "envs.format.task_server", "--task", str(task.dir),
                                            "--root", str(env_root)])
    if transport == "sandboxed":
        from envs.format.hosted_tools import HostedTaskTools

        return HostedTaskTools(TASK_UPSTREAM, sandboxed_server_argv(task, env_root, "envs.format.tool_host"),
                               sandboxed_server_argv(task, env_root), limits=limits, errlog=errlog)
    raise ValueError(f"unknown task server transport {transport!r}; expected one of {', '.join(TRANSPORTS)}")


async def open_task_episode(runtime: Runtime, task: Task, scale: str, cache: EnvironmentCache,
                            transport: str | None = None) -> Episode:
    """A fresh sandboxed episode over a copy of the built environment and the task's MCP server
    (served by `transport`: "inprocess", "stdio" or "sandboxed", under the runtime's limits; None:
    the task's own, `Task.tool_transport`)."""
    import asyncio

    transport = transport or task.tool_transport
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown task server transport {transport!r}; expected one of {', '.join(TRANSPORTS)}")
    built = await asyncio.to_thread(cache.get, task, scale)

    async def prepare(env_root: Path) -> list[Upstream | UpstreamSpec]:
        await asyncio.to_thread(copy_environment, built, env_root)
        # the server's stderr next to the episode's environment, where the runtime logs stdio servers
        return [task_upstream(task, env_root, transport, limits=runtime.limits,
                              errlog=env_root.parent / f"upstream-{TASK_UPSTREAM}.log")]

    return await runtime.open_episode(prepare)


#: an in-process verdict (teachers, validation) past this is a verifier error (the Judge actor's own
#: deadline, actors/judge.py, kills its child instead)
JUDGE_TIMEOUT_S = 120.0


async def judge_episode(episode: Episode, task: Task, scale: str, answer: str, cache: EnvironmentCache,
                        timeout_s: float = JUDGE_TIMEOUT_S) -> Verdict:
    """Stop the episode (nothing a program left running changes its state any more), then judge its
    final state in a thread within `timeout_s`: past it, a Verdict error (the thread is left to end)."""
    import asyncio

    await episode.stop()
    try:
        return await asyncio.wait_for(asyncio.to_thread(judge, task, scale, episode.final_state(), answer, cache),
                                      timeout_s)
    except TimeoutError:
        return Verdict.failed(f"the verifier did not finish within {timeout_s:.0f} s", "infra/judge_timeout")


def unreadable_database(final_root: Path, initial_root: Path) -> str | None:
    """Why the final state's database cannot be read (removed, replaced by a link or another file, not a
    database, damaged), or None. What the policy left unreadable is its own zero ("policy/state_refused");
    a verifier that crashes on a state it could read is the fabric's ("infra/judge_error")."""
    import sqlite3

    if not (initial_root / "db.sqlite").is_file():
        return None  # a task without a database
    db = final_root / "db.sqlite"
    if db.is_symlink() or not db.is_file():
        return "the final state's db.sqlite was removed or replaced by something that is not a file"
    try:
        con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=1.0)
        try:
            check = con.execute("PRAGMA quick_check").fetchone()
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"the final state's db.sqlite cannot be read: {exc}"
    return None if check and check[0] == "ok" else f"the final state's db.sqlite is damaged: {str(check)[:200]}"


def verifier_failure_cause(exc: BaseException) -> str:
    """Whose failure a verifier's exception is. A verifier reads the workspace through taskkit, whose
    reads refuse what a program may have made hostile (links, special files, non-UTF-8, past their cap) or
    never wrote, with a ToolError (under its own name from a sandboxed child too): the verifier could not
    read the policy's state, the policy's zero ("policy/state_refused"). Anything else is a verifier
    that crashed on a state it could read: the fabric's ("infra/judge_error")."""
    from envs.format.code_runner import CandidateCodeError
    from envs.taskkit import ToolError

    if isinstance(exc, ToolError) or (isinstance(exc, CandidateCodeError) and type(exc).__name__ == "ToolError"):
        return "policy/state_refused"
    return "infra/judge_error"


def judge(task: Task, scale: str, state: EpisodeState | Path, answer: str, cache: EnvironmentCache) -> Verdict:
    """Run the verifier outside the sandbox; a crashing verifier is a recorded failure (whose:
    verifier_failure_cause). A database the policy left unreadable is refused before the verifier runs
    (unreadable_database)."""
    final_root = Path(getattr(state, "env_root", state))
    try:
        initial = cache.get(task, scale)
        problem = unreadable_database(final_root, initial)
        if problem is not None:
            return Verdict.failed(problem, "policy/state_refused")
        return Verdict.of(task.verify(final_root, initial, answer, scale))
    except Exception as exc:  # noqa: BLE001
        return Verdict.failed(f"{type(exc).__name__}: {exc}", verifier_failure_cause(exc))


def snapshot_state(root: str | Path, max_bytes: int = MAX_STATE_BYTES) -> bytes:
    """The final environment (db.sqlite + workspace/) as tar bytes, to judge it on another node
    (envs/episode_env.snapshot: bounded, nothing followed, no links)."""
    root = Path(root)
    return snapshot([(root / "db.sqlite", "db.sqlite"), (root / "workspace", "workspace")], max_bytes=max_bytes)


def restore_state(data: bytes, dst: str | Path, max_bytes: int = MAX_STATE_BYTES) -> Path:
    """The state `snapshot_state` made, under `dst` (envs/episode_env.restore: folders and regular files)."""
    return restore(data, dst, max_bytes=max_bytes)


def _child(conn: Any, fn: Callable[..., Verdict], args: tuple) -> None:
    try:
        conn.send(fn(*args))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        conn.send(Verdict.failed(f"{type(exc).__name__}: {exc}", "infra/judge_error"))
    finally:
        conn.close()


def verify_in_child(fn: Callable[..., Verdict], args: tuple, timeout_s: float) -> Verdict:
    """`fn(*args)` in a forked child: a timeout, a crash or an exception is a Verdict with `error`.
    A verifier is task code: one that loops or takes the process down costs one recorded failure,
    never the judge that runs it."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args), daemon=True)
    with FORK_GUARD:  # never while another thread of ours is inside SQLite (FORK_GUARD)
        proc.start()
    child.close()
    try:
        if parent.poll(timeout_s):
            return parent.recv()
        return Verdict.failed(f"verifier timed out after {timeout_s:.0f} s", "infra/judge_timeout")
    except EOFError:
        return Verdict.failed(f"verifier crashed (exit code {proc.exitcode})", "infra/judge_error")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()


def _judge_restored(task: Task, scale: str, state: bytes, answer: str, cache: EnvironmentCache) -> Verdict:
    with scratch.temporary("progagent-final-") as tmp:
        return judge(task, scale, restore_state(state, Path(tmp) / "final"), answer, cache)


class LibraryTaskEnv(OneStep):
    """A task of a task library at one scale, as an episode environment (envs/episode_env.py): the
    built environment copied into the episode, the task's tools served by its transport, verify.py
    as the judge (in a forked child with a deadline for shipped states)."""

    judged_in_place = False  # its final state is shipped to a Judge actor on the fabric

    def __init__(self, task: Task, scale: str, cache: EnvironmentCache, *, library: str = "",
                 judge_timeout_s: float | None = None, transport: str | None = None):
        self.task, self.scale, self.cache, self.transport = task, scale, cache, transport
        self.ref = TaskRef(task.id, scale, library)
        self.instruction = task.instruction
        self.limits = EnvLimits(max_turns=task.spec.limits.max_turns,
                                program_timeout_s=task.spec.limits.program_timeout_s)
        self.judge_timeout_s = judge_timeout_s or JUDGE_TIMEOUT_S

    async def open(self, runtime: Runtime) -> Episode:
        return await open_task_episode(runtime, self.task, self.scale, self.cache, self.transport)

    def snapshot(self, state: EpisodeState) -> bytes:
        return snapshot_state(state.env_root)

    def judge(self, state: EpisodeState | Path, answer: str) -> Verdict:
        return judge(self.task, self.scale, state, answer, self.cache)

    def judge_shipped(self, state: bytes, answer: str) -> Verdict:
        # the task (and a task that did not ship, its sandboxed code runner) is loaded before the fork
        return verify_in_child(_judge_restored, (self.task, self.scale, state, answer, self.cache),
                               self.judge_timeout_s)

    def judge_untouched(self, answer: str) -> Verdict:
        """The verifier, shipped as an episode's state is, on the built environment itself."""
        return self.judge_shipped(snapshot_state(self.cache.get(self.task, self.scale)), answer)

    def cheat_probes(self) -> dict[str, Callable[[], Verdict]]:
        return {}

    def judge_canary(self) -> Verdict:
        """The verifier, shipped as an episode's state is, on the oracle's final state (EnvironmentCache.canary)."""
        root, answer = self.cache.canary(self.task, self.scale)
        return self.judge_shipped(snapshot_state(root), answer)
