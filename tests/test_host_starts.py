"""Kernel starts across processes of one host queue for the host's slots (envs/runtime/host_starts.py):
many runtimes started together on one node all missed their 30 s start deadline at once."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envs.runtime.host_starts import host_start, slot_folder

HOLD = """
import asyncio, sys, time
from pathlib import Path
from envs.runtime.host_starts import host_start
async def main():
    async with host_start(2, Path(sys.argv[1])):
        print("held", time.time(), flush=True)
        await asyncio.sleep(float(sys.argv[2]))
asyncio.run(main())
"""


def _holder(folder: Path, seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOLD, str(folder), str(seconds)], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])


def test_at_most_n_starts_hold_slots_at_once_across_processes_and_the_rest_queue(tmp_path):
    procs = [_holder(tmp_path, 1.5) for _ in range(4)]
    held = sorted(float(p.communicate(timeout=60)[0].split()[1]) for p in procs)
    assert all(p.returncode == 0 for p in procs)
    # two at once, the other two after a holder let go (1.5 s later, less the processes' start-up skew)
    assert held[2] - held[0] > 1.0 and held[3] - held[1] > 1.0


def test_a_killed_holder_frees_its_slot(tmp_path):
    first, second = _holder(tmp_path, 600), _holder(tmp_path, 600)
    try:
        for p in (first, second):
            assert p.stdout is not None and p.stdout.readline().startswith("held")
        os.kill(first.pid, 9)
        first.wait(10)

        async def take() -> float:
            t0 = time.monotonic()
            async with host_start(2, tmp_path):
                return time.monotonic() - t0

        assert asyncio.run(asyncio.wait_for(take(), 10)) < 5
    finally:
        for p in (first, second):
            p.kill()
            p.wait(10)


def test_another_users_or_a_linked_slot_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path))
    (tmp_path / f"progagent-starts-{os.getuid()}").symlink_to(tmp_path)
    with pytest.raises(RuntimeError, match="not a folder of this user's alone"):
        slot_folder()
