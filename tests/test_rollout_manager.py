"""The rollout manager and the scheduler at load: hundreds of episodes in flight on real Ray actors
(synthetic env workers: latencies and failures, no model), counted in episodes and groups, not seconds.

Each test drives the training data path as launch/train.py does: take a step's groups, "update"
(the version goes up and the workers report it, as generators would), tell the manager."""

import asyncio
from collections import Counter

import pytest
import ray

from actors.rollout_manager import RolloutManager, SourceSampler
from actors.scheduler import EnvWorkers, Scheduler
from actors.synthetic import SyntheticEnvWorker, SyntheticSpec
from envs.format.kind import library_source
from schema.config import RolloutConfig

B, G, S = 4, 4, 1  # groups per step, group size, max staleness
WINDOW = (S + 1) * B  # groups buffered or running right after each update


class Run:
    """Synthetic workers, a scheduler and a manager; a ledger of every group that leaves it."""

    def __init__(self, workers: int = 3, concurrency: int = 64, spec: SyntheticSpec | None = None,
                 capacity: int = 4096, replace: bool = True, mask_infra: bool = True, sampler=None):
        spec = spec or SyntheticSpec(median_s=0.01, tail_p=0.0, generator_error_p=0.0, broken_p=0.0)
        self.new = lambda: SyntheticEnvWorker.options(num_cpus=0, max_concurrency=1000).remote(spec)
        self.env = EnvWorkers([self.new() for _ in range(workers)], self.new if replace else None, concurrency)
        self.scheduler = Scheduler(self.env, max_attempts=3, rerun_infra=mask_infra)
        self.ledger: Counter = Counter()
        self.retired: dict[str, str] = {}
        sampler = sampler or SourceSampler([library_source(["t1", "t2", "t3"], {"v0": 1.0, "v1": 1.0})], 0)
        self.manager = RolloutManager(self.scheduler, sampler,
                                      RolloutConfig(group_size=G, max_staleness=S, capacity=capacity,
                                                    mask_infra=mask_infra), B,
                                      harness="ptc", on_retire=self._retired)
        self.version = 0

    def _retired(self, group, why: str) -> None:
        assert group.group_id not in self.retired, f"{group.group_id} retired twice"
        self.retired[group.group_id] = why
        self.ledger[why] += 1

    async def publish(self, version: int) -> None:
        self.version = version
        await asyncio.gather(*(w.load_weights.remote(version) for w in self.env.live), return_exceptions=True)

    async def step(self, timeout_s: float = 120) -> list:
        groups = await self.manager.take(B, timeout_s)
        assert len(groups) == B, f"{len(groups)} groups within {timeout_s} s"
        await self.publish(self.version + 1)
        self.manager.updated(self.version)
        return groups

    def window(self) -> int:
        m = self.manager
        return (m.accepted - m.counters["groups_trained"]) + m.running

    async def close(self) -> None:
        self.manager.stop()
        await self.scheduler.stop()
        for w in self.env.made:
            ray.kill(w)


@pytest.fixture
async def run(ray_session):
    made: list[Run] = []

    def make(**kw) -> Run:
        made.append(Run(**kw))
        return made[-1]

    yield make
    for r in made:
        await r.close()


async def test_in_flight_stays_within_the_staleness_window_before_and_after_sft(run):
    """The bound counts GSPO updates only: a learner at version 121 after 120 SFT steps admits the
    same (S + 1) × B groups as one at version 0 (it had admitted 372 groups at once)."""
    for sft_steps in (0, 120):
        r = run()
        await r.publish(sft_steps + 1)
        r.manager.set_version(sft_steps + 1)
        r.manager.start()
        for _ in range(8):
            await r.step()
            assert r.manager.in_flight <= (S + 1) * B * G
            assert r.window() == WINDOW
        assert r.manager.counters["max_in_flight"] <= (S + 1) * B * G
        assert r.manager.admitted <= (S + 8 + 1) * B
        await r.close()


