"""A small MCP server (mcp 2.x, stdio; streamable HTTP on 127.0.0.1 with FIXTURE_HTTP_PORT) with the behaviours the runtime must handle.

Not a mock of the runtime: a real server process whose tools cover native returns (wrapped ints,
lists, dicts, plain text), compliant errors (isError), a non-compliant server that reports
failures only in text, a crash mid-call, large and slow results.
"""

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("fixture")
RECORDS = {"a1": {"id": "a1", "owner": "Ada", "balance": 120}, "b2": {"id": "b2", "owner": "Bo", "balance": 7}}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def rows(n: int = 3) -> list[dict]:
    """Return n rows."""
    return [{"i": i, "sq": i * i} for i in range(n)]


@server.tool()
def get_record(record_id: str) -> dict:
    """A record by id (compliant: unknown ids are reported with isError)."""
    if record_id not in RECORDS:
        raise ToolError(f"record {record_id!r} does not exist; known: {', '.join(RECORDS)}")
    return RECORDS[record_id]


@server.tool()
def legacy_lookup(record_id: str) -> str:
    """Non-compliant: reports a missing record only in its text, never with isError."""
    if record_id not in RECORDS:
        return f"Error: no record with id {record_id}"
    return f"{RECORDS[record_id]['owner']} has {RECORDS[record_id]['balance']}"


@server.tool()
def note(text: str) -> str:
    """Echo plain text."""
    return text


@server.tool()
def big(chars: int) -> str:
    """A large plain-text result."""
    return "y" * chars


@server.tool()
def slow(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "done"


@server.tool()
def whereami() -> dict:
    """Where this server runs: its working directory and the variables it was given."""
    return {"cwd": os.getcwd(), "var": os.environ.get("FIXTURE_VAR"),
            "secret": os.environ.get("PROGAGENT_TEST_SECRET")}


@server.tool()
def read_report(name: str) -> dict:
    """A document's text, structured as {"content": ...} (as filesystem servers declare theirs)."""
    return {"content": f"Error: 0 rows rejected in {name}\nall good"}


@server.tool()
def find_email(email_id: str) -> str:
    """Non-compliant, as LOCA-style mock servers: a missing email is only said in text."""
    return f"Email not found: {email_id}" if email_id != "e1" else "From: ada@example.com"


@server.tool()
async def wait_for(seconds: float, marker: str) -> str:
    """Wait asynchronously; a cancelled call (notifications/cancelled) writes `marker` first."""
    import anyio

    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        with open(marker, "w") as f:
            f.write("cancelled")
        raise
    return "waited"


@server.tool()
def log_line(text: str) -> str:
    """Write a line to this server's stderr (its log)."""
    print(text, file=sys.stderr, flush=True)
    return "logged"


@server.tool()
def garbage(lines: int, width: int = 20, notifications: bool = False) -> str:
    """Write `lines` lines of `width` bytes that are not JSON-RPC on the wire (a hostile or broken
    server's flood between messages), or as many log notifications, then answer."""
    line = b"x" * width + b"\n"
    if notifications:
        line = (b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "'
                + b"x" * width + b'"}}\n')
    block = line * max(1, 65536 // len(line))
    from mcp.server.stdio import _claims  # the SDK points fd 1 at stderr and keeps the wire on a private fd

    wire = _claims[1].private_fd if 1 in _claims and _claims[1].private_fd is not None else 1
    for _ in range(lines // (65536 // len(line))):
        view = memoryview(block)
        while view:
            view = view[os.write(wire, view):]
    return "flooded"


@server.tool()
def crash() -> str:
    """Kill this server process in the middle of the call."""
    sys.stderr.flush()
    os._exit(3)


def gzip_always(app):
    """An ASGI wrapper that sends every response body gzipped, ignoring the client's Accept-Encoding."""
    import gzip

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        start, body = None, []

        async def capture(message):
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                body.append(message.get("body", b""))
                if not message.get("more_body"):
                    data = gzip.compress(b"".join(body))
                    headers = [(k, v) for k, v in start["headers"] if k.lower() not in (b"content-length",
                                                                                       b"content-encoding")]
                    await send({**start, "headers": [*headers, (b"content-encoding", b"gzip"),
                                                     (b"content-length", str(len(data)).encode())]})
                    await send({"type": "http.response.body", "body": data})

        await app(scope, receive, capture)

    return wrapped


if __name__ == "__main__":
    if os.environ.get("FIXTURE_FAIL_AT_START"):  # a server that cannot start, and says why on stderr
        print("Traceback (most recent call last):\nFileNotFoundError: DATA_DIR /nope/loca-data is missing",
              file=sys.stderr)
        sys.exit(3)
    if os.environ.get("FIXTURE_HTTP_PORT"):  # the same tools over streamable HTTP, replies as JSON bodies
        if os.environ.get("FIXTURE_HTTP_GZIP"):  # a hostile server: every body gzipped, whatever was asked
            import uvicorn

            app = gzip_always(server.streamable_http_app(json_response=True))
            uvicorn.run(app, host="127.0.0.1", port=int(os.environ["FIXTURE_HTTP_PORT"]), log_level="warning")
        else:
            server.run("streamable-http", host="127.0.0.1", port=int(os.environ["FIXTURE_HTTP_PORT"]),
                       json_response=True)
    else:
        server.run()
