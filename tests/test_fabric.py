"""The actor fabric under failure: real Ray actors are killed while they work."""

import asyncio
import textwrap

import pytest
import ray
import torch

from actors.env_worker import EnvWorker
from actors.generator_pool import GeneratorPool
from actors.judge import Judge, judge_shipped
from actors.rollout_manager import RolloutManager, SourceSampler
from actors.scheduler import EnvWorkers, Scheduler
from envs.format.kind import TaskRef, library_source
from rollout.weights.base import make_sender
from schema.config import (
    EnvWorkerConfig,
    GeneratorSpec,
    LoopLimits,
    RolloutConfig,
    RuntimeConfig,
    WeightTransportConfig,
)
from schema.records import EpisodeRequest, Prompt, SamplingParams
from tests.test_rollout import TASK, tiny_path  # noqa: F401
from tests.test_task_format import write_task

# Handles of killed actors, held to the end of the session. Ray 2.60 can lose an actor registration
# when the out-of-scope report of an actor that was just killed reaches its GCS at the same moment
# (RegisterActor then never answers, and the next test's actors never start): holding the handle
# means no such report is ever sent.
_KILLED: list = []


@pytest.fixture
def ray_cluster(ray_session):
    """The session's cluster, and a list for the actors a test starts (`track`): they are killed after
    the test, so they do not idle through the rest of the session."""
    made: list = []
    yield made
    for handle in made:
        ray.kill(handle)
    _KILLED.extend(made)


async def within(awaitable, seconds: float, what: str):
    """`awaitable` with a deadline: a fabric that stops answering fails the test instead of hanging it."""
    try:
        return await asyncio.wait_for(awaitable, seconds)
    except TimeoutError:
        pytest.fail(f"{what} did not answer within {seconds:.0f} s")


@pytest.fixture(scope="module")
def pool(ray_session, tiny_path):  # noqa: F811
    """One generator pool (two generators) for the file: a pool start is a model load per generator,
    seconds of CPU each. The killed-generator test runs last: it changes the pool's weights."""
    handle = GeneratorPool.options(max_concurrency=100).remote(GeneratorSpec(num_cpus=0.5), 2, str(tiny_path))
    ray.get(handle.ready.remote())
    yield handle
    ray.kill(handle)


def track(made: list, *handles):
    made.extend(handles)
    return handles[0] if len(handles) == 1 else handles


WORKER = EnvWorkerConfig(concurrency=2, limits=LoopLimits(max_turns=2, max_new_tokens=48),
                         sampling=SamplingParams(temperature=1.0), runtime=RuntimeConfig(warm_pool=1))


def manager_on(workers: list, groups_per_step: int, max_staleness: int = 0, new=None) -> RolloutManager:
    scheduler = Scheduler(EnvWorkers(workers, new, WORKER.concurrency), max_attempts=3)
    return RolloutManager(scheduler, SourceSampler([library_source([TASK], {"v0": 1.0})], 0),
                          RolloutConfig(group_size=2, max_staleness=max_staleness), groups_per_step, harness="ptc")


async def test_killed_env_worker_episodes_rerun_none_lost_or_doubled(ray_cluster, tiny_path, pool):  # noqa: F811
    """Real env workers, generators and a judge: one of two workers is killed while its episodes run;
    they run again on the other, and a replacement starts."""
    judges = [Judge.options(num_cpus=0).remote()]

    def new():
        return track(ray_cluster, EnvWorker.options(num_cpus=0.5, max_concurrency=100).remote(
            WORKER, str(tiny_path), pool, judges))

    track(ray_cluster, *judges)
    workers = [new() for _ in range(2)]
    await asyncio.gather(*(w.ready.remote() for w in workers))
    manager = manager_on(workers, groups_per_step=3, new=new)
    manager.start()
    await asyncio.sleep(1.0)  # episodes are running on both workers
    ray.kill(workers[0])
    groups = await manager.take(3, 300)
    manager.stop()
    await manager.scheduler.stop()
    assert len(groups) == 3
    keys = [(t.group_id, t.sample_idx) for g in groups for t in g]
    assert len(keys) == len(set(keys)) == 6
    counters = manager.scheduler.counters
    assert counters["reruns_worker_died"] >= 1 and manager.counters["groups_failed"] == 0
    assert manager.counters["episodes_done"] == 6 and manager.counters["groups_trained"] == 3


