"""LOCA's memory graphs, in the format the memory server reads.

The npm memory server (@modelcontextprotocol/server-memory, every version) reads MEMORY_FILE_PATH as
JSON Lines: one entity or relation per line. LOCA ships CanvasArrangeExam's
`initial_workspace/memory/memory.json` as one pretty-printed JSON object over many lines, so the server
fails on its first line ("{") and every `read_graph` is an error: no server version reads it, so no
pin fixes it. The same values, one per line, are what the file means; `as_json_lines` rewrites such a
file before the server starts (a file that is already JSON Lines, or is not JSON at all, is left as
it is: the server says what it says about it).

The file is the task generator's or the model's, so the rewrite never raises whatever it holds: a
file over MAX_BYTES, nested deeper than MAX_DEPTH (checked by one scan before any parse, so the
recursive JSON decoder never meets it, whatever the interpreter's recursion limit), holding a value
UTF-8 cannot write (a lone surrogate escape, "\\ud800"), or that cannot be written back, is left
exactly as it is.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from envs.runtime import untrusted_fs

#: the most a memory file may hold to be rewritten (LOCA's are under 1 KiB at every preset): it bounds
#: the parse's time and memory
MAX_BYTES = 1 << 20
#: the deepest nesting of arrays and objects rewritten (a graph's entity is 2 deep)
MAX_DEPTH = 64
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.S)  # a JSON string (or one left open to the end)
_BRACKET = re.compile(r"[\[\]{}]")


def deeper_than(text: str, limit: int) -> bool:
    """Whether the JSON in `text` nests arrays and objects more than `limit` deep (brackets inside
    strings do not count): one linear scan, no recursion."""
    depth = 0
    for bracket in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > limit:
            return True
    return False


def json_values(text: str) -> list[object] | None:
    """The JSON values `text` holds one after another (whitespace between), or None when it is not
    that. `text` nests at most MAX_DEPTH deep (deeper_than): the decoder recurses per level."""
    decoder, i, out = json.JSONDecoder(), 0, list[object]()
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return out
        try:
            value, i = decoder.raw_decode(text, i)
        except ValueError:
            return None
        out.append(value)


def is_json_lines(text: str) -> bool:
    try:
        for line in text.splitlines():
            if line.strip():
                json.loads(line)
    except ValueError:
        return False
    return True


def as_json_lines(root: Path, relpath: str) -> bool:
    """Rewrite `root`/`relpath` as JSON Lines when it holds JSON values spread over lines; True when it
    did. Read and written without following links (untrusted_fs): the file is in the episode's folder."""
    try:
        text = untrusted_fs.read_file(root, relpath, max_bytes=MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError):  # untrusted_fs.PathRefused is an OSError
        return False
    if deeper_than(text, MAX_DEPTH) or is_json_lines(text):
        return False
    values = json_values(text)
    if not values or not all(isinstance(v, dict) for v in values):
        return False
    try:
        data = "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in values).encode()
        untrusted_fs.write_file(root, relpath, data)
    except (UnicodeEncodeError, OSError):  # a lone surrogate; a link planted where the file was
        return False
    return True
