"""A user's Toolathlon checkout, read as data: its tasks, its MCP server configs, and which tasks run
offline here ("local-only": every server they need is one of LOCAL_SERVERS, every local tool one we
provide).

    co = ToolathlonCheckout("~/Toolathlon")
    co.tasks()                       # the local-only tasks of tasks/finalpool/
    co.server_configs(task, ws)      # {name: {command, args, env, cwd, timeout_s}} with ${...} filled

Toolathlon's evaluators import its `configs/global_configs.py`, which its own setup makes (from
configs/global_configs_example.py) and git ignores: a checkout without it is refused with that step,
never patched (the checkout is read-only to everything ProgAgent runs).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import yaml

from envs.benchmarks.checkout_files import read_text

#: servers that need no account and no network (Toolathlon's configs/mcp_servers/*.yaml `name`s)
LOCAL_SERVERS = frozenset({"filesystem", "terminal", "excel", "pdf-tools", "memory", "git", "word", "pptx"})
#: Toolathlon's local tools ProgAgent provides (envs/benchmarks/toolathlon/local_tools.py)
PROVIDED_TOOLS = frozenset({"claim_done", "python_execute"})
#: local tools whose job ProgAgent's runtime does itself (bounded tool output, its own context), not emulated
RUNTIME_TOOLS = frozenset({"handle_overlong_tool_outputs", "manage_context", "history"})
MAX_FILE_BYTES = 1 << 20
_VAR = re.compile(r"\$\{([^}]+)\}")


class ToolathlonError(ValueError):
    """A checkout, task or server that is not there, not in Toolathlon's format, or not local."""


class ToolathlonTask(msgspec.Struct, frozen=True):
    name: str
    servers: list[str]
    local_tools: list[str]
    has_preprocess: bool
    has_groundtruth: bool


def _read(checkout: Path, path: Path) -> str:
    """A file of the checkout, read as third-party data (envs/benchmarks/checkout_files.py)."""
    return read_text(checkout, path, ToolathlonError, MAX_FILE_BYTES)


