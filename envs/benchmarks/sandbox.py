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

The sandbox is an envs/runtime/sandbox.Sandbox (its isolation, read-only root and system call
filter are not options) started with launch_argv (options passed by file descriptor, never visible
to the sandboxed process).
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

from envs.runtime.sandbox import BWRAP_ENV, Sandbox, launch_argv

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
    #: the prefix as `python` names it (its folder's folder, links not followed): bound there too
    named_prefix: str = ""

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
    named = Path(python).absolute()
    return Interpreter(python=str(named), prefix=str(Path(prefix).resolve()),
                       base_prefix=str(Path(base).resolve()), named_prefix=str(named.parent.parent))


def sandbox_options(interp: Interpreter, *, read_only: Sequence[Path], writable: Sequence[Path], cwd: Path | str,
                    env: dict[str, str] | None = None, mounts: dict[str, Path] | None = None,
                    network: bool = False) -> Sandbox:
    """The sandbox of one benchmark process (module docstring). Every path is bound at its own real
    path, and at the path it is named by when a link on the way differs (Sandbox.bind_named: a
    `.venv` that is a link, a socket folder's short alias); `cwd` must be one of them or under one.
    `mounts`: writable folders bound at another path (a benchmark whose server configs name a fixed
    one: MCP-Atlas's /data). `network`: the host's network (only for a judge that calls the user's LLM
    endpoint; never a server the model drives)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RuntimeError("bubblewrap (bwrap) is not installed: run scripts/install.sh")
    box = Sandbox(network=network, bwrap=bwrap,
                  chdir=str(cwd if str(cwd) in (mounts or {}) else Path(cwd).resolve()))
    for name in ETC_FILES:
        if os.path.exists(f"/etc/{name}"):
            box.bind(f"/etc/{name}")
    for root in interp.roots():
        box.bind_named(root)
    named = Path(interp.named_prefix or interp.prefix)
    if named.resolve() == Path(interp.prefix) != named and not named.is_relative_to("/usr"):
        box.bind_named(interp.named_prefix)  # the executable as named (`<checkout>/.venv/bin/python`, a link)
    for name in DISCARDED:
        for path in sorted(Path(interp.prefix).glob(f"lib/python3*/{name}")):
            if path.is_file() and not path.is_symlink():
                box.mount(path, "--dev-bind", "/dev/null", str(path))
    for p in read_only:
        box.bind_named(p)
    for p in writable:
        box.bind_named(p, writable=True)
    for target, source in (mounts or {}).items():
        box.bind(Path(source).resolve(), target, writable=True)
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
    return box.setenv(base | (env or {}))


def sandboxed(options: Sandbox, command: list[str], scratch: Path) -> list[str]:
    """The argv that runs `command` in the sandbox `options` (start it with env=BWRAP_ENV)."""
    return launch_argv(options, command, scratch)