@pytest.mark.parametrize("mask_infra", [True, False])
async def test_stale_drops_and_failed_groups_return_their_slot(run, mask_infra):
    """A group dropped as stale, failed for good (without masking) or left with too few valid samples
    (masking) leaves the window; the window is the same size 20 steps later, and every group admitted
    is trained, dropped, failed or still in the manager. With masking an episode that fails for good
    is left out of its group, not its group's end."""
    r = run(spec=SyntheticSpec(median_s=0.01, tail_p=0.0, generator_error_p=0.05, broken_p=0.05),
            mask_infra=mask_infra)
    r.manager.start()
    trained = await r.step()
    assert r.window() == WINDOW
    await r.publish(r.version + 5)  # a jump of the learner's version: what is buffered is now stale
    r.manager.set_version(r.version)
    for _ in range(20):
        trained += await r.step()
    m = r.manager
    assert m.counters["groups_dropped_stale"] >= 1
    assert r.ledger["stale"] == m.counters["groups_dropped_stale"] and r.ledger["failed"] == m.counters["groups_failed"]
    assert r.ledger["infra"] == m.counters["groups_dropped_infra"]
    if mask_infra:
        assert m.counters["groups_failed"] == 0 and m.counters["samples_masked"] >= 1
        assert min(len(g) for g in trained) >= 2 and min(len(g) for g in trained) < G  # some trained without a masked one
        assert not any(t.cause.startswith("infra/") for g in trained for t in g)
    else:
        assert m.counters["groups_failed"] >= 1 and m.counters["samples_masked"] == 0
        assert all(len(g) == G for g in trained)
    assert r.window() == WINDOW
    assert m.admitted == len(r.retired) + len(m.groups)  # every group once: retired or still held
    assert r.ledger["trained"] == 21 * B
    assert m.counters["max_in_flight"] <= (S + 1) * B * G


async def test_a_full_manager_stops_admission_until_the_learner_takes(run):
    r = run(capacity=2 * G)  # room for two groups' trajectories (the staleness window has room for 8)
    r.manager.start()
    m = r.manager
    await until(lambda: m.counters["episodes_done"] == 2 * G)
    await asyncio.sleep(0.3)
    assert m.admitted == 2 and m.held == 2 * G and m.counters["admission_held_full"] >= 1
    groups = await m.take(2, 30)
    assert len(groups) == 2
    await until(lambda: m.counters["episodes_done"] == 4 * G)
    await asyncio.sleep(0.3)
    assert m.admitted == 4 and m.held == 2 * G  # taking made room: two more, and no more


async def until(check, timeout_s: float = 60.0) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the condition did not hold in time")


async def test_a_dead_workers_episodes_rerun_oldest_group_first_none_lost_or_doubled(run):
    """Hundreds in flight; one of two workers is killed: its episodes run again on the other (and on
    its replacement), older groups first, and every sample arrives exactly once."""
    spec = SyntheticSpec(median_s=0.05, sigma=0.8, tail_p=0.05, tail_s=0.4, generator_error_p=0.0, broken_p=0.0,
                         verifier_error_p=0.05)
    r = run(workers=2, concurrency=200, spec=spec)
    r.manager.start()
    await r.step()
    await asyncio.sleep(0.1)  # episodes are running on both workers
    before = r.manager.counters["episodes_done"]
    ray.kill(r.env.live[0])
    groups = await r.step()
    after = r.manager.counters["episodes_done"]
    # the step may be served by groups finished before Ray reported the death to the dead worker's
    # slots (a busy host: seconds); its episodes are re-run once it does
    for _ in range(300):
        if r.scheduler.counters["reruns_worker_died"]:
            break
        await asyncio.sleep(0.1)
    reruns = r.scheduler.counters["reruns_worker_died"]
    assert reruns >= 1
    # the step after the kill waits for its own groups, which go first: at most the window's episodes
    # (what was running when the worker died) plus the re-runs of the dead worker's episodes
    assert after - before <= (S + 1) * B * G + reruns
    keys = [(t.group_id, t.sample_idx) for g in groups for t in g]
    assert len(keys) == len(set(keys)) == B * G
    for _ in range(4):
        await r.step()
    assert r.manager.counters["duplicates"] == 0 and r.manager.counters["groups_failed"] == 0
    for _ in range(100):
        if r.scheduler.counters["workers_replaced"] == 1:
            break
        await asyncio.sleep(0.1)
    assert r.scheduler.counters["workers_replaced"] == 1 and len(r.env.live) == 2


