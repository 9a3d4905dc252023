"""Attacks through the tool bridge and the call log: announced-but-never-sent frames, many
half-sent connections, huge arguments and results, endless calls, and requests or arguments that
no server could parse (deep nesting, NaN, lone surrogates, wrong types)."""

import asyncio

import pytest

from envs.runtime.episode import Runtime
from schema.config import RuntimeConfig
from tests.conftest import fixture_upstream
from tests.test_attack_kernel_messages import peak_rss_during

HALF_SENT = r'''
import socket, struct, time
socks, refused = [], 0
for i in range({n}):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("/run/tools/tools.sock")
    try:
        s.sendall(struct.pack("!I", {announced}) + b"x" * {sent})
    except OSError:  # the bridge refused and closed the connection while this was sending
        refused += 1
        continue
    socks.append(s)
time.sleep(1.5)
for s in socks:
    s.settimeout(0.2)
    try:
        data = s.recv(200)
        refused += b"refused" in data
    except OSError:
        pass
print("refused", refused, "of", {n})
print(tools["add"](a=2, b=3))
'''


@pytest.fixture
async def ep():
    rt = Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=60, max_call_records=50))
    await rt.start()
    episode = await rt.open_episode([fixture_upstream()])
    yield episode
    await episode.close()
    await rt.close()


@pytest.mark.parametrize("n,announced,sent", [(30, 60 << 20, 8 << 20), (60, 4 << 20, 3 << 20)])
async def test_half_sent_frames_hold_no_host_memory(ep, n, announced, sent):
    r, grew = await peak_rss_during(ep.run_program(HALF_SENT.format(n=n, announced=announced, sent=sent)))
    assert not r.is_error, r.text
    refused = int(r.text.split()[1])
    assert refused >= n - 4, r.text  # everything beyond what the pending-bytes budget holds
    assert r.text.endswith("\n5")  # and the episode's own calls still work
    assert grew < 100, f"the host grew by {grew:.0f} MB"


async def test_huge_arguments_and_results_are_refused_or_kept_as_previews(ep, monkeypatch):
    from envs.runtime import bridge

    monkeypatch.setattr(bridge, "MAX_REPLY_BYTES", 2**20)  # the mechanism, without a 16 MiB result to make
    code = (
        "out = []\n"
        "for size in (50_000_000, 900_000):\n"
        "    try:\n"
        "        out.append(len(tools['note'](text='A' * size)))\n"
        "    except ToolError as e:\n"
        "        out.append(str(e)[:120])\n"
        "try:\n"
        "    tools['big'](chars=1_500_000)\n"
        "except ToolError as e:\n"
        "    out.append(str(e)[:120])\n"
        "for _ in range(8):\n"
        "    tools['note'](text='B' * 500_000)\n"
        "print(out)\n")
    r, grew = await peak_rss_during(ep.run_program(code))
    out = eval(r.text)
    assert "refused: a tool call of" in out[0] and "the limit is 4,194,304" in out[0], out[0]
    assert out[1] == 900_000
    assert "results up to 1,048,576 bytes reach a program" in out[2], out[2]
    kept = sum(len(str(c.arguments)) + len(c.result_text) for c in ep.call_log)
    assert kept < 2 * 2**20, kept  # in full: 9 calls of 0.5-1 MB each, twice (arguments and result), 10 MB
    preview = ep.call_log[-1].arguments
    assert preview["_chars"] == len('{"text": "' + "B" * 500_000 + '"}') and len(preview["_preview"]) == 65_536
    assert ep.call_log[-1].result_chars == 500_000 and len(ep.call_log[-1].result_text) == 65_536


async def test_the_call_log_keeps_a_bounded_number_of_records(ep):
    r = await ep.run_program("for i in range(70):\n    tools['add'](a=i, b=1)\nprint('done')")
    assert r.text == "done"
    assert len(ep.call_log) == 50 and ep.router.unrecorded == 20
    await asyncio.sleep(0)


RAW = r'''
import socket, struct
s = socket.socket(socket.AF_UNIX)
s.connect("/run/tools/tools.sock")
replies = []
for body in [b"[" * 100_000 + b"]" * 100_000, b"null", b'{"op": [1]}', b"\xff\xfe",
             b'{"op": "call", "tool": {"x": 1}, "arguments": {}}',
             b'{"op": "call", "tool": "note", "arguments": {"text": "\\ud800"}}']:
    s.sendall(struct.pack("!I", len(body)) + body)
    n = struct.unpack("!I", s.recv(4))[0]
    data = b""
    while len(data) < n:
        data += s.recv(n - len(data))
    replies.append(json.loads(data)["type"])
print(replies)
'''


