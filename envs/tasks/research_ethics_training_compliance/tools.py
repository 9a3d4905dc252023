"""Tools for the ethics training compliance sweep: protocols, members, researchers, training, files, actions."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool

SWEEP_DATE = "2024-07-01"


def _protocol(env: Env, protocol_id: str) -> dict:
    rows = env.query("select * from protocols where id = ?", ((protocol_id or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown protocol_id {protocol_id!r}; use list_protocols (e.g. 'HREC-2023-0101')")
    return rows[0]


def _log(env: Env, protocol_id: str, researcher_id: str | None, action: str, detail: str) -> None:
    env.db.execute("insert into compliance_log (protocol_id, researcher_id, action, detail, logged_on, logged_by)"
                   " values (?,?,?,?,?,?)", (protocol_id, researcher_id, action, detail, SWEEP_DATE, "compliance-sweep"))


@tool
def list_protocols(env: Env, protocol_type: str | None = None, status: str | None = None, page_no: int = 1) -> dict:
    """List ethics protocols, 25 per page, ordered by id, optionally by protocol_type ('human', 'animal') and status
    ('active', 'suspended', 'closed', 'expired'). Returns {"items": [{"id", "title", "type", "risk_level", "pi_id",
    "department", "status", "approved_on", "expires_on"}], "page", "page_size", "total", "next_page"}."""
    if protocol_type is not None and protocol_type not in ("human", "animal"):
        raise ToolError("protocol_type must be 'human' or 'animal' (or omitted)")
    if status is not None and status not in ("active", "suspended", "closed", "expired"):
        raise ToolError("status must be 'active', 'suspended', 'closed' or 'expired' (or omitted)")
    return env.query_page(
        "select * from protocols where (:t is null or type = :t) and (:s is null or status = :s)"
        " order by id",
        {"t": protocol_type, "s": status}, page_no, 25)


@tool
def get_protocol(env: Env, protocol_id: str) -> dict:
    """Get one protocol with its team. Returns {protocol fields..., "members": [{"researcher_id", "name", "role",
    "status", "added_on"}]} (role is 'PI', 'co_investigator', 'research_assistant' or 'student')."""
    p = _protocol(env, protocol_id)
    members = env.query("select m.researcher_id, r.name, m.role, m.status, m.added_on from protocol_members m"
                        " join researchers r on r.id = m.researcher_id where m.protocol_id = ? order by m.id", (p["id"],))
    return p | {"members": members}


@tool
def list_protocol_members(env: Env, protocol_id: str | None = None, status: str | None = None,
                          page_no: int = 1) -> dict:
    """List protocol memberships, 50 per page, ordered by protocol then membership id, optionally for one protocol
    and/or by membership status ('active', 'suspended', 'removed'). Returns {"items": [{"protocol_id",
    "researcher_id", "role", "status", "added_on"}], "page", "page_size", "total", "next_page"}."""
    pid = _protocol(env, protocol_id)["id"] if protocol_id else None
    return env.query_page(
        "select protocol_id, researcher_id, role, status, added_on from protocol_members"
        " where (:p is null or protocol_id = :p) and (:s is null or status = :s)"
        " order by protocol_id, id",
        {"p": pid, "s": status}, page_no, 50)


@tool
def list_researchers(env: Env, page_no: int = 1) -> dict:
    """List researchers, 50 per page, ordered by id. Returns {"items": [{"id", "name", "department", "position",
    "email"}], "page", "page_size", "total", "next_page"}."""
    return page(env.query("select * from researchers order by id"), page_no, 50)


@tool
def list_training_records(env: Env, researcher_id: str | None = None, course_code: str | None = None,
                          page_no: int = 1) -> dict:
    """List training completions, 50 per page, ordered by id, optionally for one researcher and/or one course code
    (e.g. 'HSR-CORE', 'GCP'). Returns {"items": [{"id", "researcher_id", "course_code", "completed_on", "score",
    "provider", "certificate_no"}], "page", "page_size", "total", "next_page"}."""
    return env.query_page(
        "select * from training_records where (:r is null or researcher_id = :r)"
        " and (:c is null or course_code = :c) order by id",
        {"r": researcher_id, "c": course_code}, page_no, 50)


@tool
def list_files(env: Env, directory: str = "", page_no: int = 1) -> dict:
    """List workspace files (recursively) under `directory` ('' = whole workspace), 20 per page, sorted by path.
    Returns {"items": [{"path", "bytes"}], "page", "page_size", "total", "next_page"}."""
    return page(env.list_files(directory), page_no, 20)


@tool
def read_file(env: Env, path: str) -> dict:
    """Read one workspace text file. Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}


@tool
def suspend_member(env: Env, protocol_id: str, researcher_id: str, missing_courses: list[str]) -> dict:
    """Suspend an active member from a protocol for missing training. `missing_courses` lists the required course
    codes the member lacks (e.g. ["GCP", "HSR-CORE"]). The action is written to the compliance log.
    Returns {"protocol_id", "researcher_id", "status": "suspended", "missing_courses"}."""
    p = _protocol(env, protocol_id)
    rows = env.query("select id, status from protocol_members where protocol_id = ? and researcher_id = ?",
                     (p["id"], (researcher_id or "").strip().upper()))
    if not rows:
        raise ToolError(f"{researcher_id!r} is not a member of {p['id']}; use get_protocol to see the team")
    if rows[0]["status"] != "active":
        raise ToolError(f"membership is {rows[0]['status']}; only active members can be suspended")
    if not isinstance(missing_courses, list) or not missing_courses or \
            not all(isinstance(c, str) and c.strip() for c in missing_courses):
        raise ToolError("missing_courses must be a non-empty list of course codes")
    codes = sorted({c.strip().upper() for c in missing_courses})
    env.db.execute("update protocol_members set status = 'suspended' where id = ?", (rows[0]["id"],))
    _log(env, p["id"], researcher_id.strip().upper(), "member_suspended", ",".join(codes))
    return {"protocol_id": p["id"], "researcher_id": researcher_id.strip().upper(), "status": "suspended",
            "missing_courses": codes}


@tool
def suspend_protocol(env: Env, protocol_id: str, reason: str) -> dict:
    """Suspend an active protocol (e.g. because its PI is not compliant); the reason is written to the compliance
    log. Returns {"protocol_id", "status": "suspended"}."""
    p = _protocol(env, protocol_id)
    if p["status"] != "active":
        raise ToolError(f"protocol {p['id']} is {p['status']}; only active protocols can be suspended")
    if not (reason or "").strip():
        raise ToolError("give a short reason")
    env.db.execute("update protocols set status = 'suspended' where id = ?", (p["id"],))
    _log(env, p["id"], None, "protocol_suspended", reason.strip())
    return {"protocol_id": p["id"], "status": "suspended"}


@tool
def mark_protocol_expired(env: Env, protocol_id: str) -> dict:
    """Mark an active protocol whose approval has lapsed as expired (logged). Returns {"protocol_id", "status":
    "expired", "expires_on"}."""
    p = _protocol(env, protocol_id)
    if p["status"] != "active":
        raise ToolError(f"protocol {p['id']} is {p['status']}; only active protocols can be marked expired")
    env.db.execute("update protocols set status = 'expired' where id = ?", (p["id"],))
    _log(env, p["id"], None, "protocol_expired", f"approval lapsed on {p['expires_on']}")
    return {"protocol_id": p["id"], "status": "expired", "expires_on": p["expires_on"]}
