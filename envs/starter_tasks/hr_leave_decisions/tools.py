"""Tools of the leave starter task: leave requests, employees, teams, decisions, files."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool

STATUSES = ("pending", "approved", "rejected")


@tool
def list_leave_requests(env: Env, status: str | None = None, page_no: int = 1) -> dict:
    """List leave requests, 50 per page, optionally one status ('pending', 'approved', 'rejected').
    Returns {"items": [{"id", "employee_id", "days", "status"}], "page", "page_size", "total", "next_page"}."""
    if status is not None and status not in STATUSES:
        raise ToolError(f"status must be one of {', '.join(STATUSES)} (or omitted)")
    rows = env.query("select * from leave_requests where (? is null or status = ?) order by id", (status, status))
    return page(rows, page_no, 50)


@tool
def get_employee(env: Env, employee_id: str) -> dict:
    """One employee by id (e.g. 'E-305'). Returns {"id", "name", "team_id", "balance"} (balance in days)."""
    rows = env.query("select * from employees where id = ?", (employee_id.strip().upper(),))
    if not rows:
        raise ToolError(f"unknown employee_id {employee_id!r}; ids look like 'E-305'")
    return rows[0]


@tool
def list_teams(env: Env, page_no: int = 1) -> dict:
    """List teams, 25 per page. Returns {"items": [{"id", "name"}], ...paging}."""
    return page(env.query("select * from teams order by id"), page_no, 25)


@tool
def decide_leave(env: Env, request_id: str, approve: bool) -> dict:
    """Approve (approve=True) or reject (approve=False) one pending leave request. Returns {"id", "status"}."""
    rows = env.query("select * from leave_requests where id = ?", (request_id.strip().upper(),))
    if not rows:
        raise ToolError(f"unknown request_id {request_id!r}; ids look like 'LR-703'")
    if rows[0]["status"] != "pending":
        raise ToolError(f"request {rows[0]['id']} is already {rows[0]['status']}; only pending requests can be decided")
    status = "approved" if approve else "rejected"
    env.db.execute("update leave_requests set status = ? where id = ?", (status, rows[0]["id"]))
    return {"id": rows[0]["id"], "status": status}


@tool
def list_files(env: Env) -> dict:
    """List the workspace files. Returns {"items": [{"path"}]}."""
    return {"items": [{"path": f["path"]} for f in env.list_files()]}


@tool
def read_file(env: Env, path: str) -> dict:
    """Read one workspace file. Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}