async def test_env_workers_added_while_running_take_episodes(ray_cluster, tiny_path, pool):  # noqa: F811
    """Rollout capacity grows without a restart: a worker added mid-run gets new episodes."""
    judges = [Judge.options(num_cpus=0).remote()]
    track(ray_cluster, *judges)

    def worker():
        return track(ray_cluster, EnvWorker.options(num_cpus=0.5, max_concurrency=100).remote(
            WORKER, str(tiny_path), pool, judges))

    first = worker()
    await first.ready.remote()
    manager = manager_on([first], groups_per_step=2)
    manager.start()
    assert len(await manager.take(2, 300)) == 2  # step 1 on one worker
    second = worker()
    await second.ready.remote()
    manager.scheduler.add_worker(second)
    manager.updated(0)  # one update (the pool still serves v0): the next step's groups spread over both workers
    groups = await manager.take(2, 300)
    manager.stop()
    await manager.scheduler.stop()
    assert len(groups) == 2
    done_first, done_second = await first.ping.remote(), await second.ping.remote()
    assert done_second >= 1 and done_first + done_second == 8 == manager.counters["episodes_done"]


async def test_evaluation_completes_when_an_env_worker_dies(ray_cluster, tiny_path, pool):  # noqa: F811
    """Training's evaluation goes through the scheduler: a worker killed mid-way costs re-runs, not the
    evaluation (its round-robin gather had aborted on the first dead worker)."""
    from launch.train import evaluate
    from schema.load import load_config

    judges = [Judge.options(num_cpus=0).remote()]
    track(ray_cluster, *judges)

    def new():
        return track(ray_cluster, EnvWorker.options(num_cpus=0.5, max_concurrency=100).remote(
            WORKER, str(tiny_path), pool, judges))

    workers = [new(), new()]
    await asyncio.gather(*(w.ready.remote() for w in workers))

    class Fabric:
        scheduler = Scheduler(EnvWorkers(workers, new, WORKER.concurrency))

    cfg = load_config(None, ["eval.samples=4", "tasks.scales={v0: 1.0}"])
    running = asyncio.ensure_future(evaluate(Fabric, cfg, [library_source([TASK], {"v0": 1.0})], "before"))
    await asyncio.sleep(1.0)
    ray.kill(workers[0])
    metrics = await running
    await Fabric.scheduler.stop()
    assert metrics["eval_before/episodes"] == 4 and metrics["eval_before/failed"] == 0
    assert Fabric.scheduler.counters["reruns_worker_died"] >= 1


async def test_judge_crash_is_retried_and_verifier_failures_are_recorded(ray_cluster, tiny_path, pool, tmp_path):  # noqa: F811
    # a verifier that never returns becomes a recorded failure after its deadline
    folder = write_task(tmp_path)
    (folder / "verify.py").write_text(textwrap.dedent("""
        import time
        def verify(ctx):
            while True:
                time.sleep(1)
    """))
    from envs.format.library import load_task
    from envs.format.task_env import snapshot_state

    task = load_task(folder, trusted=True)
    task.build(tmp_path / "env", "v0")
    state = snapshot_state(tmp_path / "env")
    ref = TaskRef(task.id, "v0", str(tmp_path))
    verdict = judge_shipped(ref, state, "", 2.0, str(tmp_path / "cache"))
    assert verdict.reward == 0.0 and "timed out after 2 s" in verdict.error
    (folder / "verify.py").write_text("def verify(ctx):\n    raise RuntimeError('verifier bug')\n")
    verdict = judge_shipped(ref, state, "", 30.0, str(tmp_path / "cache"))
    assert "RuntimeError: verifier bug" in verdict.error

    # a judge actor that dies is restarted and the env worker's request retried
    judge = Judge.options(num_cpus=0).remote()
    worker = EnvWorker.options(num_cpus=0.5, max_concurrency=100).remote(WORKER, str(tiny_path), pool, [judge])
    track(ray_cluster, judge, worker)
    await within(worker.ready.remote(), 180, "a new env worker")
    await within(judge.ping.remote(), 60, "a new judge")
    ray.kill(judge, no_restart=False)
    traj = await within(worker.run.remote(EpisodeRequest(env=TaskRef(TASK, "v0"), group_id="j", sample_idx=0)),
                        300, "an episode judged by a restarted judge")
    assert traj.verifier_error is None and traj.criteria  # judged after the restart
    assert torch.tensor(traj.loss_mask).sum() > 0


@ray.remote
class FixedWeights:
    """A weight source (what a learner offers, rollout/weights/) holding one fixed version."""

    def __init__(self, version, weights):
        self.version, self.weights, self.sender = version, weights, None

    def weights_offer(self, transport, epoch, world_size):
        self.sender = make_sender(transport)
        return self.sender.offer(self.version, self.weights, epoch, world_size)

    def weights_send(self, update):
        self.sender.send(update)


