"""The runtime with servers nobody here wrote: the `mcpServers` file, a server's own environment,
working directory and deadline, a failed start that says why, and results judged by one rule."""

import asyncio
import json
import os
import subprocess
import sys

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from envs.runtime.mcp_config import MCPConfigError, load_mcp_servers, parse_mcp_servers
from envs.runtime.stdio_transport import StderrTail
from envs.runtime.upstream import Upstream, Upstreams, UpstreamSpec
from tests.conftest import BIN, FIXTURE_SERVER, NPM_FS

FX = [sys.executable, str(FIXTURE_SERVER)]


def test_mcp_servers_file_reads_every_kind_and_names_what_is_wrong(tmp_path):
    specs = parse_mcp_servers({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "server-filesystem", "/data"], "env": {"DEBUG": "1"},
                  "cwd": "/data", "timeout_s": 120},
        "remote": {"url": "https://host/mcp", "headers": {"Authorization": "Bearer t"}, "type": "http"},
        "legacy": {"type": "sse", "url": "http://host/sse", "error_heuristic": False},
        "off": {"command": "x", "disabled": True}}})
    assert [s.name for s in specs] == ["files", "remote", "legacy"]
    files, remote, legacy = specs
    assert files.command == ["npx", "-y", "server-filesystem", "/data"] and files.env == {"DEBUG": "1"}
    assert files.cwd == "/data" and files.timeout_s == 120.0 and files.error_heuristic is None
    assert remote.url == "https://host/mcp" and remote.headers == {"Authorization": "Bearer t"} and not remote.transport
    assert legacy.transport == "sse" and legacy.error_heuristic is False
    assert [s.name for s in parse_mcp_servers({"servers": {"a": {"command": "a"}}})] == ["a"]  # VS Code's key
    bad = {
        '{"mcpServers": {"a": {"command": "x", "arg": ["y"]}}}': r"mcpServers.a: unknown key\(s\) \['arg'\]",
        '{"mcpServers": {"a": {"command": "x", "timeout_s": "fast"}}}': "timeout_s must be a positive number",
        '{"mcpServers": {"a": {"url": "ftp://x"}}}': "url must be an http",
        '{"mcpServers": {"a": {"command": "x", "env": {"N": 1}}}}': "env must be an object of strings",
        '{"mcpServers": {"a": {"args": ["x"]}}}': "command must be a program name",
        '{"tools": {}}': 'expected an "mcpServers" object',
        "not json": "not JSON",
    }
    for i, (text, message) in enumerate(bad.items()):
        path = tmp_path / f"bad{i}.json"
        path.write_text(text)
        with pytest.raises(MCPConfigError, match=message):
            load_mcp_servers(path)


