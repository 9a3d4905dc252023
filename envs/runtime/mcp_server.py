"""The runtime as an MCP server (`progagent mcp`).

    progagent mcp --upstream time=mcp-server-time --upstream fs="npx @modelcontextprotocol/server-filesystem /data"
    progagent mcp --config servers.json        # the mcpServers JSON of Claude Desktop, Cursor, VS Code
                  [--harness ptc|dtc|hybrid] [--timeout 120] [--tool-timeout 60] [--workspace DIR] [--http PORT]

- `ptc` exposes one tool, `programmatic_tool_call(code)`: the result text is what the model would
  see; `is_error` is true when the program raised, timed out or crashed the kernel.
- `dtc` exposes the upstream tools directly (results passed through unchanged).
- `hybrid` exposes both.
One server process holds one episode (a sandboxed kernel, opened on the first program): MCP
clients start one stdio server per conversation, which is one episode. (MCP 2.x requests carry no
stable session object to key several episodes on; run one process per episode over HTTP too.)
The upstream servers are started once with the process.

Over HTTP every request needs `Authorization: Bearer TOKEN` (the SDK's bearer middleware; a
request without it, or with another token, gets 401): anyone who reaches the port can otherwise run
code and call the tools. The token is $PROGAGENT_MCP_TOKEN, else the contents of `--token-file`
(which must be readable by its owner only; a missing file is created, mode 0600, with a new
token), else a new token printed on stderr at start.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import logging
import os
import secrets
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp.server.lowlevel import Server
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

from envs.runtime import ptc_tool
from envs.runtime.episode import Episode, Runtime
from envs.runtime.mcp_config import load_mcp_servers
from envs.runtime.sandbox import host_binds
from envs.runtime.upstream import Upstream, Upstreams, UpstreamSpec, UpstreamStartError
from schema.bounds import Port, Seconds
from schema.config import RuntimeConfig
from schema.load import argument

log = logging.getLogger(__name__)
HARNESSES = ("ptc", "dtc", "hybrid")
TOKEN_ENV = "PROGAGENT_MCP_TOKEN"


class BearerToken:
    """The SDK's TokenVerifier for one shared secret, compared in constant time."""

    def __init__(self, token: str):
        self.token = token.encode()

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        if hmac.compare_digest(token.encode(), self.token):
            return AccessToken(token=token, client_id="progagent-mcp", scopes=[])
        return None


