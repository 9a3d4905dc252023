"""Attacks on the library's task tools from model code: races between a path check and its use,
FIFOs, links out of the workspace, and one episode holding every tool thread.

The tools run in the env worker's process (the "inprocess" transport), as root here: whatever a
program gets them to open is opened by the host.
"""

import asyncio
import os
import time

import pytest
from mcp.server.mcpserver import MCPServer

from envs.format.library import get_task
from envs.format.task_env import EnvironmentCache, open_task_episode
from envs.runtime.episode import Runtime
from envs.runtime.upstream import Upstream, UpstreamSpec
from schema.config import RuntimeConfig

# a thread swaps the folder d with a link l -> TARGET (renameat2 RENAME_EXCHANGE) while the program
# calls a tool on a path under d: the host checks d (a folder), then opens through the link
SWAPPER = r'''
import ctypes, os, threading
_libc = ctypes.CDLL(None, use_errno=True)
def start_swapping(a, b):
    state = {"stop": False, "swaps": 0}
    def loop():
        while not state["stop"]:
            if _libc.renameat2(-100, a.encode(), -100, b.encode(), 2) == 0:
                state["swaps"] += 1
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return state, t
'''


@pytest.fixture
async def rt():
    runtime = Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=60, tool_timeout_s=5))
    await runtime.start()
    yield runtime
    await runtime.close()


@pytest.fixture
def cache():
    c = EnvironmentCache()
    yield c
    c.cleanup()


async def test_swapping_a_folder_for_a_link_never_reads_host_files(rt, cache, tmp_path):
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text("HOST SECRET")
    ep = await open_task_episode(rt, get_task("clinics_claim_denials"), "v0", cache)
    try:
        code = SWAPPER + (
            "os.makedirs('/workspace/d', exist_ok=True)\n"
            "open('/workspace/d/secret.txt', 'w').write('decoy')\n"
            f"os.symlink({str(host)!r}, '/workspace/l')\n"
            "state, t = start_swapping('/workspace/d', '/workspace/l')\n"
            "seen = {}\n"
            "for i in range(400):\n"
            "    try:\n"
            "        key = tools['read_file'](path='d/secret.txt')['content'][:40]\n"
            "    except ToolError as e:\n"
            "        key = 'error: ' + str(e)[:50]\n"
            "    seen[key] = seen.get(key, 0) + 1\n"
            "    if 'HOST' in key:\n"
            "        break\n"
            "    try:\n"
            "        listed = [f['path'] for f in tools['list_files'](directory='d')['items']]\n"
            "    except ToolError:\n"
            "        listed = []\n"
            "    if set(listed) - {'d/secret.txt'}:\n"
            "        seen['listed ' + str(listed)[:80]] = 1\n"
            "        break\n"
            "state['stop'] = True; t.join()\n"
            "print(state['swaps'], seen)\n"
        )
        r = await ep.run_program(code)
        assert not r.is_error, r.text
        swaps, seen = r.text.split(" ", 1)
        assert int(swaps) > 100, r.text  # the race was really run
        seen = eval(seen)
        assert not any("HOST" in k or k.startswith("listed") for k in seen), seen
        assert seen.get("decoy", 0) > 0 and any(k.startswith("error: ") for k in seen), seen
    finally:
        await ep.close()


async def test_swapping_the_write_folder_never_creates_host_files(rt, cache, tmp_path):
    host = tmp_path / "host-out"
    host.mkdir()
    ep = await open_task_episode(rt, get_task("logistics_carrier_invoice_audit"), "v0", cache)
    try:
        code = SWAPPER + (
            "os.makedirs('/workspace/audit', exist_ok=True)\n"
            f"os.symlink({str(host)!r}, '/workspace/l')\n"
            "state, t = start_swapping('/workspace/audit', '/workspace/l')\n"
            "ok = err = 0\n"
            "for i in range(300):\n"
            "    try:\n"
            "        tools['write_file'](path=f'audit/x{i % 7}.csv', content='pwned'); ok += 1\n"
            "    except ToolError:\n"
            "        err += 1\n"
            "state['stop'] = True; t.join()\n"
            "print(state['swaps'], ok, err)\n"
        )
        r = await ep.run_program(code)
        swaps, ok, err = map(int, r.text.split())
        assert swaps > 100 and ok > 0 and err > 0, r.text
        assert list(host.iterdir()) == []
        # every write that succeeded landed in the workspace
        ws = ep.final_state().workspace
        written = {p for d in ("audit", "l") for p in os.listdir(os.path.join(ws, d))
                   if os.path.isdir(os.path.join(ws, d)) and not os.path.islink(os.path.join(ws, d))}
        assert written and written <= {f"x{i}.csv" for i in range(7)}
    finally:
        await ep.close()


