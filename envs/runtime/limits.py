"""Resource limits for one sandbox: cgroup v2 where delegated, cgroup v1 where the host has it,
rlimits as the last resort. The mode in effect is reported (`LimitBackend.mode`).

Why all three: GPU nodes usually run cgroup v2 with a delegated subtree; containers like our CI
machine have v1 `memory` and `pids` hierarchies and no v2 controllers; some hosts have neither
writable. rlimits are weak (`RLIMIT_NPROC` is not enforced for a real uid 0 and `RLIMIT_AS` counts
address space, not memory), which is why they are the fallback only.

A process joins its cgroup *before* it execs bubblewrap (a tiny `sh` prologue), so every process
of the sandbox, including the first fork, is counted and can be killed as a group.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import time
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _own_cgroup_v1(controller: str) -> Path | None:
    """This process's cgroup directory in a v1 hierarchy, when that hierarchy is mounted."""
    mount = CGROUP_ROOT / controller
    if not (mount / "cgroup.procs").exists():
        return None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            own = mount / path.lstrip("/")
            return own if own.is_dir() else mount
    return mount


def _v2_mount() -> Path | None:
    for cand in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        if (cand / "cgroup.controllers").exists():
            return cand
    return None


class SandboxLimits:
    """The limits of one sandbox: how to start a process inside them, and how to end them."""

    def __init__(self, backend: LimitBackend, dirs: list[Path], memory_bytes: int | None = None):
        self.backend = backend
        self.dirs = dirs
        self.memory_bytes = memory_bytes or backend.memory_bytes

    @property
    def mode(self) -> str:
        return self.backend.mode

    def wrap(self, argv: list[str]) -> list[str]:
        """argv that runs `argv` inside these limits (the file size limit, RLIMIT_FSIZE, in every mode)."""
        b = self.backend
        fsize = [f"--fsize={b.file_bytes}"] if b.file_bytes else []
        if b.mode == "rlimit":
            return ["prlimit", f"--as={self.memory_bytes}", f"--nproc={b.max_processes}", *fsize, "--", *argv] \
                if b.prlimit else argv
        if fsize and b.prlimit:
            argv = ["prlimit", *fsize, "--", *argv]
        joins = "; ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in self.dirs)
        return ["/bin/sh", "-c", f'{joins}; exec "$@"', "sh", *argv]

    def pids(self) -> list[int]:
        found: set[int] = set()
        for d in self.dirs:
            try:
                found.update(int(x) for x in (d / "cgroup.procs").read_text().split())
            except (FileNotFoundError, ProcessLookupError, ValueError):
                pass
        return sorted(found)

    def memory_peak(self) -> int | None:
        for d in self.dirs:
            for name in ("memory.max_usage_in_bytes", "memory.peak"):
                if (d / name).exists():
                    try:
                        return int((d / name).read_text().split()[0])
                    except (OSError, ValueError):
                        return None
        return None

    def oom_killed(self) -> bool:
        """Whether the memory limit was hit (an OOM kill happened) since the sandbox started."""
        for d in self.dirs:
            try:
                if (d / "memory.events").exists():
                    events = dict(line.split() for line in (d / "memory.events").read_text().splitlines())
                    return int(events.get("oom_kill", 0)) > 0
                if (d / "memory.failcnt").exists() and (d / "memory.oom_control").exists():
                    ctl = dict(line.split() for line in (d / "memory.oom_control").read_text().splitlines())
                    if "oom_kill" in ctl:
                        return int(ctl["oom_kill"]) > 0
                    return int((d / "memory.failcnt").read_text()) > 0
            except (OSError, ValueError):
                return False
        return False

    def kill_all(self) -> None:
        """Kill every process left in the sandbox's cgroups (no-op under rlimits)."""
        for d in self.dirs:
            kill_file = d / "cgroup.kill"
            if kill_file.exists():
                try:
                    kill_file.write_text("1")
                except OSError:
                    pass
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
        log.warning("processes survive in %s: %s", self.dirs, self.pids())

    def release(self) -> None:
        self.kill_all()
        for d in self.dirs:
            for _ in range(20):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


