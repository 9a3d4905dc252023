"""Our Harbor exports, judged by Harbor itself: its task model loads them and `harbor lint` finds
nothing (Harbor 0.26.0, Python 3.12, in an environment made once from
tests/fixtures/harbor_tool/requirements.txt by the benchmark environment maker)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envs.benchmarks.environment import BenchmarkEnvironment, SetupError, ensure_environment, find_python
from envs.format.library import get_task, library_dir
from envs.harbor.export import export_harbor
from envs.harbor.task import load_harbor_task
from tests.conftest import ROOT

HARBOR = BenchmarkEnvironment("harbor", ROOT / "tests" / "fixtures" / "harbor_tool" / "requirements.txt", (), "3.12")
TASKS = ("support_sla_escalation", "clinics_claim_denials")

LOAD = """
import json, sys, warnings
from pathlib import Path
from harbor.models.task.task import Task
out = {}
for path in sys.argv[1:]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        task = Task(Path(path))
    out[path] = {"name": task.config.task.name, "schema": task.config.schema_version,
                 "network": task.config.environment.network_mode.value,
                 "verifier": getattr(task.config.verifier.environment_mode, "value", None),
                 "servers": [s.command for s in task.config.environment.mcp_servers],
                 "warnings": [str(w.message) for w in caught]}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def harbor_python():
    try:
        find_python("3.12")
    except SetupError as exc:
        pytest.skip(str(exc))
    from launch.paths import home

    return ensure_environment(HARBOR, home() / "benchmarks", say=lambda m: print(m, file=sys.stderr))


def test_our_exports_load_in_harbors_model_and_lint_clean(harbor_python, tmp_path):
    folders = []
    for name in TASKS:
        folders.append(export_harbor(get_task(name, library_dir("")), "v0", tmp_path / name))
    shared = export_harbor(get_task(TASKS[0], library_dir("")), "v1", tmp_path / "shared", verifier="shared")
    out = subprocess.run([harbor_python, "-c", LOAD, *map(str, folders)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout)
    for folder, name in zip(folders, TASKS, strict=True):
        info = loaded[str(folder)]
        assert info == {"name": f"progagent/{name}-v0", "schema": "1.4", "network": "no-network",
                        "verifier": "separate", "servers": ["env"], "warnings": []}, info
    harbor = str(Path(harbor_python).parent / "harbor")
    lint = subprocess.run([harbor, "lint", *map(str, folders)], capture_output=True, text=True, timeout=300)
    assert lint.returncode == 0, lint.stdout[-3000:] + lint.stderr[-2000:]
    # the shared verifier is offered, and Harbor's linter says what it costs
    lint = subprocess.run([harbor, "lint", str(shared)], capture_output=True, text=True, timeout=300)
    assert lint.returncode == 1 and "[shared-verifier]" in lint.stdout and "unpinned" not in lint.stdout
    # and our own import reads the export as written (extensions under [metadata.progagent], no notes on them)
    task = load_harbor_task(folders[0])
    assert task.answer_path == "/app/answer.txt" and task.config.network is False and task.blockers == []
    assert not any("[progagent]" in n for n in task.layout.notes)
