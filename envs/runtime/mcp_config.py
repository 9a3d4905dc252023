"""Tool servers from the `mcpServers` JSON that Claude Desktop, Cursor, VS Code and the MCP Inspector share.

    {"mcpServers": {
        "files":   {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"],
                    "env": {"DEBUG": "1"}, "cwd": "/data", "timeout_s": 120},
        "remote":  {"url": "https://host/mcp", "headers": {"Authorization": "Bearer ..."}},
        "legacy":  {"type": "sse", "url": "https://host/sse"},
        "noisy":   {"command": "python", "args": ["server.py"], "error_heuristic": false}}}

A stdio server gets the MCP SDK's default environment (HOME, PATH, SHELL, TERM, USER, LOGNAME) plus
its `env`, never the rest of the host's (API keys stay out); `cwd` is where it starts. An HTTP
server is streamable HTTP unless `"type": "sse"`. Four keys are ProgAgent's own: `timeout_s` (a
call's deadline for this server's tools; default: the runtime's `tool_timeout_s`),
`error_heuristic` (false: trust `isError` alone for this server; envs/runtime/upstream.looks_like_error),
`tools` (only these of its tools, by the server's names: `["read_file", "list_directory"]`) and
`rename` (`{"read_file": "fs_read"}`: the name programs and the model see), so an episode is offered
exactly a task's tools under the task's names; a name the server does not have fails its start.
VS Code's `"servers"` key is read too; `"disabled": true` leaves a server out. Anything else is an
error that names the server and the key, so a typo does not silently drop a setting.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from envs.runtime.untrusted_fs import server_name_problem
from envs.runtime.upstream import UpstreamSpec

STDIO_KEYS = {"command", "args", "env", "cwd"}
HTTP_KEYS = {"url", "headers"}
OURS = {"timeout_s", "error_heuristic", "tools", "rename"}
#: what MCP allows in a tool name (the specification's SEP-986 pattern)
TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
COMMON = {"type", "disabled", "description"}
TYPES = {"stdio", "http", "streamable-http", "streamableHttp", "sse"}
MAX_FILE_BYTES = 1 << 20


class MCPConfigError(ValueError):
    """An `mcpServers` file that cannot be used as written."""


def _strings(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise MCPConfigError(f"{where} must be an object of strings")
    return dict(value)


def server_spec(name: str, entry: Any) -> UpstreamSpec:
    where = f"mcpServers.{name}"
    if not isinstance(entry, dict):
        raise MCPConfigError(f"{where} must be an object")
    kind = entry.get("type", "")
    if kind and kind not in TYPES:
        raise MCPConfigError(f"{where}.type must be one of {sorted(TYPES)}, got {kind!r}")
    http = "url" in entry or kind in ("http", "streamable-http", "streamableHttp", "sse")
    allowed = (HTTP_KEYS if http else STDIO_KEYS) | OURS | COMMON
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise MCPConfigError(f"{where}: unknown key(s) {unknown} for {'an HTTP' if http else 'a stdio'} server "
                             f"(allowed: {sorted(allowed)})")
    timeout = entry.get("timeout_s")
    if timeout is not None and (not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0):
        raise MCPConfigError(f"{where}.timeout_s must be a positive number of seconds, got {timeout!r}")
    heuristic = entry.get("error_heuristic")
    if heuristic is not None and not isinstance(heuristic, bool):
        raise MCPConfigError(f"{where}.error_heuristic must be true or false, got {heuristic!r}")
    tools, rename = entry.get("tools"), entry.get("rename", {})
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools)):
        raise MCPConfigError(f"{where}.tools must be a list of the server's tool names, got {tools!r}")
    rename = _strings(rename, f"{where}.rename")
    bad = sorted(v for v in rename.values() if not TOOL_NAME.fullmatch(v))
    if bad:
        raise MCPConfigError(f"{where}.rename: {bad} are not tool names (letters, digits, _ . -; at most 128)")
    common = {"name": name, "timeout_s": float(timeout) if timeout is not None else None,
              "error_heuristic": heuristic, "tools": list(tools) if tools is not None else None, "rename": rename}
    if http:
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise MCPConfigError(f"{where}.url must be an http(s) URL, got {url!r}")
        headers = _strings(entry["headers"], f"{where}.headers") if "headers" in entry else None
        return UpstreamSpec(url=url, headers=headers, transport="sse" if kind == "sse" else "", **common)
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not command.strip():
        raise MCPConfigError(f"{where}.command must be a program name or path (a string)")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise MCPConfigError(f"{where}.args must be a list of strings")
    env = _strings(entry["env"], f"{where}.env") if "env" in entry else None
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise MCPConfigError(f"{where}.cwd must be a path (a string)")
    return UpstreamSpec(command=[command, *args], env=env, cwd=cwd, **common)


def parse_mcp_servers(data: Any, source: str = "the config") -> list[UpstreamSpec]:
    if not isinstance(data, dict):
        raise MCPConfigError(f"{source}: expected a JSON object with an \"mcpServers\" object")
    servers = data.get("mcpServers", data.get("servers"))
    if not isinstance(servers, dict):
        raise MCPConfigError(f"{source}: expected an \"mcpServers\" object (or VS Code's \"servers\")")
    specs = []
    for name, entry in servers.items():
        problem = server_name_problem(name)
        if problem or "=" in name or name.startswith("_"):
            raise MCPConfigError(f"{source}: {name!r} is not a usable server name" + (f" ({problem})" if problem else ""))
        if isinstance(entry, dict) and entry.get("disabled") is True:
            continue
        specs.append(server_spec(name, entry))
    return specs


def load_mcp_servers(path: str | Path) -> list[UpstreamSpec]:
    """The enabled servers of an `mcpServers` JSON file, or MCPConfigError saying what is wrong."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)  # never more than the limit held
    except OSError as exc:
        raise MCPConfigError(f"{path}: {exc.strerror or exc}") from exc
    if len(raw) > MAX_FILE_BYTES:
        raise MCPConfigError(f"{path}: larger than {MAX_FILE_BYTES} bytes; not an mcpServers file")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise MCPConfigError(f"{path}: not JSON ({exc})") from exc
    return parse_mcp_servers(data, str(path))
