"""Episodes over sandboxed kernels: the async API env workers use.

    runtime = Runtime(RuntimeConfig())
    await runtime.start()                     # fills the warm pool
    ep = await runtime.open_episode([UpstreamSpec("time", ["mcp-server-time"])])
    r = await ep.run_program("now = tools['get_current_time'](timezone='UTC')\\nprint(now)")
    r.text                                    # exactly what the model sees
    await ep.close(); await runtime.close()

Each episode gets its own slot: a folder with the kernel's run files, the bridge socket and the
environment (`env/db.sqlite` outside the sandbox, `env/workspace` bound as /workspace). Slots are
never reused: a closed episode's kernel, processes and files are destroyed, so episodes cannot see
each other's variables, files or processes. The pool keeps `warm_pool` slots started ahead.

Disk: what an episode writes lands in host folders (its workspace, its database, its kernel's run
folder), so each episode has a disk limit (RuntimeConfig.disk_bytes / disk_entries / disk_depth,
counted in allocated blocks, over what its folders held when it opened). No single file grows past
disk_bytes (RLIMIT_FSIZE: a write past it fails with "File too large"); a watchdog checks the total
every disk_check_s over the episode's whole life, from open to stop (a thread or process a program
left behind keeps writing while the model writes its next turn; a program writing fast can pass the
limit by what it writes in one interval), and again after every program and every direct call. Past a
limit the program is stopped, the episode ENDS (every later program or call is an error that says
so; `ended` holds why) and a workspace the runtime made is emptied, so the disk comes back at once.
Removal is iterative and never follows a link (envs/runtime/untrusted_fs.py): `close()` always completes,
whatever tree a program left.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from envs.runtime import scratch, untrusted_fs
from envs.runtime.bridge import ToolBridge
from envs.runtime.kernel import SandboxedKernel
from envs.runtime.limits import LimitBackend
from envs.runtime.output import render
from envs.runtime.sandbox import HeldFolders, check_binds, project_home
from envs.runtime.upstream import ToolCallRecord, Upstream, Upstreams, UpstreamSpec, error_text
from schema.config import RuntimeConfig

log = logging.getLogger(__name__)

UpstreamLike = UpstreamSpec | Upstream
#: kernels one runtime starts at once (the rest wait their turn, their start deadline not yet running)
KERNEL_STARTS_AT_ONCE = max(2, os.cpu_count() or 2)
#: an episode's files are removed within this (a bounded tree takes milliseconds; see destroy())
CLEANUP_TIMEOUT_S = 30.0
Prepare = Callable[[Path], Awaitable[Sequence[UpstreamLike]]]


def mark_cause(exc: BaseException, cause: str) -> None:
    """Say which step of opening an episode failed ("infra/sandbox_start", "infra/tool_server_start",
    schema/outcomes.py) on the exception itself, for a trainer's retry policy, without changing its
    type (callers match on it). The first mark stays: it names the innermost step."""
    if getattr(exc, "outcome_cause", None) is None:
        with contextlib.suppress(AttributeError):
            exc.outcome_cause = cause  # type: ignore[attr-defined]


class ProgramResult(msgspec.Struct):
    text: str  # what the model sees
    is_error: bool  # the program raised, timed out or crashed the kernel
    tool_calls: list[ToolCallRecord]
    duration_s: float
    output_chars: int
    timed_out: bool = False
    restarted: bool = False
    error_name: str | None = None
    ended: bool = False  # the episode ended with this program (its disk limit): no more programs run
    died: bool = False  # the kernel process ended under it (a crash, os._exit, an OOM kill)
    oom_killed: bool = False  # the kernel was killed at its memory limit


class DirectCallResult(msgspec.Struct):
    text: str  # what the model sees (the raw result, or the error message)
    is_error: bool
    record: ToolCallRecord


class EpisodeState(msgspec.Struct):
    env_root: str
    workspace: str
    db_path: str


class Slot:
    """A started sandboxed kernel with its bridge, waiting for an episode.

    Its folders are held open for its life (sandbox.HeldFolders): the workspace, every bind and every
    extra folder its disk limit counts, so that kernel restarts bind, and disk checks walk, the
    folders that were checked when it opened, never a path a program could have changed since."""

    def __init__(self, root: Path, config: RuntimeConfig, limits: LimitBackend, workspace: Path | None = None,
                 binds: Sequence[tuple[Path, bool]] = (), counted: Sequence[Path] = ()):
        self.id = uuid.uuid4().hex[:12]
        self.dir = root / self.id
        self.tools_dir = self.dir / "tools"
        self.env_root = self.dir / "env"
        self.workspace = workspace or self.env_root / "workspace"
        self.owns_workspace = workspace is None
        for d in (self.tools_dir, self.env_root, self.workspace if self.owns_workspace else self.env_root):
            d.mkdir(parents=True, exist_ok=True)
        self.held = HeldFolders()
        try:
            self.workspace_fd = self.held.hold(self.workspace)
            self.binds = [(self.held.hold(path), path, writable) for path, writable in binds]
            # what its disk limit counts: its own folders, a caller's workspace, folders bound read-write
            # (a program must not fill the host's disk through one) and the environment's own (`counted`)
            self._counted: list[untrusted_fs.Root] = [self.env_root]
            if not self.owns_workspace:
                self._counted.append(self.workspace_fd)
            self._counted += [fd for fd, _, writable in self.binds if writable]
            self._counted += [self.held.hold(p) for p in counted]
        except BaseException:
            self.held.close()
            raise
        self.bridge = ToolBridge(self.tools_dir / "tools.sock")
        self.kernel = SandboxedKernel(self.dir, self.tools_dir, self.workspace_fd, limits, config, binds=self.binds)

    async def start(self) -> Slot:
        await self.bridge.start()
        try:
            await self.kernel.start()
        except BaseException:
            await self.destroy()
            raise
        return self

    def disk_roots(self) -> list[untrusted_fs.Root]:
        """The folders a sandboxed program (or its tools) writes into, as the disk limit walks them."""
        return [*self._counted, self.kernel.kernel_dir]

    async def destroy(self) -> None:
        """Kernel, bridge and files gone; the removal has a deadline (CLEANUP_TIMEOUT_S: past it, it
        goes on in its thread and this returns), so that close() completes whatever a program left."""
        await self.kernel.shutdown()
        await self.bridge.close()
        self.held.close()
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.to_thread(untrusted_fs.remove_tree, self.dir)),
                                   CLEANUP_TIMEOUT_S)
        except TimeoutError:
            log.warning("removing %s takes longer than %.0f s; it goes on in the background", self.dir,
                        CLEANUP_TIMEOUT_S)
        except OSError:  # a removal that fails is logged: close() must still complete
            log.exception("could not remove %s", self.dir)


class Episode:
    def __init__(self, runtime: Runtime, slot: Slot, router: Upstreams, owns_router: bool, open_s: float):
        self.runtime = runtime
        self.slot = slot
        self.router = router
        self.owns_router = owns_router
        self.open_s = open_s
        self.programs = 0
        self.closed = False
        self.stopped = False
        self.ended: str | None = None  # why the episode ended (its disk limit), if it did
        self._ending: asyncio.Task | None = None
        self._lock = asyncio.Lock()
        self._disk_base: untrusted_fs.Usage | None = None
        self._watchdog: asyncio.Task | None = None
        self._on_close: list[Callable[[], Awaitable[None]]] = []

    def on_close(self, fn: Callable[[], Awaitable[None]]) -> None:
        """`fn` runs when the episode closes, after its kernel and servers are gone (an environment's
        own processes and folders: a benchmark's state generator kept alive for its evaluator). Each
        runs once, in the order given; one that fails is logged and the rest still run."""
        self._on_close.append(fn)

    @property
    def id(self) -> str:
        return self.slot.id

    @property
    def call_log(self) -> list[ToolCallRecord]:
        return self.router.log

    def tools(self) -> list[dict[str, Any]]:
        return self.router.describe()

    async def run_program(self, code: str, timeout_s: float | None = None) -> ProgramResult:
        """Run one program in the persistent kernel; never raises for what the program does."""
        if self.closed or self.stopped:
            raise RuntimeError(f"episode is {'closed' if self.closed else 'stopped'}")
        cfg = self.runtime.config
        if self.ended:
            return ProgramResult(text=self._ended_text(), is_error=True, tool_calls=[], duration_s=0.0,
                                 output_chars=0, ended=True)
        try:  # a lone surrogate cannot travel in a kernel message: the program's own error, not the host's
            code.encode("utf-8")
        except UnicodeEncodeError as exc:
            return ProgramResult(text=f"UnicodeEncodeError: the program holds a lone surrogate at character "
                                      f"{exc.start} (not valid Unicode); it was not run.", is_error=True, tool_calls=[],
                                 duration_s=0.0, output_chars=0, error_name="UnicodeEncodeError")
        timeout_s = cfg.program_timeout_s if timeout_s is None else timeout_s
        async with self._lock:
            first_call = len(self.router.log)
            result = await self.slot.kernel.execute(code, timeout_s)
            if result.timed_out or result.died:  # its calls still waiting on servers end with it
                await self.slot.bridge.cancel_in_flight()
            over = self.ended or await self._check_disk()
            if self._ending is not None:  # the kernel halted and the workspace emptied before the result
                await self._ending
            self.programs += 1
            calls = [c for c in self.router.log[first_call:] if c.source == "program"]
        text = render(result, cfg.max_output_chars, timeout_s, cfg.show_last_expression)
        if over:
            text = f"{text}\n{self._ended_text()}" if result.output_chars or result.error_name else self._ended_text()
        return ProgramResult(text=text, is_error=bool(result.error_name or result.timed_out or result.died
                                                      or result.bad_messages or over),
                             tool_calls=calls, duration_s=result.duration_s, output_chars=result.output_chars,
                             timed_out=result.timed_out, restarted=result.restarted and not over,
                             error_name=result.error_name, ended=bool(over), died=result.died,
                             oom_killed=result.oom_killed)

    async def call_tool(self, name: str, arguments: Any) -> DirectCallResult:
        """A direct (DTC) tool call: the model sees the raw result text, or the error."""
        if self.closed or self.stopped:
            raise RuntimeError(f"episode is {'closed' if self.closed else 'stopped'}")
        if self.ended:
            text = self._ended_text()
            return DirectCallResult(text=text, is_error=True, record=ToolCallRecord(
                tool=str(name)[:200], arguments={}, source="direct", ok=False, error=text, result_text=text,
                result_chars=len(text), duration_s=0.0, started_at=time.time()))
        outcome = await self.router.call(name, arguments, source="direct")
        record = self.router.log[-1] if self.router.log else ToolCallRecord(
            tool=str(name)[:200], arguments={}, source="direct", ok=outcome.ok, error=outcome.error,
            result_text="", result_chars=len(outcome.text), duration_s=0.0, started_at=time.time())
        text = outcome.text if outcome.ok else error_text(outcome.error or "the tool failed")
        if await self._check_disk():  # a tool can write too (a file, the database)
            text, outcome.ok = f"{text}\n{self._ended_text()}", False
        return DirectCallResult(text=text, is_error=not outcome.ok, record=record)

    # ------------------------------------------------------------------ the disk limit
    def _ended_text(self) -> str:
        cfg = self.runtime.config
        return (f"[this episode has ended: its files passed the disk limit ({self.ended}; the limit is "
                f"{cfg.disk_bytes / 2**20:,.0f} MiB, {cfg.disk_entries:,} files and folders, {cfg.disk_depth} levels, "
                f"in the workspace, the database and the kernel's folders). The program was stopped and the "
                f"workspace cleared; no more programs or tool calls run in this episode]")

    def _usage(self, base: untrusted_fs.Usage | None) -> untrusted_fs.Usage:
        cfg = self.runtime.config
        b_bytes, b_entries = (base.bytes, base.entries) if base else (0, 0)
        return untrusted_fs.disk_usage(self.slot.disk_roots(), max_bytes=b_bytes + cfg.disk_bytes,
                                       max_entries=b_entries + cfg.disk_entries, max_depth=cfg.disk_depth)

    async def measure_base(self) -> None:
        """What the episode's folders hold when it opens (the limit is on what is added). A folder the
        runtime made holds a task's environment (~0.2 ms to walk): measured here; a caller's own
        workspace may be any size: in a thread."""
        cfg = self.runtime.config
        walk = functools.partial(untrusted_fs.disk_usage, self.slot.disk_roots(), max_bytes=1 << 62,
                                 max_entries=10**7, max_depth=max(cfg.disk_depth, 256))
        self._disk_base = walk() if self.slot.owns_workspace else await asyncio.to_thread(walk)

    async def _check_disk(self, in_thread: bool = False) -> str | None:
        """Why the episode passed its disk limit (and then end it), or None. Walked here after a program
        or a call (an episode's tree is small: ~0.2 ms; at most its limits' worth of entries), in a
        thread by the watchdog, while the program runs."""
        if self.ended:
            return self.ended
        usage = await asyncio.to_thread(self._usage, self._disk_base) if in_thread else self._usage(self._disk_base)
        if usage.over:
            await self._end(usage.over)
        return self.ended

    def watch(self) -> None:
        """Start the disk watchdog (module docstring): from now until the episode stops or closes."""
        if self._watchdog is None and not (self.stopped or self.closed):
            self._watchdog = asyncio.create_task(self._watch_disk())

    async def _unwatch(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(BaseException):
                await self._watchdog

    async def _watch_disk(self) -> None:
        interval = self.runtime.config.disk_check_s
        while True:
            await asyncio.sleep(interval)
            try:
                if await self._check_disk(in_thread=True):
                    return
            except OSError:  # a folder the episode's own teardown removed under the walk
                log.debug("episode %s: a disk check could not walk its folders", self.id, exc_info=True)

    async def _end(self, why: str) -> None:
        """End the episode (once): halt the kernel, then empty a workspace the runtime made. The work is
        its own task, so that cancelling the watchdog that found the limit cannot stop it half way."""
        if self._ending is None:
            self.ended = why
            log.warning("episode %s passed its disk limit (%s): ended", self.id, why)
            self._ending = asyncio.create_task(self._halt_and_clear())
        await asyncio.shield(self._ending)

    async def _halt_and_clear(self) -> None:
        await self.slot.kernel.halt()
        if self.slot.owns_workspace:  # the runtime's own folder, not a caller's
            try:
                await asyncio.to_thread(untrusted_fs.clear_folder, self.slot.workspace_fd)
            except OSError:
                log.exception("could not clear %s", self.slot.workspace)

    async def stop(self) -> None:
        """End every process the episode's programs and tools could still be running: the kernel's
        sandbox (the kernel and whatever it started: a thread left by the last program keeps running
        in it) and the episode's own tool servers. From then on nothing changes the environment, so
        the host can read the final state (snapshot, judge) without racing a program. Idempotent;
        `close()` still removes the files."""
        if self.stopped or self.closed:
            return
        self.stopped = True
        await self._unwatch()
        await self.slot.kernel.shutdown()
        if self.owns_router:
            await self.router.close()

    def final_state(self) -> EpisodeState:
        return EpisodeState(env_root=str(self.slot.env_root), workspace=str(self.slot.workspace),
                            db_path=str(self.slot.env_root / "db.sqlite"))

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        await self._unwatch()
        if self.owns_router and not self.stopped:
            await self.router.close()
        try:
            await self.slot.destroy()
        finally:
            self.runtime._episodes.discard(self)
            for fn in self._on_close:
                try:
                    await fn()
                except Exception:  # noqa: BLE001 - the next one must still run
                    log.exception("an on_close step of episode %s failed", self.id)

    async def __aenter__(self) -> Episode:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class Runtime:
    """Owns the limits backend, the warm pool and every open episode."""

    def __init__(self, config: RuntimeConfig | None = None, root: str | Path | None = None):
        self.config = config or RuntimeConfig()
        self._tmp = None if root else str(scratch.make("progagent-rt-"))
        self.root = Path(root or self._tmp)
        self.root.mkdir(parents=True, exist_ok=True)
        self.limits = LimitBackend(self.config.memory_bytes, self.config.max_processes, self.config.limits,
                                   file_bytes=self.config.disk_bytes)
        self._pool: asyncio.Queue[Slot] = asyncio.Queue()
        self._filling = 0
        self._fill_tasks: set[asyncio.Task] = set()
        self._episodes: set[Episode] = set()
        self._env_folders: set[Path] = set()
        self._starts = asyncio.Semaphore(KERNEL_STARTS_AT_ONCE)
        #: the folders this runtime writes: no bind may overlap one (sandbox.check_binds)
        self.owned = [self.root.resolve(), *([Path(self.config.logs_dir).resolve()] if self.config.logs_dir else []),
                      *filter(None, [project_home()])]
        self.binds = check_binds(self.config.binds, owned=self.owned)  # a bad one is refused now, with the reason
        self.closed = False

    @property
    def limits_mode(self) -> str:
        return self.limits.mode

    async def start(self, wait: bool = True) -> Runtime:
        self._refill()
        if wait and self.config.warm_pool:
            while self._pool.qsize() < self.config.warm_pool and self._fill_tasks:
                await asyncio.wait(list(self._fill_tasks), return_when=asyncio.FIRST_COMPLETED)
        return self

    def _refill(self) -> None:
        if self.closed:
            return
        while self._pool.qsize() + self._filling < self.config.warm_pool:
            self._filling += 1
            task = asyncio.create_task(self._fill_one())
            self._fill_tasks.add(task)
            task.add_done_callback(self._fill_tasks.discard)

    async def _start(self, slot: Slot) -> Slot:
        """Start a slot's kernel, at most KERNEL_STARTS_AT_ONCE at a time: a kernel's start is ~0.7 s
        of CPU, and 64 started at once on 2 cores all missed their 30 s deadline together (measured
        with LOCA episodes at load), where queued they each take a second."""
        async with self._starts:
            return await slot.start()

    def env_folder(self, kind: str) -> Path:
        """A fresh folder for an environment's own files (a benchmark's state, its logs), under the
        runtime's root: the one place there that an episode may bind (open_episode's `binds` and
        `workspace`). Removed with remove_env_folder (or with the runtime)."""
        folder = self.root / "envs" / f"{kind}-{uuid.uuid4().hex[:12]}"
        folder.mkdir(parents=True)
        self._env_folders.add(folder.resolve())
        return folder

    async def remove_env_folder(self, folder: Path) -> None:
        self._env_folders.discard(Path(folder).resolve())
        await asyncio.to_thread(untrusted_fs.remove_tree, folder)

    async def _fill_one(self) -> None:
        try:
            slot = await self._start(Slot(self.root, self.config, self.limits, binds=self.binds))
            if self.closed:
                await slot.destroy()
            else:
                self._pool.put_nowait(slot)
        except Exception:  # noqa: BLE001 - a failed warm start is retried by the next open
            log.exception("warm kernel start failed")
        finally:
            self._filling -= 1

    async def _take_slot(self, workspace: Path | None = None, binds: Sequence[str] = (),
                         counted: Sequence[str | Path] = ()) -> Slot:
        if workspace is not None or binds or counted:  # the pool's kernels have their own folders bound
            # a caller's folders: each checked (as RuntimeConfig.binds), then held for the slot's life
            mine = check_binds([*binds, *(f"{p}:rw" for p in counted)] + ([f"{workspace}:rw"] if workspace else []),
                               owned=self.owned, inside=self._env_folders)
            return await self._start(Slot(self.root, self.config, self.limits, mine[-1][0] if workspace else None,
                                          binds=[*self.binds, *mine[:len(binds)]],
                                          counted=[p for p, _ in mine[len(binds):len(binds) + len(counted)]]))
        while not self._pool.empty():
            slot = self._pool.get_nowait()
            if slot.kernel.alive:
                return slot
            await slot.destroy()
        return await self._start(Slot(self.root, self.config, self.limits, binds=self.binds))

    async def open_episode(self, upstreams: Sequence[UpstreamLike] | Prepare = (), *,
                           router: Upstreams | None = None, workspace: str | Path | None = None,
                           binds: Sequence[str] = (), counted: Sequence[str | Path] = ()) -> Episode:
        """Open an episode: a fresh sandboxed kernel wired to the given MCP tool servers.

        `upstreams` are started for this episode and closed with it; a callable receives the
        episode's environment folder (to build a database and workspace into) and returns them.
        `router` is an already started, shared set of upstreams that the episode does not own.
        `workspace` binds an existing host folder as /workspace instead of a fresh one (no pool).
        `binds`: host folders this episode's programs see at their own paths, besides the runtime's
        (`RuntimeConfig.binds` syntax; no pool): a benchmark's workspace that its servers name by host path.
        `counted`: more folders its disk limit counts (what its own tool servers write: a benchmark's
        databases). Each folder is named by its real path, checked once and held open for the episode
        (Slot); one under the runtime's root must lie in a folder from env_folder().
        """
        if self.closed:
            raise RuntimeError("runtime is closed")
        t0 = time.perf_counter()
        try:
            slot = await self._take_slot(Path(workspace) if workspace else None, binds, counted)
        except Exception as exc:
            mark_cause(exc, "infra/sandbox_start")
            raise
        owns = router is None
        try:
            if router is None:
                try:
                    specs = await upstreams(slot.env_root) if callable(upstreams) else upstreams
                except Exception as exc:
                    mark_cause(exc, "infra/env_open")
                    raise
                logs = slot.dir
                if self.config.logs_dir:  # kept after the episode: why a server failed, read later
                    logs = Path(self.config.logs_dir) / slot.id
                    logs.mkdir(parents=True, exist_ok=True)
                ups = [u if isinstance(u, Upstream) else Upstream(u, errlog=logs / f"upstream-{u.name}.log")
                       for u in specs]
                router = Upstreams(ups, heuristic=self.config.error_heuristic,
                                   call_timeout_s=self.config.tool_timeout_s,
                                   max_in_flight=self.config.max_tool_calls_in_flight,
                                   record_chars=self.config.call_record_chars,
                                   max_records=self.config.max_call_records)
                try:
                    await router.start()
                except Exception as exc:
                    mark_cause(exc, "infra/tool_server_start")
                    raise
            slot.bridge.attach(router)
        except BaseException:
            if owns and router is not None:
                await router.close()
            await slot.destroy()
            self._refill()
            raise
        episode = Episode(self, slot, router, owns, time.perf_counter() - t0)
        await episode.measure_base()
        episode.watch()
        episode.open_s = time.perf_counter() - t0
        self._episodes.add(episode)
        self._refill()  # last: the new kernel's start (a fork and exec) runs after this returns
        return episode

    async def close(self) -> None:
        self.closed = True
        for task in list(self._fill_tasks):  # a kernel still starting will not be used: stop its start
            task.cancel()
        for task in list(self._fill_tasks):
            with contextlib.suppress(BaseException):
                await task
        for episode in list(self._episodes):
            await episode.close()
        while not self._pool.empty():
            await self._pool.get_nowait().destroy()
        await asyncio.to_thread(self.limits.close)
        if self._tmp:
            await asyncio.to_thread(untrusted_fs.remove_tree, self._tmp)

    async def __aenter__(self) -> Runtime:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
