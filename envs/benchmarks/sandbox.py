"""How a third-party benchmark's own processes run here: its state generator, its MCP servers and its
evaluator, each in a bubblewrap sandbox of the same shape.

A benchmark's code is not ours (the user's checkout), and its servers execute what the model asks
(LOCA's `python_execute` and `terminal` run model-written code and shell commands; its filesystem
server writes model-chosen paths): run on the host they would be the sandbox escape the kernel's
sandbox exists to prevent. So every such process sees

- the host's /usr and a few /etc files, read-only (envs/runtime/sandbox.isolation_argv);
- the benchmark's Python installation (its virtual environment and base interpreter) and its
  checkout, read-only, at their host paths (so LOCA's absolute script paths work unchanged);
- the folders it must write read-write at their host paths (the paths the server configs name, and
  the workspace bound into the kernel's sandbox: one path means one thing everywhere): for a server
  the model drives, only its own (the agent workspace, its databases), never a folder that holds the
  kernel's workspace or the task's ground truth (each adapter decides which: LOCA's server_folders,
  Toolathlon's _server_options); the rest of the root read-only;
- no network, a cleared environment (PATH = the benchmark's bin folder first), a private /tmp, and
  per-process limits (memory, processes, file size) from the runtime's limits backend.

The argv is made with envs/runtime/sandbox.launch_argv (options passed by file descriptor, never
visible to the sandboxed process).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import msgspec

from envs.runtime.sandbox import BWRAP_ENV, isolation_argv, launch_argv, setenv_argv

#: files a benchmark's programs write inside their own installation, in its lib/python3.*/ folder
#: (excel-mcp-server logs next to its package): bound to /dev/null, so the installation stays
#: read-only and the log costs no disk; the environment maker creates them (envs/benchmarks/environment.py)
DISCARDED = ("excel-mcp.log",)
ETC_FILES = ("passwd", "group", "hosts", "nsswitch.conf", "localtime", "ssl", "ca-certificates", "mime.types")


class Interpreter(msgspec.Struct, frozen=True):
    """A Python installation a benchmark runs in: its executable and the folders it needs."""

    python: str
    prefix: str
    base_prefix: str

    @property
    def bin_dir(self) -> Path:
        return Path(self.python).parent

    def roots(self) -> list[Path]:
        roots: list[Path] = []
        for p in (Path(self.prefix), Path(self.base_prefix)):
            if p not in roots and not p.is_relative_to("/usr"):
                roots.append(p)
        return roots


@functools.lru_cache(maxsize=16)
def interpreter(python: str) -> Interpreter:
    """The installation of `python` (asked once per process; ValueError when it does not run)."""
    try:
        out = subprocess.run([python, "-c", "import sys, json; print(json.dumps([sys.prefix, sys.base_prefix]))"],
                             capture_output=True, text=True, timeout=60, env=BWRAP_ENV)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ValueError(f"{python}: cannot run it: {exc}") from None
    if out.returncode != 0:
        raise ValueError(f"{python}: exit {out.returncode}: {out.stderr[-400:]}")
    prefix, base = json.loads(out.stdout)
    # the executable as given: a virtual environment's bin/python is a link into the base installation
    return Interpreter(python=str(Path(python).absolute()), prefix=str(Path(prefix).resolve()),
                       base_prefix=str(Path(base).resolve()))


def sandbox_options(interp: Interpreter, *, read_only: Sequence[Path], writable: Sequence[Path], cwd: Path | str,
                    env: dict[str, str] | None = None, mounts: dict[str, Path] | None = None,
                    network: bool = False) -> list[str]:
    """bubblewrap options for one benchmark process (module docstring). Every path is bound at its
    own (real) path; `cwd` must be one of them or under one. `mounts`: writable folders bound at
    another path (a benchmark whose server configs name a fixed one: MCP-Atlas's /data). `network`:
    the host's network (only for a judge that calls the user's LLM endpoint; never a server the model drives)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RuntimeError("bubblewrap (bwrap) is not installed: run scripts/install.sh")
    argv = isolation_argv(network=network, bwrap=bwrap)
    for name in ETC_FILES:
        if os.path.exists(f"/etc/{name}"):
            argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for root in interp.roots():
        argv += ["--ro-bind", str(root), str(root)]
    for name in DISCARDED:
        for path in sorted(Path(interp.prefix).glob(f"lib/python3*/{name}")):
            if path.is_file() and not path.is_symlink():
                argv += ["--dev-bind", "/dev/null", str(path)]
    for p in read_only:
        real = Path(p).resolve()
        argv += ["--ro-bind", str(real), str(real)]
    for p in writable:
        real = Path(p).resolve()
        argv += ["--bind", str(real), str(real)]
    for target, source in (mounts or {}).items():
        argv += ["--bind", str(Path(source).resolve()), target]
    # the tmpfs root read-only: a write outside the bound folders and /tmp fails, as in the kernel's sandbox
    argv += ["--chdir", str(cwd if str(cwd) in (mounts or {}) else Path(cwd).resolve()), "--remount-ro", "/"]
    base = {
        "HOME": "/tmp",
        "PATH": f"{interp.bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "MPLBACKEND": "Agg",
        "npm_config_cache": "/tmp/.npm",
        # servers that run code with `uv run` (LOCA's python_execute) use this environment, offline
        "VIRTUAL_ENV": str(Path(interp.python).parent.parent),
        "UV_PYTHON": interp.python,
        "UV_OFFLINE": "1",
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_CACHE_DIR": "/tmp/.uv-cache",
        "UV_NO_CONFIG": "1",
    }
    return argv + setenv_argv(base | (env or {}))


def sandboxed(options: list[str], command: list[str], scratch: Path) -> list[str]:
    """The argv that runs `command` with `options` (start it with env=BWRAP_ENV)."""
    return launch_argv(options, command, scratch)
