"""Imported Harbor tasks on the actor fabric: env workers run the episodes, judges run tests/test.sh.

Real Ray actors (generator pool, env worker, judge), the sandboxed runtime, the tasks' own MCP
servers in their bubblewrap container views. The model is the tiny one forced through a replay
script whose program solves a task only for chosen sampling seeds, so every verdict is known: the
hand-written warehouse-restock task, a task of our format exported to Harbor, and a copy of
warehouse-restock whose test.sh crashes without writing a reward.
"""

import asyncio
import csv
import json
import shutil
import textwrap
from pathlib import Path

import pytest
import ray

from actors.judge import judge_shipped
from envs.format.library import load_task
from envs.harbor.episode import restore_tree, run_oracle, snapshot_tree
from envs.harbor.export import export_harbor
from envs.harbor.kind import HARBOR_SCALE, HarborRef
from envs.harbor.task import load_harbor_task
from launch.cli import main
from launch.eval import sweep
from launch.rollout_cache import RolloutCache, rollout_seed
from launch.rollouts import RolloutRunner, outcome_settings
from rollout.tiny_model import build_tiny
from schema.config import SweepSettings
from schema.load import load_sections
from tests.conftest import ROOT
from tests.test_harbor_import import FIXTURE, SOLVE_PTC
from tests.test_task_format import write_task

CONFIG = ROOT / "configs" / "local.yaml"
WAREHOUSE, EXPORTED, NO_REWARD = "warehouse-restock", "demo_items", "warehouse-no-reward"
CRASHING_TEST_SH = "#!/bin/bash\necho 'checking...'; exit 3\n"


@pytest.fixture(scope="module")
def tiny():
    return str(build_tiny())


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A dataset folder of three Harbor tasks: not ours, ours exported, and one with a crashing test.sh."""
    root = tmp_path_factory.mktemp("harbor")
    shutil.copytree(FIXTURE, root / WAREHOUSE)
    export_harbor(load_task(write_task(tmp_path_factory.mktemp("lib"), EXPORTED), trusted=True), "v0", root / EXPORTED)
    shutil.copytree(FIXTURE, root / NO_REWARD)
    (root / NO_REWARD / "tests" / "test.sh").write_text(CRASHING_TEST_SH)
    return root


def replay_script() -> list[str]:
    """Sample 0 of every task does the whole job; sample 1 stops after the first page (warehouse) or
    changes nothing (the exported task). One reply answers both tasks' checks."""
    solving = sorted(rollout_seed(0, t, HARBOR_SCALE, 0) for t in (WAREHOUSE, EXPORTED, NO_REWARD))
    warehouse = SOLVE_PTC.replace('page = listing["next_page"]', 'page = listing["next_page"] if full else None')
    code = (f"full = {{seed}} in {solving}\nif 'place_order' in tools:\n{textwrap.indent(warehouse, '    ')}"
            "elif full:\n    tools['set_qty'](item_id=1, qty=5)\nprint('done')\n")
    call = json.dumps({"name": "programmatic_tool_call", "arguments": {"code": code}})
    return [f"<tool_call>\n{call}\n</tool_call>", "ANSWER: 229 units ordered; item 1 set to 5."]


@pytest.fixture(scope="module")
def overrides():
    return ["wandb.mode=disabled", "fabric.generator.backend=replay",
            f"fabric.generator.script={json.dumps(replay_script())}",
            "fabric.env_worker.limits={max_turns: 3, max_new_tokens: 1024, max_context_tokens: 8192}",
            "fabric.env_worker.runtime={warm_pool: 2, program_timeout_s: 30}", "fabric.env_worker.concurrency=3"]


@pytest.fixture(scope="module")
def runner(ray_session, tiny, overrides):
    cfg, _ = load_sections(CONFIG, overrides, "sweep", SweepSettings)
    started = asyncio.run(RolloutRunner.start(cfg, tiny))
    yield started
    asyncio.run(started.close())