class ToolathlonCheckout:
    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser().resolve()
        if not (self.path / "tasks" / "finalpool").is_dir() or not (self.path / "configs" / "mcp_servers").is_dir():
            raise ToolathlonError(f"{self.path}: not a Toolathlon checkout (no tasks/finalpool/ and configs/mcp_servers/; "
                                  "git clone https://github.com/hkust-nlp/Toolathlon)")
        if not (self.path / "configs" / "global_configs.py").is_file():
            raise ToolathlonError(f"{self.path}: configs/global_configs.py is missing (Toolathlon's evaluators import it; "
                                  "its setup makes it: cp configs/global_configs_example.py configs/global_configs.py)")

    def task_dir(self, name: str) -> Path:
        return self.path / "tasks" / "finalpool" / name

    def task(self, name: str) -> ToolathlonTask:
        d = self.task_dir(name)
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name) or not (d / "task_config.json").is_file():
            raise ToolathlonError(f"no Toolathlon task {name!r} (tasks/finalpool/{name}/task_config.json)")
        try:
            cfg = json.loads(_read(self.path, d / "task_config.json"))
            servers, tools = list(cfg["needed_mcp_servers"]), list(cfg.get("needed_local_tools") or [])
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise ToolathlonError(f"{name}: task_config.json is not Toolathlon's format ({exc})") from None
        return ToolathlonTask(name, servers, tools, (d / "preprocess" / "main.py").is_file(),
                              (d / "groundtruth_workspace").is_dir())

    def local_problems(self, task: ToolathlonTask) -> list[str]:
        """Why `task` cannot run offline here ([] = it can)."""
        problems = [f"server {s} needs an account or the network" for s in task.servers if s not in LOCAL_SERVERS]
        problems += [f"local tool {t} is not provided" for t in task.local_tools
                     if t not in PROVIDED_TOOLS | RUNTIME_TOOLS]
        return problems

    def missing_files(self, task: ToolathlonTask) -> list[str]:
        """The task's files that git tracks but the work tree lacks (a partial or shallow copy: some of
        Toolathlon's tasks hold PDFs and archives of several MiB), or that are still Git LFS pointers.
        [] for a checkout that is not a git work tree (nothing to compare with)."""
        rel = f"tasks/finalpool/{task.name}"
        if not (self.path / ".git").exists():
            return []
        try:
            out = subprocess.run(["git", "-C", str(self.path), "ls-files", "--deleted", "-z", "--", rel],
                                 capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired):
            return []
        missing = [p.decode("utf-8", "replace") for p in out.stdout.split(b"\0") if p] if out.returncode == 0 else []
        for f in sorted((self.path / rel).rglob("*")):
            try:
                if f.is_file() and not f.is_symlink() and f.stat().st_size < 1024 and \
                        f.read_bytes().startswith(b"version https://git-lfs.github.com/spec/"):
                    missing.append(str(f.relative_to(self.path)))
            except OSError:
                continue
        return missing

    def tasks(self, names: list[str] | None = None, say: Callable[[str], None] | None = None) -> list[ToolathlonTask]:
        """The named tasks (each must be local-only, with all its files), or every such task; the
        local-only ones left out for missing files are told to `say`, with the files."""
        if names:
            out = [self.task(n) for n in names]
            bad = {t.name: p for t in out if (p := self.local_problems(t))}
            if bad:
                raise ToolathlonError("not local-only: " + "; ".join(f"{n} ({', '.join(p)})" for n, p in bad.items()))
            gone = {t.name: m for t in out if (m := self.missing_files(t))}
            if gone:
                raise ToolathlonError("files missing from the checkout (a full clone has them): " + "; ".join(
                    f"{n}: {', '.join(m[:4])}{' …' if len(m) > 4 else ''}" for n, m in gone.items()))
            return out
        found = sorted(p.parent.name for p in (self.path / "tasks" / "finalpool").glob("*/task_config.json"))
        local = [t for t in map(self.task, found) if not self.local_problems(t)]
        whole = []
        for t in local:
            missing = self.missing_files(t)
            if missing and say is not None:
                say(f"Toolathlon task {t.name} left out: {len(missing)} of its files are missing from the checkout "
                    f"({', '.join(missing[:3])}{' …' if len(missing) > 3 else ''}; a full clone has them)")
            if not missing:
                whole.append(t)
        return whole

    def server_configs(self, task: ToolathlonTask, workspace: Path) -> dict[str, dict[str, Any]]:
        """The task's servers from configs/mcp_servers/*.yaml (keyed by their `name:`), `${agent_workspace}`,
        `${local_servers_paths}` and `${local_binary_paths}` filled in as Toolathlon does; any other
        variable (`${token.*}`, `${config.*}`) is a ToolathlonError: it is not a local server."""
        by_name: dict[str, dict[str, Any]] = {}
        for f in sorted((self.path / "configs" / "mcp_servers").glob("*.yaml")):
            try:
                doc = yaml.safe_load(_read(self.path, f))
            except (yaml.YAMLError, RecursionError) as exc:
                raise ToolathlonError(f"{f}: invalid YAML ({exc})") from None
            if isinstance(doc, dict) and isinstance(doc.get("name"), str):
                by_name[doc["name"]] = doc
        values = {"agent_workspace": str(workspace), "local_servers_paths": str(self.path / "local_servers"),
                  "local_binary_paths": str(self.path / "local_binary")}

        def fill(v: Any, server: str) -> Any:
            if isinstance(v, str):
                def sub(m: re.Match) -> str:
                    if m.group(1) not in values:
                        raise ToolathlonError(f"server {server}: ${{{m.group(1)}}} is not available offline")
                    return values[m.group(1)]
                return _VAR.sub(sub, v)
            if isinstance(v, list):
                return [fill(x, server) for x in v]
            if isinstance(v, dict):
                return {k: fill(x, server) for k, x in v.items()}
            return v

        out = {}
        for name in task.servers:
            doc = by_name.get(name)
            if doc is None:
                raise ToolathlonError(f"{task.name}: no configs/mcp_servers/*.yaml has name: {name}")
            if doc.get("type", "stdio") != "stdio":
                raise ToolathlonError(f"server {name}: type {doc.get('type')!r} is not a local stdio server")
            params = fill(doc.get("params") or {}, name)
            out[name] = {"command": params.get("command"), "args": params.get("args") or [],
                         "env": params.get("env") or {}, "cwd": params.get("cwd"),
                         "timeout_s": float(doc.get("client_session_timeout_seconds") or 60)}
        return out
