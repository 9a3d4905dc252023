"""The task loader and the task's MCP server, on small task folders written by the tests."""

import json
import socket
import sqlite3
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from envs.format.library import TaskLoadError, load_library, load_task
from envs.format.task_server import build_server
from envs.taskkit import Env
from tests.conftest import processes_with

TOOLS = '''
from envs.taskkit import Env, ToolError, page, tool


@tool
def list_items(env: Env, page_no: int = 1) -> dict:
    """List items, 2 per page."""
    return page(env.query("select id, name, qty from items order by id"), page_no, 2)


@tool
def set_qty(env: Env, item_id: int, qty: int) -> dict:
    """Set an item's quantity."""
    if qty < 0:
        raise ToolError("qty must be >= 0")
    cur = env.db.execute("update items set qty = ? where id = ?", (qty, item_id))
    if cur.rowcount == 0:
        raise ToolError(f"no item {item_id}")
    return {"item_id": item_id, "qty": qty}


@tool
def explode(env: Env, item_id: int) -> dict:
    """Writes, then fails with a bug (the write must be rolled back)."""
    env.db.execute("update items set qty = 999 where id = ?", (item_id,))
    return {"x": 1 / 0}


@tool
def read_file(env: Env, path: str) -> str:
    """Read a workspace file."""
    return env.read_text(path)


@tool
def count(env: Env) -> int:
    """How many items."""
    return env.query("select count(*) as n from items")[0]["n"]
'''

DATA = '''
import sqlite3

def build(root, scale, seed):
    con = sqlite3.connect(root / "db.sqlite")
    con.execute("create table items (id integer primary key, name text, qty integer)")
    for i in range(scale.n_rows(3)):
        con.execute("insert into items values (?, ?, ?)", (i + 1, f"item-{i + 1}", i))
    con.commit(); con.close()
    for i in range(scale.n_files(2)):
        (root / "workspace" / f"note-{i}.md").write_text(f"note {i}")
'''

VERIFY = '''
def verify(ctx):
    qty = ctx.final.query("select qty from items where id = 1")[0]["qty"]
    return {"item_1_set_to_5": qty == 5, "answer": "5" in ctx.answer}
'''


def write_task(root: Path, task_id: str = "demo_items", toml: str | None = None) -> Path:
    folder = root / task_id
    folder.mkdir(parents=True)
    (folder / "task.toml").write_text(toml or textwrap.dedent(f'''\
        id = "{task_id}"
        domain = "inventory"
        title = "Demo"
        tools = ["list_items", "set_qty", "explode", "read_file", "count"]
        seed = 1
        '''))
    (folder / "instruction.md").write_text("Set item 1 to 5.")
    (folder / "data.py").write_text(DATA)
    (folder / "tools.py").write_text(TOOLS)
    (folder / "verify.py").write_text(VERIFY)
    (folder / "oracle.py").write_text("tools['set_qty'](item_id=1, qty=5)\nfinal_answer = 'ANSWER: 5'\n")
    return folder


def test_broken_tasks_are_reported_by_file_and_field_and_do_not_hide_others(tmp_path):
    write_task(tmp_path, "good_task")
    write_task(tmp_path, "bad_type", toml='id = "bad_type"\ndomain = "x"\ntitle = "t"\ntools = "not-a-list"\n')
    write_task(tmp_path, "missing_field", toml='id = "missing_field"\ndomain = "x"\ntools = []\n')
    write_task(tmp_path, "bad_toml", toml='id = "bad_toml\n')
    write_task(tmp_path, "wrong_id", toml='id = "other"\ndomain = "x"\ntitle = "t"\ntools = []\n')
    (write_task(tmp_path, "no_verify") / "verify.py").unlink()
    tasks, errors = load_library(tmp_path)
    assert list(tasks) == ["good_task"]
    assert "task.toml" in errors["bad_type"] and "$.tools" in errors["bad_type"]
    assert "missing required field `title`" in errors["missing_field"]
    assert "invalid TOML" in errors["bad_toml"]
    assert "field 'id' is 'other'" in errors["wrong_id"]
    assert errors["no_verify"].endswith("verify.py: required file is missing")


def test_tools_must_match_task_toml(tmp_path):
    folder = write_task(tmp_path, toml='id = "demo_items"\ndomain = "x"\ntitle = "t"\ntools = ["list_items", "ghost"]\n')
    with pytest.raises(TaskLoadError, match=r"listed but missing: \['ghost'\]"):
        load_task(folder, trusted=True).tool_functions()


