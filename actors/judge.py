"""Judges: verifiers run outside any sandbox, on the final state an env worker shipped.

Each verification runs in a forked child process with a deadline, so a verifier that loops or
crashes costs one recorded failure (`Verdict.error`), never the judge, the worker or the sample.
`judge` verifies a task of our library; `judge_harbor` an imported Harbor task (tests/test.sh on the
shipped container tree; envs/harbor_run.py).
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import tempfile
from collections.abc import Callable
from pathlib import Path

import ray

from envs.library import LIBRARY_DIR, Task, TaskLoadError, get_task
from envs.task_env import EnvironmentCache, Verdict, judge, restore_state


def _verify_child(conn, fn: Callable[..., Verdict], args: tuple) -> None:
    try:
        conn.send(fn(*args))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        conn.send(Verdict(criteria={}, reward=0.0, score=0.0, error=f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def run_with_deadline(fn: Callable[..., Verdict], args: tuple, timeout_s: float) -> Verdict:
    """`fn(*args)` in a forked child: a timeout, a crash or an exception is a Verdict with `error`."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_verify_child, args=(child, fn, args), daemon=True)
    proc.start()
    child.close()
    try:
        if parent.poll(timeout_s):
            return parent.recv()
        return Verdict(criteria={}, reward=0.0, score=0.0, error=f"verifier timed out after {timeout_s:.0f} s")
    except EOFError:
        return Verdict(criteria={}, reward=0.0, score=0.0, error=f"verifier crashed (exit code {proc.exitcode})")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()


def _verify_task(task: Task, scale: str, state: bytes, answer: str, cache_root: str) -> Verdict:
    with tempfile.TemporaryDirectory() as tmp:
        final = restore_state(state, Path(tmp) / "final")
        return judge(task, scale, final, answer, EnvironmentCache(cache_root))


def verify_with_deadline(task_id: str, scale: str, state: bytes, answer: str, timeout_s: float,
                         library_root: str, cache_root: str) -> Verdict:
    """The task is loaded here, before the fork: a task that did not ship verifies in bubblewrap through
    this process's code runner (envs/code_runner.py), which must outlive the forked child."""
    try:
        task = get_task(task_id, library_root)
    except TaskLoadError as exc:
        return Verdict(criteria={}, reward=0.0, score=0.0, error=f"TaskLoadError: {exc}")
    return run_with_deadline(_verify_task, (task, scale, state, answer, cache_root), timeout_s)


def verify_harbor_with_deadline(path: str, state: bytes, answer: str, timeout_s: float | None = None) -> Verdict:
    """An imported Harbor task's container tree (envs/harbor_run.snapshot_tree), judged by its tests/test.sh.

    test.sh is killed at its own [verifier] timeout_sec; the child's deadline is that plus
    JUDGE_GRACE_S (or `timeout_s`). A task that no longer loads is a recorded error too."""
    from envs.harbor_import import HarborTaskError, load_harbor_task
    from envs.harbor_run import JUDGE_GRACE_S, judge_snapshot, script_limits

    script_limits()  # made here, before the fork: the child's test.sh runs in limits this process releases

    if timeout_s is None:
        try:
            timeout_s = load_harbor_task(path).verifier_timeout_s + JUDGE_GRACE_S
        except HarborTaskError as exc:
            return Verdict(criteria={}, reward=0.0, score=0.0, error=f"HarborTaskError: {exc}")
    return run_with_deadline(judge_snapshot, (path, state, answer), timeout_s)


@ray.remote(max_restarts=-1)
class Judge:
    def __init__(self, library_root: str = str(LIBRARY_DIR), timeout_s: float = 60.0):
        self.library_root = library_root
        self.timeout_s = timeout_s
        self.cache_root = tempfile.mkdtemp(prefix="progagent-judge-")
        EnvironmentCache(self.cache_root)  # the initial states are built on demand, once per (task, scale)
        self.judged = 0

    async def judge(self, task_id: str, scale: str, state: bytes, answer: str) -> Verdict:
        self.judged += 1
        return await asyncio.to_thread(verify_with_deadline, task_id, scale, state, answer, self.timeout_s,
                                       self.library_root, self.cache_root)

    async def judge_harbor(self, path: str, state: bytes, answer: str) -> Verdict:
        """An imported Harbor task (its folder, as this node sees it): tests/test.sh on the shipped tree."""
        self.judged += 1
        return await asyncio.to_thread(verify_harbor_with_deadline, path, state, answer)

    async def ping(self) -> int:
        return self.judged
