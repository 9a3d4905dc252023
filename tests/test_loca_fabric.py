"""LOCA-bench on the actor fabric (a `kind: loca` source), on the miniature checkout of tests/test_loca_adapter.py:
env workers generate LOCA's state, run the episode and judge it in place with LOCA's evaluator."""

import json
import sys

from tests.conftest import ROOT
from tests.test_loca_adapter import CHECKOUT, NODE_DIR, SOLVE, needs_npm


def sweep_script() -> list[str]:
    """One script for every harness: a direct call (DTC's and hybrid's), then a program (PTC's and
    hybrid's), then the answer. PTC and hybrid solve the task; DTC only lists items, so LOCA's
    evaluator must fail it."""
    code = "WS = tools['list_allowed_directories']()['content'].split('\\n')[1]\n" + SOLVE
    direct = json.dumps({"name": "list_items", "arguments": {}})
    program = json.dumps({"name": "programmatic_tool_call", "arguments": {"code": code}})
    return [f"<tool_call>\n{direct}\n</tool_call>", f"<tool_call>\n{program}\n</tool_call>", "ANSWER: done"]


@needs_npm
def test_a_sweep_runs_loca_presets_as_scales_on_the_fabric(ray_session, tmp_path):
    """A LOCA source on the actor fabric: env workers generate LOCA's state, run the episode and judge it
    in place with LOCA's evaluator; presets are the scales of the tables and plots; seed and launch
    time are in each rollout; a configuration whose generation fails is reported, not cached."""
    import csv

    from launch.eval import run_sweep
    from launch.rollout_cache import RolloutCache
    from launch.rollouts import outcome_settings
    from rollout.tiny_model import build_tiny
    from schema.config import SweepSettings
    from schema.load import load_sections

    tiny = str(build_tiny())
    out = tmp_path / "eval"
    overrides = ["wandb.mode=disabled", "fabric.generator.backend=replay",
                 f"fabric.generator.script={json.dumps(sweep_script())}",
                 "fabric.env_worker.limits={max_turns: 4, max_new_tokens: 1024, max_context_tokens: 16384}",
                 "fabric.env_worker.runtime={warm_pool: 0, program_timeout_s: 60}", "fabric.env_worker.concurrency=3",
                 f"sweep.out_dir={out}", f"sweep.models=[{tiny}]", "sweep.envs=[loca]", "sweep.samples=1",
                 "sweep.harnesses=[dtc,ptc,hybrid]",
                 "envs.loca.kind=loca",
                 f"envs.loca.args={{checkout: {CHECKOUT}, presets: [1k, 4k], tasks: [ShelfAuditS2LEnv], seeds: [1], "
                 f"python: {sys.executable}, node_dir: {NODE_DIR}}}"]
    cfg, st = load_sections(ROOT / "configs" / "local.yaml", overrides, "sweep", SweepSettings)
    run_sweep(cfg, st)
    cache = RolloutCache(out / "rollouts.jsonl", outcome_settings(cfg))
    rec = {(r.harness, r.scale): r for r in cache}
    assert sorted(rec) == [(h, p) for h in ("dtc", "hybrid", "ptc") for p in ("1k", "4k")]
    for (harness, preset), r in rec.items():
        assert r.task == "ShelfAuditS2LEnv.s1" and r.verifier_error is None, r
        assert r.reward == (0.0 if harness == "dtc" else 1.0), (harness, preset, r)
        assert r.metrics["state_seed"] == 1.0 and r.metrics["launch_time"] > 1.7e9
    rows = list(csv.DictReader((out / "results_by_scale.csv").open()))
    assert {(r["harness"], r["scale"]) for r in rows} == set(rec)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stats"]["failed"] == [] and len(summary["sources"]["loca"]["refs"]) == 2
    assert "| model | harness | 1k | 4k |" in (out / "report.md").read_text()


@needs_npm
def test_a_loca_source_trains_and_an_env_worker_killed_mid_step_reruns_its_live_episodes(ray_session, tmp_path):
    """LOCA is judged in place: the state lives with the env worker that generated it. Killed while
    step 2's episodes run on it, the worker's episodes run again (counted) on its replacement and
    step 2 completes with every group."""
    import asyncio
    import time

    import ray

    from launch.train import train
    from schema.load import load_config

    seen: dict = {}

    async def on_step(step, fabric, manager):
        if step != 1:
            return
        deadline = time.time() + 60
        while not fabric.scheduler._running and time.time() < deadline:  # step 2's episodes are on the worker
            await asyncio.sleep(0.05)
        seen["running"] = len(fabric.scheduler._running)
        seen["reruns"] = fabric.scheduler.counters["reruns_worker_died"]
        ray.kill(fabric.env.live[0])

    cfg = load_config(None, [
        "wandb.mode=disabled", "fabric.generator.backend=replay", f"fabric.generator.script={json.dumps(sweep_script())}",
        "fabric.env_worker.limits={max_turns: 4, max_new_tokens: 1024, max_context_tokens: 16384}",
        "fabric.env_worker.runtime={warm_pool: 0, program_timeout_s: 60}", "fabric.env_workers=1",
        "fabric.env_worker.concurrency=4", "rollout.group_size=2", "train.groups_per_step=1", "train.steps=2",
        "train.checkpoint_every=0", "sft.enabled=false", "eval.before=false", "eval.after=false", "ray.num_cpus=4",
        "learner.loss.filter_equal_reward_groups=false", f"run.out_dir={tmp_path}", "envs.loca.kind=loca",
        f"envs.loca.args={{checkout: {CHECKOUT}, presets: [1k, 4k], tasks: [ShelfAuditS2LEnv], seeds: [1], "
        f"python: {sys.executable}, node_dir: {NODE_DIR}}}"])
    run = asyncio.run(train(cfg, on_step=on_step))
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if r["phase"] == "train"]
    assert [r["step"] for r in steps] == [1, 2] and seen["running"] >= 1, seen
    last = steps[-1]
    assert last["rollout/scheduler_reruns_worker_died"] > seen["reruns"], (seen, last)  # the live episodes re-ran
    assert last["rollout/groups_failed"] == 0 and last["rollout/groups_trained/loca"] == 2
    assert all(r["source/loca/reward"] == 1.0 for r in steps)  # judged by LOCA's evaluator, in place
