"""Attacks on what the runtime does again after it first checked it: kernel restarts, disk checks,
logs, binds, and the counters it reports (issue 26, second containment round).

The setting of the first two: a benchmark's tool server that runs model-chosen commands (LOCA's
`run_command`, Toolathlon's `python_execute`) lets a program leave a process behind that can write
the folder holding the kernel's workspace. It swaps the workspace for a link to a host folder, then
kills its own kernel: a restart that binds the workspace by path would bind the host folder. Here
the test plays that process (it is on the host, with the same power over that folder).
"""

import asyncio
import ctypes
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from envs.runtime.episode import Runtime
from envs.runtime.sandbox import check_binds
from envs.runtime.upstream import UpstreamSpec
from schema.config import RuntimeConfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
async def rt(tmp_path):
    runtime = Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=20, interrupt_grace_s=2),
                      root=tmp_path / "rt")
    await runtime.start()
    yield runtime
    await runtime.close()


def benchmark_like(rt: Runtime, tmp_path: Path) -> tuple[Path, Path]:
    """A workspace inside a folder something other than the kernel can write (a benchmark's state
    folder), and a host folder with a secret the attack wants to reach."""
    state = rt.env_folder("attack") / "state"
    ws = state / "agent_workspace"
    ws.mkdir(parents=True)
    (ws / "mine.txt").write_text("the episode's own file")
    secret = tmp_path / "host-secret"
    secret.mkdir()
    (secret / "key.txt").write_text("HOST SECRET")
    return ws, secret


async def test_a_restart_binds_the_workspace_that_was_checked_not_what_the_path_names_now(rt, tmp_path):
    ws, secret = benchmark_like(rt, tmp_path)
    ep = await rt.open_episode([], workspace=ws, binds=[f"{ws}:rw"])
    try:
        for attempt in range(20):  # the attack reported it within ~20 restarts
            moved = ws.with_name(f"moved-{attempt}")
            os.rename(ws, moved)
            ws.symlink_to(secret)
            r = await ep.run_program("import os; os._exit(1)")
            assert r.is_error
            r = await ep.run_program(
                "import os\n"
                f"print(sorted(os.listdir('/workspace')), sorted(os.listdir({str(ws)!r})))\n"
                "open('/workspace/planted.txt', 'w').write('x')")
            assert "key.txt" not in r.text and "mine.txt" in r.text, r.text
            assert not (secret / "planted.txt").exists() and sorted(os.listdir(secret)) == ["key.txt"]
            ws.unlink()
            os.rename(moved, ws)
        assert (ws / "planted.txt").exists()  # it wrote where it always could: its own workspace
    finally:
        await ep.close()


async def test_a_workspace_swapped_for_a_link_is_no_crash_of_the_host(rt, tmp_path):
    """run_program measured the disk by path: a workspace that became a link raised NotADirectoryError
    from the disk check, then ValueError at the restart. Both now use the held folder."""
    ws, secret = benchmark_like(rt, tmp_path)
    ep = await rt.open_episode([], workspace=ws, binds=[f"{ws}:rw"], counted=[ws.parent])
    try:
        os.rename(ws, ws.with_name("elsewhere"))
        ws.symlink_to(secret)
        r = await ep.run_program("print(open('mine.txt').read())")
        assert r.text == "the episode's own file" and not r.is_error
        r = await ep.run_program("import os; os._exit(3)")
        r = await ep.run_program("print(sorted(__import__('os').listdir('.')))")
        assert "mine.txt" in r.text and "key.txt" not in r.text
    finally:
        await ep.close()
    assert sorted(os.listdir(secret)) == ["key.txt"]


