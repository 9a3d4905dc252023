"""The `openai` backend: any OpenAI-compatible chat endpoint, text in and text out.

For teacher trajectories and for evaluating API models — never for RL updates (it has no token ids
of its own; the agent loop tokenises its replies with the project tokenizer, with zero log-probs).

The agent loop keeps the conversation in the Hermes format (assistant text with <tool_call> blocks,
tool responses as `tool` messages); this backend converts it to the API's structured form
(`tool_calls` with ids, `tool` messages answering them) and converts the reply back to Hermes text.
The provider's own assistant message travels with the reply (Generation.api_message) and is sent
back verbatim in the next request — its content, its tool-call ids, its reasoning — never re-derived
from the text: a provider (or a proxy that records the conversation as a message graph, as
verifiers' interception does) then sees each request extend the last one, and every call id it
issued is answered by a `tool` message.
"""

from __future__ import annotations

import json
import os
from typing import Any, cast

from rollout.generators.base import GeneratorError
from rollout.parser import call_blocks, decode_json
from schema.records import Generation, Prompt, SamplingParams

#: the fields of a provider's assistant message that are sent back (the rest is response metadata)
ECHOED_FIELDS = ("role", "content", "tool_calls", "reasoning_content", "reasoning", "reasoning_details")


def to_api_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: list[str] = []  # ids of the last assistant turn's calls, answered in order
    notes: list[str] = []
    n = 0

    def close_turn() -> None:
        # every call id the assistant turn issued gets a tool message (an API refuses a request
        # with one unanswered), then what the runtime had to say beyond the calls' results
        while pending:
            answer = notes.pop(0) if notes else "Error: this call was not run (one call per turn is run)."
            out.append({"role": "tool", "tool_call_id": pending.pop(0), "content": answer})
        if notes:
            out.append({"role": "user", "content": "Tool runtime notes:\n" + "\n".join(notes)})
            notes.clear()

    for m in messages:
        if m["role"] == "assistant":
            close_turn()
            if m.get("api_message"):  # the provider's own message: verbatim
                msg = dict(m["api_message"])
                pending = [c["id"] for c in msg.get("tool_calls") or []]
                out.append(msg)
                continue
            text = m.get("content") or ""
            calls: list[dict[str, Any]] = []
            blocks, content = call_blocks(text)
            for block in blocks:
                try:
                    obj = decode_json(block)
                    name, args = obj["name"], obj.get("arguments", {})
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue
                n += 1
                calls.append({"id": f"call_{n}", "type": "function",
                              "function": {"name": name, "arguments": json.dumps(args)}})
            msg = {"role": "assistant", "content": content.strip() or None}
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
            pending = [c["id"] for c in calls]
        elif m["role"] == "tool":
            if pending:
                out.append({"role": "tool", "tool_call_id": pending.pop(0), "content": m["content"]})
            else:
                notes.append(m["content"])
        else:
            close_turn()
            out.append({"role": m["role"], "content": m["content"]})
    close_turn()
    return out


def echoed(message: Any) -> dict[str, Any]:
    """The provider's assistant message as it is sent back (ECHOED_FIELDS, None fields left out)."""
    raw = message.model_dump(exclude_none=True) if hasattr(message, "model_dump") else dict(message)
    return {k: raw[k] for k in ECHOED_FIELDS if k in raw}


def to_hermes_text(message: Any) -> str:
    """An API assistant message (content + tool_calls) as the text our parser reads."""
    parts = [message.content.strip()] if getattr(message, "content", None) else []
    for call in getattr(message, "tool_calls", None) or []:
        try:
            args = json.loads(call.function.arguments or "{}")
        except ValueError:
            args = call.function.arguments  # kept verbatim: the parser reports it as invalid
        parts.append("<tool_call>\n" + json.dumps({"name": call.function.name, "arguments": args}) + "\n</tool_call>")
    return "\n".join(parts)


