"""Attacks through a Harbor task's URL MCP server: task.toml names a `url` and the env worker, on the
host, would send requests there (request forgery from the host: its loopback listeners, a cloud
metadata address, the intranet). A URL server runs only at a host the operator allows for the source
(HarborArgs.url_server_hosts); the task is refused at listing and at load otherwise, and a dataset
row cannot carry the operator's consent. The listener here is a real MCP server on 127.0.0.1 that
counts the requests it gets."""

import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from envs.harbor.episode import HarborTaskEnv, open_harbor_episode, upstreams
from envs.harbor.kind import HarborRef
from envs.harbor.task import HarborTaskError, load_harbor_task
from envs.kinds import kind_named, load_env
from envs.sources import Catalog, resolve_source, row_document
from schema.config import SourceSpec
from schema.load import ConfigError

FIXTURE = Path(__file__).parent.parent / "envs" / "starter_harbor" / "warehouse-restock"


@pytest.fixture(scope="module")
def listener():
    """(port, requests): an MCP server over streamable HTTP on 127.0.0.1 (tests/servers/fixture_server's
    tools), `requests` the list of paths it was asked for."""
    import uvicorn

    from tests.servers.fixture_server import server

    app = server.streamable_http_app(json_response=True)
    requests: list[str] = []

    async def counting(scope, receive, send):
        if scope["type"] == "http":
            requests.append(scope["path"])
        await app(scope, receive, send)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    web = uvicorn.Server(uvicorn.Config(counting, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=web.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not web.started and time.time() < deadline:
        time.sleep(0.05)
    assert web.started
    yield port, requests
    web.should_exit = True
    thread.join(10)


def url_task(tmp_path: Path, url: str, name: str = "probe") -> Path:
    """The fixture task with a URL MCP server at `url`, no network asked for."""
    folder = shutil.copytree(FIXTURE, tmp_path / "url-task")
    with open(folder / "task.toml", "a") as f:
        f.write(f'\n[[environment.mcp_servers]]\nname = "{name}"\ntransport = "streamable-http"\nurl = "{url}"\n')
    return folder


async def test_a_url_server_is_refused_at_listing_and_load_without_the_operators_opt_in(tmp_path, listener, runtime):
    port, requests = listener
    before = len(requests)
    folder = url_task(tmp_path, f"http://127.0.0.1:{port}/mcp")
    with pytest.raises(ConfigError) as listed:
        resolve_source("hb", SourceSpec(kind="harbor", args={"paths": [str(folder)]}), say=lambda m: None)
    assert "MCP server 'probe' is a URL server" in str(listed.value)
    assert f"envs.hb.args.url_server_hosts: ['127.0.0.1:{port}']" in str(listed.value)  # how to allow it
    # another host allowed is no consent for this one; nor is the same host on another port
    for other in (["mcp.example.com"], [f"127.0.0.1:{port + 1}"], ["localhost"]):
        with pytest.raises(ConfigError, match="'probe' is a URL server"):
            resolve_source("hb", SourceSpec(kind="harbor", args={"paths": [str(folder)], "url_server_hosts": other}),
                           say=lambda m: None)
    # the env worker's load path: a reference without the operator's hosts (a stale or hand-made one)
    with pytest.raises(HarborTaskError, match="'probe' is a URL server"):
        load_env(HarborRef(str(folder)))
    task = load_harbor_task(folder)
    with pytest.raises(HarborTaskError, match="'probe' is a URL server"):
        HarborTaskEnv(task)
    with pytest.raises(HarborTaskError, match="'probe' is a URL server"):
        await open_harbor_episode(runtime, task)
    with pytest.raises(HarborTaskError, match="'probe' is a URL server"):
        upstreams(task, tmp_path / "tree", tmp_path / "scratch")
    assert len(requests) == before  # not one request reached the listener


def test_the_url_is_read_as_the_http_client_reads_it(tmp_path, listener):
    """`http://allowed@127.0.0.1/`: the host is what follows the @ (userinfo is no host)."""
    port, requests = listener
    before = len(requests)
    folder = url_task(tmp_path, f"http://mcp.example.com@127.0.0.1:{port}/mcp")
    with pytest.raises(ConfigError, match=f"127.0.0.1:{port}"):
        resolve_source("hb", SourceSpec(kind="harbor", args={"paths": [str(folder)],
                                                             "url_server_hosts": ["mcp.example.com"]}), say=lambda m: None)
    assert len(requests) == before


def test_a_dataset_row_cannot_carry_the_operators_consent(tmp_path):
    """A row names the task; the reference it opens is the operator's source's, consent included or not."""
    folder = url_task(tmp_path, "http://127.0.0.1:9/mcp")
    allowed = resolve_source("hb", SourceSpec(kind="harbor", args={"paths": [str(folder)],
                                                                    "url_server_hosts": ["127.0.0.1:9"]}),
                             say=lambda m: None)
    (ref,) = allowed.refs
    row = row_document(ref, "hb")
    assert "url_server_hosts" not in row  # a row written from an opted-in source carries no consent
    assert Catalog([allowed]).resolve(row) == HarborRef(str(folder), ("127.0.0.1:9",))  # the operator's
    forged = {**row, "url_server_hosts": ["*"]}
    with pytest.raises(ConfigError, match=r"extra_info\.progagent\.env\.url_server_hosts: a row names its environment"):
        Catalog([allowed]).resolve(forged, "extra_info.progagent.env")


@pytest.mark.parametrize("entry", ["http://127.0.0.1:9", "a b", "127.0.0.1:port", ""])
def test_a_malformed_host_entry_is_a_config_error_naming_it(tmp_path, entry):
    with pytest.raises(ConfigError, match=r"envs\.hb\.args\.url_server_hosts\[0\]"):
        resolve_source("hb", SourceSpec(kind="harbor", args={"paths": [str(FIXTURE)], "url_server_hosts": [entry]}),
                       say=lambda m: None)


@pytest.mark.parametrize("allow", ["127.0.0.1:{port}", "127.0.0.1", "*"])
async def test_with_the_operators_opt_in_the_url_server_works_as_before(tmp_path, listener, allow):
    port, requests = listener
    folder = url_task(tmp_path, f"http://127.0.0.1:{port}/mcp")
    hosts = [allow.format(port=port)]
    refs = kind_named("harbor").refs(kind_named("harbor").args_type(paths=[str(folder)], url_server_hosts=hosts),
                                     __import__("envs.kinds", fromlist=["ListContext"]).ListContext("hb"))
    assert [r.url_server_hosts for r in refs] == [tuple(hosts)]
    env = load_env(refs[0])
    assert isinstance(env, HarborTaskEnv)
    before = len(requests)
    url = next(u for u in upstreams(env.task, tmp_path / "tree", tmp_path / "scratch",
                                    url_server_hosts=env.ref.url_server_hosts) if u.name == "probe")
    await url.start()
    try:
        assert "add" in {t.name for t in url.tools}  # the task's remote tools, as before
    finally:
        await url.close()
    assert len(requests) > before
