"""Reading model replies: task files in fenced blocks, and JSON objects.

The prompts ask for files as

    ### FILE: data.py
    ```python
    ...complete file...
    ```

(a longer fence, e.g. ````, around a file that itself contains ``` lines). Also accepted, because
models drift: the path in the fence's info string (```python title=data.py), and a JSON object
{"files": {path: content}} or {"files": [{"path", "content"}]}. Anything else raises
ResponseFormatError with a message written for the model: it is sent back as the retry prompt.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

_HEADING = re.compile(r"^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*)?FILE[ \t]*:[ \t]*`?([^\s`*]+)`?(?:\*\*)?[ \t]*$",
                      re.IGNORECASE | re.MULTILINE)
_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\n`]*)$", re.MULTILINE)
_INFO_PATH = re.compile(r"(?:^|\s)(?:title=|file=|path=)?[\"']?([\w./-]+\.(?:py|md|toml|json|csv|txt))[\"']?\s*$")


class ResponseFormatError(ValueError):
    """A reply that does not have the required shape; the message tells the model how to fix it."""


FORMAT_HELP = ("Write each file as a line `### FILE: <path>` followed by one fenced code block holding the "
               "complete file (use a fence of four backticks for a file that contains triple backticks).")


def _close(text: str, start: int, fence: str) -> re.Match[str] | None:
    """The closing fence of a block opened by `fence`: the same character, at least as long."""
    return re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE).search(text, start)


def _blocks(text: str) -> list[tuple[int, int, str, str]]:
    """Fenced blocks as (start, end, info string, content), outermost only."""
    out, pos = [], 0
    while m := _OPEN.search(text, pos):
        end = _close(text, m.end(), m.group(1))
        if end is None:
            raise ResponseFormatError(f"a code block opened with {m.group(1)} at line "
                                      f"{text.count(chr(10), 0, m.start()) + 1} is never closed (the reply may "
                                      "have been cut off). " + FORMAT_HELP)
        out.append((m.start(), end.end(), m.group(2).strip(), text[m.end() + 1:end.start()]))
        pos = end.end()
    return out


def _check_path(path: str, allowed: Callable[[str], bool]) -> str:
    raw = path.strip().removeprefix("./")
    clean = posixpath.normpath(raw) if raw else ""
    if raw.startswith("/") or clean in ("", ".", "..") or clean.startswith("../"):
        raise ResponseFormatError(f"file path {path!r} must be relative to the task folder")
    if not allowed(clean):
        raise ResponseFormatError(f"file {clean!r} is not one this step may write")
    return clean


def _files_from_json(text: str) -> dict[str, str] | None:
    body = text.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*\n(.*)\n```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1)
    if not body.startswith("{"):
        return None
    try:
        obj = json.loads(body)
    except ValueError:
        return None
    files = obj.get("files") if isinstance(obj, dict) else None
    if isinstance(files, list):
        files = {f.get("path"): f.get("content") for f in files if isinstance(f, dict)}
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise ResponseFormatError('a JSON reply must be {"files": {"<path>": "<complete file>", ...}}')
    return files


def parse_files(text: str, allowed: Callable[[str], bool], required: tuple[str, ...] = ()) -> dict[str, str]:
    """The files of a reply, by relative path. `required` names files that must be present."""
    files = _files_from_json(text)
    if files is None:
        files = {}
        blocks = _blocks(text)
        headings = list(_HEADING.finditer(text))
        for i, h in enumerate(headings):
            nxt = headings[i + 1].start() if i + 1 < len(headings) else len(text)
            block = next((b for b in blocks if h.end() <= b[0] < nxt), None)
            if block is None:
                raise ResponseFormatError(f"`FILE: {h.group(1)}` is not followed by a fenced code block. " + FORMAT_HELP)
            files[h.group(1)] = block[3]
        if not headings:  # the path in the fence's info string
            for _, _, info, content in blocks:
                m = _INFO_PATH.search(info)
                if m:
                    files[m.group(1)] = content
    if not files:
        raise ResponseFormatError("the reply contains no files. " + FORMAT_HELP)
    out = {}
    for path, content in files.items():
        out[_check_path(path, allowed)] = content if content.endswith("\n") else content + "\n"
    missing = [r for r in required if r not in out]
    if missing:
        raise ResponseFormatError(f"the reply lacks {', '.join(missing)} (found: {', '.join(sorted(out))}). "
                                  + FORMAT_HELP)
    return out


def parse_json(text: str, type_: type[T]) -> T:
    """The JSON object of a reply (bare, or in a ```json block), decoded into `type_`."""
    try:
        candidates = [b[3] for b in _blocks(text) if b[2].lower() in ("json", "")]
    except ResponseFormatError:
        candidates = []
    candidates.append(text.strip())
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        candidates.append(text[first:last + 1])
    error: Exception | None = None
    for body in candidates:
        try:
            obj: Any = json.loads(body)
        except ValueError as exc:
            error = error or exc
            continue
        try:
            return msgspec.convert(obj, type_, strict=False)
        except msgspec.ValidationError as exc:
            raise ResponseFormatError(f"the JSON object does not match the required shape: {exc}") from exc
    raise ResponseFormatError(f"the reply holds no valid JSON object ({error}); reply with one JSON object "
                              "in a ```json block")
