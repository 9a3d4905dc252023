"""Task code that did not ship with ProgAgent, run in a child process with a deadline, in bubblewrap.

    runner = CodeRunner(timeout_s=60, limits=runtime.limits)
    tools = runner.probe(folder)            # import data.py, tools.py, verify.py; the tool names
    task = runner.task(load_task(folder))   # a Task whose build() and verify() run in the child
    task.build(root, "v0")                  # raises CodeTimeout / CandidateCodeError (with feedback)

Which code is that (envs/format/provenance.py): every task folder that is not one of the shipped library's
own, unmodified folders: model-written tasks during synthesis, and any library loaded from elsewhere
(`load_task` wraps such a folder in a SandboxedTask over `default_runner()`, so validate, train,
eval, filter and the judges all run it here, and serve its tools.py with the "sandboxed" transport).

Each call is one child (envs/format/task_child.py) that loads the task folder and does one thing. The
child gets `timeout_s` of wall-clock time; then it is killed with everything it started (its
process group, its cgroup, and with bubblewrap its pid namespace). In bubblewrap it has the
kernel sandbox's isolation (the flags of envs/runtime/sandbox.py: every namespace unshared, so no
network but its own `lo`; no capabilities; a cleared environment; dies with its parent) and sees
only /usr, the Python installation (read-only, task library folders under it hidden), the three
envs/ modules a task imports (read-only), the candidate folder (read-only, /task/<id>), for
`build` the output folder (read-write, /env/root), for `verify` the final and initial
environments (read-only, /env/final and /env/initial), and a private /tmp. The host's home
(beyond the Python installation), the repository, its tasks and other candidates are not there.
Memory and processes are limited by the runtime's LimitBackend when one is given.

Modes: "bwrap" (required), "process" (a plain child: the deadline, no isolation), "auto"
(bubblewrap when it works here, else "process" with a warning).

What comes back is bounded: the reply at MAX_REPLY bytes, the child's output at MAX_STDERR (its
last bytes), and a built environment is copied out of the child's folder as only a regular
db.sqlite and a workspace/ tree of folders and regular files (envs/runtime/untrusted_fs.py: no links, no
pipes, no sparse files, MAX_ENV_BYTES in all), so host code that reads it afterwards (the episode's
copy, the determinism check, SQLite) never follows what the task's data.py left there.

The candidate's tools.py is served to episodes by the task's MCP server, whose transport follows the
mode (`CodeRunner.tool_transport`, envs/format/task_env.py): with bubblewrap "sandboxed" (tools.py in a
tool host in the same kind of sandbox, seeing task.toml, tools.py and the episode's environment,
under the runtime's limits; the MCP server in the runtime forwards calls to it), in "process" mode
"inprocess" (served from the synthesis process, as before).
A SandboxedTask's `tool_names()` comes from the child, so with bubblewrap no code of the candidate
runs in the synthesis process.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from envs.format.library import Task, TaskLoadError
from envs.runtime import untrusted_fs
from envs.runtime.limits import LimitBackend, SandboxLimits
from envs.runtime.sandbox import BWRAP_ENV, TASK_CODE, Sandbox, launch_argv
from envs.runtime.scratch import temporary as temporary_folder
from envs.taskkit import Env

log = logging.getLogger(__name__)

MODES = ("auto", "bwrap", "process")
CHILD = Path(__file__).resolve().with_name("task_child.py")
#: what the child imports, bound read-only into the sandbox (files only: nothing else of the repository)
SOURCES = {"task_child.py": CHILD, **TASK_CODE}
IN_CODE = "/opt/progagent"
IN_TASK = "/task"
IN_ENV = "/env"
MAX_STDERR = 16_000
MAX_REPLY = 16 * 2**20
MAX_ENV_BYTES = 512 * 2**20
#: a built environment, a verification or a tool listing of a task that is not shipped
DEFAULT_TIMEOUT_S = 120.0


class CandidateCodeError(Exception):
    """The task's code failed in the child; `feedback` is what the model can act on (its traceback)."""

    def __init__(self, message: str, feedback: str = ""):
        super().__init__(message)
        self.feedback = feedback or message


class CodeTimeout(CandidateCodeError):
    """The task's code did not finish within the deadline and was killed."""


_REMOTE: dict[str, type[CandidateCodeError]] = {}


