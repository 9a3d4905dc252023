import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
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


@pytest.fixture
async def runtime():
    rt = Runtime(RuntimeConfig(warm_pool=1, program_timeout_s=20, interrupt_grace_s=3))
    await rt.start()
    yield rt
    await rt.close()


@pytest.fixture
async def episode(runtime):
    ep = await runtime.open_episode([fixture_upstream()])
    yield ep
    await ep.close()


# The longest files first: with `-n 2 --dist loadfile` (scripts/test.sh) a long file started last
# would leave the other worker idle at the end.
SLOW_FIRST = ("test_library.py", "test_train_driver.py", "test_synth.py", "test_fabric.py")


def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        name = Path(str(item.fspath)).name
        return SLOW_FIRST.index(name) if name in SLOW_FIRST else len(SLOW_FIRST)

    items.sort(key=rank)  # stable: the order inside each file is kept


@pytest.fixture(scope="session")
def ray_session():
    """One in-process Ray cluster for every test module that runs actors, started on first use: a
    cluster start is seconds of CPU on 2 cores. Modules kill what they start (or let it idle); the
    resources are logical, so leftovers do not starve the next module."""
    with local_ray(8, TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1"):
        yield


@contextmanager
def local_ray(num_cpus: int, **env_vars: str):
    """A fresh in-process Ray cluster for one test module (never one that happens to run here), its
    temp dir short (Ray's Unix socket paths are limited to 107 bytes); shut down afterwards."""
    import ray

    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
             _temp_dir=tempfile.mkdtemp(prefix="ray", dir="/tmp"),
             runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1", **env_vars}})
    try:
        yield
    finally:
        ray.shutdown()
