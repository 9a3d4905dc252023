"""The training driver end to end on the tiny model: run folder and checkpoint in process, then the
resume of that checkpoint through `ray job submit` against a real `ray start --head` with token
authentication."""

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import msgspec
import pytest

from actors.curriculum import CurriculumState
from actors.rollout_manager import ManagerState
from schema.load import ConfigError, load_config
from tests.conftest import BIN, ROOT

SMALL = [
    "tasks.tasks=[inventory_reorder_flags]", "tasks.scales={v0: 1.0, v3: 1.0}",
    "fabric.env_worker.limits={max_turns: 1, max_new_tokens: 24, max_context_tokens: 8192}",
    "fabric.env_worker.concurrency=2", "rollout.group_size=2", "train.groups_per_step=1",
    "sft.enabled=false", "eval.before=false", "eval.after=false", "wandb.mode=disabled", "ray.num_cpus=4",
    "learner.loss.filter_equal_reward_groups=false",  # an untrained model: every step counts as a step
]


def test_config_errors_name_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("train:\n  steps: many\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: Expected `int`, got `str` - at `\$.train.steps`"):
        load_config(bad)
    with pytest.raises(ConfigError, match="unknown field `stepz`"):
        load_config(None, ["train.stepz=3"])
    with pytest.raises(ConfigError, match="expected key.path=value"):
        load_config(None, ["train.steps"])
    cfg = load_config(ROOT / "configs" / "local.yaml", ["train.steps=7", "fabric.env_workers=3"])
    assert cfg.train.steps == 7 and cfg.fabric.env_workers == 3
    # values that cannot work are refused with their path before anything starts (no env worker once
    # started SFT and failed later with "no teacher trajectory"; a negative step count started a run)
    for override, bound in [("fabric.env_workers=0", "`int` >= 1 - at `$.fabric.env_workers`"),
                            ("train.steps=-1", "`int` >= 0 - at `$.train.steps`"),
                            ("rollout.group_size=0", "`int` >= 1 - at `$.rollout.group_size`"),
                            ("fabric.env_worker.limits.max_turns=0", "`int` >= 1 - at `$.fabric.env_worker.limits.max_turns`"),
                            ("fabric.env_worker.runtime.program_timeout_s=0",
                             "`float` > 0.0 - at `$.fabric.env_worker.runtime.program_timeout_s`"),
                            ("fabric.env_worker.sampling.top_p=1.5", "`float` <= 1.0 - at `$.fabric.env_worker.sampling.top_p`"),
                            ("sft.min_score=2", "`float` <= 1.0 - at `$.sft.min_score`")]:
        with pytest.raises(ConfigError, match=re.escape(f"local.yaml: Expected {bound}")):
            load_config(ROOT / "configs" / "local.yaml", [override])
    # 0 where it means none: no checkpoint but the last, no warm kernels, the synchronous loop, greedy
    zeros = load_config(ROOT / "configs" / "local.yaml", ["train.checkpoint_every=0", "fabric.env_worker.runtime.warm_pool=0",
                                                          "rollout.max_staleness=0", "fabric.env_worker.sampling.temperature=0"])
    assert zeros.train.checkpoint_every == 0 and zeros.rollout.max_staleness == 0
    paper = load_config(ROOT / "configs" / "paper-8x8-h200.yaml")
    assert paper.learner.optim.lr == 1e-6 and paper.rollout.group_size == 16 and paper.train.groups_per_step == 32
    assert paper.learner.loss.clip_low == 3e-4 and paper.learner.loss.clip_high == 4e-4



