"""Which limits are in effect, and the rlimit fallback working on its own."""

import os
from pathlib import Path

import pytest

from envs.runtime.episode import Runtime
from envs.runtime.limits import LimitBackend
from schema.config import RuntimeConfig


def test_auto_mode_prefers_cgroups_where_the_host_has_them():
    backend = LimitBackend(2 << 30, 256)
    try:
        assert backend.mode in {"cgroup2", "cgroup1", "rlimit"}
        v1 = Path("/sys/fs/cgroup/memory/cgroup.procs").exists() and Path("/sys/fs/cgroup/pids/cgroup.procs").exists()
        if os.getuid() == 0 and v1 and backend.mode != "cgroup2":
            assert backend.mode == "cgroup1"
        limits = backend.create("probe")
        if backend.mode == "cgroup1":
            mem, pids = limits.dirs
            assert (mem / "memory.limit_in_bytes").read_text().strip() == str(2 << 30)
            assert (pids / "pids.max").read_text().strip() == "256"
        limits.release()
        assert all(not d.exists() for d in limits.dirs)
    finally:
        backend.close()


def test_unavailable_mode_is_a_clear_error():
    wanted = "cgroup2" if not Path("/sys/fs/cgroup/cgroup.controllers").exists() else None
    if wanted is None:
        pytest.skip("this host has cgroup v2 at the root")
    try:
        LimitBackend(1 << 30, 64, mode=wanted)
    except RuntimeError as exc:
        assert "'cgroup2' is not available on this host" in str(exc)
    else:  # a hybrid host may delegate v2 memory+pids; then the mode is simply available
        pass


async def test_rlimit_fallback_contains_a_memory_bomb():
    async with Runtime(RuntimeConfig(warm_pool=0, limits="rlimit", program_timeout_s=30)) as rt:
        assert rt.limits_mode == "rlimit"
        async with await rt.open_episode() as ep:
            r = await ep.run_program("x = bytearray(3 * 1024**3)\nprint('allocated', 'it')")
            assert "MemoryError" in r.text and "allocated it" not in r.text
            assert (await ep.run_program("print('alive')")).text == "alive"
