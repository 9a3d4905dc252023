"""The tool proxy inside the sandboxed kernel: `tools["name"](**kwargs)` returns native Python values.

This file is bound read-only into the sandbox and imported by the kernel at start. It only speaks a
length-prefixed JSON protocol over the Unix socket the runtime owns (`/run/tools/tools.sock`); the
tool servers themselves run outside the sandbox. Standard library only.

    tools                    # a mapping: name -> Tool
    tools.help()             # every tool with its description and arguments
    help(tools["get_order"]) # one tool's description and JSON schema
    tools["get_order"](order_id=7)          # -> dict / list / str / number
    except ToolError as e: print(e)        # a failed call carries the server's message
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Mapping

__all__ = ["ToolError", "UnknownToolError", "Tool", "tools"]

SOCKET_PATH = "/run/tools/tools.sock"
_HEADER = struct.Struct("!I")


class ToolError(Exception):
    """A tool call failed; str(error) is the server's message."""


class UnknownToolError(ToolError, KeyError):
    """No tool has that name; the message lists the tools that exist."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown tool"


class _Channel:
    """One connection per thread, so programs may call tools from several threads at once."""

    def __init__(self, path: str):
        self.path = path
        self._local = threading.local()

    def _sock(self) -> socket.socket:
        sock = getattr(self._local, "sock", None)
        if sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self.path)
            except OSError as exc:
                sock.close()
                raise ToolError(f"the tool runtime is not reachable ({exc})") from None
            self._local.sock = sock
        return sock

    def request(self, payload: dict) -> dict:
        data = json.dumps(payload).encode()
        sock = self._sock()
        try:
            try:
                sock.sendall(_HEADER.pack(len(data)) + data)
            except OSError:
                pass  # the runtime refused the request (too large) and closed: its reply, read next, says why
            try:
                reply = json.loads(self._read_frame(sock))
            except OSError as exc:
                raise ToolError(f"the tool runtime closed the connection ({exc})") from None
            if not reply.get("ok") and str(reply.get("error", "")).startswith("refused:"):
                self._local.sock = None  # the runtime closes a connection it refused on
                sock.close()
            return reply
        except BaseException:
            # an interrupted or failed exchange leaves the stream mid-frame: start afresh next time
            self._local.sock = None
            sock.close()
            raise

    @staticmethod
    def _read_frame(sock: socket.socket) -> bytes:
        """One reply frame's body. Its first read asks for up to 64 KiB, so a usual reply (header and
        body) takes one system call, not two; the runtime sends nothing after a reply."""
        buf = b""
        while len(buf) < _HEADER.size:
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise ToolError("the tool runtime closed the connection")
            buf += chunk
        (size,) = _HEADER.unpack_from(buf)
        end = _HEADER.size + size
        if len(buf) >= end:
            return buf[_HEADER.size:end]
        chunks, got = [buf[_HEADER.size:]], len(buf)  # a large reply is copied once more, not twice
        while got < end:
            chunk = sock.recv(min(end - got, 1 << 20))
            if not chunk:
                raise ToolError("the tool runtime closed the connection")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)


def _describe_args(schema: dict) -> str:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    parts = []
    for name, prop in props.items():
        typ = prop.get("type") or "/".join(
            str(alt.get("type")) for alt in prop.get("anyOf", []) if isinstance(alt, dict)) or "any"
        parts.append(f"{name}: {typ}" + ("" if name in required else f" = {prop.get('default')!r}"))
    return ", ".join(parts)


class Tool:
    """A callable tool. Call it with keyword arguments (or one dict of arguments)."""

    def __init__(self, channel: _Channel, spec: dict):
        self._channel = channel
        self.name: str = spec["name"]
        self.description: str = spec.get("description") or ""
        self.input_schema: dict = spec.get("input_schema") or {}
        self.output_schema: dict | None = spec.get("output_schema")
        self.__doc__ = (f"{self.name}({_describe_args(self.input_schema)})\n\n{self.description}\n\n"
                        f"Input schema: {json.dumps(self.input_schema)}")

    def __call__(self, *args, **kwargs):
        if args:
            if len(args) == 1 and isinstance(args[0], dict) and not kwargs:
                kwargs = dict(args[0])
            else:
                raise TypeError(f"call tools with keyword arguments: tools[{self.name!r}]("
                                f"{_describe_args(self.input_schema)})")
        reply = self._channel.request({"op": "call", "tool": self.name, "arguments": kwargs})
        if reply.get("ok"):
            return reply.get("value")
        if reply.get("type") == "UnknownTool":
            raise UnknownToolError(reply.get("error", "unknown tool"))
        raise ToolError(reply.get("error", "tool call failed"))

    def __repr__(self) -> str:
        return f"<tool {self.name}({_describe_args(self.input_schema)})>"


class Tools(Mapping):
    """All tools of this episode, by name. The list is fetched from the runtime on first use."""

    def __init__(self, path: str = SOCKET_PATH):
        self._channel = _Channel(path)
        self._tools: dict[str, Tool] | None = None

    def _load(self, refresh: bool = False) -> dict[str, Tool]:
        if self._tools is None or refresh:
            reply = self._channel.request({"op": "list"})
            if not reply.get("ok"):
                raise ToolError(reply.get("error", "cannot list tools"))
            self._tools = {spec["name"]: Tool(self._channel, spec) for spec in reply["tools"]}
        return self._tools

    def __getitem__(self, name: str) -> Tool:
        found = self._load()
        if name not in found:
            found = self._load(refresh=True)
        if name not in found:
            raise UnknownToolError(f"unknown tool {name!r}; available tools: {', '.join(sorted(found)) or 'none'}")
        return found[name]

    def __iter__(self):
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self) -> str:
        return f"<tools: {', '.join(self._load())}>"

    def help(self, name: str | None = None) -> None:
        """Print every tool's signature and description (or one tool's full schema)."""
        if name is not None:
            print(self[name].__doc__)
            return
        for tool in self._load().values():
            print(f"- {tool.name}({_describe_args(tool.input_schema)}): {tool.description.strip()}")


tools = Tools()
