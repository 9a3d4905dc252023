"""Tasks as episodes of the runtime: built environments, the task's MCP server, the judge.

    cache = EnvironmentCache()
    ep = await open_task_episode(runtime, task, "v2", cache)     # kernel + task tool server
    ... ep.run_program(...) / ep.call_tool(...) ...
    verdict = judge(task, "v2", ep.final_state(), answer, cache)  # outside any sandbox
    await ep.close()

Environments are built once per (task, scale) into the cache and copied into each episode (a group
of 16 rollouts builds once). The verifier reads the episode's final state and a pristine copy of
the initial state; neither it nor the oracle is ever inside the sandbox.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import msgspec

from envs.library import Task, copy_environment
from envs.runtime.episode import Episode, EpisodeState, Runtime
from envs.runtime.upstream import Upstream, UpstreamSpec
from envs.task_server import build_server

TASK_UPSTREAM = "task"


class Verdict(msgspec.Struct):
    criteria: dict[str, bool]
    reward: float  # 1.0 when every criterion passes, else 0.0 (binary, as in the paper)
    score: float  # fraction of criteria passed
    error: str | None = None  # the verifier itself failed (recorded, never a lost sample)


class EnvironmentCache:
    """Built environments by (task, scale, seed, code fingerprint); safe across threads."""

    def __init__(self, root: str | Path | None = None):
        self._tmp = None if root else tempfile.mkdtemp(prefix="progagent-envs-")
        self.root = Path(root or self._tmp)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def key(self, task: Task, scale: str) -> str:
        h = hashlib.sha256((task.dir / "data.py").read_bytes())
        h.update(json.dumps([scale, task.spec.seed, task.spec.scales.rows, task.spec.scales.files]).encode())
        return f"{task.id}/{scale}-{h.hexdigest()[:12]}"

    def get(self, task: Task, scale: str) -> Path:
        key = self.key(task, scale)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            path = self.root / key
            path.parent.mkdir(parents=True, exist_ok=True)
            if not (path / ".complete").exists():
                # build aside, then rename: other processes sharing the cache never see a half build
                tmp = path.parent / f".{path.name}.{os.getpid()}.{threading.get_ident()}"
                shutil.rmtree(tmp, ignore_errors=True)
                task.build(tmp, scale)
                (tmp / ".complete").write_text("")
                if path.exists() and not (path / ".complete").exists():
                    shutil.rmtree(path, ignore_errors=True)  # left over from an interrupted build
                try:
                    tmp.rename(path)
                except OSError:  # another process finished first
                    shutil.rmtree(tmp, ignore_errors=True)
            return path

    def cleanup(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)


def task_upstream(task: Task, env_root: Path, transport: str = "inprocess") -> Upstream | UpstreamSpec:
    if transport == "inprocess":
        return Upstream(UpstreamSpec(TASK_UPSTREAM), server_object=build_server(task, env_root))
    if transport == "stdio":
        return UpstreamSpec(TASK_UPSTREAM, [sys.executable, "-m", "envs.task_server", "--task", str(task.dir),
                                            "--root", str(env_root)])
    raise ValueError(f"unknown task server transport {transport!r}; expected 'inprocess' or 'stdio'")


async def open_task_episode(runtime: Runtime, task: Task, scale: str, cache: EnvironmentCache,
                            transport: str = "inprocess") -> Episode:
    """A fresh sandboxed episode over a copy of the built environment and the task's MCP server."""
    import asyncio

    built = await asyncio.to_thread(cache.get, task, scale)

    async def prepare(env_root: Path) -> list[Upstream | UpstreamSpec]:
        await asyncio.to_thread(copy_environment, built, env_root)
        return [task_upstream(task, env_root, transport)]

    return await runtime.open_episode(prepare)


def judge(task: Task, scale: str, state: EpisodeState | Path, answer: str, cache: EnvironmentCache) -> Verdict:
    """Run the verifier outside the sandbox; a crashing verifier is a recorded failure."""
    final_root = Path(state.env_root) if isinstance(state, EpisodeState) else Path(state)
    try:
        criteria = task.verify(final_root, cache.get(task, scale), answer, scale)
    except Exception as exc:  # noqa: BLE001
        return Verdict(criteria={}, reward=0.0, score=0.0, error=f"{type(exc).__name__}: {exc}")
    passed = sum(criteria.values())
    return Verdict(criteria=criteria, reward=float(passed == len(criteria)), score=passed / len(criteria))


def snapshot_state(root: str | Path) -> bytes:
    """The final environment (db.sqlite + workspace/) as tar bytes, to judge it on another node."""
    import io
    import tarfile

    root = Path(root)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(root / "db.sqlite", arcname="db.sqlite")
        tar.add(root / "workspace", arcname="workspace")
    return buf.getvalue()


def restore_state(data: bytes, dst: str | Path) -> Path:
    import io
    import tarfile

    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(dst, filter="data")
    return dst
