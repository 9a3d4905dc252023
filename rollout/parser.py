"""Parsing a model turn in the Hermes/Qwen3 format: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.

Strict and forgiving at once: a turn without any tool call is the final answer; everything else that
is not one well-formed call to an offered tool becomes a clear error observation for the model
(never an exception, never a silent drop), and the problem is counted in the turn's errors.

- invalid JSON, a missing/non-string "name", arguments that are not an object, an unclosed block:
  that call is not run; the model is told what was wrong and what a valid call looks like;
- an unknown tool: not run; the error lists the tools that exist;
- missing or unexpected arguments: not run; the error lists the expected arguments;
- more calls than `max_calls` in one turn: the first ones run, the rest are reported as not run;
- text after the last `</tool_call>`: the calls run, the text is ignored and the model is told so.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
EXAMPLE = '<tool_call>\n{"name": "<tool name>", "arguments": {"<argument>": <value>}}\n</tool_call>'


class ParsedCall(msgspec.Struct):
    name: str
    arguments: dict[str, Any]


class ParsedTurn(msgspec.Struct):
    calls: list[ParsedCall]  # calls to run, in order
    errors: list[str]  # one observation per problem, shown to the model
    is_answer: bool  # no tool call at all: the turn is the final answer
    answer: str = ""


def strip_think(text: str) -> str:
    return re.sub(r"<think>.*?</think>", "", text, flags=re.S).strip()


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
    blocks = list(_BLOCK.finditer(body))
    opened = body.count("<tool_call>")
    if not blocks and opened == 0:
        return ParsedTurn(calls=[], errors=[], is_answer=True, answer=body)
    errors: list[str] = []
    calls: list[ParsedCall] = []
    if opened > len(blocks):
        errors.append(f"Error: a <tool_call> block was not closed with </tool_call>; it was not run. Write calls as\n"
                      f"{EXAMPLE}")
    for i, block in enumerate(blocks):
        raw = block.group(1).strip()
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            errors.append(f"Error: tool call {i + 1} is not valid JSON ({exc.msg} at position {exc.pos}); it was not "
                          f"run. Write calls as\n{EXAMPLE}")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            errors.append(f'Error: tool call {i + 1} needs a "name" string and an "arguments" object; it was not '
                          f"run. Write calls as\n{EXAMPLE}")
            continue
        name, args = obj["name"], obj.get("arguments", {})
        if isinstance(args, str):  # some models JSON-encode the arguments twice
            try:
                args = json.loads(args)
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
    tail = body[blocks[-1].end():].strip() if blocks else ""
    if tail and calls:
        errors.append("Note: text after </tool_call> is ignored; end your turn with the tool call and put the final "
                      "answer in a turn without tool calls.")
    return ParsedTurn(calls=calls, errors=errors, is_answer=False)