async def test_progagent_mcp_config_gives_servers_their_env_cwd_and_deadline(tmp_path):
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        "fx": {"command": FX[0], "args": FX[1:], "env": {"FIXTURE_VAR": "v1"}, "cwd": str(tmp_path),
               "timeout_s": 1}}}))
    # a variable of the host process (an API key, say) never reaches a server that was not given it
    params = StdioServerParameters(command=str(BIN / "progagent"),
                                   args=["mcp", "--config", str(config), "--harness", "hybrid", "--timeout", "30"],
                                   env={**os.environ, "PROGAGENT_TEST_SECRET": "sk-host"})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        desc = tools["programmatic_tool_call"].description
        # return shapes from the servers' output schemas, compactly
        assert 'tools["add"](a: integer, b: integer) -> integer' in desc
        assert 'tools["rows"](n: integer = 3) -> list[' in desc
        # DTC over MCP follows the rule of every path: a failure said only in text is an error
        legacy = await session.call_tool("legacy_lookup", {"record_id": "zz"})
        assert legacy.is_error and legacy.content[0].text == "Error: no record with id zz"
        result = await session.call_tool("programmatic_tool_call", {"code": (
            "w = tools['whereami']()\nprint(w['cwd'], w['var'], w['secret'])\n"
            "try:\n    tools['slow'](seconds=5)\nexcept ToolError as e:\n    print('late:', e)")})
        text = result.content[0].text
        assert text.splitlines()[0] == f"{tmp_path} v1 None"
        assert "late: tool 'slow' did not answer within 1 s" in text  # the server's own timeout_s
        direct = await session.call_tool("slow", {"seconds": 5})  # the same deadline over DTC
        assert direct.is_error and "did not answer within 1 s" in direct.content[0].text
    # the router's own deadline: --tool-timeout, for servers without timeout_s
    config.write_text(json.dumps({"mcpServers": {"fx": {"command": FX[0], "args": FX[1:]}}}))
    params = StdioServerParameters(command=str(BIN / "progagent"), args=[
        "mcp", "--config", str(config), "--harness", "dtc", "--tool-timeout", "1.5"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        direct = await session.call_tool("slow", {"seconds": 5})
        assert direct.is_error and "did not answer within 1.5 s" in direct.content[0].text


async def test_a_server_that_cannot_start_is_reported_with_its_own_words(tmp_path):
    log = tmp_path / "upstream-fx.log"
    up = Upstream(UpstreamSpec(name="fx", command=FX, env={"FIXTURE_FAIL_AT_START": "1"}), errlog=log)
    with pytest.raises(RuntimeError) as err:
        await up.start(timeout=30)
    message = str(err.value)
    assert "upstream MCP server 'fx' failed to start" in message
    assert "FileNotFoundError: DATA_DIR /nope/loca-data is missing" in message  # its stderr's last lines
    assert "ExceptionGroup" not in message and f"its log: {log}" in message
    assert "DATA_DIR /nope/loca-data is missing" in log.read_text()


def test_a_servers_stderr_log_is_capped(tmp_path):
    with open(tmp_path / "log", "wb") as sink:
        tail = StderrTail(sink, keep_bytes=64, max_log_bytes=1000)
        for _ in range(30):
            tail.feed(b"x" * 99 + b"\n")
    data = (tmp_path / "log").read_bytes()
    assert len(data) < 1100 and data.endswith(b"[progagent: the server's stderr past this point is not logged]\n")
    assert len(tail.buf) == 64 and tail.text() == "x" * 63  # only the last 64 bytes are held


async def test_one_result_rule_declared_objects_are_trusted_short_lookup_failures_are_errors():
    router = Upstreams([Upstream(UpstreamSpec(name="fx", command=FX))])
    await router.start()
    try:
        # a declared {"content": ...} result whose text starts like an error report is data
        report = await router.call("read_report", {"name": "q3.csv"})
        assert report.ok and report.value["content"].startswith("Error: 0 rows rejected")
        # "<thing> not found: <id>" with no isError, as mock servers answer: an error
        missing = await router.call("find_email", {"email_id": "nope"})
        assert not missing.ok and missing.error_type == "ToolError" and missing.error == "Email not found: nope"
        assert (await router.call("find_email", {"email_id": "e1"})).value == "From: ada@example.com"
        # a plain string (wrapped by the server as {"result": ...}) is still judged as text
        legacy = await router.call("legacy_lookup", {"record_id": "zz"})
        assert not legacy.ok and legacy.error == "Error: no record with id zz"
    finally:
        await router.close()


def test_binds_name_real_folders_outside_the_sandboxs_own_layout(tmp_path):
    from envs.runtime.sandbox import host_binds

    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "link").symlink_to(data)
    assert host_binds([str(data), f"{data}:rw"]) == [(data, False), (data, True)]
    for entry, why in ((str(tmp_path / "link"), "resolves to"), ("data", "absolute path"),
                       (str(tmp_path / "nope"), "not a folder"), ("/usr/lib", "overlaps the sandbox's own /usr"),
                       ("/", "overlaps"), ("/tmp", "overlaps the sandbox's own /tmp")):
        with pytest.raises(ValueError, match=why):
            host_binds([entry])
    r = subprocess.run([str(BIN / "progagent"), "mcp", "--bind", "/usr"], capture_output=True, text=True)
    assert r.returncode == 2 and "overlaps the sandbox's own /usr" in r.stderr


@pytest.mark.npm
async def test_a_bound_folder_has_the_same_path_for_the_server_and_the_program(tmp_path):
    if not NPM_FS.exists():
        pytest.skip("npm filesystem server not installed (scripts/install.sh installs it)")
    data, ro = tmp_path / "data", tmp_path / "ro"
    data.mkdir()
    ro.mkdir()
    (ro / "given.txt").write_text("from the host")
    params = StdioServerParameters(command=str(BIN / "progagent"), args=[
        "mcp", "--upstream", f"fs={NPM_FS} {data} {ro}", "--bind", f"{data}:rw", "--bind", str(ro)])
    code = (f"d, ro = {str(data)!r}, {str(ro)!r}\n"
            "tools['write_file'](path=f'{d}/by_server.txt', content='hi')\n"   # the server writes, the program reads
            "print(open(f'{d}/by_server.txt').read())\n"
            "open(f'{d}/by_program.txt', 'w').write('yo')\n"                  # and the other way
            "r = tools['read_text_file'](path=f'{d}/by_program.txt')\n"
            "print(r['content'] if isinstance(r, dict) else r)\n"
            "print(open(f'{ro}/given.txt').read())\n"
            "try:\n    open(f'{ro}/x.txt', 'w')\nexcept OSError as e:\n    print('read-only', e.errno)")
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("programmatic_tool_call", {"code": code})
        assert not result.is_error, result.content[0].text
        assert result.content[0].text == "hi\nyo\nfrom the host\nread-only 30"  # EROFS
    assert (data / "by_program.txt").read_text() == "yo" and not (ro / "x.txt").exists()


async def test_an_interrupted_program_cancels_its_tool_calls(runtime, tmp_path):
    from tests.conftest import fixture_upstream

    ep = await runtime.open_episode([fixture_upstream()])
    try:
        marker = tmp_path / "cancelled"
        r = await ep.run_program(f"tools['wait_for'](seconds=60, marker={str(marker)!r})", timeout_s=2)
        assert r.timed_out
        for _ in range(100):  # the server was told (notifications/cancelled), and stopped the handler
            if marker.exists():
                break
            await asyncio.sleep(0.1)
        assert marker.read_text() == "cancelled"
        assert r.tool_calls[-1].tool == "wait_for" and r.tool_calls[-1].error.startswith("cancelled: the program")
        r = await ep.run_program("print(tools['add'](a=1, b=2))")  # the next program's calls go through
        assert (r.text, r.is_error) == ("3", False)
    finally:
        await ep.close()


async def test_tool_server_logs_outlive_the_episode(tmp_path):
    from envs.runtime.episode import Runtime
    from schema.config import RuntimeConfig
    from tests.conftest import fixture_upstream

    rt = await Runtime(RuntimeConfig(warm_pool=0, logs_dir=str(tmp_path / "logs"))).start()
    try:
        ep = await rt.open_episode([fixture_upstream()])
        r = await ep.run_program("print(tools['log_line'](text='server says hello'))")
        assert r.text == "logged"
        episode_id = ep.id
        await ep.close()
    finally:
        await rt.close()
    assert "server says hello" in (tmp_path / "logs" / episode_id / "upstream-fx.log").read_text()


async def test_what_a_cell_wrote_to_its_file_descriptors_is_in_its_result():
    """os.write, a child process's output and 300 KB through the fd pipes: all of it in the cell's own
    result, before the result returns (the kernel waits for a token it wrote after the cell's output)."""
    from envs.runtime.episode import Runtime
    from schema.config import RuntimeConfig

    async with Runtime(RuntimeConfig(warm_pool=0, max_output_chars=1_000_000)) as rt:
        ep = await rt.open_episode([])
        try:
            for i in range(5):
                r = await ep.run_program(
                    "import os, subprocess\n"
                    "for k in range(300):\n    os.write(1, b'y' * 999 + b'\\n')\n"
                    "subprocess.run(['sh', '-c', 'printf \"child %s\\\\n\" ' + str(" + str(i) + ")])\n"
                    f"os.write(2, b'err {i} \\xff\\n')\nos.write(1, b'END{i}\\n')")
                assert f"child {i}" in r.text and f"err {i} \ufffd" in r.text and f"\nEND{i}\n" in r.text + "\n"
                assert r.text.count("y" * 999) == 300 and "progagent-sync" not in r.text
        finally:
            await ep.close()


async def test_an_episode_can_bind_its_own_folders_at_their_paths(runtime, tmp_path):
    data = tmp_path / "agent_workspace"
    data.mkdir()
    (data / "in.txt").write_text("seeded")
    ep = await runtime.open_episode([], binds=[f"{data}:rw"])
    try:
        r = await ep.run_program(f"print(open({str(data / 'in.txt')!r}).read())\n"
                                 f"open({str(data / 'out.txt')!r}, 'w').write('written')")
        assert (r.text, r.is_error) == ("seeded", False)
    finally:
        await ep.close()
    assert (data / "out.txt").read_text() == "written"  # a caller's folder: kept after the episode
    other = await runtime.open_episode([])  # the pool's episodes do not see it
    try:
        r = await other.run_program(f"import os\nprint(os.path.exists({str(data)!r}))")
        assert r.text == "False"
    finally:
        await other.close()
    with pytest.raises(ValueError, match="overlaps the sandbox's own /usr"):
        await runtime.open_episode([], binds=["/usr/share"])


async def test_an_allow_list_and_renames_offer_a_task_exactly_its_tools_under_its_names(runtime, tmp_path):
    """`tools` and `rename` on real servers (the reference time server and the fixture): the episode's
    catalogue, a program and DTC see only the allowed tools, under the new names; the server is still
    called by its own; a name the server lacks fails the start naming it; a config with a bad name is refused."""
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        "time": {"command": str(BIN / "mcp-server-time"), "tools": ["get_current_time"],
                 "rename": {"get_current_time": "clock_now"}},
        "fx": {"command": FX[0], "args": FX[1:], "tools": ["add", "whereami"], "rename": {"add": "sum_two"}}}}))
    specs = load_mcp_servers(config)
    ep = await runtime.open_episode(specs)
    try:
        assert sorted(t["name"] for t in ep.tools()) == ["clock_now", "sum_two", "whereami"]
        out = await ep.run_program("print(tools['sum_two'](a=2, b=3))\nprint(sorted(tools))\n"
                                   "print(tools['clock_now'](timezone='UTC')['timezone'])\n"
                                   "try:\n    tools['convert_time']\nexcept KeyError as e:\n    print('no', e)")
        lines = out.text.splitlines()
        assert lines[0] == "5" and lines[1] == "['clock_now', 'sum_two', 'whereami']" and lines[2] == "UTC"
        assert lines[3].startswith("no ") and "convert_time" in lines[3]
        direct = await ep.call_tool("add", {"a": 1, "b": 1})  # its own name is not offered either
        assert direct.is_error and "unknown tool" in direct.text.lower()
        assert {r.tool for r in ep.call_log if r.ok} == {"sum_two", "clock_now"}
    finally:
        await ep.close()
    # a rename onto a name another server exposes: both prefixed, as any clash
    clash = [UpstreamSpec(name="fx", command=FX, tools=["add"]),
             UpstreamSpec(name="fx2", command=FX, tools=["whereami"], rename={"whereami": "add"})]
    ep = await runtime.open_episode(clash)
    try:
        assert sorted(t["name"] for t in ep.tools()) == ["fx2__add", "fx__add"]
    finally:
        await ep.close()
    with pytest.raises(ValueError, match=r"server 'time' has no tool\(s\) 'get_time' named in its tools or rename"):
        await runtime.open_episode([UpstreamSpec(name="time", command=[str(BIN / "mcp-server-time")],
                                                 tools=["get_time"])])
    with pytest.raises(ValueError, match="two of its tools would be named 'x'"):
        await runtime.open_episode([UpstreamSpec(name="fx", command=FX, rename={"add": "x", "whereami": "x"})])
    for entry, message in (({"tools": "add"}, "tools must be a list"), ({"rename": {"add": "has space"}},
                                                                        "are not tool names"),
                           ({"rename": {"add": 3}}, "rename must be an object of strings")):
        with pytest.raises(MCPConfigError, match=message):
            parse_mcp_servers({"mcpServers": {"fx": {"command": "x", **entry}}})
