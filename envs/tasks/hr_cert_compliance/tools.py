"""Tools for the certification compliance review: sites, employees, certificates, sessions, bookings."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool

LINES_PER_READ = 200
REVIEW_DATE = "2024-11-15"
EMPLOYMENT = ("active", "leave", "terminated")
WORK = ("cleared", "restricted")
ENROLLMENT = ("registered", "completed", "cancelled")


def _choice(value: str | None, allowed: tuple, name: str) -> str | None:
    if value is None:
        return None
    v = value.strip().lower()
    if v not in allowed:
        raise ToolError(f"unknown {name} {value!r}; expected one of: {', '.join(allowed)}")
    return v


def _employee(env: Env, employee_id: str) -> dict:
    rows = env.query("select * from employees where employee_id = ?", ((employee_id or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown employee_id {employee_id!r} (ids look like 'E12345'); use list_employees")
    return rows[0]


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
def list_sites(env: Env, page_no: int = 1) -> dict:
    """List sites, 25 per page. Returns {"items": [{"site_id", "name", "city", "region"}], ...paging}."""
    return page(env.query("select * from sites order by site_id"), page_no, 25)


@tool
def list_employees(env: Env, site_id: str | None = None, role_code: str | None = None,
                   employment_status: str | None = None, page_no: int = 1) -> dict:
    """List employees ordered by employee_id, 50 per page, optionally filtered by site_id, role_code
    (e.g. 'FORK-OP') and employment_status ('active', 'leave', 'terminated').
    Returns {"items": [{"employee_id", "name", "site_id", "role_code", "hire_date", "employment_status",
    "work_status" ('cleared' or 'restricted'), "manager_id"}], ...paging}."""
    status = _choice(employment_status, EMPLOYMENT, "employment_status")
    return env.query_page(
        "select employee_id, first_name || ' ' || last_name as name, site_id, role_code, hire_date, "
        "employment_status, work_status, manager_id from employees where (? is null or site_id = ?) "
        "and (? is null or role_code = ?) and (? is null or employment_status = ?) order by employee_id",
        (site_id, site_id, role_code, role_code, status, status), page_no, 50)


@tool
def list_certifications(env: Env, employee_id: str | None = None, cert_code: str | None = None,
                        page_no: int = 1) -> dict:
    """List certificates from the HR certification register, 50 per page (ordered by cert_id), optionally
    for one employee and/or one certificate code (e.g. 'LOTO'). verified is 1 when HR has checked the
    document, 0 otherwise. Returns {"items": [{"cert_id", "employee_id", "cert_code", "issued_on",
    "expires_on", "issuer", "verified"}], ...paging}."""
    emp = employee_id.strip().upper() if employee_id else None
    code = cert_code.strip().upper() if cert_code else None
    return env.query_page(
        "select * from certifications where (? is null or employee_id = ?) and (? is null or cert_code = ?) "
        "order by cert_id",
        (emp, emp, code, code), page_no, 50)


@tool
def list_training_sessions(env: Env, cert_code: str | None = None, region: str | None = None,
                           page_no: int = 1) -> dict:
    """List training sessions ordered by start date then session id, 50 per page, optionally for one
    certificate code and/or region ('Central', 'North', 'West', 'South').
    Returns {"items": [{"session_id", "cert_code", "region", "start_date", "venue", "capacity",
    "seats_taken"}], ...paging}."""
    code = cert_code.strip().upper() if cert_code else None
    if region is not None:
        known = [r["region"] for r in env.query("select distinct region from sites order by region")]
        match = [r for r in known if r.lower() == region.strip().lower()]
        if not match:
            raise ToolError(f"unknown region {region!r}; expected one of: {', '.join(known)}")
        region = match[0]
    return env.query_page(
        "select * from training_sessions where (? is null or cert_code = ?) and (? is null or region = ?) "
        "order by start_date, session_id",
        (code, code, region, region), page_no, 50)


@tool
def list_enrollments(env: Env, employee_id: str | None = None, status: str | None = None,
                     page_no: int = 1) -> dict:
    """List training enrollments, 50 per page, optionally for one employee and/or one status
    ('registered', 'completed', 'cancelled'). Returns {"items": [{"enrollment_id", "session_id",
    "cert_code", "employee_id", "enrolled_on", "status"}], ...paging}."""
    status = _choice(status, ENROLLMENT, "status")
    emp = employee_id.strip().upper() if employee_id else None
    return env.query_page(
        "select e.enrollment_id, e.session_id, s.cert_code, e.employee_id, e.enrolled_on, e.status "
        "from enrollments e join training_sessions s on s.session_id = e.session_id "
        "where (? is null or e.employee_id = ?) and (? is null or e.status = ?) order by e.enrollment_id",
        (emp, emp, status, status), page_no, 50)


@tool
def set_work_status(env: Env, employee_id: str, work_status: str, reason: str) -> dict:
    """Set an employee's work status to 'cleared' or 'restricted' and log the change with `reason`.
    Setting the status the employee already has changes nothing. Returns {"employee_id", "old_status",
    "new_status", "changed" (bool)}."""
    emp = _employee(env, employee_id)
    new = _choice(work_status, WORK, "work_status")
    if not (reason or "").strip():
        raise ToolError("reason is required")
    if emp["work_status"] == new:
        return {"employee_id": emp["employee_id"], "old_status": new, "new_status": new, "changed": False}
    env.db.execute("update employees set work_status = ? where employee_id = ?", (new, emp["employee_id"]))
    env.db.execute("insert into status_changes (employee_id, changed_on, old_status, new_status, reason) "
                   "values (?, ?, ?, ?, ?)", (emp["employee_id"], REVIEW_DATE, emp["work_status"], new,
                                             reason.strip()))
    return {"employee_id": emp["employee_id"], "old_status": emp["work_status"], "new_status": new,
            "changed": True}


@tool
def enroll_employee(env: Env, employee_id: str, session_id: str) -> dict:
    """Register an employee on a training session (takes one seat). Fails if the session is full or the
    employee is already registered on it. Returns {"enrollment_id", "session_id", "cert_code",
    "start_date", "employee_id", "seats_left"}."""
    emp = _employee(env, employee_id)
    rows = env.query("select * from training_sessions where session_id = ?", ((session_id or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown session_id {session_id!r}; use list_training_sessions")
    s = rows[0]
    if s["seats_taken"] >= s["capacity"]:
        raise ToolError(f"session {s['session_id']} is full ({s['capacity']} seats); choose another session")
    if env.query("select 1 from enrollments where session_id = ? and employee_id = ? and status = 'registered'",
                 (s["session_id"], emp["employee_id"])):
        raise ToolError(f"{emp['employee_id']} is already registered on {s['session_id']}")
    env.db.execute("update training_sessions set seats_taken = seats_taken + 1 where session_id = ?",
                   (s["session_id"],))
    cur = env.db.execute("insert into enrollments (session_id, employee_id, enrolled_on, status) "
                         "values (?, ?, ?, 'registered')", (s["session_id"], emp["employee_id"], REVIEW_DATE))
    return {"enrollment_id": cur.lastrowid, "session_id": s["session_id"], "cert_code": s["cert_code"],
            "start_date": s["start_date"], "employee_id": emp["employee_id"],
            "seats_left": s["capacity"] - s["seats_taken"] - 1}
