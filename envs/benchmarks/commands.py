"""A benchmark's server command, as its own configs write it, mapped to what is installed here.

Benchmarks launch servers through package runners (`uv run`, `uvx`, `npx`) that would resolve and
download packages at run time; here every program comes from the benchmark's environment, made once
from a pinned list (envs/benchmarks/environment.py), and nothing is fetched while episodes run:

    python / python3 ARGS                  -> the environment's python ARGS
    uv [--directory D] run python ARGS     -> python ARGS          (uv run -m MOD: python -m MOD)
    uv run EXE ARGS                        -> the environment's bin/EXE ARGS
    uvx [--from PKG] EXE ARGS              -> bin/EXE ARGS         (uvx PKG: bin/PKG)
    npx [-y] PACKAGE ARGS                  -> PACKAGE's executable under node_dir ARGS
    EXE ARGS                               -> bin/EXE ARGS, else an absolute EXE as given

A program that is not installed is a CommandError naming the server and what is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envs.benchmarks.environment import node_bin


class CommandError(ValueError):
    """A server whose program is not installed in the benchmark's environment (or a command of a shape
    the mapping does not know)."""


def _bin(name: str, exe: str, bin_dir: Path, args: list[str]) -> list[str]:
    path = bin_dir / exe.split("@")[0].split("==")[0]
    if not path.exists():
        raise CommandError(f"server {name!r}: {path.name} is not installed in the benchmark's environment ({bin_dir})")
    return [str(path), *args]


def server_command(name: str, cfg: dict[str, Any], python: str, node_dir: str) -> list[str]:
    """The argv of one server config ({command, args}) as installed here (module docstring)."""
    cmd, args = cfg.get("command"), [str(a) for a in cfg.get("args") or []]
    bin_dir = Path(python).parent
    if not isinstance(cmd, str) or not cmd:
        raise CommandError(f"server {name!r}: no command in {cfg!r}")
    if cmd in ("python", "python3") or cmd.startswith("python3."):
        return [python, *args]
    if cmd == "uv":
        if "run" not in args:
            raise CommandError(f"server {name!r}: `uv {' '.join(args)}` is not `uv … run …`")
        rest = args[args.index("run") + 1:]
        while rest and rest[0].startswith("--") and rest[0] not in ("--",):  # uv run's own options
            rest = rest[2:] if rest[0] in ("--directory", "--project", "--with", "--python") else rest[1:]
        if rest and rest[0] in ("python", "python3"):
            return [python, *rest[1:]]
        if rest and rest[0] == "-m":
            return [python, *rest]
        if rest and not rest[0].startswith("-"):
            return _bin(name, rest[0], bin_dir, rest[1:])
        raise CommandError(f"server {name!r}: `uv {' '.join(args)}` is not `uv … run python SCRIPT`")
    if cmd in ("npx", "npm"):
        rest = [a for a in args if a not in ("-y", "--yes", "exec")]
        if not rest:
            raise CommandError(f"server {name!r}: `{cmd}` without a package")
        exe = node_bin(node_dir, rest[0]) if node_dir else None
        if exe is None:
            raise CommandError(f"server {name!r}: npm package {rest[0]} is not installed under "
                               f"{node_dir or '(no node_dir)'}")
        return [str(exe), *rest[1:]]
    if cmd == "uvx":
        rest = list(args)
        if rest[:1] == ["--from"]:
            rest = rest[2:]
        if not rest or rest[0].startswith("-"):
            raise CommandError(f"server {name!r}: `uvx {' '.join(args)}` names no program")
        return _bin(name, rest[0], bin_dir, rest[1:])
    if (bin_dir / cmd).exists():
        return [str(bin_dir / cmd), *args]
    if Path(cmd).is_absolute() and Path(cmd).exists():
        return [cmd, *args]
    raise CommandError(f"server {name!r}: {cmd} is not installed in the benchmark's environment ({bin_dir})")
