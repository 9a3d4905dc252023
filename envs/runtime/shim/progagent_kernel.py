"""The episode kernel's entry point inside the sandbox: `python -m progagent_kernel -f CONNECTION_FILE ...`.

It is ipykernel's own launcher (ipykernel_launcher) without the debugger. ipykernel imports debugpy
at start when it can (~0.1 s of CPU, a quarter of a kernel's start, paid by every episode), to serve
Jupyter's debug protocol; no episode client speaks it, and a program has `pdb` for post-mortems. A
`None` in `sys.modules` makes `import debugpy` raise ImportError, which is ipykernel's documented
"debugpy is not available" path (ipykernel.debugger._is_debugpy_available). Standard library only.
"""

import sys
from pathlib import Path

if __name__ == "__main__":
    # as ipykernel_launcher: the working directory leaves sys.path while ipykernel loads
    # (IPython puts it back for the program)
    if sys.path[0] == "" or Path(sys.path[0]) == Path.cwd():
        del sys.path[0]
    sys.modules["debugpy"] = None  # type: ignore[assignment]

    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
