"""Output limits inside the kernel: what a program's cell sends to the runtime stays small.

The runtime cuts what the model sees at `max_output_chars`, and refuses kernel messages larger than
a few MiB (envs/runtime/kernel.py). Without this module a program that prints 20 MB, raises
`ValueError('E' * 20_000_000)` or has a `__str__` that returns that much would send one 20 MB
message, which the runtime drops, losing the end of the cell with it. So, per cell:

- stdout and stderr pass up to `budget` characters; the rest is counted, not sent, and the count
  goes out last as one marker (`MARKER`), so the runtime's "N of M characters not shown" stays exact;
- an exception's value and traceback are cut to `budget` characters (the traceback keeps its last
  frames, where the error is), in the error message and in the execute reply;
- the value of the last expression is sent only when the runtime shows it, cut the same way;
  rich display output (display(), images) is not sent: the model reads printed text only.

This is courtesy, not a defence: a program owns its kernel and can undo all of it. The runtime
enforces its own limits on what arrives. Standard library and IPython only.
"""

from __future__ import annotations

import sys

MARKER = "\x00progagent-dropped:{}\x00"


class _Budget:
    def __init__(self, budget: int):
        self.budget = budget
        self.sent = self.dropped = 0


def _capped(text: str, limit: int, keep_end: bool = False) -> str:
    if len(text) <= limit:
        return text
    return text[-limit:] if keep_end else text[:limit]


class _CappedValue:
    """An exception value whose str() is cut: ipykernel calls str(evalue) itself."""

    def __init__(self, value: BaseException, limit: int):
        try:
            self.text = _capped(str(value), limit)
        except Exception as exc:  # noqa: BLE001 - a __str__ that raises still gives a readable error
            self.text = f"<str() of the exception raised {type(exc).__name__}>"

    def __str__(self) -> str:
        return self.text


def _drain_fd_capture(wait_s: float = 0.2) -> None:
    """Let ipykernel's watcher threads take what the cell wrote to file descriptors 1 and 2 (os.write, a
    child process) before the cell ends: they read their pipes on their own, and what they forward
    after the kernel reports idle is lost to the runtime (it belongs to a finished cell)."""
    import fcntl
    import struct
    import termios
    import time

    deadline = time.monotonic() + wait_s
    for stream in (sys.stdout, sys.stderr):
        fid = getattr(stream, "_fid", None)
        if fid is None:
            continue
        try:
            while struct.unpack("i", fcntl.ioctl(fid, termios.FIONREAD, b"\0" * 4))[0] and time.monotonic() < deadline:
                time.sleep(0.002)
        except OSError:
            continue
    time.sleep(0.0002)  # a GIL switch: the watcher hands what it read to the stream just after reading it


def _sync_fd_capture(sync: dict, timeout_s: float = 1.0) -> None:
    """Make sure what the cell wrote to file descriptors 1 and 2 is in the streams before the cell
    ends. After the pipes drained, a token written to each fd reaches its stream's write() after
    everything written before it (a pipe keeps order and the watcher forwards in order), so once the
    write wrapper has seen the token (and dropped it), nothing of the cell is left behind. Bounded:
    a program that jams the pipe costs at most `timeout_s` per stream."""
    import os
    import secrets
    import threading

    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        if getattr(stream, "_fid", None) is None or not hasattr(stream.write, "progagent_original"):
            continue
        token = f"\x00progagent-sync:{secrets.token_hex(8)}\x00"
        done = threading.Event()
        sync[fd] = (token, done)
        try:
            os.write(fd, token.encode())
            done.wait(timeout_s)
        except OSError:
            pass
        finally:
            sync.pop(fd, None)


def install(budget: int, show_last_expression: bool) -> None:
    shell = get_ipython()  # type: ignore[name-defined]  # noqa: F821 - run inside IPython
    state = _Budget(budget)
    sync: dict[int, tuple] = {}  # fd -> (token, event) while _sync_fd_capture waits for the token

    def budgeted(original, fd):
        def write(text, *args, **kwargs):
            pending = sync.get(fd)
            synced = pending is not None and isinstance(text, str) and pending[0] in text
            if synced:
                text = text.replace(pending[0], "")
            n = len(text) if isinstance(text, str) else 0
            room = state.budget - state.sent
            if room > 0 and n:
                original(text[:room] if n > room else text, *args, **kwargs)
                state.sent += min(n, room)
            state.dropped += max(0, n - max(room, 0))
            if synced:
                pending[1].set()
            return n

        write.progagent_original = original
        return write

    def pre_run_cell(*_args):
        # per cell, on top of what the stream has then: IPython patches `stream.write` around every
        # cell (its output history) and puts back what it found at the end, which removes this too
        state.sent = state.dropped = 0
        for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
            if not hasattr(stream.write, "progagent_original"):
                stream.write = budgeted(stream.write, fd)

    def post_run_cell(result=None, *_args):
        _drain_fd_capture()
        _sync_fd_capture(sync)
        if state.dropped:
            write = sys.stdout.write
            getattr(write, "progagent_original", write)(MARKER.format(state.dropped))
            state.dropped = 0
        # ipykernel's execute reply carries str(error) once more, uncut: give it a cut copy
        error = getattr(result, "error_in_exec", None)
        if error is not None:
            text = _CappedValue(error, budget).text
            result.error_in_exec = type(type(error).__name__, (Exception,), {"__str__": lambda self: text})()

    shell.events.register("pre_run_cell", pre_run_cell)
    shell.events.register("post_run_cell", post_run_cell)

    show_traceback = shell._showtraceback

    def _showtraceback(etype, evalue, stb):
        frames, total = [], 0
        for frame in reversed(list(stb or [])):
            frame = frame if isinstance(frame, str) else str(frame)
            if total + len(frame) > budget:
                frames.append(_capped(frame, max(0, budget - total), keep_end=True))
                break
            frames.append(frame)
            total += len(frame)
        return show_traceback(etype, _CappedValue(evalue, budget), frames[::-1])

    shell._showtraceback = _showtraceback

    hook = shell.displayhook
    write_format_data = hook.write_format_data

    def _write_format_data(format_dict, md_dict=None):
        if not show_last_expression:
            return None
        text = format_dict.get("text/plain", "")
        return write_format_data({"text/plain": _capped(text if isinstance(text, str) else "", budget)}, {})

    hook.write_format_data = _write_format_data
    shell.display_pub.publish = lambda *args, **kwargs: None
