"""An MCPMark postgres task as an episode environment (envs/episode_env.py), on a PostgreSQL server
of the episode's own (envs/benchmarks/postgres.py).

Per episode, as MCPMark's postgres state manager does it, but never on a shared server (the model is
a superuser there: MCPMark runs `postgres-mcp --access-mode=unrestricted`):

- **The database.** A category with a backup (`<backups>/<category>.backup`, MCPMark's
  `postgres_state/` files) is restored once per machine into a master cluster of that category
  (`MasterCluster.restore`); each episode starts a copy of that master and works in the category's
  database itself (MCPMark copies it as a template into a new database; here the whole server is the
  copy). A category without a backup whose task has `prepare_environment.py` (the security tasks) gets
  an empty master; the episode creates `mcpmark_<category>_<task>` and runs the script in the
  benchmark sandbox with MCPMark's POSTGRES_* variables, in the task's folder. Anything else is
  refused before a run starts (kind.py), naming the backup to fetch, or pgvector.
- **The model's server**: `postgres-mcp --access-mode=unrestricted` in the benchmark sandbox, its
  DATABASE_URI the server's Unix socket (the socket's folder the only thing of the server it sees).
- **The judge**: the task's `verify.py` with POSTGRES_* set, in the sandbox (checkout read-only),
  within judge_timeout_s, *while the server is up*: exit 0 is a pass. Only this process holds the
  server, so the state is judged in place (`judged_in_place`), never shipped.
- **Close**: the server and everything in its sandbox killed, its files removed.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.benchmarks.checkout_files import read_text
from envs.benchmarks.mcpmark.checkout import MCPMarkCheckout, MCPMarkError, MCPMarkTask
from envs.benchmarks.mcpmark.postgres.kind import MCPMarkPostgresRef
from envs.benchmarks.postgres import EpisodePostgres, MasterCluster
from envs.benchmarks.process import run_once
from envs.benchmarks.sandbox import interpreter, sandbox_options, sandboxed
from envs.episode_env import EnvLimits, LiveStates, OneStep
from envs.runtime import untrusted_fs
from envs.runtime.episode import Episode, EpisodeState, Runtime
from envs.runtime.sandbox import BWRAP_ENV
from envs.runtime.scratch import folder as scratch_folder
from envs.runtime.upstream import Upstream, UpstreamSpec
from schema.records import Verdict

#: MCPMark's suffix to a postgres task's description (its _format_task_instruction)
NOTE = ("\n\nNote: Use PostgreSQL MCP tools to complete this task. "
        "The database connection is already configured.")
JUDGE_TIMEOUT_S = 300.0  # MCPMark's verify timeout
PREPARE_TIMEOUT_S = 300.0  # and its prepare_environment.py timeout
#: the writes_disabled probe: every new transaction of the database read-only, for every role
WRITES_DISABLED = "do $$ begin execute format('alter database %I set default_transaction_read_only = on', " \
                  "current_database()); end $$"
#: what the model's server runs (MCPMark: `pipx run postgres-mcp --access-mode=unrestricted`)
SERVER_ARGS = ("--access-mode=unrestricted",)


def database_of(task: MCPMarkTask, restored: bool) -> str:
    """The database an episode of `task` works in: its category's (restored from a backup), else
    MCPMark's name for the one prepare_environment.py fills."""
    return task.category if restored else f"mcpmark_{task.category}_{task.name}".lower()


class PostgresEpisodeState:
    """One open episode's server and folders (closed with the episode)."""

    def __init__(self, work: Path, server: EpisodePostgres, database: str):
        self.work = work
        self.server = server
        self.database = database


