"""Attacks on the host's disk and on the host steps that read what a program left: filling the
workspace, huge single files, sparse files, deep trees, and a thread left running to swap files for
FIFOs while the final state is read."""

import asyncio
import io
import os
import shutil
import tarfile
import time
from pathlib import Path

import pytest

from envs.episode_env import StateRefused
from envs.format.library import get_task
from envs.format.task_env import (
    EnvironmentCache,
    judge_episode,
    open_task_episode,
    restore_state,
    snapshot_state,
)
from envs.runtime import untrusted_fs
from envs.runtime.episode import Runtime
from schema.config import RuntimeConfig

MiB = 2**20


def allocated(path: Path) -> int:
    return untrusted_fs.disk_usage([path], max_bytes=1 << 62, max_entries=10**7, max_depth=10_000).bytes


@pytest.fixture
async def rt():
    runtime = Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=60, disk_bytes=64 * MiB, disk_entries=2_000,
                                    disk_depth=2_000, disk_check_s=0.1))
    await runtime.start()
    yield runtime
    await runtime.close()


FILL = '''
import os
written = 0
try:
    for i in range(3000):  # up to 3 GiB, 1 MiB at a time, in many files
        with open(f"/workspace/fill-{i}.bin", "wb") as f:
            f.write(os.urandom(1 << 20))
        written += 1
except OSError as e:
    print("stopped by", type(e).__name__)
print("wrote", written)
'''


async def test_filling_the_workspace_ends_the_episode_and_gives_the_disk_back(rt):
    ep = await rt.open_episode()
    try:
        peak = 0

        async def sample():
            nonlocal peak
            while True:
                peak = max(peak, await asyncio.to_thread(allocated, ep.slot.dir))
                await asyncio.sleep(0.05)

        sampler = asyncio.create_task(sample())
        r = await ep.run_program(FILL)
        sampler.cancel()
        assert r.ended and r.is_error and "this episode has ended: its files passed the disk limit" in r.text, r.text
        assert "wrote 3000" not in r.text
        assert peak < 64 * MiB + 512 * MiB, peak  # the limit, plus what the program writes in a watchdog interval
        assert allocated(ep.final_state().workspace) < MiB  # emptied at once
        later = await ep.run_program("print('MORE-OUTPUT')")
        assert later.is_error and later.ended and "MORE-OUTPUT" not in later.text
        direct = await ep.call_tool("anything", {})
        assert direct.is_error and "this episode has ended" in direct.text
    finally:
        await ep.close()


BACKGROUND = '''
import os, threading
def fill():
    for i in range(3000):  # 1 MiB at a time, after the program has returned
        with open(f"/workspace/bg-{i}.bin", "wb") as f:
            f.write(os.urandom(1 << 20))
threading.Thread(target=fill, daemon=True).start()
print("started")
'''


async def test_a_writer_left_running_between_programs_is_counted(rt):
    """A thread left in the kernel keeps writing while the model writes its next turn (no program
    runs). The disk limit is watched over the episode's lifetime, not only while a program runs: the
    episode ends and its workspace is emptied before any next program."""
    ep = await rt.open_episode()
    try:
        r = await ep.run_program(BACKGROUND)
        assert "started" in r.text and not r.ended
        peak = 0
        for _ in range(200):  # the model "thinking" for up to 20 s
            peak = max(peak, await asyncio.to_thread(allocated, ep.slot.dir))
            if ep.ended:
                break
            await asyncio.sleep(0.1)
        assert ep.ended, "the background writer was not noticed between programs"
        assert peak < 64 * MiB + 512 * MiB, peak
        for _ in range(50):  # the ending (halt, then clear) runs as its own task
            if allocated(ep.final_state().workspace) < MiB:
                break
            await asyncio.sleep(0.1)
        assert allocated(ep.final_state().workspace) < MiB
        later = await ep.run_program("print('MORE-OUTPUT')")
        assert later.ended and "MORE-OUTPUT" not in later.text
    finally:
        await ep.close()


async def test_no_single_file_grows_past_the_disk_limit(rt):
    async with await rt.open_episode() as ep:
        r = await ep.run_program(
            "import errno\n"
            "try:\n"
            "    with open('/workspace/huge.bin', 'wb') as f:\n"
            "        for _ in range(100):\n"
            "            f.write(b'x' * (1 << 20))\n"
            "except OSError as e:\n"
            "    print(errno.errorcode[e.errno])\n")
        assert "EFBIG" in r.text, r.text
        assert os.path.getsize(Path(ep.final_state().workspace) / "huge.bin") <= 64 * MiB


DEEP = '''
import os
os.chdir("/workspace")
for i in range(1100):
    os.mkdir("d")
    os.chdir("d")
with open("big.bin", "wb") as f:
    f.write(b"y" * (16 << 20))
print("deep", len(os.getcwd()))
'''


