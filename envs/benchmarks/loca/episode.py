"""A LOCA-bench task configuration as an episode environment (envs/episode_env.py).

    env = LocaTaskEnv(LocaRef(checkout, "64k", "CanvasListTestS2LEnv", 42, python))
    traj = await run_episode(env, runtime, generator, renderer, "ptc")   # rollout/episode.py

Per episode, in a fresh folder `W` (Runtime.env_folder):

1. LOCA's own generator makes the state: driver.py runs in LOCA's Python, in the benchmark sandbox
   (envs/benchmarks/sandbox.py) with `W/task` writable, constructs the configuration's environment
   class there (databases in W/task/local_db, the agent workspace W/task/agent_workspace, the ground
   truth) and replies with LOCA's instruction and its MCP server commands, as LOCA's config loader
   builds them. (W/state is what is bound: LOCA deletes and remakes its task folder.) The state seed and launch time are recorded with the verdict (trajectory metrics
   `state_seed`, `launch_time`).
2. The servers run in the same sandbox shape, each its own process within the runtime's limits, with
   their commands mapped to what is installed here (`server_command`): `python` and `uv … run python`
   → LOCA's interpreter; `uvx PKG` and bare names → PKG in LOCA's environment; `npx PKG` → that npm
   package's executable under `node_dir`. A tool call may take LOCA_TOOL_TIMEOUT_S (LOCA allows 120 s).
   What a server sees (`server_folders`): what its command, environment and working folder name, and
   nothing else. Writable: the agent workspace (a mount point of its own: the folder holding it is no
   server's, so no server can swap it), its database folder under local_db/, and a folder of its own
   that generation did not make (ApplyPhD's memory_data/); read-only: its own code folder in the
   checkout (plus mcp_convert's shared common/ package). Never the rest of the task folder, which is
   what grades the episode (groundtruth_workspace/, files/, preprocess/, initial_workspace/, config
   files, logs), nor the rest of the checkout (answer files ship there, and its generators with the
   seeds would regenerate the answers): a server that names them is refused. LOCA's terminal and
   python_execute run what the model asks, so this is what the model can reach. The whole task folder
   counts against the episode's disk limit (its servers write local_db/).
3. The episode's kernel sees the agent workspace at its host path (the path LOCA's servers are given)
   and as /workspace, its working directory: one path means one thing to a program and to a server.
   The model's prompt is LOCA's instruction, unchanged.
4. Judging is LOCA's evaluator: after the episode stopped (kernel and servers gone, so nothing changes
   the state), the driver calls the environment object's `step("claim_done")`, as LOCA's own loop does
   when the model claims it is done, within `judge_timeout_s`. Reward 1.0 is a pass; the evaluator's
   `info` (why a state failed) goes to the driver's log; an evaluator that raises, hangs or dies is a
   verifier error (recorded, reward 0). ProgAgent's loop ends an episode on the
   model's final reply (LOCA's `claim_done` tool is there and may be called; the evaluator runs either way).

Why judged in place (`judged_in_place`), not shipped to a Judge actor: LOCA's evaluator is a method of
the object that generated the state (it reads the ground truth through attributes set then, by
absolute paths), and the state's dates come from the clock at generation, so the live state is judged
by the process that holds it, on the env worker, under the same deadline a judge has.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.benchmarks.commands import server_command
from envs.benchmarks.loca.checkout import LocaCheckout, LocaError
from envs.benchmarks.loca.kind import LocaRef
from envs.benchmarks.loca.memory_file import as_json_lines
from envs.benchmarks.process import JsonLineProcess, ProcessFailed
from envs.benchmarks.sandbox import interpreter, sandbox_options, sandboxed
from envs.episode_env import EnvLimits, LiveStates, OneStep, unjudgeable
from envs.runtime import untrusted_fs
from envs.runtime.episode import Episode, EpisodeState, Runtime
from envs.runtime.sandbox import BWRAP_ENV
from envs.runtime.scratch import folder as scratch_folder
from envs.runtime.upstream import Upstream, UpstreamSpec
from schema.records import Verdict

DRIVER = Path(__file__).with_name("driver.py")
#: LOCA's agent loop gives a tool call 120 s
LOCA_TOOL_TIMEOUT_S = 120.0
#: state generation at the largest presets takes minutes on a loaded machine
GENERATE_TIMEOUT_S = 900.0
#: LOCA's evaluators run their own subprocesses over the final state
JUDGE_TIMEOUT_S = 600.0
#: the shared code of LOCA's mcp_convert servers: each imports mcp_convert/common and its own package
MCP_CONVERT_SHARED = ("mcp_convert/common", "mcp_convert/mcps/__init__.py", "mcp_convert/pyproject.toml")
#: memory of LOCA's generator/evaluator process and of each of its servers
DRIVER_MEMORY_BYTES = 4 * 2**30
SERVER_MEMORY_BYTES = 2 * 2**30


class LocaState:
    """One generated LOCA state and the driver process holding it (module docstring)."""

    def __init__(self, ref: LocaRef, work: Path, logs: Path):
        self.ref = ref
        self.work = work
        # LOCA's environments delete and remake their task folder: its parent is what is bound
        self.state_root = work / "state"
        self.task_dir = self.state_root / "task"
        self.logs = logs
        self.scratch = work / "scratch"  # bwrap option files: never bound into a sandbox
        self.interp = interpreter(ref.python)
        self.driver: JsonLineProcess | None = None
        self.reply: dict[str, Any] = {}
        self.generated: set[str] = set()

    def options(self, cwd: Path, env: dict[str, str] | None = None) -> list[str]:
        """The driver's sandbox (LOCA's own generator and evaluator, never the model's): the checkout
        read-only, the state folder writable."""
        read_only = [Path(self.ref.checkout), DRIVER, *self._node()]
        return sandbox_options(self.interp, read_only=read_only, writable=[self.state_root], cwd=cwd, env=env)

    def _node(self) -> list[Path]:
        return [Path(self.ref.node_dir)] if self.ref.node_dir else []

    def server_folders(self, name: str, command: list[str], env: dict[str, str], cwd: Path) -> tuple[list[Path], list[Path]]:
        """(read-only, writable) folders of one server: what its command, environment and working
        folder name, and nothing else (module docstring, "What a server sees"). LocaError for a server
        that names the task's own files (its ground truth) or a folder outside the task and the checkout."""
        checkout, task = Path(self.ref.checkout).resolve(), self.task_dir.resolve()
        read_only: list[Path] = []
        writable: list[Path] = [self.agent_workspace.resolve()]
        named = [str(cwd), *env.values()]
        for arg in command[1:]:
            named += [arg, arg.partition("=")[2]] if arg.startswith("--") else [arg]
        for value in named:
            if not value.startswith("/"):
                continue
            path = Path(os.path.normpath(value))
            if path.is_relative_to(task):
                parts = path.relative_to(task).parts
                if not parts:
                    raise LocaError(f"server {name!r} names the whole task folder {path}: refused (it holds the "
                                    "task's ground truth)")
                if parts[0] == "agent_workspace":
                    continue
                if parts[0] == "local_db" and len(parts) > 1:
                    folder = task / "local_db" / parts[1]
                elif parts[0] in self.generated:
                    raise LocaError(f"server {name!r} names {path}, among the task's own files ({parts[0]}/ holds what "
                                    "grades the episode): refused")
                else:  # a folder of its own no generator made (ApplyPhD's memory_data/, .pdf_tools_tempfiles/)
                    folder = path.parent if path.suffix else path
                folder.mkdir(parents=True, exist_ok=True)
                writable.append(folder)
            elif path.is_relative_to(checkout):
                rel = path.relative_to(checkout)
                if path.is_file():  # the server's own code: its folder, and mcp_convert's shared package
                    read_only.append(path.parent)
                    if rel.parts[:2] == ("mcp_convert", "mcps"):
                        read_only += [checkout / p for p in MCP_CONVERT_SHARED if (checkout / p).exists()]
                # a folder of the checkout (uv --directory D) is not bound: the mapped command runs no uv
        if not any(cwd.resolve().is_relative_to(f) for f in [*writable, *read_only]):
            raise LocaError(f"server {name!r}: working directory {cwd} is not one of its own folders")
        return read_only, writable

    def generate(self, config: dict[str, Any], limits: Any) -> dict[str, Any]:
        """LOCA's generator, run once: the state under task_dir and the driver's first reply."""
        for d in (self.state_root, self.logs, self.scratch):
            d.mkdir(parents=True, exist_ok=True)
        driver_log = self.logs / "loca-driver.log"  # opened here: nothing in the sandbox can replace it
        argv = sandboxed(self.options(self.state_root),
                         [self.interp.python, str(DRIVER), self.ref.checkout, str(self.task_dir)], self.scratch)
        self.driver = JsonLineProcess.start(argv, log_file=driver_log, limits=limits,
                                            memory_bytes=DRIVER_MEMORY_BYTES, name="LOCA state generator")
        self.driver.send(config)
        reply = self.driver.receive(GENERATE_TIMEOUT_S)
        if not reply.get("ok"):
            kept = "" if driver_log.is_relative_to(self.work) else f"\n(log: {driver_log})"
            raise LocaError(f"{self.ref.task_id} ({self.ref.preset}): LOCA's {reply.get('stage', '?')} step failed:\n"
                            f"{str(reply.get('error'))[-3000:]}{kept}")
        if not isinstance(reply.get("instruction"), str) or not isinstance(reply.get("servers"), dict):
            raise LocaError(f"{self.ref.task_id}: the driver's reply lacks an instruction or servers")
        self.reply = reply
        self.generated = set(os.listdir(self.task_dir))  # what LOCA made: its ground truth among it
        return reply

    @property
    def agent_workspace(self) -> Path:
        return self.task_dir / "agent_workspace"

    def upstreams(self, limits: Any) -> list[Upstream]:
        ups = []
        for name, cfg in self.reply["servers"].items():
            command = server_command(name, cfg, self.interp.python, self.ref.node_dir)
            cwd = Path(cfg.get("cwd") or self.agent_workspace)
            env = {str(k): str(v) for k, v in (cfg.get("env") or {}).items()}
            memory = Path(env.get("MEMORY_FILE_PATH", "/"))
            if memory.is_relative_to(self.task_dir):  # LOCA's pretty-printed graph, as the server reads it
                as_json_lines(self.task_dir, str(memory.relative_to(self.task_dir)))
            read_only, writable = self.server_folders(name, command, env, cwd)
            options = sandbox_options(self.interp, read_only=[*read_only, *self._node()], writable=writable, cwd=cwd,
                                      env=env)
            argv = sandboxed(options, command, self.scratch)
            ups.append(Upstream(UpstreamSpec(name, command=argv, env=BWRAP_ENV, timeout_s=LOCA_TOOL_TIMEOUT_S),
                                limits=limits, memory_bytes=SERVER_MEMORY_BYTES,
                                errlog=self.logs / f"upstream-{name}.log"))
        return ups

    def judge(self, timeout_s: float) -> Verdict:
        facts = {"state_seed": float(self.ref.seed), "launch_time": float(self.reply.get("launch_time") or 0.0)}
        problem = unjudgeable(self.agent_workspace)  # a FIFO where LOCA reads a report would block its evaluator
        if problem is not None:
            return Verdict.failed(problem, "policy/state_refused", facts)
        if self.driver is None or self.driver.closed:
            return Verdict.failed(f"{self.ref.task_id}: LOCA's state is gone (its driver has ended)", "infra/evaluator_error",
                                  facts)
        try:
            self.driver.send({"cmd": "judge"})
            reply = self.driver.receive(timeout_s)
        except ProcessFailed as exc:
            return Verdict.failed(f"LOCA's evaluator: {exc}", "infra/evaluator_error", facts)
        if not reply.get("ok"):
            return Verdict.failed(f"LOCA's evaluator raised:\n{str(reply.get('error'))[-3000:]}", "infra/evaluator_error",
                                  facts)
        reward = reply.get("reward")
        if not isinstance(reward, int | float):
            return Verdict.failed(f"LOCA's evaluator gave no numeric reward: {reply!r:.300}", "infra/evaluator_error",
                                  facts)
        passed = float(reward) >= 1.0
        # LOCA's `info` says why a state failed (its "error" entry is a failed check, not a broken
        # evaluator): it is in the driver's log, and the verdict is the evaluator's reward
        return Verdict(criteria={"loca_evaluator": passed}, reward=float(passed), score=min(max(float(reward), 0.0), 1.0),
                       metrics=facts)

    async def close(self) -> None:
        if self.driver is not None:
            await asyncio.to_thread(self.driver.close)
        await asyncio.to_thread(untrusted_fs.remove_tree, self.work)


