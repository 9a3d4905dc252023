"""A task's tools.py run behind a pipe: the sandboxed half of the "sandboxed" task-server transport.

    python -m envs.format.tool_host --task /task/<id> --root /env      (inside bubblewrap, envs/format/task_env.py)

The MCP server of a model-written task must not run its tools.py in the runtime's process, and a
whole MCP server inside the sandbox costs a process that imports the MCP SDK (1-2 s of CPU per
episode, most of a synthesis check). So the sandbox holds only this host: the task's modules, its
`Env` and the standard library (plus pydantic_core, to turn results into JSON as the SDK does).
The MCP server stays outside (`envs.format.hosted_tools.HostedTaskTools`): it is built from the signatures
this host describes and forwards every call here.

Protocol: one JSON object per line. The host first writes {"task", "title", "tools": [...]} (name, description, the
parameters after `env` and the return annotation as type expressions, `describe_type`), or
{"unsupported": reason} when a signature uses a type outside that grammar (the runtime then serves
the task with the SDK server inside the sandbox, envs/format/task_server.py). Then, per request
{"id", "tool", "args"}: {"id", "ok": true, "result"} or {"id", "ok": false, "error"}, committed or
rolled back by `envs.taskkit.call_tool`, as in envs/format/task_server.py. Whatever the tools print goes to stderr. EOF on stdin ends it.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal

_NAMES: dict[str, Any] = {"int": int, "float": float, "str": str, "bool": bool, "none": type(None), "any": Any,
                          "list": list, "dict": dict}
_GENERIC = {list: "list", dict: "dict"}
_EMPTY = "empty"  # no annotation: the SDK gives such a parameter its own schema


class Unsupported(ValueError):
    """A signature this protocol cannot describe exactly."""


def describe_type(t: Any) -> Any:
    """A JSON expression for the annotation `t`: JSON scalars, list/dict (bare or parametrised),
    unions (`X | None`, Optional) and Literal of scalars; anything else raises Unsupported. Tuples
    and sets are out: through JSON a tool would get a list where the in-process server passes a tuple."""
    if t is inspect.Parameter.empty:
        return _EMPTY
    for name, value in _NAMES.items():
        if t is value or (name == "none" and t is None):
            return name
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in _GENERIC and args:
        return {_GENERIC[origin]: [describe_type(a) for a in args]}
    if origin in (typing.Union, types.UnionType):
        return {"union": [describe_type(a) for a in args]}
    if origin is Literal and all(a is None or type(a) in (str, int, bool) for a in args):
        return {"literal": list(args)}
    raise Unsupported(f"type {t!r}")


def build_type(expr: Any) -> Any:
    """The annotation `describe_type` described (the runtime's side)."""
    if expr == _EMPTY:
        return inspect.Parameter.empty
    if isinstance(expr, str):
        return _NAMES[expr]
    (kind, args), = expr.items()
    if kind == "literal":
        return Literal[tuple(args)]
    built = tuple(build_type(a) for a in args)
    if kind == "union":
        return typing.Union[built]  # noqa: UP007 - the args are only known at run time
    return _NAMES[kind][built if len(built) > 1 else built[0]]


def _exact_json(value: Any) -> bool:
    """A default that comes back from JSON as the same value of the same types."""
    try:
        back = json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return False

    def same(a: Any, b: Any) -> bool:
        if type(a) is not type(b):
            return False
        if isinstance(a, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        return a == b or a != a  # NaN

    return same(value, back)


def describe_tool(name: str, fn: Any) -> dict[str, Any]:
    hints = typing.get_type_hints(fn)
    params = []
    for p in list(inspect.signature(fn).parameters.values())[1:]:  # after `env`
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise Unsupported(f"{name}: parameter {p.name!r} is {p.kind.description}")
        param: dict[str, Any] = {"name": p.name, "kind": p.kind.name,
                                 "type": describe_type(hints.get(p.name, p.annotation))}
        if p.default is not p.empty:
            if not _exact_json(p.default):
                raise Unsupported(f"{name}: the default of {p.name!r} is not plain JSON")
            param["default"] = p.default
        params.append(param)
    returns = hints.get("return", inspect.signature(fn).return_annotation)
    return {"name": name, "description": inspect.getdoc(fn) or name, "params": params,
            "returns": describe_type(returns)}


def build_signature(desc: dict[str, Any]) -> inspect.Signature:
    """The signature (without `env`) that `describe_tool` described, for the runtime's MCP server."""
    params = [inspect.Parameter(p["name"], getattr(inspect.Parameter, p["kind"]),
                                default=p.get("default", inspect.Parameter.empty), annotation=build_type(p["type"]))
              for p in desc["params"]]
    return inspect.Signature(params, return_annotation=build_type(desc["returns"]))


def serve(task_dir: str, root: str) -> None:
    from envs.format.library import load_task
    from envs.taskkit import Env, ToolError, call_tool

    reply_to = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the tools' prints go to stderr; the replies have the original stdout to themselves

    def send(obj: dict[str, Any]) -> None:
        reply_to.write(json.dumps(obj, allow_nan=True) + "\n")
        reply_to.flush()

    task = load_task(task_dir, required=("task.toml", "tools.py"), trusted=True)
    functions = task.tool_functions()
    try:
        send({"task": task.id, "title": task.spec.title,
              "tools": [describe_tool(name, fn) for name, fn in functions.items()]})
    except Unsupported as exc:
        send({"unsupported": str(exc)})
        return
    from pydantic_core import to_jsonable_python

    env = Env(root)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            result = call_tool(env, req["tool"], functions[req["tool"]], req["args"])
        except ToolError as exc:
            send({"id": req["id"], "ok": False, "error": str(exc)})
        else:
            send({"id": req["id"], "ok": True, "result": to_jsonable_python(result, fallback=str)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a task's tools behind a JSON-lines pipe (see module doc).")
    parser.add_argument("--task", required=True)
    parser.add_argument("--root", required=True)
    args = parser.parse_args(argv)
    if not (Path(args.root) / "db.sqlite").exists():
        print(f"error: {Path(args.root) / 'db.sqlite'} does not exist", file=sys.stderr)
        return 2
    serve(args.task, args.root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