async def test_requests_and_arguments_no_server_could_parse_are_refused_before_any_server_sees_them(ep):
    r = await ep.run_program("import json\n" + RAW)
    assert eval(r.text) == ["BadRequest", "BadRequest", "BadRequest", "BadRequest", "UnknownTool", "BadArguments"]
    r = await ep.run_program(
        "out = []\n"
        "for args in ({'a': float('nan'), 'b': 1}, {'a': float('inf'), 'b': 1}, {'a': [[[[1]]]] * 2, 'b': 1}):\n"
        "    try:\n"
        "        out.append(tools['add'](**args))\n"
        "    except ToolError as e:\n"
        "        out.append(str(e)[:70])\n"
        "deep = []\n"
        "for _ in range(100):\n"
        "    deep = [deep]\n"
        "try:\n"
        "    tools['note'](text=deep)\n"
        "except ToolError as e:\n"
        "    out.append(str(e)[:90])\n"
        "print(out)\n")
    out = eval(r.text)
    assert out[0].startswith("arguments for tool 'add' cannot be sent: they are not standard JSON")
    assert out[1].startswith("arguments for tool 'add' cannot be sent: they are not standard JSON")
    assert "validation error" in out[2], out  # ordinary nesting reaches the server, which answers
    assert out[3] == "arguments for tool 'note' cannot be sent: they are nested deeper than 64 levels", out
    # the episode's server never saw them: it still answers
    assert (await ep.run_program("print(tools['add'](a=40, b=2))")).text == "42"


async def test_a_stdio_servers_reply_past_the_line_limit_is_dropped_as_it_streams_in(ep):
    """A program chooses what a stdio server answers (a file it wrote, a string it sent): a 200 MB line
    must cost the host at most about the transport's line limit, be that call's ToolError, and leave
    the server's connection working for the next call."""
    from envs.runtime.stdio_transport import MAX_LINE_BYTES

    code = ("try:\n    tools['big'](chars=200_000_000)\nexcept ToolError as e:\n    print('refused:', str(e)[:300])\n"
            "print(tools['add'](a=2, b=3))")
    r, grew = await peak_rss_during(ep.run_program(code))
    assert grew < 3 * MAX_LINE_BYTES / 2**20, f"the host grew by {grew:.0f} MB"
    assert "refused:" in r.text and "replies up to 16,777,216 bytes reach the host" in r.text, r.text
    assert r.text.endswith("\n5"), r.text


@pytest.mark.parametrize("flood", ["lines=300_000", "lines=50_000, notifications=True"])
async def test_a_flood_between_messages_costs_the_host_one_read_at_a_time(ep, flood):
    """A server (a program chooses what it is asked; a Harbor task's server is the task's) can write
    anything on the wire between messages: 6.3 MB of short lines that are not JSON-RPC, or 50,000 log
    notifications (each a handler task in the SDK's session). The transport reads them as they come
    and the session drops or handles each: what waits in the host is one pipe read's lines, as bytes
    (not the flood, and not a parsed error per line), and the call still gets its answer, and the
    next one too."""
    r, grew = await peak_rss_during(ep.run_program(f"print(tools['garbage']({flood}))\n"
                                                   "print(tools['add'](a=2, b=3))"))
    assert r.text == "flooded\n5", r.text
    assert grew < 5, f"the host grew by {grew:.0f} MB"


async def test_concurrent_large_calls_reach_the_server_whole_and_come_back_to_their_callers(ep):
    """Each call is written to the server's stdin by the task that makes it (no writer task): eight
    calls at once, each larger than a pipe holds (1 MB: the writers wait in `drain` together), must
    not interleave on the way, and each caller gets its own answer."""
    code = ("from concurrent.futures import ThreadPoolExecutor\n"
            "def one(i):\n"
            "    text = chr(65 + i) * 1_000_000 + str(i)\n"
            "    return tools['note'](text=text) == text\n"
            "with ThreadPoolExecutor(8) as pool:\n"
            "    print(list(pool.map(one, range(8))))\n"
            "print(tools['add'](a=2, b=3))")
    r = await ep.run_program(code)
    assert r.text == f"{[True] * 8}\n5", r.text


