"""Settings of the PTC runtime. One Struct, decoded from configs or built in code."""

from __future__ import annotations

import msgspec

GiB = 1024**3


class RuntimeConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    #: wall-clock limit of one program; on expiry the kernel is interrupted (then restarted if stuck)
    program_timeout_s: float = 120.0
    #: how long an interrupted kernel may take to come back before it is restarted
    interrupt_grace_s: float = 3.0
    #: printed output returned to the model is cut to this many characters (a marker says how much)
    max_output_chars: int = 50_000
    memory_bytes: int = 2 * GiB
    max_processes: int = 256
    #: "auto" picks cgroup2 where delegated, else cgroup1, else rlimits; or force one of them
    limits: str = "auto"
    #: sandboxed kernels kept started and ready so that opening an episode does not pay a start
    warm_pool: int = 2
    #: a tool call from a program that takes longer than this fails with ToolError
    tool_timeout_s: float = 60.0
    #: tool calls of one episode running at once (more wait, holding no thread): one episode cannot
    #: take every worker thread of the in-process tool servers it shares a process with
    max_tool_calls_in_flight: int = 8
    #: a tool call's record (the episode's call log, trajectories) keeps arguments, result text and
    #: error up to this many characters each (previews beyond; the full length is kept)
    call_record_chars: int = 65_536
    #: calls recorded per episode; later ones are counted, not kept
    max_call_records: int = 20_000
    #: raise ToolError when a server reports failure only in its text (see upstream.looks_like_error)
    error_heuristic: bool = True
    #: show the value of a program's last expression (like a notebook) in addition to prints
    show_last_expression: bool = False
    kernel_start_timeout_s: float = 30.0
    #: disk one episode may add to its host folders (workspace, database, kernel run folder), in
    #: allocated bytes; no single file a sandboxed process writes grows past it (RLIMIT_FSIZE)
    disk_bytes: int = 512 * 2**20
    #: files and folders one episode may add, and how deep its folders may nest
    disk_entries: int = 20_000
    disk_depth: int = 64
    #: how often the watchdog measures a running program's disk use (episode.py)
    disk_check_s: float = 0.25
