"""Text that a program, a task's code or a remote server chose, made safe for the host's own log lines.

Log lines are read on terminals (Ray forwards every worker's log to the driver's) and by tools that
split them on newlines. An error message is often the model's own text coming back (a tool server
echoes the arguments it refuses; a verifier quotes the answer it cannot parse), so it could clear the
operator's screen or rewrite what it shows (ANSI escapes), hide the start of its line (a carriage
return), forge a log line of its own (a newline, or U+2028 where a viewer breaks lines there), or
reorder what is read (Unicode's bidirectional controls). `loggable` is Python's own `repr` of the
text without its quotes: every character `str.isprintable` refuses (controls, format characters,
separators, lone surrogates) is shown as its escape, and a backslash as two, so what is shown cannot
be mistaken for an escape. The text is cut at `limit` characters first (said with a marker), so one
line of the log stays one line and bounded.
"""

from __future__ import annotations

LOG_TEXT_CHARS = 2000


def loggable(text: object, limit: int = LOG_TEXT_CHARS) -> str:
    """`text` (anything; `str()` of it) on one line, escaped as `repr` does, at most `limit` characters
    of it shown."""
    s = str(text)
    more = len(s) - limit
    return repr(s[:limit])[1:-1] + (f" [... {more:,} more characters not shown]" if more > 0 else "")
