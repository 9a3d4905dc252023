"""The non-LLM checks of a candidate task, through the real sandboxed runtime and the judge.

- `load`: the folder's task.toml, then its modules imported in a sandboxed child (their top-level
  code under the deadline), then the tool count and the wrong solutions.
- `execute`: build one scale (twice: deterministic?), the untouched environment must fail, the
  oracle must pass (run cell by cell in a sandboxed kernel with the task's MCP server, judged
  outside), every wrong solution must fail. Its problems are the repair prompt.
- `audit`: the oracle and an independent solver (an API model through the PTC harness, seeing only
  the instruction and the tools) at the audit scale; the solver's run is summarised for a diagnosis.
- `validate`: the task library's full validator (envs/checks/validate.py) at all four scales, with every
  program (oracle, wrong solutions) in the sandbox at every scale.

Where model-written code runs: data.py builds, verify() calls and the first import of the task's
modules each run in a child process with a wall-clock deadline (`code_timeout_s`), inside
bubblewrap where it is usable (envs/format/code_runner.py: no network, the candidate folder read-only, only
the output folder writable, no host home, repository or other tasks); a timeout or crash is a
problem for the repair prompt. Programs (oracle, wrong solutions, the solver's) run in the
runtime's sandboxed kernels. tools.py is served by the task's MCP server with the runner's
`tool_transport` (envs/format/task_env.py): with bubblewrap "sandboxed", a tool host per episode
(envs/format/tool_host.py) in its own bubblewrap sandbox (no network; of the task only task.toml and
tools.py, plus the episode's environment; no host home, repository or other tasks; the runtime's memory/process limits; killed
with everything it started when the episode closes), so a tool that reads host files or the network
fails as a tool error, and one that never returns is stopped with its episode (a call gives up after
`runtime.tool_timeout_s`). In "process" mode (no bubblewrap) tools.py is still imported and called
in this process, in worker threads ("inprocess", as before: a tool that never returns keeps its
thread); run synthesis there only where that is acceptable. The tool count comes from the sandboxed
import (`SandboxedTask.tool_names`), so with bubblewrap no candidate code runs in this process.
"""

from __future__ import annotations

import asyncio
import traceback
from pathlib import Path
from typing import Any

from envs.checks.taskcheck import env_stats, same_environment
from envs.checks.validate import SolutionRun, run_solution, validate_task
from envs.format.code_runner import CandidateCodeError, CodeRunner, CodeTimeout
from envs.format.library import Task, TaskLoadError, load_task
from envs.format.task_env import EnvironmentCache, LibraryTaskEnv, judge
from envs.runtime.episode import Runtime
from rollout.agent_loop import ChatRenderer
from rollout.episode import run_episode
from schema.config import LoopLimits
from schema.records import CHECKS, CheckRequest, SamplingParams, Trajectory
from schema.synth import AuditConfig

MAX_FEEDBACK_CHARS = 1_500


def _tail(text: str, limit: int = MAX_FEEDBACK_CHARS) -> str:
    """The end of a long text, cut at a line start."""
    if len(text) <= limit:
        return text
    cut = text[-limit:]
    return "…\n" + cut[cut.find("\n") + 1:] if "\n" in cut else cut


def _exc_text(exc: BaseException, folder: Path) -> str:
    """A traceback the model can act on: its own files by name, the tail only."""
    if isinstance(exc, CandidateCodeError):  # raised in the child: its traceback is already relative
        return _tail(exc.feedback)
    return _tail("".join(traceback.format_exception(exc)).replace(str(folder) + "/", ""))


