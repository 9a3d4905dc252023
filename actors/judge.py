"""Judges: verifiers run outside any sandbox, on the final state an env worker shipped.

Each verification runs in a forked child process with a deadline, so a verifier that loops or
crashes costs one recorded failure (`Verdict.error`), never the judge, the worker or the sample.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import tempfile
from pathlib import Path

import ray

from envs.library import LIBRARY_DIR, get_task
from envs.task_env import EnvironmentCache, Verdict, judge, restore_state


def _verify_child(conn, root: str, task_id: str, scale: str, state: bytes, answer: str, cache_root: str) -> None:
    try:
        with tempfile.TemporaryDirectory() as tmp:
            final = restore_state(state, Path(tmp) / "final")
            verdict = judge(get_task(task_id, root), scale, final, answer, EnvironmentCache(cache_root))
        conn.send(verdict)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        conn.send(Verdict(criteria={}, reward=0.0, score=0.0, error=f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def verify_with_deadline(task_id: str, scale: str, state: bytes, answer: str, timeout_s: float,
                         library_root: str, cache_root: str) -> Verdict:
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_verify_child, args=(child, library_root, task_id, scale, state, answer, cache_root),
                       daemon=True)
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

    async def ping(self) -> int:
        return self.judged