async def test_killed_generator_is_replaced_with_current_weights(pool, tiny_path):  # noqa: F811
    """Last in the file: it loads new weights into the shared pool."""
    from transformers import AutoModelForCausalLM

    restarts = (await pool.stats.remote())["restarts"]
    weights = {k: v * 0.5 for k, v in AutoModelForCausalLM.from_pretrained(tiny_path).state_dict().items()}
    source = FixedWeights.options(num_cpus=0).remote(3, weights)
    assert await pool.update_weights.remote(source, WeightTransportConfig()) == 3
    handles = await pool.handles.remote()
    ray.kill(handles[0])
    outs = await asyncio.gather(*(pool.generate.remote(Prompt(list(range(10, 40))), SamplingParams(max_new_tokens=4, seed=i))
                                  for i in range(6)))
    assert all(len(o.token_ids) >= 1 and o.policy_version == 3 for o in outs)
    for _ in range(100):
        stats = await pool.stats.remote()
        if stats["restarts"] == restarts + 1 and all(s is not None for s in (await pool.health.remote())["versions"]):
            break
        await asyncio.sleep(0.2)
    assert stats["restarts"] == restarts + 1
    assert (await pool.health.remote())["versions"] == [3, 3]  # the replacement came back with v3


async def test_injected_judge_crashes_and_a_tool_server_that_will_not_start_are_masked(ray_cluster, tiny_path, pool,  # noqa: F811
                                                                                      tmp_path):
    """Real env workers, generators and judges. Half of the judge's verdicts fail by injection: each such
    episode runs again (counted as infra), the ones that fail every attempt are left out of their group,
    and no sample with an infra cause is taken. A task whose tool server dies at start: its episodes are
    tried max_attempts times, counted as infra/tool_server_start, and their group is dropped, not trained."""
    judge = Judge.options(num_cpus=0).remote(60.0, 0.5, 7)
    worker = EnvWorker.options(num_cpus=0.5, max_concurrency=100).remote(WORKER, str(tiny_path), pool, [judge])
    track(ray_cluster, judge, worker)
    await within(worker.ready.remote(), 180, "a new env worker")
    scheduler = Scheduler(EnvWorkers([worker], None, WORKER.concurrency), max_attempts=3)
    retired = {}
    manager = RolloutManager(scheduler, SourceSampler([library_source([TASK], {"v0": 1.0})], 0),
                             RolloutConfig(group_size=4, max_staleness=0), 2, harness="ptc",
                             on_retire=lambda g, why: retired.setdefault(g.group_id, (why, dict(g.masked))))
    manager.start()
    groups = await within(manager.take(2, 600), 650, "two groups under injected judge crashes")
    manager.stop()
    injected = await judge.injected_errors.remote()
    assert len(groups) == 2 and injected >= 1
    assert scheduler.counters["infra/judge_error"] == injected  # every injected crash was an infra attempt
    assert not any(t.cause.startswith("infra/") or t.verifier_error for g in groups for t in g)
    for g in groups:  # each taken group: its valid samples, and the masked ones left out, make the whole group
        why, masked = retired[g[0].group_id]
        assert why == "trained" and len(g) >= 2 and len(g) + len(masked) == 4
        assert set(masked.values()) <= {"infra/judge_error"}

    broken = write_task(tmp_path / "lib", "no_server")
    (broken / "tools.py").write_text("raise SystemExit('this server cannot start')\n")
    source = library_source(["no_server"], {"v0": 1.0}, library=str(tmp_path / "lib"))
    dropped = RolloutManager(scheduler, SourceSampler([source], 0), RolloutConfig(group_size=2, max_staleness=0), 1,
                             harness="ptc")
    dropped.start()
    assert await dropped.take(1, 600) == []  # nothing to train on: never a group of zeros
    dropped.stop()
    await scheduler.stop()
    # it stopped admitting after STALL_GROUPS groups in a row were dropped, saying why, not at the timeout
    assert dropped.counters["groups_dropped_infra"] == 8 and dropped.counters["groups_trained"] == 0
    assert "were all dropped for infra failures (the last one's: infra/tool_server_start)" in dropped.stalled
    assert dropped.counters["masked/infra/tool_server_start"] >= 2
    assert scheduler.counters["infra/tool_server_start"] >= 3 * 2  # each episode tried max_attempts times
