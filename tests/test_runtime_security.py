"""Attacks from model code, each a test that fails when its defence is removed.

After every attack the same episode (or, where the kernel had to go, the next program) works.
"""

import asyncio
import os
import socket
import sys
from pathlib import Path

import pytest

from envs.runtime.episode import Runtime
from schema.config import RuntimeConfig
from tests.conftest import ROOT, fixture_upstream


async def assert_works(ep):
    r = await ep.run_program("print('still', 'working')")
    assert r.text == "still working", r.text


@pytest.fixture
async def fast_runtime():
    rt = Runtime(RuntimeConfig(warm_pool=1, program_timeout_s=3, interrupt_grace_s=2))
    await rt.start()
    yield rt
    await rt.close()


async def test_infinite_loop_is_interrupted_and_state_kept():
    # its own runtime with the default grace: 2 s was once too short for the interrupted cell's traceback
    # to arrive on a busy host (the suite's parts side by side), and an interrupt that works ends the wait
    async with Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=3)) as rt, await rt.open_episode() as ep:
        await ep.run_program("kept = 'yes'")
        r = await ep.run_program("while True:\n    pass")
        assert r.timed_out and r.is_error and not r.restarted
        assert "timed out after 3 s" in r.text and "variables defined before the interruption are kept" in r.text
        assert (await ep.run_program("print(kept)")).text == "yes"


async def test_uninterruptible_program_restarts_kernel_and_says_so(fast_runtime):
    async with await fast_runtime.open_episode() as ep:
        await ep.run_program("lost = 1")
        r = await ep.run_program("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass")
        assert r.timed_out and r.restarted
        assert "restarted: all variables and imports are gone" in r.text
        r = await ep.run_program("print(lost)")
        assert "NameError" in r.text
        assert (await ep.run_program("print(len(tools))")).text == "0"  # tools still wired after restart


async def test_memory_bomb_is_contained(runtime):
    async with await runtime.open_episode() as ep:
        r = await ep.run_program("x = bytearray(3 * 1024**3)\nprint('allocated', 'it')", timeout_s=60)
        assert "allocated it" not in r.text
        if runtime.limits_mode.startswith("cgroup"):
            assert r.restarted and "out of memory" in r.text
        else:
            assert "MemoryError" in r.text
        await assert_works(ep)


async def test_fork_bomb_is_bounded(runtime):
    if runtime.limits_mode == "rlimit" and os.getuid() == 0:
        pytest.skip("RLIMIT_NPROC is not enforced for uid 0: no safe process limit on this host")
    code = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    for _ in range(2000):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            time.sleep(60); os._exit(0)\n"
        "        n += 1\n"
        "except OSError as e:\n"
        "    print('fork refused after', n, type(e).__name__)\n"
    )
    async with await runtime.open_episode() as ep:
        r = await ep.run_program(code, timeout_s=60)
        assert "fork refused after" in r.text, r.text
        forked = int(r.text.split("after ")[1].split()[0])
        assert forked < runtime.config.max_processes
        await assert_works(ep)
        limits = ep.slot.kernel.limits
    # closing the episode kills every process of the sandbox
    assert limits.pids() == []


async def test_no_network_not_even_host_loopback(episode):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        code = (
            "import socket\n"
            f"for addr in [('127.0.0.1', {port}), ('1.1.1.1', 53)]:\n"
            "    s = socket.socket(); s.settimeout(2)\n"
            "    try:\n"
            "        s.connect(addr); print('CONNECTED', addr)\n"
            "    except OSError as e:\n"
            "        print('blocked', type(e).__name__)\n"
        )
        r = await episode.run_program(code)
        assert "CONNECTED" not in r.text and r.text.count("blocked") == 2, r.text
    finally:
        listener.close()
    await assert_works(episode)


async def test_cannot_read_host_files_task_oracles_or_home(episode, tmp_path):
    planted = Path("/root/progagent-planted-secret.txt")
    planted.write_text("TOP SECRET")
    host_tmp = tmp_path / "host-secret.txt"
    host_tmp.write_text("TOP SECRET")
    oracle = ROOT / "envs" / "tasks" / "_probe_oracle.py"
    oracle.write_text("ANSWER = 'TOP SECRET'")
    try:
        paths = [str(planted), str(host_tmp), str(oracle), str(ROOT / "envs" / "format" / "library.py"),
                 str(ROOT / "pyproject.toml"), "/etc/shadow", "/etc/hostname"]
        code = (
            f"for p in {paths!r}:\n"
            "    try:\n"
            "        print('READ', p, open(p).read()[:20])\n"
            "    except OSError as e:\n"
            "        print('denied', type(e).__name__)\n"
            "import os\nprint(sorted(os.listdir('/')))\nprint(os.listdir('/root/.pyenv') if os.path.exists('/root/.pyenv') else '-')"
        )
        r = await episode.run_program(code)
        assert "READ" not in r.text and "TOP SECRET" not in r.text, r.text
        assert r.text.count("denied") == len(paths)
        top = eval(r.text.splitlines()[len(paths)])
        assert "workspace" in top and "etc" not in top and "home" not in top
        # only the environment is bound from the repository folder, never its code, tasks or tests
        repo = await episode.run_program(f"import os\nprint(sorted(os.listdir({str(ROOT)!r})) "
                                         f"if os.path.exists({str(ROOT)!r}) else [])")
        assert set(eval(repo.text)) <= {".venv"}, repo.text
    finally:
        planted.unlink()
        oracle.unlink()


