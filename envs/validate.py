"""`progagent tasks validate`: every task's claims, checked through the real sandboxed runtime.

For each task: the oracle passes at v0–v3 (programs run in the sandboxed kernel, tools served by the
task's MCP server); the verifier fails on the untouched environment with an empty answer and on
every wrong solution in wrong/ at every scale (run through the sandbox at v0, in process — they are
the repository's own trusted programs — at v1–v3 to keep the whole library inside CI time);
building twice gives identical bytes; database and workspace grow with scale; instruction and tool
schemas are identical at every scale. `validate_parallel` spreads tasks over processes (one
runtime each) so every core works.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import msgspec

from envs.library import SCALE_NAMES, Task
from envs.runtime.episode import Runtime
from envs.runtime.upstream import ToolCallRecord
from envs.task_env import EnvironmentCache, Verdict, judge, open_task_episode
from envs.taskcheck import env_stats, split_cells, tree_digest

READ_ANSWER = ("import json as _json\n"
               "print(_json.dumps(str(final_answer)) if 'final_answer' in globals() else 'null')")


class SolutionRun(msgspec.Struct):
    """One program run as a PTC trajectory: its cells, what they printed, the calls they made."""

    answer: str
    verdict: Verdict
    cells: list[str]
    outputs: list[str]
    errors: list[str]
    calls: list[ToolCallRecord]
    tools: list[dict[str, Any]]
    seconds: float


async def run_solution(runtime: Runtime, task: Task, scale: str, cache: EnvironmentCache, program: str,
                       transport: str = "inprocess") -> SolutionRun:
    """`program` cell by cell in a fresh episode (the task's MCP server served by `transport`), then judged."""
    t0 = time.perf_counter()
    ep = await open_task_episode(runtime, task, scale, cache, transport)
    try:
        cells, outputs, errors = split_cells(program), [], []
        for cell in cells:
            r = await ep.run_program(cell)
            outputs.append(r.text)
            if r.is_error:
                errors.append(r.text[-500:])
        calls = list(ep.call_log)
        r = await ep.run_program(READ_ANSWER)
        try:
            answer = json.loads(r.text.strip().splitlines()[-1]) or ""
        except (ValueError, IndexError):
            answer = ""
        verdict = await asyncio.to_thread(judge, task, scale, ep.final_state(), answer, cache)
        return SolutionRun(answer=answer, verdict=verdict, cells=cells, outputs=outputs, errors=errors, calls=calls,
                           tools=ep.tools(), seconds=time.perf_counter() - t0)
    finally:
        await ep.close()


def _wrong_in_process(task: Task, scale: str, cache: EnvironmentCache, source: str) -> float:
    import shutil
    import tempfile
    from pathlib import Path

    from envs.library import copy_environment
    from envs.taskcheck import run_program_inprocess

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        copy_environment(cache.get(task, scale), work)
        try:
            answer, _, _ = run_program_inprocess(task, work, source)
        except Exception:  # noqa: BLE001 - a crashing wrong solution leaves whatever state it made
            answer = ""
        reward = judge(task, scale, work, answer, cache).reward
        shutil.rmtree(work, ignore_errors=True)
    return reward


async def validate_task(runtime: Runtime, task: Task, cache: EnvironmentCache,
                        scales: tuple[str, ...] = SCALE_NAMES, trusted: bool = True,
                        transport: str = "inprocess") -> dict[str, Any]:
    """`trusted=False` (model-written tasks, synth/): wrong solutions run in the sandbox at every scale.
    `transport`: how the task's MCP server runs (envs/task_env.py; "sandboxed" for model-written tools.py)."""
    report: dict[str, Any] = {"task": task.id, "domain": task.spec.domain, "scales": {}, "problems": []}
    problems: list[str] = report["problems"]
    try:
        n_tools = len(task.tool_names())
    except Exception as exc:  # noqa: BLE001 - a broken task is reported, not raised
        problems.append(str(exc))
        report["ok"] = False
        return report
    if n_tools < 5:
        problems.append(f"only {n_tools} tools (at least 5 required)")
    wrong = task.wrong_solutions()
    if len(wrong) < 2:
        problems.append(f"only {len(wrong)} wrong solutions (at least 2 required)")
    schemas = {}
    for scale in scales:
        rep: dict[str, Any] = {}
        report["scales"][scale] = rep
        try:
            built = await asyncio.to_thread(cache.get, task, scale)
            again = cache.root / "again" / task.id / scale
            await asyncio.to_thread(task.build, again, scale)
            if await asyncio.to_thread(tree_digest, built) != await asyncio.to_thread(tree_digest, again):
                problems.append(f"{scale}: building twice gives different bytes")
            rep.update(env_stats(built))
            untouched = await asyncio.to_thread(judge, task, scale, built, "", cache)
            if untouched.reward == 1.0:
                problems.append(f"{scale}: the untouched environment with an empty answer passes")
            oracle = await run_solution(runtime, task, scale, cache, task.oracle_source, transport)
            rep.update(oracle_s=round(oracle.seconds, 2), oracle_calls=len(oracle.calls),
                       oracle_score=oracle.verdict.score)
            schemas[scale] = json.dumps(oracle.tools, sort_keys=True)
            if oracle.verdict.reward != 1.0:
                failed = [k for k, v in oracle.verdict.criteria.items() if not v]
                problems.append(f"{scale}: oracle fails {failed or oracle.verdict.error}; errors={oracle.errors[:1]}")
            for name, source in wrong.items():
                if scale == scales[0] or not trusted:  # through the sandbox (once, for trusted tasks) …
                    reward = (await run_solution(runtime, task, scale, cache, source, transport)).verdict.reward
                else:  # … and in process at the other scales (trusted code; it tests the verifier)
                    reward = await asyncio.to_thread(_wrong_in_process, task, scale, cache, source)
                if reward == 1.0:
                    problems.append(f"{scale}: the verifier passes wrong/{name}.py")
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{scale}: {type(exc).__name__}: {exc}")
    if len(set(schemas.values())) > 1:
        problems.append("tool schemas differ between scales")
    for key in ("db_bytes", "rows", "files"):
        values = [report["scales"][s].get(key, 0) for s in scales]
        if any(b <= a for a, b in zip(values, values[1:], strict=False)):
            problems.append(f"{key} does not grow with scale: {values}")
    report["ok"] = not problems
    return report


def _validate_chunk(folders: list[str], concurrency: int) -> list[dict[str, Any]]:
    import uvloop

    from envs.library import load_task

    return uvloop.run(validate([load_task(f) for f in folders], concurrency=concurrency))


def validate_parallel(tasks: list[Task], processes: int, concurrency: int = 2,
                      on_done: Any = None) -> list[dict[str, Any]]:
    """Tasks dealt round-robin to `processes` worker processes; reports in task order."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    if processes <= 1 or len(tasks) < 2:
        import uvloop

        return uvloop.run(validate(tasks, concurrency=concurrency, on_done=on_done))
    chunks = [[str(t.dir) for t in tasks[i::processes]] for i in range(processes)]
    reports: dict[str, dict[str, Any]] = {}
    with ProcessPoolExecutor(processes, mp_context=mp.get_context("spawn")) as pool:
        futures = [pool.submit(_validate_chunk, [f], concurrency) for chunk in chunks for f in chunk]
        for fut in as_completed(futures):
            for rep in fut.result():
                reports[rep["task"]] = rep
                if on_done:
                    on_done(rep)
    return [reports[t.id] for t in tasks]


async def validate(tasks: list[Task], concurrency: int = 3, runtime: Runtime | None = None,
                   on_done: Any = None) -> list[dict[str, Any]]:
    cache = EnvironmentCache()
    own = runtime is None
    runtime = runtime or await Runtime().start()
    sem = asyncio.Semaphore(concurrency)

    async def one(task: Task) -> dict[str, Any]:
        async with sem:
            rep = await validate_task(runtime, task, cache)
            if on_done:
                on_done(rep)
            return rep

    try:
        return list(await asyncio.gather(*(one(t) for t in tasks)))
    finally:
        if own:
            await runtime.close()
        cache.cleanup()
