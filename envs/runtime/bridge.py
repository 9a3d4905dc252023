"""The runtime's end of the channel that tool calls take out of the sandbox.

A Unix socket in a host folder that is bound read-only into the sandbox at /run/tools. Frames are
a 4-byte big-endian length and a JSON object (see shim/progagent_tools.py). The bridge exists from
the moment a pooled kernel starts; an episode attaches its router (`Upstreams`) when it opens, so
a warm kernel can be handed to any episode.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import struct
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_HEADER = struct.Struct("!I")
MAX_FRAME = 64 * 1024 * 1024


class ToolBridge:
    def __init__(self, socket_path: Path):
        self.socket_path = socket_path
        self.router: Any = None
        self._server: asyncio.AbstractServer | None = None
        self._conns: set[asyncio.Task] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.socket_path))

    def attach(self, router: Any) -> None:
        self.router = router

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._conns.add(task)
        try:
            while True:
                try:
                    (size,) = _HEADER.unpack(await reader.readexactly(_HEADER.size))
                    if size > MAX_FRAME:
                        break
                    request = json.loads(await reader.readexactly(size))
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                except ValueError:
                    reply = {"ok": False, "type": "BadRequest", "error": "malformed request"}
                else:
                    reply = await self._handle(request)
                try:
                    data = json.dumps(reply, default=str).encode()
                except (TypeError, ValueError) as exc:
                    data = json.dumps({"ok": False, "type": "ToolError",
                                       "error": f"result could not be encoded: {exc}"}).encode()
                writer.write(_HEADER.pack(len(data)) + data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            if task is not None:
                self._conns.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

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

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._conns):
                task.cancel()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
