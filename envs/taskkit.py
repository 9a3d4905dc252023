"""What a task author imports: scales, the environment handle, the `@tool` marker and errors.

A task folder (see envs/format/TASK_FORMAT.md) only depends on this module and the standard library, so
that the same files run in the validator, in the per-episode MCP tool server and in the synthesis
pipeline. Nothing here knows about sandboxes or MCP transports.
"""

from __future__ import annotations

import inspect
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from envs.runtime import untrusted_fs

__all__ = [
    "SCALES",
    "Env",
    "Scale",
    "ToolError",
    "VerifyContext",
    "answer_field",
    "page",
    "scale_named",
    "tool",
]


class ToolError(Exception):
    """A failure the model should read: the tool server returns its message as an error result
    (envs/format/task_server.py turns it into the MCP SDK's ToolError; this module does not import the SDK,
    whose import costs ~0.6 s of CPU in every process that only builds or judges tasks)."""


def call_tool(env: Env, name: str, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """`fn(env, **kwargs)` as one transaction, the way every task server calls a tool: committed when
    it returns, rolled back when it raises. A failure is a ToolError with what the model sees: the
    tool's own message, or "NAME failed: Type: message" for a bug in the tool."""
    try:
        result = fn(env, **kwargs)
        env.db.commit()
        return result
    except ToolError:
        env.db.rollback()
        raise
    except Exception as exc:  # noqa: BLE001 - a bug in a tool is an error result, not a crash
        env.db.rollback()
        raise ToolError(f"{name} failed: {type(exc).__name__}: {exc}") from exc


class Scale(msgspec.Struct, frozen=True):
    """One environment scale: database rows grow by `rows`, workspace files by `files`."""

    name: str
    index: int
    rows: int
    files: float

    def n_rows(self, base: int) -> int:
        """Rows of a table whose v0 size is `base`."""
        return base * self.rows

    def n_files(self, base: int) -> int:
        """Number of workspace files of a kind whose v0 count is `base`."""
        return max(1, round(base * self.files))


#: Defaults; a task may override the factors in task.toml ([scales]).
SCALES: dict[str, Scale] = {
    "v0": Scale("v0", 0, 1, 1.0),
    "v1": Scale("v1", 1, 2, 1.7),
    "v2": Scale("v2", 2, 4, 2.5),
    "v3": Scale("v3", 3, 8, 3.4),
}


def scale_named(name: str, rows: int | None = None, files: float | None = None) -> Scale:
    if name not in SCALES:
        raise ValueError(f"unknown scale {name!r}; expected one of {', '.join(SCALES)}")
    base = SCALES[name]
    return Scale(name, base.index, rows if rows is not None else base.rows, files if files is not None else base.files)


class Env:
    """The state of one episode's environment: `root/db.sqlite` and `root/workspace/`."""

    def __init__(self, root: str | Path, *, readonly: bool = False):
        self.root = Path(root)
        self.db_path = self.root / "db.sqlite"
        self.workspace = self.root / "workspace"
        self.readonly = readonly
        self._db: sqlite3.Connection | None = None
        self._counts: dict[tuple[str, str], tuple[int, int]] = {}  # query_page: (sql, params) -> (changes, count)

    @property
    def db(self) -> sqlite3.Connection:
        """A connection with rows as `sqlite3.Row`; opened on first use, autocommit off."""
        if self._db is None:
            if self.readonly:
                uri = f"file:{self.db_path}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
            else:
                self._db = sqlite3.connect(self.db_path, check_same_thread=False)
                # an episode's database is scratch state: no fsync per tool call (the verifier reads
                # the file after this connection closes, which needs no durability)
                self._db.execute("pragma synchronous = off")
            self._db.row_factory = sqlite3.Row
        return self._db

    def query(self, sql: str, params: tuple | dict = ()) -> list[dict[str, Any]]:
        """Rows as dicts. Fetched as tuples and zipped with the column names: a quarter faster than
        `dict(sqlite3.Row)`, and verifiers read whole tables at v3."""
        cur = self.db.cursor()
        cur.row_factory = None
        cur.execute(sql, params)
        cols = [d[0] for d in cur.description or ()]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def query_page(self, sql: str, params: tuple | dict, page_no: int, page_size: int) -> dict[str, Any]:
        """`page(self.query(sql, params), page_no, page_size)` with the paging done by SQLite.

        Same result, but only one page of rows leaves the database: a list tool at v3 otherwise
        materialises thousands of rows per call to return fifty. `sql` must fix the order (ORDER BY).
        """
        if page_no < 1:
            raise ToolError("page must be >= 1")
        start = (page_no - 1) * page_size
        # the count is a full scan: kept while this connection (the episode's only writer) changed no
        # row, so paging through a list counts once, not once per page
        key, changes = (sql, repr(params)), self.db.total_changes
        cached = self._counts.get(key)
        if cached is not None and cached[0] == changes:
            total = cached[1]
        else:
            total = self.db.execute(f"select count(*) from ({sql})", params).fetchone()[0]
            self._counts[key] = (changes, total)
        if isinstance(params, dict):
            items = self.query(f"{sql} limit :_page_limit offset :_page_offset",
                               {**params, "_page_limit": page_size, "_page_offset": start})
        else:
            items = self.query(f"{sql} limit ? offset ?", (*params, page_size, start))
        return {"items": items, "page": page_no, "page_size": page_size, "total": total,
                "next_page": page_no + 1 if start + page_size < total else None}

    #: the largest workspace file a tool reads: a program can write a file of any size
    MAX_READ_BYTES = 8 * 2**20

    def read_bytes(self, path: str) -> bytes:
        """The bytes of the workspace file `path` (relative to the workspace), read as the host must
        read what a program may have written (envs/runtime/untrusted_fs.py): never through a link, never a
        pipe or device, never more than MAX_READ_BYTES. Anything else is a ToolError saying why."""
        try:
            return untrusted_fs.read_file(self.workspace, path, self.MAX_READ_BYTES)
        except untrusted_fs.PathRefused as exc:
            text = str(exc)
            if text.endswith("does not exist") or text.endswith("is not a folder"):
                raise ToolError(f"no file {path!r} in the workspace; use list_files to see the available paths") \
                    from None
            if "is a folder" in text:
                raise ToolError(f"{path!r} is a folder; list_files(directory={path!r}) lists its files") from None
            raise ToolError(text) from None

    def read_text(self, path: str) -> str:
        """`read_bytes` decoded as UTF-8."""
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolError(f"{path!r} is not UTF-8 text (byte {exc.start})") from None

    def write_text(self, path: str, text: str) -> int:
        """Create or replace the workspace file `path` (parent folders created); its size in bytes.
        Never writes through a link: the new file takes the name in place (envs/runtime/untrusted_fs.py)."""
        try:
            return untrusted_fs.write_file(self.workspace, path, text.encode("utf-8"))
        except untrusted_fs.PathRefused as exc:
            raise ToolError(str(exc)) from None

    def list_files(self, directory: str = "") -> list[dict[str, Any]]:
        """[{"path", "bytes"}] of every regular file under the workspace folder `directory` ("" = all),
        paths relative to the workspace, in path order. Links and special files are not listed (nor
        followed); a tree past the walk's limits is a ToolError."""
        try:
            return [{"path": p, "bytes": n} for p, n in untrusted_fs.list_files(self.workspace, directory)]
        except untrusted_fs.TreeTooLarge as exc:
            raise ToolError(str(exc)) from None
        except untrusted_fs.PathRefused as exc:
            text = str(exc)
            if text.endswith("does not exist") or text.endswith("is not a folder"):
                raise ToolError(f"no folder {directory!r} in the workspace; call list_files() to see every file") \
                    from None
            raise ToolError(text) from None

    def file(self, relpath: str) -> Path:
        """A workspace path, refused when it leaves the workspace at the time of the call.

        Only for code that runs inside a sandbox (model-written tasks: their tools and verifiers run in
        bubblewrap, envs/format/code_runner.py): the folder checked now may be a link by the time the path is
        opened, so the host never opens such a path. Shipped tasks use `read_text`, `write_text` and
        `list_files` (tests/test_task_format.py holds them to it)."""
        path = (self.workspace / relpath).resolve()
        if not path.is_relative_to(self.workspace.resolve()):
            raise ToolError(f"path {relpath!r} is outside the workspace")
        return path

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
            self._counts.clear()


class VerifyContext(msgspec.Struct):
    """What a verifier sees: the final state, a fresh copy of the initial state, the answer."""

    final: Any  # Env (read-only)
    initial: Any  # Env (read-only), rebuilt from (scale, seed)
    answer: str
    scale: Scale
    seed: int


_TOOL_ATTR = "__progagent_tool__"


def tool(fn: Callable) -> Callable:
    """Mark `fn(env, **kwargs)` as a task tool. Its docstring and annotations become the schema."""
    params = list(inspect.signature(fn).parameters)
    if not params or params[0] != "env":
        raise TypeError(f"tool {fn.__name__} must take `env` as its first parameter")
    setattr(fn, _TOOL_ATTR, True)
    return fn


def is_tool(obj: Any) -> bool:
    return callable(obj) and getattr(obj, _TOOL_ATTR, False)


def page(rows: list[Any], page_no: int, page_size: int) -> dict[str, Any]:
    """Bounded returns: one page of `rows` plus what a caller needs to fetch the next one."""
    if page_no < 1:
        raise ToolError("page must be >= 1")
    start = (page_no - 1) * page_size
    items = rows[start : start + page_size]
    has_more = start + page_size < len(rows)
    return {
        "items": items,
        "page": page_no,
        "page_size": page_size,
        "total": len(rows),
        "next_page": page_no + 1 if has_more else None,
    }


def answer_field(answer: str, name: str = "ANSWER") -> str | None:
    """The text after the last `NAME:` line of a final answer, or None when absent."""
    found = re.findall(rf"^\s*\**{re.escape(name)}\**\s*:\s*(.*)$", answer or "", flags=re.M | re.I)
    return found[-1].strip() if found else None