async def test_task_server_schema_transactions_and_errors(tmp_path):
    task = load_task(write_task(tmp_path), trusted=True)
    env_root = tmp_path / "env"
    task.build(env_root, "v1")
    server = build_server(task, env_root)
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == set(task.spec.tools)
        assert "env" not in tools["set_qty"].input_schema["properties"]
        assert tools["set_qty"].input_schema["required"] == ["item_id", "qty"]
        assert tools["list_items"].description == "List items, 2 per page."
        r = await client.call_tool("list_items", {"page_no": 3})  # a bare `dict` return arrives as JSON text
        listing = json.loads(r.content[0].text)
        assert listing["items"][0]["id"] == 5 and listing["total"] == 6 and listing["next_page"] is None
        r = await client.call_tool("set_qty", {"item_id": 2, "qty": -1})
        assert r.is_error and r.content[0].text == "Error executing tool set_qty: qty must be >= 0"
        r = await client.call_tool("explode", {"item_id": 3})
        assert r.is_error and "explode failed: ZeroDivisionError" in r.content[0].text
        r = await client.call_tool("set_qty", {"item_id": 2, "qty": 40})
        assert not r.is_error
        r = await client.call_tool("read_file", {"path": "../db.sqlite"})
        assert r.is_error and "outside the workspace" in r.content[0].text
        r = await client.call_tool("count", {})
        assert r.structured_content == {"result": 6}
    con = sqlite3.connect(env_root / "db.sqlite")
    assert dict(con.execute("select id, qty from items").fetchall()) == {1: 0, 2: 40, 3: 2, 4: 3, 5: 4, 6: 5}


async def test_task_server_over_stdio(tmp_path):
    task = load_task(write_task(tmp_path), trusted=True)
    task.build(tmp_path / "env", "v0")
    params = StdioServerParameters(command=sys.executable, args=["-m", "envs.format.task_server", "--task", str(task.dir),
                                                                "--root", str(tmp_path / "env")])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        r = await client.call_tool("set_qty", {"item_id": 1, "qty": 5})
        assert not r.is_error
    assert sqlite3.connect(tmp_path / "env" / "db.sqlite").execute("select qty from items where id=1").fetchone() == (5,)


CALLS_PROGRAM = """
for call in [("list_items", {"page_no": 2}), ("count", {}), ("read_file", {"path": "note-1.md"}),
             ("explode", {"item_id": 2}), ("set_qty", {"item_id": 1, "qty": -1}), ("list_items", {"page_no": "x"})]:
    try:
        tools[call[0]](**call[1])
    except Exception:
        pass
"""


async def test_oracle_through_sandbox_and_judge(tmp_path, runtime):
    from envs.checks.validate import run_solution
    from envs.format.task_env import EnvironmentCache

    task = load_task(write_task(tmp_path), trusted=True)
    cache = EnvironmentCache(tmp_path / "cache")
    seen = {}
    for transport in ("inprocess", "stdio", "sandboxed"):
        run = await run_solution(runtime, task, "v2", cache, CALLS_PROGRAM + task.oracle_source, transport=transport)
        assert run.verdict.reward == 1.0 and run.answer == "ANSWER: 5", run
        assert [c.tool for c in run.calls][-1] == "set_qty"
        seen[transport] = ([(c.tool, c.ok, c.error, c.result_text) for c in run.calls], run.tools)
    # every transport: the same results, errors and rolled-back writes, and the same tool schemas
    assert seen["sandboxed"] == seen["stdio"] == seen["inprocess"]
    assert [ok for _, ok, _, _ in seen["sandboxed"][0]] == [True, True, True, False, False, False, True]
    run = await run_solution(runtime, task, "v0", cache, "final_answer = 'ANSWER: 4'")
    assert run.verdict.reward == 0.0 and run.verdict.score == 0.0
    # the sandbox sees the workspace, not the database nor the task folder
    ep_run = await run_solution(runtime, task, "v0", cache, "import os\nfinal_answer = str(sorted(os.listdir('.')))")
    assert ep_run.answer == "['note-0.md', 'note-1.md']"


