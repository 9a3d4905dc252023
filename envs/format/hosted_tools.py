"""The runtime's half of the "sandboxed" task-server transport: an in-process MCP server whose tools
forward to a task's tools.py running in a bubblewrap child (`python -m envs.format.tool_host`).

The child describes its tools' signatures; this side rebuilds them (`envs.format.tool_host.build_signature`)
and registers forwarding functions with the SDK's `MCPServer`, so the schemas, the argument
validation and the result conversion are the SDK's own, as for the in-process transport. A call
goes to the child as JSON and comes back as JSON. When the child ends (a crash, a tool that calls
exit), calls fail and the episode's router restarts the upstream (a fresh child over the same
environment). A call the router gives up on (its timeout) leaves the child in an unknown state: it
is killed, and the next call restarts it.

A tools.py whose signatures the protocol cannot describe (tuples, classes, ...) is served as
before this module: the SDK's stdio server inside the same sandbox (`fallback_argv`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from pathlib import Path
from typing import Any

import msgspec
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic_core import to_jsonable_python

from envs.format.tool_host import build_signature
from envs.runtime.bridge import MAX_REPLY_BYTES
from envs.runtime.sandbox import BWRAP_ENV
from envs.runtime.untrusted_json import too_many_values
from envs.runtime.upstream import Upstream, UpstreamSpec

#: the most one line from the tool host may hold (its tool list, or one call's reply): tools.py is
#: task code, possibly model-written, so the host buffers no more than this; a longer reply is the
#: call's error and the child is restarted (the same bound as a reply that reaches a program)
MAX_LINE_BYTES = MAX_REPLY_BYTES  # and of at most untrusted_json.MAX_REPLY_VALUES values, counted before parsing


class HostedTaskTools(Upstream):
    """An `Upstream` whose MCP server is in this process and whose tools run in the child `argv`
    (under `limits`, a LimitBackend, when given: each start gets fresh ones)."""

    def __init__(self, name: str, argv: list[str], fallback_argv: list[str], limits: Any = None,
                 errlog: Path | None = None):
        super().__init__(UpstreamSpec(name), errlog=errlog, limits=limits)
        self.argv, self.fallback_argv = argv, fallback_argv
        self.proc: asyncio.subprocess.Process | None = None
        self.fallback: str | None = None  # why the child could not describe its tools, when it could not
        self._ids = itertools.count()
        self._lock = asyncio.Lock()

    def _wrap(self, argv: list[str]) -> list[str]:
        return self.limits.wrap(list(argv)) if self.limits is not None else list(argv)

    async def start(self, timeout: float = 30.0) -> None:
        await self._take_limits()  # before the child: it starts inside them
        try:
            if self.fallback is None:
                first = await asyncio.wait_for(self._spawn(), timeout)
                if "unsupported" in first:
                    self.fallback = first["unsupported"]
                    await self._stop_child()
                else:
                    self.server_object = self._server(first)
            if self.fallback is not None:  # the SDK's stdio server in the same sandbox
                self.server_object = None
                self.spec = msgspec.structs.replace(self.spec, command=list(self.fallback_argv), env=BWRAP_ENV)
            await super().start(timeout)
        except BaseException:
            await self.close()
            raise

    async def _spawn(self) -> dict[str, Any]:
        errlog = open(self.errlog, "ab") if self.errlog else None  # noqa: SIM115 - the child holds it
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self._wrap(self.argv), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=errlog or asyncio.subprocess.DEVNULL, limit=MAX_LINE_BYTES, start_new_session=True,
                env=BWRAP_ENV)
        finally:
            if errlog:
                errlog.close()
        try:
            line = await self.proc.stdout.readline()
        except ValueError:  # past MAX_LINE_BYTES (asyncio has dropped what it read)
            raise RuntimeError(f"the task's tool host described its tools in more than {MAX_LINE_BYTES:,} "
                               "bytes") from None
        if not line:
            code = await self.proc.wait()
            raise RuntimeError(f"the task's tool host exited ({code}) before describing its tools"
                               + (f"; see {self.errlog}" if self.errlog else ""))
        return json.loads(line)

    def _server(self, described: dict[str, Any]) -> MCPServer:
        # named and introduced as envs.format.task_server.build_server does
        server = MCPServer(f"task-{described['task']}", instructions=f"Tools of the task {described['title']!r}.",
                           log_level="WARNING")
        for desc in described["tools"]:
            server.add_tool(self._forwarder(desc), name=desc["name"], description=desc["description"])
        return server

    def _forwarder(self, desc: dict[str, Any]) -> Any:
        name = desc["name"]

        async def call(**kwargs: Any) -> Any:
            return await self._call(name, kwargs)

        sig = build_signature(desc)
        call.__name__ = call.__qualname__ = name
        call.__doc__ = desc["description"]
        call.__signature__ = sig  # type: ignore[attr-defined]
        call.__annotations__ = {p.name: p.annotation for p in sig.parameters.values()
                                if p.annotation is not p.empty}
        if sig.return_annotation is not sig.empty:
            call.__annotations__["return"] = sig.return_annotation
        return call

    async def _call(self, name: str, args: dict[str, Any]) -> Any:
        async with self._lock:  # the child serves one call at a time, as the stdio server's lock does
            proc = self.proc
            if proc is None or proc.returncode is not None:
                raise ToolError("the task's tool server is not running; it restarts at the next call")
            req_id = next(self._ids)
            try:
                proc.stdin.write(json.dumps({"id": req_id, "tool": name,
                                             "args": to_jsonable_python(args)}).encode() + b"\n")
                await proc.stdin.drain()
                line = await proc.stdout.readline()
            except ValueError:  # a reply past MAX_LINE_BYTES: asyncio dropped it; the child's state is unknown
                await self._stop_child(grace=0)
                raise ToolError(f"the tool's reply was larger than {MAX_LINE_BYTES:,} bytes and was dropped "
                                "(ask for less: a page, a range); the task's tool server restarts at the next "
                                "call, over the same environment") from None
            except asyncio.CancelledError:
                await self._stop_child(grace=0)  # mid-call: its state is unknown
                raise
            except (BrokenPipeError, ConnectionResetError):
                line = b""
            if not line:  # a deliberate error (ToolError): the SDK shows its text, not only "Error executing"
                raise ToolError(f"the task's tool server stopped during the call (exit code {await proc.wait()}); "
                                "it restarts at the next call, over the same environment: retry if the call is "
                                "safe to repeat")
        too_many = too_many_values(line)  # before parsing: what it would cost the host is the program's choice
        if too_many is not None:
            raise ToolError(too_many)
        reply = json.loads(line)
        if reply["id"] != req_id:
            raise RuntimeError(f"tool host reply {reply['id']} to request {req_id}")
        if not reply["ok"]:
            raise ToolError(reply["error"])
        return reply["result"]

    @property
    def alive(self) -> bool:
        if self.fallback is not None:
            return super().alive
        return super().alive and self.proc is not None and self.proc.returncode is None

    async def _stop_child(self, grace: float = 2.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(Exception):
                proc.stdin.close()  # the host ends at EOF
            try:
                await asyncio.wait_for(proc.wait(), grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()

    async def close(self) -> None:
        await self._stop_child()
        await super().close()  # the MCP side, then the limits (whatever the tools started ends with them)
