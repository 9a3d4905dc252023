"""Toolathlon's local tools a task asks for (`needed_local_tools`), as an MCP server: runs in
Toolathlon's own Python (mcp 1.x), in the benchmark sandbox, with the agent workspace as its folder.

    python local_tools.py WORKSPACE claim_done python_execute

- claim_done: Toolathlon's stop tool (its reply, verbatim in meaning: the task is claimed done).
- python_execute(code, filename?, timeout?): writes WORKSPACE/.python_tmp/<filename> and runs it with
  this environment's python in WORKSPACE, at most 120 s (Toolathlon's bound; default 30), and returns
  its stdout, stderr and exit status.

Only the standard library and the MCP SDK of Toolathlon's environment are imported.
"""

import subprocess
import sys
import time
import uuid
from pathlib import Path

try:
    from mcp.server.fastmcp import FastMCP  # mcp 1.x (Toolathlon's environment)
except ImportError:  # mcp 2.x renamed it
    from mcp.server.mcpserver import MCPServer as FastMCP

WORKSPACE = Path(sys.argv[1])
WANTED = set(sys.argv[2:])
server = FastMCP("toolathlon-local")


def claim_done() -> str:
    """Claim that the task is done (ends the task)."""
    return "you have claimed the task is done!"


def python_execute(code: str, filename: str = "", timeout: int = 30) -> str:
    """Run Python code in the workspace (written to .python_tmp/, run with the workspace as working
    directory); returns stdout, stderr and the exit status. timeout: seconds, at most 120."""
    timeout = max(1, min(int(timeout), 120))
    folder = WORKSPACE / ".python_tmp"
    folder.mkdir(exist_ok=True)
    name = Path(filename).name if filename else f"{uuid.uuid4().hex[:8]}.py"
    path = folder / (name if name.endswith(".py") else f"{name}.py")
    path.write_text(code)
    t0 = time.time()
    try:
        out = subprocess.run([sys.executable, str(path)], cwd=WORKSPACE, capture_output=True, text=True,
                             timeout=timeout)
        status = f"exit code {out.returncode}"
        stdout, stderr = out.stdout, out.stderr
    except subprocess.TimeoutExpired as exc:
        status, stdout, stderr = f"timed out after {timeout} s", exc.stdout or "", exc.stderr or ""
        stdout = stdout.decode("utf-8", "replace") if isinstance(stdout, bytes) else stdout
        stderr = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    return (f"=== STDOUT ===\n{stdout[-20000:]}\n=== STDERR ===\n{stderr[-5000:]}\n"
            f"=== EXECUTION INFO ===\n{status}; {time.time() - t0:.2f} s")


for fn in (claim_done, python_execute):
    if fn.__name__ in WANTED:
        server.tool()(fn)

if __name__ == "__main__":
    server.run()