class MCPMarkPostgresTaskEnv(OneStep):
    judged_in_place = True

    def __init__(self, ref: MCPMarkPostgresRef, judge_timeout_s: float | None = None):
        self.ref = ref
        self.checkout = MCPMarkCheckout(ref.checkout, service="postgres")
        self.task = self.checkout.task(ref.task)
        self.dir = self.checkout.task_dir(self.task)
        self.interp = interpreter(ref.python)
        # the checkout is third-party: its description.md is read without following links (checkout_files)
        self.instruction = read_text(self.checkout.path, self.dir / "description.md", MCPMarkError) + NOTE
        self.limits = EnvLimits()
        self.judge_timeout_s = judge_timeout_s or JUDGE_TIMEOUT_S
        self._open: LiveStates[PostgresEpisodeState] = LiveStates()

    # ---- the database -------------------------------------------------------------------------
    def master(self) -> MasterCluster:
        """The category's master cluster on this machine (made, and its backup restored, once)."""
        name = self.task.category if self.ref.backup else "empty"
        master = MasterCluster.ensure(Path(self.ref.master_dir) / name, Path(self.ref.pg_bin) if self.ref.pg_bin else None)
        if self.ref.backup:
            master.restore(self.ref.backup, self.task.category)
        return master

    def _options(self, server: EpisodePostgres, *, writable: list[Path], cwd: Path,
                 env: dict[str, str] | None = None) -> list[str]:
        """A benchmark process that reaches the episode's server: its socket folder, the checkout
        read-only (what grades and prepares; never bound for the model's server, see open)."""
        return sandbox_options(self.interp, read_only=[server.socket_dir, self.checkout.path], writable=writable,
                               cwd=cwd, env=env)

    def _run_script(self, state: PostgresEpisodeState, script: Path, cwd: Path, timeout_s: float, name: str,
                    limits: Any = None):
        host = scratch_folder(f"mcpmark-{name}-")
        scratch = host / "io"  # the script's only writable folder; its launch options stay outside it
        try:
            scratch.mkdir()
            argv = sandboxed(self._options(state.server, writable=[scratch], cwd=cwd,
                                           env=state.server.env(state.database)),
                             [self.interp.python, str(script)], host / "launch")
            return run_once(argv, timeout_s=timeout_s, log_file=state.work / f"{name}.log", limits=limits, name=name)
        finally:
            shutil.rmtree(host, ignore_errors=True)

    def prepare(self, work: Path, limits: Any) -> PostgresEpisodeState:
        server = EpisodePostgres.start(self.master(), work / "pg", limits=limits)
        state = PostgresEpisodeState(work, server, database_of(self.task, bool(self.ref.backup)))
        try:
            if not self.ref.backup:
                server.create_database(state.database)
                run = self._run_script(state, self.dir / "prepare_environment.py", self.dir, PREPARE_TIMEOUT_S,
                                       "prepare", limits)
                if run.timed_out or run.exit_code != 0:
                    raise RuntimeError(f"{self.ref.task}: prepare_environment.py "
                                       f"{'timed out' if run.timed_out else f'exit {run.exit_code}'}: "
                                       f"{untrusted_fs.read_tail(work / 'prepare.log', 2000).decode('utf-8', 'replace')}")
        except BaseException:
            server.close()
            raise
        return state

    async def open(self, runtime: Runtime) -> Episode:
        work = runtime.env_folder("mcpmark-pg").resolve()
        state: PostgresEpisodeState | None = None

        async def close() -> None:
            if state is not None:
                await asyncio.to_thread(state.server.close)
            await runtime.remove_env_folder(work)

        try:
            state = await asyncio.to_thread(self.prepare, work, runtime.limits)
            # the model's server sees the socket folder only: not the checkout (verify.py, ground_truth.sql)
            options = sandbox_options(self.interp, read_only=[state.server.socket_dir], writable=[],
                                      cwd=state.server.socket_dir,
                                      env={"DATABASE_URI": state.server.dsn(state.database)})
            argv = sandboxed(options, [str(self.interp.bin_dir / "postgres-mcp"), *SERVER_ARGS], work / "scratch")
            up = Upstream(UpstreamSpec("postgres", command=argv, env=BWRAP_ENV), limits=runtime.limits,
                          errlog=work / "upstream-postgres.log")
            episode = await runtime.open_episode([up], counted=[work])
        except BaseException:
            await close()
            raise
        self._open.track(episode, state, close)
        return episode

    # ---- judging ------------------------------------------------------------------------------
    def judge(self, state: EpisodeState | str | Path, answer: str) -> Verdict:
        live = self._open.get(state)
        if live is None:
            return Verdict.failed(f"{self.ref.task}: not an open episode of this environment (MCPMark's postgres "
                                  "tasks are judged on their live server)", "infra/judge_error")
        if live.server.proc.poll() is not None:
            # the model may stop its own server (pg_terminate_backend, a crash it provoked): a state it
            # broke, judged as MCPMark would (verify.py cannot connect: a fail), not the fabric's fault
            return Verdict(criteria={"mcpmark_verify": False}, reward=0.0, score=0.0,
                           metrics={"server_stopped": 1.0})
        live.server.quiesce(live.database)  # nothing the model left runs or holds a lock while verify.py reads
        return self.verify(live)

    def verify(self, state: PostgresEpisodeState) -> Verdict:
        """The task's verify.py against the server of `state`, within judge_timeout_s."""
        run = self._run_script(state, self.dir / "verify.py", self.checkout.path, self.judge_timeout_s, "verify")
        if run.timed_out:
            return Verdict.failed(f"MCPMark's verify.py did not finish within {self.judge_timeout_s:.0f} s",
                                  "infra/judge_timeout")
        passed = run.exit_code == 0
        return Verdict(criteria={"mcpmark_verify": passed}, reward=float(passed), score=float(passed))

    def _untouched(self, sql: str | None = None) -> Verdict:
        """verify.py on a fresh server of the task's untouched database (prepared as an episode's is),
        after the host's own `sql` when given; the server and its folder removed after."""
        work = scratch_folder("mcpmark-pg-untouched-")
        try:
            state = self.prepare(work / "state", None)
            try:
                if sql:
                    state.server.run_sql(sql, state.database)
                return self.verify(state)
            finally:
                state.server.close()
        finally:
            untrusted_fs.remove_tree(work)

    def judge_untouched(self, answer: str) -> Verdict:
        """verify.py on the untouched database (MCPMark's postgres verifiers read the database only)."""
        return self._untouched()

    def cheat_probes(self) -> dict[str, Callable[[], Verdict]]:
        """`writes_disabled`: the untouched database made to refuse every write (each new transaction
        read-only) — what a policy that implements none of a security task's rules, and only makes an
        unauthorised write fail, leaves."""
        return {"writes_disabled": lambda: self._untouched(WRITES_DISABLED)}

    def snapshot(self, state: EpisodeState) -> bytes:
        raise NotImplementedError("MCPMark's postgres tasks are judged in place (judged_in_place)")

    def judge_canary(self) -> Verdict:
        """verify.py on a second server of the untouched database (it judges it: a fail)."""
        return self._untouched()

    def judge_shipped(self, state: bytes, answer: str) -> Verdict:
        return Verdict.failed("MCPMark's postgres tasks are judged on the env worker that holds their server; "
                              "a shipped state cannot be judged (judged_in_place)", "infra/judge_error")
