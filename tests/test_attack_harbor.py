"""Attacks through Harbor tasks: a task folder is third-party input and its container's processes
are the model's, so links in the build context or the container tree must never lead the host's
copies, writes and reads outside, and a task's env table must not read the worker's secrets."""

import os
import shutil
from pathlib import Path

import pytest

from envs.harbor.episode import read_rewards, verify
from envs.harbor.task import PASS_ENV, HarborTaskError, load_harbor_task

FIXTURE = Path(__file__).parent.parent / "envs" / "starter_harbor" / "warehouse-restock"


def task_copy(tmp_path: Path, extra_docker: str = "") -> Path:
    folder = tmp_path / "task"
    shutil.copytree(FIXTURE, folder)
    if extra_docker:
        with open(folder / "environment" / "Dockerfile", "a") as f:
            f.write(extra_docker)
    return folder


@pytest.mark.parametrize("target", ["HOST", "../../..", "sub/../../../.."])
def test_a_build_context_link_out_of_it_is_refused_before_anything_is_copied(tmp_path, target):
    host = tmp_path / "host"
    host.mkdir()
    folder = task_copy(tmp_path, "COPY stuff /app/stuff\nCOPY payload.txt /app/stuff/link/pwned.txt\n")
    (folder / "environment" / "stuff" / "sub").mkdir(parents=True)
    os.symlink(str(host) if target == "HOST" else target, folder / "environment" / "stuff" / "link")
    (folder / "environment" / "payload.txt").write_text("pwned")
    with pytest.raises(HarborTaskError, match="leaves the build context"):
        load_harbor_task(folder)
    assert list(host.iterdir()) == []


def test_a_copy_through_a_link_inside_the_tree_is_refused_and_writes_nothing(tmp_path):
    folder = task_copy(tmp_path, "COPY stuff /app/stuff\nCOPY payload.txt /app/stuff/inner/pwned.txt\n")
    (folder / "environment" / "stuff" / "real").mkdir(parents=True)
    os.symlink("real", folder / "environment" / "stuff" / "inner")  # inside the context: loads
    (folder / "environment" / "payload.txt").write_text("pwned")
    task = load_harbor_task(folder)
    tree = tmp_path / "tree"
    with pytest.raises(HarborTaskError, match="symbolic link"):
        task.materialize(tree)
    assert not (tree / "app" / "stuff" / "real" / "pwned.txt").exists()
    assert os.readlink(tree / "app" / "stuff" / "inner") == "real"  # copied as a link, never followed


def test_special_files_in_the_build_context_are_refused(tmp_path):
    folder = task_copy(tmp_path)
    os.mkfifo(folder / "environment" / "data" / "pipe")
    with pytest.raises(HarborTaskError, match="pipe"):
        load_harbor_task(folder)


