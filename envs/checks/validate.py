"""`progagent tasks validate`: every task's claims, checked through the real sandboxed runtime.

For each task: the oracle passes at v0–v3 (programs run in the sandboxed kernel, tools served by the
task's MCP server); the verifier fails on the untouched environment with an empty answer and on
every wrong solution in wrong/ at every scale; building twice gives identical bytes; database and
workspace grow with scale; instruction and tool schemas are identical at every scale.

Wrong solutions test the verifier, which does not care how the state was made: they run as plain
calls to the same tool functions with the MCP server's JSON round trip and commit/rollback
(`Task.run_program`) — in this process for the library's own tasks, in a bubblewrap child for
model-written ones and any task that did not ship (envs/format/code_runner.py). A sandboxed kernel and task server per wrong solution had
been half the library's CPU time. `validate_parallel` keeps one runtime (and its warm pool) per
worker process, and workers pull tasks until none are left.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from envs.checks.taskcheck import env_stats, same_environment
from envs.format.library import Task, copy_environment, split_cells
from envs.format.task_env import EnvironmentCache, Verdict, judge, judge_episode, open_task_episode
from envs.runtime.episode import Runtime
from envs.runtime.upstream import ToolCallRecord
from schema.records import SCALES

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
                       transport: str | None = None) -> SolutionRun:
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
        verdict = await judge_episode(ep, task, scale, answer, cache)
        return SolutionRun(answer=answer, verdict=verdict, cells=cells, outputs=outputs, errors=errors, calls=calls,
                           tools=ep.tools(), seconds=time.perf_counter() - t0)
    finally:
        await ep.close()


def _wrong_run(task: Task, scale: str, cache: EnvironmentCache, source: str) -> tuple[float, str | None]:
    """(reward, error) of a wrong solution run by `task.run_program` on a copy of the environment. One
    that raises is an error to report, as `envs.checks.taskcheck` does: it would pass as "rejected" without
    testing the verifier (and so would a broken runner)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "env"
        copy_environment(cache.get(task, scale), work)
        try:
            answer, _, _ = task.run_program(work, source)
        except Exception as exc:  # noqa: BLE001 - reported by the caller
            return 0.0, f"{type(exc).__name__}: {exc}"
        return judge(task, scale, work, answer, cache).reward, None


async def validate_task(runtime: Runtime, task: Task, cache: EnvironmentCache,
                        scales: tuple[str, ...] = SCALES, transport: str | None = None) -> dict[str, Any]:
    """`transport`: how the task's MCP server runs for the oracle (envs/format/task_env.py; None: the task's
    own, "sandboxed" for every task that did not ship). Wrong solutions run through `task.run_program`: in process for the
    library's own tasks, in the synthesis sandbox's child for model-written ones and any task that did not ship (envs/format/code_runner.py)."""
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
            if not await asyncio.to_thread(same_environment, built, again):
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
                reward, error = await asyncio.to_thread(_wrong_run, task, scale, cache, source)
                if error:
                    problems.append(f"{scale}: wrong/{name}.py raised {error[:300]} instead of making its mistake")
                elif reward == 1.0:
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


def _validate_worker(folders: list[str], counter: Any, results: Any, concurrency: int) -> None:
    """One worker process: a runtime for its whole life, `concurrency` tasks at once, each task taken
    from the shared `counter` so a slow task does not hold up a pre-dealt chunk."""
    import uvloop

    from envs.format.library import load_task

    def take() -> int:
        with counter.get_lock():
            counter.value += 1
            return counter.value - 1

    async def main() -> None:
        cache = EnvironmentCache()
        runtime = await Runtime().start()

        async def lane() -> None:
            while (i := take()) < len(folders):
                try:
                    rep = await validate_task(runtime, load_task(folders[i]), cache)
                except Exception as exc:  # noqa: BLE001 - reported for this task; the worker goes on
                    rep = {"task": Path(folders[i]).name, "scales": {}, "ok": False,
                           "problems": [f"{type(exc).__name__}: {exc}"]}
                results.put(rep)

        try:
            await asyncio.gather(*(lane() for _ in range(concurrency)))
        finally:
            await runtime.close()
            cache.cleanup()

    uvloop.run(main())


def validate_parallel(tasks: list[Task], processes: int, concurrency: int = 2,
                      on_done: Any = None) -> list[dict[str, Any]]:
    """Tasks spread over `processes` worker processes (`concurrency` at once in each); reports in
    task order. A worker that dies leaves its unfinished tasks reported as failed, not missing."""
    import multiprocessing as mp
    import queue

    if processes <= 1 or len(tasks) < 2:
        import uvloop

        return uvloop.run(validate(tasks, concurrency=concurrency, on_done=on_done))
    ctx = mp.get_context("spawn")
    folders = [str(t.dir) for t in tasks]
    counter, results = ctx.Value("i", 0), ctx.Queue()
    workers = [ctx.Process(target=_validate_worker, args=(folders, counter, results, concurrency), daemon=True)
               for _ in range(min(processes, len(tasks)))]
    for w in workers:
        w.start()
    reports: dict[str, dict[str, Any]] = {}
    try:
        while len(reports) < len(tasks):
            try:
                rep = results.get(timeout=1.0)
            except queue.Empty:
                if any(w.is_alive() for w in workers):
                    continue
                break
            reports[rep["task"]] = rep
            if on_done:
                on_done(rep)
    finally:
        for w in workers:
            w.join(timeout=30)
            if w.is_alive():
                w.kill()
    for t in tasks:
        if t.id not in reports:
            reports[t.id] = {"task": t.id, "scales": {}, "ok": False,
                             "problems": ["the validation worker died before reporting this task"]}
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
