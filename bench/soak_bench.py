"""Soak benchmark of the rollout manager and the scheduler: hundreds of GSPO steps with faults.

    .venv/bin/python -m bench.soak_bench [--steps 300] [--kill-every 25]

Real Ray actors run the episodes (actors/synthetic.SyntheticEnvWorker: long-tailed latencies,
generator errors, groups whose episodes always fail, verifier errors; no model), driven by the same
data path as launch/train.py: take a step's groups, update (the version goes up and the workers
report it), tell the manager. Every `--kill-every` steps one env worker is killed; the scheduler
re-runs its episodes and starts a replacement.

Printed as one JSON object:
- accounting: every (group_id, sample_idx) admitted is trained, dropped (stale or infra), failed, or still in
  the manager, exactly once (`accounted_once`);
- the in-flight window right after each update (groups buffered or running; episodes in flight):
  min and max over the run (constant when admission is right);
- the driver's memory every 50 steps: its Python heap (tracemalloc, from step 10), its RSS (which
  also holds Ray's native side) and the trajectories the manager holds (flat when nothing leaks);
- resume: the manager's state after step `--resume-at`, loaded into a new manager on a new scheduler,
  gives the same next batch (group ids, sample indices, token ids, rewards) as the run that went on;
- step times, faults injected and what the scheduler did about them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import time
import tracemalloc
from collections import Counter

import ray

from actors.rollout_manager import Group, RolloutManager, SourceSampler
from actors.scheduler import EnvWorkers, Scheduler
from actors.synthetic import SyntheticEnvWorker, SyntheticSpec
from envs.format.kind import library_source
from launch.loopback import loopback_only
from schema.config import RolloutConfig


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Soak:
    def __init__(self, args: argparse.Namespace, spec: SyntheticSpec):
        self.args = args
        self.new = lambda: SyntheticEnvWorker.options(num_cpus=0, max_concurrency=10_000).remote(spec)
        self.env = EnvWorkers([self.new() for _ in range(args.workers)], self.new, args.concurrency)
        self.scheduler = Scheduler(self.env, max_attempts=3)
        #: times each sample was accounted for, at (admission number × group size + sample index): a
        #: byte a sample, so that the ledger itself does not show up as the driver's memory growing
        self.fate = bytearray()
        self.why: Counter = Counter()
        self.manager = RolloutManager(self.scheduler, SourceSampler([library_source(
                                          [f"task{i}" for i in range(12)], {"v0": 1.0, "v1": 1.0, "v2": 1.0, "v3": 1.0})], 0),
                                      RolloutConfig(group_size=args.group_size, max_staleness=args.max_staleness),
                                      args.groups_per_step, harness="ptc", seed=1, on_retire=self.retired)
        self.version = 0

    def account(self, group: Group) -> None:
        g = self.args.group_size
        if len(self.fate) < (group.seq + 1) * g:
            self.fate.extend(bytes((group.seq + 1) * g - len(self.fate)))
        for idx in range(g):
            self.fate[group.seq * g + idx] += 1

    def retired(self, group: Group, why: str) -> None:
        self.why[why] += 1
        self.account(group)

    async def publish(self, version: int) -> None:
        self.version = version
        await asyncio.gather(*(w.load_weights.remote(version) for w in self.env.live), return_exceptions=True)

    async def step(self) -> list:
        groups = await self.manager.take(self.args.groups_per_step, 600)
        if len(groups) < self.args.groups_per_step:
            raise RuntimeError(f"a step got {len(groups)} groups in 600 s: {self.manager.stats()}")
        await self.publish(self.version + 1)
        self.manager.updated(self.version)
        return groups


def batch_view(groups: list) -> list:
    return [[(t.group_id, t.sample_idx, t.token_ids, t.reward) for t in g] for g in groups]


async def soak(args: argparse.Namespace) -> dict:
    spec = SyntheticSpec(median_s=args.median_s, sigma=0.8, tail_p=0.02, tail_s=args.tail_s,
                         generator_error_p=0.03, broken_p=0.003, verifier_error_p=0.02)
    run = Soak(args, spec)
    m = run.manager
    rng = random.Random(0)
    window_groups, window_episodes, step_s, rss, held, heap = [], [], [], {}, {}, {}
    kills = 0
    saved: tuple[bytes, int] | None = None
    expected = None
    m.start()
    t_start = time.perf_counter()
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        groups = await run.step()
        step_s.append(time.perf_counter() - t0)
        if step == args.resume_at + 1:
            expected = batch_view(groups)
        window_groups.append((m.accepted - m.counters["groups_trained"]) + m.running)
        window_episodes.append(m.in_flight)
        if step == args.resume_at:
            saved = (m.state(), run.version)
        if step == 10:
            tracemalloc.start(1)
        if step % 10 == 0:
            rss[step], held[step] = rss_mb(), m.held
            heap[step] = tracemalloc.get_traced_memory()[0] / 2**20
        if args.kill_every and step % args.kill_every == 0 and run.env.live:
            ray.kill(rng.choice(run.env.live))
            kills += 1
    wall = time.perf_counter() - t_start
    tracemalloc.stop()
    m.stop()
    # everything admitted is accounted for exactly once: retired (trained, stale, infra, failed) or still held
    for g in m.groups.values():
        run.account(g)
    admitted = m.admitted
    counts = Counter(run.fate)
    accounted_once = counts == Counter({1: admitted * args.group_size}) and len(run.fate) == admitted * args.group_size
    stats = m.stats()
    await run.scheduler.stop()

    # resume: the state after step resume_at, into a new manager on a new scheduler and new workers
    again = Soak(args, spec)
    again.manager.load_state(saved[0])
    await again.publish(saved[1])
    again.manager.set_version(saved[1])
    again.manager.start()
    resumed = batch_view(await again.manager.take(args.groups_per_step, 600))
    again.manager.stop()
    await again.scheduler.stop()
    for w in [*run.env.made, *again.env.made]:
        ray.kill(w)

    late = max(rss)
    return {
        "steps": args.steps, "groups_per_step": args.groups_per_step, "group_size": args.group_size,
        "max_staleness": args.max_staleness, "env_workers": args.workers, "wall_s": round(wall, 1),
        "accounting": {"admitted_groups": admitted, "samples": admitted * args.group_size,
                       "accounted_once": accounted_once, "times_accounted": dict(counts),
                       "groups": {"trained": run.why["trained"], "dropped_stale": run.why["stale"],
                                  "failed": run.why["failed"], "dropped_infra": run.why["infra"],
                                  "still_held": len(m.groups)},
                       "samples_masked": stats["samples_masked"]},
        "window": {"groups_after_update": [min(window_groups), max(window_groups)],
                   "expected_groups": (args.max_staleness + 1) * args.groups_per_step,
                   "episodes_in_flight_after_update": [min(window_episodes), max(window_episodes)],
                   "max_in_flight_ever": stats["max_in_flight"],
                   "bound_episodes": (args.max_staleness + 1) * args.groups_per_step * args.group_size},
        "memory": {"driver_python_heap_mb_every_50_steps": [round(heap[k], 2) for k in sorted(heap) if k % 50 == 0],
                   "driver_rss_mb_every_50_steps": [round(rss[k], 1) for k in sorted(rss) if k % 50 == 0],
                   "driver_rss_last_over_step_50": round(rss[late] / rss[min(50, late)], 3),
                   "manager_held_trajectories_every_50_steps": [held[k] for k in sorted(held) if k % 50 == 0]},
        "resume": {"at_step": args.resume_at, "same_next_batch": resumed == expected},
        "faults": {"workers_killed": kills, "workers_replaced": stats["scheduler_workers_replaced"],
                   "episode_reruns_after_a_death": stats["scheduler_reruns_worker_died"],
                   "retries": stats["scheduler_retries"], "episodes_failed": stats["episodes_failed"]},
        "step_s": {"p50": round(statistics.median(step_s), 3), "p90": round(sorted(step_s)[int(0.9 * len(step_s))], 3),
                   "max": round(max(step_s), 3)},
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--resume-at", type=int, default=150)
    p.add_argument("--kill-every", type=int, default=25)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--groups-per-step", type=int, default=8)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-staleness", type=int, default=1)
    p.add_argument("--median-s", type=float, default=0.02)
    p.add_argument("--tail-s", type=float, default=0.5)
    args = p.parse_args()
    loopback_only()  # launch/loopback.py
    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        print(json.dumps(asyncio.run(soak(args)), indent=2))
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