def test_a_model_teacher_file_or_checkpoint_that_is_not_there_stops_the_run_before_anything_starts(tmp_path):
    """A model path to no folder let env workers die at start ("is a node of the cluster failing?"); a
    teacher JSONL that was missing or held a line that is no trajectory was a traceback after the fabric
    had started. Now each is a ConfigError naming it, and no run folder is made."""
    from launch.train import train

    (tmp_path / "bad.jsonl").write_text('{"task_id": "t"}\n')
    (tmp_path / "empty.jsonl").write_text("\n")
    local = ROOT / "configs" / "local.yaml"
    for overrides, message in [
            (["model.path=/no/such/model"], "model '/no/such/model': no such folder"),
            ([f"sft.teacher={tmp_path / 'none.jsonl'}"], "none.jsonl: No such file or directory"),
            ([f"sft.teacher={tmp_path / 'bad.jsonl'}"], "bad.jsonl, line 1: not a trajectory (Object missing required field"),
            ([f"sft.teacher={tmp_path / 'empty.jsonl'}"], "empty.jsonl holds no trajectory")]:
        cfg = load_config(local, [f"run.out_dir={tmp_path / 'runs'}", *overrides])
        with pytest.raises(ConfigError, match=re.escape(message)):
            asyncio.run(train(cfg))
    # a --resume folder that is not a whole checkpoint (FileNotFoundError once the fabric had started)
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "driver.json").write_text('{"step": "x"}')
    cfg = load_config(local, [f"run.out_dir={tmp_path / 'runs'}"])
    with pytest.raises(ConfigError, match=re.escape(f"--resume {tmp_path / 'half'}: not a checkpoint (no rollouts.msgpack, learner")):
        asyncio.run(train(cfg, resume=str(tmp_path / "half")))
    (tmp_path / "half" / "rollouts.msgpack").write_bytes(b"")
    (tmp_path / "half" / "learner").mkdir()
    with pytest.raises(ConfigError, match=re.escape("driver.json's step is 'x', not a step number")):
        asyncio.run(train(cfg, resume=str(tmp_path / "half")))
    assert not (tmp_path / "runs").exists()

#: the demo with two env workers and three groups of four per step (24 episodes in flight)
# the curriculum and a reward term on: their state goes through the checkpoint and `ray job submit --resume`
KILL = SMALL + ["fabric.env_workers=2", "train.groups_per_step=3", "rollout.group_size=4",
                "rollout.curriculum.enabled=true", "train.reward.terms={binary: 1.0, context_efficiency: 0.2}",
                "train.reward.context_budget_tokens=64"]


@pytest.fixture(scope="module")
def checkpointed_run(tmp_path_factory, ray_session):
    """Three steps of training with a checkpoint after each, on the session's cluster, with one of the
    two env workers killed after step 2: the run that the job-submit test resumes (one training run
    fewer than checking resume in process too). `seen[step]`: (episodes done, re-runs after a death)."""
    import ray

    from launch.train import train

    seen: dict[int, tuple[int, int]] = {}

    async def on_step(step, fabric, manager):
        seen[step] = (manager.counters["episodes_done"], fabric.scheduler.counters["reruns_worker_died"])
        if step == 2:
            ray.kill(fabric.env.live[0])

    cfg = load_config(ROOT / "configs" / "local.yaml", KILL + [
        f"run.out_dir={tmp_path_factory.mktemp('runs')}", "train.steps=3", "train.checkpoint_every=1",
        "eval.after=true", "eval.samples=1"])  # evaluation after training shares the scheduler with it
    return cfg, asyncio.run(train(cfg, on_step=on_step)), seen


