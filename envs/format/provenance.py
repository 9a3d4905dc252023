"""Which task folders ship with ProgAgent: the only task code this project imports into a host process.

A task folder's data.py, tools.py and verify.py (and wrong/*.py, run as plain calls by the validator)
are Python run by whoever loads the task. The shipped ones (envs/tasks/, envs/starter_tasks/) are
reviewed with the project. Anything else (a synthesized task copied into a library, a `--root`
folder, a download) is the model's or a stranger's, and runs only in bubblewrap
(envs/format/code_runner.py), on every path that loads tasks: validate, train, eval, filter, judges.

"Shipped" is checked, not assumed from a location: the folder must be a direct child of a shipped
library folder AND every file in it must have the SHA-256 recorded in envs/format/shipped_tasks.json. A
task dropped into envs/tasks/, or a shipped task edited in place, is external until the manifest is
regenerated (`python -m envs.format.provenance --update`, which a test keeps current). Standard library only.

    python -m envs.format.provenance --update     # after editing a shipped task on purpose
    python -m envs.format.provenance --check      # exit 1 when the manifest is stale
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from envs.runtime import untrusted_fs

ENVS = Path(__file__).resolve().parents[1]
SHIPPED_LIBRARIES = (ENVS / "tasks", ENVS / "starter_tasks")
MANIFEST = Path(__file__).resolve().with_name("shipped_tasks.json")

SHIPPED = "shipped"
EXTERNAL = "external"


def folder_digest(folder: Path) -> dict[str, str]:
    """SHA-256 of every file in a task folder (relative path → hex), caches left out, read without
    following links (envs/runtime/untrusted_fs.py). A link or a special file is recorded as such: it never
    makes a folder shipped."""
    out: dict[str, str] = {}
    for entry in untrusted_fs.walk(folder, max_entries=10_000, max_depth=16):
        if "__pycache__" in entry.path.split("/") or entry.path.endswith(".pyc") or entry.is_dir:
            continue
        if not entry.is_file:
            out[entry.path] = "not-a-regular-file"
            continue
        with entry.open() as f:
            out[entry.path] = hashlib.file_digest(f, "sha256").hexdigest()
    return dict(sorted(out.items()))


def _manifest() -> dict[str, dict[str, str]]:
    try:
        return json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}


_KNOWN: dict[str, dict[str, str]] | None = None


def provenance(folder: str | Path) -> str:
    """"shipped" when `folder` is a shipped library's task whose files match the manifest, else "external"."""
    global _KNOWN
    folder = Path(folder).resolve()
    key = next((f"{lib.name}/{folder.name}" for lib in SHIPPED_LIBRARIES if folder.parent == lib), None)
    if key is None:
        return EXTERNAL
    if _KNOWN is None:
        _KNOWN = _manifest()
    want = _KNOWN.get(key)
    if want is None:
        return EXTERNAL
    try:
        return SHIPPED if folder_digest(folder) == want else EXTERNAL
    except OSError:  # unreadable, too large, a link where a folder was: not what was shipped
        return EXTERNAL


def build_manifest() -> dict[str, dict[str, str]]:
    out = {}
    for lib in SHIPPED_LIBRARIES:
        folders = sorted(p for p in lib.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))) \
            if lib.is_dir() else []
        for folder in folders:
            if (folder / "task.toml").is_file():
                out[f"{lib.name}/{folder.name}"] = folder_digest(folder)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The manifest of task folders shipped with ProgAgent.")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--update", action="store_true", help="rewrite envs/format/shipped_tasks.json from the folders")
    group.add_argument("--check", action="store_true", help="exit 1 when the manifest does not match the folders")
    args = parser.parse_args(argv)
    built = build_manifest()
    if args.update:
        MANIFEST.write_text(json.dumps(built, indent=1, sort_keys=True) + "\n")
        print(f"{MANIFEST}: {len(built)} shipped tasks")
        return 0
    stale = sorted(k for k in built.keys() | _manifest().keys() if built.get(k) != _manifest().get(k))
    for key in stale:
        print(f"stale: {key}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
