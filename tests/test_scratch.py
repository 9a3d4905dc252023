"""Host scratch folders of killed processes are reclaimed by the next one (envs/runtime/scratch.py):
a killed Ray actor or worker runs no atexit handler, and /tmp filled with thousands of them."""

import os
import signal
import subprocess
import sys

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
