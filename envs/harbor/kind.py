"""The environment kind of imported Harbor tasks (envs/harbor/task.py): `kind: harbor`.

    envs:
      harbor: {kind: harbor, weight: 1, args: {paths: [bench/harbor-example]}}

Each path is a task folder or a dataset folder of them (relative paths from the current directory);
a task runs at the one scale `harbor`, judged by its tests/test.sh on a judge.

A task whose task.toml names a URL MCP server (transport sse or streamable-http, a `url`) makes the
env worker send HTTP requests where the task says; it runs only when the operator allows that host
for the source (`url_server_hosts`), and is refused when the source is listed, and again when an env
worker loads it, otherwise:

    args: {paths: [bench/some-dataset], url_server_hosts: ["mcp.example.com:443"]}
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from envs.kinds import ListContext, LoadContext, register
from schema.load import ConfigError
from schema.records import EnvRef

if TYPE_CHECKING:
    from envs.harbor.episode import HarborTaskEnv

#: Trajectory.scale of an imported Harbor task (Harbor tasks have one environment size)
HARBOR_SCALE = "harbor"


class HarborRef(EnvRef, frozen=True, tag="harbor"):
    """An imported Harbor task: its folder, as the env workers and judges see it, and the hosts its
    URL MCP servers may reach: the source's `url_server_hosts` (HarborArgs), copied here by `refs`
    from the operator's config, never from the task folder. A dataset row names the task only; the
    reference it opens is the operator's source's, with these hosts or none (envs/sources.Catalog)."""

    path: str
    url_server_hosts: tuple[str, ...] = ()

    @property
    def task_id(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def scale(self) -> str:
        return HARBOR_SCALE


class HarborArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A Harbor source's settings (its `args:`).

    `url_server_hosts`: the hosts a task's URL MCP server may reach, each "host:port", "host" (any
    port; IPv6 as "[::1]:8000") or "*" (any host); [] (the default) refuses every task that has one.
    Hosts, not a yes/no: one task of a large dataset must not reach every address the env worker can
    (its loopback listeners: the Ray dashboard, the GCS, a local model server; a cloud metadata
    address; the intranet) because the operator trusted another task's remote server. Not server
    names either: a name is the task's own word (any task may call its server "github"), the host is
    where the requests go. The host is compared as httpx parses the url (`a.com@127.0.0.1` is
    127.0.0.1) and as written (no DNS: "localhost" is not "127.0.0.1"); an allowed host is trusted
    with the requests it gets (the MCP client follows no redirect)."""

    paths: list[str]  # task folders, or dataset folders of them
    url_server_hosts: list[str] = []


def check_hosts(hosts: list[str], where: str) -> None:
    """url_server_hosts entries: "*", "host" or "host:port" (a ConfigError naming the entry)."""
    for i, entry in enumerate(hosts):
        host, _, port = entry.rpartition(":") if not entry.endswith("]") else (entry, "", "")
        if entry != "*" and (not entry or "/" in entry or "@" in entry or any(c.isspace() for c in entry)
                             or (host and port and not port.isdigit())):
            raise ConfigError(f"{where}[{i}]: {entry!r} is not \"*\", a host or host:port")


def harbor_tasks(sources: list[str], where: str = "harbor", url_server_hosts: list[str] | None = None,
                 setting: str = "url_server_hosts") -> dict[str, str]:
    """{task name: absolute folder} of the Harbor tasks under `sources`; a broken task, two tasks of
    one name (the name is the cache key), or (when `url_server_hosts` is given) a URL MCP server whose
    host is not among them is a ConfigError before anything starts."""
    from envs.harbor.task import HarborTaskError, find_harbor_tasks, load_harbor_task, url_server_refusals

    found: dict[str, str] = {}
    errors = []
    for src in sources:
        try:
            folders = find_harbor_tasks(Path(src).expanduser().resolve())
        except HarborTaskError as exc:
            errors.append(str(exc))
            continue
        for folder in folders:
            try:
                task = load_harbor_task(folder)
            except HarborTaskError as exc:
                errors.append(str(exc))
                continue
            if url_server_hosts is not None:
                refused = url_server_refusals(task, url_server_hosts, setting)
                if refused:
                    errors += refused
                    continue
            if task.id in found and found[task.id] != str(task.dir):
                errors.append(f"{task.dir}: a second Harbor task named {task.id!r} (the first: {found[task.id]})")
            found[task.id] = str(task.dir)
    if errors:
        raise ConfigError(f"{where}: " + "; ".join(errors))
    return found


class HarborKind:
    name = "harbor"
    ref_type = HarborRef
    args_type = HarborArgs
    ground_truth_hidden = True  # tests/ and solution/ stay on the host; the verifier runs on a judge
    has_oracle = False

    def refs(self, args: HarborArgs, ctx: ListContext) -> list[HarborRef]:
        setting = f"envs.{ctx.source}.args.url_server_hosts"
        check_hosts(args.url_server_hosts, setting)
        found = harbor_tasks(args.paths, f"envs.{ctx.source}.args.paths", args.url_server_hosts, setting)
        if not found:
            raise ConfigError(f"envs.{ctx.source}.args.paths: no Harbor task (a folder with task.toml) in {args.paths}")
        return [HarborRef(path, tuple(args.url_server_hosts)) for path in found.values()]

    def load(self, ref: HarborRef, ctx: LoadContext) -> HarborTaskEnv:
        """The task, refused (HarborTaskError) when a URL MCP server's host is not among the ref's
        (HarborTaskEnv checks it): the folder may have changed since it was listed."""
        from envs.harbor.episode import HarborTaskEnv
        from envs.harbor.task import load_harbor_task

        return HarborTaskEnv(load_harbor_task(ref.path), ref)


KIND = register(HarborKind())
