"""A benchmark's own process, seen from the host: started in its sandbox (envs/benchmarks/sandbox.py)
within the runtime's limits, spoken to in JSON lines, every read bounded and under a deadline, killed
with everything it started when it is closed or misses a deadline.

    proc = JsonLineProcess.start(argv, log_file=..., limits=runtime.limits, name="loca-driver")
    proc.send({"env_class": ...})
    reply = proc.receive(timeout_s=600)      # ProcessFailed: it died, said too much, or took too long
    proc.close()

    run = run_once(argv, timeout_s=300, log_file=...)    # a one-shot script (an evaluator, Harbor's test.sh)

Why so careful: what the process reads was written by the model (the final state it evaluates), so
its output is untrusted too: a reply is at most MAX_REPLY_BYTES, its output log at most the limits'
file size (and read back as a bounded tail, never through a link or from a pipe), and a process that
hangs is killed at the deadline, never waited on. One-shot scripts run within `script_limits()`
unless given other limits.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec

from envs.runtime import untrusted_fs
from envs.runtime.limits import LimitBackend
from envs.runtime.sandbox import BWRAP_ENV

#: the exit status of `module_main_argv` when the module itself cannot be loaded (its own syntax, an import
#: of its own that fails): the evaluator is broken, whatever the state it was given
CANNOT_LOAD = 86
_MODULE_MAIN = """\
import importlib, runpy, sys
module = sys.argv[1]
sys.argv = [module, *sys.argv[2:]]
try:
    importlib.import_module(module)
except (ImportError, SyntaxError) as exc:
    print(f"cannot load {module}: {type(exc).__name__}: {exc}", file=sys.stderr)
    sys.exit(CANNOT_LOAD)
runpy.run_module(module, run_name="__main__", alter_sys=True)
""".replace("CANNOT_LOAD", str(CANNOT_LOAD))


def module_main_argv(python: str, module: str, args: list[str]) -> list[str]:
    """`python -m module *args`, except that a module that cannot be loaded exits with CANNOT_LOAD: it is
    imported first (its own top-level imports, before its main reads anything), then run as __main__.
    Why: an evaluator that cannot run is the fabric's failure and one that rejects what it reads is the
    policy's, and only the exit status tells them apart honestly: the words of its output can echo the
    agent's own files ("SyntaxError" in a report the evaluator prints)."""
    return [python, "-c", _MODULE_MAIN, module, *args]


#: the most one reply line may hold (LOCA's: an instruction, server configs, an evaluation's info)
MAX_REPLY_BYTES = 16 * 2**20
#: how much of a log a failure message quotes
TAIL_BYTES = 4000


class ProcessFailed(RuntimeError):
    """The process died, replied with something that is not one JSON object, or missed its deadline."""


def tail(path: Path | None, n: int = TAIL_BYTES) -> str:
    """The last `n` bytes of a log a sandboxed process wrote ("" when there is none, or it is not a
    regular file: untrusted_fs.read_tail)."""
    if path is None:
        return ""
    try:
        return untrusted_fs.read_tail(path, n).decode("utf-8", "replace")
    except OSError:
        return ""


#: the limits of the one-shot scripts this process runs; see script_limits
_SCRIPT_LIMITS: LimitBackend | None = None
_SCRIPT_LIMITS_LOCK = threading.Lock()
#: no file a script writes (its output log included) grows past this
SCRIPT_FILE_BYTES = 512 * 2**20
SCRIPT_PROCESSES = 256


def script_limits() -> LimitBackend:
    """This process's limits backend for one-shot scripts (Harbor's test.sh and solve.sh, benchmark
    evaluators), made on first use (a judge makes it before it forks the child that runs a script):
    each script gets its memory, SCRIPT_PROCESSES processes and SCRIPT_FILE_BYTES per file, in its own
    cgroups where the host has them."""
    global _SCRIPT_LIMITS
    with _SCRIPT_LIMITS_LOCK:
        if _SCRIPT_LIMITS is None:
            import atexit

            _SCRIPT_LIMITS = LimitBackend(2 * 2**30, SCRIPT_PROCESSES, file_bytes=SCRIPT_FILE_BYTES)
            atexit.register(_SCRIPT_LIMITS.close)
        return _SCRIPT_LIMITS


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
        err = untrusted_fs.open_log(log_file) if log_file is not None else subprocess.DEVNULL
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
                if not chunk:  # it closed its output: give it the grace period to exit, then kill it
                    self.close()
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


class ScriptRun(msgspec.Struct):
    exit_code: int | None
    timed_out: bool
    duration_s: float
    output_tail: str  # the last lines of stdout + stderr


def run_once(argv: list[str], *, timeout_s: float, log_file: Path, limits: LimitBackend | None = None,
             memory_bytes: int | None = None, name: str = "script") -> ScriptRun:
    """A sandboxed one-shot script (argv started with env=BWRAP_ENV), stdout and stderr to `log_file`,
    within fresh limits from `limits` (default script_limits()) with `memory_bytes`; at `timeout_s`
    killed, every process of its session and limits."""
    t0 = time.monotonic()
    sandbox_limits = (limits or script_limits()).create(f"{name}-{uuid.uuid4().hex[:12]}", memory_bytes)
    timed_out = False
    try:
        with untrusted_fs.open_log(log_file, append=False) as out:
            proc = subprocess.Popen(sandbox_limits.wrap(argv), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=BWRAP_ENV, start_new_session=True)
            try:
                code: int | None = proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                timed_out, code = True, None
                os.killpg(proc.pid, signal.SIGKILL)  # bwrap dies, and --die-with-parent takes its pid namespace
                proc.wait()
    finally:
        sandbox_limits.release()
    text = tail(log_file, 64 * 1024)
    return ScriptRun(exit_code=code, timed_out=timed_out, duration_s=time.monotonic() - t0,
                     output_tail="\n".join(text.splitlines()[-40:])[-4000:])
