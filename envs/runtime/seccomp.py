"""The system calls every sandbox is denied: those that take a kernel object charged to the host's user.

A sandbox runs as uid 1000 of its own user namespace, but that namespace belongs to the host user that
started bubblewrap (root, here), and the kernel charges per-user objects to the namespace's owner on
the host: a program that takes all 128 inotify instances of its user takes them from the host and
from every other sandbox (the host's own `inotify_init1` then fails with EMFILE). The per-namespace
limits in /proc/sys/user only cap one sandbox, and N sandboxes at a cap c still exhaust the host's
128 once N x c passes it, so the objects no sandboxed program needs are refused outright:

- inotify_init, inotify_init1, fanotify_init: EMFILE, the error of a limit that is reached (software
  that watches files falls back or reports it; nothing the runtime runs needs it);
- add_key, request_key, keyctl: EPERM (the kernel keyrings: the host user's key quota; Docker's default
  profile refuses them too).

The filter is libseccomp's (through pyseccomp): it checks the architecture, so a 32-bit or x32 system
call number cannot reach the same call by another number (a foreign architecture's call kills the
process). It is
made once per process, written to a 0600 file in a folder no sandbox binds, and every bubblewrap
launch loads it (`--seccomp`, envs/runtime/sandbox.launch_argv); it applies to the sandboxed command
and everything it starts, and cannot be removed from inside.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

from envs.runtime import scratch

#: system call -> the errno it fails with inside every sandbox (module docstring)
DENIED = {
    "inotify_init": errno.EMFILE,
    "inotify_init1": errno.EMFILE,
    "fanotify_init": errno.EMFILE,
    "add_key": errno.EPERM,
    "request_key": errno.EPERM,
    "keyctl": errno.EPERM,
}

_lock = threading.Lock()
_program: Path | None = None


def program() -> Path:
    """The BPF program's file (made on first use in this process)."""
    global _program
    with _lock:
        if _program is None or not _program.exists():
            _program = _build()
        return _program


def _build() -> Path:
    try:
        import pyseccomp as sc
    except (ImportError, OSError, RuntimeError) as exc:  # libseccomp.so.2 itself is missing
        raise RuntimeError(f"the sandbox's system call filter needs pyseccomp and libseccomp2 ({exc}); "
                           "run scripts/install.sh") from None
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    # a call by another architecture's numbers (i386, x32) ends the whole process, never just its
    # thread (a kernel whose main thread vanished would hang until its program's deadline)
    f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    for name, code in DENIED.items():
        try:
            f.add_rule(sc.ERRNO(code), name)
        except (RuntimeError, ValueError, OSError):  # a call this architecture does not have (inotify_init on arm64)
            continue
    folder = scratch.make("progagent-seccomp-")  # 0700, under the host's /tmp: no sandbox sees it
    path = folder / f"filter-{os.getpid()}.bpf"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out:
        f.export_bpf(out)
    return path
