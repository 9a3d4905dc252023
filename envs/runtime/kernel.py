"""One persistent IPython kernel in a bubblewrap sandbox, driven through jupyter_client.

The kernel talks ZeroMQ over `ipc` sockets in its run folder (TCP cannot cross the empty network
namespace), is interrupted by an `interrupt_request` message (a SIGINT would reach bwrap, not the
kernel), and runs inside its own cgroup (or rlimits) so that it can be killed as a whole.

Lifecycle: `start()` → many `execute()` → `shutdown()`. `execute()` never raises for what the
program does: timeouts, crashes and OOM kills come back in `ExecResult`, and the kernel is
restarted when it cannot continue (its variables are then gone, and the result says so).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import msgspec
from jupyter_client.asynchronous.client import AsyncKernelClient

from envs.runtime.config import RuntimeConfig
from envs.runtime.limits import LimitBackend, SandboxLimits
from envs.runtime.sandbox import BWRAP_ENV, IN_KERNEL_DIR, bwrap_argv, kernel_argv, launch_argv

log = logging.getLogger(__name__)

SETUP_CODE = "from progagent_tools import tools, ToolError, UnknownToolError"


class ExecResult(msgspec.Struct):
    output: str  # stdout and stderr in the order they arrived (possibly cut, see output_chars)
    output_chars: int  # total characters produced, before any cut
    error_name: str | None = None
    error_value: str | None = None
    traceback: list[str] = []
    last_value: str | None = None  # text/plain of the last expression (shown only if configured)
    timed_out: bool = False
    died: bool = False  # the kernel process ended (crash, OOM kill, os._exit)
    restarted: bool = False  # a fresh kernel replaced it: all variables are gone
    oom_killed: bool = False
    duration_s: float = 0.0


class SandboxedKernel:
    def __init__(self, run_dir: Path, tools_dir: Path, workspace: Path, limits: LimitBackend, config: RuntimeConfig):
        self.run_dir = run_dir
        self.tools_dir = tools_dir
        self.workspace = workspace
        self.backend = limits
        self.config = config
        self.kernel_dir = run_dir / "kernel"
        self.proc: subprocess.Popen | None = None
        self.client: AsyncKernelClient | None = None
        self.limits: SandboxLimits | None = None
        self.starts = 0
        self.start_s = 0.0

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        t0 = time.perf_counter()
        if self.kernel_dir.exists():
            shutil.rmtree(self.kernel_dir, ignore_errors=True)
        self.kernel_dir.mkdir(parents=True)
        key = secrets.token_hex(16)
        base = dict(shell_port=1, iopub_port=2, stdin_port=3, control_port=4, hb_port=5, transport="ipc",
                    signature_scheme="hmac-sha256", key=key, kernel_name="progagent")
        (self.kernel_dir / "kernel.json").write_text(json.dumps(dict(base, ip=f"{IN_KERNEL_DIR}/k")))
        host_conn = self.run_dir / "host-connection.json"
        host_conn.write_text(json.dumps(dict(base, ip=str(self.kernel_dir / "k"))))

        self.limits = self.backend.create(f"{self.run_dir.name}-{self.starts}")
        argv = self.limits.wrap(launch_argv(bwrap_argv(self.kernel_dir, self.tools_dir, self.workspace),
                                            kernel_argv(f"{IN_KERNEL_DIR}/kernel.json"), self.run_dir))
        log_file = open(self.run_dir / "kernel.log", "ab")
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                                         env=BWRAP_ENV, start_new_session=True)
        finally:
            log_file.close()
        self.starts += 1
        client = AsyncKernelClient()
        client.load_connection_file(str(host_conn))
        client.start_channels()
        self.client = client
        try:
            await self._wait_ready()
            reply = await self._run_raw(SETUP_CODE, self.config.kernel_start_timeout_s, silent=True)
            if reply.error_name:
                raise RuntimeError(f"kernel setup failed: {reply.error_name}: {reply.error_value}")
        except BaseException:
            await self.shutdown()
            raise
        self.start_s = time.perf_counter() - t0

    async def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.config.kernel_start_timeout_s
        assert self.client is not None
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"sandboxed kernel exited during start (code {self.proc.returncode}); "
                                   f"see {self.run_dir / 'kernel.log'}")
            try:
                await self.client.wait_for_ready(timeout=min(2.0, max(0.1, deadline - time.monotonic())))
                return
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"sandboxed kernel not ready after {self.config.kernel_start_timeout_s} s; "
                                       f"see {self.run_dir / 'kernel.log'}") from None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    async def shutdown(self) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.stop_channels()
            self.client = None
        if self.proc is not None:
            if self.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, 9)
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.proc.wait, 5)
            self.proc = None
        if self.limits is not None:
            await asyncio.to_thread(self.limits.release)
            self.limits = None

    async def restart(self) -> None:
        await self.shutdown()
        await self.start()

    # ------------------------------------------------------------------ execution
    async def execute(self, code: str, timeout_s: float | None = None) -> ExecResult:
        """Run `code`; on timeout interrupt, and restart if the kernel does not come back."""
        timeout_s = self.config.program_timeout_s if timeout_s is None else timeout_s
        if not self.alive:
            await self.restart()
            result = await self._run_raw(code, timeout_s)
            result.restarted = True
            return result
        result = await self._run_raw(code, timeout_s)
        if result.died:
            result.oom_killed = self.limits.oom_killed() if self.limits else False
            await self.restart()
            result.restarted = True
        elif result.timed_out and not await self._interrupt():
            await self.restart()
            result.restarted = True
        return result

    async def _interrupt(self) -> bool:
        """Send interrupt_request; True if the kernel is idle again within the grace period."""
        client = self.client
        if client is None or not self.alive:
            return False
        msg = client.session.msg("interrupt_request", {})
        client.control_channel.send(msg)
        deadline = time.monotonic() + self.config.interrupt_grace_s
        # the interrupted cell ends with an error + idle; drain until idle
        while time.monotonic() < deadline:
            try:
                m = await client.get_iopub_msg(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                break
            if m["msg_type"] == "status" and m["content"].get("execution_state") == "idle" \
                    and m["parent_header"].get("msg_id") == self._current:
                return True
        return False

    async def _run_raw(self, code: str, timeout_s: float, silent: bool = False) -> ExecResult:
        client = self.client
        assert client is not None
        t0 = time.perf_counter()
        msg_id = client.execute(code, silent=silent, store_history=not silent, allow_stdin=False)
        self._current = msg_id
        cap = self.config.max_output_chars * 2
        chunks: list[str] = []
        kept = total = 0
        res = ExecResult(output="", output_chars=0)
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                res.timed_out = True
                break
            try:
                msg = await client.get_iopub_msg(timeout=min(remaining, 0.5))
            except queue.Empty:
                if not self.alive:
                    res.died = True
                    break
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                text = content.get("text", "")
                total += len(text)
                if kept < cap:
                    chunks.append(text[: cap - kept])
                    kept += min(len(text), cap - kept)
            elif kind == "error":
                res.error_name = content.get("ename")
                res.error_value = content.get("evalue")
                res.traceback = list(content.get("traceback", []))
            elif kind == "execute_result":
                res.last_value = content.get("data", {}).get("text/plain")
            elif kind == "status" and content.get("execution_state") == "idle":
                break
        res.output = "".join(chunks)
        res.output_chars = total
        res.duration_s = time.perf_counter() - t0
        return res