def test_env_tables_read_only_the_host_variables_passed_to_them(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_TEST_SECRET", "sk-live-abcdef")
    monkeypatch.delenv(PASS_ENV, raising=False)
    folder = task_copy(tmp_path)
    with open(folder / "task.toml") as f:
        text = f.read()
    text = text.replace("allow_internet = false",
                        'allow_internet = false\nenv = { API = "${PROGAGENT_TEST_SECRET}", '
                        'D = "${NOT_SET_XYZ:-fallback}", HOME2 = "$HOME" }')
    (folder / "task.toml").write_text(text)
    task = load_harbor_task(folder)
    env = task.base_env()
    assert env["API"] == "" and env["D"] == "fallback" and env["HOME2"] == ""
    assert "sk-live" not in " ".join(task.container_argv(tmp_path).options())
    assert any("PROGAGENT_TEST_SECRET" in n and PASS_ENV in n for n in task.layout.notes)
    monkeypatch.setenv(PASS_ENV, "PROGAGENT_TEST_SECRET")
    assert load_harbor_task(folder).base_env()["API"] == "sk-live-abcdef"


def test_the_answer_is_never_written_through_a_link_the_episode_left(tmp_path):
    host = tmp_path / "host"
    host.mkdir()
    task = load_harbor_task(FIXTURE)
    tree = task.materialize(tmp_path / "tree")
    shutil.rmtree(tree / "app")
    os.symlink(host, tree / "app")  # what a container process can do to its own /app
    run = verify(task, tree, "ANSWER: 42")
    assert run.verdict.error and "symbolic link" in run.verdict.error and run.verdict.reward == 0.0
    assert list(host.iterdir()) == []


def test_reward_files_are_read_without_following_links_or_blocking(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("0.75 HOST SECRET")
    logs = tmp_path / "verifier"
    logs.mkdir()
    os.symlink(secret, logs / "reward.txt")
    with pytest.raises(ValueError, match="symbolic link") as exc:
        read_rewards(logs)
    assert "HOST SECRET" not in str(exc.value)
    os.unlink(logs / "reward.txt")
    os.mkfifo(logs / "reward.json")  # no writer: an open that blocks would hang the judge
    with pytest.raises(ValueError, match="pipe"):
        read_rewards(logs)


HOG = r'''
python3 -c "b = b'x' * (600 * 2**20)"; echo "memory $?" > /out/report
head -c 100M /dev/zero > /logs/big; echo "file $? $(stat -c %s /logs/big)" >> /out/report
python3 - >> /out/report <<'PY'
import os, time
n = 0
try:
    for _ in range(600):
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
except OSError:
    pass
print("forks", n)
PY
head -c 100M /dev/zero
'''


def test_container_scripts_run_within_the_tasks_memory_and_process_and_file_limits(tmp_path, monkeypatch):
    """tests/test.sh and solution/solve.sh run what the task and the model's final tree hold: each gets
    the task's [environment] memory_mb, a process cap and a size cap on every file it writes (its
    output log on the host included)."""
    from envs.benchmarks import process as benchmark_process
    from envs.harbor import episode as harbor_run
    from envs.runtime.limits import LimitBackend

    folder = task_copy(tmp_path)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("memory_mb = 1024", "memory_mb = 256"))
    task = load_harbor_task(folder)
    backend = LimitBackend(2 * 2**30, 64, file_bytes=8 * 2**20)  # the mechanism, with small numbers
    monkeypatch.setattr(benchmark_process, "_SCRIPT_LIMITS", backend, raising=False)
    tree = task.materialize(tmp_path / "tree")
    box = tmp_path / "box"
    (box / "out").mkdir(parents=True)
    (box / "logs").mkdir()
    (box / "hog.sh").write_text(HOG)
    log = tmp_path / "log.txt"
    try:
        harbor_run.run_script(task, tree, "/box/hog.sh", binds=[(box, "/box"), (box / "out", "/out"),
                                                                 (box / "logs", "/logs")],
                              env={}, timeout_s=60, log_file=log)
    finally:
        backend.close()
    report = dict(line.split(" ", 1) for line in (box / "out" / "report").read_text().splitlines())
    if backend.mode != "rlimit":
        assert report["memory"] == "137", report  # OOM-killed at 256 MiB
        assert int(report["forks"]) < 64, report
    else:
        assert report["memory"] != "0", report
    assert int(report["file"].split()[1]) <= 8 * 2**20, report
    assert log.stat().st_size <= 8 * 2**20


async def test_container_mcp_servers_run_within_the_tasks_memory_limit_and_end_with_the_episode(runtime):
    from envs.harbor.episode import open_harbor_episode

    task = load_harbor_task(FIXTURE)
    ep = await open_harbor_episode(runtime, task)
    try:
        server = ep.router.upstreams["inventory"]
        limits = server.limits
        assert limits is not None and limits.memory_bytes == 1024 * 2**20  # the task's memory_mb
        held = limits.pids()
        if runtime.limits_mode != "rlimit":
            assert held, "the server's processes are in its own cgroups"
        r = await ep.run_program("print(sorted(tools))")
        assert not r.is_error, r.text
    finally:
        await ep.close()
    if runtime.limits_mode != "rlimit":
        assert not [pid for pid in held if running(pid)]


def running(pid: int) -> bool:
    """A process that exists and is not a zombie (one the machine's init has yet to reap)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
