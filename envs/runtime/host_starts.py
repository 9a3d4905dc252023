"""Kernel starts across every process of this host: at most `slots()` at once, the rest queue.

    async with host_start():       # then start the kernel: its start deadline counts from here
        ...

A kernel's start is CPU-bound (a fresh interpreter importing IPython in a fresh sandbox). Each
runtime paces its own starts (envs/runtime/episode.KERNEL_STARTS_AT_ONCE), but one node runs many
runtimes: env workers, judges' and host frameworks' workers, simulated raylets. Started together they
share the CPUs, and every start misses its deadline at once ("not ready after 30 s"), where queued
each is done in about a second. So a start first takes one of the host's slots: lock files in a
folder of this user's, held with flock, which the kernel releases when the holder's process ends
however it ends (a killed env worker frees its slot), and its own deadline counts from then.

The folder is this user's own (mode 0700, checked to be a folder this user owns, not a link), in the
host's temporary folder, which no sandbox sees (each has a private /tmp).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import random
import stat
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

#: how often a queued start tries the slots again
POLL_S = 0.05


def slots() -> int:
    """Kernel starts at once on this host: the CPUs this process may run on (at least 2)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 2
    return max(2, cpus)


def slot_folder() -> Path:
    """This user's folder of start slots, made 0700 when missing; a RuntimeError when the path is a link,
    not a folder, or another user's (someone else's folder could hold every slot forever)."""
    folder = Path(tempfile.gettempdir()) / f"progagent-starts-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise RuntimeError(f"{folder} is not a folder of this user's alone: remove it (the kernels' start slots)")
    return folder


def _try_slot(folder: Path, n: int) -> int | None:
    """A held slot's descriptor, or None when all `n` are held."""
    for i in random.sample(range(n), n):  # any free one: no slot is everyone's first
        fd = os.open(folder / f"slot-{i}", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            os.close(fd)
    return None


@contextlib.asynccontextmanager
async def host_start(n: int | None = None, folder: Path | None = None) -> AsyncIterator[None]:
    """Hold one of the host's `n` start slots (default `slots()`) for the body; queued while none is free."""
    n = n or slots()
    folder = folder or slot_folder()
    while (fd := _try_slot(folder, n)) is None:
        await asyncio.sleep(POLL_S * (1 + random.random()))
    try:
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock
