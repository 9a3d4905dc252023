"""Difficulty filtering and evaluation sweeps on the real fabric: pass@k, keep/remove decisions with
known pass rates, resuming an interrupted sweep, and the sweep's tables and plots.

One fabric serves both commands (starting one costs ~20 s on 2 cores): the tiny model forced
through a replay script whose program fixes the task only for chosen sampling seeds, so every
pass rate is known; a library of small tasks written here plus a shipped task.
"""

import asyncio
import csv
import itertools
import json
import shutil

import msgspec
import pytest

from launch.cli import main
from launch.eval import sweep
from launch.eval_report import pass_at_k
from launch.filter import filter_tasks
from launch.rollout_cache import RolloutCache, RolloutRecord, rollout_seed
from launch.rollouts import RolloutRunner, outcome_settings
from rollout.tiny_model import build_tiny
from schema.config import FilterSettings, SweepSettings
from schema.load import load_sections
from tests.conftest import ROOT
from tests.test_task_format import write_task


@pytest.fixture(scope="module")
def tiny():
    return str(build_tiny())


# samples (of k = 5) whose rollout passes, per (task, scale); the sweep's samples 0 and 1 are the same
PASSING = {("mid_task", "v0"): {0, 1}, ("mid_task", "v1"): {1, 2, 4},  # 0.4, 0.6: kept
           ("easy_task", "v0"): {0, 1, 2, 3}, ("easy_task", "v1"): {0},  # 0.8 is not < 0.8: removed
           ("hard_task", "v0"): {3}}  # 0.2 at v0 but 0 at v1: removed
SHIPPED = "retail_clearance_markdown"


def replay_script(passing_seeds: set[int]) -> list[str]:
    """A policy whose outcome is known per sample: its program fixes item 1 only for the given seeds."""
    code = f"if {{seed}} in {sorted(passing_seeds)}:\n    tools['set_qty'](item_id=1, qty=5)\nprint('done')"
    call = json.dumps({"name": "programmatic_tool_call", "arguments": {"code": code}})
    return [f"<tool_call>\n{call}\n</tool_call>", "ANSWER: 5"]


@pytest.fixture(scope="module")
def fabric_overrides(tmp_path_factory):
    lib = tmp_path_factory.mktemp("lib")
    for task in ("mid_task", "easy_task", "hard_task"):
        write_task(lib, task)
    shutil.copytree(ROOT / "envs" / "tasks" / SHIPPED, lib / SHIPPED)
    seeds = {rollout_seed(0, t, s, k) for (t, s), ks in PASSING.items() for k in ks}
    return [f"tasks.library_root={lib}", "wandb.mode=disabled",
            "fabric.generator.backend=replay", f"fabric.generator.script={json.dumps(replay_script(seeds))}",
            "fabric.env_worker.limits={max_turns: 3, max_new_tokens: 512, max_context_tokens: 8192}",
            "fabric.env_worker.runtime={warm_pool: 2, program_timeout_s: 30}",
            "fabric.env_worker.concurrency=4"]


@pytest.fixture(scope="module")
def runner(ray_session, tiny, fabric_overrides):
    cfg, _ = load_sections(ROOT / "configs" / "local.yaml", fabric_overrides, "sweep", SweepSettings)
    started = asyncio.run(RolloutRunner.start(cfg, tiny))
    yield started
    asyncio.run(started.close())


def test_pass_at_k_matches_brute_force_enumeration():
    for n in range(1, 8):
        for c in range(n + 1):
            outcomes = [1] * c + [0] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(range(n), k))
                brute = sum(any(outcomes[i] for i in s) for s in subsets) / len(subsets)
                assert pass_at_k(n, c, k) == pytest.approx(brute, abs=1e-12), (n, c, k)
    assert pass_at_k(8, 2, 1) == pytest.approx(0.25)
    with pytest.raises(ValueError):
        pass_at_k(4, 1, 5)


def _record(task: str, sample: int, settings: str = "s1", reward: float = 1.0) -> RolloutRecord:
    return RolloutRecord(model="m", harness="ptc", task=task, scale="v0", sample=sample, settings=settings,
                         seed=sample, reward=reward, score=reward, termination="answer")


