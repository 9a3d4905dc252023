"""A task's tools served as a real MCP server (mcp 2.x) over one episode's environment.

Each `@tool` function of a task's tools.py becomes an MCP tool: its docstring is the description,
its parameters after `env` the input schema. The server holds the episode's `Env` (database +
workspace) and commits after every successful call, rolls back after a failed one.

In-process (the runtime's default: no process start per episode, the SDK's in-memory transport):
    server = build_server(task, env_root);  Upstream(UpstreamSpec("task"), server_object=server)
As a stdio process (Harbor export, third-party harnesses):
    python -m envs.format.task_server --task envs/tasks/retail_x --root /path/to/env
For model-written tasks (synth/) that process runs inside bubblewrap, seeing only task.toml, tools.py
and the environment (`task_upstream(..., transport="sandboxed")`, envs/format/task_env.py); this module then
imports nothing of the repository beyond envs.format.library and envs.taskkit.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import sys
import threading
import typing
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as SDKToolError

from envs.format.library import Task, load_task
from envs.taskkit import Env, ToolError, call_tool


def _bind(name: str, fn: Any, env: Env, lock: threading.Lock) -> Any:
    """`fn(env, **kw)` as `tool(**kw)` with the same (resolved) schema, transactional."""
    hints = typing.get_type_hints(fn)
    sig = inspect.signature(fn)
    params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in list(sig.parameters.values())[1:]]

    @functools.wraps(fn)
    def call(**kwargs: Any) -> Any:
        with lock:
            try:
                return call_tool(env, name, fn, kwargs)
            except ToolError as exc:  # the SDK returns its ToolError's message as is
                raise SDKToolError(str(exc)) from exc

    del call.__wrapped__  # the schema comes from __signature__, without `env`
    call.__signature__ = sig.replace(parameters=params, return_annotation=hints.get("return", sig.return_annotation))
    call.__annotations__ = {k: v for k, v in hints.items() if k != "env"}
    return call


def build_server(task: Task, env_root: str | Path) -> MCPServer:
    env = Env(env_root)
    server = MCPServer(f"task-{task.id}", instructions=f"Tools of the task {task.spec.title!r}.",
                       log_level="WARNING")
    lock = threading.Lock()
    for name, fn in task.tool_functions().items():
        server.add_tool(_bind(name, fn, env, lock), name=name, description=inspect.getdoc(fn) or name)
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve a task's tools over MCP (stdio).")
    parser.add_argument("--task", required=True, help="path to the task folder")
    parser.add_argument("--root", required=True, help="the environment folder (db.sqlite + workspace/)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not (root / "db.sqlite").exists():
        print(f"error: {root / 'db.sqlite'} does not exist; build the environment first", file=sys.stderr)
        return 2
    # a server that imports tools.py: started inside a sandbox (the "sandboxed" transport's fallback, a
    # Harbor container) or by hand on a task the caller trusts
    build_server(load_task(args.task, required=("task.toml", "tools.py"), trusted=True), root).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
