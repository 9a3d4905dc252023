"""The `programmatic_tool_call` tool: its name, schema and the description a model reads.

Shared by the runtime's MCP server and the PTC/Hybrid harnesses, so the model sees the same words
whichever way the runtime is reached.
"""

from __future__ import annotations

import json
from typing import Any

NAME = "programmatic_tool_call"

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "Python source to run in the persistent kernel."}},
    "required": ["code"],
}

PREAMBLE = """\
Run a Python program in a persistent, sandboxed IPython kernel and return what it prints.

- Call tools from code: `result = tools["tool_name"](arg=value)`. A call returns a native Python
  value: the server's structured result when it declares one (its shape follows `->` below), else
  its text parsed as JSON (dict, list, number), else the text as a string. A failed call (the server
  says so, or its whole reply is a failure report such as "Error: ..." or "... not found: ...")
  raises `ToolError` with the server's message; catch it with `try/except ToolError as e:`.
- Variables, imports and functions persist across calls: fetch once, reuse later.
- Only what you print comes back to you (cut after {max_chars:,} characters). Print short summaries,
  not raw data. The value of the last expression is not shown.
- Inspect one result (its keys, one item) before writing a loop over many; list results are paged.
- `tools.help()` lists every tool; `help(tools["name"])` shows one tool's schema.
- Files: the working directory /workspace is yours. There is no network. Each program may run for at
  most {timeout:g} s; a program that exceeds it is interrupted.
"""


def signature(tool: dict[str, Any]) -> str:
    schema = tool.get("input_schema") or {}
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    args = []
    for name, prop in props.items():
        typ = prop.get("type")
        if typ is None and "anyOf" in prop:
            typ = "|".join(str(a.get("type")) for a in prop["anyOf"] if isinstance(a, dict))
        args.append(f"{name}: {typ or 'any'}" + ("" if name in required else f" = {json.dumps(prop.get('default'))}"))
    return f'tools["{tool["name"]}"]({", ".join(args)})'


def shape(schema: Any, depth: int = 0) -> str:
    """A JSON schema as a short type: {id: integer, tags: list[string]}, list[{...}], string|null."""
    if not isinstance(schema, dict):
        return "any"
    if depth > 3:
        return "..."
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return "|".join(dict.fromkeys(shape(s, depth) for s in schema[key])) or "any"
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        return f"list[{shape(schema.get('items') or {}, depth + 1)}]"
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if not props:
            return "dict"
        shown = [f"{k}: {shape(v, depth + 1)}" for k, v in list(props.items())[:8]]
        return "{" + ", ".join(shown + (["..."] if len(props) > 8 else [])) + "}"
    return str(kind) if kind else ("object" if "$ref" in schema else "any")


def returns(tool: dict[str, Any]) -> str:
    """` -> shape` of a tool's declared output (a `{"result": x}` wrapper shows as x, as it is returned)."""
    schema = tool.get("output_schema")
    if not isinstance(schema, dict):
        return ""
    props = schema.get("properties") or {}
    if set(props) == {"result"}:
        schema = props["result"]
    return f" -> {shape(schema)}"


def description(catalogue: list[dict[str, Any]], max_chars: int = 50_000, timeout_s: float = 120) -> str:
    """The tool description: how the runtime behaves, then every available tool."""
    lines = [PREAMBLE.format(max_chars=max_chars, timeout=timeout_s), "Available tools:"]
    for tool in catalogue:
        desc = " ".join((tool.get("description") or "").split())
        lines.append(f"- {signature(tool)}{returns(tool)}: {desc}")
    return "\n".join(lines)
