"""Attacks through task folders and what a task's scripts write (issue 26): a task folder is
third-party input, so no link in it is followed (refused at load), a reward file that would crash a
parser is a verifier error, and a Harbor container has the network only when the task asks for it
and the operator allows it."""

import os
import shutil
import socket
import threading
from pathlib import Path

import pytest

from envs.format.library import TaskLoadError, load_task
from envs.harbor.episode import read_rewards, run_script, verify
from envs.harbor.task import ALLOW_NETWORK, HarborTaskError, load_harbor_task
from tests.test_harbor_compat import write_multi_step

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "envs" / "starter_harbor" / "warehouse-restock"
STARTER = ROOT / "envs" / "starter_tasks"


def harbor_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "task"
    shutil.copytree(FIXTURE, folder)
    return folder


def host_secret(tmp_path: Path) -> Path:
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text("HOST SECRET")
    # a test.sh that, run from the host folder, reports the secret as a reward key
    (host / "test.sh").write_text("#!/bin/bash\necho \"{\\\"$(cat /tests/secret.txt)\\\": 1}\" "
                                  "> /logs/verifier/reward.json\n")
    return host


def test_a_tests_folder_linked_to_a_host_folder_is_refused_at_load(tmp_path):
    host = host_secret(tmp_path)
    folder = harbor_copy(tmp_path)
    shutil.rmtree(folder / "tests")
    os.symlink(host, folder / "tests")
    with pytest.raises(HarborTaskError, match="symbolic link"):
        load_harbor_task(folder)


def test_a_link_inside_tests_or_solution_is_refused_at_load(tmp_path):
    host = host_secret(tmp_path)
    for sub in ("tests", "solution"):
        folder = harbor_copy(tmp_path / sub)
        (folder / sub).mkdir(exist_ok=True)
        os.symlink(host / "secret.txt", folder / sub / "secret.txt")
        with pytest.raises(HarborTaskError, match="symbolic link"):
            load_harbor_task(folder)


def test_an_instruction_linked_to_a_host_file_never_becomes_the_prompt(tmp_path):
    host = host_secret(tmp_path)
    folder = harbor_copy(tmp_path)
    (folder / "instruction.md").unlink()
    os.symlink(host / "secret.txt", folder / "instruction.md")
    with pytest.raises(HarborTaskError, match="symbolic link"):
        load_harbor_task(folder)
    lib = tmp_path / "lib"
    shutil.copytree(STARTER / "inventory_reorder_flags", lib / "inventory_reorder_flags")
    (lib / "inventory_reorder_flags" / "instruction.md").unlink()
    os.symlink(host / "secret.txt", lib / "inventory_reorder_flags" / "instruction.md")
    with pytest.raises(TaskLoadError, match="symbolic link"):
        load_task(lib / "inventory_reorder_flags")


def test_a_library_task_folder_or_file_that_is_a_link_is_refused(tmp_path):
    host = host_secret(tmp_path)
    lib = tmp_path / "lib"
    shutil.copytree(STARTER / "inventory_reorder_flags", lib / "real" / "inventory_reorder_flags")
    os.symlink(lib / "real" / "inventory_reorder_flags", lib / "inventory_reorder_flags")
    with pytest.raises(TaskLoadError, match="symbolic link"):
        load_task(lib / "inventory_reorder_flags")
    (lib / "real" / "inventory_reorder_flags" / "wrong").mkdir(exist_ok=True)
    os.symlink(host / "secret.txt", lib / "real" / "inventory_reorder_flags" / "wrong" / "peek.py")
    with pytest.raises(TaskLoadError, match="symbolic link"):
        load_task(lib / "real" / "inventory_reorder_flags")


def test_a_step_whose_workdir_or_tests_is_a_link_is_refused_at_load_not_a_crash(tmp_path):
    host = host_secret(tmp_path)
    for part in ("workdir", "tests", "instruction.md"):
        folder = write_multi_step(tmp_path / part / "two-steps")
        target = folder / "steps" / "count" / part
        shutil.rmtree(target) if target.is_dir() else target.unlink()
        os.symlink(host if part != "instruction.md" else host / "secret.txt", target)
        with pytest.raises(HarborTaskError, match="symbolic link"):
            load_harbor_task(folder)


@pytest.mark.parametrize("content, why", [
    ('{"reward": ' + "9" * 401 + "}", "not a finite number"),  # OverflowError before
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),  # RecursionError before
    ('{"reward": ' + "9" * 6000 + "}", "invalid JSON"),  # past Python's int-string limit
    ('{"' + "k" * 10_000 + '": "x"}', "not a finite number"),
])
def test_reward_files_that_would_crash_the_parser_are_a_verifier_error(tmp_path, content, why):
    verifier = tmp_path / "verifier"
    verifier.mkdir()
    (verifier / "reward.json").write_text(content)
    with pytest.raises(ValueError, match=why) as err:
        read_rewards(verifier)
    assert len(str(err.value)) < 400  # the message quotes the file, bounded