def test_train_writes_run_folder_and_checkpoint(checkpointed_run):
    cfg, run, _ = checkpointed_run
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["phase"] == "train"] == [1, 2, 3]
    evals = [r for r in rows if r["phase"] == "eval"]
    assert len(evals) == 1 and evals[0]["eval_after/episodes"] == 2 and evals[0]["eval_after/failed"] == 0
    assert (run / "report.md").exists() and (run / "plots" / "reward.png").exists()
    ckpt = run / "checkpoint"
    state = msgspec.msgpack.decode((ckpt / "rollouts.msgpack").read_bytes(), type=ManagerState)
    assert json.loads((ckpt / "driver.json").read_text())["step"] == 3
    assert state.updates == 3 and state.counters["groups_trained"] == 3 * cfg.train.groups_per_step
    # nothing lost at the checkpoint: every sample of every admitted, untrained group is held or pending
    # (to be re-run on resume), never both, never neither
    for g in state.groups:
        assert not set(g.samples) & set(g.pending) and set(g.samples) | set(g.pending) == set(range(cfg.rollout.group_size))
    trained, failed = state.counters["groups_trained"], state.counters["groups_failed"]
    assert state.admitted == trained + state.counters["groups_dropped_stale"] + state.counters["groups_dropped_infra"] \
        + failed + len(state.groups)
    # the learning signal: causes, zero-variance share, the curriculum (its state is in the checkpoint), the terms
    train_rows = [r for r in rows if r["phase"] == "train"]
    for r in train_rows:
        assert 0.0 <= r["rollout/zero_variance_groups"] <= 1.0 and r["rollout/infra_trained"] == 0
        assert sum(v for k, v in r.items() if k.startswith("rollout/policy/")) == r["rollout/episodes"]
        assert 0.0 <= r["rollout/reward_context_efficiency"] <= 1.0
    # the per-step draws add up to the groups admitted by the last step (a few more may start before the checkpoint)
    drawn = sum(v for r in train_rows for k, v in r.items() if k.startswith("curriculum/draws_v"))
    assert 3 * cfg.train.groups_per_step <= drawn <= state.admitted
    curriculum = msgspec.msgpack.decode(state.curriculum, type=CurriculumState)
    # it learned from every group taken (trained, or dropped as stale), in the checkpoint
    assert curriculum.counters["groups_observed"] == state.counters["groups_trained"] + \
        state.counters["groups_dropped_stale"]
    saved = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
    assert all("reward/context_efficiency" in r["metrics"] and r["cause"].startswith("policy/") for r in saved)


def test_a_killed_env_worker_delays_the_next_step_by_its_own_episodes_only(checkpointed_run):
    """Killed after step 2: step 3 arrives after at most the episodes already admitted when the worker
    died (the staleness window: step 3's groups and step 4's, which run alongside) plus the re-runs of
    what the dead worker held. It had taken 714 s, behind ~1,500 queued episodes and their re-runs."""
    cfg, run, seen = checkpointed_run
    (done2, reruns2), (done3, reruns3) = seen[2], seen[3]
    b, g = cfg.train.groups_per_step, cfg.rollout.group_size
    window = (cfg.rollout.max_staleness + 1) * b * g
    assert done3 - done2 <= window + (reruns3 - reruns2), seen
    row = [r for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if r["phase"] == "train"][-1]
    assert row["rollout/max_in_flight"] <= window
    assert row["rollout/groups_failed"] == 0 and row["rollout/duplicates"] == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ray_job_submit_resumes_the_checkpoint_on_a_head_node(checkpointed_run, tmp_path):
    """`ray job submit` against a real `ray start --head` with token authentication, resuming the
    checkpoint: the learner and the rollout manager come back and training continues at step 4."""
    _, run, _ = checkpointed_run
    ckpt = run / "checkpoint"
    state = msgspec.msgpack.decode((ckpt / "rollouts.msgpack").read_bytes(), type=ManagerState)
    pending = [idx for g in state.groups for idx in g.pending]
    # as after `source .venv/bin/activate`: the head (and so the job entrypoint) runs the venv's python
    # PROGAGENT_HOME: where a job's relative run.out_dir goes (launch/paths.py); the job inherits it
    env = dict(os.environ, RAY_AUTH_MODE="token", PATH=f"{BIN}:{os.environ['PATH']}", PROGAGENT_HOME=str(tmp_path))
    ray_bin = str(BIN / "ray")
    temp = tempfile.mkdtemp(prefix="rj", dir="/tmp")  # short: Ray's Unix socket paths are limited to 107 bytes
    # the dashboard agent's HTTP port too: its default (52365) is taken by any other cluster on the
    # machine (the test session's), and the head's job agent then never comes up
    port, dash, agent = _free_port(), _free_port(), _free_port()
    try:
        # inside the try: a head that failed half-way (its GCS may run on) is stopped too. Twice at most: a
        # port found free can be taken by another test before Ray binds it
        for attempt in range(2):
            if attempt:
                port, dash, agent = _free_port(), _free_port(), _free_port()
            started = subprocess.run([ray_bin, "start", "--head", f"--port={port}", f"--dashboard-port={dash}",
                                      f"--dashboard-agent-listen-port={agent}", "--num-cpus=4",
                                      "--disable-usage-stats", f"--temp-dir={temp}"], env=env,
                                     capture_output=True, text=True, timeout=120)
            if started.returncode == 0:
                break
            _stop_cluster(temp, port)
        assert started.returncode == 0, f"ray start failed twice:\n{started.stdout[-3000:]}\n{started.stderr[-3000:]}"
        out = tmp_path / "runs"
        cmd = [ray_bin, "job", "submit", "--address", f"http://127.0.0.1:{dash}", "--working-dir", str(ROOT),
               "--", "python", "-m", "launch.train", "--config", "configs/local.yaml", *KILL,
               "train.steps=4", "train.checkpoint_every=0", "run.out_dir=runs", "ray.address=auto",
               "--resume", str(ckpt)]
        t0 = time.time()
        for _ in range(20):  # the head's job agent starts after `ray start` returns: Ray says try again
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            if r.returncode == 0 or "No available agent to submit job" not in r.stderr + r.stdout:
                break
            time.sleep(3)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert "succeeded" in r.stdout.lower(), r.stdout[-2000:]
        runs = list(out.glob("local-*"))  # not in Ray's copy of the working dir, which the session deletes
        assert len(runs) == 1 and time.time() - t0 < 900
        assert "temporary copy of the working directory" in r.stdout and f"run folder {runs[0]}" in r.stdout
        rows = [json.loads(line) for line in (runs[0] / "metrics.jsonl").read_text().splitlines()]
        train_rows = [r for r in rows if r["phase"] == "train"]
        assert [r["step"] for r in train_rows] == [4] and rows[-1]["learner_step"] == 4.0
        assert train_rows[-1]["rollout/episodes_resubmitted"] == len(pending)
        before = msgspec.msgpack.decode(state.curriculum, type=CurriculumState)
        picked = sum(v for k, v in before.counters.items() if k.startswith("picked_"))
        assert sum(v for k, v in train_rows[-1].items() if k.startswith("curriculum/picked_")) > picked  # it went on
    finally:
        _stop_cluster(temp, port)
        shutil.rmtree(temp, ignore_errors=True)


