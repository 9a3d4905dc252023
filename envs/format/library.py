"""Find, decode and load task folders (envs/tasks/<id>/), one broken task never hiding the others.

The task contract is written in envs/format/TASK_FORMAT.md. Task modules are loaded from their files
(not imported as packages) so a task folder can live anywhere: the shipped library, a synthesis
workspace, or an imported Harbor task. `Task.run_program` runs a program's cells against an
environment in this process, with the tools as plain calls: for the task's own oracle and wrong
solutions (validator, context report), or inside the synthesis sandbox's child — never for a model.

Whose code may run here (envs/format/provenance.py): only a shipped task's. `load_task` gives any other
folder as a `SandboxedTask` (envs/format/code_runner.py), whose build, verify, tool listing and programs
run in bubblewrap and whose tools are served by the "sandboxed" transport. `trusted=True` loads a
folder's code into this process all the same: for the sandboxed children themselves (the tool host,
the task child), and for callers who vouch for a folder they wrote (tests).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import json
import shutil
import sys
import time
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec

from envs.format.provenance import SHIPPED, provenance
from envs.runtime import untrusted_fs
from envs.taskkit import Env, Scale, ToolError, VerifyContext, is_tool, scale_named
from schema.records import SCALES

LIBRARY_DIR = Path(__file__).resolve().parents[1] / "tasks"
REQUIRED_FILES = ("task.toml", "instruction.md", "data.py", "tools.py", "verify.py", "oracle.py")
CELL_MARKER = "# %%"
#: a built environment (db + workspace) copied into an episode: far above any task's (v3 is ~1 MB)
MAX_ENVIRONMENT_BYTES = 512 * 2**20


class TaskLoadError(Exception):
    """A task folder that cannot be used; the message names the file and the field."""


class ScaleFactors(msgspec.Struct, forbid_unknown_fields=True):
    rows: list[int] = msgspec.field(default_factory=lambda: [1, 2, 4, 8])
    files: list[float] = msgspec.field(default_factory=lambda: [1.0, 1.7, 2.5, 3.4])


class TaskLimits(msgspec.Struct, forbid_unknown_fields=True):
    max_turns: int = 40
    program_timeout_s: float = 120.0


class TaskSpec(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    domain: str
    title: str
    tools: list[str]
    seed: int = 0
    description: str = ""
    scales: ScaleFactors = msgspec.field(default_factory=ScaleFactors)
    limits: TaskLimits = msgspec.field(default_factory=TaskLimits)


class Task:
    """A loaded task folder: its spec, its instruction and lazily loaded modules."""

    def __init__(self, folder: Path, spec: TaskSpec, provenance: str = SHIPPED):
        self.dir = folder
        self.spec = spec
        self.id = spec.id
        self.provenance = provenance  # envs/format/provenance.py: "shipped", or "external" (then run sandboxed)
        self._modules: dict[str, ModuleType] = {}

    @property
    def tool_transport(self) -> str:
        """How this task's tools.py is served to episodes (envs/format/task_env.py): in this process for code
        that runs here (a shipped task, or inside a sandbox); SandboxedTask says "sandboxed"."""
        return "inprocess"

    def __repr__(self) -> str:
        return f"Task({self.id!r})"

    def read(self, relpath: str) -> str:
        """A file of the task folder as text, never through a link (the folder is third-party input)."""
        return read_task_file(self.dir, relpath)

    @property
    def instruction(self) -> str:
        return self.read("instruction.md")

    @property
    def oracle_source(self) -> str:
        return self.read("oracle.py")

    def wrong_solutions(self) -> dict[str, str]:
        folder = self.dir / "wrong"
        return {p.stem: self.read(f"wrong/{p.name}") for p in sorted(folder.glob("*.py"))} if folder.is_dir() else {}

    def scale(self, name: str) -> Scale:
        i = SCALES.index(name) if name in SCALES else -1
        if i < 0:
            raise ValueError(f"unknown scale {name!r}; expected one of {', '.join(SCALES)}")
        return scale_named(name, self.spec.scales.rows[i], self.spec.scales.files[i])

    def module(self, name: str) -> ModuleType:
        if name not in self._modules:
            path = self.dir / f"{name}.py"
            mod_name = f"progagent_task_{self.id}_{name}"
            spec = importlib.util.spec_from_file_location(mod_name, path)
            if spec is None or spec.loader is None:
                raise TaskLoadError(f"{path}: cannot be loaded as a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = module
            try:
                spec.loader.exec_module(module)
            except Exception as exc:
                del sys.modules[mod_name]
                raise TaskLoadError(f"{path}: failed to import: {type(exc).__name__}: {exc}") from exc
            self._modules[name] = module
        return self._modules[name]

    def tool_functions(self) -> dict[str, Any]:
        """The functions of tools.py marked with @tool, in task.toml order; checked against it."""
        module = self.module("tools")
        found = {n: f for n, f in vars(module).items() if is_tool(f)}
        listed = self.spec.tools
        missing = [n for n in listed if n not in found]
        extra = [n for n in found if n not in listed]
        if missing or extra:
            raise TaskLoadError(
                f"{self.dir / 'task.toml'}: field 'tools' does not match tools.py "
                f"(listed but missing: {missing or 'none'}; defined but unlisted: {extra or 'none'})"
            )
        return {n: found[n] for n in listed}

    def tool_names(self) -> list[str]:
        """The tools' names in task.toml order, checked against tools.py (which this imports)."""
        return list(self.tool_functions())

    def build(self, root: str | Path, scale: str) -> Env:
        """Write a fresh environment for `scale` into `root` (db.sqlite + workspace/).

        Whatever was in root is cleared first (the workspace folder itself is kept: it may be
        bound into a sandbox), so data.py always starts from an empty folder.
        """
        root = Path(root)
        ws = root / "workspace"
        ws.mkdir(parents=True, exist_ok=True)
        for p in root.glob("db.sqlite*"):
            p.unlink()
        for p in ws.iterdir():
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        self.module("data").build(root, self.scale(scale), self.spec.seed)
        return Env(root)

    def verify(self, final_root: Path, initial_root: Path, answer: str, scale: str) -> dict[str, bool]:
        final, initial = Env(final_root, readonly=True), Env(initial_root, readonly=True)
        try:
            ctx = VerifyContext(final=final, initial=initial, answer=answer or "", scale=self.scale(scale),
                                seed=self.spec.seed)
            result = self.module("verify").verify(ctx)
        finally:
            final.close()
            initial.close()
        if not isinstance(result, dict) or not result:
            raise TaskLoadError(f"{self.dir / 'verify.py'}: verify() must return a non-empty dict of criteria")
        return {str(k): bool(v) for k, v in result.items()}

    def run_program(self, root: Path, program: str) -> tuple[str, str, list[dict[str, Any]]]:
        """Run `program` cell by cell against the environment in `root`, tools as plain calls; returns
        (final_answer, stdout, call log). Not a sandbox: trusted code, or code already inside one."""
        env = Env(root)
        tools = InProcessTools(self, env)
        out = io.StringIO()
        # the program's own `print` writes to `out`: contextlib.redirect_stdout swaps sys.stdout for
        # the whole process, so programs run at once in threads (validation) printed into each
        # other's capture or, once one had restored it, onto the real stdout
        ns: dict[str, Any] = {"tools": tools, "ToolError": ToolError, "__name__": "__main__",
                              "print": functools.partial(print, file=out)}
        try:
            for cell in split_cells(program):
                exec(compile(cell, "<program>", "exec"), ns)
        finally:
            env.close()
        return str(ns.get("final_answer", "")), out.getvalue(), tools.calls

    def fingerprint(self) -> dict[str, str]:
        """Hashes of what must be byte-identical across scales (it is one file set for all scales)."""
        return {n: hashlib.sha256((self.dir / n).read_bytes()).hexdigest()[:16]
                for n in ("instruction.md", "tools.py", "verify.py")}