class LocaTaskEnv(OneStep):
    """A LOCA-bench configuration as an episode environment (module docstring)."""

    judged_in_place = True

    def __init__(self, ref: LocaRef, judge_timeout_s: float | None = None):
        self.ref = ref
        self.checkout = LocaCheckout(ref.checkout)
        self.config = self.checkout.configuration(ref.preset, ref.name, ref.seed)
        self.instruction = ""  # LOCA's instruction, known once its generator ran (open)
        self.limits = EnvLimits()
        self.judge_timeout_s = judge_timeout_s or JUDGE_TIMEOUT_S
        self._states: LiveStates[LocaState] = LiveStates()
        self._untouched: Verdict | None = None

    async def open(self, runtime: Runtime) -> Episode:
        work = runtime.env_folder("loca").resolve()
        logs = Path(runtime.config.logs_dir) / work.name if runtime.config.logs_dir else work / "logs"
        state = LocaState(self.ref, work, logs)

        async def close() -> None:
            await state.close()
            await runtime.remove_env_folder(work)

        try:
            reply = await asyncio.to_thread(state.generate, self.config, runtime.limits)
            self.instruction = reply["instruction"]
            ws = state.agent_workspace.resolve()
            # the task folder counts against the disk limit: its servers write local_db/ (1.5 GiB went
            # past a 512 MiB limit when only the workspace counted)
            episode = await runtime.open_episode(state.upstreams(runtime.limits), workspace=ws, binds=[f"{ws}:rw"],
                                                 counted=[state.task_dir.resolve()])
        except BaseException:
            await close()
            raise
        self._states.track(episode, state, close)
        return episode

    def judge(self, state: EpisodeState | str | Path, answer: str) -> Verdict:
        live = self._states.get(state)
        if live is None:
            return Verdict.failed(f"{self.ref.task_id}: not an open episode of this environment (LOCA judges live states)",
                                  "infra/judge_error")
        return live.judge(self.judge_timeout_s)

    def snapshot(self, state: EpisodeState) -> bytes:
        raise NotImplementedError("LOCA-bench states are judged in place (LocaTaskEnv.judged_in_place)")

    def judge_untouched(self, answer: str) -> Verdict:
        """LOCA's evaluator on a second, untouched generation of this configuration (its own driver,
        in a scratch folder, closed after). LOCA judges the state only (its claim_done step), so the
        verdict is the same for every answer: made once per environment object."""
        if self._untouched is None:
            work = scratch_folder("loca-untouched-")
            state = LocaState(self.ref, work, work / "logs")
            try:
                state.generate(self.config, None)
                self._untouched = state.judge(self.judge_timeout_s)
            finally:
                if state.driver is not None:
                    state.driver.close()
                untrusted_fs.remove_tree(work)
        return self._untouched

    def cheat_probes(self) -> dict[str, Callable[[], Verdict]]:
        return {}

    def judge_canary(self) -> Verdict:
        """The evaluator on an untouched generation (judge_untouched): it judges it (a fail)."""
        return self.judge_untouched("")

    def judge_shipped(self, state: bytes, answer: str) -> Verdict:
        return Verdict.failed("LOCA-bench states are judged in place, on the env worker that holds them; "
                              "a shipped state cannot be judged (LocaTaskEnv.judged_in_place)", "infra/judge_error")

