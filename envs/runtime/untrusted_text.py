"""Text that a program, a task's code or a remote server chose, made safe for the host's own log lines.

Log lines are read on terminals (Ray forwards every worker's log to the driver's) and by tools that
split them on newlines. An error message is often the model's own text coming back (a tool server
echoes the arguments it refuses; a verifier quotes the answer it cannot parse), so it could clear the
operator's screen or rewrite what it shows (ANSI escapes), hide the start of its line (a carriage
return), forge a log line of its own (a newline), or reorder what is read (Unicode's bidirectional
overrides). `loggable` shows each such character escaped, as Python's `repr` would, and cuts the text
at `limit` characters (said with a marker), so one line of the log stays one line and bounded.
"""

from __future__ import annotations

import re

#: C0 controls (newline and tab included), DEL, C1 controls, and the bidirectional embeddings,
#: overrides and isolates (U+202A-U+202E, U+2066-U+2069)
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
LOG_TEXT_CHARS = 2000


def _escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def loggable(text: object, limit: int = LOG_TEXT_CHARS) -> str:
    """`text` (anything; `str()` of it) on one line, its control characters escaped, at most `limit`
    characters of it shown."""
    s = str(text)
    more = len(s) - limit
    s = _UNSAFE.sub(_escape, s[:limit])
    return s + (f" [... {more:,} more characters not shown]" if more > 0 else "")