async def test_state_resumes_to_the_same_next_batch(run):
    """A manager restored from `state()` takes the same next batch as the one that kept going."""
    spec = SyntheticSpec(median_s=0.01, sigma=1.0, tail_p=0.1, tail_s=0.2, generator_error_p=0.1, broken_p=0.02)
    r = run(spec=spec)
    r.manager.start()
    for _ in range(3):
        await r.step()
    state = r.manager.state()
    version = r.version
    expected = [[(t.group_id, t.sample_idx, t.token_ids, t.reward) for t in g] for g in await r.manager.take(B, 120)]
    await r.close()
    again = run(spec=spec)
    again.manager.load_state(state)
    await again.publish(version)
    again.manager.set_version(version)
    again.manager.start()
    got = [[(t.group_id, t.sample_idx, t.token_ids, t.reward) for t in g] for g in await again.manager.take(B, 120)]
    assert got == expected


async def test_every_worker_gone_fails_what_is_queued_instead_of_waiting(ray_session):
    env = EnvWorkers([SyntheticEnvWorker.options(num_cpus=0).remote(SyntheticSpec(median_s=5.0))], None, 4)
    scheduler = Scheduler(env, max_attempts=3)
    from envs.format.kind import TaskRef
    from schema.records import EpisodeRequest

    reqs = [EpisodeRequest(env=TaskRef("t", "v0"), group_id=f"g{i}", sample_idx=0) for i in range(6)]
    pending = asyncio.ensure_future(scheduler.run_all(reqs))
    await asyncio.sleep(0.5)
    ray.kill(env.live[0])
    outcomes = await asyncio.wait_for(pending, 30)
    assert [o.failure for o in outcomes] == ["infra/worker_died"] * 6
    await scheduler.stop()


async def test_injected_judge_failures_never_reach_the_learner_as_zeros(run):
    """100 groups (400 episodes) with 10 % of judge calls failing on each attempt and 2 % of samples whose
    judge always fails: the failures are re-run, the hopeless ones masked, and not one sample with an infra
    cause is taken for training; without masking, the same faults train as zeros."""
    from learner.batch import rl_samples
    from schema.config import PolicyLossConfig

    spec = SyntheticSpec(median_s=0.005, tail_p=0.0, generator_error_p=0.0, broken_p=0.0, verifier_error_p=0.10,
                         judge_broken_p=0.02)
    counts = {}
    for mask in (True, False):
        r = run(spec=spec, mask_infra=mask, workers=2)
        r.manager.start()
        trained = []
        for _ in range(25):
            trained += await r.step()
        m, sched = r.manager, r.scheduler.counters
        infra = sum(t.cause.startswith("infra/") for g in trained for t in g)
        counts[mask] = (infra, m.counters["samples_masked"], sched.get("infra/judge_error", 0))
        assert len(trained) == 100
        if mask:
            assert infra == 0
            # ~10 % of ~400 first attempts failed, and re-ran; the always-failing ones were masked
            assert sched["infra/judge_error"] >= 20 and m.counters["samples_masked"] >= 1
            assert m.counters["masked/infra/judge_error"] == m.counters["samples_masked"]
            samples, _ = rl_samples(trained, PolicyLossConfig())
            assert len(samples) == sum(len(g) for g in trained) < 100 * G  # masked ones are not in any group
        else:
            assert infra >= 20 and m.counters["samples_masked"] == 0  # fake zeros, trained
            assert all(t.reward == 0.0 for g in trained for t in g if t.cause.startswith("infra/"))
        await r.close()
    assert counts[True][0] == 0 < counts[False][0]


def _one_task_curriculum(seed: int = 0, **kw):
    from actors.curriculum import CurriculumSampler
    from schema.config import CurriculumConfig

    return CurriculumSampler([library_source(["t1"], {"v0": 1.0, "v1": 1.0, "v2": 1.0})], seed,
                             CurriculumConfig(enabled=True, **kw))