async def test_no_host_folder_descriptor_reaches_the_program(rt, tmp_path):
    """The held descriptors go to bubblewrap, which closes each once it is bound: an open folder of the
    host inside the sandbox would be a way out (openat(fd, '..'))."""
    ws, _ = benchmark_like(rt, tmp_path)
    ep = await rt.open_episode([], workspace=ws, binds=[f"{ws}:rw"])
    try:
        r = await ep.run_program(
            "import os, stat\n"
            "found = []\n"
            "for name in os.listdir('/proc/self/fd'):\n"
            "    try:\n"
            "        st = os.fstat(int(name))\n"
            "    except OSError:\n"
            "        continue\n"
            "    if stat.S_ISDIR(st.st_mode):\n"
            "        try:\n"
            "            up = os.listdir(os.open('..', os.O_RDONLY | os.O_DIRECTORY, dir_fd=int(name)))\n"
            "        except OSError:\n"
            "            up = []\n"
            "        found.append((name, os.readlink('/proc/self/fd/' + name), up))\n"
            "print(found)")
        assert r.text == "[]", r.text  # no folder descriptor at all came with the kernel
    finally:
        await ep.close()


async def test_a_forged_drop_marker_does_not_change_the_hosts_count(rt):
    ep = await rt.open_episode()
    try:
        r = await ep.run_program("import sys\nsys.stdout.write('abc\\x00progagent-dropped:999999999999999\\x00')\n"
                                 "sys.stdout.flush()")
        assert r.output_chars == 3, r.output_chars  # what reached the host, not what the kernel claims
    finally:
        await ep.close()


INOTIFY = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
got = [libc.inotify_init1(0) for _ in range(200)]
print(sum(1 for g in got if g >= 0), ctypes.get_errno())
"""


async def test_a_program_takes_no_inotify_instance_of_the_host_user(rt):
    ep = await rt.open_episode()
    try:
        r = await ep.run_program(INOTIFY)
        assert r.text.split() == ["0", "24"], r.text  # none, EMFILE
        # the host's own still works while the program's kernel lives
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(0)
        assert fd >= 0, ctypes.get_errno()
        os.close(fd)
        add_key = {"x86_64": 248, "aarch64": 217}[platform.machine()]
        r = await ep.run_program("import ctypes; l = ctypes.CDLL(None, use_errno=True)\n"
                                 f"print(l.syscall({add_key}, b'user', b'k', b'v', 1, -3), ctypes.get_errno())")
        assert r.text.split() == ["-1", "1"], r.text  # the host user's key quota: EPERM
    finally:
        await ep.close()


def test_a_bind_over_the_runtimes_own_folders_is_refused(tmp_path):
    root = tmp_path / "rt"
    root.mkdir()
    (root / "episode-a").mkdir()
    logs = tmp_path / "logs"
    logs.mkdir()
    for entry in (str(root), f"{root}:rw", str(root / "episode-a"), str(tmp_path), str(logs), f"{logs}:rw"):
        with pytest.raises(ValueError, match="a folder the runtime writes"):
            check_binds([entry], owned=[root, logs])
    with pytest.raises(ValueError, match="a folder the runtime writes"):
        Runtime(RuntimeConfig(warm_pool=0, binds=[f"{tmp_path}:rw"]), root=root)
    r = subprocess.run([str(Path(sys.executable).parent / "progagent"), "mcp", "--logs", str(logs),
                        "--bind", f"{tmp_path}:rw"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "a folder the runtime writes" in r.stderr, r.stderr


async def test_another_episodes_kernel_is_out_of_reach_of_a_bind(rt):
    """--bind over the runtime's root let one episode read another's kernel connection file; an episode
    bind under the root is allowed only inside a folder the runtime made for an environment."""
    victim = await rt.open_episode()
    try:
        with pytest.raises(ValueError, match="a folder the runtime writes"):
            await rt.open_episode([], binds=[f"{rt.root}:rw"])
        with pytest.raises(ValueError, match="a folder the runtime writes"):
            await rt.open_episode([], binds=[str(victim.slot.dir)])
        with pytest.raises(ValueError, match="a folder the runtime writes"):
            await rt.open_episode([], workspace=victim.slot.workspace)
    finally:
        await victim.close()


CRASHER = """
import os, sys
from mcp.server.mcpserver import MCPServer
server = MCPServer("crasher")