class LimitBackend:
    """Chooses how limits are enforced on this host and creates per-sandbox limits."""

    def __init__(self, memory_bytes: int, max_processes: int, mode: str = "auto", file_bytes: int | None = None):
        # a parent cgroup of its own: several backends in one process (a runtime's, the task code
        # runner's) must not release each other's sandboxes
        self.name = f"progagent-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.file_bytes = file_bytes  # RLIMIT_FSIZE: no file a sandboxed process writes grows past it
        self.memory_bytes = memory_bytes
        self.max_processes = max_processes
        self.prlimit = os.path.exists("/usr/bin/prlimit") or os.path.exists("/bin/prlimit")
        self.parents: list[Path] = []
        self.mode = self._choose(mode)

    def _choose(self, wanted: str) -> str:
        order = ["cgroup2", "cgroup1", "rlimit"] if wanted == "auto" else [wanted]
        for mode in order:
            try:
                if mode == "cgroup2" and self._setup_v2():
                    return mode
                if mode == "cgroup1" and self._setup_v1():
                    return mode
                if mode == "rlimit":
                    return mode
            except OSError as exc:
                log.info("limits: %s unavailable: %s", mode, exc)
        raise RuntimeError(f"resource limits mode {wanted!r} is not available on this host")

    def _setup_v2(self) -> bool:
        mount = _v2_mount()
        if mount is None:
            return False
        own = "/"
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                own = line[3:]
        base = mount / own.lstrip("/")
        if not {"memory", "pids"} <= set((base / "cgroup.controllers").read_text().split()):
            return False
        parent = base / self.name
        parent.mkdir(exist_ok=True)
        try:
            (base / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError:
            # "no internal processes": move ourselves into a leaf, then delegate controllers
            leaf = base / f"progagent-supervisor-{os.getpid()}"
            leaf.mkdir(exist_ok=True)
            (leaf / "cgroup.procs").write_text(str(os.getpid()))
            (base / "cgroup.subtree_control").write_text("+memory +pids")
        (parent / "cgroup.subtree_control").write_text("+memory +pids")
        self.parents = [parent]
        return True

    def _setup_v1(self) -> bool:
        parents = []
        for controller in ("memory", "pids"):
            own = _own_cgroup_v1(controller)
            if own is None:
                return False
            parent = own / self.name
            parent.mkdir(exist_ok=True)
            parents.append(parent)
        self.parents = parents
        return True

    def create(self, name: str | None = None, memory_bytes: int | None = None) -> SandboxLimits:
        """Fresh limits for one sandbox: the backend's, or `memory_bytes` of memory instead."""
        name = name or uuid.uuid4().hex[:12]
        memory_bytes = memory_bytes or self.memory_bytes
        if self.mode == "rlimit":
            return SandboxLimits(self, [], memory_bytes)
        dirs = []
        for parent in self.parents:
            d = parent / name
            d.mkdir(exist_ok=True)
            dirs.append(d)
        try:
            if self.mode == "cgroup2":
                (dirs[0] / "memory.max").write_text(str(memory_bytes))
                if (dirs[0] / "memory.swap.max").exists():
                    (dirs[0] / "memory.swap.max").write_text("0")
                (dirs[0] / "pids.max").write_text(str(self.max_processes))
            else:
                mem, pids = dirs
                (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
                if (mem / "memory.memsw.limit_in_bytes").exists():
                    try:
                        (mem / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
                    except OSError:
                        pass
                (pids / "pids.max").write_text(str(self.max_processes))
        except OSError:
            SandboxLimits(self, dirs).release()
            raise
        return SandboxLimits(self, dirs, memory_bytes)

    def close(self) -> None:
        for parent in self.parents:
            for child in parent.iterdir() if parent.exists() else []:
                if child.is_dir():
                    SandboxLimits(self, [child]).release()
            try:
                parent.rmdir()
            except OSError:
                pass
