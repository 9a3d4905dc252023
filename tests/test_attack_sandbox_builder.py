"""Every sandbox of the project comes from one builder (envs/runtime/sandbox.Sandbox), so none lacks
a layer: the system call filter, the read-only root, the isolation. These tests start each kind of
sandbox for real and look at the sandboxed process itself (its /proc/self/status), and attack what
the builder makes: mounts under the host's /tmp, an interpreter reached through a link, and the
PostgreSQL server's socket folder (its superuser is the model's to act as)."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envs.runtime.sandbox import BWRAP_ENV, FdBinds, HeldFolders, Sandbox, bwrap_argv, launch_argv

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
needs_pg = pytest.mark.skipif(not Path("/usr/lib/postgresql").exists(), reason="PostgreSQL is not installed")

#: what runs in place of each sandbox's own command: the filter's state, a write to the root, inotify
PROBE = ("grep -E '^Seccomp(_filters)?:' /proc/self/status; (echo x > /probe) 2>/dev/null && echo root-writable; "
         "python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); "
         "print(\"inotify\", sum(l.inotify_init1(0) >= 0 for _ in range(200)))'")


def probe(argv: list[str], **popen) -> str:
    """Run a launch_argv command line with its command replaced by PROBE (what follows `--args 3 --`)."""
    cut = argv.index("--args") + 3
    out = subprocess.run([*argv[:cut], "/bin/sh", "-c", PROBE], capture_output=True, text=True, timeout=60,
                         env=BWRAP_ENV, **popen)
    assert out.returncode == 0, out.stderr
    return out.stdout


def assert_filtered(report: str) -> None:
    assert re.search(r"^Seccomp:\s+2$", report, re.M), report  # 2: filter mode
    assert int(re.search(r"^Seccomp_filters:\s+(\d+)$", report, re.M).group(1)) >= 1, report
    assert "root-writable" not in report and "inotify 0" in report, report


def host_inotify_works() -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    if fd >= 0:
        os.close(fd)
    return fd >= 0


def test_every_kind_of_sandbox_runs_under_the_filter_with_a_read_only_root(tmp_path):
    from envs.benchmarks.sandbox import interpreter, sandbox_options, sandboxed
    from envs.format.code_runner import sandbox_argv
    from envs.format.library import load_task
    from envs.format.task_env import sandboxed_server_argv

    kinds: dict[str, str] = {}
    # the kernel's
    for d in ("ws", "kernel", "tools"):
        (tmp_path / d).mkdir()
    held, fd_binds = HeldFolders(), FdBinds()
    try:
        box = bwrap_argv(tmp_path / "kernel", tmp_path / "tools", held.hold(tmp_path / "ws"), fd_binds)
        kinds["kernel"] = probe(launch_argv(box, ["true"], tmp_path / "s1"), pass_fds=fd_binds.fds)
    finally:
        fd_binds.close()
        held.close()
    # a task's MCP server, a task code child, a benchmark's server
    task = load_task(ROOT / "envs" / "tasks" / "clinics_claim_denials")
    (tmp_path / "env").mkdir()
    kinds["task server"] = probe(sandboxed_server_argv(task, tmp_path / "env"))
    kinds["code child"] = probe(sandbox_argv([], [], tmp_path / "s2"))
    interp = interpreter(sys.executable)
    kinds["benchmark"] = probe(sandboxed(sandbox_options(interp, read_only=[], writable=[], cwd="/tmp"), ["true"],
                                         tmp_path / "s3"))
    for kind, report in kinds.items():
        assert_filtered(report), kind
    assert host_inotify_works()


def test_no_module_builds_a_bubblewrap_command_line_of_its_own():
    """The builder is the only place that writes bubblewrap's isolation options; launch_argv takes a
    Sandbox only. The two exceptions run `true` to learn whether bubblewrap works at all."""
    probes = {ROOT / "envs" / "runtime" / "preflight.py", ROOT / "envs" / "format" / "code_runner.py"}
    own = []
    for path in [*ROOT.glob("envs/**/*.py"), *ROOT.glob("schema/**/*.py"), *ROOT.glob("launch/**/*.py"),
                 *ROOT.glob("train/**/*.py")]:
        text = path.read_text()
        if ("--unshare-all" in text or "isolation_argv(" in text) and path != ROOT / "envs/runtime/sandbox.py":
            own.append(path)
    assert set(own) <= probes, own
    code_runner = (ROOT / "envs/format/code_runner.py").read_text()
    assert code_runner.count("--unshare-all") == 1 and "def bwrap_works" in code_runner
    with pytest.raises(TypeError):
        launch_argv(["bwrap", "--ro-bind", "/", "/"], ["true"], "/nonexistent")  # type: ignore[arg-type]


def test_a_folder_under_tmp_appears_exactly_as_bound(tmp_path):
    """A checkout under /tmp (pytest's tmp_path is) bound read-only stays read-only, even when a
    writable folder holding it is added after it, and the folders leading to a bind are not
    writable either (they were, in the sandbox's private /tmp)."""
    assert str(tmp_path).startswith("/tmp/")
    outer, checkout = tmp_path / "outer", tmp_path / "outer" / "checkout"
    checkout.mkdir(parents=True)
    box = Sandbox().bind(checkout).bind(outer, writable=True)  # the parent after the child
    script = (f"echo pwned > {checkout}/pwned.txt; echo rc=$?; echo x > {tmp_path}/leading.txt; echo rc=$?; "
              f"echo ok > {outer}/ok.txt; echo rc=$?; echo t > /tmp/own.txt; echo rc=$?")
    out = subprocess.run(launch_argv(box, ["/bin/sh", "-c", script], tmp_path / "s"), capture_output=True,
                         text=True, timeout=60, env=BWRAP_ENV)
    assert out.stdout.split() == ["rc=2", "rc=2", "rc=0", "rc=0"], out
    assert "Read-only file system" in out.stderr
    assert not (checkout / "pwned.txt").exists() and (outer / "ok.txt").read_text() == "ok\n"


def test_a_benchmark_checkout_under_tmp_is_read_only_in_its_server_sandbox(tmp_path):
    """LOCA's servers bind only their own code folder inside the checkout: the checkout's other
    folders, under /tmp, must not be writable in the sandbox."""
    from envs.benchmarks.sandbox import interpreter, sandbox_options, sandboxed

    checkout = tmp_path / "loca"
    (checkout / "mcps" / "terminal").mkdir(parents=True)
    ws = tmp_path / "state" / "agent_workspace"
    ws.mkdir(parents=True)
    box = sandbox_options(interpreter(sys.executable), read_only=[checkout / "mcps" / "terminal"], writable=[ws],
                          cwd=ws)
    out = subprocess.run(sandboxed(box, ["/bin/sh", "-c", f"echo pwned > {checkout}/pwned.txt"], tmp_path / "s"),
                         capture_output=True, text=True, timeout=60, env=BWRAP_ENV)
    assert out.returncode != 0 and "Read-only file system" in out.stderr


def test_an_interpreter_reached_through_a_link_runs_in_the_benchmark_sandbox(tmp_path):
    """`.venv -> /data/venvs/pa`: the benchmark sandbox binds the installation at its named path too."""
    from envs.benchmarks.sandbox import interpreter, sandbox_options, sandboxed

    link = tmp_path / "checkout" / ".venv"
    link.parent.mkdir()
    link.symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    interp = interpreter(str(link / "bin" / "python"))
    box = sandbox_options(interp, read_only=[], writable=[], cwd="/tmp")
    out = subprocess.run(sandboxed(box, [interp.python, "-c", "import sys; print(sys.prefix)"], tmp_path / "s"),
                         capture_output=True, text=True, timeout=60, env=BWRAP_ENV)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(link)


# ------------------------------------------------------------------ PostgreSQL, whose superuser is the model's
@pytest.fixture(scope="module")
def pg(tmp_path_factory):
    from envs.benchmarks.postgres import EpisodePostgres, MasterCluster

    base = tmp_path_factory.mktemp("pg")
    master = MasterCluster.ensure(base / "master")
    server = EpisodePostgres.start(master, base / "episode")
    yield server
    server.close()


def psql(server, sql: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(server.bin_dir / "psql"), "-X", "-tA", "-d", server.dsn(), "-c", sql],
                          capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})


