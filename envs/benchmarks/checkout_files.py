"""A text file of a user's benchmark checkout that the host reads (a prompt: MCPMark's description.md,
Toolathlon's docs/task.md and agent_system_prompt.md; a task's configuration: Toolathlon's
task_config.json and server YAML, MCP-Atlas's server template, LOCA's task configurations), read as
third-party data.

A checkout is someone else's files: whatever it holds must not choose what the host reads into the
model's instruction. So the file is opened from the checkout's folder down, each component without
following a link (a linked file or a linked folder inside the checkout is refused, never a detour to
/etc/passwd or a key), and read only when it is a regular file with no other name (a hard link to a
host file is another name for that file) and at most MAX_BYTES long. The refusal names the file.
"""

from __future__ import annotations

import os
from pathlib import Path

from envs.runtime import untrusted_fs

#: the most a prompt file may hold (benchmarks' task descriptions are a few KiB)
MAX_BYTES = 1 << 20


def read_text(checkout: Path, path: Path, error: type[Exception] = ValueError, max_bytes: int = MAX_BYTES) -> str:
    """The text of `path`, a file below the folder `checkout` (a resolved path: the user's own), decoded
    as UTF-8 with bad bytes replaced; `error` (naming `path`) when it is not the checkout's own file or
    holds more than `max_bytes`."""
    try:
        root = untrusted_fs.open_root(checkout)
        try:
            fd, st = untrusted_fs.open_file(root, path.relative_to(checkout).as_posix())
        finally:
            os.close(root)
        with os.fdopen(fd, "rb") as f:
            if st.st_nlink != 1:
                raise untrusted_fs.PathRefused(f"it has {st.st_nlink} hard links: a file with other names may be "
                                               "a host file, and is not read")
            if st.st_size > max_bytes:
                raise untrusted_fs.PathRefused(f"it is {st.st_size:,} bytes; files up to {max_bytes:,} bytes are read")
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise untrusted_fs.PathRefused(f"it grew past {max_bytes:,} bytes while it was read")
    except untrusted_fs.PathRefused as exc:
        raise error(f"{path}: {exc}") from None
    return data.decode("utf-8", "replace")
