"""A user's MCPMark checkout and their local data cache, read as data.

    co = MCPMarkCheckout("~/mcpmark", data_dir="~/mcpmark-data")
    co.tasks()          # [MCPMarkTask(suite, category, name)], the filesystem tasks whose data is cached
    pg = MCPMarkCheckout("~/mcpmark", service="postgres")   # its postgres tasks (postgres/episode.py)

MCPMark downloads each filesystem category's initial state (storage.mcpmark.ai/filesystem/<category>.zip)
unless `$FILESYSTEM_TEST_ROOT/<category>/` already exists. ProgAgent never downloads: the user gives that
folder (`data_dir`, the unzipped categories, as MCPMark's own runs leave them under test_environments/),
and a task whose category is not there is refused with the file to fetch.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

SUITES = ("standard", "easy")
STATE_URL = "https://storage.mcpmark.ai/filesystem/{category}.zip"


class MCPMarkError(ValueError):
    """A checkout, task or cached category that is not there (the message says which and how to get it)."""


class MCPMarkTask(msgspec.Struct, frozen=True):
    suite: str
    category: str  # the folder under tasks/filesystem/<suite>/ = meta.json category_id = the data folder's name
    name: str

    @property
    def task_id(self) -> str:
        """MCPMark's own task name (`<category_id>__<task_id>`), with the suite when it is not standard."""
        base = f"{self.category}__{self.name}"
        return base if self.suite == "standard" else f"{self.suite}:{base}"


def parse_task_id(task_id: str) -> MCPMarkTask:
    suite, _, rest = task_id.rpartition(":")
    category, sep, name = rest.partition("__")
    if not sep or (suite and suite not in SUITES):
        raise MCPMarkError(f"not an MCPMark task name: {task_id!r} (expected [easy:]<category>__<task>)")
    return MCPMarkTask(suite or "standard", category, name)


class MCPMarkCheckout:
    """`service`: the task folder read (tasks/<service>/): "filesystem" (whose tasks need `data_dir`) or
    "postgres" (whose category databases are the postgres adapter's business: postgres/episode.py)."""

    def __init__(self, path: str | Path, data_dir: str | Path = "", service: str = "filesystem"):
        self.path = Path(path).expanduser().resolve()
        self.service = service
        self.data_dir = Path(data_dir).expanduser().resolve() if data_dir else Path()
        if not (self.path / "tasks" / service).is_dir():
            raise MCPMarkError(f"{self.path}: not an MCPMark checkout (no tasks/{service}/; "
                               "git clone https://github.com/eval-sys/mcpmark)")
        if service == "filesystem" and not (data_dir and self.data_dir.is_dir()):
            raise MCPMarkError(f"{self.data_dir}: the data cache does not exist (a folder of MCPMark's unzipped "
                               f"filesystem categories: {STATE_URL.format(category='<category>')})")

    def task_dir(self, task: MCPMarkTask) -> Path:
        return self.path / "tasks" / self.service / task.suite / task.category / task.name

    def data(self, task: MCPMarkTask) -> Path:
        folder = self.data_dir / task.category
        if not folder.is_dir():
            raise MCPMarkError(f"{task.task_id}: its initial state {folder} is not in the data cache; fetch "
                               f"{STATE_URL.format(category=task.category)} and unzip it into {self.data_dir}")
        return folder

    def task(self, task_id: str) -> MCPMarkTask:
        task = parse_task_id(task_id)
        d = self.task_dir(task)
        if not all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", p) for p in (task.category, task.name)) \
                or not (d / "description.md").is_file() or not (d / "verify.py").is_file():
            raise MCPMarkError(f"no MCPMark {self.service} task {task_id!r} (tasks/{self.service}/{task.suite}/"
                               f"{task.category}/{task.name}/ with description.md and verify.py)")
        return task

    def tasks(self, names: list[str] | None = None, suite: str = "standard") -> list[MCPMarkTask]:
        """The named tasks, or every task of `suite` (for filesystem: whose category is in the data cache)."""
        if names:
            out = [self.task(n) for n in names]
            if self.service == "filesystem":
                for t in out:
                    self.data(t)
            return out
        root = self.path / "tasks" / self.service / suite
        found = sorted(p.parent for p in root.glob("*/*/verify.py") if (p.parent / "description.md").is_file())
        tasks = [MCPMarkTask(suite, d.parent.name, d.name) for d in found if not d.parent.name.startswith((".", "_"))]
        if self.service != "filesystem":
            return tasks
        return [t for t in tasks if (self.data_dir / t.category).is_dir()]