def test_rollout_cache_survives_a_torn_line_and_ignores_other_settings(tmp_path):
    path = tmp_path / "rollouts.jsonl"
    cache = RolloutCache(path, "s1")
    cache.add(_record("a", 0))
    cache.add(_record("a", 1, reward=0.0))
    cache.close()
    with path.open("ab") as fh:
        fh.write(msgspec.json.encode(_record("a", 2))[:40])  # killed mid-write
    cache = RolloutCache(path, "s1")
    assert len(cache) == 2 and cache.torn == 1 and ("m", "ptc", "a", "v0", 1) in cache
    cache.add(_record("a", 2))  # lands on its own line after the torn one
    cache.close()
    again = RolloutCache(path, "s1")
    assert len(again) == 3 and again.torn == 1
    assert len(RolloutCache(path, "other-settings")) == 0 and RolloutCache(path, "other-settings").stale == 3


async def test_filter_keeps_tasks_strictly_inside_the_bounds_at_every_scale(runner, tiny, fabric_overrides,
                                                                              tmp_path):
    cfg, st = load_sections(ROOT / "configs" / "local.yaml", [
        *fabric_overrides, "tasks.tasks=[easy_task, hard_task, mid_task]", f"filter.out_dir={tmp_path}",
        "filter.samples=5", "filter.scales=[v0, v1]", f"filter.model={tiny}"], "filter", FilterSettings)
    before, on_workers = runner.requests, await runner.episodes_on_workers()
    out, decisions = await filter_tasks(cfg, st, runner)
    assert runner.requests - before == 30 and await runner.episodes_on_workers() - on_workers == 30
    by_task = {d.task: d for d in decisions}
    assert by_task["mid_task"].decision == "kept"
    assert by_task["mid_task"].pass_rates == {"v0": 0.4, "v1": 0.6}
    assert by_task["easy_task"].decision == "removed" and "too easy" in by_task["easy_task"].reason
    assert by_task["easy_task"].passes == {"v0": 4, "v1": 1}
    assert by_task["hard_task"].decision == "removed" and "too hard" in by_task["hard_task"].reason
    assert "v1 (0/5)" in by_task["hard_task"].reason and by_task["hard_task"].passes == {"v0": 1, "v1": 0}
    report = json.loads((out / "filter_report.json").read_text())
    assert report["kept"] == ["mid_task"] and report["removed"] == ["easy_task", "hard_task"]
    assert {t["task"]: t["pass_rates"] for t in report["tasks"]}["easy_task"] == {"v0": 0.8, "v1": 0.2}
    md = (out / "filter_report.md").read_text()
    assert "| tasks | mid_task | 2/5 (0.40) | 3/5 (0.60) | kept |" in md and "tasks.tasks=[mid_task]" in md
    # a re-run finds every rollout in the cache: nothing runs, the decisions are the same
    _, again = await filter_tasks(cfg, st, runner)
    assert runner.requests - before == 30 and again == decisions
    # a stricter upper bound is a new decision over the same cached rollouts
    _, strict = await filter_tasks(cfg, msgspec.structs.replace(st, high=0.6), runner)
    assert runner.requests - before == 30 and [d.decision for d in strict] == ["removed"] * 3


