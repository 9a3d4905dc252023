"""A real PostgreSQL per episode, in the benchmark sandbox: no TCP, a Unix socket only, nothing shared,
nothing left after close, and what a superuser can do from SQL stays inside (MCPMark's postgres tasks
give the model a superuser through postgres-mcp)."""

import shutil
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

from envs.benchmarks.postgres import PORT, EpisodePostgres, MasterCluster, pg_bin

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None or not Path("/usr/lib/postgresql").exists(),
                                reason="needs bubblewrap and a PostgreSQL server (apt install postgresql)")


def psql(server: EpisodePostgres, sql: str, database: str = "postgres") -> subprocess.CompletedProcess:
    return subprocess.run([str(pg_bin() / "psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", server.dsn(database),
                           "-c", sql], capture_output=True, text=True, timeout=60)


def listening_tcp(pid: int) -> list[str]:
    """LISTEN sockets of TCP over IPv4 and IPv6 in the network namespace of process `pid`."""
    found = []
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        found += [line.split()[1] for line in lines if line.split()[3] == "0A"]
    return found


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    return MasterCluster.ensure(tmp_path_factory.mktemp("pg") / "master")


def test_each_episode_gets_its_own_server_with_no_tcp_and_nothing_left_after(master, tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)  # deeper than a Unix socket's 107 bytes leave room for
    a = EpisodePostgres.start(master, deep / "a")
    b = EpisodePostgres.start(master, tmp_path / "b")
    try:
        assert psql(a, "create table t (x int); insert into t values (7)").returncode == 0
        assert psql(a, "select x from t").stdout.strip() == "7"
        assert "does not exist" in psql(b, "select x from t").stderr  # nothing shared between episodes
        assert psql(a, "show listen_addresses").stdout.strip() == ""
        assert psql(a, "select current_setting('port')").stdout.strip() == str(PORT)
        for server in (a, b):  # no TCP socket in the server's network namespace, and none from here
            assert server.pids and all(listening_tcp(pid) == [] for pid in server.pids[1:])
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", PORT), timeout=2).close()
        assert a.env()["POSTGRES_HOST"] == str(a.socket_dir)
        pids = a.pids
    finally:
        a.close()
        b.close()
    assert not (deep / "a").exists() and not (tmp_path / "b").exists()
    assert not a.socket_dir.exists() and not b.socket_dir.exists()
    import psutil

    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert (master.data / "PG_VERSION").exists()  # the master is untouched


def test_a_superusers_sql_stays_inside_the_sandbox(master, tmp_path):
    """COPY … PROGRAM runs a shell as the server's user: in the sandbox, whose /tmp is its own and whose
    root is read-only; pg_read_file of a host file outside the sandbox finds nothing; a second database
    lives and dies with the episode's server."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("sk-host")
    marker = f"/tmp/pg-escape-{uuid.uuid4().hex[:8]}"
    with EpisodePostgres.start(master, tmp_path / "e") as server:
        out = psql(server, f"copy (select 1) to program 'touch {marker} && id -u > {marker}'")
        assert out.returncode == 0, out.stderr  # it ran, inside
        assert not Path(marker).exists()
        # the host folder above the episode's: inside, only the sandbox's private /tmp holds that path
        psql(server, f"copy (select 1) to program 'echo x > {tmp_path}/written-from-sql'")
        assert not (tmp_path / "written-from-sql").exists()
        out = psql(server, f"select pg_read_file('{secret}')")
        assert out.returncode != 0 and "sk-host" not in out.stdout
        assert "root" not in psql(server, "copy (select 1) to program 'id -un > /dev/null'").stderr
        assert psql(server, "create database second").returncode == 0
        assert psql(server, "select 1", database="second").stdout.strip() == "1"
        lo = psql(server, "select lo_import('/etc/passwd')")  # large objects read only what the sandbox shows
        assert lo.returncode == 0 or "could not open" in lo.stderr
        lo = psql(server, f"select lo_import('{secret}')")
        assert lo.returncode != 0
    assert not (tmp_path / "e").exists()


def test_a_backup_is_restored_once_into_the_master_and_an_unreadable_one_is_refused(tmp_path):
    """A real pg_dump archive (the custom format of MCPMark's .backup files), made from a server here,
    goes into a fresh master once; every episode then starts with it; a file that is no archive is
    refused with pg_restore's reason, and the master stays as it was."""
    from envs.benchmarks.postgres import BackupError

    source = MasterCluster.ensure(tmp_path / "source")
    backup = tmp_path / "employees.backup"
    with EpisodePostgres.start(source, tmp_path / "dump") as server:
        assert psql(server, "create table staff (id int primary key, name text); "
                            "insert into staff values (1, 'ada'), (2, 'grace')").returncode == 0
        out = subprocess.run([str(pg_bin() / "pg_dump"), "-Fc", "-f", str(backup), "-d", server.dsn()],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
    master = MasterCluster.ensure(tmp_path / "master")
    master.restore(backup, "employees")
    master.restore(backup, "employees")  # once: the second is a no-op
    assert master.databases() == ["employees"]
    with EpisodePostgres.start(master, tmp_path / "ep") as server:
        assert psql(server, "select string_agg(name, ',' order by id) from staff", "employees").stdout.strip() == \
            "ada,grace"
        assert psql(server, "delete from staff", "employees").returncode == 0
    with EpisodePostgres.start(master, tmp_path / "ep2") as server:  # the next episode starts from the backup
        assert psql(server, "select count(*) from staff", "employees").stdout.strip() == "2"
    junk = tmp_path / "junk.backup"
    junk.write_bytes(b"PGDMP" + b"\xff" * 64)
    with pytest.raises(BackupError, match="pg_restore cannot read it"):
        master.restore(junk, "junk")
    assert master.databases() == ["employees"]
