"""Tools for the grant expense review task: funders, grants, budget lines, claims, files, decisions."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool

REASONS = ("GRANT_SUSPENDED", "OUT_OF_PERIOD", "INELIGIBLE", "NO_PREAPPROVAL", "OVER_BUDGET")
EXP_STATUSES = ("submitted", "approved", "rejected", "paid")


def _grant(env: Env, grant_id: str) -> dict:
    rows = env.query("select * from grants where id = ?", ((grant_id or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown grant_id {grant_id!r}; use list_grants (ids look like 'G-24001')")
    return rows[0]


def _submitted(env: Env, expense_id: str) -> dict:
    rows = env.query("select * from expenses where id = ?", ((expense_id or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown expense_id {expense_id!r}; use list_expenses")
    if rows[0]["status"] != "submitted":
        raise ToolError(f"claim {rows[0]['id']} is already {rows[0]['status']}; only submitted claims can be decided")
    return rows[0]


@tool
def list_funders(env: Env) -> dict:
    """List the research funders. Returns {"items": [{"code", "name", "kind"}]}."""
    return {"items": env.query("select * from funders order by code")}


@tool
def list_grants(env: Env, funder_code: str | None = None, status: str | None = None, page_no: int = 1) -> dict:
    """List grants, 25 per page, ordered by id, optionally by funder_code (e.g. 'UKRI') and status ('active',
    'closed', 'suspended'). Returns {"items": [{"id", "funder_ref", "funder_code", "title", "pi_id", "department",
    "start_date", "end_date", "status"}], "page", "page_size", "total", "next_page"}."""
    return env.query_page(
        "select * from grants where (:f is null or funder_code = :f) and (:s is null or status = :s)"
        " order by id",
        {"f": funder_code, "s": status}, page_no, 25)


@tool
def get_grant(env: Env, grant_id: str) -> dict:
    """Get one grant with its budget lines. Returns {grant fields..., "budget_lines": [{"category", "awarded_gbp",
    "committed_gbp", "remaining_gbp"}]}."""
    g = _grant(env, grant_id)
    lines = env.query("select category, awarded_gbp, committed_gbp, round(awarded_gbp - committed_gbp, 2)"
                      " as remaining_gbp from budget_lines where grant_id = ? order by category", (g["id"],))
    return g | {"budget_lines": lines}


@tool
def list_budget_lines(env: Env, grant_id: str | None = None, page_no: int = 1) -> dict:
    """List budget lines (GBP), 50 per page, ordered by grant then category, optionally for one grant.
    Returns {"items": [{"grant_id", "category", "awarded_gbp", "committed_gbp", "remaining_gbp"}], "page",
    "page_size", "total", "next_page"}."""
    gid = _grant(env, grant_id)["id"] if grant_id else None
    return env.query_page(
        "select grant_id, category, awarded_gbp, committed_gbp, round(awarded_gbp - committed_gbp, 2)"
        " as remaining_gbp from budget_lines where (:g is null or grant_id = :g)"
        " order by grant_id, category",
        {"g": gid}, page_no, 50)


@tool
def list_expenses(env: Env, status: str | None = None, grant_id: str | None = None, page_no: int = 1) -> dict:
    """List expense claims, 25 per page, ordered by claim id, optionally by status ('submitted', 'approved',
    'rejected', 'paid') and grant. amount is in the claim's currency. Returns {"items": [{"id", "grant_id",
    "claimant_id", "category", "description", "amount", "currency", "expense_date", "submitted_at",
    "preapproval_ref", "status", "approved_gbp", "reject_reason"}], "page", "page_size", "total", "next_page"}."""
    if status is not None and status not in EXP_STATUSES:
        raise ToolError(f"status must be one of {', '.join(EXP_STATUSES)} (or omitted)")
    gid = _grant(env, grant_id)["id"] if grant_id else None
    return env.query_page(
        "select * from expenses where (:s is null or status = :s) and (:g is null or grant_id = :g)"
        " order by id",
        {"s": status, "g": gid}, page_no, 25)


@tool
def list_researchers(env: Env, department: str | None = None, page_no: int = 1) -> dict:
    """List researchers, 50 per page, optionally by department. Returns {"items": [{"id", "name", "department",
    "role", "email"}], "page", "page_size", "total", "next_page"}."""
    return env.query_page(
        "select * from researchers where (:d is null or department = :d) order by id",
        {"d": department}, page_no, 50)


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
def approve_expense(env: Env, expense_id: str, amount_gbp: float) -> dict:
    """Approve a submitted claim for `amount_gbp` (the claim converted to GBP, 2 decimals). The amount is added
    to the committed total of the grant's budget line for the claim's category (the line must exist).
    Returns {"expense_id", "status": "approved", "approved_gbp", "remaining_gbp"} (remaining after this claim)."""
    e = _submitted(env, expense_id)
    if isinstance(amount_gbp, bool) or not isinstance(amount_gbp, int | float) or amount_gbp <= 0:
        raise ToolError("amount_gbp must be a positive number")
    amount = round(float(amount_gbp), 2)
    line = env.query("select id, awarded_gbp, committed_gbp from budget_lines where grant_id = ? and category = ?",
                     (e["grant_id"], e["category"]))
    if not line:
        raise ToolError(f"grant {e['grant_id']} has no {e['category']} budget line; this claim cannot be approved")
    env.db.execute("update expenses set status = 'approved', approved_gbp = ? where id = ?", (amount, e["id"]))
    env.db.execute("update budget_lines set committed_gbp = round(committed_gbp + ?, 2) where id = ?",
                   (amount, line[0]["id"]))
    remaining = round(line[0]["awarded_gbp"] - line[0]["committed_gbp"] - amount, 2)
    return {"expense_id": e["id"], "status": "approved", "approved_gbp": amount, "remaining_gbp": remaining}


@tool
def reject_expense(env: Env, expense_id: str, reason_code: str) -> dict:
    """Reject a submitted claim with one reason code: GRANT_SUSPENDED, OUT_OF_PERIOD, INELIGIBLE, NO_PREAPPROVAL,
    OVER_BUDGET. Returns {"expense_id", "status": "rejected", "reject_reason"}."""
    e = _submitted(env, expense_id)
    if reason_code not in REASONS:
        raise ToolError(f"reason_code must be one of {', '.join(REASONS)}")
    env.db.execute("update expenses set status = 'rejected', reject_reason = ? where id = ?", (reason_code, e["id"]))
    return {"expense_id": e["id"], "status": "rejected", "reject_reason": reason_code}