async def test_interrupted_sweep_resumes_and_writes_tables_and_plots(runner, tiny, fabric_overrides, tmp_path):
    out = tmp_path / "sweep"
    overrides = [*fabric_overrides, f"tasks.tasks=[mid_task, {SHIPPED}]", f"sweep.out_dir={out}",
                 "sweep.samples=2", "tasks.scales={v0: 1.0, v1: 1.0}", f"sweep.models=[{tiny}]"]
    cfg, st = load_sections(ROOT / "configs" / "local.yaml", overrides, "sweep", SweepSettings)
    total = 3 * 2 * 2 * 2  # harnesses × tasks × scales × samples
    job = asyncio.create_task(sweep(cfg, st, {tiny: runner}))
    cache_file = out / "rollouts.jsonl"
    while not (cache_file.exists() and len(cache_file.read_text().splitlines()) >= 6):
        await asyncio.sleep(0.05)
    job.cancel()  # interrupted with episodes in flight
    with pytest.raises(asyncio.CancelledError):
        await job
    done_before = len(RolloutCache(cache_file, outcome_settings(cfg)))
    assert 6 <= done_before < total
    first = runner.requests
    await sweep(cfg, st, {tiny: runner})
    assert runner.requests - first == total - done_before  # nothing cached was run again
    keys = [tuple(json.loads(line)[k] for k in ("harness", "task", "scale", "sample"))
            for line in cache_file.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == total

    rows = list(csv.DictReader((out / "results_by_task.csv").open()))
    assert [(r["harness"], r["scale"], r["task"]) for r in rows] == [
        (h, s, t) for h in ("dtc", "ptc", "hybrid") for s in ("v0", "v1") for t in ("mid_task", SHIPPED)]
    cell = {(r["harness"], r["scale"], r["task"]): r for r in rows}
    assert all(r["n"] == "2" and float(r["context_tokens"]) > 0 for r in rows)
    # known outcomes: the program runs under PTC and Hybrid (samples 0, 1 pass at v0; 1 at v1); DTC has no
    # programmatic_tool_call; the shipped task's answer is wrong
    for h in ("ptc", "hybrid"):
        assert float(cell[(h, "v0", "mid_task")]["pass@1"]) == 1.0
        v1 = cell[(h, "v1", "mid_task")]
        assert (float(v1["pass@1"]), float(v1["pass@2"])) == (0.5, 1.0)
        assert float(cell[(h, "v0", "mid_task")]["per_program_conditionals"]) == 1.0
    assert all(float(cell[("dtc", s, t)]["pass@1"]) == 0 for s in ("v0", "v1") for t in ("mid_task", SHIPPED))
    assert float(cell[("dtc", "v0", "mid_task")]["programs"]) == 0.0
    assert all(float(r["term_answer"]) == 1.0 for r in rows)
    by_scale = {(r["harness"], r["scale"]): r for r in csv.DictReader((out / "results_by_scale.csv").open())}
    assert len(by_scale) == 6 and float(by_scale[("ptc", "v1")]["pass@1"]) == 0.25  # mean over the 2 tasks
    overall = list(csv.DictReader((out / "results.csv").open()))
    assert [r["harness"] for r in overall] == ["dtc", "ptc", "hybrid"]
    md = (out / "report.md").read_text()
    assert "Pass rate (pass@1) by environment scale" in md and "| model | harness | v0 | v1 |" in md
    for png in ("pass_rate_vs_scale", "context_tokens_vs_scale", "tool_output_tokens_vs_scale",
                "pass_at_k_and_programs"):
        assert (out / f"{png}.png").stat().st_size > 5_000
    # the command line on a finished sweep: everything from the cache, no fabric started
    argv = ["eval", "--config", str(ROOT / "configs" / "local.yaml"), "--model", tiny, "--out", str(out),
            "--suite", "paper",
            *fabric_overrides, f"tasks.tasks=[mid_task, {SHIPPED}]", "sweep.samples=2", "tasks.scales={v0: 1.0, v1: 1.0}"]
    assert await asyncio.to_thread(main, argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stats"] == {"jobs": total, "cached": total, "run": 0, "failed": []}
    # the paper's table (--suite paper): the library a benchmark column, the four benchmarks rows saying
    # how to add them; PTC passes 3 of 8 library rollouts (mid_task: 2/2 at v0, 1/2 at v1), DTC none
    paper = json.loads((out / "paper.json").read_text())
    rows = {r["harness"]: r for r in paper["rows"]}
    assert {r["benchmark"] for r in paper["rows"]} == {"Library"} and rows["ptc"]["pass_rate"] == 0.375
    assert rows["dtc"]["pass_rate"] == 0.0 and rows["ptc"]["rollouts"] == 8 and rows["ptc"]["tasks"] == 4
    status = {b["benchmark"]: b for b in paper["benchmarks"]}
    assert status["Library"]["status"] == "configured" and "tasks (2 tasks)" in status["Library"]["sources"]
    assert all(status[b]["status"] == "not configured" for b in ("LOCA-bench", "MCPMark", "MCP-Atlas", "Toolathlon"))
    assert "--loca CHECKOUT" in status["LOCA-bench"]["sources"]
    ratio = next(r for r in paper["ratios"] if r["benchmark"] == "Library")
    assert ratio["pass_rate_ratio"] is None  # DTC passes none: no ratio, not an infinity
    assert ratio["context_tokens_ratio"] == rows["ptc"]["context_tokens"] / rows["dtc"]["context_tokens"]
    md = (out / "paper.md").read_text()
    assert "| model | harness | Library |" in md and "| MCP-Atlas | not configured |" in md and "## PTC / DTC" in md
    assert (out / "paper.png").stat().st_size > 5_000