class OpenAIGenerator:
    """A chat-API model as a generator: `prompt.messages` and `prompt.tools` to an OpenAI-compatible
    endpoint, its reply (content and tool calls, as Hermes text) tokenised with `tokenizer` (the
    project tokenizer when None: what the env workers render with), zero log-probs."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, client: Any = None,
                 max_retries: int = 3, timeout_s: float = 300.0, api_key_env: str = "OPENAI_API_KEY",
                 tokenizer: Any = None):
        from openai import AsyncOpenAI

        self.model = model
        self.tokenizer = tokenizer
        self.api_key_env = api_key_env
        self.client = client or AsyncOpenAI(base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                                            api_key=api_key or os.environ.get(api_key_env) or "EMPTY",
                                            max_retries=max_retries, timeout=timeout_s)
        self.policy_version = 0
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0}

    async def generate_chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                            sampling: SamplingParams) -> tuple[str, str, dict[str, Any]]:
        """Returns (Hermes-format reply text, finish reason "stop" | "length", the provider's message
        as it is echoed)."""
        try:
            resp = await self.client.chat.completions.create(
                # the SDK types these as its TypedDicts; ours are the same JSON shapes, built as dicts
                model=self.model, messages=cast(Any, to_api_messages(messages)), tools=cast(Any, tools or None),
                temperature=sampling.temperature, top_p=sampling.top_p, max_tokens=sampling.max_new_tokens,
                seed=sampling.seed)
            choice = resp.choices[0]
            text = to_hermes_text(choice.message)
            message = echoed(choice.message)
        except Exception as exc:  # noqa: BLE001
            raise GeneratorError(self._explain(exc)) from exc
        if resp.usage is not None:
            self.usage["prompt_tokens"] += resp.usage.prompt_tokens or 0
            self.usage["completion_tokens"] += resp.usage.completion_tokens or 0
        self.usage["requests"] += 1
        return text, ("length" if choice.finish_reason == "length" else "stop"), message

    def _explain(self, exc: Exception) -> str:
        """What failed and what to check: the episode only records `generator_error`, so this text
        (in the pool's stats and the sweep's warnings) is all the user sees."""
        import openai

        where = f"OpenAI-compatible endpoint {self.client.base_url} (model {self.model!r})"
        if isinstance(exc, openai.APIStatusError):
            detail = (exc.body if isinstance(exc.body, dict) else {}).get("message") or exc.message
            return f"{where}: HTTP {exc.status_code} ({detail}); {self._hint(exc.status_code)}"
        if isinstance(exc, openai.APIConnectionError):
            return f"{where}: no reply ({exc}); is the server up and base_url right?"
        return (f"{where}: the reply is not a chat completion ({type(exc).__name__}: {exc}); "
                "is base_url an OpenAI-compatible /v1 endpoint?")

    def _hint(self, code: int) -> str:
        retries = self.client.max_retries
        if code in (401, 403):
            return f"the key was refused: set ${self.api_key_env} where the generators run"
        if code == 404:
            return "check the model name and that base_url ends with /v1"
        if code == 429:
            return f"rate limited after {retries} retries: lower the env workers' concurrency"
        if code >= 500:
            return f"the server failed after {retries} retries: see its logs"
        return "the endpoint rejected the request"

    def _tokenizer(self) -> Any:
        if self.tokenizer is None:
            from rollout.tiny_model import project_tokenizer

            self.tokenizer = project_tokenizer()
        return self.tokenizer

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation:
        """The reply to `prompt.messages`, as the ids the trajectory records: the text's tokens, then the
        end-of-turn token when the model stopped (cut to `max_new_tokens`)."""
        before = dict(self.usage)
        text, finish, message = await self.generate_chat(prompt.messages, prompt.tools, sampling)
        tok = self._tokenizer()
        ids = tok.encode(text, add_special_tokens=False)[: max(0, sampling.max_new_tokens - 1)]
        if finish == "stop":
            ids.append(tok.eos_token_id)
        return Generation(token_ids=ids, logprobs=[0.0] * len(ids), finish_reason=finish,
                          policy_version=self.policy_version, api_message=message,
                          api_prompt_tokens=self.usage["prompt_tokens"] - before["prompt_tokens"],
                          api_completion_tokens=self.usage["completion_tokens"] - before["completion_tokens"])

    async def load_weights(self, version: int, weights: dict[str, Any]) -> None:
        raise GeneratorError("an API model cannot load weights: the openai backend is never used for RL updates")

    async def close(self) -> None:
        await self.client.close()