async def test_a_deep_tree_is_refused_by_the_snapshot_and_removed_by_close(rt):
    ep = await rt.open_episode()
    r = await ep.run_program(DEEP)
    assert r.text.startswith("deep"), r.text
    Path(ep.final_state().env_root, "db.sqlite").write_bytes(b"")
    await ep.stop()
    with pytest.raises(StateRefused, match="deeper than"):
        snapshot_state(ep.final_state().env_root)
    slot = ep.slot.dir
    await ep.close()
    assert not slot.exists()


async def test_sparse_files_are_refused_unread():
    rt = Runtime(RuntimeConfig(warm_pool=0, disk_bytes=2048 * MiB))  # room for one 1.5 GiB (sparse) file
    ep = await rt.open_episode()
    try:
        r = await ep.run_program("with open('/workspace/sparse.bin', 'wb') as f:\n    f.truncate(1536 << 20)\n"
                                 "print('ok')")
        assert r.text == "ok" and not r.ended  # allocated blocks count: it costs no disk
        Path(ep.final_state().env_root, "db.sqlite").write_bytes(b"")
        await ep.stop()
        t0 = time.perf_counter()
        with pytest.raises(StateRefused, match="sparse"):
            snapshot_state(ep.final_state().env_root)
        assert time.perf_counter() - t0 < 5  # refused, not read (1.5 GiB)
    finally:
        await ep.close()
        await rt.close()


SWAPPER = '''
import os, threading, time
os.makedirs("/workspace/out", exist_ok=True)
def churn():
    i = 0
    while True:
        i += 1
        name = f"/workspace/out/report-{i % 5}.csv"
        try:
            os.unlink(name)
        except OSError:
            pass
        if i % 2:
            os.mkfifo(name)
        else:
            open(name, "w").write("id,amount\\n")
threading.Thread(target=churn, daemon=True).start()
time.sleep(0.2)
final_answer = "ANSWER: 0"
print("left a thread running")
'''


async def test_a_thread_left_running_cannot_stall_or_change_the_final_state(rt, tmp_path):
    cache = EnvironmentCache(tmp_path / "cache")
    task = get_task("logistics_carrier_invoice_audit")  # its verifier reads a file the program writes
    ep = await open_task_episode(rt, task, "v0", cache)
    try:
        r = await ep.run_program(SWAPPER)
        assert r.text == "left a thread running"
        t0 = time.perf_counter()
        verdict = await judge_episode(ep, task, "v0", "ANSWER: 0", cache, timeout_s=30)
        assert time.perf_counter() - t0 < 20 and verdict.reward == 0.0 and verdict.error is None, verdict
        before = sorted(os.listdir(Path(ep.final_state().workspace) / "out"))
        await asyncio.sleep(0.3)
        assert sorted(os.listdir(Path(ep.final_state().workspace) / "out")) == before  # nothing runs any more
        try:
            snapshot_state(ep.final_state().env_root)
        except StateRefused as exc:
            assert "pipe" in str(exc)
    finally:
        await ep.close()


def test_a_shipped_state_restores_only_regular_files_and_folders(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("workspace/link")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/shadow"
        tar.addfile(info)
    with pytest.raises(StateRefused, match="link"):
        restore_state(buf.getvalue(), tmp_path / "restored")
    assert not (tmp_path / "restored" / "workspace" / "link").exists()


def test_snapshots_are_bounded(tmp_path, monkeypatch):
    root = tmp_path / "env"
    (root / "workspace").mkdir(parents=True)
    (root / "db.sqlite").write_bytes(b"d" * 1000)
    (root / "workspace" / "a.bin").write_bytes(os.urandom(3 * MiB))
    with pytest.raises(StateRefused, match="more than 2,097,152 bytes"):
        snapshot_state(root, max_bytes=2 * MiB)
    state = snapshot_state(root)
    assert (restore_state(state, tmp_path / "back") / "workspace" / "a.bin").stat().st_size == 3 * MiB
    shutil.rmtree(tmp_path / "back")


async def test_a_folder_bound_read_write_counts_against_the_disk_limit(rt, tmp_path):
    """An episode's own bind (a benchmark's workspace at its host path) is host disk too."""
    data = tmp_path / "bound"
    data.mkdir()
    ep = await rt.open_episode(binds=[f"{data}:rw"])
    try:
        r = await ep.run_program(FILL.replace("range(3000)", "range(400)").replace("/workspace", str(data)))
        assert r.ended and "this episode has ended: its files passed the disk limit" in r.text, r.text
        assert "wrote 400" not in r.text
    finally:
        await ep.close()
    assert allocated(data) < 64 * MiB + 512 * MiB  # a caller's folder is kept, but it stopped growing