def _run_problems(label: str, run: SolutionRun) -> list[str]:
    if run.verdict.reward == 1.0:
        return []
    failed = [k for k, v in run.verdict.criteria.items() if not v]
    parts = [f"{label} fails the verifier"]
    if run.verdict.error:
        parts.append(f"verify() raised: {run.verdict.error}")
    elif failed:
        parts.append(f"failed criteria {failed}")
    parts.append(f"final_answer={run.answer[-300:]!r}")
    if run.errors:
        parts.append("program error:\n" + _tail(run.errors[0]))
    elif run.outputs:
        parts.append("last printed output:\n" + _tail(run.outputs[-1], 600))
    return ["; ".join(parts[:3]) + ("\n" + "\n".join(parts[3:]) if parts[3:] else "")]


def load(folder: Path, runner: CodeRunner) -> tuple[Task | None, list[str]]:
    """The task (its build and verify() through `runner`) and its static problems; None when unusable."""
    try:
        task = load_task(folder, runner=runner)  # reads task.toml only
        n = len(task.tool_names())  # the modules' top-level code runs in the sandbox, under the deadline
    except TaskLoadError as exc:
        return None, [str(exc).replace(str(folder) + "/", "")]
    except CodeTimeout as exc:
        return None, [str(exc)]
    except CandidateCodeError as exc:
        return None, [_tail(exc.feedback)]
    problems = [] if n >= 5 else [f"only {n} tools (at least 5 required)"]
    if len(task.wrong_solutions()) < 2:
        problems.append(f"only {len(task.wrong_solutions())} wrong solutions in wrong/ (at least 2 required)")
    return task, problems


async def execute(runtime: Runtime, folder: Path, cache: EnvironmentCache, runner: CodeRunner,
                  scale: str = "v0") -> dict[str, Any]:
    """{"ok", "problems", "stats", "oracle": {...}, "wrong": {name: reward}}."""
    task, problems = await asyncio.to_thread(load, folder, runner)
    out: dict[str, Any] = {"scale": scale, "problems": problems, "code_sandbox": runner.mode,
                           "tool_transport": runner.tool_transport}
    if task is None:
        out["ok"] = False
        return out
    try:
        built = await asyncio.to_thread(cache.get, task, scale)
        again = cache.root / "again" / task.id / scale
        await asyncio.to_thread(task.build, again, scale)
        if not await asyncio.to_thread(same_environment, built, again):
            problems.append(f"{scale}: building twice gives different bytes (data.py must use only "
                            "random.Random(seed), fixed insertion order, no time or hash())")
        out["stats"] = env_stats(built)
    except CodeTimeout as exc:
        problems.append(f"data.py {exc}")
        out["ok"] = False
        return out
    except Exception as exc:  # noqa: BLE001 - the model's data.py failing is feedback, not a crash
        problems.append(f"data.py build({scale}) raised:\n{_exc_text(exc, folder)}")
        out["ok"] = False
        return out
    untouched = await asyncio.to_thread(judge, task, scale, built, "", cache)
    if untouched.error:
        problems.append(f"verify() raised on the untouched environment: {untouched.error}")
    elif untouched.reward == 1.0:
        problems.append(f"{scale}: the verifier passes the untouched environment with an empty answer")
    programs = {"oracle": task.oracle_source, **{f"wrong/{n}.py": s for n, s in task.wrong_solutions().items()}}
    runs = await asyncio.gather(*(run_solution(runtime, task, scale, cache, src, runner.tool_transport)
                                  for src in programs.values()), return_exceptions=True)
    out["wrong"] = {}
    for name, run in zip(programs, runs, strict=True):
        if isinstance(run, BaseException):
            problems.append(f"running {name} failed:\n{_exc_text(run, folder)}")
        elif name == "oracle":
            out["oracle"] = {"reward": run.verdict.reward, "criteria": run.verdict.criteria, "answer": run.answer,
                             "calls": len(run.calls), "seconds": round(run.seconds, 2)}
            problems += _run_problems("the oracle", run)
        else:
            out["wrong"][name] = run.verdict.reward
            if run.verdict.reward == 1.0:
                problems.append(f"{scale}: the verifier passes {name} (its mistake must be rejected)")
            elif run.errors:  # rejected, but for crashing: it does not test the verifier
                problems.append(f"{name} stopped with an error instead of making its mistake (a wrong solution "
                                f"must run to the end):\n{_tail(run.errors[0], 600)}")
    out["ok"] = not problems
    return out