async def test_harbor_tasks_run_on_env_workers_and_are_judged_by_judges(runner, tiny, dataset, overrides,
                                                                        tmp_path):
    out = tmp_path / "eval"
    cfg, st = load_sections(CONFIG, [*overrides, f"sweep.out_dir={out}", f"sweep.models=[{tiny}]",
                                     "envs.harbor.kind=harbor", f"envs.harbor.args.paths=[{dataset}]",
                                     "sweep.envs=[harbor]", "sweep.harnesses=[ptc]",
                                     "sweep.samples=2"], "sweep", SweepSettings)
    ray.kill(runner.fabric.judges[0], no_restart=False)  # the judge restarts; env workers retry on it
    on_workers = await runner.episodes_on_workers()
    await sweep(cfg, st, {tiny: runner})
    # 6 episodes, and the no-reward task's two judged twice more each: a verifier that writes no reward is
    # the fabric's failure (schema/outcomes.py), re-run up to rollout.max_attempts, then recorded as it is
    assert await runner.episodes_on_workers() - on_workers == 6 + 2 * 2

    cache = RolloutCache(out / "rollouts.jsonl", outcome_settings(cfg))
    rec = {(r.task, r.sample): r for r in cache}
    assert sorted(rec) == [(t, k) for t in (EXPORTED, NO_REWARD, WAREHOUSE) for k in (0, 1)]
    assert all(r.scale == HARBOR_SCALE and r.harness == "ptc" and r.termination == "answer" for r in cache)
    # the oracle-like program passes, the partial one fails; both are real verdicts
    assert rec[(WAREHOUSE, 0)].reward == 1.0 and rec[(WAREHOUSE, 0)].verifier_error is None
    assert rec[(WAREHOUSE, 0)].tool_calls == 3 + 3 + 7  # pages, suppliers, orders
    assert rec[(WAREHOUSE, 1)].reward == 0.0 and rec[(WAREHOUSE, 1)].verifier_error is None
    assert rec[(EXPORTED, 0)].reward == 1.0 and rec[(EXPORTED, 0)].criteria == {"item_1_set_to_5": True,
                                                                             "answer": True}
    assert rec[(EXPORTED, 1)].reward == 0.0 and rec[(EXPORTED, 1)].criteria["item_1_set_to_5"] is False
    # a test.sh that writes no reward: a recorded verifier error (an infra cause), reward 0, never a lost sample
    for k in (0, 1):
        r = rec[(NO_REWARD, k)]
        assert r.cause == "infra/judge_error"
        assert r.reward == 0.0 and "wrote neither /logs/verifier/reward.json" in r.verifier_error
        assert "(exit code 3)" in r.verifier_error and "checking..." in r.verifier_error

    summary = json.loads((out / "summary.json").read_text())
    assert summary["stats"]["failed"] == [] and summary["stats"]["run"] == 6 + 2 * 2  # the re-runs counted
    assert summary["sources"]["harbor"]["kind"] == "harbor"
    assert {r["path"] for r in summary["sources"]["harbor"]["refs"]} == {str(dataset / t)
                                                                         for t in (EXPORTED, NO_REWARD, WAREHOUSE)}
    rows = {r["task"]: r for r in csv.DictReader((out / "results_by_task.csv").open())}
    assert {r["scale"] for r in rows.values()} == {HARBOR_SCALE}
    assert float(rows[WAREHOUSE]["pass@1"]) == 0.5 and float(rows[WAREHOUSE]["pass@2"]) == 1.0
    assert rows[NO_REWARD]["verifier_errors"] == "2"
    assert "| model | harness | harbor |" in (out / "report.md").read_text()

    # `progagent harbor run` is the same sweep: on the finished folder everything comes from the cache
    argv = ["harbor", "run", str(dataset), "--model", tiny, "--samples", "2", "--out", str(out),
            "--config", str(CONFIG), *[a for o in overrides for a in ("--set", o)]]
    assert await asyncio.to_thread(main, argv) == 0  # recorded verifier errors are results, not failures
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stats"] == {"jobs": 6, "cached": 6, "run": 0, "failed": []}


def test_judge_restores_the_shipped_tree_and_bounds_the_verifier(tmp_path):
    task = load_harbor_task(FIXTURE)
    tree = task.materialize(tmp_path / "episode" / "container")
    assert run_oracle(task, tree).exit_code == 0
    (tree / "app" / "latest").symlink_to("/app/data/orders.csv")  # an absolute container path survives
    (tmp_path / "host.txt").write_text("keep")
    (tree / "app" / "answer.txt").unlink(missing_ok=True)
    (tree / "app" / "answer.txt").symlink_to(tmp_path / "host.txt")  # never followed out of the container
    state = snapshot_tree(tmp_path / "episode" / "container")
    assert (restore_tree(state, tmp_path / "restored") / "app" / "latest").readlink() == Path("/app/data/orders.csv")
    assert judged(FIXTURE, state, "ANSWER: 229", tmp_path).reward == 1.0
    assert judged(FIXTURE, state, "ANSWER: 228", tmp_path).reward == 0.0
    assert (tmp_path / "host.txt").read_text() == "keep"

    slow = shutil.copytree(FIXTURE, tmp_path / "slow")
    (slow / "task.toml").write_text((slow / "task.toml").read_text().replace("timeout_sec = 60.0", "timeout_sec = 1"))
    (slow / "tests" / "test.sh").write_text("#!/bin/bash\nsleep 30\n")
    verdict = judged(slow, state, "", tmp_path)  # test.sh killed at [verifier] timeout_sec
    assert verdict.reward == 0.0 and "(timed out after 1 s)" in verdict.error
    verdict = judged(FIXTURE, b"not a tar file", "", tmp_path)  # a broken state
    assert verdict.reward == 0.0 and "ReadError" in verdict.error
    verdict = judged(tmp_path / "gone", state, "", tmp_path)
    assert verdict.reward == 0.0 and verdict.error.startswith("HarborTaskError")


def judged(folder, state: bytes, answer: str, tmp_path):
    """What a Judge actor answers for a shipped container tree of the Harbor task in `folder`."""
    return judge_shipped(HarborRef(str(folder)), state, answer, 60.0, str(tmp_path / "judge-cache"))