@pytest.mark.parametrize("code,refused", [
    # 160,000 rows, as content (a text item per row) and as structured content: ~960,000 small values
    # in ~16 MB, ~500 MB of the host once parsed
    ("tools['rows'](n=160_000)", True),
    ("tools['note'](text='[' + '0,' * 1_500_000 + '0]')", False),  # 3 MB of text and its commas: one value
    ("tools['rows'](n=15_000)", False),  # ~90,000 values: within the bound
])
async def test_a_reply_of_too_many_values_is_refused_before_the_host_parses_it(ep, code, refused):
    """A program chooses what a server answers; a reply's bytes are bounded (16 MiB) but its structure
    was not: `rows(n=160000)` raised the runtime's memory by ~500 MB and held its event loop ~5 s
    while the MCP client parsed and converted it. Counted before parsing, it is that call's
    ToolError, the host stays small, and the server's connection still serves the next call."""
    program = (f"try:\n    v = {code}\n    print('got', len(v))\n"
               "except ToolError as e:\n    print('refused:', str(e)[:200])\n"
               "print(tools['add'](a=2, b=3))")
    r, grew = await peak_rss_during(ep.run_program(program))
    assert r.text.endswith("\n5"), r.text
    if refused:
        assert "refused: rows: the reply holds about 960,0" in r.text, r.text
        assert "replies of up to 100,000 values reach the host" in r.text, r.text
        assert grew < 100, f"the host grew by {grew:.0f} MB"
    else:
        assert r.text.startswith("got "), r.text


HELD = r'''
import socket, struct, threading, time
def slow():
    try:
        tools['slow'](seconds=4)
    except ToolError:
        pass
busy = [threading.Thread(target=slow) for _ in range(8)]  # every call slot of the episode taken
for t in busy:
    t.start()
time.sleep(0.5)
# SIZE bytes of [[[]]] parse to ~35 times their size; a string to about its size (and the MCP client
# copies either again as it sends it)
arg = '[' + ",".join(["[[[]]]"] * ((SIZE - 80) // 7)) + ']' if KIND == "nested" else '"' + "A" * (SIZE - 80) + '"'
body = ('{"op": "call", "tool": "note", "arguments": {"text": ' + arg + '}}').encode()
socks = []
for _ in range(CONNS):
    s = socket.socket(socket.AF_UNIX)
    s.connect("/run/tools/tools.sock")
    try:
        s.sendall(struct.pack("!I", len(body)) + body)
    except OSError:  # refused (and closed) at its header: the reply says why
        pass
    socks.append(s)
kinds = []
for s in socks:
    s.settimeout(20)
    head = s.recv(4)
    size, data = struct.unpack("!I", head)[0], b""
    while len(data) < size:
        data += s.recv(size - len(data))
    kinds.append(json.loads(data).get("error", "")[:60])
for t in busy:
    t.join()
print({k: kinds.count(k) for k in set(kinds)})
print(tools["add"](a=2, b=3))
'''


@pytest.mark.parametrize("kind,size,conns,refused,refusal,bound_mb", [
    ("nested", 4 << 20, 8, 8, "a tool call whose arguments hold about ", 100),  # refused unparsed
    ("string", 4 << 20, 16, 12, "refused: too many large tool calls at once (the ones being r", 160),  # 4 held: ~85 MB
    ("nested", 64 << 10, 56, 48, "too many large tool calls waiting at once (their arguments ", 100)])
async def test_large_requests_cannot_pile_up_in_the_host_while_the_call_slots_are_busy(ep, kind, size, conns, refused,
                                                                                        refusal, bound_mb):
    """While an episode's call slots are all busy, its further calls wait, parsed. 16 requests of 4 MiB
    held ~2 GB of the runtime's memory when nested (a 4 MiB request of nested empty lists is ~140 MB of
    Python objects, and the MCP client copied it again), 130 MB when strings; 56 of 64 KiB (under the
    bridge's large-request size) held 150 MB. Arguments of more than MAX_ARGUMENT_VALUES values are
    refused before they wait, and a large request of that many before it is parsed (parsing 8 of the
    nested ones took the event loop ~4 s, and the test 22 s); large requests count against the bridge's pending budget until their
    reply, and the values that waiting calls hold against the router's: beyond either, calls are
    refused, not held."""
    code = HELD.replace("CONNS", str(conns)).replace("KIND", repr(kind)).replace("SIZE", str(size))
    r, grew = await peak_rss_during(ep.run_program("import json\n" + code))
    assert not r.is_error, r.text
    counts = eval(r.text.splitlines()[0])
    assert sum(n for k, n in counts.items() if k.startswith(refusal)) >= refused, counts
    assert r.text.endswith("\n5"), r.text  # the episode's ordinary calls still work
    assert grew < bound_mb, f"the host grew by {grew:.0f} MB"