async def test_fifos_links_and_devices_are_refused_without_blocking(rt, cache, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("HOST SECRET")
    ep = await open_task_episode(rt, get_task("finance_ar_late_fees"), "v0", cache)
    try:
        await ep.run_program(
            "import os\n"
            "os.mkfifo('/workspace/pipe')\n"
            f"os.symlink({str(outside)!r}, '/workspace/link.txt')\n"
            "os.symlink('/dev/zero', '/workspace/zero')\n"
            "os.makedirs('/workspace/sub', exist_ok=True)\n"
            f"os.symlink({str(tmp_path)!r}, '/workspace/sub/escape')\n")
        for path, why in (("pipe", "pipe"), ("link.txt", "symbolic link"), ("zero", "symbolic link"),
                          ("sub/escape/outside.txt", "symbolic link"), ("../etc/passwd", "outside the workspace"),
                          ("/etc/passwd", "outside the workspace")):
            r = await ep.call_tool("read_file", {"path": path})
            assert r.is_error and why in r.text and "HOST SECRET" not in r.text, (path, r.text)
            assert "did not answer" not in r.text
        listed = await ep.call_tool("list_files", {})
        paths = [f["path"] for f in __import__("json").loads(listed.text)["items"]]
        assert not {"pipe", "link.txt", "zero"} & set(paths) and not any(p.startswith("sub/") for p in paths)
        # many parked calls at once would have taken every tool thread: each answers at once instead
        r = await ep.run_program(
            "from concurrent.futures import ThreadPoolExecutor\n"
            "def one(_):\n"
            "    try:\n"
            "        tools['read_file'](path='pipe'); return 'read'\n"
            "    except ToolError as e:\n"
            "        return 'pipe' in str(e)\n"
            "with ThreadPoolExecutor(64) as ex:\n"
            "    print(sorted(set(map(str, ex.map(one, range(128))))))\n")
        assert r.text == "['True']", r.text
    finally:
        await ep.close()


def _slow_server(log: list[tuple[str, float]]) -> MCPServer:
    server = MCPServer("slow")

    @server.tool()
    def slow(seconds: float) -> str:
        """Sleep in the server's thread, then answer."""
        time.sleep(seconds)
        log.append(("slow", time.monotonic()))
        return "done"

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        log.append(("add", time.monotonic()))
        return a + b

    return server


async def test_one_episode_cannot_take_every_tool_thread(rt):
    """In-process MCP servers run sync tools on the process's shared worker threads (anyio's 40): an
    episode with 48 slow calls in flight must leave room for another episode's call."""
    log: list[tuple[str, float]] = []
    a = await rt.open_episode([Upstream(UpstreamSpec("slow"), server_object=_slow_server(log))])
    b = await rt.open_episode([Upstream(UpstreamSpec("slow"), server_object=_slow_server(log))])
    try:
        hog = asyncio.create_task(a.run_program(
            "from concurrent.futures import ThreadPoolExecutor\n"
            "with ThreadPoolExecutor(48) as ex:\n"
            "    print(len(list(ex.map(lambda _: tools['slow'](seconds=0.5), range(48)))))\n"))
        await asyncio.sleep(0.2)  # the hog's 48 calls are in flight (each takes 0.5 s)
        r = await b.call_tool("add", {"a": 2, "b": 3})
        assert r.text == "5"
        result = await hog
        assert result.text == "48", result.text
        first_slow = min(t for name, t in log if name == "slow")
        added = next(t for name, t in log if name == "add")
        assert added < first_slow, "the other episode's call waited for the hog's calls to finish"
    finally:
        await a.close()
        await b.close()
