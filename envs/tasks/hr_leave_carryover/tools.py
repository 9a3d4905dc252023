"""Tools for the leave year-end close: entities, employees, balances, requests, adjustments, batch close."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool

LINES_PER_READ = 200
STATUSES = ("active", "leave", "terminated")
LEAVE_TYPES = ("annual", "sick", "unpaid", "compassionate")
REQ_STATUSES = ("approved", "pending", "rejected", "cancelled")
MAX_BATCH = 50


def _choice(value: str | None, allowed: tuple, name: str) -> str | None:
    if value is None:
        return None
    v = value.strip().lower()
    if v not in allowed:
        raise ToolError(f"unknown {name} {value!r}; expected one of: {', '.join(allowed)}")
    return v


def _year(year: int) -> int:
    if not isinstance(year, int) or not 2000 <= year <= 2100:
        raise ToolError(f"year must be a four-digit year such as 2024, got {year!r}")
    return year


@tool
def list_files(env: Env, directory: str = "", page_no: int = 1) -> dict:
    """List workspace files under `directory` ('' = whole workspace), recursively, 25 per page.
    Returns {"items": [{"path", "bytes"}], "page", "page_size", "total", "next_page"}."""
    return page(env.list_files(directory), page_no, 25)


@tool
def read_file(env: Env, path: str, start_line: int = 1) -> dict:
    """Read a workspace text file, up to 200 lines from `start_line` (1-based).
    Returns {"path", "start_line", "total_lines", "next_start_line" (None at the end), "content"}."""
    if start_line < 1:
        raise ToolError("start_line must be >= 1")
    lines = env.read_text(path).splitlines()
    chunk = lines[start_line - 1: start_line - 1 + LINES_PER_READ]
    nxt = start_line + LINES_PER_READ if start_line - 1 + LINES_PER_READ < len(lines) else None
    return {"path": path, "start_line": start_line, "total_lines": len(lines), "next_start_line": nxt,
            "content": "\n".join(chunk)}


@tool
def list_entities(env: Env) -> list:
    """All legal entities: [{"entity_id", "name", "country"}] (country codes DE, FR, NL, UK, ES, IE)."""
    return env.query("select * from entities order by entity_id")


@tool
def list_employees(env: Env, entity_id: str | None = None, status: str | None = None, page_no: int = 1) -> dict:
    """List employees ordered by employee_id, 50 per page, optionally for one entity and/or one status
    ('active', 'leave' = on long-term leave, 'terminated'). Returns {"items": [{"employee_id", "name",
    "entity_id", "country", "department", "job_title", "hire_date", "fte", "status", "termination_date"}],
    ...paging}."""
    status = _choice(status, STATUSES, "status")
    if entity_id is not None and not env.query("select 1 from entities where entity_id = ?", (entity_id,)):
        raise ToolError(f"unknown entity_id {entity_id!r}; use list_entities")
    return env.query_page(
        "select e.employee_id, e.first_name || ' ' || e.last_name as name, e.entity_id, n.country, e.department, "
        "e.job_title, e.hire_date, e.fte, e.status, e.termination_date from employees e "
        "join entities n on n.entity_id = e.entity_id where (? is null or e.entity_id = ?) "
        "and (? is null or e.status = ?) order by e.employee_id",
        (entity_id, entity_id, status, status), page_no, 50)


@tool
def list_leave_balances(env: Env, year: int, page_no: int = 1) -> dict:
    """Annual-leave balance records for one leave year, 50 per page, ordered by employee_id.
    opening_days = days carried into that year (negative = overdrawn); forfeited_prev = days forfeited at
    the end of the previous year. Returns {"items": [{"employee_id", "year", "opening_days",
    "forfeited_prev"}], ...paging}."""
    return env.query_page("select * from leave_balances where year = ? order by employee_id", (_year(year),), page_no, 50)


@tool
def list_leave_requests(env: Env, year: int, leave_type: str | None = None, status: str | None = None,
                        employee_id: str | None = None, page_no: int = 1) -> dict:
    """Leave requests whose start date falls in `year`, 50 per page, ordered by request_id, optionally
    filtered by leave_type ('annual', 'sick', 'unpaid', 'compassionate'), status ('approved', 'pending',
    'rejected', 'cancelled') and employee_id. `days` is the number of working days requested.
    Returns {"items": [{"request_id", "employee_id", "leave_type", "start_date", "end_date", "days",
    "status", "submitted_on", "approver", "comment"}], ...paging}."""
    lt = _choice(leave_type, LEAVE_TYPES, "leave_type")
    st = _choice(status, REQ_STATUSES, "status")
    return env.query_page(
        "select * from leave_requests where substr(start_date, 1, 4) = ? and (? is null or leave_type = ?) "
        "and (? is null or status = ?) and (? is null or employee_id = ?) order by request_id",
        (str(_year(year)), lt, lt, st, st, employee_id, employee_id), page_no, 50)


@tool
def list_leave_adjustments(env: Env, year: int, page_no: int = 1) -> dict:
    """Manual annual-leave adjustments for one leave year (bought/sold days, corrections, awards), 50 per page.
    days is signed; approved is 1 or 0. Returns {"items": [{"adjustment_id", "employee_id", "year", "days",
    "kind", "approved", "note"}], ...paging}."""
    return env.query_page(
        "select * from leave_adjustments where year = ? order by adjustment_id",
        (_year(year),), page_no, 50)


@tool
def close_leave_year(env: Env, entries: list[dict]) -> dict:
    """Record the 2024 year-end close for up to 50 employees per call. Each entry is
    {"employee_id": str, "carryover_days": number, "forfeited_days": number} (at most 2 decimals;
    forfeited_days >= 0). For each employee this creates, or overwrites, their 2025 balance record with
    opening_days = carryover_days and forfeited_prev = forfeited_days. Returns {"recorded": n,
    "employee_ids": [...]}."""
    if not isinstance(entries, list) or not entries:
        raise ToolError("entries must be a non-empty list of {employee_id, carryover_days, forfeited_days}")
    if len(entries) > MAX_BATCH:
        raise ToolError(f"at most {MAX_BATCH} entries per call; split the list into batches")
    clean = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not {"employee_id", "carryover_days", "forfeited_days"} <= set(e):
            raise ToolError(f"entry {i} must have employee_id, carryover_days and forfeited_days")
        eid = str(e["employee_id"]).strip().upper()
        if not env.query("select 1 from employees where employee_id = ?", (eid,)):
            raise ToolError(f"entry {i}: unknown employee_id {e['employee_id']!r}")
        try:
            carry, forf = float(e["carryover_days"]), float(e["forfeited_days"])
        except (TypeError, ValueError):
            raise ToolError(f"entry {i}: carryover_days and forfeited_days must be numbers") from None
        if abs(round(carry, 2) - carry) > 1e-6 or abs(round(forf, 2) - forf) > 1e-6:
            raise ToolError(f"entry {i}: use at most 2 decimals")
        if forf < 0:
            raise ToolError(f"entry {i}: forfeited_days cannot be negative")
        clean.append((eid, round(carry, 2), round(forf, 2)))
    for eid, carry, forf in clean:
        env.db.execute("insert or replace into leave_balances (employee_id, year, opening_days, forfeited_prev) "
                       "values (?, 2025, ?, ?)", (eid, carry, forf))
    return {"recorded": len(clean), "employee_ids": [c[0] for c in clean]}
