"""`progagent mcp` from the official MCP client, over third-party servers (PyPI and npm)."""

import subprocess
import sys

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.conftest import BIN, FIXTURE_SERVER, NPM_FS

PROGAGENT = str(BIN / "progagent")


def server_params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=PROGAGENT, args=["mcp", *args])


async def call(session, name, arguments):
    result = await session.call_tool(name, arguments)
    return "\n".join(c.text for c in result.content if c.type == "text"), result.is_error


async def test_ptc_over_time_and_git(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("hello")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm",
                    "first commit"], check=True)
    params = server_params("--upstream", f"time={BIN / 'mcp-server-time'}",
                           "--upstream", f"git={BIN / 'mcp-server-git'}", "--harness", "ptc", "--timeout", "20")
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        assert [t.name for t in tools] == ["programmatic_tool_call"]
        desc = tools[0].description
        assert 'tools["get_current_time"](timezone: string)' in desc and "git_log" in desc
        assert "Only what you print comes back" in desc
        text, err = await call(session, "programmatic_tool_call", {"code": (
            f"log = tools['git_log'](repo_path={str(repo)!r})\n"
            "now = tools['get_current_time'](timezone='UTC')\n"
            "print('first commit' in str(log), now['timezone'])")})
        assert (text, err) == ("True UTC", False)
        text, err = await call(session, "programmatic_tool_call", {"code": "print(now['timezone'] * 2)"})
        assert (text, err) == ("UTCUTC", False)  # the same kernel across calls
        text, err = await call(session, "programmatic_tool_call", {"code": "1/0"})
        assert err and text.endswith("ZeroDivisionError: division by zero")
        text, err = await call(session, "programmatic_tool_call", {"program": "print(1)"})
        assert err and "needs one argument `code`" in text
        text, err = await call(session, "get_current_time", {"timezone": "UTC"})
        assert err and "unknown tool 'get_current_time'; available tools: programmatic_tool_call" in text


async def test_dtc_and_hybrid_expose_upstream_tools(tmp_path):
    fx = f"fx={sys.executable} {FIXTURE_SERVER}"
    async with stdio_client(server_params("--upstream", fx, "--harness", "dtc")) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        names = [t.name for t in (await s.list_tools()).tools]
        assert "programmatic_tool_call" not in names and {"add", "get_record", "crash"} <= set(names)
        result = await s.call_tool("add", {"a": 2, "b": 5})
        assert result.structured_content == {"result": 7} and not result.is_error
        result = await s.call_tool("get_record", {"record_id": "nope"})
        assert result.is_error
    async with stdio_client(server_params("--upstream", fx, "--harness", "hybrid")) as (r, w), \
            ClientSession(r, w) as s:
        await s.initialize()
        names = [t.name for t in (await s.list_tools()).tools]
        assert names[0] == "programmatic_tool_call" and "add" in names
        text, err = await call(s, "programmatic_tool_call", {"code": "print(tools['add'](a=1, b=2))"})
        assert (text, err) == ("3", False)


@pytest.mark.npm
async def test_npm_filesystem_server_with_workspace(tmp_path):
    if not NPM_FS.exists():
        pytest.skip("npm filesystem server not installed (scripts/install.sh installs it)")
    data = tmp_path / "data"
    data.mkdir()
    for i in range(5):
        (data / f"report-{i}.txt").write_text(f"total: {i * 10}\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    params = server_params("--upstream", f"fs={NPM_FS} {data}", "--workspace", str(ws))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        code = (
            f"root = {str(data)!r}\n"
            "listing = tools['list_directory'](path=root)\n"
            "listing = listing['content'] if isinstance(listing, dict) else listing\n"
            "names = [l.split()[-1] for l in listing.splitlines() if l.startswith('[FILE]')]\n"
            "totals = {}\n"
            "for n in names:\n"
            "    txt = tools['read_text_file'](path=f'{root}/{n}')\n"
            "    txt = txt['content'] if isinstance(txt, dict) else txt\n"
            "    totals[n] = int(txt.split(':')[1])\n"
            "open('summary.json', 'w').write(str(sum(totals.values())))\n"
            "print(len(totals), sum(totals.values()))\n"
            "try:\n    tools['read_text_file'](path='/etc/passwd')\nexcept ToolError as e:\n    print('refused')"
        )
        text, err = await call(session, "programmatic_tool_call", {"code": code})
        assert (text, err) == ("5 100\nrefused", False)
    assert (ws / "summary.json").read_text() == "100"


def test_bad_upstream_argument_is_a_clear_error():
    r = subprocess.run([PROGAGENT, "mcp", "--upstream", "missing-equals"], capture_output=True, text=True)
    assert r.returncode == 2 and "--upstream expects NAME=COMMAND or NAME=URL" in r.stderr


def test_a_server_that_cannot_start_or_logs_that_cannot_be_kept_are_one_line_errors(tmp_path):
    """Each was a traceback (an exception group from the SDK's task groups, or os.mkdir's)."""
    r = subprocess.run([PROGAGENT, "mcp", "--upstream", f"x={tmp_path / 'no-such-server'}"], capture_output=True,
                       text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("error: upstream MCP server 'x' failed to start: FileNotFound")
    (tmp_path / "a-file").write_text("")
    r = subprocess.run([PROGAGENT, "mcp", "--logs", str(tmp_path / "a-file" / "logs")], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == f"error: --logs {tmp_path / 'a-file' / 'logs'}: Not a directory"


def test_a_server_name_that_is_not_one_file_name_is_refused(tmp_path):
    """A server's name names its log file (`upstream-NAME.log`) in a host folder."""
    config = tmp_path / "servers.json"
    config.write_text('{"mcpServers": {"../../escape": {"command": "srv"}}}')
    r = subprocess.run([PROGAGENT, "mcp", "--config", str(config), "--logs", str(tmp_path / "logs")],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 2 and "'../../escape' is not a usable server name (" in r.stderr, r.stderr
    r = subprocess.run([PROGAGENT, "mcp", "--upstream", "a/b=srv"], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 2 and "'a/b' is not a server name" in r.stderr, r.stderr
