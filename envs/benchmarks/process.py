"""A benchmark's own process, seen from the host: started in its sandbox (envs/benchmarks/sandbox.py)
within the runtime's limits, spoken to in JSON lines, every read bounded and under a deadline, killed
with everything it started when it is closed or misses a deadline.

    proc = JsonLineProcess.start(argv, log_file=..., limits=runtime.limits, name="loca-driver")
    proc.send({"env_class": ...})
    reply = proc.receive(timeout_s=600)      # ProcessFailed: it died, said too much, or took too long
    proc.close()

    run = run_once(argv, timeout_s=300, log_file=...)    # a one-shot command (an evaluator): its exit code

Why so careful: what the process reads was written by the model (the final state it evaluates), so
its output is untrusted too: a reply is at most MAX_REPLY_BYTES, its output log at most the limits'
file size, and a process that hangs is killed at the deadline, never waited on.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec

from envs.runtime.sandbox import BWRAP_ENV

#: the most one reply line may hold (LOCA's: an instruction, server configs, an evaluation's info)
MAX_REPLY_BYTES = 16 * 2**20
#: how much of a log a failure message quotes
TAIL_BYTES = 4000


class ProcessFailed(RuntimeError):
    """The process died, replied with something that is not one JSON object, or missed its deadline."""


def tail(path: Path | None, n: int = TAIL_BYTES) -> str:
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - n))
            return f.read(n).decode("utf-8", "replace")
    except OSError:
        return ""


class JsonLineProcess:
    def __init__(self, proc: subprocess.Popen, log_file: Path | None, limits: Any, name: str):
        self.proc = proc
        self.log_file = log_file
        self.limits = limits
        self.name = name
        self._buf = b""
        self.closed = False

    @classmethod
    def start(cls, argv: list[str], *, log_file: Path | None, limits: Any = None, memory_bytes: int | None = None,
              name: str = "benchmark") -> JsonLineProcess:
        """`argv` (a sandboxed argv, started with env=BWRAP_ENV) within fresh limits from the `limits`
        backend (None: none), stderr to `log_file`."""
        sandbox_limits = limits.create(f"{name}-{uuid.uuid4().hex[:8]}", memory_bytes) if limits is not None else None
        err = open(log_file, "ab") if log_file is not None else subprocess.DEVNULL
        try:
            proc = subprocess.Popen(sandbox_limits.wrap(argv) if sandbox_limits else argv, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=err, env=BWRAP_ENV, start_new_session=True)
        except BaseException:
            if sandbox_limits is not None:
                sandbox_limits.release()
            raise
        finally:
            if log_file is not None:
                err.close()
        return cls(proc, log_file, sandbox_limits, name)

    def send(self, obj: Any) -> None:
        try:
            self.proc.stdin.write(json.dumps(obj).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise ProcessFailed(self._why(f"it stopped reading ({exc})")) from None

    def receive(self, timeout_s: float) -> dict[str, Any]:
        """The next reply line as a JSON object, within `timeout_s` (ProcessFailed: killed first)."""
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.close()
                    raise ProcessFailed(self._why(f"no reply within {timeout_s:.0f} s"))
                if not sel.select(left):
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    self.proc.wait()
                    raise ProcessFailed(self._why(f"it exited (code {self.proc.returncode}) before replying"))
                self._buf += chunk
                if len(self._buf) > MAX_REPLY_BYTES and b"\n" not in self._buf:
                    self.close()
                    raise ProcessFailed(self._why(f"a reply longer than {MAX_REPLY_BYTES >> 20} MiB"))
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise ProcessFailed(self._why(f"a reply that is not a JSON object: {line[:200]!r}"))
        return reply

    def _why(self, what: str) -> str:
        log = tail(self.log_file)
        return f"{self.name}: {what}" + (f"; its log ({self.log_file}) ends:\n{log}" if log.strip() else "")

    def close(self, grace_s: float = 5.0) -> None:
        """Ask it to stop (end of input), then kill its session and release its limits (idempotent)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # bwrap and, with --die-with-parent, its pid namespace
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.proc.stdout.close()
        if self.limits is not None:
            self.limits.release()


class OneShot(msgspec.Struct):
    exit_code: int | None
    timed_out: bool
    duration_s: float
    output_tail: str


def run_once(argv: list[str], *, timeout_s: float, log_file: Path, limits: Any = None,
             memory_bytes: int | None = None, name: str = "benchmark") -> OneShot:
    """A sandboxed one-shot command, output to `log_file`, killed at `timeout_s`."""
    t0 = time.monotonic()
    sandbox_limits = limits.create(f"{name}-{uuid.uuid4().hex[:8]}", memory_bytes) if limits is not None else None
    timed_out = False
    try:
        with open(log_file, "ab") as out:
            proc = subprocess.Popen(sandbox_limits.wrap(argv) if sandbox_limits else argv, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, env=BWRAP_ENV, start_new_session=True)
            try:
                code: int | None = proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                timed_out, code = True, None
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    finally:
        if sandbox_limits is not None:
            sandbox_limits.release()
    return OneShot(exit_code=code, timed_out=timed_out, duration_s=time.monotonic() - t0, output_tail=tail(log_file))