def _stop_cluster(temp: str, port: int) -> None:
    """Stop this head node's processes only (`ray stop` would stop every Ray cluster on the machine,
    including those of tests running in parallel): those that name the cluster's temp dir or its GCS
    address (the Ray client server), and their children."""
    import psutil

    found: dict[int, psutil.Process] = {}
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(temp in arg or arg.endswith(f":{port}") for arg in p.info["cmdline"] or ()):
                # with their children: the raylet's agents rename themselves (`ray::DashboardAgent`) and
                # outlive a killed raylet, busy (a third of a core) for the rest of the session
                for q in (p, *p.children(recursive=True)):
                    found[q.pid] = q
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    procs = list(found.values())
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.terminate()
    # a short grace: some of Ray's agents take 10 s or more to act on SIGTERM, and this is test cleanup
    _, alive = psutil.wait_procs(procs, timeout=2)
    for p in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()


#: what a policy can sample into a trained turn: a call nested 1,000 deep (RecursionError out of the
#: parser), a program whose code holds a lone surrogate escape (a tokenizer crash, then the save's), a
#: program that prints one and names a tool by one (the call record), then an answer
HOSTILE_SCRIPT = [
    '<tool_call>{"name": "programmatic_tool_call", "arguments": {"code": ' + "[" * 1000 + "]" * 1000 + "}}</tool_call>",
    '<tool_call>{"name": "programmatic_tool_call", "arguments": {"code": "print(\'\\ud800\')"}}</tool_call>',
    '<tool_call>{"name": "programmatic_tool_call", "arguments": {"code": "print(chr(0xd800)); tools[chr(0xdcff)]()"}}'
    "</tool_call>",
    "ANSWER: {seed}",
]