@needs_pg
def test_the_postgres_server_runs_under_the_filter(pg):
    import psutil

    servers = [p for p in map(psutil.Process, pg.pids) if p.name() == "postgres"]
    assert servers
    for p in servers:
        status = Path(f"/proc/{p.pid}/status").read_text()
        assert re.search(r"^Seccomp:\s+2$", status, re.M), status


@needs_pg
def test_copy_program_as_the_superuser_takes_no_inotify_instance(pg):
    """`COPY … PROGRAM` runs a shell as the server's user: it took all 128 inotify instances of the
    host user when the server was started without the filter."""
    prog = ("python3 -c \"import ctypes; l = ctypes.CDLL(None, use_errno=True); "
            "fds = [l.inotify_init1(0) for _ in range(200)]; print(sum(f >= 0 for f in fds))\"")
    out = psql(pg, f"create temp table got(n text); copy got from program '{prog}'; select n from got")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "0"
    assert host_inotify_works()


@needs_pg
def test_what_the_superuser_writes_into_the_socket_folder_is_the_episodes_and_counted(pg):
    """The socket folder the host reaches is a short link to the episode's own folder (what its disk
    limit counts): a COPY TO into it puts nothing in the host's /tmp, and the bytes are counted."""
    from envs.benchmarks.postgres import _socket_base
    from envs.runtime import untrusted_fs

    assert pg.socket_dir.is_symlink() and pg.socket_dir.resolve().is_relative_to(pg.work)
    out = psql(pg, f"copy (select repeat('x', 1000000) from generate_series(1, 80)) to '{pg.socket_dir}/big'")
    assert out.returncode == 0, out.stderr
    big = pg.work / "sock" / "big"
    assert big.stat().st_size > 64 * 2**20
    usage = untrusted_fs.disk_usage([pg.work], max_bytes=64 * 2**20, max_entries=10**6, max_depth=64)
    assert usage.over is not None  # an episode counting its work folder passes a 64 MiB limit
    host = untrusted_fs.disk_usage([_socket_base()], max_bytes=1 << 40, max_entries=10**6, max_depth=64)
    assert host.bytes < 2**20
    big.unlink()
    # the short path's own folder is read-only inside the sandbox: nothing lands beside the link
    out = psql(pg, f"copy (select 1) to '{pg.socket_dir.parent}/beside'")
    assert out.returncode != 0 and not (pg.socket_dir.parent / "beside").exists()