LEAKY_TOOLS = TOOLS + '''
import os
import socket
from pathlib import Path


@tool
def read_host_file(env: Env, path: str) -> str:
    """Read any file by its path."""
    return Path(path).read_text()


@tool
def dial(env: Env, port: int) -> str:
    """Connect to 127.0.0.1:port."""
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    return "connected"


@tool
def task_files(env: Env) -> str:
    """The files next to tools.py."""
    return " ".join(sorted(os.listdir(Path(__file__).parent)))


@tool
def spin(env: Env) -> str:
    """Start a thread that never ends."""
    import threading

    def forever():
        while True:
            pass

    threading.Thread(target=forever).start()
    return "spinning"
'''

PROBE = '''
import json
seen = {}
for name, tool, kwargs in %s:
    try:
        seen[name] = ["ok", tools[tool](**kwargs)]
    except Exception as exc:
        seen[name] = ["error", type(exc).__name__, str(exc)[:300]]
final_answer = json.dumps(seen)
'''


async def test_sandboxed_task_server_sees_no_host_files_or_network(tmp_path, runtime):
    """A tools.py that reads host files, lists its own folder or dials a local listener: in process it
    can; through the "sandboxed" transport every such call is an error the program sees, while the
    task's own tools still read and write the episode's environment."""
    from envs.checks.validate import run_solution
    from envs.format.task_env import EnvironmentCache

    task_id = f"leaky_{uuid.uuid4().hex[:8]}"  # names this test's server processes on the host
    folder = write_task(tmp_path / "tasks", task_id, toml=textwrap.dedent(f'''\
        id = "{task_id}"
        domain = "inventory"
        title = "Demo"
        tools = ["list_items", "set_qty", "explode", "read_file", "count", "read_host_file", "dial", "task_files",
                 "spin"]
        seed = 1
        '''))
    (folder / "tools.py").write_text(LEAKY_TOOLS)
    task = load_task(folder, trusted=True)
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("host secret")
    shipped = sorted((Path(__file__).resolve().parents[1] / "envs" / "tasks").glob("*/verify.py"))[0]
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    calls = [("secret", "read_host_file", {"path": str(secret)}),
             ("shipped_verifier", "read_host_file", {"path": str(shipped)}),
             ("own_verifier", "read_host_file", {"path": str(folder / "verify.py")}),
             ("network", "dial", {"port": port}),
             ("task_files", "task_files", {}),
             ("write", "set_qty", {"item_id": 1, "qty": 5}),
             ("workspace", "read_file", {"path": "note-0.md"})]
    cache = EnvironmentCache(tmp_path / "cache")
    seen = {}
    try:
        for transport in ("inprocess", "sandboxed"):
            t0 = time.perf_counter()
            spin = [("spin", "spin", {})] if transport == "sandboxed" else []  # never in this process
            run = await run_solution(runtime, task, "v0", cache, PROBE % repr(calls + spin), transport=transport)
            seen[transport] = json.loads(run.answer)
            assert run.verdict.criteria["item_1_set_to_5"], (transport, run)  # the write reached the environment
            assert time.perf_counter() - t0 < 30
    finally:
        listener.close()
    inprocess, sandboxed = seen["inprocess"], seen["sandboxed"]
    assert inprocess["secret"] == ["ok", "host secret"] and inprocess["network"] == ["ok", "connected"]
    assert inprocess["shipped_verifier"][0] == inprocess["own_verifier"][0] == "ok"
    assert {"verify.py", "oracle.py", "data.py"} <= set(inprocess["task_files"][1].split())
    for name, error in (("secret", "FileNotFoundError"), ("shipped_verifier", "FileNotFoundError"),
                        ("own_verifier", "FileNotFoundError"), ("network", "ConnectionRefusedError")):
        assert sandboxed[name][0] == "error" and error in sandboxed[name][2], (name, sandboxed[name])
    assert "host secret" not in json.dumps(sandboxed)
    assert sandboxed["task_files"] == ["ok", "task.toml tools.py"]  # not data.py, verify.py, oracle.py
    assert sandboxed["write"] == ["ok", {"item_id": 1, "qty": 5}] and sandboxed["workspace"] == ["ok", "note 0"]
    # the thread that never ends went with its episode: no process of the server is left
    assert sandboxed["spin"] == ["ok", "spinning"]
    for _ in range(50):  # gone at once with cgroup limits; bubblewrap's namespace may take a moment without
        if not processes_with(f"/task/{task_id}"):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the sandboxed task server survived its episode: {processes_with(f'/task/{task_id}')}")


