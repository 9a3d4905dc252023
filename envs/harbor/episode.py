"""Imported Harbor tasks as episodes of our runtime, judged by their own tests, checked by their oracle.

    env = HarborTaskEnv(load_harbor_task("bench/some-task"))   # the episode contract (envs/episode_env.py)
    traj = await run_episode(env, runtime, generator, renderer, "ptc")   # rollout/episode.py: open, agent
                                                                # loop, tests/test.sh on the final container
    report = check(env.task)   # solution/solve.sh then tests → reward 1; untouched container → reward 0

On the actor fabric (`EpisodeRequest(env=HarborRef(folder))`, actors/env_worker.py) the env worker
ships `snapshot_tree(final state)` to a Judge actor, which restores it and runs tests/test.sh
(`HarborTaskEnv.judge_shipped`).

Episode: the episode's `env/container/` folder is the task's container tree (mapping rule in
envs/harbor/task.py). Stdio MCP servers run in the task's container view (bubblewrap, outside the
kernel's sandbox, like our own task servers); a url server is connected only when the operator
allows its host (HarborRef.url_server_hosts from the source's args; refused otherwise). The kernel's
/workspace stays empty: the model reaches the environment through the task's MCP servers only.

Verification, as Harbor does it: the model's final reply is written to the answer path, a copy of
tests/ is bound at /tests and a fresh folder at /logs, and /tests/test.sh is executed (its shebang
picks the interpreter) in the container view with [verifier] env, under [verifier] timeout_sec.
Rewards as Harbor's verifier reads them (`read_rewards`); one training reward from them
(`training_reward`: "reward", else the only entry, else the mean); Verdict: score = that reward clamped
to [0, 1], reward = score (partial credit kept), criteria = the `criterion_<name>` entries (our
exports) or a multi-key reward's entries, else {"reward": passed}. All numbers stay in
`VerifierRun.rewards`. A test.sh that writes no valid reward is a recorded verifier error with reward
0, never a lost sample.
"""

from __future__ import annotations

import asyncio
import json
import math
import posixpath
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from envs.benchmarks.process import ScriptRun, run_once
from envs.episode_env import EnvLimits, LiveStates, StateRefused, restore, snapshot
from envs.harbor.kind import HarborRef
from envs.harbor.task import (
    MAX_CONTEXT_BYTES,
    HarborTask,
    HarborTaskError,
    StepConfig,
    resolve_host_env,
    url_server_refusals,
)
from envs.runtime import untrusted_fs
from envs.runtime.episode import Episode, EpisodeState, Runtime
from envs.runtime.limits import LimitBackend
from envs.runtime.sandbox import BWRAP_ENV, launch_argv
from envs.runtime.scratch import temporary as temporary_folder
from envs.runtime.upstream import Upstream, UpstreamSpec
from schema.records import Verdict

TREE_DIR = "container"
CRITERION = "criterion_"  # reward.json entries named criterion_<name> (what envs/harbor/export.py writes)
JUDGE_GRACE_S = 30.0  # a judge's deadline beyond [verifier] timeout_sec (restore, copies, bubblewrap)
#: where the operator allows a URL server's host (named in the refusal)
SETTING = "the Harbor source's args.url_server_hosts (envs.<source>.args.url_server_hosts)"



class VerifierRun(msgspec.Struct):
    verdict: Verdict
    rewards: dict[str, float]  # what test.sh reported, as Harbor reads it
    script: ScriptRun


class CheckReport(msgspec.Struct):
    """The oracle check of one task: the oracle must pass, the untouched container must fail."""

    task: str
    ok: bool
    nop: VerifierRun | None = None
    solve: ScriptRun | None = None
    oracle: VerifierRun | None = None
    error: str | None = None
    notes: list[str] = []


def tree_of(state: EpisodeState | str | Path) -> Path:
    return Path(state.env_root) / TREE_DIR if isinstance(state, EpisodeState) else Path(state)


