"""One persistent IPython kernel in a bubblewrap sandbox, driven over its sockets (kernel_channels.py).

The kernel talks ZeroMQ over `ipc` sockets in its run folder (TCP cannot cross the empty network
namespace), is interrupted by an `interrupt_request` message (a SIGINT would reach bwrap, not the
kernel), and runs inside its own cgroup (or rlimits) so that it can be killed as a whole.

Lifecycle: `start()` → many `execute()` → `shutdown()`. `execute()` never raises for what the
program does: timeouts, crashes and OOM kills come back in `ExecResult`, and the kernel is
restarted when it cannot continue (its variables are then gone, and the result says so).

Every message from the kernel is the program's: it can read the connection key and sign anything,
or send garbage. So the channels read the kernel's sockets with their own limits (frames, bytes
and queued messages; kernel_channels.py), a message that does not decode or verify is skipped and
counted, fields of the wrong type are ignored, and the texts kept from a cell are cut: output at
twice `max_output_chars`, an exception's value and traceback and the last expression's value at
`max_output_chars` each. The kernel itself cuts what a cell sends (shim/progagent_output.py) so
that ordinary programs never meet those limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import re
import secrets
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from envs.runtime import untrusted_fs
from envs.runtime.host_starts import host_start
from envs.runtime.kernel_channels import KernelChannels
from envs.runtime.limits import LimitBackend, SandboxLimits
from envs.runtime.sandbox import BWRAP_ENV, IN_KERNEL_DIR, FdBinds, bwrap_argv, kernel_argv, launch_argv
from schema.config import RuntimeConfig

log = logging.getLogger(__name__)

SETUP_CODE = ("from progagent_tools import tools, ToolError, UnknownToolError\n"
              "import progagent_output as _po; _po.install({budget}, {show}); del _po")
_DROPPED = re.compile("\x00progagent-dropped:(\\d{1,15})\x00")


def _text(value: object, limit: int) -> str | None:
    """A str field of a kernel message, cut at `limit`; anything else (a forged message) is None."""
    return value[:limit] if isinstance(value, str) else None


class ExecResult(msgspec.Struct):
    output: str  # stdout and stderr in the order they arrived (possibly cut, see output_chars)
    output_chars: int  # characters the host received (its own count: what metrics may use)
    #: characters the kernel says it produced and did not send (its shim cuts a flood): the program's own
    #: claim, shown to the model in the cut marker and used for nothing else
    reported_dropped: int = 0
    error_name: str | None = None
    error_value: str | None = None
    traceback: list[str] = []
    last_value: str | None = None  # text/plain of the last expression (shown only if configured)
    timed_out: bool = False
    died: bool = False  # the kernel process ended (crash, OOM kill, os._exit)
    restarted: bool = False  # a fresh kernel replaced it: all variables are gone
    oom_killed: bool = False
    duration_s: float = 0.0
    bad_messages: int = 0  # kernel messages that did not verify or decode (skipped)


class SandboxedKernel:
    """`workspace_fd` and `binds` ((descriptor, path, writable)) are folders its episode holds open
    (envs/runtime/sandbox.HeldFolders): every start, a restart too, binds those descriptors, never a
    path the program could have changed since it was checked."""

    def __init__(self, run_dir: Path, tools_dir: Path, workspace_fd: int, limits: LimitBackend, config: RuntimeConfig,
                 binds: Sequence[tuple[int, Path, bool]] = ()):
        self.run_dir = run_dir
        self.tools_dir = tools_dir
        self.workspace_fd = workspace_fd
        self.binds = list(binds)
        self.backend = limits
        self.config = config
        self.kernel_dir = run_dir / "kernel"
        self.proc: subprocess.Popen | None = None
        self.client: KernelChannels | None = None
        self.limits: SandboxLimits | None = None
        self.log: _LogTail | None = None
        self.halted = False  # halt(): stopped for good, never restarted
        self.starts = 0
        self.start_s = 0.0

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Start the sandboxed kernel (a restart too) in one of the host's start slots
        (envs/runtime/host_starts.py): its deadline, kernel_start_timeout_s, counts from the slot."""
        async with host_start():
            await self._start()

    async def _start(self) -> None:
        t0 = time.perf_counter()
        if self.kernel_dir.exists():
            await asyncio.to_thread(untrusted_fs.remove_tree, self.kernel_dir)  # the sandbox wrote in it
        self.kernel_dir.mkdir(parents=True)
        key = secrets.token_hex(16)
        base = dict(shell_port=1, iopub_port=2, stdin_port=3, control_port=4, hb_port=5, transport="ipc",
                    signature_scheme="hmac-sha256", key=key, kernel_name="progagent")
        (self.kernel_dir / "kernel.json").write_text(json.dumps(dict(base, ip=f"{IN_KERNEL_DIR}/k")))

        self.limits = self.backend.create(f"{self.run_dir.name}-{self.starts}")
        fd_binds = FdBinds()
        try:
            argv = self.limits.wrap(launch_argv(bwrap_argv(self.kernel_dir, self.tools_dir, self.workspace_fd,
                                                           fd_binds, binds=self.binds),
                                                kernel_argv(f"{IN_KERNEL_DIR}/kernel.json"), self.run_dir))
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, env=BWRAP_ENV, start_new_session=True,
                                         pass_fds=fd_binds.fds)
        finally:
            fd_binds.close()
        self.log = _LogTail(self.proc.stdout, self.run_dir / "kernel.log")
        self.starts += 1
        self.client = KernelChannels(dict(base, ip=str(self.kernel_dir / "k")))
        try:
            await self._wait_ready()
            setup = SETUP_CODE.format(budget=2 * self.config.max_output_chars, show=self.config.show_last_expression)
            reply = await self._run_raw(setup, self.config.kernel_start_timeout_s, silent=True)
            if reply.error_name:
                raise RuntimeError(f"kernel setup failed: {reply.error_name}: {reply.error_value}")
        except BaseException:
            await self.shutdown()
            raise
        self.start_s = time.perf_counter() - t0

    async def _wait_ready(self) -> None:
        """Connected to the kernel's sockets (retried while it has not bound them), then ready: iopub
        carries the kernel's answer to a kernel_info request (so the subscription is in place)."""
        deadline = time.monotonic() + self.config.kernel_start_timeout_s
        client = self.client
        assert client is not None and self.proc is not None
        not_ready = f"sandboxed kernel not ready after {self.config.kernel_start_timeout_s} s"
        connect = asyncio.create_task(client.connect(deadline))
        try:
            while not connect.done():
                self._check_running()
                await asyncio.wait({connect}, timeout=0.1)
            connect.result()
        except (TimeoutError, OSError, ConnectionError, asyncio.IncompleteReadError) as exc:
            self._check_running()
            raise RuntimeError(f"{not_ready} ({type(exc).__name__}: {exc}){self._log_tail()}") from None
        finally:
            connect.cancel()
        while time.monotonic() < deadline:
            self._check_running()
            msg_id = await client.request("shell", "kernel_info_request", {})
            answer_by = time.monotonic() + 0.5
            while (left := answer_by - time.monotonic()) > 0:
                try:
                    msg = await client.get_iopub_msg(left)
                except queue.Empty:
                    break
                if msg.get("parent_header", {}).get("msg_id") == msg_id:
                    return
        raise RuntimeError(not_ready + self._log_tail())

    def _check_running(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"sandboxed kernel exited during start (code {self.proc.returncode})"
                               f"{self._log_tail()}")

    def _log_tail(self) -> str:
        """What the kernel process printed last, for a failed start's error: the error carries it, since
        the slot's folder (with kernel.log) is removed with the slot."""
        if self.log is None:
            return ""
        self.log.drain()
        text = bytes(self.log.tail[-2000:]).decode("utf-8", "replace").strip()
        return f"; its output ends:\n{text}" if text else "; it printed nothing"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    async def shutdown(self) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
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
        if self.log is not None:
            self.log.close()
            self.log = None

    async def halt(self) -> None:
        """Shut down for good: a program running now ends as if the kernel died, and no restart follows
        (the episode has ended: its disk limit was passed, or it was stopped)."""
        self.halted = True
        await self.shutdown()

    async def restart(self) -> None:
        await self.shutdown()
        await self.start()

    # ------------------------------------------------------------------ execution
    async def execute(self, code: str, timeout_s: float | None = None) -> ExecResult:
        """Run `code`; on timeout interrupt, and restart if the kernel does not come back."""
        timeout_s = self.config.program_timeout_s if timeout_s is None else timeout_s
        if self.halted:
            return ExecResult(output="", output_chars=0, died=True)
        if not self.alive:
            await self.restart()
            result = await self._run_raw(code, timeout_s)
            result.restarted = True
            return result
        result = await self._run_raw(code, timeout_s)
        if self.halted:
            result.died = True
            return result
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
        try:
            await client.request("control", "interrupt_request", {})
        except (TimeoutError, OSError, ConnectionError):
            return False
        deadline = time.monotonic() + self.config.interrupt_grace_s
        # the interrupted cell ends with an error + idle; drain until idle
        while time.monotonic() < deadline:
            try:
                m = await client.get_iopub_msg(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                break
            content, parent = m.get("content"), m.get("parent_header")
            if m.get("msg_type") == "status" and isinstance(content, dict) and isinstance(parent, dict) \
                    and content.get("execution_state") == "idle" and parent.get("msg_id") == self._current:
                return True
        return False

    async def _run_raw(self, code: str, timeout_s: float, silent: bool = False) -> ExecResult:
        client = self.client
        if client is None:  # halted meanwhile
            return ExecResult(output="", output_chars=0, died=True)
        t0 = time.perf_counter()
        res = ExecResult(output="", output_chars=0)
        bad_before = client.bad
        try:
            msg_id = await client.execute(code, silent=silent, store_history=not silent)
        except (TimeoutError, OSError, ConnectionError):  # the kernel takes no request: dead, or stuck
            res.died, res.timed_out = not self.alive, self.alive
            return res
        self._current = msg_id
        limit = self.config.max_output_chars
        cap = limit * 2
        chunks: list[str] = []
        kept = total = 0
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
            try:
                parent = msg.get("parent_header")
                if not isinstance(parent, dict) or parent.get("msg_id") != msg_id:
                    continue
                kind, content = msg.get("msg_type"), msg.get("content")
                if not isinstance(content, dict):
                    continue
            except Exception:  # noqa: BLE001
                res.bad_messages += 1
                continue
            if kind == "stream":
                text = content.get("text")
                if not isinstance(text, str):
                    continue
                if "\x00progagent-dropped:" in text:  # what the kernel says it counted and did not send
                    for m in _DROPPED.finditer(text):
                        res.reported_dropped = min(res.reported_dropped + int(m[1]), 10**15)
                    text = _DROPPED.sub("", text)
                total += len(text)
                if kept < cap:
                    chunks.append(text[: cap - kept])
                    kept += min(len(text), cap - kept)
            elif kind == "error":
                res.error_name = _text(content.get("ename"), 200) or "Error"
                res.error_value = _text(content.get("evalue"), limit)
                frames = content.get("traceback")
                res.traceback = _cut_frames(frames if isinstance(frames, list) else [], limit)
            elif kind == "execute_result":
                data = content.get("data")
                res.last_value = _text(data.get("text/plain"), limit) if isinstance(data, dict) else None
            elif kind == "status" and content.get("execution_state") == "idle":
                break
        res.output = "".join(chunks)
        res.output_chars = total
        res.bad_messages += client.bad - bad_before
        res.duration_s = time.perf_counter() - t0
        return res


class _LogTail:
    """The last KEEP bytes of what the kernel process writes to its stdout and stderr (a pipe read as
    it fills, on the event loop): a program can write to them without end, so the host keeps a
    tail, saved to kernel.log when the kernel stops or fails to start."""

    KEEP = 64 * 1024

    def __init__(self, pipe: Any, path: Path):
        self.fd = pipe.fileno()
        self.pipe = pipe
        self.path = path
        self.tail = bytearray()
        os.set_blocking(self.fd, False)
        self.loop = asyncio.get_running_loop()
        self.loop.add_reader(self.fd, self._read)

    def _read(self) -> None:
        try:
            data = os.read(self.fd, 1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.loop.remove_reader(self.fd)
            return
        self.tail += data
        if len(self.tail) > 2 * self.KEEP:
            del self.tail[: len(self.tail) - self.KEEP]

    def drain(self) -> None:
        """Read what is in the pipe now (the event loop may not have run the reader since)."""
        for _ in range(64):
            before = len(self.tail)
            self._read()
            if len(self.tail) == before:
                return

    def save(self) -> None:
        with contextlib.suppress(OSError):
            with untrusted_fs.open_log(self.path) as f:
                f.write(bytes(self.tail[-self.KEEP:]))
        self.tail.clear()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.fd)
        self.save()
        with contextlib.suppress(Exception):
            self.pipe.close()


def _cut_frames(frames: list, limit: int) -> list[str]:
    """Traceback frames (strings only), the last ones kept, `limit` characters in all."""
    kept: list[str] = []
    total = 0
    for frame in reversed(frames):
        if not isinstance(frame, str):
            continue
        if total + len(frame) > limit:
            kept.append(frame[-(limit - total):] if limit > total else "")
            break
        kept.append(frame)
        total += len(frame)
    return kept[::-1]