def test_a_huge_reward_from_test_sh_is_a_recorded_verdict(tmp_path):
    folder = harbor_copy(tmp_path)
    (folder / "tests" / "test.sh").write_text(
        "#!/bin/bash\npython3 -c \"print('{\\\"reward\\\": ' + '9' * 401 + '}')\" > /logs/verifier/reward.json\n")
    task = load_harbor_task(folder)
    run = verify(task, task.materialize(tmp_path / "tree"), "answer")
    assert run.verdict.error and "not a finite number" in run.verdict.error and run.verdict.reward == 0.0


class Listener:
    """A host loopback listener (what a Ray node has: dashboard, GCS, a weight broadcast)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            conn.close()


def probe(task, tmp_path: Path, port: int) -> str:
    tree = task.materialize(tmp_path / f"tree-{os.urandom(4).hex()}")
    script = task.host_path(tree, "/app/probe.sh")
    script.write_text("#!/bin/bash\npython3 -c \"import socket\ntry:\n socket.create_connection(('127.0.0.1', "
                      f"{port}), 2); print('CONNECTED')\nexcept OSError as e: print('REFUSED', e)\"\n")
    logs = tmp_path / f"log-{os.urandom(4).hex()}.txt"
    run_script(task, tree, "/app/probe.sh", binds=[], env={}, timeout_s=30, log_file=logs)
    return logs.read_text()


@pytest.mark.parametrize("mode", ["", 'network_mode = "public"\n'])
def test_a_harbor_container_has_no_network_unless_the_task_asks_and_the_operator_allows(tmp_path, monkeypatch, mode):
    listener = Listener()
    folder = harbor_copy(tmp_path)
    toml = (folder / "task.toml").read_text().replace("allow_internet = false\n", mode)
    (folder / "task.toml").write_text(toml)
    monkeypatch.delenv(ALLOW_NETWORK, raising=False)
    task = load_harbor_task(folder)
    assert "REFUSED" in probe(task, tmp_path, listener.port)
    monkeypatch.setenv(ALLOW_NETWORK, "1")
    out = probe(load_harbor_task(folder), tmp_path, listener.port)
    assert ("CONNECTED" in out) == bool(mode), out  # only a task that asks, with the operator's consent
    assert listener.hits == (1 if mode else 0)


# ---- more attacks of our own on task folders ----

def test_an_environment_folder_or_a_step_folder_that_is_a_link_is_refused(tmp_path):
    host = host_secret(tmp_path)
    folder = harbor_copy(tmp_path / "env")
    shutil.rmtree(folder / "environment")
    os.symlink(host, folder / "environment")
    with pytest.raises(HarborTaskError, match="symbolic link"):
        load_harbor_task(folder)
    folder = write_multi_step(tmp_path / "step" / "two-steps")
    shutil.rmtree(folder / "steps" / "count")
    os.symlink(host, folder / "steps" / "count")
    with pytest.raises(HarborTaskError, match="symbolic link"):
        load_harbor_task(folder)


def test_special_files_in_tests_solution_or_a_library_task_are_refused(tmp_path):
    folder = harbor_copy(tmp_path / "h")
    (folder / "solution").mkdir(exist_ok=True)
    os.mkfifo(folder / "solution" / "solve.sh.fifo")
    with pytest.raises(HarborTaskError, match="pipe"):
        load_harbor_task(folder)
    lib = tmp_path / "lib"
    shutil.copytree(STARTER / "inventory_reorder_flags", lib / "inventory_reorder_flags")
    os.mkfifo(lib / "inventory_reorder_flags" / "notes.fifo")
    with pytest.raises(TaskLoadError, match="pipe"):
        load_task(lib / "inventory_reorder_flags")


def test_a_dataset_entry_that_links_to_a_host_folder_is_not_loaded(tmp_path):
    from envs.harbor.task import find_harbor_tasks

    dataset = tmp_path / "dataset"
    dataset.mkdir()
    shutil.copytree(FIXTURE, dataset / "real-task")
    os.symlink(dataset / "real-task", dataset / "linked-task")
    found = find_harbor_tasks(dataset)
    assert dataset / "real-task" in found
    with pytest.raises(HarborTaskError, match="symbolic link"):
        load_harbor_task(dataset / "linked-task")


@pytest.mark.parametrize("name, content", [("reward.txt", "1e999"), ("reward.txt", "nan"),
                                           ("reward.json", '{"reward": NaN}'), ("reward.json", '{"reward": 1e999}'),
                                           ("reward.json", '{"reward": "1"}')])
def test_non_finite_or_non_numeric_rewards_are_refused(tmp_path, name, content):
    verifier = tmp_path / "verifier"
    verifier.mkdir()
    (verifier / name).write_text(content)
    with pytest.raises(ValueError, match="finite number"):
        read_rewards(verifier)