def upstreams(task: HarborTask, tree: Path, scratch: Path, limits: LimitBackend | None = None,
              url_server_hosts: Sequence[str] = ()) -> list[Upstream]:
    """The task's MCP servers for one episode: stdio commands inside the container view of `tree`,
    each in its own sandbox limits from `limits` with the task's [environment] memory_mb (`scratch`: a
    host folder for their sandbox options, envs/runtime/sandbox.launch_argv); url servers only at the
    hosts the operator allowed (`url_server_hosts`), HarborTaskError naming the server otherwise."""
    refused = url_server_refusals(task, url_server_hosts, SETTING)
    if refused:
        raise HarborTaskError("; ".join(refused))
    ups = []
    for server in task.config.environment.mcp_servers:
        if server.transport == "stdio":
            argv = launch_argv(task.container_argv(tree), [server.command, *server.args], scratch)
            ups.append(Upstream(UpstreamSpec(server.name, command=argv, env=BWRAP_ENV), limits=limits,
                                memory_bytes=task.memory_bytes, errlog=scratch.parent / f"upstream-{server.name}.log"))
        else:  # headers' ${VAR}s from the host variables a task may read (PROGAGENT_HARBOR_PASS_ENV)
            ups.append(Upstream(UpstreamSpec(server.name, url=server.url, headers=resolve_host_env(server.headers) or None,
                                             transport="sse" if server.transport == "sse" else "")))
    return ups


async def open_harbor_episode(runtime: Runtime, task: HarborTask, url_server_hosts: Sequence[str] = ()) -> Episode:
    """A fresh sandboxed episode over a fresh container tree and the task's MCP servers (within the
    runtime's limits backend; url servers at the allowed hosts only, `upstreams`)."""
    refused = url_server_refusals(task, url_server_hosts, SETTING)
    if refused:  # before any episode, folder or process is made
        raise HarborTaskError("; ".join(refused))

    async def prepare(env_root: Path) -> list[Upstream]:
        tree = await asyncio.to_thread(task.materialize, env_root / TREE_DIR)
        return upstreams(task, tree, env_root.parent / "sandbox", runtime.limits, url_server_hosts)

    return await runtime.open_episode(prepare)


def run_script(task: HarborTask, tree: Path, script: str, *, binds: Sequence[tuple[Path, str]],
               env: dict[str, str], timeout_s: float, log_file: Path) -> ScriptRun:
    """SCRIPT executed in the container view (process.run_once: within script_limits() and the task's
    memory_mb; output to log_file; killed at the deadline). As Harbor: made executable and executed,
    so its shebang chooses the interpreter (a file without one runs in bash, Harbor's exec shell)."""
    with temporary_folder("harbor-bwrap-") as scratch:
        argv = launch_argv(task.container_argv(tree, binds=binds, env=task.base_env() | resolve_host_env(env)),
                           ["bash", "-c", 'chmod +x "$0" 2>/dev/null; "$0"', script], scratch)
        return run_once(argv, timeout_s=timeout_s, log_file=log_file, memory_bytes=task.memory_bytes, name="harbor")


#: the most a reward file may hold (test.sh is the task's code: its files are read without following links)
MAX_REWARD_BYTES = 1 << 20