async def test_the_curriculum_moves_a_solved_task_to_its_next_scale_and_resumes_exactly(run):
    """A scripted policy that always solves v0 and never v1: after a few groups the sampler draws v1 of
    the task (its frontier) almost always, and says so; a manager restored from its state makes the
    same next draws as the one that went on."""
    spec = SyntheticSpec(median_s=0.005, tail_p=0.0, generator_error_p=0.0, broken_p=0.0, verifier_error_p=0.0,
                         pass_by_scale={"v0": 1.0, "v1": 0.0, "v2": 0.0})
    r = run(spec=spec, sampler=_one_task_curriculum(explore=0.1))
    r.manager.start()
    drawn = []
    for _ in range(10):  # 40 groups
        drawn += [(g[0].scale) for g in await r.step()]
    report = r.manager.stats()
    assert report["curriculum/frontier_v1"] == 1 and report["curriculum/promoted_from_v0"] == 1
    assert drawn[:4].count("v0") >= 3  # the frontier starts at the first scale (one draw in ten explores)
    late = drawn[-20:]
    assert late.count("v1") >= 15, late  # concentrated on the frontier (the rest: the 10 % exploration share)
    assert report["draws_v1"] > report["draws_v0"]
    state = r.manager.state()
    await r.close()

    def draws(manager, n=60):
        return [manager.sampler.draw() for _ in range(n)]

    again = run(spec=spec, sampler=_one_task_curriculum(explore=0.1))
    again.manager.load_state(state)
    assert again.manager.sampler.report() == r.manager.sampler.report()
    same = draws(again.manager)
    assert same == draws(r.manager) and {s for _, _, s in same} >= {"v1", "v0"}  # not a trivial sequence


async def test_a_group_left_with_one_valid_sample_is_dropped_and_counted(ray_session):
    """Groups of 2 where a fifth of the samples' judges always fail: a group with one valid sample left has
    no baseline for its advantage; it is dropped ("infra"), counted, and frees its slot; every group
    taken has both samples."""
    spec = SyntheticSpec(median_s=0.005, tail_p=0.0, generator_error_p=0.0, broken_p=0.0, verifier_error_p=0.0,
                         judge_broken_p=0.2)
    env = EnvWorkers([SyntheticEnvWorker.options(num_cpus=0, max_concurrency=1000).remote(spec)], None, 64)
    scheduler = Scheduler(env, max_attempts=3)
    gone: list = []
    manager = RolloutManager(scheduler, SourceSampler([library_source(["t1", "t2"], {"v0": 1.0})], 0),
                             RolloutConfig(group_size=2, max_staleness=0), 4, harness="ptc",
                             on_retire=lambda g, why: gone.append((why, len(g.samples), len(g.masked))))
    manager.start()
    taken = []
    for version in range(1, 11):
        taken += await manager.take(4, 60)
        await asyncio.gather(*(w.load_weights.remote(version) for w in env.live))  # what generators report
        manager.updated(version)
    manager.stop()
    await scheduler.stop()
    dropped = [(n, m) for why, n, m in gone if why == "infra"]
    assert len(taken) == 40 and all(len(g) == 2 for g in taken)
    assert manager.counters["groups_dropped_infra"] == len(dropped) >= 3
    assert {n + m for n, m in dropped} == {2} and {n for n, _ in dropped} <= {0, 1}
    assert sum(1 for n, _ in dropped if n == 1) >= 1  # one valid sample left: dropped all the same
    assert scheduler.counters["infra/judge_error"] == 3 * manager.counters["samples_masked"]  # each tried 3 times


async def test_a_fabric_that_only_fails_stops_admission_and_says_why(ray_session):
    """Every judge fails: after STALL_GROUPS groups in a row are dropped, the manager admits no more and
    `take` returns at once with the reason, instead of burning the cluster until the step's timeout."""
    from actors.rollout_manager import STALL_GROUPS

    spec = SyntheticSpec(median_s=0.005, tail_p=0.0, generator_error_p=0.0, broken_p=0.0, verifier_error_p=0.0,
                         judge_broken_p=1.0)
    env = EnvWorkers([SyntheticEnvWorker.options(num_cpus=0, max_concurrency=1000).remote(spec)], None, 64)
    scheduler = Scheduler(env, max_attempts=2)
    manager = RolloutManager(scheduler, SourceSampler([library_source(["t1"], {"v0": 1.0})], 0),
                             RolloutConfig(group_size=2, max_staleness=1), 2, harness="ptc")
    manager.start()
    assert await asyncio.wait_for(manager.take(2, 600), 120) == []
    manager.stop()
    await scheduler.stop()
    assert manager.stalled and "were all dropped for infra failures (the last one's: infra/judge_error)" in manager.stalled
    assert STALL_GROUPS <= manager.counters["groups_dropped_infra"] <= STALL_GROUPS + 4  # what was already running
    assert manager.admitted == manager.counters["groups_dropped_infra"] and manager.running == 0