def split_cells(program: str) -> list[str]:
    """Split a multi-turn program into cells at lines starting with `# %%`."""
    cells, current = [], []
    for line in program.splitlines():
        if line.strip().startswith(CELL_MARKER):
            if "".join(current).strip():
                cells.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if "".join(current).strip():
        cells.append("\n".join(current))
    return cells


class InProcessTools(dict):
    """`tools[name](**kwargs)` over the task's functions, JSON round-tripped and committed (or, when
    the call raises, rolled back) as the task's MCP server does."""

    def __init__(self, task: Task, env: Env):
        super().__init__()
        self.calls: list[dict[str, Any]] = []
        for name, fn in task.tool_functions().items():
            self[name] = self._bind(name, fn, env)

    def _bind(self, name: str, fn: Any, env: Env) -> Any:
        def call(**kwargs: Any) -> Any:
            kwargs = json.loads(json.dumps(kwargs))
            t0 = time.perf_counter()
            try:
                result = fn(env, **kwargs)
                env.db.commit()
            except Exception:
                env.db.rollback()
                raise
            raw = json.dumps(result, default=str)
            self.calls.append({"tool": name, "args": kwargs, "result_chars": len(raw),
                               "ms": (time.perf_counter() - t0) * 1000})
            return json.loads(raw)

        call.__name__ = name
        call.__doc__ = fn.__doc__
        return call


#: the most a task folder's text file (instruction, program, task.toml) may hold
MAX_TASK_FILE_BYTES = 4 * 2**20


