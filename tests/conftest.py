import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from envs.runtime.config import RuntimeConfig
from envs.runtime.episode import Runtime
from envs.runtime.upstream import UpstreamSpec

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FIXTURE_SERVER = ROOT / "tests" / "servers" / "fixture_server.py"
NPM_FS = ROOT / ".mcp-servers" / "node_modules" / ".bin" / "mcp-server-filesystem"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")

if shutil.which("bwrap") is None:
    pytest.exit("bubblewrap is not installed: run scripts/install.sh", returncode=2)


def fixture_upstream(name: str = "fx") -> UpstreamSpec:
    return UpstreamSpec(name, [sys.executable, str(FIXTURE_SERVER)])


def time_upstream() -> UpstreamSpec:
    return UpstreamSpec("time", [str(BIN / "mcp-server-time")])


def processes_with(marker: str) -> list[int]:
    """Host processes whose command line contains `marker` (what a test's sandboxes left running)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.fixture
async def runtime():
    # no warm pool: most tests open one episode, and a kernel started ahead would go unused
    # (test_runtime_programs.py tests the pool itself)
    rt = Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=20, interrupt_grace_s=3))
    await rt.start()
    yield rt
    await rt.close()


@pytest.fixture
async def episode(runtime):
    ep = await runtime.open_episode([fixture_upstream()])
    yield ep
    await ep.close()


# Order: every file that uses the shared Ray cluster first, back to back, so the cluster starts once
# and stops as soon as the last of them ends (an idle cluster still costs CPU); then the rest; the
# library validation last: it runs in the background from the start (see `library_validation`).
# (With `PROGAGENT_TEST_WORKERS=N` each xdist worker restarts the cluster where it needs it.)
RAY_FILES = ("test_train_driver.py", "test_fabric.py", "test_eval_filter.py", "test_harbor_fabric.py",
             "test_learner_group.py", "test_pool_openai.py")
THEN = ("test_synth.py",)
LAST = ("test_library.py",)
LIBRARY_TEST = "tests/test_library.py::test_whole_library_validates"


def _file(item) -> str:
    return Path(str(item.fspath)).name


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        name = _file(item)
        if name in LAST:
            return len(RAY_FILES + THEN) + 1
        return (RAY_FILES + THEN).index(name) if name in RAY_FILES + THEN else len(RAY_FILES + THEN)

    items.sort(key=rank)  # stable


class LibraryValidation:
    """`progagent tasks validate` over the whole library, started when the session starts and read
    by its test, which runs last.

    It is the suite's longest test (a fifth of its CPU) and shares nothing with the others, while
    the others leave most of a core idle (they wait on process starts, kernels and actors). So it
    runs beside them at low priority (nice 10, inherited by its workers): where both want a core it
    gets about a tenth of it, so it mostly takes CPU nothing else wants, and the suite no longer
    waits ~2 minutes for it at the end. It stays in the session's scheduler autogroup (its own
    process group, not its own session): Linux shares CPU between autogroups first, so a new
    session would get half the machine whatever its nice value. Not idle priority (SCHED_IDLE,
    nice 19): starved for minutes, its programs could run into their time limits. Only in a
    single-process session; under xdist its test runs it in the foreground."""

    def __init__(self, out: Path):
        self.report = out / "validate.json"
        self.log = out / "validate.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen([str(BIN / "progagent"), "tasks", "validate", "--json", str(self.report)],
                                         stdout=log, stderr=subprocess.STDOUT, preexec_fn=lambda: os.nice(10),
                                         process_group=0)

    def result(self, timeout: float) -> tuple[int, str]:
        """(exit code, output) once it has finished."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        return rc, self.log.read_text(errors="replace")

    def stop(self) -> None:
        """Its worker process too (the kernels die with it): a session cut short leaves nothing."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


LIBRARY_KEY = pytest.StashKey[LibraryValidation]()


def pytest_collection_finish(session):
    if (not hasattr(session.config, "workerinput") and session.config.getoption("numprocesses", 0) in (0, None)
            and any(item.nodeid == LIBRARY_TEST for item in session.items)):
        session.config.stash[LIBRARY_KEY] = LibraryValidation(Path(tempfile.mkdtemp(prefix="progagent-libval-")))


def pytest_unconfigure(config):
    bg = config.stash.get(LIBRARY_KEY, None)
    if bg is not None:
        bg.stop()
        shutil.rmtree(bg.report.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_session():
    """The in-process Ray cluster shared by the RAY_FILES, started by the first module that needs it:
    a cluster start is seconds of CPU on 2 cores. Modules kill what they start; resources are logical,
    so leftovers do not starve the next module."""
    import ray

    if not ray.is_initialized():  # its temp dir short: Ray's Unix socket paths are limited to 107 bytes
        ray.init(address="local", num_cpus=8, include_dashboard=False, log_to_driver=False,
                 _temp_dir=tempfile.mkdtemp(prefix="ray", dir="/tmp"),
                 runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                                           "OMP_NUM_THREADS": "1"}})
    yield


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test of a run of RAY_FILES (and its module fixtures): stop the shared cluster."""
    if _file(item) in RAY_FILES and (nextitem is None or _file(nextitem) not in RAY_FILES):
        import ray

        if ray.is_initialized():
            ray.shutdown()
