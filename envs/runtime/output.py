"""What a program's execution looks like to the model.

- Printed stdout and stderr, in the order they arrived. The value of the last expression is NOT
  shown unless `RuntimeConfig.show_last_expression` is set: only prints return (as in the paper).
- Output longer than `max_output_chars` is cut in the middle-free way models handle best: the
  head is kept and a marker says how many characters were dropped. The whole text, error included,
  stays within `max_output_chars` (plus the markers): an exception's traceback keeps its end
  (where the error is) within half of it, and the printed output gets the rest.
- An exception shows its traceback with ANSI colours and the runtime's own frames (the tool
  proxy) removed, ending with `ToolError: <the server's message>` for failed tool calls.
- A timeout, a crash or an OOM kill says what happened and whether variables survived; messages a
  program forged on its kernel's sockets are ignored, and the text says so.
"""

from __future__ import annotations

import re

from envs.runtime.kernel import ExecResult

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_INTERNAL = ("/opt/progagent/", "progagent_tools.py", "site-packages/ipykernel", "site-packages/IPython")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def truncate(text: str, limit: int, total: int | None = None) -> str:
    total = len(text) if total is None else max(total, len(text))
    if total <= limit:
        return text
    return text[:limit] + f"\n[... output cut: {total - limit:,} of {total:,} characters not shown ...]\n"


def clean_traceback(frames: list[str]) -> str:
    """Traceback text without colours and without frames of the runtime's tool proxy."""
    kept = []
    for frame in frames:
        plain = strip_ansi(frame)
        if any(marker in plain for marker in _INTERNAL):
            continue
        kept.append(plain.rstrip("\n"))
    return "\n".join(k for k in kept if k.strip())


def _tail(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"[... traceback cut: {len(text) - limit:,} of {len(text):,} characters not shown ...]\n" + text[-limit:]


def render(result: ExecResult, max_chars: int, timeout_s: float, show_last_expression: bool = False) -> str:
    tail: list[str] = []  # what follows the printed output: the last value, notes, the error
    if show_last_expression and result.last_value is not None and not result.error_name:
        tail.append(truncate(result.last_value, max_chars // 2))
    if result.timed_out:
        note = f"[program timed out after {timeout_s:g} s and was interrupted"
        note += "; the kernel did not respond and was restarted: all variables and imports are gone]" \
            if result.restarted else "; variables defined before the interruption are kept]"
        tail.append(note)
    elif result.died:
        why = "it ran out of memory (limit reached) and was killed" if result.oom_killed else "the kernel process died"
        tail.append(f"[{why}; a fresh kernel was started: all variables and imports are gone]")
    elif result.restarted:
        tail.append("[the kernel had stopped and was restarted before this program: earlier variables are gone]")
    if result.bad_messages:
        tail.append(f"[the program sent {result.bad_messages} message(s) on the kernel's sockets that were not valid "
                    f"kernel messages (unsigned, malformed or too large); they were ignored]")
    if result.error_name and not result.timed_out:
        tb = clean_traceback(result.traceback)
        last = f"{result.error_name}: {result.error_value}" if result.error_value else result.error_name
        if not tb.rstrip().endswith(last.rstrip()) and not tb.rstrip().endswith(f"{last}:"):
            tb = f"{tb}\n{last}" if tb else last
        tail.append(_tail(tb, max_chars // 2))
    rest = "\n".join(p.rstrip("\n") for p in tail if p)
    parts = [truncate(result.output, max(0, max_chars - len(rest)), result.output_chars + result.reported_dropped)] \
        if result.output_chars else []
    text = "\n".join(p.rstrip("\n") for p in [*parts, rest] if p)
    return text if text else "[no output: the program printed nothing]"