def bearer_token(token_file: Path | None) -> tuple[str, str]:
    """(the token, where it came from): $PROGAGENT_MCP_TOKEN, else `token_file` (owner-only; created with
    a new token when missing), else a new token. ValueError for a file others can read, or an empty one."""
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV], f"${TOKEN_ENV}"
    if token_file is None:
        return secrets.token_urlsafe(32), "generated"
    try:
        fd = os.open(token_file, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        token = secrets.token_urlsafe(32)
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        return token, f"{token_file} (new)"
    with os.fdopen(fd) as f:
        if os.fstat(f.fileno()).st_mode & 0o077:
            raise ValueError(f"{token_file} can be read by others; make it readable by its owner only (chmod 600)")
        token = f.read(4096).strip()
    if not token:
        raise ValueError(f"{token_file} holds no token")
    return token, str(token_file)


class RuntimeServer:
    def __init__(self, upstreams: list[UpstreamSpec], harness: str = "ptc", config: RuntimeConfig | None = None,
                 workspace: Path | None = None):
        if harness not in HARNESSES:
            raise ValueError(f"--harness must be one of {', '.join(HARNESSES)}, got {harness!r}")
        self.specs = upstreams
        self.harness = harness
        self.config = config or RuntimeConfig(warm_pool=1)
        self.workspace = workspace
        self.runtime: Runtime | None = None
        self.router: Upstreams | None = None
        self.episode_: Episode | None = None
        self._opening = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def lifespan(self, _server: Any) -> AsyncIterator[dict]:
        self.runtime = await Runtime(self.config).start(wait=False)
        logs = Path(self.config.logs_dir) if self.config.logs_dir else None
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
        # stderr: to --logs DIR, else to this process's stderr (an MCP client shows it in its log)
        ups = [Upstream(s, errlog=logs / f"upstream-{s.name}.log" if logs else None) for s in self.specs]
        self.router = Upstreams(ups, heuristic=self.config.error_heuristic,
                                call_timeout_s=self.config.tool_timeout_s,
                                max_in_flight=self.config.max_tool_calls_in_flight,
                                record_chars=self.config.call_record_chars,
                                max_records=self.config.max_call_records)
        try:
            await self.router.start()
            yield {}
        finally:
            if self.episode_ is not None:
                await self.episode_.close()
            await self.router.close()
            await self.runtime.close()

    def tools(self) -> list[Tool]:
        assert self.router is not None
        exposed: list[Tool] = []
        if self.harness in ("ptc", "hybrid"):
            exposed.append(Tool(name=ptc_tool.NAME, input_schema=ptc_tool.INPUT_SCHEMA,
                                description=ptc_tool.description(self.router.describe(), self.config.max_output_chars,
                                                                 self.config.program_timeout_s)))
        if self.harness in ("dtc", "hybrid"):
            exposed.extend(self.router.mcp_tools())
        return exposed

    async def episode(self) -> Episode:
        async with self._opening:
            if self.episode_ is None:
                assert self.runtime is not None
                self.episode_ = await self.runtime.open_episode(router=self.router, workspace=self.workspace)
        return self.episode_

    async def on_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=self.tools())

    async def on_call_tool(self, ctx: Any, params: Any) -> CallToolResult:
        assert self.router is not None
        name, args = params.name, params.arguments or {}
        if name == ptc_tool.NAME and self.harness in ("ptc", "hybrid"):
            code = args.get("code")
            if not isinstance(code, str):
                return _error("programmatic_tool_call needs one argument `code` (a string of Python source)")
            result = await (await self.episode()).run_program(code)
            return CallToolResult(content=[TextContent(type="text", text=result.text)], is_error=result.is_error)
        if self.harness in ("dtc", "hybrid") and name in self.router.catalogue:
            # the rule of every path (envs/runtime/upstream.py): the server's result as it came when the
            # call succeeded or the server said isError; else (a deadline, a dead server, bad
            # arguments, a failure only said in text) an error result with the router's message
            outcome, raw = await self.router.call_logged(name, args, source="direct")
            if raw is not None and (outcome.ok or raw.is_error):
                return raw
            return _error(outcome.error or "the tool failed")
        known = [t.name for t in self.tools()]
        return _error(f"unknown tool {name!r}; available tools: {', '.join(known)}")

    def build(self) -> Server:
        return Server("progagent-runtime", version="0.1.0", lifespan=self.lifespan,
                      on_list_tools=self.on_list_tools, on_call_tool=self.on_call_tool,
                      instructions="ProgAgent PTC runtime: run Python programs that call tools.")


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, default=None, metavar="FILE",
                        help="tool servers in the mcpServers JSON of Claude Desktop, Cursor and VS Code (command, "
                             "args, env, cwd; url, headers, type sse; and timeout_s, error_heuristic per server)")
    parser.add_argument("--upstream", action="append", default=[], metavar="NAME=COMMAND",
                        help="an MCP server to route tools to (repeatable); NAME=URL for streamable HTTP")
    parser.add_argument("--tool-timeout", type=argument(Seconds), default=60.0, metavar="SECONDS",
                        help="a tool call's deadline, for servers without their own timeout_s (default 60)")
    parser.add_argument("--harness", choices=HARNESSES, default="ptc")
    parser.add_argument("--timeout", type=argument(Seconds), default=120.0, help="per-program wall timeout in seconds")
    parser.add_argument("--workspace", type=Path, default=None, help="host folder bound as /workspace")
    parser.add_argument("--logs", type=Path, default=None, metavar="DIR",
                        help="keep the tool servers' stderr logs in DIR/<episode>/ (default: the episode's folder, "
                             "removed at exit)")
    parser.add_argument("--bind", action="append", default=[], metavar="PATH[:rw]",
                        help="a host folder programs see at the same path (read-only; ':rw' to write), so the "
                             "paths a tool server takes are the paths a program uses (repeatable)")
    parser.add_argument("--http", type=argument(Port), default=None, metavar="PORT",
                        help="serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio (bearer token required)")
    parser.add_argument("--token-file", type=Path, default=None,
                        help=f"over HTTP: the bearer token, in a file readable by its owner only (created when "
                             f"missing); ${TOKEN_ENV} takes precedence; default: a new token printed at start")
    parser.add_argument("--no-error-heuristic", action="store_true",
                        help="trust isError only (do not detect failures reported in text)")


def _start_error(exc: BaseException) -> UpstreamStartError | None:
    """The UpstreamStartError inside the exception groups the server's task groups wrapped it in."""
    if isinstance(exc, UpstreamStartError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        return next(filter(None, map(_start_error, exc.exceptions)), None)
    return None


def run(args: argparse.Namespace) -> int:
    try:
        specs = load_mcp_servers(args.config) if args.config else []
        specs += [UpstreamSpec.parse(u) for u in args.upstream]
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ValueError(f"two tool servers share a name: {sorted({n for n in names if names.count(n) > 1})}")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:  # made now, or refused with the reason (it was a traceback once the server had started)
        if args.logs:
            args.logs.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"error: --logs {args.logs}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    config = RuntimeConfig(program_timeout_s=args.timeout, warm_pool=1, error_heuristic=not args.no_error_heuristic,
                           tool_timeout_s=args.tool_timeout, binds=list(args.bind),
                           logs_dir=str(args.logs.resolve()) if args.logs else "")
    try:
        host_binds(config.binds, owned=[config.logs_dir])  # refused now, with the reason, not at the first program
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server = RuntimeServer(specs, args.harness, config, args.workspace).build()
    if args.http is None:
        import anyio
        from mcp.server.stdio import stdio_server

        async def main() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        try:
            anyio.run(main, backend_options={"use_uvloop": True})
        except BaseException as exc:  # a tool server that cannot start ends the server: said in one line
            failed = _start_error(exc)
            if failed is None:
                raise
            print(f"error: {failed}", file=sys.stderr)
            return 1
    else:
        import uvicorn
        from mcp.server.auth.settings import AuthSettings

        try:
            token, source = bearer_token(args.token_file)
        except (ValueError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        url = f"http://127.0.0.1:{args.http}/mcp"
        shown = f": {token}" if source == "generated" else f" from {source}"
        print(f"progagent mcp: serving {url}; every request needs 'Authorization: Bearer TOKEN', token{shown}",
              file=sys.stderr, flush=True)
        app = server.streamable_http_app(
            auth=AuthSettings(issuer_url=f"http://127.0.0.1:{args.http}", resource_server_url=None),
            token_verifier=BearerToken(token))
        uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")
    return 0
