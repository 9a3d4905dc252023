"""The runtime's end of a sandboxed kernel's sockets: ZMTP 3.0 spoken by hand, so reads have limits.

Why not jupyter_client's channels (or pyzmq at all): a program owns its kernel, its sockets and its
connection key, and ZeroMQ hands a multipart message over only once every frame has arrived while
its queue limits count whole messages. One message of 200 frames of 4 MiB, sent by a program on
its kernel's iopub socket, took the host process to 1.7 GB (measured). Here the host reads the
kernel's sockets frame by frame, so nothing a program sends is held beyond a bound:

- iopub (SUB): a message of more than MAX_FRAMES frames or MAX_MESSAGE_BYTES bytes is read to its
  end and dropped, frame by frame, never held; at most QUEUED_MESSAGES decoded messages wait for the
  caller (more are dropped, as ZeroMQ's RCVHWM would); a message that does not verify (HMAC with the
  session key) or decode is counted and dropped (`bad`);
- shell and control (DEALER): the runtime only sends on them (an execute or interrupt request; every
  result it needs is on iopub), so whatever comes back is read and thrown away as it arrives;
- a send that the kernel does not take within `send_timeout_s` (a program that stopped its own
  shell loop) raises TimeoutError instead of parking the caller.

Messages themselves are jupyter_client's: `Session` builds, signs, verifies and decodes them.
The transport is the ZMTP 3.0 wire format (rfc.zeromq.org/spec/23) with the NULL mechanism over the
kernel's `ipc` sockets, which are plain Unix stream sockets at `<ip>-<port>`.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import struct
import time
from typing import Any

from jupyter_client.session import Session

MAX_FRAMES = 32
MAX_MESSAGE_BYTES = 8 * 2**20
QUEUED_MESSAGES = 64
_GREETING = b"\xff" + b"\x00" * 8 + b"\x7f" + bytes([3, 0]) + b"NULL".ljust(20, b"\x00") + b"\x00" * 32
_MORE, _LONG, _COMMAND = 0x01, 0x02, 0x04
_CHUNK = 1 << 16


class ZmtpError(ConnectionError):
    """The peer does not speak ZMTP 3 with the NULL mechanism, or refused the connection."""


def _frame(body: bytes, flags: int = 0) -> bytes:
    if len(body) > 255:
        return bytes([flags | _LONG]) + struct.pack("!Q", len(body)) + body
    return bytes([flags, len(body)]) + body


def _ready(socket_type: bytes, identity: bytes | None) -> bytes:
    props = [(b"Socket-Type", socket_type)] + ([(b"Identity", identity)] if identity else [])
    body = b"\x05READY" + b"".join(bytes([len(k)]) + k + struct.pack("!I", len(v)) + v for k, v in props)
    return _frame(body, _COMMAND)


class Connection:
    """One ZMTP connection to a kernel socket (a Unix stream socket)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, path: str, socket_type: bytes, identity: bytes | None = None,
                   timeout_s: float = 5.0) -> Connection:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(path, limit=_CHUNK), timeout_s)
        conn = cls(reader, writer)
        try:
            await asyncio.wait_for(conn._handshake(socket_type, identity), timeout_s)
        except BaseException:
            conn.close()
            raise
        return conn

    async def _handshake(self, socket_type: bytes, identity: bytes | None) -> None:
        self.writer.write(_GREETING + _ready(socket_type, identity))
        await self.writer.drain()
        greeting = await self.reader.readexactly(64)
        if greeting[0] != 0xFF or greeting[9] != 0x7F or greeting[10] < 3 or greeting[12:16] != b"NULL":
            raise ZmtpError("the kernel socket does not speak ZMTP 3 with the NULL mechanism")
        flags, body = await self._read_frame(max_bytes=4096)
        if not flags & _COMMAND or body is None or not body.startswith(b"\x05READY"):
            raise ZmtpError(f"the kernel socket refused the connection: {(body or b'')[:80]!r}")

    async def _read_frame(self, max_bytes: int) -> tuple[int, bytes | None]:
        """(flags, body); a body over `max_bytes` is read and dropped (None)."""
        flags = (await self.reader.readexactly(1))[0]
        size = struct.unpack("!Q", await self.reader.readexactly(8))[0] if flags & _LONG \
            else (await self.reader.readexactly(1))[0]
        if size <= max_bytes:
            return flags, await self.reader.readexactly(size)
        while size:
            size -= len(await self.reader.readexactly(min(size, _CHUNK)))
        return flags, None

    async def read_message(self) -> list[bytes] | None:
        """The next message's frames; None for one past MAX_FRAMES / MAX_MESSAGE_BYTES (read to its
        end and dropped). Commands (heartbeats, subscriptions) are skipped."""
        frames: list[bytes] = []
        size, dropped = 0, False
        while True:
            flags, body = await self._read_frame(MAX_MESSAGE_BYTES - size if not dropped else 0)
            if flags & _COMMAND:
                continue
            if body is None or len(frames) >= MAX_FRAMES:
                dropped, frames = True, []
            elif not dropped:
                frames.append(body)
                size += len(body)
            if not flags & _MORE:
                return None if dropped else frames

    async def send(self, frames: list[bytes], timeout_s: float) -> None:
        data = b"".join(_frame(f, _MORE if i < len(frames) - 1 else 0) for i, f in enumerate(frames))
        self.writer.write(data)
        async with asyncio.timeout(timeout_s):
            await self.writer.drain()

    async def discard_forever(self) -> None:
        """Read and drop everything the peer sends (what comes back on a socket the runtime only sends on)."""
        with contextlib.suppress(Exception):
            while await self.reader.read(_CHUNK):
                pass

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class KernelChannels:
    """iopub (read), shell and control (send) of one kernel, as `connection` (its connection file's
    dict, `ip` being the host path prefix of its ipc sockets) describes them."""

    def __init__(self, connection: dict[str, Any], send_timeout_s: float = 10.0):
        self.info = connection
        self.session = Session(key=connection["key"].encode(), signature_scheme=connection["signature_scheme"],
                               username="progagent")
        self.send_timeout_s = send_timeout_s
        self.iopub: Connection | None = None
        self.shell: Connection | None = None
        self.control: Connection | None = None
        self.messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUED_MESSAGES)
        self.bad = 0  # messages dropped: too large, unsigned, malformed
        self.lost = 0  # messages dropped because QUEUED_MESSAGES were waiting
        self._tasks: list[asyncio.Task] = []

    def _path(self, name: str) -> str:
        return f"{self.info['ip']}-{self.info[name + '_port']}"

    async def connect(self, deadline: float) -> None:
        """Connect the three sockets, retrying while the kernel has not bound them yet."""
        identity = self.session.bsession
        for name, kind in (("iopub", b"SUB"), ("shell", b"DEALER"), ("control", b"DEALER")):
            while getattr(self, name) is None:
                try:
                    conn = await Connection.open(self._path(name), kind, identity if kind == b"DEALER" else None)
                except (FileNotFoundError, ConnectionRefusedError, asyncio.IncompleteReadError, TimeoutError):
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.02)
                    continue
                setattr(self, name, conn)
        await self.iopub.send([b"\x01"], self.send_timeout_s)  # subscribe to everything (ZMTP 3.0 form)
        self._tasks = [asyncio.create_task(self._read_iopub()), asyncio.create_task(self.shell.discard_forever()),
                       asyncio.create_task(self.control.discard_forever())]

    async def _read_iopub(self) -> None:
        assert self.iopub is not None
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, OSError):
            while True:
                frames = await self.iopub.read_message()
                if frames is None:
                    self.bad += 1
                    continue
                if self.messages.full():  # not even decoded: a flood costs no more than reading it
                    self.lost += 1
                    continue
                try:
                    _, parts = self.session.feed_identities(frames, copy=True)
                    msg = self.session.deserialize(parts, content=True, copy=True)
                except Exception:  # noqa: BLE001 - a forged or broken message: the program's doing
                    self.bad += 1
                    continue
                self.messages.put_nowait(msg)

    async def get_iopub_msg(self, timeout: float) -> dict[str, Any]:
        """The next decoded iopub message; queue.Empty after `timeout` seconds (as jupyter_client)."""
        try:
            async with asyncio.timeout(timeout):  # no task per message, as wait_for makes
                return await self.messages.get()
        except TimeoutError:
            raise queue.Empty from None

    async def request(self, channel: str, msg_type: str, content: dict[str, Any]) -> str:
        """Send a request on "shell" or "control"; its msg_id (its results arrive on iopub)."""
        conn = getattr(self, channel)
        msg = self.session.msg(msg_type, content)
        await conn.send(self.session.serialize(msg), self.send_timeout_s)
        return msg["header"]["msg_id"]

    async def execute(self, code: str, silent: bool = False, store_history: bool = True) -> str:
        return await self.request("shell", "execute_request", {
            "code": code, "silent": silent, "store_history": store_history, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True})

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for conn in (self.iopub, self.shell, self.control):
            if conn is not None:
                conn.close()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
