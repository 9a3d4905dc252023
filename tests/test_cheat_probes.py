"""Cheat probes (envs/probes.py): a task whose judge a trivial policy passes is refused for training.

Real judges on real states: the shipped library's verifiers on their built environments, a Harbor
task's own tests/test.sh in its container tree, and (in tests/test_mcpmark_postgres.py) MCPMark
postgres's verify.py on a server of its own."""

import shutil

from envs.format.library import LIBRARY_DIR, load_library, load_task
from envs.format.task_env import EnvironmentCache, LibraryTaskEnv
from envs.harbor.episode import HarborTaskEnv
from envs.harbor.task import load_harbor_task
from envs.probes import GENERIC, passed, probe, probe_sources
from envs.sources import resolve_sources
from launch.cli import main
from schema.config import SourceSpec
from tests.conftest import ROOT
from tests.test_task_format import write_task

HARBOR = ROOT / "envs" / "starter_harbor" / "warehouse-restock"


def test_no_task_of_the_shipped_library_passes_a_probe(tmp_path):
    """Every library task at v0: do nothing, claim done, a trivial answer — each judged 0 by its
    verifier on the built environment, none an error."""
    tasks, errors = load_library(LIBRARY_DIR)
    assert not errors and len(tasks) >= 24
    cache = EnvironmentCache(tmp_path)
    for task in tasks.values():
        verdicts = probe(LibraryTaskEnv(task, "v0", cache))
        assert set(verdicts) == set(GENERIC), task.id
        assert passed(verdicts) == [], (task.id, verdicts)
        assert all(not v.cause or v.cause.startswith("policy/") for v in verdicts.values()), (task.id, verdicts)


def test_a_verifier_that_passes_an_untouched_state_is_refused_for_training_naming_the_probe(tmp_path):
    """A task whose verifier checks only the answer's shape passes `trivial_answer`; one that passes
    anything passes all three. Training keeps the sound task of the source and says which were refused."""
    library = tmp_path / "lib"
    write_task(library, "demo_items")
    (write_task(library, "demo_weak") / "verify.py").write_text(
        "def verify(ctx):\n    return {'answered': ctx.answer.startswith('ANSWER:')}\n")
    (write_task(library, "demo_anything") / "verify.py").write_text("def verify(ctx):\n    return {'ok': True}\n")
    cache = EnvironmentCache(tmp_path / "cache")
    assert passed(probe(LibraryTaskEnv(load_task(library / "demo_weak"), "v0", cache))) == ["trivial_answer"]
    assert passed(probe(LibraryTaskEnv(load_task(library / "demo_anything"), "v0", cache))) == list(GENERIC)

    (source,) = resolve_sources({"lib": SourceSpec(kind="library", scales={"v0": 1.0}, args={"library": str(library)})})
    said = []
    kept, rows = probe_sources([source], lambda ref: LibraryTaskEnv(load_task(library / ref.task_id), ref.scale, cache),
                               say=said.append)
    assert [r.task_id for r in kept[0].refs] == ["demo_items"] and len(rows) == 3
    assert any("demo_weak at v0 is not trained on" in s and "trivial_answer" in s for s in said), said
    assert any("demo_anything" in s and "do_nothing, claim_done, trivial_answer" in s for s in said), said
    assert kept[0].ref("demo_weak", "v0") is None and kept[0].ref("demo_items", "v0") is not None


def test_a_harbor_task_whose_tests_accept_an_empty_answer_is_refused(tmp_path):
    """A third-party Harbor task whose tests/test.sh writes reward 1 whatever the container holds."""
    weak = tmp_path / "weak-task"
    shutil.copytree(HARBOR, weak)
    (weak / "tests" / "test.sh").write_text("#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n")
    assert passed(probe(HarborTaskEnv(load_harbor_task(weak)))) == list(GENERIC)
    sound = probe(HarborTaskEnv(load_harbor_task(HARBOR)))
    assert set(sound) == set(GENERIC) and passed(sound) == [], sound


def test_tasks_probe_prints_the_table_and_fails_when_a_task_would_be_refused(tmp_path, capsys):
    library = tmp_path / "lib"
    write_task(library, "demo_items")
    (write_task(library, "demo_anything") / "verify.py").write_text("def verify(ctx):\n    return {'ok': True}\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"envs:\n  lib: {{kind: library, scales: {{v0: 1}}, args: {{library: {library}}}}}\n")
    assert main(["tasks", "probe", "--config", str(config)]) == 1
    out = capsys.readouterr().out
    assert "refused: lib demo_anything v0: do_nothing, claim_done, trivial_answer" in out
    assert "1 of 2 (task, scale) pairs" in out and "cheat probes of" in out
    assert main(["tasks", "probe", "--config", str(config), "envs.lib.args.tasks=[demo_items]"]) == 0
    assert main(["tasks", "probe", "--config", str(tmp_path / "none.yaml")]) == 2


def test_a_kind_without_an_untouched_judge_has_no_generic_probes():
    """The toy kind of tests/test_env_kinds.py judges only live states: no probe runs, the row says so."""
    from tests.test_env_kinds import ToyEnv, ToyRef

    assert probe(ToyEnv(ToyRef(a=1, b=2))) == {}