def test_shipped_tasks_touch_workspace_files_only_through_the_env_methods():
    """A path taken from `env.workspace` or `env.file()` and opened later can be a link by then (the
    race tests/test_attack_task_tools.py runs): shipped tools and verifiers use read_text,
    write_text and list_files, which open what they check."""
    import re

    from envs.format.library import LIBRARY_DIR

    offending = []
    for folder in (LIBRARY_DIR, LIBRARY_DIR.parent / "starter_tasks"):
        for path in sorted(folder.glob("*/*.py")):
            if path.name not in ("tools.py", "verify.py"):
                continue
            for no, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"\.workspace\b|\.file\(|\bopen\(|\.read_text\(\)|\.glob\(|\bos\.", line):
                    offending.append(f"{path.relative_to(folder.parent)}:{no}: {line.strip()}")
    assert not offending, "\n".join(offending)


def test_query_page_counts_what_the_database_holds_now(tmp_path):
    """`Env.query_page` keeps a list's count while the connection changed no row: a write, even one
    rolled back, and the next page counts again."""
    (tmp_path / "workspace").mkdir()
    env = Env(tmp_path)
    env.db.execute("create table t (id integer primary key, k text)")
    env.db.executemany("insert into t (k) values (?)", [("a",)] * 5 + [("b",)] * 3)
    env.db.commit()
    sql = "select * from t where k = ? order by id"
    first = env.query_page(sql, ("a",), 1, 2)
    assert first["total"] == 5 and [r["id"] for r in first["items"]] == [1, 2] and first["next_page"] == 2
    assert env.query_page(sql, ("b",), 1, 2)["total"] == 3  # other parameters, their own count
    env.db.execute("insert into t (k) values ('a')")
    env.db.commit()
    assert env.query_page(sql, ("a",), 3, 2) == {"items": [{"id": 5, "k": "a"}, {"id": 9, "k": "a"}], "page": 3,
                                                 "page_size": 2, "total": 6, "next_page": None}
    env.db.execute("delete from t where k = 'a'")
    env.db.rollback()
    env.db.execute("delete from t where id = 9")
    env.db.commit()
    assert env.query_page(sql, ("a",), 1, 10)["total"] == 5
    assert env.query("select count(*) as n, max(id) as top from t") == [{"n": 8, "top": 8}]
    env.close()


TYPED_TOOLS = TOOLS + '''
from typing import Any, Literal, Optional


@tool
def search(env: Env, words: list[str], mode: Literal["any", "all"] = "any", limit: Optional[int] = None,
           flags: dict[str, Any] | None = None, ratio: float = 0.5, strict: bool = False, *, tag: str = "") -> list[dict]:
    """Every parameter shape a tools.py may use."""
    return [{"words": words, "mode": mode, "limit": limit, "flags": flags, "ratio": ratio, "strict": strict,
             "tag": tag}]


@tool
def untyped(env: Env, value, note: str = "n"):
    """No annotations at all."""
    return {"value": value, "note": note}
'''


def _tool_listing(server) -> list[dict]:
    import asyncio

    return [t.model_dump() for t in asyncio.run(server.list_tools())]


def test_hosted_tools_publish_the_sdk_servers_schemas(tmp_path):
    """The "sandboxed" transport's MCP server is rebuilt from the signatures its tool host describes
    (envs/format/tool_host.py): every library task, and a tools.py with every supported parameter shape,
    gets the names, descriptions and input and output schemas of the SDK server built from the
    functions themselves; a shape the host cannot describe exactly is refused (and then served by
    the SDK server in the sandbox, see the next test)."""
    from envs.format.hosted_tools import HostedTaskTools
    from envs.format.tool_host import Unsupported, describe_tool

    folder = write_task(tmp_path / "typed", "typed_items", toml=textwrap.dedent('''\
        id = "typed_items"
        domain = "inventory"
        title = "Typed"
        tools = ["list_items", "set_qty", "explode", "read_file", "count", "search", "untyped"]
        seed = 1
        '''))
    (folder / "tools.py").write_text(TYPED_TOOLS)
    tasks, _ = load_library()
    tasks["typed_items"] = load_task(folder, trusted=True)
    for task in tasks.values():
        described = json.loads(json.dumps({"task": task.id, "title": task.spec.title, "tools": [
            describe_tool(name, fn) for name, fn in task.tool_functions().items()]}))  # as it crosses the pipe
        hosted = HostedTaskTools("task", [], [])._server(described)
        assert _tool_listing(hosted) == _tool_listing(build_server(task, tmp_path / "env" / task.id)), task.id
    assert len(_tool_listing(hosted)) == 7

    def pair(env: Env, xy: tuple[int, int]) -> list:
        return list(xy)

    def wide(env: Env, *rest: int) -> int:
        return 0

    for fn, reason in ((pair, "tuple"), (wide, "variadic positional")):
        with pytest.raises(Unsupported, match=reason):
            describe_tool(fn.__name__, fn)


