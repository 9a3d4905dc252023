"""The stdio transport to an upstream MCP server, with a bound on what the host buffers.

The SDK's `mcp.client.stdio.stdio_client` gathers a server's output into one string until a newline
arrives, however long: a server that answers with 1 GB on one line (a filesystem server asked for
a file a program wrote, a task's server in a Harbor container) costs the host several GB. Programs
choose what servers return, so this transport is the SDK's protocol with two rules added: a line
past `max_line_bytes` is dropped as it streams in (at most `max_line_bytes` held), and the request
it answered gets a JSON-RPC error saying so (its id is read from the line's first bytes; a line
without one is reported to the session as an exception, and the call ends at the router's timeout);
and a line of more values than the host should parse (`untrusted_json.MAX_REPLY_VALUES`) is answered
the same way, unparsed (its top-level id read by msgspec, which skips the rest without building it).

Everything else is the SDK's: messages are parsed by `mcp_types.jsonrpc_message_adapter`, the server
runs in its own session (process group) with `get_default_environment()` plus its spec's variables,
its stderr is read through `StderrTail` (a bounded log, and the last lines for a failed start's
error), and shutting down follows the MCP lifecycle (close stdin, wait, then kill the group), every wait
bounded.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import mcp_types as types
import msgspec
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage

from envs.runtime.untrusted_json import too_many_values

#: the longest line (one JSON-RPC message) the host holds from a stdio server: as much as a tool
#: result may bring into a program (envs/runtime/bridge.MAX_REPLY_BYTES)
MAX_LINE_BYTES = 16 * 2**20
#: the most of a server's stderr written to its log (the rest is dropped, with a line saying so)
MAX_LOG_BYTES = 8 * 2**20
#: how long a server may take to exit after its stdin closes, then after SIGTERM, before SIGKILL
EXIT_GRACE_S = 2.0
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})')


def _too_long(head: bytes, size: int, limit: int) -> SessionMessage | Exception:
    """The error that answers a dropped line's request (or an exception when it names none)."""
    message = (f"the server's reply was {size:,} bytes or more; replies up to {limit:,} bytes reach the host "
               "(ask for less: a page, a range)")
    found = _ID.search(head[:512])
    if found is None:
        return ValueError(f"dropped a message from the server: {message}")
    raw = found.group(1)
    msg_id: Any = raw.decode("utf-8", "replace").strip('"') if raw.startswith(b'"') else int(raw)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=msg_id,
                                             error=types.ErrorData(code=types.INTERNAL_ERROR, message=message)))


class _Envelope(msgspec.Struct):
    """A JSON-RPC message's top-level id and method, read without building the rest (msgspec skips it)."""

    id: int | str | None = None
    method: str | None = None  # a request or notification of the server's: its id is not one of ours


def _parse(line: bytes) -> SessionMessage | Exception:
    why = too_many_values(line)
    if why is not None:  # refused unparsed: what it would cost is the program's choice (untrusted_json)
        try:
            envelope = msgspec.json.decode(line, type=_Envelope)
        except msgspec.DecodeError as exc:
            return ValueError(f"dropped a message from the server: {why}; and it is not JSON-RPC ({exc})")
        msg_id = envelope.id
        if msg_id is None or envelope.method is not None:
            return ValueError(f"dropped a message from the server: {why}")
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=msg_id,
                                                 error=types.ErrorData(code=types.INTERNAL_ERROR, message=why)))
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


class StderrTail:
    """What a server writes to stderr: the last `keep_bytes` kept (a failed start reports them), and
    passed on to `sink` (a binary file: the upstream's log; None: this process's stderr) up to
    `max_log_bytes`, after which one line says the rest was dropped (a server cannot fill the disk)."""

    def __init__(self, sink: Any = None, keep_bytes: int = 64 * 1024, max_log_bytes: int = MAX_LOG_BYTES):
        self.sink, self.keep_bytes, self.max_log_bytes = sink, keep_bytes, max_log_bytes
        self.buf = bytearray()
        self.logged = 0

    def feed(self, chunk: bytes) -> None:
        self.buf += chunk
        del self.buf[:-self.keep_bytes]
        room = self.max_log_bytes - self.logged
        if room < 0:
            return  # past the cap, and said so
        out = chunk[:room] + (b"\n[progagent: the server's stderr past this point is not logged]\n"
                              if len(chunk) > room else b"")
        self.logged += len(chunk) if len(chunk) <= room else room + 1
        with contextlib.suppress(OSError, ValueError):
            if self.sink is not None:
                self.sink.write(out)
                self.sink.flush()
            else:
                sys.stderr.buffer.write(out)
                sys.stderr.flush()

    def text(self, lines: int = 25) -> str:
        return "\n".join(self.buf.decode("utf-8", "replace").rstrip().splitlines()[-lines:])


@contextlib.asynccontextmanager
async def capped_stdio_client(params: StdioServerParameters, errlog: Any = None,
                              max_line_bytes: int = MAX_LINE_BYTES,
                              tail: StderrTail | None = None) -> AsyncGenerator[tuple[Any, Any], None]:
    """(read stream, write stream) for `ClientSession`, like `stdio_client` (module docstring).
    The server's stderr goes through `tail` (a StderrTail over `errlog` when not given)."""
    tail = tail or StderrTail(errlog)
    process = await anyio.open_process([params.command, *params.args],
                                       env=get_default_environment() | (params.env or {}), cwd=params.cwd,
                                       stderr=subprocess.PIPE, start_new_session=True)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        line, dropped, head = bytearray(), 0, b""  # dropped: bytes of an overlong line read so far
        async with read_writer:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError,
                                     OSError):
                while True:
                    chunk = await process.stdout.receive()
                    start = 0
                    while start <= len(chunk):
                        end = chunk.find(b"\n", start)
                        piece = chunk[start:] if end < 0 else chunk[start:end]
                        if dropped:
                            dropped += len(piece)
                        elif len(line) + len(piece) > max_line_bytes:
                            head, dropped = bytes(line[:512]) + piece[:512], len(line) + len(piece)
                            line = bytearray()
                        else:
                            line += piece
                        if end < 0:
                            break
                        if dropped:
                            await read_writer.send(_too_long(head, dropped, max_line_bytes))
                            dropped = 0
                        elif line.strip():
                            await read_writer.send(_parse(bytes(line)))
                        line = bytearray()
                        start = end + 1

    async def writer() -> None:
        async with write_reader:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")

    stderr_done = anyio.Event()

    async def stderr_pump() -> None:
        try:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError,
                                     OSError):
                async for chunk in process.stderr:
                    tail.feed(chunk)
        finally:
            stderr_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        tg.start_soon(stderr_pump)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
                with anyio.move_on_after(0.5):  # its last words (a crash's traceback) reach the tail
                    await stderr_done.wait()
            tg.cancel_scope.cancel()
    for stream in (read_stream, write_stream):
        await stream.aclose()


async def _stop(process: Any) -> None:
    """Close stdin, wait EXIT_GRACE_S, SIGTERM the group, wait, SIGKILL it: bounded in every case."""
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        with anyio.move_on_after(EXIT_GRACE_S):
            while process.returncode is None:
                await anyio.sleep(0.01)
        if process.returncode is not None:
            break
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
