"""Chat completions for the LLM stages, over any OpenAI-compatible endpoint (`openai.AsyncOpenAI`).

One client per (base_url, key), shared by the stages that use it. `http_client` replaces only the
HTTP transport (tests replay recorded responses through it; everything above it is the live path).
`ask` sends a request, parses the reply, and on a malformed reply sends the parse error back to
the same model, `retries` times; every reply and its token usage is kept for the stage record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from schema.synth import ModelSpec
from synth.parse import ResponseFormatError
from synth.records import Usage

T = TypeVar("T")


class StageFailed(Exception):
    """A stage that finished without a usable result (kept as its record's error)."""

    def __init__(self, message: str, replies: list[Reply] | None = None):
        super().__init__(message)
        self.replies = replies or []


class Reply(msgspec.Struct):
    text: str
    finish_reason: str
    model: str  # as the endpoint reports it
    usage: Usage


class LLM:
    def __init__(self, http_client: Any = None):
        self.http_client = http_client
        self._clients: dict[tuple[str | None, str, float, int], Any] = {}

    def client(self, spec: ModelSpec) -> Any:
        from openai import AsyncOpenAI

        base_url, key = spec.endpoint()
        k = (base_url, key, spec.timeout_s, spec.max_retries)
        if k not in self._clients:
            self._clients[k] = AsyncOpenAI(base_url=base_url, api_key=key, timeout=spec.timeout_s,
                                           max_retries=spec.max_retries, http_client=self.http_client)
        return self._clients[k]

    async def complete(self, spec: ModelSpec, messages: list[dict[str, Any]]) -> Reply:
        options: dict[str, Any] = {spec.max_tokens_field: spec.max_tokens}
        if spec.temperature is not None:
            options["temperature"] = spec.temperature
        resp = await self.client(spec).chat.completions.create(
            model=spec.model, messages=messages, extra_body=spec.extra_body or None, **options)
        choice = resp.choices[0]
        u = resp.usage
        usage = Usage(u.prompt_tokens or 0, u.completion_tokens or 0, 1) if u is not None else Usage(requests=1)
        return Reply(text=choice.message.content or "", finish_reason=choice.finish_reason or "stop",
                     model=resp.model or spec.model, usage=usage)

    async def ask(self, spec: ModelSpec, messages: list[dict[str, Any]], parse: Callable[[str], T],
                  retries: int = 1) -> tuple[T, list[Reply]]:
        """(parsed reply, every reply). Raises StageFailed when the last reply still cannot be parsed."""
        messages = list(messages)
        replies: list[Reply] = []
        for attempt in range(retries + 1):
            reply = await self.complete(spec, messages)
            replies.append(reply)
            try:
                return parse(reply.text), replies
            except ResponseFormatError as exc:
                cut = " Your reply was cut off at the token limit: be more concise." \
                    if reply.finish_reason == "length" else ""
                error = f"malformed reply: {exc}{cut}"
                if attempt == retries:
                    raise StageFailed(error, replies) from exc
                messages += [{"role": "assistant", "content": reply.text},
                             {"role": "user", "content": f"Your reply could not be used: {exc}{cut} "
                                                         "Send the complete reply again in the required format."}]
        raise AssertionError("unreachable")

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


def total_usage(replies: list[Reply]) -> Usage:
    total = Usage()
    for r in replies:
        total = total.add(r.usage)
    return total