HOST_TOOLS = TOOLS + '''
import os
import time


@tool
def crash(env: Env) -> str:
    """Ends its own process."""
    os._exit(3)


@tool
def hang(env: Env) -> str:
    """Never returns."""
    while True:
        time.sleep(1)
'''


async def test_sandboxed_tool_host_restarts_after_a_crash_or_a_hang_and_falls_back(tmp_path):
    """A tool that kills its process, or one that never returns (the router's tool timeout): the
    call is an error that says what happened; the next call gets a fresh tool host over the same
    environment (the write before the crash is kept). A tools.py with a signature the host cannot
    describe is served by the SDK's server in the same sandbox, with the in-process schemas."""
    from envs.format.task_env import EnvironmentCache, open_task_episode
    from envs.runtime.episode import Runtime
    from schema.config import RuntimeConfig

    toml = '''id = "{id}"\ndomain = "inventory"\ntitle = "Demo"\nseed = 1\ntools = {tools}\n'''
    names = ["list_items", "set_qty", "explode", "read_file", "count"]
    folder = write_task(tmp_path, "host_items", toml=toml.format(id="host_items", tools=json.dumps(names + ["crash", "hang"])))
    (folder / "tools.py").write_text(HOST_TOOLS)
    cache = EnvironmentCache(tmp_path / "cache")
    async with Runtime(RuntimeConfig(warm_pool=0, tool_timeout_s=3)) as rt:
        ep = await open_task_episode(rt, load_task(folder), "v0", cache, "sandboxed")
        try:
            assert not (await ep.call_tool("set_qty", {"item_id": 1, "qty": 5})).is_error
            r = await ep.call_tool("crash", {})
            assert r.is_error and "stopped during the call (exit code 3)" in r.text and "retry" in r.text, r.text
            r = await ep.call_tool("list_items", {})
            assert not r.is_error and json.loads(r.text)["items"][0]["qty"] == 5, r.text
            r = await ep.call_tool("hang", {})
            assert r.is_error and "did not answer within 3 s" in r.text, r.text
            r = await ep.call_tool("count", {})
            assert not r.is_error and r.text == "3", r.text
            assert ep.router.upstreams["task"].fallback is None
        finally:
            await ep.close()

        folder = write_task(tmp_path, "pair_items", toml=toml.format(id="pair_items", tools=json.dumps(names + ["pair"])))
        (folder / "tools.py").write_text(TOOLS + "\n\n@tool\ndef pair(env: Env, xy: tuple[int, int]) -> list:\n"
                                          "    \"\"\"Both numbers.\"\"\"\n    return list(xy)\n")
        task = load_task(folder, trusted=True)
        seen = {}
        for transport in ("sandboxed", "inprocess"):
            ep = await open_task_episode(rt, task, "v0", cache, transport)
            try:
                r = await ep.call_tool("pair", {"xy": [1, 2]})
                assert not r.is_error and "2" in r.text, r.text
                seen[transport] = (r.text, ep.tools())
                if transport == "sandboxed":
                    assert "tuple" in ep.router.upstreams["task"].fallback
            finally:
                await ep.close()
        assert seen["sandboxed"] == seen["inprocess"]


def test_run_program_keeps_each_programs_prints_when_run_in_threads(tmp_path, capsys):
    """Validation runs wrong solutions in threads (`Task.run_program`): each program's output is its
    own, and none of it reaches the process's stdout."""
    from concurrent.futures import ThreadPoolExecutor

    task = load_task(write_task(tmp_path), trusted=True)
    for name in ("a", "b"):
        task.build(tmp_path / name, "v0")

    def run(name: str) -> tuple[str, str, list]:
        program = f"import time\nfor i in range(40):\n    print({name!r}, i)\n    time.sleep(0.002)\nfinal_answer = {name!r}"
        return task.run_program(tmp_path / name, program)

    with ThreadPoolExecutor(2) as pool:
        runs = dict(zip("ab", pool.map(run, "ab"), strict=True))
    for name, (answer, stdout, _) in runs.items():
        assert answer == name and stdout == "".join(f"{name} {i}\n" for i in range(40))
    assert capsys.readouterr().out == ""
