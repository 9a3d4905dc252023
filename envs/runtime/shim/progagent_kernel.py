"""The episode kernel's entry point inside the sandbox: `python -m progagent_kernel -f CONNECTION_FILE ...`.

It is ipykernel's own launcher (ipykernel_launcher) without the debugger. ipykernel imports debugpy
at start when it can (~0.1 s of CPU, a quarter of a kernel's start, paid by every episode), to serve
Jupyter's debug protocol; no episode client speaks it, and a program has `pdb` for post-mortems. A
`None` in `sys.modules` makes `import debugpy` raise ImportError, which is ipykernel's documented
"debugpy is not available" path (ipykernel.debugger._is_debugpy_available).

It also keeps the launcher's CPU priority. The sandbox is a new session (bwrap --new-session), and
where Linux groups scheduling by session (autogroups) a new session is a new group that shares the
CPU with every other group as an equal, whatever its processes' nice value: the kernels of a
launcher run under `nice` would get as much CPU as everything else on the machine together. The
kernel gives its group the nice value it inherited (raising a priority number needs no privilege).
Linux lets an unprivileged process change an autogroup's nice value once per 100 ms machine-wide
(EAGAIN otherwise): kernels that start together retry within AUTOGROUP_RETRY_S (a test starting many
at once found some at full share). Standard library only.
"""

import errno
import os
import sys
import time
from pathlib import Path

AUTOGROUP_RETRY_S = 3.0


def keep_inherited_priority() -> None:
    nice = os.nice(0)
    if nice <= 0:
        return
    deadline = time.monotonic() + AUTOGROUP_RETRY_S
    while True:
        try:
            Path("/proc/self/autogroup").write_text(str(nice))
            return
        except OSError as exc:  # no autogroups (kernel option, sysctl off) or no /proc: nothing to keep
            if exc.errno != errno.EAGAIN or time.monotonic() > deadline:
                return
            time.sleep(0.03)


if __name__ == "__main__":
    # as ipykernel_launcher: the working directory leaves sys.path while ipykernel loads
    # (IPython puts it back for the program)
    if sys.path[0] == "" or Path(sys.path[0]) == Path.cwd():
        del sys.path[0]
    sys.modules["debugpy"] = None  # type: ignore[assignment]
    keep_inherited_priority()

    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
