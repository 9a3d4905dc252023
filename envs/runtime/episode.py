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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from envs.runtime.bridge import ToolBridge
from envs.runtime.config import RuntimeConfig
from envs.runtime.kernel import SandboxedKernel
from envs.runtime.limits import LimitBackend
from envs.runtime.output import render
from envs.runtime.upstream import ToolCallRecord, Upstream, Upstreams, UpstreamSpec

log = logging.getLogger(__name__)

UpstreamLike = UpstreamSpec | Upstream
Prepare = Callable[[Path], Awaitable[Sequence[UpstreamLike]]]


class ProgramResult(msgspec.Struct):
    text: str  # what the model sees
    is_error: bool  # the program raised, timed out or crashed the kernel
    tool_calls: list[ToolCallRecord]
    duration_s: float
    output_chars: int
    timed_out: bool = False
    restarted: bool = False
    error_name: str | None = None


class DirectCallResult(msgspec.Struct):
    text: str  # what the model sees (the raw result, or the error message)
    is_error: bool
    record: ToolCallRecord


class EpisodeState(msgspec.Struct):
    env_root: str
    workspace: str
    db_path: str


class Slot:
    """A started sandboxed kernel with its bridge, waiting for an episode."""

    def __init__(self, root: Path, config: RuntimeConfig, limits: LimitBackend, workspace: Path | None = None):
        self.id = uuid.uuid4().hex[:12]
        self.dir = root / self.id
        self.tools_dir = self.dir / "tools"
        self.env_root = self.dir / "env"
        self.workspace = workspace or self.env_root / "workspace"
        for d in (self.tools_dir, self.workspace):
            d.mkdir(parents=True, exist_ok=True)
        self.bridge = ToolBridge(self.tools_dir / "tools.sock")
        self.kernel = SandboxedKernel(self.dir, self.tools_dir, self.workspace, limits, config)

    async def start(self) -> Slot:
        await self.bridge.start()
        try:
            await self.kernel.start()
        except BaseException:
            await self.destroy()
            raise
        return self

    async def destroy(self) -> None:
        await self.kernel.shutdown()
        await self.bridge.close()
        await asyncio.to_thread(shutil.rmtree, self.dir, True)


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
        self._lock = asyncio.Lock()

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
        timeout_s = cfg.program_timeout_s if timeout_s is None else timeout_s
        async with self._lock:
            first_call = len(self.router.log)
            result = await self.slot.kernel.execute(code, timeout_s)
            self.programs += 1
            calls = [c for c in self.router.log[first_call:] if c.source == "program"]
        text = render(result, cfg.max_output_chars, timeout_s, cfg.show_last_expression)
        return ProgramResult(text=text, is_error=bool(result.error_name or result.timed_out or result.died
                                                      or result.bad_messages),
                             tool_calls=calls, duration_s=result.duration_s, output_chars=result.output_chars,
                             timed_out=result.timed_out, restarted=result.restarted, error_name=result.error_name)

    async def call_tool(self, name: str, arguments: Any) -> DirectCallResult:
        """A direct (DTC) tool call: the model sees the raw result text, or the error."""
        if self.closed or self.stopped:
            raise RuntimeError(f"episode is {'closed' if self.closed else 'stopped'}")
        outcome = await self.router.call(name, arguments, source="direct")
        record = self.router.log[-1]
        text = outcome.text if outcome.ok else f"Error: {outcome.error}"
        return DirectCallResult(text=text, is_error=not outcome.ok, record=record)

    async def stop(self) -> None:
        """End every process the episode's programs and tools could still be running: the kernel's
        sandbox (the kernel and whatever it started: a thread left by the last program keeps running
        in it) and the episode's own tool servers. From then on nothing changes the environment, so
        the host can read the final state (snapshot, judge) without racing a program. Idempotent;
        `close()` still removes the files."""
        if self.stopped or self.closed:
            return
        self.stopped = True
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
        if self.owns_router and not self.stopped:
            await self.router.close()
        await self.slot.destroy()
        self.runtime._episodes.discard(self)

    async def __aenter__(self) -> Episode:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class Runtime:
    """Owns the limits backend, the warm pool and every open episode."""

    def __init__(self, config: RuntimeConfig | None = None, root: str | Path | None = None):
        self.config = config or RuntimeConfig()
        self._tmp = None if root else tempfile.mkdtemp(prefix="progagent-rt-")
        self.root = Path(root or self._tmp)
        self.root.mkdir(parents=True, exist_ok=True)
        self.limits = LimitBackend(self.config.memory_bytes, self.config.max_processes, self.config.limits)
        self._pool: asyncio.Queue[Slot] = asyncio.Queue()
        self._filling = 0
        self._fill_tasks: set[asyncio.Task] = set()
        self._episodes: set[Episode] = set()
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

    async def _fill_one(self) -> None:
        try:
            slot = await Slot(self.root, self.config, self.limits).start()
            if self.closed:
                await slot.destroy()
            else:
                self._pool.put_nowait(slot)
        except Exception:  # noqa: BLE001 - a failed warm start is retried by the next open
            log.exception("warm kernel start failed")
        finally:
            self._filling -= 1

    async def _take_slot(self, workspace: Path | None = None) -> Slot:
        if workspace is not None:  # a caller's own folder: the pool's kernels have theirs bound
            return await Slot(self.root, self.config, self.limits, Path(workspace).resolve()).start()
        while not self._pool.empty():
            slot = self._pool.get_nowait()
            if slot.kernel.alive:
                return slot
            await slot.destroy()
        return await Slot(self.root, self.config, self.limits).start()

    async def open_episode(self, upstreams: Sequence[UpstreamLike] | Prepare = (), *,
                           router: Upstreams | None = None, workspace: str | Path | None = None) -> Episode:
        """Open an episode: a fresh sandboxed kernel wired to the given MCP tool servers.

        `upstreams` are started for this episode and closed with it; a callable receives the
        episode's environment folder (to build a database and workspace into) and returns them.
        `router` is an already started, shared set of upstreams that the episode does not own.
        `workspace` binds an existing host folder as /workspace instead of a fresh one (no pool).
        """
        if self.closed:
            raise RuntimeError("runtime is closed")
        t0 = time.perf_counter()
        slot = await self._take_slot(Path(workspace) if workspace else None)
        self._refill()
        owns = router is None
        try:
            if router is None:
                specs = await upstreams(slot.env_root) if callable(upstreams) else upstreams
                ups = [u if isinstance(u, Upstream) else Upstream(u, errlog=slot.dir / f"upstream-{u.name}.log")
                       for u in specs]
                router = Upstreams(ups, heuristic=self.config.error_heuristic,
                                   call_timeout_s=self.config.tool_timeout_s,
                                   max_in_flight=self.config.max_tool_calls_in_flight,
                                   record_chars=self.config.call_record_chars,
                                   max_records=self.config.max_call_records)
                await router.start()
            slot.bridge.attach(router)
        except BaseException:
            if owns and router is not None:
                await router.close()
            await slot.destroy()
            raise
        episode = Episode(self, slot, router, owns, time.perf_counter() - t0)
        self._episodes.add(episode)
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
            shutil.rmtree(self._tmp, ignore_errors=True)

    async def __aenter__(self) -> Runtime:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
