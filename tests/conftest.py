import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from envs.runtime.episode import Runtime
from envs.runtime.upstream import UpstreamSpec
from launch.loopback import loopback_only
from schema.config import RuntimeConfig

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


# Order: every file that uses the shared Ray cluster, back to back, so the cluster starts once and
# stops as soon as the last of them ends (an idle cluster still costs CPU); then the library
# validation; then the rest, longest first (so that, run by xdist workers, the last to finish are short).
# (With `PROGAGENT_TEST_WORKERS=N` each xdist worker restarts the cluster where it needs it.)
RAY_FILES = ("test_train_driver.py", "test_fabric.py", "test_rollout_manager.py", "test_eval_filter.py", "test_harbor_fabric.py",
             "test_learner_group.py", "test_pool_openai.py", "test_weight_transport.py", "test_loca_fabric.py",
             "test_env_kinds.py", "test_synth.py")
LIBRARY = ("test_library.py",)
THEN = ("test_cluster.py", "test_vllm_backend.py", "test_runtime_security.py", "test_rollout.py",
        "test_harbor_import.py", "test_runtime_programs.py", "test_context_and_model.py",
        "test_learner_megatron.py", "test_runtime_mcp_server.py", "test_task_format.py",
        "test_attack_tool_bridge.py", "test_attack_external_tasks.py", "test_attack_task_tools.py",
        "test_attack_kernel_messages.py")

# `--part`: the three parts scripts/test.sh runs (what each is for, and what was measured: there);
# a file in neither list below is in "parallel".
PARTS = {
    "serial": RAY_FILES + LIBRARY,
    "beside": ("test_runtime_security.py", "test_runtime_programs.py", "test_runtime_mcp_server.py",
               "test_task_format.py", "test_harbor_export.py", "test_openai_teacher.py", "test_learner_torch.py",
               "test_runtime_limits.py", "test_learner_losses.py", "test_attack_sandbox_env.py",
               "test_attack_harbor.py", "test_attack_host_disk.py", "test_attack_mcp_http.py", "test_mcp_citizen.py",
               "test_attack_restarts.py", "test_cluster.py", "test_weight_collective.py"),
}


def _file(item) -> str:
    return Path(str(item.fspath)).name


def pytest_addoption(parser):
    parser.addoption("--part", choices=("serial", "beside", "parallel"), default=None,
                     help="only the tests of one part of the suite (see tests/conftest.py)")


def _part(name: str) -> str:
    return next((part for part, files in PARTS.items() if name in files), "parallel")


def pytest_ignore_collect(collection_path, config):
    """Other parts' files are not even imported (vLLM's import alone is seconds). Never False: that
    would override `--ignore`."""
    part = config.getoption("--part")
    if part is not None and collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        return True if _part(collection_path.name) != part else None
    return None


def pytest_collection_modifyitems(config, items):
    order = RAY_FILES + LIBRARY + THEN
    items.sort(key=lambda item: order.index(_file(item)) if _file(item) in order else len(order))  # stable


_ray_temp: dict = {}  # the shared cluster and its temp folder, removed when it stops


@pytest.fixture(scope="module")
def ray_session():
    """The in-process Ray cluster shared by the RAY_FILES, started by the first module that needs it:
    a cluster start is seconds of CPU on 2 cores. Modules kill what they start; resources are logical,
    so leftovers do not starve the next module."""
    import ray
    from ray.cluster_utils import Cluster

    if not ray.is_initialized():  # its temp dir short: Ray's Unix socket paths are limited to 107 bytes
        loopback_only()  # one machine's cluster: nothing of it listens beyond loopback (launch/loopback.py)
        _ray_temp["dir"] = tempfile.mkdtemp(prefix="ray", dir="/tmp")
        # a head without a dashboard or a log monitor: nothing here reads them (log_to_driver is off), and
        # the log monitor alone polled the workers' logs for ~10 s of CPU over the serial part
        Path(ray._private.utils.get_ray_address_file(None)).parent.mkdir(parents=True, exist_ok=True)
        _ray_temp["cluster"] = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 8, "include_dashboard": False, "include_log_monitor": False, "temp_dir": _ray_temp["dir"],
            "object_store_memory": 2 << 30})  # Cluster's default is 150 MiB; ray.init's took 30 % of memory
        ray.init(address=_ray_temp["cluster"].address, log_to_driver=False,
                 runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                                           "OMP_NUM_THREADS": "1"}})
    yield


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """pytest's summary sits in stdout's buffer (a file here, so block-buffered) until the interpreter's
    last flush, which comes after the atexit handlers of what the tests loaded (Ray's, torch's, the
    MCP SDK's): flushed here, before them. In scripts/test.sh, beside twice ended with exit status 0
    after its last test but without its summary, when serial ran alongside; alone it never did."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test of a run of RAY_FILES (and its module fixtures): stop the shared cluster."""
    if _file(item) in RAY_FILES and (nextitem is None or _file(nextitem) not in RAY_FILES):
        import ray

        if ray.is_initialized():
            ray.shutdown()
        if "cluster" in _ray_temp:
            _ray_temp.pop("cluster").shutdown()
        if "dir" in _ray_temp:  # Ray leaves its session folder (logs, sockets) behind: one per run otherwise
            shutil.rmtree(_ray_temp.pop("dir"), ignore_errors=True)
