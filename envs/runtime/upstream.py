"""Upstream MCP tool servers of an episode, and how their results become Python values.

`Upstreams` is the router behind both interfaces: programs in the kernel (PTC) reach it through
the bridge socket, direct calls (DTC) call it from the host. Every call is logged
(`ToolCallRecord`) so metrics and the DTC-vs-PTC context comparison can be computed afterwards.

Conversion of a result (`to_native`): structured content first (unwrapping the SDK's
`{"result": value}` wrapper for non-object returns), else the text parsed as JSON, else the text.

Non-compliant servers (`looks_like_error`): some servers report failure only in text and never set
`isError`. With the heuristic on (the default) a result whose text starts like an error report
("Error: ...", "ERR - ...", "Traceback (most recent call last)", "Error executing tool ...",
"Failed to ... not found", "Could not ... missing", "Permission denied"; a one-line reply of the
"Email not found: x" family), or whose text is a JSON
object carrying an `error`/`errors` entry, `"isError": true`, `"success"/"ok": false` or
`"status": "error"`, raises ToolError like an `isError` result would. Only text is judged so: a
text result, or a string a server wrapped as `{"result": ...}`; a structured object result that the
server declared (an output schema: a file's `{"content": ...}`) is never second-guessed. Ordinary text that merely
mentions errors ("Error count: 0" is caught only with a colon after "Error") may be misread; switch
the heuristic off with `RuntimeConfig.error_heuristic = False` (`--no-error-heuristic`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
from mcp import ClientSession, StdioServerParameters

from envs.runtime import untrusted_fs
from envs.runtime.stdio_transport import StderrTail, capped_stdio_client
from envs.runtime.untrusted_text import loggable

log = logging.getLogger(__name__)


class UpstreamSpec(msgspec.Struct, forbid_unknown_fields=True):
    """An MCP tool server: a stdio command (with its own variables on top of the SDK's default
    environment, and a working directory) or an HTTP url (streamable HTTP, or SSE), with headers.
    `timeout_s` and `error_heuristic` override the router's for this server's tools (None: the
    router's). `tools` lets only those of the server's tools through (by the server's own names; None:
    all) and `rename` gives one the name the episode sees (a benchmark's name for it): a task is offered
    exactly its tools, under its names (exposed_tools). Written as `--upstream NAME=...` or in an
    `mcpServers` file (envs/runtime/mcp_config.py)."""

    name: str
    command: list[str] = []
    url: str | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    headers: dict[str, str] | None = None
    transport: str = ""  # "" (stdio with a command, else streamable HTTP) | "sse"
    timeout_s: float | None = None
    error_heuristic: bool | None = None
    tools: list[str] | None = None
    rename: dict[str, str] = {}

    def __post_init__(self) -> None:
        problem = untrusted_fs.server_name_problem(self.name)
        if problem:
            raise ValueError(problem)

    @classmethod
    def parse(cls, text: str) -> UpstreamSpec:
        """`NAME=COMMAND ARGS...` or `NAME=http://host/mcp` (the `--upstream` syntax)."""
        import shlex

        name, sep, rest = text.partition("=")
        if not sep or not name.strip() or not rest.strip():
            raise ValueError(f"--upstream expects NAME=COMMAND or NAME=URL, got {text!r}")
        rest = rest.strip()
        if rest.startswith(("http://", "https://")):
            return cls(name=name.strip(), url=rest)
        return cls(name=name.strip(), command=shlex.split(rest))


def exposed_tools(spec: UpstreamSpec, listed: list[Any]) -> list[tuple[str, Any]]:
    """(the name the episode sees, the server's tool) for each of the server's `listed` tools that
    `spec.tools` lets through, renamed by `spec.rename`, in the server's order. A name in either that the
    server does not list, or two tools under one name, is a ValueError naming them: a task must not run
    with a tool silently missing (a server version that differs from the one its benchmark used)."""
    have = [t.name for t in listed]
    asked = set(spec.tools or ()) | set(spec.rename)
    missing = sorted(asked - set(have))
    if missing:
        raise ValueError(f"server {spec.name!r} has no tool(s) {', '.join(map(repr, missing))} named in its tools or "
                         f"rename (it has: {', '.join(have) or 'none'})")
    out = [(spec.rename.get(t.name, t.name), t) for t in listed if spec.tools is None or t.name in spec.tools]
    names = [n for n, _ in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"server {spec.name!r}: two of its tools would be named {', '.join(map(repr, twice))} "
                         f"(rename)")
    return out


class ToolInfo(msgspec.Struct):
    name: str  # the name programs use (prefixed with the upstream's name only on a clash)
    upstream: str
    remote_name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None


class ToolCallRecord(msgspec.Struct):
    """One tool call, from a program or direct. `result_text` is what DTC would put in context.

    Records are kept for a whole episode (and travel in trajectories), and a program chooses their
    contents: arguments whose JSON is longer than the router's `record_chars` are kept as
    {"_preview": the first record_chars characters of that JSON, "_chars": its length}, and
    `result_text` / `error` are cut to record_chars (`result_chars` stays the full length)."""

    tool: str
    arguments: dict[str, Any]
    source: str  # "program" | "direct"
    ok: bool
    error: str | None
    result_text: str
    result_chars: int
    duration_s: float
    started_at: float


class CallOutcome(msgspec.Struct):
    ok: bool
    value: Any = None
    error: str | None = None
    error_type: str | None = None  # "ToolError" | "UnknownTool" | "BadArguments" | "ServerError"
    text: str = ""  # the raw result as text (what a DTC model sees)


_ERROR_TEXT = re.compile(
    r"^\s*(?:"
    r"(?:error|err|exception|fatal)\s*[:!\-\]]"  # "Error: ...", "ERR: ...", "Exception - ..."
    r"|traceback \(most recent call last\)"
    r"|error executing tool\b"
    r"|(?:unable to|could not|cannot|can't)\b"
    r"|(?:error|failed|failure)\b[^\n]{0,200}?"
    r"\b(?:not|no|invalid|denied|unable|cannot|could not|failed|missing|unknown|exist)\b"
    r"|permission denied\b"
    r")",
    re.IGNORECASE,
)


#: "Email not found: nope", "Course not found: 99999", "User 7 not found": a short reply that is
#: only a lookup failure (mock and CRUD servers answer so without isError)
_NOT_FOUND = re.compile(r"^\s*(?:[\w'.\-]+\s){0,6}not found\b", re.IGNORECASE)


def looks_like_error(text: str) -> bool:
    """Heuristic for servers that report failure in text only (see module docstring)."""
    if not text:
        return False
    if _ERROR_TEXT.match(text[:300]):
        return True
    if len(text) <= 300 and "\n" not in text.strip() and _NOT_FOUND.match(text):
        return True
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError):
            return False
        if isinstance(obj, dict):
            if obj.get("isError") is True or obj.get("is_error") is True:
                return True
            if obj.get("error") or obj.get("errors"):
                return True
            if obj.get("success") is False or obj.get("ok") is False:
                return True
            if str(obj.get("status", "")).lower() in {"error", "failed", "failure"}:
                return True
    return False


_SAYS_ERROR = re.compile(r"^\s*(?:error|err|exception|fatal|traceback)\b", re.IGNORECASE)


def error_text(error: str) -> str:
    """What a DTC model sees for a failed call: the error, marked "Error: " once (a server's own
    "Error: division by zero" is not made "Error: Error: ...")."""
    return error if _SAYS_ERROR.match(error) else f"Error: {error}"


def _is_wrapped(schema: dict[str, Any] | None, structured: Any) -> bool:
    if not isinstance(structured, dict) or set(structured) != {"result"}:
        return False
    if schema is None:
        return True
    props = schema.get("properties") or {}
    return set(props) == {"result"}


def result_text(result: Any) -> str:
    """The text a model sees for a raw MCP result (DTC): text contents joined, else the JSON."""
    parts = []
    for item in result.content or []:
        kind = getattr(item, "type", None)
        if kind == "text":
            parts.append(item.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {getattr(item, 'mime_type', '')}, {len(getattr(item, 'data', '') or '')} b64 chars]")
        elif kind == "resource" or kind == "resource_link":
            parts.append(json.dumps(item.model_dump(mode="json", exclude_none=True)))
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


def to_native(result: Any, info: ToolInfo | None, heuristic: bool) -> CallOutcome:
    text = result_text(result)
    if result.is_error:
        return CallOutcome(ok=False, error=text or "the tool reported an error without a message",
                           error_type="ToolError", text=text)
    structured = result.structured_content
    schema = info.output_schema if info else None
    as_text = structured is None or (_is_wrapped(schema, structured) and isinstance(structured["result"], str))
    if heuristic and as_text and looks_like_error(text):  # a declared object result is never second-guessed
        return CallOutcome(ok=False, error=text.strip(), error_type="ToolError", text=text)
    if result.structured_content is not None:
        value = result.structured_content
        if _is_wrapped(info.output_schema if info else None, value):
            value = value["result"]
        return CallOutcome(ok=True, value=value, text=text)
    texts = [c.text for c in result.content or [] if getattr(c, "type", None) == "text"]
    others = [c.model_dump(mode="json", exclude_none=True) for c in result.content or []
              if getattr(c, "type", None) != "text"]
    values: list[Any] = []
    for t in texts:
        try:
            values.append(json.loads(t))
        except (ValueError, RecursionError):  # not JSON, or nested past the parser: the text itself
            values.append(t)
    if len(values) == 1 and not others:
        return CallOutcome(ok=True, value=values[0], text=text)
    if not others and all(isinstance(v, str) for v in values):
        return CallOutcome(ok=True, value="\n".join(values), text=text)
    return CallOutcome(ok=True, value=values + others, text=text)


class UpstreamStartError(RuntimeError):
    """A tool server that did not start: its message names it, the cause and its stderr's last lines."""


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups: what anyio task groups wrap around it."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def _connection_lost(exc: BaseException) -> bool:
    """The server went away (process died, pipe closed), as opposed to a failing tool."""
    import anyio
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream | EOFError
                  | BrokenPipeError | ConnectionError):
        return True
    error = getattr(exc, "error", None)
    return getattr(error, "code", None) == CONNECTION_CLOSED


#: arguments nested deeper than this are refused before any server sees them
MAX_ARGUMENT_DEPTH = 64
#: arguments holding more values than this (each list, object, string, number... counts one) are
#: refused before any server sees them: a 4 MiB request of nested empty lists is ~140 MB of Python
#: objects in the runtime, and twice that again while the MCP client serializes it
MAX_ARGUMENT_VALUES = 100_000


#: the argument values (as counted by `argument_shape`) that calls of one episode may hold at once while
#: they wait for a call slot or are being served; a call of at most FREE_VALUES values is not counted,
#: so ordinary calls always get through. ~60 bytes a value: 250,000 values is ~15 MB of the runtime
MAX_HELD_VALUES = 250_000
FREE_VALUES = 1_000


def argument_shape(args: Any) -> tuple[str | None, int]:
    """(why `args` cannot go to a tool server as standard JSON or None, how many values they hold).

    A program's arguments decide what a server parses: NaN or Infinity (not JSON), a lone surrogate
    (not UTF-8) or deep nesting crashed a stdio server's connection, for every later call of the
    episode; and what the runtime holds and copies while a call waits and is sent: more than
    MAX_ARGUMENT_VALUES values is refused, and the walk stops as soon as the count passes the limit
    (a refusal costs at most MAX_ARGUMENT_VALUES steps)."""
    stack, seen = [(args, 1)] if isinstance(args, dict | list) else [], 1
    while stack:  # containers only: a scalar's depth is its container's plus one
        value, level = stack.pop()
        children: Any = value.values() if isinstance(value, dict) else value
        if not children:
            continue
        if level >= MAX_ARGUMENT_DEPTH:
            return f"they are nested deeper than {MAX_ARGUMENT_DEPTH} levels", seen
        seen += len(children)  # counted before they are walked: a huge list is refused in one step
        if seen > MAX_ARGUMENT_VALUES:
            return f"they hold more than {MAX_ARGUMENT_VALUES:,} values (send the data in parts, or as text)", seen
        stack.extend((v, level + 1) for v in children if isinstance(v, dict | list))
    try:
        json.dumps(args, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except ValueError as exc:  # NaN / Infinity; UnicodeEncodeError (a lone surrogate) is a ValueError too
        return f"they are not standard JSON ({str(exc)[:120]})", seen
    except (TypeError, RecursionError) as exc:
        return f"they are not JSON ({type(exc).__name__})", seen
    return None, seen


def check_arguments(info: ToolInfo, args: dict[str, Any]) -> str | None:
    """A short, actionable message when arguments obviously do not fit the tool's schema."""
    schema = info.input_schema or {}
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    missing = [r for r in required if r not in args]
    unknown = [a for a in args if props and a not in props and not schema.get("additionalProperties")]
    if not missing and not unknown:
        return None
    expected = ", ".join(f"{k}{'' if k in required else '?'}" for k in props) or "none"
    bits = []
    if missing:
        bits.append(f"missing required argument(s): {', '.join(missing)}")
    if unknown:
        bits.append(f"unknown argument(s): {', '.join(unknown)}")
    return f"bad arguments for tool {info.name!r}: {'; '.join(bits)}. Expected arguments: {expected}"


class Upstream:
    """One connected MCP server. The client session lives in its own task (anyio scopes).

    `limits` (a LimitBackend): a stdio server runs inside fresh sandbox limits at each start (memory,
    processes, file size; its own cgroups where the host has them), released with everything the
    server started when it closes (`memory_bytes`: other than the backend's). For servers whose code is
    not ours to trust (a Harbor task's)."""

    def __init__(self, spec: UpstreamSpec, server_object: Any = None, errlog: Path | None = None,
                 limits: Any = None, memory_bytes: int | None = None):
        self.spec = spec
        self.name = spec.name
        self.server_object = server_object
        self.errlog = errlog
        self.backend = limits
        self.memory_bytes = memory_bytes  # None: the backend's
        self.limits: Any = None  # this start's SandboxLimits
        self.session: ClientSession | None = None
        self.tools: list[Any] = []
        self._task: asyncio.Task | None = None
        self._stop = asyncio.Event()
        self._ready: asyncio.Future | None = None

    async def _take_limits(self) -> None:
        """This start's sandbox limits, when the upstream has a backend and holds none yet."""
        if self.backend is not None and self.limits is None:
            self.limits = await asyncio.to_thread(self.backend.create, f"mcp-{self.name}-{uuid.uuid4().hex[:8]}",
                                                  self.memory_bytes)

    async def start(self, timeout: float = 30.0) -> None:
        await self._take_limits()
        self._stop = asyncio.Event()
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(), name=f"upstream-{self.name}")
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), timeout)
        except Exception:
            await self.close()
            raise

    async def _run(self) -> None:
        tail: StderrTail | None = None
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self.server_object is not None:
                    from mcp.client import Client

                    client = await stack.enter_async_context(Client(self.server_object))
                    session = client.session
                else:
                    if self.spec.url and self.spec.transport == "sse":
                        from mcp.client.sse import sse_client

                        from envs.runtime.http_transport import capped_http_client

                        read, write, *_ = await stack.enter_async_context(
                            sse_client(self.spec.url, headers=self.spec.headers, httpx_client_factory=capped_http_client))
                    elif self.spec.url:
                        from mcp.client.streamable_http import streamable_http_client

                        from envs.runtime.http_transport import capped_http_client

                        # the SDK's client settings, replies bounded (http_transport), this server's headers
                        http = await stack.enter_async_context(capped_http_client(headers=self.spec.headers))
                        read, write, *_ = await stack.enter_async_context(
                            streamable_http_client(self.spec.url, http_client=http))
                    else:
                        if not self.spec.command:
                            raise ValueError(f"upstream {self.name!r} has neither a command nor a url")
                        command = self.limits.wrap(list(self.spec.command)) if self.limits else self.spec.command
                        params = StdioServerParameters(command=command[0], args=command[1:], env=self.spec.env,
                                                       cwd=self.spec.cwd)
                        # never through a link: a log folder a program could reach must not redirect it
                        errlog = stack.enter_context(untrusted_fs.open_log(self.errlog)) if self.errlog else None
                        tail = StderrTail(errlog)
                        read, write = await stack.enter_async_context(capped_stdio_client(params, tail=tail))
                    session = await stack.enter_async_context(ClientSession(read, write))
                    await session.initialize()
                listed = await session.list_tools()
                self.tools = list(listed.tools)
                self.session = session
                if not self._ready.done():
                    self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to the waiter, the task just ends
            if self._ready is not None and not self._ready.done() and isinstance(exc, asyncio.CancelledError):
                self._ready.cancel()  # closed while starting: nothing failed
            elif self._ready is not None and not self._ready.done():
                cause = _leaf(exc)
                said = tail.text() if tail is not None else ""
                where = f"; its log: {self.errlog}" if self.errlog else ""
                self._ready.set_exception(UpstreamStartError(
                    f"upstream MCP server {self.name!r} failed to start: {type(cause).__name__}: {cause}{where}"
                    + (f"\n--- the server's stderr, last lines ---\n{said}" if said else "")))
            elif not isinstance(exc, asyncio.CancelledError):
                log.info("upstream %s ended: %s", self.name, loggable(repr(exc)))
        finally:
            self.session = None

    @property
    def alive(self) -> bool:
        return self.session is not None and self._task is not None and not self._task.done()

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            except TimeoutError:
                self._task.cancel()
                with contextlib.suppress(BaseException):
                    await self._task
            except BaseException:  # noqa: BLE001
                pass
        self.session = None
        limits, self.limits = self.limits, None
        if limits is not None:  # whatever the server started ends with it
            await asyncio.to_thread(limits.release)


