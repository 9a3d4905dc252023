"""The runtime's end of the channel that tool calls take out of the sandbox.

A Unix socket in a host folder that is bound read-only into the sandbox at /run/tools. Frames are
a 4-byte big-endian length and a JSON object (see shim/progagent_tools.py). The bridge exists from
the moment a pooled kernel starts; an episode attaches its router (`Upstreams`) when it opens, so
a warm kernel can be handed to any episode.

The other end is the program's, so every host buffer here has a bound: a request announced above
MAX_REQUEST_BYTES is refused unread; the requests above SMALL_REQUEST_BYTES being read or served at
once may hold MAX_PENDING_BYTES in all, from their header to their reply (a program that opens many
connections and sends half of each, or sends many large calls while its call slots are busy, gets
refusals, not gigabytes, and its small calls still get through; what one request holds once parsed
is bounded by the router's MAX_ARGUMENT_VALUES, which a large request is held to before it is parsed:
4 MiB of nested empty lists took ~0.5 s of the event loop to parse, only to be refused);
a request must arrive whole within REQUEST_DEADLINE_S of its header; at most MAX_CONNECTIONS are
open; a reply above MAX_REPLY_BYTES becomes an error saying so. Each refusal is a ToolError in the
program (the shim opens a new connection for its next call).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import struct
from pathlib import Path
from typing import Any

from envs.runtime.untrusted_json import values_over
from envs.runtime.upstream import MAX_ARGUMENT_VALUES

log = logging.getLogger(__name__)

_HEADER = struct.Struct("!I")
MAX_REQUEST_BYTES = 4 * 2**20
MAX_PENDING_BYTES = 16 * 2**20
SMALL_REQUEST_BYTES = 64 * 2**10  # not counted against MAX_PENDING_BYTES (at most MAX_CONNECTIONS of them)
MAX_REPLY_BYTES = 16 * 2**20
MAX_CONNECTIONS = 64
REQUEST_DEADLINE_S = 30.0
#: the values of a request around its arguments (the object, its op, tool and arguments)
ENVELOPE_VALUES = 8


class ToolBridge:
    def __init__(self, socket_path: Path):
        self.socket_path = socket_path
        self.router: Any = None
        self._server: asyncio.AbstractServer | None = None
        self._conns: set[asyncio.Task] = set()
        self._busy: set[asyncio.Task] = set()  # connections serving a tool call now
        self._pending = 0  # bytes of requests being read now

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket_path))

    def attach(self, router: Any) -> None:
        self.router = router

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if len(self._conns) >= MAX_CONNECTIONS:
            await self._refuse(writer, f"more than {MAX_CONNECTIONS} connections to the tool runtime at once")
            return
        if task is not None:
            self._conns.add(task)
        try:
            while True:
                try:
                    (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                if size > MAX_REQUEST_BYTES:
                    await self._refuse(writer, f"a tool call of {size:,} bytes; the limit is {MAX_REQUEST_BYTES:,}")
                    break
                counted = size if size > SMALL_REQUEST_BYTES else 0  # small calls always get through
                if self._pending + counted > MAX_PENDING_BYTES:
                    await self._refuse(writer, f"too many large tool calls at once (the ones being read or served hold "
                                              f"{MAX_PENDING_BYTES // 2**20} MiB of requests in all); retry")
                    break
                self._pending += counted
                try:  # held until the reply is sent: a parsed request waiting for a call slot is memory too
                    try:
                        # the whole body is here already (nearly every call): it cannot be late, and a deadline
                        # costs ~8 of the ~30 us of host CPU a call takes here. StreamReader holds what arrived
                        # in `_buffer` (CPython's since 3.4); without it every read gets the deadline.
                        if len(getattr(reader, "_buffer", b"")) >= size:
                            body = await reader.readexactly(size)
                        else:
                            async with asyncio.timeout(REQUEST_DEADLINE_S):  # no task per call, as wait_for makes
                                body = await reader.readexactly(size)
                    except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
                        break
                    request: Any = None
                    many = values_over(body, MAX_ARGUMENT_VALUES + ENVELOPE_VALUES)
                    if many is not None:  # what the router would refuse once parsed: refused unparsed
                        reply = {"ok": False, "type": "BadArguments",
                                 "error": f"a tool call whose arguments hold about {many:,} values; the limit is "
                                          f"{MAX_ARGUMENT_VALUES:,} (send the data in parts, or as text)"}
                    else:
                        try:
                            request = json.loads(body)
                            if not isinstance(request, dict):
                                raise ValueError("not an object")
                        except (ValueError, RecursionError):
                            request, reply = None, {"ok": False, "type": "BadRequest", "error": "malformed request"}
                    del body
                    if request is not None:
                        if task is not None:
                            self._busy.add(task)
                        try:
                            reply = await self._handle(request)
                        finally:
                            self._busy.discard(task)
                        del request
                    await self._send(writer, reply)
                finally:
                    self._pending -= counted
        except ConnectionError:
            pass
        finally:
            if task is not None:
                self._conns.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, reply: dict) -> None:
        try:
            data = json.dumps(reply, default=str).encode()
        except (TypeError, ValueError, RecursionError) as exc:
            data = json.dumps({"ok": False, "type": "ToolError", "error": f"result could not be encoded: {exc}"}).encode()
        if len(data) > MAX_REPLY_BYTES:
            data = json.dumps({"ok": False, "type": "ToolError",
                               "error": f"the tool's result is {len(data):,} bytes; results up to "
                                        f"{MAX_REPLY_BYTES:,} bytes reach a program (ask for less: a page, a "
                                        f"range)"}).encode()
        writer.write(_HEADER.pack(len(data)) + data)
        if writer.transport.get_write_buffer_size():  # the program has not read it all yet: wait, bounded
            async with asyncio.timeout(REQUEST_DEADLINE_S):  # (a deadline costs ~10 us: not when nothing waits)
                await writer.drain()

    async def _refuse(self, writer: asyncio.StreamWriter, why: str) -> None:
        with contextlib.suppress(Exception):
            await self._send(writer, {"ok": False, "type": "ToolError", "error": f"refused: {why}"})
        writer.close()

    async def _handle(self, request: dict) -> dict:
        router = self.router
        if router is None:
            return {"ok": False, "type": "ToolError", "error": "no episode is attached to this kernel"}
        op = request.get("op")
        if op == "list":
            return {"ok": True, "tools": router.describe()}
        if op == "call":
            outcome = await router.call(str(request.get("tool")), request.get("arguments"), source="program")
            if outcome.ok:
                return {"ok": True, "value": outcome.value}
            return {"ok": False, "type": outcome.error_type, "error": outcome.error}
        return {"ok": False, "type": "BadRequest", "error": f"unknown op {op!r}"}

    async def cancel_in_flight(self, grace_s: float = 2.0) -> int:
        """End the tool calls being served now, because the program that made them was interrupted
        (its time ran out, its kernel died): each waiting call is cancelled, which the MCP SDK tells
        the server (`notifications/cancelled`), and its connection closes (the program's side drops
        a connection it was interrupted on). Returns how many."""
        busy = list(self._busy)
        for task in busy:
            task.cancel()
        if busy:  # each records itself and sends the server its cancellation, within a bound
            await asyncio.wait(busy, timeout=grace_s)
        return len(busy)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._conns):
                task.cancel()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