def read_rewards(verifier_dir: Path) -> dict[str, float]:
    """The rewards in /logs/verifier, read as Harbor's verifier reads them (ValueError names the file):
    reward.json when it exists (reward.txt is then not read), a non-empty JSON object whose values are
    all finite numbers (true/false count as 1/0, as in Python); else reward.txt, one finite number,
    as {"reward": value}. Read as the host reads what a program wrote: never through a link, never a
    pipe, at most 1 MiB."""

    def read(name: str) -> str | None:
        try:
            return untrusted_fs.read_file(verifier_dir, name, MAX_REWARD_BYTES).decode("utf-8", "replace")
        except untrusted_fs.PathRefused as exc:
            if str(exc).endswith("does not exist"):
                return None
            raise ValueError(f"{name}: {exc}") from None

    as_json = read("reward.json")
    if as_json is not None:
        if not as_json.strip():
            raise ValueError("reward.json: empty")
        try:
            data = json.loads(as_json)
        except RecursionError:  # 100,000-deep nesting: the task's file, not the host's problem
            raise ValueError("reward.json: nested too deeply (a flat JSON object of numbers is expected)") from None
        except ValueError as exc:  # a 5,000-digit integer too (Python's int-string limit)
            raise ValueError(f"reward.json: invalid JSON: {exc}") from exc
        if not isinstance(data, dict) or not data:
            raise ValueError("reward.json: must be a JSON object of numbers, e.g. {\"reward\": 1}")
        rewards = {}
        for key, value in data.items():
            try:  # a 401-digit integer is no float: OverflowError
                number = float(value) if isinstance(value, int | float) else math.nan
            except OverflowError:
                number = math.inf
            if not math.isfinite(number):
                raise ValueError(f"reward.json: {key[:80]!r} is {str(value)[:80]!r}, not a finite number")
            rewards[str(key)] = number
        return rewards
    as_text = read("reward.txt")
    if as_text is None:
        raise ValueError("tests/test.sh wrote neither /logs/verifier/reward.json nor /logs/verifier/reward.txt")
    try:
        value = float(as_text.strip())
    except ValueError:
        raise ValueError(f"reward.txt: not a number: {as_text[:80]!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"reward.txt: {value!r} is not a finite number")
    return {"reward": value}


def training_reward(rewards: dict[str, float]) -> float:
    """One number from Harbor's rewards, for training and pass rates: the "reward" entry when there is
    one, else the only entry, else the mean of all entries (each dimension weighs the same; Harbor's
    own default metric takes single-key rewards only)."""
    if "reward" in rewards:
        return rewards["reward"]
    values = list(rewards.values())
    return values[0] if len(values) == 1 else sum(values) / len(values)


def verdict_from_rewards(rewards: dict[str, float]) -> Verdict:
    """score = training_reward clamped to [0, 1]; reward = score (a Harbor task's partial credit is the
    author's, kept: 0.5 trains as 0.5); passed = score 1. Criteria: the `criterion_<name>` entries
    (our exports), else each entry of a multi-key reward (1 = met), else {"reward": passed}."""
    score = min(max(training_reward(rewards), 0.0), 1.0)
    criteria = {k.removeprefix(CRITERION): v == 1.0 for k, v in rewards.items() if k.startswith(CRITERION)}
    if not criteria and len(rewards) > 1:
        criteria = {k: v >= 1.0 for k, v in rewards.items() if k != "reward"}
    return Verdict(criteria=criteria or {"reward": score == 1.0}, reward=score, score=score)


def verify(task: HarborTask, tree: Path, answer: str | None, timeout_s: float | None = None,
           step: StepConfig | None = None) -> VerifierRun:
    """Run tests/test.sh on a container tree (after writing `answer`, unless None) and read its rewards.
    A `step` of a multi-step task: its tests/ merged over the task's (as Harbor uploads both to /tests),
    its verifier env over the task's, its verifier timeout."""
    tree = Path(tree)
    if answer is not None:
        # the tree is the model's: its folders may be links by now, so nothing is followed on the way
        try:
            untrusted_fs.write_file(tree, posixpath.normpath(task.answer_path).lstrip("/"), answer.encode())
        except untrusted_fs.PathRefused as exc:
            error = f"{task.id}: the answer could not be written to {task.answer_path}: {exc}"
            return VerifierRun(verdict=Verdict.failed(error, "policy/state_refused"), rewards={},
                               script=ScriptRun(exit_code=None, timed_out=False, duration_s=0.0, output_tail=""))
    with temporary_folder("harbor-verify-") as tmp:
        tests = Path(tmp) / "tests"
        sources = [task.tests_dir] + ([task.step_dir(step.name) / "tests"] if step else [])
        tests.mkdir()
        try:  # the task's files, copied without following anything (a link was refused at load)
            for src in sources:
                if src.is_dir():
                    untrusted_fs.copy_tree(src, tests, max_bytes=MAX_CONTEXT_BYTES)
        except untrusted_fs.PathRefused as exc:
            return VerifierRun(verdict=Verdict.failed(f"{task.id}: its tests cannot be copied: {exc}", "infra/judge_error"), rewards={},
                               script=ScriptRun(exit_code=None, timed_out=False, duration_s=0.0, output_tail=""))
        logs = Path(tmp) / "logs"
        for sub in ("verifier", "agent", "artifacts"):
            (logs / sub).mkdir(parents=True)
        env = task.config.verifier.env | (step.verifier.env if step else {})
        timeout_s = timeout_s or (step.verifier.timeout_sec if step and step.verifier.timeout_sec else None) \
            or task.verifier_timeout_s
        script = run_script(task, tree, "/tests/test.sh", binds=[(tests, "/tests"), (logs, "/logs")],
                            env=env, timeout_s=timeout_s, log_file=logs / "verifier" / "test-stdout.txt")
        try:
            rewards = read_rewards(logs / "verifier")
        except ValueError as exc:
            how = f"timed out after {timeout_s:.0f} s" if script.timed_out \
                else f"exit code {script.exit_code}"
            error = f"{task.id}: {exc} ({how}); output: {script.output_tail[-600:]}"
            cause = "infra/judge_timeout" if script.timed_out else "infra/judge_error"
            return VerifierRun(verdict=Verdict.failed(error, cause), rewards={},
                               script=script)
    return VerifierRun(verdict=verdict_from_rewards(rewards), rewards=rewards, script=script)


def judge(task: HarborTask, state: EpisodeState | str | Path, answer: str | None) -> Verdict:
    """The Verdict of an episode's final state (or a container tree) and the model's final answer."""
    return verify(task, tree_of(state), answer).verdict


def run_oracle(task: HarborTask, tree: Path, step: StepConfig | None = None) -> ScriptRun:
    """solution/solve.sh (a step's: steps/<name>/solution/solve.sh) in the container view of `tree`
    (bound at /solution), as Harbor's oracle agent."""
    folder = (task.step_dir(step.name) if step else task.dir) / "solution"
    if not (folder / "solve.sh").is_file():
        raise FileNotFoundError(f"{folder / 'solve.sh'}: no oracle solution")
    with temporary_folder("harbor-solve-") as tmp:
        solution = Path(tmp) / "solution"
        try:
            untrusted_fs.copy_tree(folder, tmp, "solution", max_bytes=MAX_CONTEXT_BYTES)
        except untrusted_fs.PathRefused as exc:
            raise HarborTaskError(f"{folder}: cannot be copied: {exc}") from None
        logs = Path(tmp) / "logs"
        (logs / "agent").mkdir(parents=True)
        return run_script(task, tree, "/solution/solve.sh", binds=[(solution, "/solution"), (logs, "/logs")],
                          env=task.config.solution.env, timeout_s=task.agent_timeout_s,
                          log_file=logs / "agent" / "oracle.txt")


def check(task: HarborTask) -> CheckReport:
    """Untouched container → tests must give 0; solution/solve.sh, then tests → must give 1. A task that
    cannot run faithfully here (its blockers) is not run: the report says why."""
    if task.blockers:
        return CheckReport(task=task.id, ok=False, error="cannot run faithfully here: " + "; ".join(task.blockers),
                           notes=task.layout.notes)
    if task.config.steps:
        return check_steps(task)
    with temporary_folder("harbor-check-") as tmp:
        nop = verify(task, task.materialize(Path(tmp) / "nop"), None)
        if task.solve_script is None:
            return CheckReport(task=task.id, ok=False, nop=nop, error="no solution/solve.sh to check",
                               notes=task.layout.notes)
        tree = task.materialize(Path(tmp) / "oracle")
        solve = run_oracle(task, tree)
        oracle = verify(task, tree, None)
    problems = []
    if nop.verdict.reward != 0.0 or nop.verdict.error:
        problems.append(f"untouched container: reward {nop.verdict.reward} {nop.verdict.error or ''}".strip())
    if solve.exit_code != 0:
        problems.append(f"solve.sh failed ({'timeout' if solve.timed_out else f'exit {solve.exit_code}'}): "
                        f"{solve.output_tail[-400:]}")
    if oracle.verdict.reward != 1.0:
        problems.append(f"oracle: reward {oracle.verdict.reward} {oracle.verdict.error or ''}".strip())
    return CheckReport(task=task.id, ok=not problems, nop=nop, solve=solve, oracle=oracle,
                       error="; ".join(problems) or None, notes=task.layout.notes)


def prepare_step(task: HarborTask, tree: Path, step: StepConfig) -> ScriptRun | None:
    """Before a step's agent, as Harbor does: steps/<name>/workdir/ copied into the WORKDIR (nothing
    followed), then its setup.sh run there with bash; the setup's run, or None."""
    source = task.step_dir(step.name) / "workdir"
    if not source.is_dir():
        return None
    try:
        untrusted_fs.copy_tree(str(source), tree, posixpath.normpath(task.workdir).lstrip("/"), links=True,
                               max_bytes=MAX_CONTEXT_BYTES)
    except untrusted_fs.PathRefused as exc:
        raise HarborTaskError(f"{source}: cannot be copied into the container: {exc}") from None
    if not (source / "setup.sh").is_file():
        return None
    with temporary_folder("harbor-setup-") as tmp:
        return run_script(task, tree, posixpath.join(task.workdir, "setup.sh"), binds=[], env={},
                          timeout_s=task.agent_timeout_s, log_file=Path(tmp) / "setup.txt")


def step_rewards(steps: list[dict[str, float]], strategy: str | None) -> dict[str, float]:
    """A multi-step task's rewards from its steps' rewards (Harbor's strategies): "final" the last
    step's, "mean" (the default) per-key means over the steps given, a missing key counting 0."""
    if not steps:
        return {}
    if strategy == "final":
        return dict(steps[-1])
    keys = sorted({k for r in steps for k in r})
    return {k: sum(r.get(k, 0.0) for r in steps) / len(steps) for k in keys}


def below_min_reward(rewards: dict[str, float], min_reward: float | dict[str, float] | None) -> bool:
    if min_reward is None:
        return False
    thresholds = {"reward": min_reward} if isinstance(min_reward, int | float) else min_reward
    return any(rewards.get(k, float("-inf")) < v for k, v in thresholds.items())


def run_steps(task: HarborTask, tree: Path, oracle: bool) -> tuple[VerifierRun, list[str]]:
    """Every step in order on one container tree: its workdir and setup, its oracle (when `oracle`),
    its verifier; a step below its min_reward ends the run. The task's VerifierRun (rewards by the
    task's strategy) and a line per step."""
    runs, lines = [], []
    for step in task.steps:
        prepare_step(task, tree, step)
        if oracle:
            solve = run_oracle(task, tree, step)
            if solve.exit_code != 0:
                lines.append(f"step {step.name}: solve.sh failed (exit {solve.exit_code}): {solve.output_tail[-300:]}")
        run = verify(task, tree, None, step=step)
        runs.append(run)
        lines.append(f"step {step.name}: rewards {run.rewards or run.verdict.error}")
        if below_min_reward(run.rewards, step.min_reward) or run.verdict.error:
            lines.append(f"step {step.name}: below min_reward {step.min_reward} or not verified; the remaining "
                         "steps are skipped")
            break
    rewards = step_rewards([r.rewards for r in runs if r.rewards], task.config.multi_step_reward_strategy)
    first_error = next((r.verdict.cause for r in runs if r.verdict.error), None) or "infra/judge_error"
    verdict = verdict_from_rewards(rewards) if rewards else Verdict.failed("; ".join(lines), first_error)
    return VerifierRun(verdict=verdict, rewards=rewards, script=runs[-1].script), lines


def check_steps(task: HarborTask) -> CheckReport:
    """`check` of a multi-step task: untouched (each step's tests on the state the previous steps left)
    must give 0, every step's solve.sh then tests must give 1."""
    with temporary_folder("harbor-check-") as tmp:
        nop, nop_lines = run_steps(task, task.materialize(Path(tmp) / "nop"), oracle=False)
        oracle, lines = run_steps(task, task.materialize(Path(tmp) / "oracle"), oracle=True)
    problems = []
    if nop.verdict.reward != 0.0:
        problems.append(f"untouched container: reward {nop.verdict.reward}")
    if oracle.verdict.reward != 1.0:
        problems.append(f"oracle: reward {oracle.verdict.reward} ({'; '.join(lines)})")
    notes = [*task.layout.notes, *(f"oracle {line}" for line in lines), *(f"untouched {line}" for line in nop_lines)]
    return CheckReport(task=task.id, ok=not problems, nop=nop, oracle=oracle, error="; ".join(problems) or None,
                       notes=notes)


# ---- the fabric's path: the final container tree shipped from an env worker to a judge ----

def snapshot_tree(state: EpisodeState | str | Path) -> bytes:
    """An episode's final container tree as tar bytes, to judge it in another process or on another node
    (envs/episode_env.snapshot: bounded, nothing followed; the tree's links kept as links)."""
    return snapshot([(tree_of(state), TREE_DIR)], links=True)


def restore_tree(data: bytes, dst: str | Path) -> Path:
    """The tree of `snapshot_tree`, under `dst` (envs/episode_env.restore, links kept)."""
    return restore(data, dst, links=True) / TREE_DIR


class StepProgress(msgspec.Struct):
    """Where a multi-step episode is: the step its agent works on, the steps verified so far."""

    index: int = 0
    runs: list[VerifierRun] = []
    stopped: bool = False  # a step fell below its min_reward: no later step runs


class HarborTaskEnv:
    """An imported Harbor task as an episode environment (envs/episode_env.py): its container tree and
    MCP servers, [agent] timeout_sec as the episode's wall clock, and its tests/test.sh as the judge
    (killed at [verifier] timeout_sec; the shipped tree is restored first, bounded).

    A multi-step task is one conversation: the first step's instruction is the prompt; each time the
    model answers, that step is verified on the live container tree (its tests merged over the task's)
    and, unless it fell below its min_reward, the next step's workdir and setup.sh are laid out and its
    instruction is the next user turn. The last step is verified when the episode has stopped. The
    episode's rewards are the task's strategy over the steps (mean, or final), where a step the episode
    never reached counts 0 (Harbor leaves unreached steps out of its mean: here stopping early must not
    pay). Judged in place: the steps' verdicts live with the episode."""

    judged_in_place = False  # its final state is shipped to a Judge actor on the fabric

    def __init__(self, task: HarborTask, ref: HarborRef | None = None):
        """HarborTaskError when a URL MCP server's host is not among `ref.url_server_hosts` (none without
        a ref): the environment is refused when it is made, before any episode."""
        self.task = task
        self.ref = ref or HarborRef(str(task.dir))
        refused = url_server_refusals(task, self.ref.url_server_hosts, SETTING)
        if refused:
            raise HarborTaskError("; ".join(refused))
        self.instruction = task.prompt
        self.limits = EnvLimits(episode_timeout_s=task.agent_timeout_s)
        self.judge_timeout_s = task.verifier_timeout_s + JUDGE_GRACE_S
        self.judged_in_place = bool(task.steps)
        self._progress: LiveStates[StepProgress] = LiveStates()  # a multi-step episode's progress

    async def open(self, runtime: Runtime) -> Episode:
        episode = await open_harbor_episode(runtime, self.task, self.ref.url_server_hosts)
        if self.task.steps:
            try:
                await asyncio.to_thread(prepare_step, self.task, tree_of(episode.final_state()), self.task.steps[0])
            except BaseException:
                await episode.close()
                raise
            self._progress.track(episode, StepProgress())
        return episode

    async def next_instruction(self, episode: Episode, answer: str) -> str | None:
        """After an answer: a multi-step task's next step instruction (None: the episode ends)."""
        progress = self._progress.get(episode.final_state())
        if progress is None or progress.stopped or progress.index + 1 >= len(self.task.steps):
            return None
        step, tree = self.task.steps[progress.index], tree_of(episode.final_state())
        run = await asyncio.to_thread(verify, self.task, tree, answer, None, step)
        progress.runs.append(run)
        if below_min_reward(run.rewards, step.min_reward) or run.verdict.error:
            progress.stopped = True
            return None
        progress.index += 1
        await asyncio.to_thread(prepare_step, self.task, tree, self.task.steps[progress.index])
        return self.task.step_prompt(progress.index)

    def _judge_steps(self, state: EpisodeState | str | Path, answer: str) -> Verdict:
        progress = self._progress.get(state)
        if progress is None:
            return Verdict.failed(f"{self.task.id}: a multi-step task is judged where its episode ran", "infra/judge_error")
        runs = list(progress.runs)
        if not progress.stopped:  # the step the episode ended in
            runs.append(verify(self.task, tree_of(state), answer, step=self.task.steps[progress.index]))
        failed = [r.verdict for r in runs if r.verdict.error]
        if failed:  # the first failure's cause: a later step is not verified after it
            return Verdict.failed("; ".join(v.error or "" for v in failed), failed[0].cause or "infra/judge_error")
        # a step never reached counts 0 (module docstring of the class)
        steps = [r.rewards for r in runs] + [{"reward": 0.0}] * (len(self.task.steps) - len(runs))
        verdict = verdict_from_rewards(step_rewards(steps, self.task.config.multi_step_reward_strategy))
        verdict.criteria = {f"step_{st.name}": r.get("reward", 0.0) >= 1.0
                            for st, r in zip(self.task.steps, steps, strict=True)}
        return verdict

    def snapshot(self, state: EpisodeState) -> bytes:
        return snapshot_tree(state)

    def judge(self, state: EpisodeState | str | Path, answer: str) -> Verdict:
        if self.task.steps:
            return self._judge_steps(state, answer)
        return judge(self.task, state, answer)

    def judge_untouched(self, answer: str) -> Verdict | None:
        """The task's tests on its untouched container tree (check()'s "nop" run) with `answer`; None for
        a multi-step task (its reward is over steps an untouched tree never reaches)."""
        if self.task.steps:
            return None
        with temporary_folder("harbor-untouched-") as tmp:
            return judge(self.task, self.task.materialize(Path(tmp) / "untouched"), answer)

    def cheat_probes(self) -> dict[str, Callable[[], Verdict]]:
        return {}

    def judge_canary(self) -> Verdict | None:
        """The task's tests on its untouched container tree with an empty answer (a task's tests judge it,
        reward 0); a multi-step task's first step, laid out as an episode's is."""
        if not self.task.steps:
            return self.judge_untouched("")
        with temporary_folder("harbor-canary-") as tmp:
            tree = self.task.materialize(Path(tmp) / "canary")
            prepare_step(self.task, tree, self.task.steps[0])
            return verify(self.task, tree, "", step=self.task.steps[0]).verdict

    def judge_shipped(self, state: bytes, answer: str) -> Verdict:
        if self.task.steps:
            return Verdict.failed(f"{self.task.id}: a multi-step task is judged in place, where its episode ran",
                                  "infra/judge_error")
        try:
            with temporary_folder("harbor-judge-") as tmp:
                return judge(self.task, restore_tree(state, tmp), answer)
        except StateRefused as exc:
            return Verdict.failed(str(exc), "policy/state_refused")
        except Exception as exc:  # noqa: BLE001 - a tree that does not restore is a recorded verifier error
            return Verdict.failed(f"the shipped container tree could not be judged: {type(exc).__name__}: {exc}",
                                  "infra/judge_error")
