"""The HTTP client to an upstream MCP server (streamable HTTP or SSE), with a bound on what the host buffers.

The SDK's clients bound an SSE event (1 MiB), but read a JSON reply body whole, however long, then
parse it: a program that asks an HTTP server for a 200 MB file or every row of a table costs the
host all of it, several times over. Programs choose what servers return, so every response body
that is not an event stream goes through `CappedStream`: past MAX_BODY_BYTES (the stdio transport's
line limit) the read fails, and a complete body of more values than a host should parse
(`untrusted_json`) fails before the SDK parses it. The SDK turns either failure into that request's
JSON-RPC error (`_handle_json_response`), so the call is the program's ToolError and the
connection serves the next call.

Compressed bodies are refused rather than decoded (a few MiB of gzip can expand to gigabytes, past
any bound on what was read): the client asks for `identity`, and a body that comes encoded anyway
fails unread. Timeouts are the SDK's (`create_mcp_http_client`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

from envs.runtime.stdio_transport import MAX_LINE_BYTES
from envs.runtime.untrusted_json import too_many_values

#: the most of one response body the host reads (a stdio server's line: the same reply either way)
MAX_BODY_BYTES = MAX_LINE_BYTES


class CappedStream(httpx2.AsyncByteStream):
    """A response body read up to `limit` bytes; a JSON one also counted (`untrusted_json`) at its end."""

    def __init__(self, inner: Any, limit: int = MAX_BODY_BYTES, count_values: bool = True,
                 refused: str | None = None):
        self.inner, self.limit, self.count_values, self.refused = inner, limit, count_values, refused

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.refused is not None:
            raise httpx2.StreamError(self.refused)
        got, body = 0, bytearray()
        async for chunk in self.inner:
            got += len(chunk)
            if got > self.limit:
                raise httpx2.StreamError(f"the server's reply was {got:,} bytes or more; replies up to "
                                         f"{self.limit:,} bytes reach the host (ask for less: a page, a range)")
            if self.count_values:
                body += chunk
            else:
                yield chunk
        if self.count_values:
            why = too_many_values(body)
            if why is not None:
                raise httpx2.StreamError(why)
            yield body  # bytes-like: the reader joins it without another copy

    async def aclose(self) -> None:
        await self.inner.aclose()


class CappedTransport(httpx2.AsyncBaseTransport):
    """Every response but an event stream read through CappedStream (module docstring)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport | None = None):
        self.inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        kind = response.headers.get("content-type", "").lower()
        if kind.startswith("text/event-stream"):  # long-lived; the SDK bounds each event
            return response
        headers = response.headers.copy()
        encoding = headers.pop("content-encoding", "identity").strip().lower()
        refused = None if encoding in ("", "identity") else (
            f"the server's reply is compressed ({encoding}); this client reads uncompressed replies only")
        return httpx2.Response(response.status_code, headers=headers, request=request,
                               extensions=response.extensions,
                               stream=CappedStream(response.stream, count_values=kind.startswith("application/json"),
                                                   refused=refused))

    async def aclose(self) -> None:
        await self.inner.aclose()


def capped_http_client(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
                       auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
    """`create_mcp_http_client` (its signature, so the SSE client can use it as its factory) with
    CappedTransport and uncompressed replies."""
    return httpx2.AsyncClient(headers={**(headers or {}), "Accept-Encoding": "identity"}, auth=auth,
                              timeout=timeout or httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
                              transport=CappedTransport())
