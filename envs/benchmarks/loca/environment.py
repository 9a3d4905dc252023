"""LOCA-bench's own Python environment, made by ProgAgent from a pinned list, once per machine.

    python = ensure_environment(root)     # root: e.g. $PROGAGENT_HOME/benchmarks; returns its bin/python

LOCA cannot run in our environment, nor in one made from its own requirements: they are unpinned,
and today `fastmcp>=2` resolves to fastmcp 4 / mcp 2, under which its servers fail to start
('Server' object has no attribute 'list_tools'). So its environment is made from requirements.txt
(here: the full resolved set, pinned: fastmcp 2.12, mcp 1.16, pydantic 2.11, pandas 2.3, and the
servers its configs launch with `uvx` or by name: cli-mcp-server, pdf-tools-mcp, excel-mcp-server)
with Python 3.12 (LOCA requires < 3.13), plus the npm servers its configs launch with `npx`
(NODE_PACKAGES, installed under the environment's node/ folder: nothing is fetched at run time).

The folder's name carries a digest of both lists, so a changed list makes a new environment and an
existing one is reused (idempotent; a lock file serialises two processes making it at once). On a
cluster of several nodes make it on storage every node mounts, or on each node at the same path.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

REQUIREMENTS = Path(__file__).with_name("requirements.txt")
NODE_PACKAGES = ("@modelcontextprotocol/server-filesystem@2026.8.31", "@modelcontextprotocol/server-memory@2026.8.31")
#: LOCA's pyproject says requires-python >=3.10,<3.13; its servers were written against 3.12
PYTHON_VERSION = "3.12"
READY = ".progagent-ready"


class LocaSetupError(RuntimeError):
    """The environment could not be made (the message says which step and shows its output)."""


def digest() -> str:
    h = hashlib.sha256(REQUIREMENTS.read_bytes())
    h.update("\n".join(NODE_PACKAGES).encode())
    return h.hexdigest()[:12]


def environment_dir(root: Path) -> Path:
    return Path(root) / f"loca-py{PYTHON_VERSION.replace('.', '')}-{digest()}"


def find_python(version: str = PYTHON_VERSION) -> str:
    """A Python `version` interpreter on this machine: `python3.12` on the PATH, else pyenv's."""
    candidates = [shutil.which(f"python{version}")]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += sorted((str(p) for p in pyenv_root.glob(f"versions/{version}.*/bin/python{version}")), reverse=True)
    for c in candidates:
        if c and subprocess.run([c, "-c", "import sys"], capture_output=True).returncode == 0:
            return c
    raise LocaSetupError(f"LOCA-bench needs Python {version} and none was found (tried python{version} on the PATH "
                            f"and {pyenv_root}/versions/{version}.*): install it (e.g. `pyenv install {version}`) or "
                            "pass the interpreter of an existing LOCA environment (sweep.loca.python)")


def node_bin(node_dir: str | Path, package: str) -> Path | None:
    """The executable of npm `package` (a version suffix ignored) installed under `node_dir`
    (its node_modules/<package>/package.json `bin`), or None."""
    name = package if package.count("@") < (2 if package.startswith("@") else 1) else package.rsplit("@", 1)[0]
    folder = Path(node_dir) / "node_modules" / name
    try:
        meta = json.loads((folder / "package.json").read_text())
    except (OSError, ValueError):
        return None
    bin_ = meta.get("bin")
    rel = bin_ if isinstance(bin_, str) else next(iter((bin_ or {}).values()), None)
    return (folder / rel).resolve() if rel else None


def _run(step: str, argv: list[str], **kw) -> None:
    out = subprocess.run(argv, capture_output=True, text=True, **kw)
    if out.returncode != 0:
        raise LocaSetupError(f"LOCA environment, {step}: `{' '.join(argv[:6])} …` exit {out.returncode}:\n"
                                f"{(out.stdout + out.stderr)[-3000:]}")


def ensure_environment(root: Path, say: Callable[[str], None] = print) -> str:
    """The python of LOCA's environment under `root`, made first if it is not there (module docstring)."""
    env_dir = environment_dir(root)
    python = env_dir / "bin" / "python"
    if (env_dir / READY).exists():
        return str(python)
    env_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(env_dir.parent / f".{env_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (env_dir / READY).exists():
            return str(python)
        say(f"making LOCA-bench's Python environment in {env_dir} (once; a few minutes)")
        if env_dir.exists():
            shutil.rmtree(env_dir)  # a half-made one from an interrupted attempt
        _run("venv", [find_python(), "-m", "venv", str(env_dir)])
        _run("pip", [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                     "-r", str(REQUIREMENTS)])
        npm = shutil.which("npm")
        if npm is None:
            raise LocaSetupError("LOCA environment: npm is not installed (its filesystem and memory servers are npm "
                                    "packages): run scripts/install.sh")
        (env_dir / "node").mkdir()
        _run("npm", [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(env_dir / "node"),
                     *NODE_PACKAGES])
        (env_dir / READY).write_text(digest() + "\n")
        say(f"LOCA-bench environment ready: {python}")
    return str(python)
