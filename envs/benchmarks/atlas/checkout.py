"""A user's MCP-Atlas checkout and task file, read as data.

    co = AtlasCheckout("~/mcp-atlas")
    tasks = read_tasks(python, "~/mcp-atlas-tasks.parquet")     # [AtlasTask], Atlas's columns
    co.needs(task)        # "" when every server the task's reference trajectory calls runs offline here

What is where (Atlas's own layout, read at run time, never copied into ProgAgent):
- the servers: `services/agent-environment/src/agent_environment/mcp_server_template.json`
  (`mcpServers`: npx / uvx commands, `${VAR}` where a key goes);
- the state the servers see as `/data`: `services/agent-environment/data/` (CSV files, the memory
  server's graph) and, under its `repos/`, the eight repositories of `repos/git_submodule_info.csv`
  at their pinned commits (the checkout's submodules: `git submodule update --init`);
- the tasks: a parquet or CSV the user supplies (Hugging Face ScaleAI/MCP-Atlas; Atlas's own sample
  CSV has the same columns): TASK, PROMPT, ENABLED_TOOLS (a JSON list of `<server>_<tool>` names,
  decoys included), GTFA_CLAIMS, TRAJECTORY (the reference run's messages).

Which tasks run: those whose reference trajectory calls only servers that run offline here (OFFLINE).
The enabled tools of other servers (decoys that need a key or the network) are left out of what the
model is offered, and counted (`AtlasTask.dropped`).
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path
from typing import Any

import msgspec

from envs.benchmarks.checkout_files import read_text

TEMPLATE = "services/agent-environment/src/agent_environment/mcp_server_template.json"
DATA = "services/agent-environment/data"
SCORER = "services/scoring/score_claims.py"
#: the servers of Atlas's template that need neither a key nor the network (the rest are refused)
OFFLINE = ("filesystem", "git", "memory", "calculator", "cli-mcp-server", "desktop-commander", "mcp-server-code-runner")
#: offline servers that cannot be installed, and why
NOT_INSTALLABLE = {"mcp-code-executor": "its package @geobio/code_execution_server@0.2.1 is no longer on npm"}


class AtlasError(ValueError):
    """A checkout, task file or state that is not there or not in Atlas's format (the message says which)."""


class AtlasTask(msgspec.Struct, frozen=True):
    task_id: str
    prompt: str
    enabled: tuple[str, ...]  # Atlas's tool names (`<server>_<tool>`) the model is offered, offline servers only
    claims: str  # GTFA_CLAIMS as given (Atlas's scorer parses it: extract_claims)
    required: tuple[str, ...]  # the servers the reference trajectory calls
    dropped: int = 0  # enabled tools of servers that cannot run here (decoys), left out


def split_tool(name: str, servers: list[str]) -> tuple[str, str]:
    """(server, tool) of Atlas's `<server>_<tool>` name: the longest server name that prefixes it, else
    the part before the first `_` (a server the template does not have: its tasks are refused saying so)."""
    for server in sorted(servers, key=len, reverse=True):
        if name.startswith(server + "_"):
            return server, name[len(server) + 1:]
    server, _, tool = name.partition("_")
    return server, tool


READER = """import json, sys
import pandas as pd
p = sys.argv[1]
df = pd.read_parquet(p) if p.endswith('.parquet') else pd.read_csv(p)
cols = ['TASK', 'PROMPT', 'ENABLED_TOOLS', 'GTFA_CLAIMS', 'TRAJECTORY']
missing = [c for c in cols if c not in df.columns]
if missing:
    sys.exit(f"columns missing: {missing} (it has {list(df.columns)})")
def plain(v):
    if hasattr(v, 'tolist'):
        v = v.tolist()
    return v if isinstance(v, (str, list, dict)) or v is None else str(v)
json.dump([{c: plain(r[c]) for c in cols} for _, r in df.iterrows()], sys.stdout)
"""


