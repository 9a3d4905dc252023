"""A benchmark's own Python environment, made by ProgAgent from a pinned list of ours, once per machine.

    spec = BenchmarkEnvironment("loca", Path(".../loca/requirements.txt"), ("@modelcontextprotocol/server-memory@…",))
    python = ensure_environment(spec, root)   # root: $PROGAGENT_HOME/benchmarks; returns its bin/python

A third-party benchmark cannot run in our environment (LOCA pins mcp 1.x servers, Toolathlon needs
Python 3.12 and openai-agents), nor reliably in one made from its own unpinned requirements (today
LOCA's `fastmcp>=2` resolves to fastmcp 4 / mcp 2, under which its servers fail to start: 'Server'
object has no attribute 'list_tools'). So each benchmark's environment is made from a requirements
file of ours (the whole resolved set, pinned) with its Python version, plus the npm servers its
configs launch with `npx`, installed under the environment's node/ folder (`node_bin`): nothing is
fetched while episodes run.

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

import msgspec

from envs.benchmarks.sandbox import DISCARDED

READY = ".progagent-ready"


class SetupError(RuntimeError):
    """The environment could not be made (the message says which step and shows its output)."""


class BenchmarkEnvironment(msgspec.Struct, frozen=True):
    name: str  # "loca", "toolathlon"
    requirements: Path
    node_packages: tuple[str, ...] = ()
    python_version: str = "3.12"
    #: install the list as it is, without pip's resolver (`--no-deps`): for a list that is the whole
    #: pinned set but overrides a pin of one of its packages (its file's header says which and why)
    no_deps: bool = False

    def digest(self) -> str:
        h = hashlib.sha256(self.requirements.read_bytes())
        h.update("\n".join(self.node_packages).encode())
        h.update(self.python_version.encode())
        h.update(b"no-deps" if self.no_deps else b"")
        return h.hexdigest()[:12]

    def folder(self, root: Path) -> Path:
        return Path(root) / f"{self.name}-py{self.python_version.replace('.', '')}-{self.digest()}"


def find_python(version: str) -> str:
    """A Python `version` interpreter on this machine: `python3.12` on the PATH, else pyenv's."""
    candidates = [shutil.which(f"python{version}")]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += sorted((str(p) for p in pyenv_root.glob(f"versions/{version}.*/bin/python{version}")), reverse=True)
    for c in candidates:
        try:
            if c and subprocess.run([c, "-c", "import sys"], capture_output=True, timeout=60).returncode == 0:
                return c
        except subprocess.TimeoutExpired:
            continue
    raise SetupError(f"Python {version} was not found (tried python{version} on the PATH "
                     f"and {pyenv_root}/versions/{version}.*): install it (e.g. `pyenv install {version}`) or "
                     "pass the interpreter of an existing environment of the benchmark (its sweep section's `python`)")


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


#: the most one setup step (venv, pip, npm) may take
SETUP_STEP_TIMEOUT_S = 3600.0


def _run(what: str, step: str, argv: list[str]) -> None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=SETUP_STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SetupError(f"{what} environment, {step}: `{' '.join(argv[:6])} …` did not finish within "
                         f"{SETUP_STEP_TIMEOUT_S:.0f} s") from None
    if out.returncode != 0:
        raise SetupError(f"{what} environment, {step}: `{' '.join(argv[:6])} …` exit {out.returncode}:\n"
                         f"{(out.stdout + out.stderr)[-3000:]}")


def ensure_environment(spec: BenchmarkEnvironment, root: Path, say: Callable[[str], None] = print) -> str:
    """The python of `spec`'s environment under `root`, made first if it is not there (module docstring)."""
    env_dir = spec.folder(root)
    python = env_dir / "bin" / "python"
    if (env_dir / READY).exists():
        return str(python)
    env_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(env_dir.parent / f".{env_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (env_dir / READY).exists():
            return str(python)
        say(f"making {spec.name}'s Python environment in {env_dir} (once; a few minutes)")
        if env_dir.exists():
            shutil.rmtree(env_dir)  # a half-made one from an interrupted attempt
        _run(spec.name, "venv", [find_python(spec.python_version), "-m", "venv", str(env_dir)])
        _run(spec.name, "pip", [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                *(["--no-deps"] if spec.no_deps else []), "-r", str(spec.requirements)])
        if spec.node_packages:
            npm = shutil.which("npm")
            if npm is None:
                raise SetupError(f"{spec.name} environment: npm is not installed (its npx servers are npm packages): "
                                 "run scripts/install.sh")
            (env_dir / "node").mkdir()
            _run(spec.name, "npm", [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix",
                                    str(env_dir / "node"), *spec.node_packages])
        for lib in env_dir.glob("lib/python3*"):  # what its programs write into their installation: made
            for name in DISCARDED:                 # here, /dev/null in the sandbox
                (lib / name).touch()
        (env_dir / READY).write_text(spec.digest() + "\n")
        say(f"{spec.name} environment ready: {python}")
    return str(python)


def node_dir_of(python: str) -> str:
    """The node/ folder of the environment `python` belongs to ("" when it has none)."""
    folder = Path(python).parent.parent / "node"
    return str(folder) if folder.is_dir() else ""


def benchmarks_root() -> Path:
    """Where ProgAgent makes benchmark environments: $PROGAGENT_HOME/benchmarks (default
    ~/progagent/benchmarks; shared storage, or the same path on every node of a cluster)."""
    return Path(os.environ.get("PROGAGENT_HOME") or Path.home() / "progagent").expanduser() / "benchmarks"


def benchmark_python(spec: BenchmarkEnvironment, python: str, node_dir: str, where: str,
                     say: Callable[[str], None] = print) -> tuple[str, str]:
    """(interpreter, node_dir) of a benchmark: the ones a source's settings give, else the environment
    ProgAgent makes from its pinned list under benchmarks_root() (once). A ConfigError names `where`."""
    from schema.load import ConfigError

    if python:
        if not Path(python).exists():
            raise ConfigError(f"{where}.python: {python} does not exist")
        return python, node_dir
    try:
        python = ensure_environment(spec, benchmarks_root(), say=say)
    except SetupError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return python, node_dir_of(python)
