"""An MCPMark filesystem task as an episode environment (envs/episode_env.py), the same shape as the
other benchmark adapters (envs/benchmarks/loca/, envs/benchmarks/toolathlon/).

Per episode, as MCPMark's own filesystem task manager does it: the task's category folder is copied
from the user's data cache (modification times kept: some tasks check file properties) to a working
copy W/state/<category>; the npm filesystem server is given that folder (in the benchmark sandbox); the
prompt is the task's description.md and MCPMark's note; the judge runs the task's verify.py with
FILESYSTEM_TEST_DIR = the working copy, in the sandbox (checkout read-only), within judge_timeout_s:
exit 0 is a pass. verify.py needs only the working copy, so the state is shipped to a Judge actor
(bounded snapshot, restored, verified there).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.benchmarks.checkout_files import read_text
from envs.benchmarks.commands import server_command
from envs.benchmarks.mcpmark.checkout import MCPMarkCheckout, MCPMarkError
from envs.benchmarks.mcpmark.kind import MCPMarkRef
from envs.benchmarks.process import run_once
from envs.benchmarks.sandbox import interpreter, sandbox_options, sandboxed
from envs.episode_env import EnvLimits, LiveStates, OneStep, StateRefused, restore, snapshot
from envs.runtime import untrusted_fs
from envs.runtime.episode import Episode, EpisodeState, Runtime
from envs.runtime.sandbox import BWRAP_ENV
from envs.runtime.scratch import folder as scratch_folder
from envs.runtime.scratch import temporary as temporary_folder
from envs.runtime.upstream import Upstream, UpstreamSpec
from schema.records import Verdict

#: MCPMark's suffix to a filesystem task's description (its _format_task_instruction)
NOTE = "\n\nNote: Based on your understanding, solve the task all at once by yourself, don't ask for my opinions on anything."
JUDGE_TIMEOUT_S = 300.0  # MCPMark's verify timeout
SERVER = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}


class MCPMarkTaskEnv(OneStep):
    judged_in_place = False

    def __init__(self, ref: MCPMarkRef, judge_timeout_s: float | None = None):
        self.ref = ref
        self.checkout = MCPMarkCheckout(ref.checkout, ref.data_dir)
        self.task = self.checkout.task(ref.task)
        self.source = self.checkout.data(self.task)
        self.dir = self.checkout.task_dir(self.task)
        self.interp = interpreter(ref.python)
        # the checkout is third-party: its description.md is read without following links (checkout_files)
        self.instruction = read_text(self.checkout.path, self.dir / "description.md", MCPMarkError) + NOTE
        self.limits = EnvLimits()
        self.judge_timeout_s = judge_timeout_s or JUDGE_TIMEOUT_S
        self._open: LiveStates[Path] = LiveStates()  # an episode's work folder

    def _options(self, copy: Path, cwd: Path, env: dict[str, str] | None = None, *, checkout: bool) -> list[str]:
        """The working copy writable; the checkout (every task's verify.py: what grades the episode)
        read-only for verify.py only, never for the server the model drives."""
        read_only = ([self.checkout.path] if checkout else []) + ([Path(self.ref.node_dir)] if self.ref.node_dir else [])
        return sandbox_options(self.interp, read_only=read_only, writable=[copy], cwd=cwd, env=env)

    def prepare(self, work: Path) -> Path:
        copy = work / "state" / self.task.category
        copy.parent.mkdir(parents=True)
        try:  # the cache is the user's: a link out of it is refused before anything is copied
            untrusted_fs.check_links_inside(self.source, "the data cache")
        except untrusted_fs.PathRefused as exc:
            raise ValueError(f"{self.ref.task}: {exc}") from None
        shutil.copytree(self.source, copy, symlinks=True)  # copy2: modification times kept, as MCPMark's copy
        return copy

    async def open(self, runtime: Runtime) -> Episode:
        work = runtime.env_folder("mcpmark").resolve()
        try:
            copy = (await asyncio.to_thread(self.prepare, work)).resolve()
            command = server_command("filesystem", {**SERVER, "args": [*SERVER["args"], str(copy)]},
                                     self.interp.python, self.ref.node_dir)
            argv = sandboxed(self._options(copy, copy, checkout=False), command, work / "scratch")
            up = Upstream(UpstreamSpec("filesystem", command=argv, env=BWRAP_ENV), limits=runtime.limits,
                          errlog=work / "upstream-filesystem.log")
            episode = await runtime.open_episode([up], workspace=copy, binds=[f"{copy}:rw"])
        except BaseException:
            await runtime.remove_env_folder(work)
            raise
        self._open.track(episode, work, lambda: runtime.remove_env_folder(work))
        return episode

    def verify(self, state_root: Path, limits: Any = None) -> Verdict:
        copy = state_root / self.task.category
        scratch = scratch_folder("mcpmark-verify-")
        try:
            argv = sandboxed(self._options(copy, self.checkout.path, {"FILESYSTEM_TEST_DIR": str(copy)}, checkout=True),
                             [self.interp.python, str(self.dir / "verify.py")], scratch)
            run = run_once(argv, timeout_s=self.judge_timeout_s, log_file=scratch / "verify.log", limits=limits,
                           name="mcpmark-verify")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if run.timed_out:
            return Verdict.failed(f"MCPMark's verify.py did not finish within {self.judge_timeout_s:.0f} s",
                                  "infra/judge_timeout")
        passed = run.exit_code == 0
        return Verdict(criteria={"mcpmark_verify": passed}, reward=float(passed), score=float(passed))

    def judge(self, state: EpisodeState | str | Path, answer: str) -> Verdict:
        work = self._open.get(state)
        if work is None:
            return Verdict.failed(f"{self.ref.task}: not an open episode of this environment", "infra/judge_error")
        return self.verify(work / "state")

    def snapshot(self, state: EpisodeState) -> bytes:
        return snapshot([(self._open.get(state) / "state" / self.task.category, self.task.category)])

    def judge_untouched(self, answer: str) -> Verdict:
        """verify.py on a shipped copy of the task's untouched data (never the cache itself: verify.py
        gets its folder writable)."""
        return self.judge_shipped(snapshot([(self.source, self.task.category)]), answer)

    def cheat_probes(self) -> dict[str, Callable[[], Verdict]]:
        return {}

    def judge_canary(self) -> Verdict:
        return self.judge_untouched("")

    def judge_shipped(self, state: bytes, answer: str) -> Verdict:
        try:
            with temporary_folder("mcpmark-judge-") as tmp:
                return self.verify(restore(state, Path(tmp) / "state"))
        except StateRefused as exc:
            return Verdict.failed(str(exc), "policy/state_refused")
        except Exception as exc:  # noqa: BLE001 - a state that does not restore is a recorded verifier error
            return Verdict.failed(f"the shipped working copy could not be judged: {type(exc).__name__}: {exc}",
                                  "infra/judge_error")
