"""Host scratch folders of killed processes are reclaimed by the next one (envs/runtime/scratch.py):
a killed Ray actor or worker runs no atexit handler, and /tmp filled with thousands of them."""

import os
import signal
import subprocess
import sys
import tempfile
import time

from envs.runtime import scratch
from tests.conftest import ROOT

MAKE = "import sys, time; from envs.runtime import scratch; print(scratch.make(sys.argv[1], sys.argv[2]), flush=True); " \
       "time.sleep(60)"


def test_a_killed_owners_folder_is_removed_and_a_live_ones_kept(tmp_path):
    def start():
        p = subprocess.Popen([sys.executable, "-c", MAKE, "pa-test-", str(tmp_path)], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT)
        return p, p.stdout.readline().strip()

    dead, dead_dir = start()
    live, live_dir = start()
    try:
        (tmp_path / dead_dir.rsplit("/", 1)[1] / "sub").mkdir()
        dead.send_signal(signal.SIGKILL)
        dead.wait()
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "keep.txt").write_text("x")
        os.symlink(outside, tmp_path / "pa-test-1.2-link")  # a link with the prefix: not followed, not removed
        (tmp_path / "pa-test-legacy").mkdir()  # a name without an owner: left alone
        mine = scratch.make("pa-test-", tmp_path)
        names = sorted(p.name for p in tmp_path.iterdir())
        assert os.path.basename(dead_dir) not in names  # its killed owner's folder, with what was in it
        assert os.path.basename(live_dir) in names and mine.name in names
        assert "pa-test-legacy" in names and (outside / "keep.txt").exists() and os.path.islink(tmp_path / "pa-test-1.2-link")
        assert mine.name.startswith(f"pa-test-{os.getpid()}.")
    finally:
        live.kill()
        live.wait()
    assert scratch.sweep("pa-test-", tmp_path) == 1  # the live one, now ended


def test_a_temporary_folder_of_a_killed_process_is_reclaimed(tmp_path):
    """`temporary` / `folder` live inside the process's own scratch folder: a judge or env worker killed
    while one exists (a chaos test, a node's shutdown) leaves nothing that outlives the next process's
    first scratch folder."""
    code = ("import time; from envs.runtime import scratch\n"
            "t = scratch.temporary('progagent-final-'); f = scratch.folder('harbor-verify-')\n"
            "open(t.name + '/state', 'w').write('x'); print(t.name, f, flush=True); time.sleep(60)")
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    temp, folder = p.stdout.readline().split()
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert os.path.isfile(f"{temp}/state") and os.path.isdir(folder)
    # both are inside one folder of the killed process, the only entry it left under the temp folder
    (own,) = [c for c in tmp_path.iterdir()]
    assert own.name.startswith(f"progagent-tmp-{p.pid}.") and temp.startswith(f"{own}/") and folder.startswith(f"{own}/")
    subprocess.run([sys.executable, "-c", "from envs.runtime import scratch\nwith scratch.temporary('x-'): pass"],
                   cwd=ROOT, env=env, check=True)
    assert list(tmp_path.iterdir()) == []  # the next process reclaimed it, and removed its own at exit


def test_a_child_forked_while_another_thread_makes_a_temporary_can_make_its_own(tmp_path, monkeypatch):
    """A judge forks its verifier's child, which makes a temporary folder, while the judge's other threads
    may be making one: the child must not inherit a held lock (it would wait out its deadline)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    with scratch._own_lock:  # as if another thread were inside _own_folder at the fork
        pid = os.fork()
        if pid == 0:  # the child: exits 0 only if it can make its own temporary folder
            ok = False
            try:
                with scratch.temporary("progagent-final-") as t:
                    ok = os.path.isdir(t)
            finally:
                os._exit(0 if ok else 1)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError("the forked child waited on the lock its parent held")
    assert os.waitstatus_to_exitcode(status) == 0
