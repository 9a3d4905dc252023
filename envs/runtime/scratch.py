"""Host-side scratch folders of one process, reclaimed once that process is gone.

    folder = scratch.make("progagent-rt-")    # /tmp/progagent-rt-<pid>.<start>-<random>/

A process that is killed (a Ray actor ended by ray.kill or a node's shutdown, a worker killed for
memory) runs no atexit handler and no finalizer, so the folders it made under /tmp stayed: a day of
test runs here left about 3,000 (runtimes, judges' caches, system-call filters, environment caches).
Each folder's name now carries its owner's pid and start time (from /proc: a reused pid does not
match), and making one first removes the folders of the same prefix whose owner is no longer
running. Removal is untrusted_fs.remove_tree (links not followed: what a sandbox wrote there is
model-made), and only folders of this user that are plain folders are touched. A normal exit still
removes the process's own folders at once (atexit), as before.

Short-lived folders (a judge's restored state, a synthesis child's scratch, a Harbor script's) are
`temporary(prefix)` (a TemporaryDirectory) or `folder(prefix)` (an episode's, removed at its close),
inside one scratch folder of this process, so a process
killed in the middle of one leaves nothing the next process does not reclaim (each test run had left
three or four under /tmp: the env workers and judges that chaos tests kill).
"""

from __future__ import annotations

import atexit
import os
import re
import stat
import tempfile
import threading
from pathlib import Path

_NAME = re.compile(r"(\d+)\.(\d+)-")


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/<pid>/stat field 22), None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        return int(raw[raw.rindex(")") + 2:].split()[19])
    except (ValueError, IndexError):
        return None


def _owner_alive(name: str, prefix: str) -> bool:
    m = _NAME.match(name[len(prefix):])
    if m is None:
        return True  # not a name this module made: left alone
    return _start_time(int(m.group(1))) == int(m.group(2))


def sweep(prefix: str, base: str | Path | None = None) -> int:
    """Remove `prefix` folders under `base` (the temp folder) whose owner is gone; how many."""
    from envs.runtime import untrusted_fs

    base = Path(base or tempfile.gettempdir())
    removed = 0
    try:
        names = [n for n in os.listdir(base) if n.startswith(prefix)]
    except OSError:
        return 0
    for name in names:
        try:
            st = os.lstat(base / name)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or _owner_alive(name, prefix):
            continue
        try:
            untrusted_fs.remove_tree(base / name)
            removed += 1
        except OSError:
            continue  # another process is removing it too, or it is not ours to remove
    return removed


def make(prefix: str, base: str | Path | None = None) -> Path:
    """A new 0700 folder `<prefix><pid>.<start>-<random>` under `base` (module docstring)."""
    sweep(prefix, base)
    pid = os.getpid()
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{pid}.{_start_time(pid) or 0}-", dir=base))
    atexit.register(_remove, folder)
    return folder


_own: dict[int, Path] = {}  # pid -> this process's folder for `temporary` (a forked child makes its own)
_own_lock = threading.Lock()  # judges and validation make temporaries from several threads at once


def _fresh_lock() -> None:
    """A forked child (a judge's verifier child) may have been forked while another thread held the lock."""
    global _own_lock
    _own_lock = threading.Lock()


os.register_at_fork(after_in_child=_fresh_lock)


def _own_folder() -> Path:
    pid = os.getpid()
    with _own_lock:
        if pid not in _own or not _own[pid].is_dir():
            _own[pid] = make("progagent-tmp-")
        return _own[pid]


def temporary(prefix: str) -> tempfile.TemporaryDirectory:
    """A TemporaryDirectory (use it with `with`) inside this process's `progagent-tmp-` scratch folder."""
    return tempfile.TemporaryDirectory(prefix=prefix, dir=_own_folder())


def folder(prefix: str) -> Path:
    """A new 0700 folder inside this process's `progagent-tmp-` scratch folder, for one the caller removes
    itself when done (an episode's, at its close): reclaimed with the process's folder if it is killed first."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=_own_folder()))


def _remove(folder: Path) -> None:
    from envs.runtime import untrusted_fs

    try:
        untrusted_fs.remove_tree(folder)
    except OSError:
        pass
