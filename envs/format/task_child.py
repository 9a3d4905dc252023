"""One operation on a task's code that did not ship with ProgAgent, in a child process (started by
envs/format/code_runner.py).

    python task_child.py < request.json

The request is {"op": "load" | "build" | "verify" | "run_program", "task_dir": ..., ...}; the reply is one JSON object
on the file descriptor that was stdout at start: {"ok": true, "result": ...} or {"ok": false, "type",
"message", "traceback"} (only the task's own frames, paths relative to its folder). Whatever the
task's code prints goes to stderr. This file runs as a script (inside bubblewrap next to copies of
the envs/ modules a task imports, envs/runtime/sandbox.TASK_CODE), so it imports nothing else.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path


def _task_traceback(exc: BaseException, prefix: str) -> str:
    """The exception chain with only the frames in the task's folder, its paths made relative."""
    te = traceback.TracebackException.from_exception(exc)
    seen: set[int] = set()

    def trim(t: traceback.TracebackException | None) -> None:
        if t is None or id(t) in seen:
            return
        seen.add(id(t))
        t.stack = traceback.StackSummary.from_list([f for f in t.stack if f.filename.startswith(prefix)])
        trim(t.__cause__)
        trim(t.__context__)

    trim(te)
    return "".join(te.format()).replace(prefix, "")


def run(req: dict) -> object:
    from envs.format.library import load_task

    task = load_task(Path(req["task_dir"]), trusted=True)  # this child is the sandbox
    op = req["op"]
    if op == "load":
        for name in ("data", "tools", "verify"):
            task.module(name)
        return {"tools": list(task.tool_functions())}
    if op == "build":
        task.build(Path(req["root"]), req["scale"])
        return None
    if op == "verify":
        return task.verify(Path(req["final"]), Path(req["initial"]), req["answer"], req["scale"])
    if op == "run_program":  # a candidate's wrong solution against its tools, on a copy of an environment
        answer, _, calls = task.run_program(Path(req["root"]), req["program"])
        return {"answer": answer, "calls": len(calls)}
    raise ValueError(f"unknown operation {op!r}")


def main() -> None:
    reply_to = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the task's prints go to stderr; the reply has the original stdout to itself
    req = json.load(sys.stdin)
    prefix = str(req["task_dir"]).rstrip("/") + "/"
    try:
        reply = {"ok": True, "result": run(req)}
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt from task code included
        reply = {"ok": False, "type": type(exc).__name__, "message": str(exc).replace(prefix, ""),
                 "traceback": _task_traceback(exc, prefix)}
    sys.stdout.flush()
    sys.stderr.flush()
    reply_to.write(json.dumps(reply, default=str))
    reply_to.flush()
    os._exit(0)  # no atexit handlers, no waiting for threads the task's code may have started


if __name__ == "__main__":
    main()