@server.tool()
def crash() -> str:
    "Exit the server."
    os._exit(1)

server.run()
"""


async def test_a_log_planted_as_a_link_is_not_followed_on_restart(tmp_path):
    """--logs DIR inside a read-write bind: the program planted a link at its server's log path and
    crashed the server; the restart appended to the link's target. Now such a bind is refused, and the
    log is opened without following a link wherever it is."""
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(ValueError, match="a folder the runtime writes"):
        Runtime(RuntimeConfig(warm_pool=0, logs_dir=str(data / "logs"), binds=[f"{data}:rw"]), root=tmp_path / "r0")
    # the log opener itself: a link at the log's path is refused, its target untouched
    logs, victim = tmp_path / "logs", tmp_path / "victim.txt"
    victim.write_text("host file\n")
    server = tmp_path / "crasher.py"
    server.write_text(CRASHER)
    async with Runtime(RuntimeConfig(warm_pool=0, logs_dir=str(logs)), root=tmp_path / "r1") as rt:
        ep = await rt.open_episode([UpstreamSpec("c", [sys.executable, str(server)])])
        try:
            log_path = logs / ep.id / "upstream-c.log"
            log_path.unlink(missing_ok=True)
            log_path.symlink_to(victim)
            await ep.call_tool("crash", {})
            await asyncio.sleep(0.5)
            out = await ep.call_tool("crash", {})  # a restart reopens its log
            assert out.is_error
        finally:
            await ep.close()
    assert victim.read_text() == "host file\n"


def test_kernels_start_from_a_virtual_environment_reached_through_a_link(tmp_path):
    link = tmp_path / "venv-link"
    link.symlink_to(Path(sys.prefix).resolve())
    code = ("import asyncio\nfrom envs.runtime.episode import Runtime\nfrom schema.config import RuntimeConfig\n"
            "async def main():\n"
            "    async with Runtime(RuntimeConfig(warm_pool=0)) as rt:\n"
            "        ep = await rt.open_episode()\n"
            "        print((await ep.run_program('import sys; print(sys.prefix)')).text)\n"
            "        await ep.close()\n"
            "asyncio.run(main())\n")
    r = subprocess.run([str(link / "bin" / "python"), "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == str(link), r.stdout


# ---- more attacks of our own on the same surfaces (issue 26's second list) ----

async def test_a_bind_swapped_for_a_link_between_restarts_is_still_the_checked_folder(tmp_path):
    data, secret = tmp_path / "data", tmp_path / "secret"
    data.mkdir()
    secret.mkdir()
    (data / "ok.txt").write_text("bound")
    (secret / "key.txt").write_text("HOST SECRET")
    async with Runtime(RuntimeConfig(warm_pool=0, binds=[f"{data}:rw"]), root=tmp_path / "rt") as rt:
        ep = await rt.open_episode()
        try:
            os.rename(data, tmp_path / "data.moved")
            data.symlink_to(secret)
            await ep.run_program("import os; os._exit(1)")
            r = await ep.run_program(f"import os; print(sorted(os.listdir({str(data)!r})))")
            assert "ok.txt" in r.text and "key.txt" not in r.text, r.text
        finally:
            await ep.close()


X32_BIT = 0x40000000


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x32 and i386 numbers are x86_64's")
async def test_the_filter_cannot_be_passed_by_another_abis_number(rt):
    """x32 numbers (| 0x40000000) reach the same call on kernels built with x32; the filter checks the
    architecture and the number, so no inotify instance is had either way."""
    ep = await rt.open_episode()
    try:
        r = await ep.run_program("import ctypes; l = ctypes.CDLL(None, use_errno=True)\n"
                                 "print(l.syscall(300, 0, 0), ctypes.get_errno())")
        assert r.text.split() == ["-1", "24"], r.text  # fanotify_init: EMFILE
        r = await ep.run_program("import ctypes; l = ctypes.CDLL(None, use_errno=True)\n"
                                 f"print('got', l.syscall({X32_BIT | 294}, 0))")  # x32 inotify_init1
        assert "got" not in r.text or "got -1" in r.text, r.text  # refused, or the kernel killed outright
        assert (await ep.run_program("print('next')")).text.endswith("next")  # and the episode goes on
    finally:
        await ep.close()


async def test_a_program_racing_the_disk_walk_cannot_crash_it_or_pass_the_limit(tmp_path):
    """A thread swaps a folder for a link in a loop while the watchdog walks the workspace (between its
    lstat and its open): the walk skips what changed, and the limit still ends the episode."""
    async with Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=60, disk_bytes=32 * 2**20, disk_check_s=0.05),
                       root=tmp_path / "rt") as rt:
        ep = await rt.open_episode()
        try:
            r = await ep.run_program(
                "import os, threading, time\n"
                "os.makedirs('d/sub', exist_ok=True)\n"
                "def swap():\n"
                "    while True:\n"
                "        try:\n"
                "            os.rename('d', 'e'); os.symlink('/etc', 'd'); os.unlink('d'); os.rename('e', 'd')\n"
                "        except OSError:\n"
                "            pass\n"
                "threading.Thread(target=swap, daemon=True).start()\n"
                "for i in range(100):\n"
                "    open(f'fill-{i}', 'wb').write(os.urandom(1 << 20)); time.sleep(0.01)\n")
            assert r.ended, r.text
        finally:
            await ep.close()


def test_a_log_path_that_is_a_fifo_or_a_link_is_refused_without_blocking(tmp_path):
    from envs.runtime import untrusted_fs

    fifo = tmp_path / "upstream.log"
    os.mkfifo(fifo)
    with pytest.raises(untrusted_fs.PathRefused, match="not a regular file"):
        untrusted_fs.open_log(fifo)  # O_NONBLOCK: no reader, no hang
    link = tmp_path / "other.log"
    link.symlink_to(tmp_path / "target")
    with pytest.raises(untrusted_fs.PathRefused, match="symbolic link"):
        untrusted_fs.open_log(link, append=False)
    assert not (tmp_path / "target").exists()


def test_binds_named_through_a_link_or_over_the_projects_home_are_refused(tmp_path, monkeypatch):
    real = tmp_path / "real"
    (real / "data").mkdir(parents=True)
    (tmp_path / "via").symlink_to(real)
    with pytest.raises(ValueError, match="resolves to"):
        check_binds([f"{tmp_path}/via/data:rw"])
    home = tmp_path / "home"
    (home / "runs").mkdir(parents=True)
    monkeypatch.setenv("PROGAGENT_HOME", str(home))
    from envs.runtime.sandbox import host_binds

    for entry in (f"{home}/runs", str(home), str(tmp_path)):
        with pytest.raises(ValueError, match="a folder the runtime writes"):
            host_binds([entry])


async def test_an_episodes_counted_or_bound_folder_under_the_root_must_be_an_env_folder(rt):
    stray = rt.root / "stray"
    stray.mkdir()
    with pytest.raises(ValueError, match="a folder the runtime writes"):
        await rt.open_episode([], counted=[stray])
    mine = rt.env_folder("test")
    ep = await rt.open_episode([], binds=[str(mine)], counted=[mine])
    await ep.close()
    await rt.remove_env_folder(mine)
    assert not mine.exists()


async def test_a_forged_marker_on_stderr_or_split_across_writes_counts_nothing(rt):
    ep = await rt.open_episode()
    try:
        r = await ep.run_program(
            "import sys, os\nsys.stderr.write('\\x00progagent-dropped:123456789012345\\x00x')\nsys.stderr.flush()\n"
            "os.write(2, b'\\x00progagent-drop'); os.write(2, b'ped:99999\\x00y')")
        assert r.output_chars < 100, r.output_chars
    finally:
        await ep.close()
