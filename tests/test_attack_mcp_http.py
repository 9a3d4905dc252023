"""`progagent mcp --http` from outside: any local user who reaches the port could run code and call
the tools, so every request needs the bearer token; and what a program returns over MCP stays
within the output limit whatever it raises."""

import os
import socket
import subprocess
import time

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from envs.runtime.mcp_server import TOKEN_ENV, bearer_token
from tests.conftest import BIN
from tests.test_runtime_mcp_server import PROGAGENT, call

TOKEN = "test-token-2f6c1a9e"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server():
    port = _free_port()
    env = dict(os.environ, **{TOKEN_ENV: TOKEN})
    proc = subprocess.Popen([PROGAGENT, "mcp", "--upstream", f"time={BIN / 'mcp-server-time'}", "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    try:
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        proc.wait(10)


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}


async def test_http_requires_the_bearer_token_and_bounds_what_programs_return(server):
    url, proc = server
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=10) as raw:
        for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
            r = await raw.post(url, json=INIT, headers=headers | auth)
            assert r.status_code == 401, (auth, r.status_code, r.text[:200])
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as client, \
            streamable_http_client(url, http_client=client) as (read, write, *_), \
            ClientSession(read, write) as session:
        await session.initialize()
        text, err = await call(session, "programmatic_tool_call",
                               {"code": "import json\nprint(json.dumps(sorted(tools)))"})
        assert not err and text == '["convert_time", "get_current_time"]'
        text, err = await call(session, "programmatic_tool_call", {"code": "raise ValueError('E' * 20_000_000)"})
        assert err and len(text) <= 50_300 and "traceback cut" in text
    banner = proc.stderr.readline()
    assert "Authorization: Bearer TOKEN" in banner and f"from ${TOKEN_ENV}" in banner and TOKEN not in banner


def test_the_token_comes_from_the_environment_or_an_owner_only_file(tmp_path, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    made, source = bearer_token(tmp_path / "token")
    assert source.endswith("(new)") and (tmp_path / "token").stat().st_mode & 0o777 == 0o600
    assert bearer_token(tmp_path / "token") == (made, str(tmp_path / "token"))
    (tmp_path / "open").write_text("shared\n")
    (tmp_path / "open").chmod(0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        bearer_token(tmp_path / "open")
    r = subprocess.run([PROGAGENT, "mcp", "--http", str(_free_port()), "--token-file", str(tmp_path / "open")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "chmod 600" in r.stderr
    generated, how = bearer_token(None)
    assert how == "generated" and len(generated) >= 32
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert bearer_token(tmp_path / "open") == ("from-env", f"${TOKEN_ENV}")
