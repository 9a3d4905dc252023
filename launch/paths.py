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

import os
from pathlib import Path

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