class Upstreams:
    """The tool router of one episode: name resolution, calls, conversion, the call log."""

    def __init__(self, upstreams: Sequence[Upstream], *, heuristic: bool = True, call_timeout_s: float = 60.0,
                 max_in_flight: int = 8, record_chars: int = 65_536, max_records: int = 20_000):
        self.upstreams = {u.name: u for u in upstreams}
        self.record_chars = record_chars
        self.max_records = max_records  # later calls are counted in `unrecorded`, not kept
        self.unrecorded = 0
        self.heuristic = heuristic
        self.call_timeout_s = call_timeout_s
        # an episode's calls beyond this wait here, holding no thread: in-process servers run sync tools
        # on the process's shared worker threads (anyio's 40), which one episode must not fill
        self._in_flight = asyncio.Semaphore(max_in_flight)
        self._held_values = 0  # of the calls waiting or being served (MAX_HELD_VALUES)
        self.catalogue: dict[str, ToolInfo] = {}
        self.log: list[ToolCallRecord] = []
        self._restarts: dict[str, asyncio.Task] = {}

    async def start(self) -> None:
        await asyncio.gather(*(u.start() for u in self.upstreams.values()))
        self._build_catalogue()

    def _build_catalogue(self) -> None:
        """Every server's exposed tools (exposed_tools: its allow-list and renames), under their names;
        a name two servers expose is prefixed with each server's name."""
        exposed = {u.name: exposed_tools(u.spec, u.tools) for u in self.upstreams.values()}
        counts: dict[str, int] = {}
        for tools in exposed.values():
            for shown, _ in tools:
                counts[shown] = counts.get(shown, 0) + 1
        catalogue = {}
        for u in self.upstreams.values():
            for shown, t in exposed[u.name]:
                name = shown if counts[shown] == 1 else f"{u.name}__{shown}"
                catalogue[name] = ToolInfo(name=name, upstream=u.name, remote_name=t.name,
                                           description=t.description or "", input_schema=t.input_schema or {},
                                           output_schema=t.output_schema)
        self.catalogue = catalogue

    def describe(self) -> list[dict[str, Any]]:
        return [{"name": i.name, "description": i.description, "input_schema": i.input_schema,
                 "output_schema": i.output_schema} for i in self.catalogue.values()]

    def mcp_tools(self) -> list[Any]:
        """The catalogue as MCP `Tool` objects under their episode names (for DTC exposure)."""
        from mcp.types import Tool

        return [Tool(name=i.name, description=i.description, input_schema=i.input_schema,
                     output_schema=i.output_schema) for i in self.catalogue.values()]

    async def call_raw(self, name: str, arguments: dict[str, Any]) -> tuple[ToolInfo, Any]:
        """Call by episode name and return the raw MCP result (raises KeyError/RuntimeError)."""
        info = self.catalogue[name]
        upstream = self.upstreams[info.upstream]
        if not upstream.alive:
            await self._restart(upstream)
        assert upstream.session is not None
        async with asyncio.timeout(self.timeout_for(upstream)):  # no task per call, as wait_for makes
            result = await upstream.session.call_tool(info.remote_name, arguments)
        return info, result

    async def call(self, name: str, arguments: Any, source: str = "program") -> CallOutcome:
        """A call by episode name under the one rule (module docstring), logged."""
        return (await self.call_logged(name, arguments, source))[0]

    async def call_logged(self, name: str, arguments: Any, source: str = "program") -> tuple[CallOutcome, Any]:
        """`call`, and the server's raw MCP result (None when it gave none: a refused or failed call).
        DTC over MCP passes the raw result on; every path logs and judges the call the same way."""
        t0, started = time.perf_counter(), time.time()
        try:
            refused, values = self._refusal(name, arguments)
            held = values if values > FREE_VALUES else 0
            if refused is None and self._held_values + held > MAX_HELD_VALUES:
                refused = CallOutcome(ok=False, error_type="ToolError", error=(
                    f"too many large tool calls waiting at once (their arguments hold {self._held_values:,} "
                    f"values; the limit is {MAX_HELD_VALUES:,}); retry when some have returned"))
            if refused is not None:  # before waiting for a call slot: a refused call holds nothing there
                raw, outcome = None, refused
            else:
                self._held_values += held
                try:
                    async with self._in_flight:
                        raw, outcome = await self._call(name, arguments)
                finally:
                    self._held_values -= held
        except asyncio.CancelledError:  # its program was interrupted: on the record, then cancelled
            outcome, raw = CallOutcome(ok=False, error_type="ServerError",
                                       error="cancelled: the program that made the call was interrupted"), None
            self._record(name, arguments, source, outcome, t0, started)
            raise
        self._record(name, arguments, source, outcome, t0, started)
        return outcome, raw

    def _record(self, name: Any, arguments: Any, source: str, outcome: CallOutcome, t0: float, started: float) -> None:
        if len(self.log) >= self.max_records:
            self.unrecorded += 1
            return
        cap = self.record_chars
        text = outcome.text if outcome.ok else (outcome.text or outcome.error or "")
        self.log.append(ToolCallRecord(
            tool=str(name)[:200], arguments=self._recorded_arguments(arguments), source=source, ok=outcome.ok,
            error=outcome.error[:cap] if outcome.error else outcome.error, result_text=text[:cap],
            result_chars=len(text), duration_s=time.perf_counter() - t0, started_at=started))

    def _recorded_arguments(self, arguments: Any) -> dict[str, Any]:
        if not isinstance(arguments, dict):
            return {"_invalid": repr(arguments)[: self.record_chars]}
        try:
            encoded = json.dumps(arguments, default=str)
        except (TypeError, ValueError):
            encoded = repr(arguments)
        if len(encoded) <= self.record_chars:
            return arguments
        return {"_preview": encoded[: self.record_chars], "_chars": len(encoded)}

    def _refusal(self, name: str, arguments: Any) -> tuple[CallOutcome | None, int]:
        """(why the call goes to no server, or None; the values its arguments hold). Refused: an unknown
        tool, arguments that are not an object, do not fit the schema or cannot be sent."""
        if name not in self.catalogue:
            return CallOutcome(ok=False, error_type="UnknownTool", error=(
                f"unknown tool {name!r}; available tools: {', '.join(sorted(self.catalogue))}")), 0
        info = self.catalogue[name]
        if not isinstance(arguments, dict):
            return CallOutcome(ok=False, error_type="BadArguments",
                               error=f"arguments for tool {name!r} must be an object of named arguments"), 0
        problem = check_arguments(info, arguments)
        if problem:
            return CallOutcome(ok=False, error_type="BadArguments", error=problem), 0
        why, values = argument_shape(arguments)
        if why:
            return CallOutcome(ok=False, error_type="BadArguments",
                               error=f"arguments for tool {name!r} cannot be sent: {why}"), values
        return None, values

    async def _call(self, name: str, arguments: Any) -> tuple[Any, CallOutcome]:
        """(the raw MCP result or None, the outcome under the one rule) of a call `_refusal` let through."""
        info = self.catalogue[name]
        try:
            _, result = await self.call_raw(name, arguments)
        except TimeoutError:
            return None, CallOutcome(ok=False, error_type="ServerError",
                               error=f"tool {name!r} did not answer within "
                                     f"{self.timeout_for(self.upstreams[info.upstream]):g} s")
        except Exception as exc:  # noqa: BLE001 - a broken server becomes an error the model can act on
            upstream = self.upstreams[info.upstream]
            message = getattr(getattr(exc, "error", None), "message", None) or str(exc) or type(exc).__name__
            if _connection_lost(exc) or not upstream.alive:
                self._schedule_restart(upstream)
                return None, CallOutcome(ok=False, error_type="ServerError",
                                   error=f"tool server {upstream.name!r} stopped during the call to {name!r} "
                                         f"({message}); it is being restarted — retry if the call is safe to repeat")
            return None, CallOutcome(ok=False, error_type="ToolError", error=f"{name}: {message}")
        spec = self.upstreams[info.upstream].spec
        return result, to_native(result, info, self.heuristic if spec.error_heuristic is None
                                 else spec.error_heuristic)

    def timeout_for(self, upstream: Upstream) -> float:
        """A call's deadline: the server's own `timeout_s`, else the router's."""
        return upstream.spec.timeout_s if upstream.spec.timeout_s is not None else self.call_timeout_s

    def _schedule_restart(self, upstream: Upstream) -> None:
        if upstream.name not in self._restarts or self._restarts[upstream.name].done():
            self._restarts[upstream.name] = asyncio.create_task(self._restart(upstream))

    async def _restart(self, upstream: Upstream) -> None:
        pending = self._restarts.get(upstream.name)
        if pending is not None and not pending.done() and pending is not asyncio.current_task():
            await pending
            return
        log.warning("restarting upstream MCP server %s", upstream.name)
        await upstream.close()
        try:
            await upstream.start()
        except Exception as exc:  # noqa: BLE001 - the next call finds it down and says so
            log.warning("upstream MCP server %s could not be restarted: %s", upstream.name, loggable(exc))

    async def close(self) -> None:
        for task in self._restarts.values():
            task.cancel()
        await asyncio.gather(*(u.close() for u in self.upstreams.values()), return_exceptions=True)