def test_sampled_surrogates_and_deep_calls_in_trained_turns_neither_end_nor_stop_the_saves(tmp_path, ray_session):
    """A GSPO step on such turns (the replay backend forces them, with the model's real log-probs),
    rollouts.jsonl and the checkpoint written, then the run resumed from it for a second step."""
    from launch.train import train

    base = SMALL + ["fabric.generator.backend=replay", f"fabric.generator.script={json.dumps(HOSTILE_SCRIPT)}",
                    "fabric.env_worker.limits={max_turns: 4, max_new_tokens: 2048, max_context_tokens: 8192}",
                    f"run.out_dir={tmp_path}", "train.checkpoint_every=1", "eval.after=false"]
    run = asyncio.run(train(load_config(ROOT / "configs" / "local.yaml", [*base, "train.steps=1"])))
    saved = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
    assert saved and {r["step"] for r in saved} == {1}
    assert all(r["cause"].startswith("policy/") for r in saved), {r["cause"] for r in saved}
    assert all(r["metrics"]["format_errors"] >= 2 for r in saved)
    assert any("\\ud800" in o for r in saved for t in r["turns"] for o in t["observations"])
    resumed = asyncio.run(train(load_config(ROOT / "configs" / "local.yaml", [*base, "train.steps=2"]),
                                resume=str(run / "checkpoint")))
    rows = [json.loads(line) for line in (resumed / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["phase"] == "train"] == [2]


def test_a_learner_lost_before_the_last_checkpoint_is_a_learner_lost(tmp_path, ray_session):
    """The learner's node can leave while a run stalls or ends: the run's last checkpoint then finds no
    learner. That is the same LearnerLost, naming the last checkpoint written, as a loss found mid-step
    (it was an ActorDiedError traceback out of the checkpoint)."""
    import ray

    from launch.train import LearnerLost, train

    async def on_step(step, fabric, manager):
        if step == 2:
            ray.kill(fabric.learner)

    cfg = load_config(ROOT / "configs" / "local.yaml", SMALL + [f"run.out_dir={tmp_path}", "train.steps=2",
                                                                "train.checkpoint_every=1", "train.probe=false"])
    with pytest.raises(LearnerLost, match=r"the learner is gone after step 2 .* the last checkpoint is .*step 2"):
        asyncio.run(train(cfg, on_step=on_step))


def test_a_relative_out_dir_leaves_rays_working_dir_copy(tmp_path, monkeypatch):
    from launch.paths import run_root

    copy = tmp_path / "ray" / "session_1" / "runtime_resources" / "working_dir_files" / "_ray_pkg_abc"
    copy.mkdir(parents=True)
    monkeypatch.setenv("PROGAGENT_HOME", str(tmp_path / "home"))
    root, note = run_root("runs", copy)
    assert root == tmp_path / "home" / "runs" and "Ray deletes with its session" in note
    assert run_root(str(tmp_path / "abs"), copy) == (tmp_path / "abs", "")  # an absolute path is kept
    assert run_root("runs", tmp_path) == ((tmp_path / "runs").resolve(), "")  # elsewhere: as any path
    monkeypatch.delenv("PROGAGENT_HOME")
    assert run_root("runs", copy)[0] == Path.home() / "progagent" / "runs"


def test_metrics_log_offline_wandb_and_jsonl(tmp_path, monkeypatch):
    from launch.metrics import MetricsLog, read_metrics

    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    log = MetricsLog(tmp_path, "unit", {"x": 1}, wandb_mode="auto")
    assert log.mode == "offline"  # no key: offline, never a network call
    log.log("train", 1, {"rollout/reward": 0.25, "loss": 1.5})
    log.log("train", 2, {"rollout/reward": 0.5, "loss": 1.0})
    log.close()
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert [r["rollout/reward"] for r in rows] == [0.25, 0.5]
    assert list((tmp_path / "wandb").glob("offline-run-*"))
    (tmp_path / "off").mkdir()
    off = MetricsLog(tmp_path / "off", "unit", {}, wandb_mode="disabled")
    assert off.mode == "disabled" and off.wandb is None
    off.close()