def read_task_file(folder: str | Path, relpath: str) -> str:
    """A task folder's file as text: read without following a link, at most MAX_TASK_FILE_BYTES
    (TaskLoadError names the file otherwise)."""
    try:
        return untrusted_fs.read_file(folder, relpath, MAX_TASK_FILE_BYTES).decode("utf-8", "replace")
    except untrusted_fs.PathRefused as exc:
        raise TaskLoadError(f"{Path(folder) / relpath}: {exc}") from None


def load_task(folder: str | Path, required: tuple[str, ...] = REQUIRED_FILES, *, trusted: bool = False,
              runner: Any = None) -> Task:
    """Decode a task folder. `required` is narrower where only part of a task travels (Harbor).

    A folder that did not ship with ProgAgent comes back as a SandboxedTask whose code runs through
    `runner` (a CodeRunner; default: this process's `default_runner()`, bubblewrap); `trusted`: import
    the task's modules here anyway (this process is the sandbox, or the caller vouches for the folder)."""
    folder = Path(folder)
    if folder.is_symlink():
        raise TaskLoadError(f"{folder}: a task folder may not be a symbolic link (links are never followed)")
    try:
        untrusted_fs.refuse_links(folder, f"task {folder.name}", max_entries=10_000, max_depth=16)
    except untrusted_fs.PathRefused as exc:
        raise TaskLoadError(f"{folder}: {exc}") from None
    for name in required:
        if not (folder / name).is_file():
            raise TaskLoadError(f"{folder / name}: required file is missing")
    toml_path = folder / "task.toml"
    try:
        raw = tomllib.loads(read_task_file(folder, "task.toml"))
    except tomllib.TOMLDecodeError as exc:
        raise TaskLoadError(f"{toml_path}: invalid TOML: {exc}") from exc
    try:
        spec = msgspec.convert(raw, TaskSpec)
    except msgspec.ValidationError as exc:
        raise TaskLoadError(f"{toml_path}: {exc}") from exc
    if spec.id != folder.name:
        raise TaskLoadError(f"{toml_path}: field 'id' is {spec.id!r} but the folder is {folder.name!r}")
    for field, values in (("scales.rows", spec.scales.rows), ("scales.files", spec.scales.files)):
        if len(values) != 4:
            raise TaskLoadError(f"{toml_path}: field '{field}' needs 4 values (v0..v3), got {len(values)}")
    origin = provenance(folder)
    task = Task(folder, spec, origin)
    if origin == SHIPPED or trusted:
        return task
    from envs.format.code_runner import SandboxedTask  # the runner imports this module

    return SandboxedTask(task, runner)


def load_library(root: str | Path = LIBRARY_DIR) -> tuple[dict[str, Task], dict[str, str]]:
    """All task folders under root: (tasks by id, errors by folder name)."""
    tasks: dict[str, Task] = {}
    errors: dict[str, str] = {}
    try:
        folders = sorted(Path(root).iterdir())
    except OSError as exc:  # the library itself, not one task in it: nothing can be loaded
        raise TaskLoadError(f"{root}: not a task library ({exc.strerror or exc}); a library is a folder of task "
                            f"folders") from None
    for folder in folders:
        if not folder.is_dir() or folder.name.startswith(("_", ".")):
            continue
        try:
            tasks[folder.name] = load_task(folder)
        except TaskLoadError as exc:
            errors[folder.name] = str(exc)
    return tasks, errors


def library_dir(library: str | Path = "") -> Path:
    """A task library's folder as this process sees it: "" is the shipped library; a relative path is
    taken from this checkout's root (so a run's config names the same library on every node, wherever
    each node unpacked the code)."""
    if not str(library):
        return LIBRARY_DIR
    path = Path(library)
    return path if path.is_absolute() else LIBRARY_DIR.parents[1] / path


def get_task(task_id: str, root: str | Path = LIBRARY_DIR, *, trusted: bool = False) -> Task:
    folder = Path(root) / task_id
    if not folder.is_dir():
        known = sorted(p.name for p in Path(root).iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))
        raise TaskLoadError(f"unknown task {task_id!r}; known tasks: {', '.join(known) or 'none'}")
    return load_task(folder, trusted=trusted)


def copy_environment(src: Path, dst: Path) -> None:
    """Copy a built environment (db + workspace) into dst, keeping dst/workspace as the same inode.
    Nothing is followed and only regular files and folders are copied (envs/runtime/untrusted_fs.py): a
    built environment is the output of a task's data.py."""
    (dst / "workspace").mkdir(parents=True, exist_ok=True)
    size = untrusted_fs.copy_file(src / "db.sqlite", dst, "db.sqlite", max_bytes=MAX_ENVIRONMENT_BYTES)
    untrusted_fs.copy_tree(src / "workspace", dst, "workspace", max_bytes=MAX_ENVIRONMENT_BYTES - size)