async def test_calls_cut_off_with_their_program_give_back_what_they_held(ep):
    """A program that times out while its calls wait: the calls end with it and what they held in the
    router's budget is given back, so the next program's large call is not refused."""
    held = ("import threading\n"
            "def call(name, **kw):\n"
            "    try:\n"
            "        tools[name](**kw)\n"
            "    except ToolError:\n"
            "        pass\n"
            "ts = [threading.Thread(target=call, args=('slow',), kwargs={'seconds': 30}) for _ in range(8)]\n"
            "ts += [threading.Thread(target=call, args=('note',), kwargs={'text': [[0] * 9] * 3000})\n"
            "       for _ in range(8)]\n"
            "for t in ts:\n"
            "    t.start()\n"
            "for t in ts:\n"
            "    t.join()\n")
    r = await ep.run_program(held, timeout_s=3)
    assert r.timed_out
    assert ep.router._held_values == 0
    r = await ep.run_program("try:\n    tools['note'](text=[[0] * 9] * 9000)\nexcept ToolError as e:\n    print(str(e)[:80])")
    assert "validation error" in r.text, r.text  # it reached the server: nothing was left held


@pytest.fixture
def http_fixture(request):
    """The fixture server over streamable HTTP on a loopback port, its replies JSON bodies (gzipped
    whatever the client asks, when the test is parametrized with "gzip")."""
    import os
    import socket
    import subprocess
    import sys
    import time

    from tests.conftest import FIXTURE_SERVER

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, FIXTURE_HTTP_PORT=str(port))
    if getattr(request, "param", None) == "gzip":
        env["FIXTURE_HTTP_GZIP"] = "1"
    proc = subprocess.Popen([sys.executable, str(FIXTURE_SERVER)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(10)


async def test_an_http_servers_reply_is_bounded_in_bytes_and_values(http_fixture):
    """Over streamable HTTP the MCP client read a JSON reply body whole, however long (the SDK bounds
    SSE events, not JSON bodies): a program asking an HTTP server for 200 MB cost the host all of it
    and more to parse it. Bounded as a stdio line is (16 MiB, then counted values), each is that call's
    ToolError and the next call works."""
    from envs.runtime.stdio_transport import MAX_LINE_BYTES
    from envs.runtime.upstream import UpstreamSpec

    rt = Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=60))
    await rt.start()
    try:
        ep = await rt.open_episode([UpstreamSpec("fx", url=http_fixture)])
        try:
            for code, said in [("tools['big'](chars=200_000_000)", "replies up to 16,777,216 bytes reach the host"),
                               ("tools['rows'](n=160_000)", "replies of up to 100,000 values reach the host")]:
                program = (f"try:\n    v = {code}\n    print('got', len(v))\n"
                           "except ToolError as e:\n    print('refused:', str(e)[:300])\n"
                           "print(tools['add'](a=2, b=3))")
                r, grew = await peak_rss_during(ep.run_program(program))
                assert r.text.startswith("refused:") and said in r.text, r.text
                assert r.text.endswith("\n5"), r.text
                # the body (16 MiB), the count's copy without its strings, the SDK's copy of what it read
                assert grew < 4 * MAX_LINE_BYTES / 2**20, f"{code}: the host grew by {grew:.0f} MB"
            ok = await ep.run_program("print(len(tools['rows'](n=15_000)), len(tools['big'](chars=5_000_000)))")
            assert ok.text.strip() == "15000 5000000", ok.text
        finally:
            await ep.close()
    finally:
        await rt.close()


@pytest.mark.parametrize("http_fixture", ["gzip"], indirect=True)
async def test_an_http_server_that_compresses_its_replies_is_refused_not_decoded(http_fixture):
    """A few MiB of gzip decode to gigabytes, past any bound on what was read: the client asks for
    uncompressed replies, and a server that compresses anyway is refused at its first reply (here:
    at start, with the reason), not decoded."""
    from envs.runtime.upstream import UpstreamSpec

    rt = Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=60))
    await rt.start()
    try:
        with pytest.raises(RuntimeError, match="compressed"):
            await rt.open_episode([UpstreamSpec("fx", url=http_fixture)])
    finally:
        await rt.close()