def summarize_trajectory(traj: Trajectory, max_chars: int = 800) -> list[dict[str, Any]]:
    """The solver's turns as a diagnosis can read them: each program and the start of what it printed."""
    turns = []
    for t in traj.turns:
        code = [c["arguments"].get("code", "") for c in t.calls if isinstance(c.get("arguments"), dict)]
        turns.append({"action": t.action, "program": "\n".join(code)[:4 * max_chars] or None,
                      "printed": "\n".join(t.observations)[:max_chars] or None, "errors": t.errors[:3],
                      "text": t.text[:max_chars] if t.action == "answer" else None})
    return turns


async def oracle(runtime: Runtime, task: Task, cache: EnvironmentCache, scale: str) -> dict[str, Any]:
    """The oracle alone at `scale` (the audit's reference): its verdict and answer, and its problems."""
    run = await run_solution(runtime, task, scale, cache, task.oracle_source, task.tool_transport)
    return {"scale": scale, "oracle": {"reward": run.verdict.reward, "answer": run.answer,
                                       "criteria": run.verdict.criteria},
            "problems": _run_problems(f"the oracle at {scale}", run)}


def audit_report(reference: dict[str, Any], traj: Trajectory) -> dict[str, Any]:
    """The audit from the oracle's check at the audit scale and the independent solver's trajectory:
    "ok" when the oracle passes and the solver solves it."""
    out = dict(reference)
    out["solver"] = {"reward": traj.reward, "score": traj.score, "criteria": traj.criteria,
                     "verifier_error": traj.verifier_error, "termination": traj.termination,
                     "final_answer": traj.final_answer, "turns": summarize_trajectory(traj)}
    out["ok"] = not out["problems"] and traj.reward == 1.0
    return out


async def audit(runtime: Runtime, task: Task, cache: EnvironmentCache, renderer: ChatRenderer, generator: Any,
                cfg: AuditConfig, temperature: float) -> dict[str, Any]:
    """The oracle and the independent solver at the audit scale, in this process."""
    limits = LoopLimits(max_turns=cfg.max_turns, max_context_tokens=cfg.max_context_tokens,
                        max_new_tokens=cfg.max_new_tokens)
    sampling = SamplingParams(temperature=temperature, max_new_tokens=cfg.max_new_tokens)
    reference, traj = await asyncio.gather(
        oracle(runtime, task, cache, cfg.scale),
        run_episode(LibraryTaskEnv(task, cfg.scale, cache, transport=task.tool_transport), runtime, generator,
                    renderer, cfg.harness, limits=limits, sampling=sampling, group_id=f"audit-{task.id}"))
    return audit_report(reference, traj)


async def validate(runtime: Runtime, task: Task, cache: EnvironmentCache) -> dict[str, Any]:
    """The library validator's report, plus the fingerprint of what must be identical across scales."""
    report = await validate_task(runtime, task, cache, transport=task.tool_transport)
    report["fingerprint"] = task.fingerprint()
    return report


async def run_check(req: CheckRequest, runtime: Runtime, cache: EnvironmentCache, runner: CodeRunner) -> dict[str, Any]:
    """One check an env worker was sent (schema/records.CheckRequest), on its runtime and cache."""
    folder = Path(req.folder)
    if req.stage == "execute":
        return await execute(runtime, folder, cache, runner, req.scale)
    task = await asyncio.to_thread(load_task, folder, runner=runner)
    if req.stage == "oracle":
        return await oracle(runtime, task, cache, req.scale)
    if req.stage == "validate":
        return await validate(runtime, task, cache)
    raise ValueError(f"unknown check {req.stage!r}; expected one of {', '.join(CHECKS)}")
