"""Where a run writes: `run.out_dir` made absolute, somewhere that outlives the process writing it.

A driver started by `ray job submit --working-dir .` runs in Ray's unpacked copy of the working
directory (`…/runtime_resources/working_dir_files/_ray_pkg_…`), which Ray deletes with its session:
a relative `run.out_dir` there would take the model, checkpoints and metrics with it. So inside that
copy a relative `run.out_dir` is taken relative to `$PROGAGENT_HOME` (default `~/progagent`) on the
driver's node, and the driver prints the absolute folder. Elsewhere it is relative to the current
directory, as any path. On a cluster of several nodes give an absolute path on storage every node
mounts (the learner writes checkpoints and the model from its own node).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

#: path components of the folder Ray unpacks a job's `--working-dir` into
RAY_WORKING_DIR_COPY = ("runtime_resources", "working_dir_files")


def in_ray_working_dir_copy(cwd: Path) -> bool:
    parts = cwd.resolve().parts
    return any(parts[i:i + 2] == RAY_WORKING_DIR_COPY for i in range(len(parts) - 1))


def home() -> Path:
    return Path(os.environ.get("PROGAGENT_HOME") or Path.home() / "progagent").expanduser()


def run_root(out_dir: str, cwd: Path | None = None) -> tuple[Path, str]:
    """The absolute folder for `run.out_dir`, and a note for the log when it is not where the
    relative path would have put it ("" otherwise)."""
    cwd = cwd or Path.cwd()
    path = Path(out_dir).expanduser()
    if path.is_absolute():
        return path, ""
    if in_ray_working_dir_copy(cwd):
        root = home() / path
        return root, (f"run.out_dir={out_dir} is relative and this driver runs in Ray's temporary copy of the "
                      f"working directory ({cwd}), which Ray deletes with its session: writing under {root} "
                      f"instead ($PROGAGENT_HOME, default ~/progagent; or give an absolute run.out_dir)")
    return (cwd / path).resolve(), ""


class OutputError(ValueError):
    """An output path a command cannot write: said before the command does its work."""


def _parents_are_folders(path: Path) -> None:
    """mkdir's own error under a file is "File exists", which names the wrong thing."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{path}: {parent} is not a folder")
            return


@contextlib.contextmanager
def output_file(path: Path) -> Iterator[IO[bytes]]:
    """A file that becomes `path` whole when the block ends without an error, opened before the work
    that fills it: a path that cannot be written is an OutputError before anything runs (a report
    written after an hour of work was lost to a typo), and a run that fails leaves an earlier file as
    it was. The file grows beside `path` (`.NAME.*.part`, removed on failure)."""
    if path.is_dir():
        raise OutputError(f"{path} is a folder: name the file to write")
    _parents_are_folders(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".part", delete=False)
    except OSError as exc:
        raise OutputError(f"{path}: {exc.strerror or exc}") from None
    try:
        with part:
            yield part
        os.replace(part.name, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(part.name)


def output_folder(path: Path) -> Path:
    """`path` as a folder a command writes into (made when missing), or an OutputError saying why not."""
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path} exists and is not a folder")
    _parents_are_folders(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{path}: {exc.strerror or exc}") from None
    return path
