"""Parsing a model turn in the Hermes/Qwen3 format: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.

Strict and forgiving at once: a turn without any tool call is the final answer; everything else that
is not one well-formed call to an offered tool becomes a clear error observation for the model
(never an exception, never a silent drop), and the problem is counted in the turn's errors.

- invalid JSON, a missing/non-string "name", arguments that are not an object, an unclosed block:
  that call is not run; the model is told what was wrong and what a valid call looks like;
- an unknown tool: not run; the error lists the tools that exist;
- missing or unexpected arguments: not run; the error lists the expected arguments;
- more calls than `max_calls` in one turn: the first ones run, the rest are reported as not run;
- text after the last `</tool_call>`: the calls run, the text is ignored and the model is told so;
- JSON nested past MAX_DEPTH levels, or holding a lone surrogate (`"\\ud800"`: a string no
  UTF-8 encoder, tokenizer or record file accepts): that call is not run (a format error), since
  everything after the parser must take what it returns without raising.

The whole parse is linear in the turn's length: blocks are found with `str.find`, never a lazy regular
expression that rescans the rest of the turn from every unclosed tag.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

OPEN, CLOSE = "<tool_call>", "</tool_call>"
#: the deepest tool-call JSON passed on: no tool's arguments need more, and every later step (records,
#: encoders, MCP servers) then takes it without its own recursion limit
MAX_DEPTH = 64
EXAMPLE = '<tool_call>\n{"name": "<tool name>", "arguments": {"<argument>": <value>}}\n</tool_call>'


class ParsedCall(msgspec.Struct):
    name: str
    arguments: dict[str, Any]


class ParsedTurn(msgspec.Struct):
    calls: list[ParsedCall]  # calls to run, in order
    errors: list[str]  # one observation per problem, shown to the model
    is_answer: bool  # no tool call at all: the turn is the final answer
    answer: str = ""


def _spans(text: str, start: str, end: str) -> list[tuple[int, int]]:
    """The (inner start, inner end) of each `start … end` block, leftmost first, non-overlapping, as the
    lazy `start(.*?)end` would match them; one pass over `text` (an unclosed `start` ends the search:
    no later one can close either)."""
    spans, pos = [], 0
    while (i := text.find(start, pos)) >= 0:
        j = text.find(end, i + len(start))
        if j < 0:
            break
        spans.append((i + len(start), j))
        pos = j + len(end)
    return spans


def _without(text: str, start: str, end: str) -> str:
    kept, pos = [], 0
    for a, b in _spans(text, start, end):
        kept.append(text[pos:a - len(start)])
        pos = b + len(end)
    kept.append(text[pos:])
    return "".join(kept)


def strip_think(text: str) -> str:
    """`text` without its `<think>…</think>` blocks."""
    return _without(text, "<think>", "</think>").strip()


def call_blocks(text: str) -> tuple[list[str], str]:
    """The inner text of each closed `<tool_call>` block of `text`, and `text` without those blocks
    (what a chat API's message carries beside its calls)."""
    return [text[a:b] for a, b in _spans(text, OPEN, CLOSE)], _without(text, OPEN, CLOSE)


def _problem(value: Any) -> str | None:
    """What makes a decoded JSON value unfit to pass on, or None: a string (keys included) that does not
    encode as UTF-8 (a lone surrogate), or nesting past MAX_DEPTH. An explicit stack, so a value as deep
    as the decoder allowed never recurses here."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return "a string holds a lone surrogate escape (not valid Unicode)"
        elif depth >= MAX_DEPTH and isinstance(v, dict | list):
            return f"nested deeper than {MAX_DEPTH} levels"
        elif isinstance(v, dict):
            stack.extend((k, depth + 1) for k in v)
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)
    return None


def decode_json(raw: str) -> Any:
    """`raw` as JSON; ValueError for what is not, for what nests past the decoder's recursion or
    MAX_DEPTH, and for a string holding a lone surrogate (module docstring)."""
    try:
        obj = json.loads(raw)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    problem = _problem(obj)
    if problem:
        raise ValueError(problem)
    return obj


def _schema_problem(name: str, args: dict[str, Any], schema: dict[str, Any]) -> str | None:
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    missing = [r for r in required if r not in args]
    unknown = [a for a in args if props and a not in props]
    if not missing and not unknown:
        return None
    bits = []
    if missing:
        bits.append(f"missing required argument(s) {', '.join(missing)}")
    if unknown:
        bits.append(f"unknown argument(s) {', '.join(unknown)}")
    expected = ", ".join(f"{k}{'' if k in required else ' (optional)'}" for k in props) or "none"
    return f"Error: tool call to {name!r} not run: {'; '.join(bits)}. Expected arguments: {expected}."


def parse_turn(text: str, tools: dict[str, dict[str, Any]], max_calls: int = 1) -> ParsedTurn:
    """`tools` maps the offered tool names to their JSON schemas."""
    body = strip_think(text)
    blocks = _spans(body, OPEN, CLOSE)
    opened = body.count(OPEN)
    if not blocks and opened == 0:
        return ParsedTurn(calls=[], errors=[], is_answer=True, answer=body)
    errors: list[str] = []
    calls: list[ParsedCall] = []
    if opened > len(blocks):
        errors.append(f"Error: a <tool_call> block was not closed with </tool_call>; it was not run. Write calls as\n"
                      f"{EXAMPLE}")
    for i, (a, b) in enumerate(blocks):
        try:
            obj = decode_json(body[a:b].strip())
        except ValueError as exc:
            why = f"{exc.msg} at position {exc.pos}" if isinstance(exc, json.JSONDecodeError) else str(exc)
            errors.append(f"Error: tool call {i + 1} is not valid JSON ({why}); it was not run. Write calls as\n"
                          f"{EXAMPLE}")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            errors.append(f'Error: tool call {i + 1} needs a "name" string and an "arguments" object; it was not '
                          f"run. Write calls as\n{EXAMPLE}")
            continue
        name, args = obj["name"], obj.get("arguments", {})
        if isinstance(args, str):  # some models JSON-encode the arguments twice
            try:
                args = decode_json(args)
            except ValueError:
                pass
        if not isinstance(args, dict):
            errors.append(f'Error: the "arguments" of tool call {i + 1} ({name!r}) must be a JSON object; it was not run.')
            continue
        if name not in tools:
            errors.append(f"Error: unknown tool {name!r}; it was not run. Available tools: {', '.join(tools)}.")
            continue
        problem = _schema_problem(name, args, tools[name])
        if problem:
            errors.append(problem)
            continue
        if len(calls) >= max_calls:
            errors.append(f"Error: only {max_calls} tool call(s) per turn are run; call {i + 1} ({name!r}) was not "
                          f"run. Make one call per turn.")
            continue
        calls.append(ParsedCall(name=name, arguments=args))
    tail = body[blocks[-1][1] + len(CLOSE):].strip() if blocks else ""
    if tail and calls:
        errors.append("Note: text after </tool_call> is ignored; end your turn with the tool call and put the final "
                      "answer in a turn without tool calls.")
    return ParsedTurn(calls=calls, errors=errors, is_answer=False)
