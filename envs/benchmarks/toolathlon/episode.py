"""A local-only Toolathlon task as an episode environment (envs/episode_env.py): the second benchmark
adapter, the same shape as LOCA-bench's (envs/benchmarks/loca/episode.py).

Per episode, in a fresh folder W (Runtime.env_folder), as Toolathlon's own runner does it:

1. The agent workspace W/state/workspace gets the task's initial_workspace/, then the task's
   preprocess (`python -m tasks.finalpool.<task>.preprocess.main --agent_workspace WS --launch_time T`,
   cwd = the checkout) runs in the benchmark sandbox (checkout read-only, the workspace writable, no
   network), then the memory/ folder its memory server expects (when it has one).
2. The task's servers, from configs/mcp_servers/*.yaml with `${agent_workspace}` filled in, mapped to
   Toolathlon's environment (envs/benchmarks/commands.py), each with its `client_session_timeout_seconds`
   as the tool timeout; its local tools claim_done and python_execute come from local_tools.py. These
   run what the model asks (python_execute, the terminal and git servers), so they see none of the
   checkout (its tasks' ground truth: groundtruth_workspace/ and the answer files beside it; its
   configs' keys): the workspace writable as their working folder, the environment read-only.
3. The prompt: Toolathlon's agent system prompt (docs/agent_system_prompt.md, its placeholders filled:
   workspace path, launch time) with its single-turn sentence, then the task (docs/task.md).
   The kernel sees the workspace at its host path and as /workspace.
4. The judge: Toolathlon's evaluator (`python -m tasks.finalpool.<task>.evaluation.main --res_log_file
   F --agent_workspace WS --groundtruth_workspace tasks/finalpool/<task>/groundtruth_workspace|None
   --launch_time T`, cwd = the checkout), in the sandbox, within judge_timeout_s: exit 0 is a pass.
   It reads a host-owned, writable copy of the task folder bound over the checkout's (two of
   Toolathlon's evaluators unpack into their groundtruth_workspace).
   F is a trajectory log in Toolathlon's format holding what the evaluator reads (config with the
   launch time, status "success", the task and the final answer as messages).

Unlike LOCA, the evaluator needs only the final workspace and the launch time, so the state is shipped
to a Judge actor like our own tasks' (a bounded snapshot of the workspace plus a small meta file).

Not emulated (see the README): tool names are the servers' own (Toolathlon prefixes them
`server-tool` and `local-tool`); the history, manage_context and overlong-output local tools are the
runtime's own bounded output instead; multi-turn user simulation; `status` other than "success"
(Toolathlon skips the evaluator when its agent hit its turn limit; here it always runs).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.benchmarks.checkout_files import read_text
from envs.benchmarks.commands import server_command
from envs.benchmarks.process import CANNOT_LOAD, module_main_argv, run_once
from envs.benchmarks.sandbox import interpreter, sandbox_options, sandboxed
from envs.benchmarks.toolathlon.checkout import PROVIDED_TOOLS, ToolathlonCheckout, ToolathlonError
from envs.benchmarks.toolathlon.kind import ToolathlonRef
from envs.episode_env import EnvLimits, LiveStates, OneStep, StateRefused, restore, snapshot
from envs.runtime import untrusted_fs
from envs.runtime.episode import Episode, EpisodeState, Runtime
from envs.runtime.sandbox import BWRAP_ENV, Sandbox
from envs.runtime.scratch import folder as scratch_folder
from envs.runtime.scratch import temporary as temporary_folder
from envs.runtime.upstream import Upstream, UpstreamSpec
from schema.records import Verdict

LOCAL_TOOLS = Path(__file__).with_name("local_tools.py")
PREPROCESS_TIMEOUT_S = 300.0
JUDGE_TIMEOUT_S = 600.0
PROCESS_MEMORY_BYTES = 4 * 2**30
#: the most a task folder copied for its evaluator may hold (its ground truth and inputs: megabytes)
MAX_TASK_BYTES = 2 * 2**30
SERVER_MEMORY_BYTES = 2 * 2**30
#: appended to the agent system prompt in Toolathlon's single-turn mode (its default)
SINGLE_TURN = ("\nPlease complete the given task independently. Do not seek confirmation or additional feedback "
               "from the user. You should handle all situations on your own, as the user will not provide any "
               "further information.")
META = "progagent-episode.json"


def launch_time_now() -> str:
    return datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S %A")


class ToolathlonTaskEnv(OneStep):
    judged_in_place = False  # the evaluator needs the workspace and the launch time only: shipped

    def __init__(self, ref: ToolathlonRef, judge_timeout_s: float | None = None):
        self.ref = ref
        self.checkout = ToolathlonCheckout(ref.checkout)
        self.task = self.checkout.task(ref.task)
        problems = self.checkout.local_problems(self.task)
        if problems:
            raise ToolathlonError(f"{ref.task} is not local-only: {', '.join(problems)}")
        self.dir = self.checkout.task_dir(ref.task)
        self.interp = interpreter(ref.python)
        self.instruction = ""
        self.limits = EnvLimits()
        self.judge_timeout_s = judge_timeout_s or JUDGE_TIMEOUT_S
        self._open: LiveStates[tuple[Path, str]] = LiveStates()  # (an episode's work folder, its launch time)

    def _node(self) -> list[Path]:
        return [Path(self.ref.node_dir)] if self.ref.node_dir else []

    def _benchmark_options(self, ws: Path, also_read: tuple[Path, ...] = (), overlay: tuple[Path, Path] | None = None,
                           ) -> Sandbox:
        """Toolathlon's own code (its preprocess, its evaluator): the checkout read-only, cwd = the checkout
        (its modules run as `-m tasks.finalpool.<task>...`), the workspace writable; `overlay`: (a
        host-owned copy, the task folder it stands in for), bound writable over the checkout's."""
        options = sandbox_options(self.interp, read_only=[self.checkout.path, *also_read, *self._node()], writable=[ws],
                                  cwd=self.checkout.path)
        if overlay is not None:
            copy, task_dir = overlay
            options.bind(copy, task_dir, writable=True)
        return options

    def _server_options(self, ws: Path, cwd: Path, cfg: dict[str, Any] | None = None) -> Sandbox:
        """A server the model drives (its filesystem, terminal and git servers; python_execute): none of
        the checkout, where the tasks' ground truth lives (groundtruth_workspace/, answer files beside
        it) and its configs hold keys, except local_servers/ or local_binary/ when its config names
        them; the workspace writable, as a mount point of its own (the folder holding it is the host's)."""
        named = json.dumps(cfg or {})
        read_only = [LOCAL_TOOLS, *self._node()]
        read_only += [self.checkout.path / d for d in ("local_servers", "local_binary")
                      if str(self.checkout.path / d) in named and (self.checkout.path / d).is_dir()]
        return sandbox_options(self.interp, read_only=read_only, writable=[ws], cwd=cwd)

    def doc(self, name: str) -> str:
        """The task's docs/<name>: the checkout is third-party, so it is read without following links,
        a regular file of at most 1 MiB (checkout_files); ToolathlonError naming it otherwise."""
        return read_text(self.checkout.path, self.dir / "docs" / name, ToolathlonError)

    def prompt(self, workspace: Path, launch_time: str) -> str:
        system = self.doc("agent_system_prompt.md")
        for key, value in (("workspace_dir_rela", str(workspace)), ("workspace_dir", str(workspace)),
                           ("current_working_dir", str(self.checkout.path)), ("time", launch_time)):
            system = system.replace(f"!!<<<<||||{key}||||>>>>!!", value)
        task = self.doc("task.md")
        return f"{system}{SINGLE_TURN}\n\n{task}"

    def prepare(self, work: Path, launch_time: str, limits: Any) -> Path:
        """The workspace, as Toolathlon's runner leaves it before its servers start (step 1)."""
        state_root, scratch, logs = work / "state", work / "scratch", work / "logs"
        ws = state_root / "workspace"
        for d in (ws, scratch, logs):
            d.mkdir(parents=True, exist_ok=True)
        initial = self.dir / "initial_workspace"
        if initial.is_dir():
            try:  # the benchmark's files: a link out of them is refused before anything is copied
                untrusted_fs.check_links_inside(initial, "initial_workspace")
            except untrusted_fs.PathRefused as exc:
                raise ToolathlonError(f"{self.ref.task}: {exc}") from None
            shutil.copytree(initial, ws, symlinks=True, dirs_exist_ok=True)
        if self.task.has_preprocess:  # Toolathlon's code, before the model acts
            argv = sandboxed(self._benchmark_options(ws),
                             [self.interp.python, "-m", f"tasks.finalpool.{self.ref.task}.preprocess.main",
                              "--agent_workspace", str(ws), "--launch_time", launch_time], scratch)
            run = run_once(argv, timeout_s=PREPROCESS_TIMEOUT_S, log_file=logs / "preprocess.log", limits=limits,
                           memory_bytes=PROCESS_MEMORY_BYTES, name="toolathlon-preprocess")
            if run.exit_code != 0:
                how = "timed out" if run.timed_out else f"exit code {run.exit_code}"
                raise ToolathlonError(f"{self.ref.task}: its preprocess failed ({how}):\n{run.output_tail[-3000:]}")
        if "memory" in self.task.servers:  # its memory server's file lives there (Toolathlon makes it then only)
            (ws / "memory").mkdir(exist_ok=True)
        return ws

    def upstreams(self, work: Path, ws: Path, limits: Any) -> list[Upstream]:
        scratch, logs = work / "scratch", work / "logs"
        ups = []
        for name, cfg in self.checkout.server_configs(self.task, ws).items():
            command = server_command(name, cfg, self.interp.python, self.ref.node_dir)
            cwd = Path(cfg["cwd"]) if cfg.get("cwd") else ws
            if not cwd.resolve().is_relative_to(ws.resolve()):
                raise ToolathlonError(f"server {name!r}: working directory {cwd} is outside the workspace")
            env = {str(k): str(v) for k, v in cfg["env"].items()}
            options = self._server_options(ws, cwd, cfg)
            if env:
                options.setenv(env)
            ups.append(Upstream(UpstreamSpec(name, command=sandboxed(options, command, scratch), env=BWRAP_ENV,
                                             timeout_s=cfg["timeout_s"]), limits=limits,
                                memory_bytes=SERVER_MEMORY_BYTES, errlog=logs / f"upstream-{name}.log"))
        wanted = [t for t in self.task.local_tools if t in PROVIDED_TOOLS]
        if wanted:
            argv = sandboxed(self._server_options(ws, ws), [self.interp.python, str(LOCAL_TOOLS), str(ws), *wanted],
                             scratch)
            ups.append(Upstream(UpstreamSpec("local", command=argv, env=BWRAP_ENV, timeout_s=130.0), limits=limits,
                                memory_bytes=SERVER_MEMORY_BYTES, errlog=logs / "upstream-local.log"))
        return ups

    async def open(self, runtime: Runtime) -> Episode:
        work = runtime.env_folder("toolathlon").resolve()
        launch_time = launch_time_now()
        try:
            ws = await asyncio.to_thread(self.prepare, work, launch_time, runtime.limits)
            self.instruction = self.prompt(ws, launch_time)
            episode = await runtime.open_episode(self.upstreams(work, ws, runtime.limits), workspace=ws,
                                                 binds=[f"{ws}:rw"])
        except BaseException:
            await runtime.remove_env_folder(work)
            raise
        self._open.track(episode, (work, launch_time), lambda: runtime.remove_env_folder(work))
        return episode

    def evaluate(self, state_root: Path, launch_time: str, answer: str, limits: Any = None) -> Verdict:
        """Toolathlon's evaluator on the workspace under `state_root` (module docstring, step 4)."""
        ws = state_root / "workspace"
        # host-owned and read-only to the evaluator: state_root is the model's (a link planted there
        # would redirect a host write)
        scratch = scratch_folder("toolathlon-eval-")
        try:
            # the evaluator reads (and some write: paper-checker, privacy-desensitization unpack into
            # their groundtruth_workspace) a host-owned copy of the task folder, never the checkout's
            task_copy = scratch / "task"
            untrusted_fs.copy_tree(self.dir, scratch, "task", max_bytes=MAX_TASK_BYTES)
            log = scratch / "traj_log.json"
            task_md = self.doc("task.md")
            log.write_text(json.dumps({
                "config": {"task_dir": f"finalpool/{self.ref.task}", "id": f"finalpool-{self.ref.task}",
                           "needed_mcp_servers": self.task.servers, "needed_local_tools": self.task.local_tools,
                           "agent_workspace": str(ws), "launch_time": launch_time, "task_str": task_md},
                "status": "success",
                "messages": [{"role": "user", "content": task_md}, {"role": "assistant", "content": answer}]}))
            gt = f"tasks/finalpool/{self.ref.task}/groundtruth_workspace" if self.task.has_groundtruth else "None"
            argv = sandboxed(self._benchmark_options(ws, (log,), overlay=(task_copy, self.dir)),
                             module_main_argv(self.interp.python, f"tasks.finalpool.{self.ref.task}.evaluation.main",
                                              ["--res_log_file", str(log), "--agent_workspace", str(ws),
                                               "--groundtruth_workspace", gt, "--launch_time", launch_time]), scratch)
            run = run_once(argv, timeout_s=self.judge_timeout_s, log_file=scratch / "evaluation.log", limits=limits,
                           memory_bytes=PROCESS_MEMORY_BYTES, name="toolathlon-evaluation")
        except (untrusted_fs.PathRefused, ToolathlonError) as exc:  # a link, a special file, a hard link, too large
            return Verdict.failed(f"{self.ref.task}: its task folder cannot be copied or read for the evaluator: {exc}",
                                  "infra/evaluator_error")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if run.timed_out:
            return Verdict.failed(f"Toolathlon's evaluator did not finish within {self.judge_timeout_s:.0f} s",
                                  "infra/judge_timeout")
        if run.exit_code == CANNOT_LOAD:  # the evaluator could not load (its status, never words it printed)
            return Verdict.failed(f"Toolathlon's evaluator could not run: {run.output_tail[-1500:]}",
                                  "infra/evaluator_error")
        passed = run.exit_code == 0
        return Verdict(criteria={"toolathlon_evaluator": passed}, reward=float(passed), score=float(passed))

    def judge_untouched(self, answer: str) -> Verdict:
        """Toolathlon's evaluator on the workspace its runner leaves before the model acts (prepare)."""
        with temporary_folder("toolathlon-untouched-") as tmp:
            launch_time = launch_time_now()
            self.prepare(Path(tmp), launch_time, None)
            return self.evaluate(Path(tmp) / "state", launch_time, answer)

    def cheat_probes(self) -> dict[str, Callable[[], Verdict]]:
        return {}

    def judge_canary(self) -> Verdict:
        """The evaluator on the untouched workspace with an empty answer: it judges it (a fail)."""
        return self.judge_untouched("")

    def judge(self, state: EpisodeState | str | Path, answer: str) -> Verdict:
        live = self._open.get(state)
        if live is None:
            return Verdict.failed(f"{self.ref.task}: not an open episode of this environment", "infra/judge_error")
        work, launch_time = live
        return self.evaluate(work / "state", launch_time, answer)

    def snapshot(self, state: EpisodeState) -> bytes:
        work, launch_time = self._open.get(state)
        meta = work / "meta"
        meta.mkdir(exist_ok=True)
        (meta / META).write_text(json.dumps({"launch_time": launch_time}))
        return snapshot([(work / "state" / "workspace", "workspace"), (meta, "meta")])

    def judge_shipped(self, state: bytes, answer: str) -> Verdict:
        try:
            with temporary_folder("toolathlon-judge-") as tmp:
                root = restore(state, Path(tmp) / "state")
                launch_time = json.loads((root / "meta" / META).read_text())["launch_time"]
                return self.evaluate(root, str(launch_time), answer)
        except StateRefused as exc:
            return Verdict.failed(str(exc), "policy/state_refused")
        except Exception as exc:  # noqa: BLE001 - a state that does not restore is a recorded verifier error
            return Verdict.failed(f"the shipped workspace could not be judged: {type(exc).__name__}: {exc}",
                                  "infra/judge_error")