def _remote_error(type_name: str, message: str, feedback: str) -> CandidateCodeError:
    """The child's exception under its own type name (verdicts print `Type: message`, as in process)."""
    if not type_name.isidentifier():
        type_name = "CandidateCodeError"
    cls = _REMOTE.get(type_name)
    if cls is None:
        cls = _REMOTE[type_name] = type(type_name, (CandidateCodeError,), {"__module__": "candidate"})
    return cls(message, feedback)


def bwrap_works() -> bool:
    """Whether bubblewrap can start a sandbox with every namespace unshared on this host."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False
    try:
        argv = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--ro-bind", "/usr", "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--proc", "/proc", "--dev", "/dev", "true"]
        return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def sandbox_argv(ro: list[tuple[Path, str]], rw: list[tuple[Path, str]], scratch: Path) -> list[str]:
    """bubblewrap for one child: the kernel sandbox's flags, the Python installation, `ro` and `rw` binds
    (started through `launch_argv`, its options in `scratch`)."""
    box = Sandbox(chdir="/tmp").with_python()
    for rel, src in SOURCES.items():
        box.bind(src, f"{IN_CODE}/{rel}")
    for host, inside in ro:
        box.bind(host, inside)
    for host, inside in rw:
        box.bind(host, inside, writable=True)
    env = {"HOME": "/tmp", "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "USER": "sandbox"}
    return launch_argv(box.setenv(env), [sys.executable, f"{IN_CODE}/task_child.py"], scratch)


class CodeRunner:
    """Runs a candidate's data.py / verify.py / imports in children with a deadline (see module docstring)."""

    def __init__(self, timeout_s: float = 60.0, mode: str = "auto", limits: LimitBackend | None = None):
        if mode not in MODES:
            raise ValueError(f"unknown code sandbox mode {mode!r}; expected one of {', '.join(MODES)}")
        self.timeout_s = timeout_s
        self.limits = limits
        if mode == "auto":
            mode = "bwrap" if bwrap_works() else "process"
            if mode == "process":
                log.warning("bubblewrap is not usable here: model-written task code runs in a plain child process "
                            "(with its deadline, without isolation)")
        elif mode == "bwrap" and not bwrap_works():
            raise RuntimeError("code sandbox 'bwrap' requested but bubblewrap cannot start a sandbox here")
        self.mode = mode

    @property
    def tool_transport(self) -> str:
        """How a candidate's tools.py is served (envs/format/task_env.py): "sandboxed" with bubblewrap, else in process."""
        return "sandboxed" if self.mode == "bwrap" else "inprocess"

    def task(self, task: Task) -> SandboxedTask:
        return SandboxedTask(task, self)

    def probe(self, folder: Path) -> list[str]:
        """Import data.py, tools.py and verify.py in the child; the tools.py tool names (task.toml's order)."""
        return self.call(folder, "load", {}, label="importing data.py, tools.py and verify.py")["tools"]

    def call(self, folder: Path, op: str, args: dict[str, Any], *, label: str,
             ro: dict[str, Path] | None = None, rw: dict[str, Path] | None = None) -> Any:
        """Run `op` on the task folder in a child. `ro`/`rw` name the folders it may read/write (key →
        host path); the request's `key` entries become the paths the child sees them at."""
        folder = Path(folder).resolve()
        ro, rw = dict(ro or {}), dict(rw or {})
        scratch = None
        if self.mode == "bwrap":
            inside = {k: f"{IN_ENV}/{k}" for k in (*ro, *rw)}
            task_dir = f"{IN_TASK}/{folder.name}"
            scratch = temporary_folder("progagent-synth-")
            argv = sandbox_argv([(folder, task_dir), *((Path(p), inside[k]) for k, p in ro.items())],
                                [(Path(p), inside[k]) for k, p in rw.items()], Path(scratch.name))
            env = BWRAP_ENV
        else:
            inside = {k: str(Path(p)) for k, p in (*ro.items(), *rw.items())}
            task_dir = str(folder)
            argv = [sys.executable, str(CHILD)]
            env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
        request = {"op": op, "task_dir": task_dir, **args, **inside}
        limits: SandboxLimits | None = self.limits.create(f"synth-{uuid.uuid4().hex[:12]}") if self.limits else None
        try:
            if limits is not None:
                argv = limits.wrap(argv)
            reply, stderr, died = self._spawn(argv, env, request, limits)
            oom_killed = limits is not None and limits.oom_killed()
        finally:
            if limits is not None:
                limits.release()
            if scratch is not None:
                scratch.cleanup()
        if reply is None:
            lines = stderr.strip().splitlines()
            if died == 1 and len(lines) == 1 and lines[0].startswith("bwrap: "):  # the sandbox, not the task
                raise RuntimeError(f"bubblewrap could not start the code sandbox: {lines[0][:500]}")
            if died is None:
                raise CodeTimeout(f"{label} did not finish within {self.timeout_s:g} s (stopped: an endless loop, "
                                  f"a blocking call or far too much work)")
            tail = stderr.strip()[-1500:].replace(str(folder) + "/", "")
            oom = " (killed: over the memory limit)" if oom_killed else ""
            raise CandidateCodeError(f"{label}: the process ended with exit code {died}{oom} before finishing",
                                     f"{label}: the process ended with exit code {died}{oom} before finishing"
                                     + (f"; its last output:\n{tail}" if tail else ""))
        if not reply.get("ok"):
            raise _remote_error(str(reply.get("type")), str(reply.get("message", "")),
                                str(reply.get("traceback") or f"{reply.get('type')}: {reply.get('message')}"))
        return reply.get("result")

    def _spawn(self, argv: list[str], env: dict[str, str] | None, request: dict[str, Any],
               limits: SandboxLimits | None) -> tuple[dict[str, Any] | None, str, int | None]:
        """(reply or None, stderr tail, exit code when it ended without a reply; None: timed out)."""
        with tempfile.TemporaryFile("w+") as req_f:
            json.dump(request, req_f)
            req_f.seek(0)
            proc = subprocess.Popen(argv, stdin=req_f, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                    start_new_session=True)
            tail: list[bytes] = []
            head: list[bytes] = []
            readers = [threading.Thread(target=_drain, args=(proc.stderr, tail), daemon=True),
                       threading.Thread(target=_drain_head, args=(proc.stdout, head, MAX_REPLY + 1), daemon=True)]
            for reader in readers:
                reader.start()
            try:
                code = proc.wait(self.timeout_s)
            except subprocess.TimeoutExpired:
                code = None
            finally:
                _kill(proc, limits)
            for reader in readers:
                reader.join(2.0)
            stderr = b"".join(tail).decode("utf-8", "replace")
            text = b"".join(head)
            if len(text) > MAX_REPLY:
                return None, stderr + f"\n[the reply was longer than {MAX_REPLY:,} bytes]", code
        if code is None:
            return None, stderr, None
        try:
            reply = json.loads(text)
        except ValueError:
            return None, stderr, code
        return (reply if isinstance(reply, dict) else None), stderr, code