async def test_cannot_write_outside_the_workspace(episode, tmp_path):
    targets = ["/usr/evil", str(Path(sys.prefix) / "evil.py"), "/opt/progagent/progagent_tools.py",
               "/workspace/../escaped", str(tmp_path / "escaped")]
    code = (
        f"for p in {targets!r}:\n"
        "    try:\n"
        "        open(p, 'w').write('x'); print('WROTE', p)\n"
        "    except OSError as e:\n"
        "        print('denied', type(e).__name__)\n"
        "open('/workspace/mine.txt', 'w').write('ok'); open('/tmp/scratch', 'w').write('ok')\n"
        "print('own workspace ok')"
    )
    r = await episode.run_program(code)
    assert "WROTE" not in r.text, r.text
    assert r.text.count("denied") == len(targets)
    assert "own workspace ok" in r.text
    assert not (tmp_path / "escaped").exists()
    assert (Path(episode.final_state().workspace) / "mine.txt").read_text() == "ok"
    assert not Path("/escaped").exists() and not Path("/workspace").exists()
    await assert_works(episode)


async def test_cannot_signal_the_runtime_or_see_host_processes(episode):
    host_pid = os.getpid()
    code = (
        "import os, signal\n"
        f"try:\n    os.kill({host_pid}, signal.SIGKILL); print('KILLED HOST')\n"
        "except OSError as e:\n    print('no such process', type(e).__name__)\n"
        "print('parent', os.getppid(), 'procs', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n"
        "try:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError as e:\n    print('parent', type(e).__name__)\n"
    )
    r = await episode.run_program(code)
    assert "KILLED HOST" not in r.text and "no such process ProcessLookupError" in r.text
    procs = eval(r.text.split("procs ")[1].splitlines()[0])
    assert max(procs) < 50  # a private pid namespace: only the sandbox's few processes
    await asyncio.sleep(0.2)
    await assert_works(episode)


async def test_kernel_that_dies_is_restarted_and_model_is_told(episode):
    await episode.run_program("gone = 1")
    r = await episode.run_program("import os\nos._exit(1)")
    assert r.is_error and r.restarted and "kernel process died" in r.text
    assert "NameError" in (await episode.run_program("print(gone)")).text
    assert (await episode.run_program("print(tools['add'](a=1, b=1))")).text == "2"


async def test_upstream_crash_mid_episode(episode):
    r = await episode.run_program("tools['crash']()")
    assert r.is_error and "ToolError" in r.text and "stopped during the call" in r.text
    # the server is restarted: the next call works
    for _ in range(50):
        r = await episode.run_program("print(tools['add'](a=20, b=22))")
        if r.text == "42":
            break
        await asyncio.sleep(0.1)
    assert r.text == "42"


async def test_eight_concurrent_episodes_are_isolated(runtime):
    episodes = await asyncio.gather(*(runtime.open_episode([fixture_upstream()]) for _ in range(8)))
    try:
        await asyncio.gather(*(ep.run_program(
            f"secret = 'episode-{i}'\nopen('/workspace/id.txt', 'w').write(secret)\n"
            f"open('/tmp/id.txt', 'w').write(secret)") for i, ep in enumerate(episodes)))
        results = await asyncio.gather(*(ep.run_program(
            "import os\nprint(secret, open('/workspace/id.txt').read(), open('/tmp/id.txt').read(),"
            " sorted(os.listdir('/workspace')), tools['add'](a=1, b=1))") for ep in episodes))
        for i, r in enumerate(results):
            assert r.text == f"episode-{i} episode-{i} episode-{i} ['id.txt'] 2", r.text
        dirs = {ep.final_state().workspace for ep in episodes}
        assert len(dirs) == 8
    finally:
        await asyncio.gather(*(ep.close() for ep in episodes))
    await asyncio.sleep(0)
    for ep in episodes:
        assert not Path(ep.final_state().workspace).exists()
