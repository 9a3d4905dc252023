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

The session reads and writes the pipes itself (ServerOutput, ServerInput), with no task between
(the SDK's transport has a reader and a writer task: a task switch each way per message).

Everything else is the SDK's: messages are parsed by `mcp_types.jsonrpc_message_adapter`, the server
runs in its own session (process group) with `get_default_environment()` plus its spec's variables,
its stderr is read through `StderrTail` (a bounded log, and the last lines for a failed start's
error), and shutting down follows the MCP lifecycle (close stdin, wait, then kill the group), every wait
bounded.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import anyio.lowlevel
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


class ServerOutput:
    """The session's read stream (`mcp.shared._stream_protocols.ReadStream`): the server's messages,
    read from its stdout by the session's own receive loop, a line at a time under the rules above.

    No task and memory stream between the pipe and the session, as the SDK's transport has: each
    hop is a task switch per message, and with the same hop on the write side (ServerInput) they
    were up to ~5-10% of a tool call's time here (a call took 0.93-1.03x the SDK client's with both
    gone, 1.01-1.07x before; alternating batches on a noisy VM).
    What one read of the pipe completes waits here as bytes (at most 64 KiB of lines, besides one
    line of up to `max_line_bytes`), each parsed when the session takes it: a flood of short lines
    that are not messages holds one read's bytes, not an error object per line; and the event loop
    gets a turn every YIELD_EVERY lines of one read (a usual read holds one line: no turn is added),
    so a flood cannot hold the loop for a whole read while other episodes' calls wait. Measured with
    500,000 log notifications (53 MB) between two replies: 34 s with the SDK's reader task, worst gap
    in the loop 50 ms; 19 s and 30 ms with a turn every 8 lines (every 64: 30-37 s and 77-107 ms, the
    notifications' handler tasks piling up between turns)."""

    YIELD_EVERY = 8

    def __init__(self, stdout: Any, max_line_bytes: int = MAX_LINE_BYTES):
        self._stdout, self._max = stdout, max_line_bytes
        self._ready: collections.deque[bytes | SessionMessage | Exception] = collections.deque()
        self._line, self._dropped, self._head = bytearray(), 0, b""  # dropped: bytes of an overlong line so far
        self._ended = False
        self._without_yield = 0  # lines handed over since the loop last had a turn

    async def receive(self) -> SessionMessage | Exception:
        while not self._ready:
            if self._ended:
                raise anyio.EndOfStream
            try:
                chunk = await self._stdout.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                self._ended = True
                raise anyio.EndOfStream from None
            self._feed(chunk)
            self._without_yield = 0
        self._without_yield += 1
        if self._without_yield >= self.YIELD_EVERY:
            self._without_yield = 0
            await anyio.lowlevel.checkpoint()
        item = self._ready.popleft()
        return _parse(item) if isinstance(item, bytes) else item

    def _feed(self, chunk: bytes) -> None:
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if self._dropped:
                self._dropped += len(piece)
            elif len(self._line) + len(piece) > self._max:
                self._head, self._dropped = bytes(self._line[:512]) + piece[:512], len(self._line) + len(piece)
                self._line = bytearray()
            else:
                self._line += piece
            if end < 0:
                return
            if self._dropped:
                self._ready.append(_too_long(self._head, self._dropped, self._max))
                self._dropped = 0
            elif self._line.strip():
                self._ready.append(bytes(self._line))
            self._line = bytearray()
            start = end + 1

    def __aiter__(self) -> ServerOutput:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._ended = True
        self._ready.clear()

    async def __aenter__(self) -> ServerOutput:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


class ServerInput:
    """The session's write stream (`WriteStream`): each message written to the server's stdin by the
    task that sends it (ServerOutput says why no writer task). A message is one `write` of one line,
    so concurrent sends never interleave.

    One message at a time: a server that reads nothing (hung, or hostile) holds the message being
    written in the pipe's buffer, and the calls after it wait for their turn, each ending at its own
    deadline having written nothing. Without the turn, every call's message was added to the buffer
    and stayed there when its call ended (40 calls of 1 MB: 40 MB held; a call may carry 4 MiB). A
    send that ended before the pipe took its message leaves it there, so the next one first waits,
    adding nothing, until the buffer is below the transport's high-water mark (`_behind`): what is held
    for a server that reads nothing is one message and at most that mark (64 KiB). A write that fails is the SDK's
    BrokenResourceError (a lost connection); a server that closed its stdin is found as before: the
    write is lost without an error and the call ends at its deadline."""

    def __init__(self, stdin: Any):
        self._stdin = stdin
        self._closed = False
        self._turn = anyio.Lock(fast_acquire=True)  # no yield when free: most calls find it free
        self._behind = False  # a send ended before the pipe took all it wrote

    async def send(self, message: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        line = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        try:
            async with self._turn:
                if self._behind:
                    await self._stdin.send(b"")  # writes nothing, waits for the buffer to drain
                self._behind = True
                await self._stdin.send(line)
                self._behind = False
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> ServerInput:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


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
    read_stream, write_stream = ServerOutput(process.stdout, max_line_bytes), ServerInput(process.stdin)

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