def _drain(stream: Any, tail: list[bytes]) -> None:
    """Read a pipe to its end, keeping only the last MAX_STDERR bytes."""
    size = 0
    for chunk in iter(lambda: stream.read1(65536), b""):
        tail.append(chunk)
        size += len(chunk)
        while size - len(tail[0]) > MAX_STDERR and len(tail) > 1:
            size -= len(tail.pop(0))
    stream.close()


def _drain_head(stream: Any, head: list[bytes], cap: int) -> None:
    """Read a pipe to its end, keeping only its first `cap` bytes (the rest is read and dropped, so a
    child that writes without end cannot fill the host's memory or disk, nor block)."""
    size = 0
    for chunk in iter(lambda: stream.read1(65536), b""):
        if size < cap:
            head.append(chunk[: cap - size])
            size += len(head[-1])
    stream.close()


def _kill(proc: subprocess.Popen, limits: SandboxLimits | None) -> None:
    """Kill the child and everything it started (its process group, its cgroup; bwrap takes its namespace)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if limits is not None:
        limits.kill_all()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        log.warning("code sandbox child %d did not end after SIGKILL", proc.pid)


class SandboxedTask(Task):
    """A task whose data.py build, verify(), tool listing and programs run through a CodeRunner; else as a Task.

    Its modules are never imported into this process while the runner sandboxes (`module` refuses):
    tools.py is imported here only when its MCP server is served in this process (the "inprocess"
    transport, `runner.tool_transport` in "process" mode); the "sandboxed" one serves it in bubblewrap."""

    def __init__(self, task: Task, runner: CodeRunner | None = None):
        super().__init__(task.dir, task.spec, task.provenance)
        self._runner = runner  # None: default_runner(), made when first needed (loading needs no bubblewrap)
        self._tool_names: list[str] | None = None

    @property
    def runner(self) -> CodeRunner:
        if self._runner is None:
            self._runner = default_runner()
        return self._runner

    @property
    def tool_transport(self) -> str:
        return self.runner.tool_transport

    def module(self, name: str) -> Any:
        if self.runner.mode == "bwrap":
            raise TaskLoadError(f"{self.dir / (name + '.py')}: this task did not ship with ProgAgent "
                                f"({self.provenance}): its code runs only in the sandbox, never in this process")
        return super().module(name)

    def tool_functions(self) -> dict[str, Any]:
        return {n: None for n in self.tool_names()} if self.runner.mode == "bwrap" else super().tool_functions()

    def tool_names(self) -> list[str]:
        """The tool names, from importing data.py, tools.py and verify.py in the child (checked against task.toml)."""
        if self._tool_names is None:
            self._tool_names = list(self.runner.probe(self.dir))
        return list(self._tool_names)

    def build(self, root: str | Path, scale: str) -> Env:
        """data.py in the child, into a folder of its own; then only a regular db.sqlite and the folders
        and regular files of its workspace/ are copied into `root` (module docstring)."""
        root = Path(root)
        self.scale(scale)  # an unknown scale is our error, not the task's
        (root / "workspace").mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
        try:
            (scratch / "workspace").mkdir()
            self.runner.call(self.dir, "build", {"scale": scale}, label=f"build({scale})", rw={"root": scratch})
            for p in root.glob("db.sqlite*"):
                p.unlink()
            untrusted_fs.clear_folder(root / "workspace")
            try:
                size = untrusted_fs.copy_file(scratch / "db.sqlite", root, "db.sqlite", max_bytes=MAX_ENV_BYTES)
                untrusted_fs.copy_tree(scratch / "workspace", root, "workspace", max_bytes=MAX_ENV_BYTES - size)
            except untrusted_fs.PathRefused as exc:
                raise CandidateCodeError(f"build({scale}): the environment data.py wrote cannot be used: {exc}",
                                         f"build({scale}): data.py must write a regular file db.sqlite and only "
                                         f"folders and regular files under workspace/ (no links, pipes or sparse "
                                         f"files, at most {MAX_ENV_BYTES:,} bytes): {exc}") from None
        finally:
            untrusted_fs.remove_tree(scratch)
        return Env(root)

    def run_program(self, root: Path, program: str) -> tuple[str, str, list[dict[str, Any]]]:
        """The program against the candidate's tools in the child, `root` its only writable folder
        (the program's prints and call log stay there: only the final answer comes back)."""
        result = self.runner.call(self.dir, "run_program", {"program": program}, label="a wrong solution",
                                  rw={"root": Path(root)})
        return str(result["answer"]), "", []

    def verify(self, final_root: Path, initial_root: Path, answer: str, scale: str) -> dict[str, bool]:
        result = self.runner.call(self.dir, "verify", {"answer": answer or "", "scale": scale}, label="verify()",
                                  ro={"final": Path(final_root), "initial": Path(initial_root)})
        if not isinstance(result, dict) or not result:
            raise CandidateCodeError("verify() must return a non-empty dict of criteria")
        return {str(k): bool(v) for k, v in result.items()}


_DEFAULT: CodeRunner | None = None
_DEFAULT_LOCK = threading.Lock()


def default_runner() -> CodeRunner:
    """This process's runner for tasks that did not ship (one per process, created on first use):
    bubblewrap required, 2 GiB and 256 processes per child (its own cgroups), DEFAULT_TIMEOUT_S.
    Without bubblewrap such a task cannot run here at all: the error says so."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            import atexit

            limits = LimitBackend(2 * 2**30, 256)
            atexit.register(limits.close)
            try:
                _DEFAULT = CodeRunner(DEFAULT_TIMEOUT_S, "bwrap", limits)
            except RuntimeError as exc:
                raise RuntimeError(f"{exc}: tasks that did not ship with ProgAgent run only in bubblewrap "
                                   f"(install it: scripts/install.sh)") from None
        return _DEFAULT