def read_tasks(python: str, path: str | Path, timeout_s: float = 300.0) -> list[dict[str, Any]]:
    """The rows of the user's task file (parquet or CSV), read by pandas in Atlas's environment."""
    path = Path(path).expanduser().resolve()
    if not path.is_file():
        raise AtlasError(f"{path}: the task file does not exist (a parquet of ScaleAI/MCP-Atlas, or a CSV "
                         "with its columns)")
    out = subprocess.run([python, "-c", READER, str(path)], capture_output=True, text=True, timeout=timeout_s,
                         env={"PATH": "/usr/bin:/bin"})
    if out.returncode != 0:
        raise AtlasError(f"{path}: cannot be read as Atlas's tasks: {out.stderr.strip()[-600:]}")
    return json.loads(out.stdout)


def _json_list(value: Any, what: str, task: str) -> list[Any]:
    if isinstance(value, list):
        return value
    try:
        got = json.loads(value) if isinstance(value, str) and value.strip() else []
    except ValueError:
        raise AtlasError(f"task {task}: {what} is not JSON") from None
    if not isinstance(got, list):
        raise AtlasError(f"task {task}: {what} is not a list")
    return got


class AtlasCheckout:
    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser().resolve()
        if not (self.path / TEMPLATE).is_file() or not (self.path / SCORER).is_file():
            raise AtlasError(f"{self.path}: not an MCP-Atlas checkout (no {TEMPLATE} or {SCORER}; "
                             "git clone --recurse-submodules https://github.com/scaleapi/mcp-atlas)")
        try:
            self.servers: dict[str, dict[str, Any]] = json.loads(
                read_text(self.path, self.path / TEMPLATE, AtlasError))["mcpServers"]
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            if isinstance(exc, AtlasError):
                raise
            raise AtlasError(f"{self.path / TEMPLATE}: not MCP-Atlas's server template ({exc})") from None
        self.data = self.path / DATA

    def why_not(self, server: str) -> str:
        """"" when `server` runs offline here, else why not."""
        if server in NOT_INSTALLABLE:
            return NOT_INSTALLABLE[server]
        if server in OFFLINE:
            return ""
        cfg = self.servers.get(server)
        if cfg is None:
            return "it is not in Atlas's server template"
        keys = sorted({part.split("}")[0] for v in [*(cfg.get("env") or {}).values(), *(cfg.get("args") or [])]
                       for part in str(v).split("${")[1:]})
        return f"it needs {'a key (' + ', '.join(keys) + ') and ' if keys else ''}the network"

    def task(self, row: dict[str, Any]) -> AtlasTask:
        task_id = str(row["TASK"])
        names = [str(n) for n in _json_list(row["ENABLED_TOOLS"], "ENABLED_TOOLS", task_id)]
        servers = list(self.servers)
        called = []
        for message in _json_list(row.get("TRAJECTORY"), "TRAJECTORY", task_id):
            for call in (message.get("tool_calls") or []) if isinstance(message, dict) else []:
                name = (call.get("function") or {}).get("name", "")
                if name:
                    called.append(split_tool(name, servers)[0])
        required = tuple(sorted(set(called)) or sorted({split_tool(n, servers)[0] for n in names}))
        enabled = tuple(n for n in names if not self.why_not(split_tool(n, servers)[0]))
        return AtlasTask(task_id, str(row["PROMPT"]), enabled, row["GTFA_CLAIMS"] if isinstance(row["GTFA_CLAIMS"], str)
                         else json.dumps(row["GTFA_CLAIMS"]), required, len(names) - len(enabled))

    def needs(self, task: AtlasTask) -> str:
        """"" when `task` can run here, else which server cannot and why."""
        for server in task.required:
            why = self.why_not(server)
            if why:
                return f"server {server!r}: {why}"
        return ""

    def missing_repos(self) -> list[str]:
        """The repositories of repos/git_submodule_info.csv that are not checked out under data/repos/."""
        info = self.data / "repos" / "git_submodule_info.csv"
        if not info.is_file():
            return []
        out = []
        with open(info, newline="") as f:
            for row in csv.reader(f):
                if len(row) >= 3 and row[2].startswith("/data/"):
                    if not (self.data / row[2].removeprefix("/data/") / ".git").exists():
                        out.append(row[2].removeprefix("/data/"))
        return out
