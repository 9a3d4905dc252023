"""Tools of the property manager's revenue team: files, buildings, units, leases, payments, offers, notices."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
LEASE_STATUSES = ("active", "notice_given", "ended")
REASON_CODES = ("PAYMENT_HISTORY", "OWNER_MOVE_IN", "SUBSTANTIAL_REHAB", "LEASE_VIOLATION")


def _date(value: str | None, name: str) -> None:
    if value is not None and not _DATE.match(value):
        raise ToolError(f"{name} {value!r} must look like YYYY-MM-DD")


@tool
def list_files(env: Env, directory: str = "", page_no: int = 1) -> dict:
    """List workspace files (recursively) under `directory` ("" = all), 20 per page.
    Returns {"items": [{"path", "bytes"}], "page", "page_size", "total", "next_page"}."""
    return page(env.list_files(directory), page_no, 20)


@tool
def read_file(env: Env, path: str) -> dict:
    """Read a workspace text file (path relative to the workspace, as listed by list_files).
    Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}


@tool
def list_buildings(env: Env, page_no: int = 1) -> dict:
    """List the buildings in the portfolio, 25 per page. Items: building_id, name, street, city, jurisdiction
    (e.g. 'OR-PDX'), year_built, property_manager. Returns {"items", "page", "page_size", "total", "next_page"}."""
    return page(env.query("select * from buildings order by building_id"), page_no, 25)


@tool
def list_units(env: Env, building_id: str | None = None, page_no: int = 1) -> dict:
    """List rental units ordered by unit_id, 50 per page; optional filter building_id (e.g. 'HB-03').
    Items: unit_id, building_id, unit_no, unit_type ('studio', '1BR', '2BR', '3BR'), sqft, floor.
    Returns {"items", "page", "page_size", "total", "next_page"}."""
    if building_id is not None and not env.query("select 1 from buildings where building_id = ?", (building_id,)):
        raise ToolError(f"unknown building_id {building_id!r}; use list_buildings")
    return env.query_page(
        "select * from units where (:b is null or building_id = :b) order by unit_id",
        {"b": building_id}, page_no, 50)


@tool
def list_leases(env: Env, end_from: str | None = None, end_to: str | None = None, status: str | None = None,
                page_no: int = 1) -> dict:
    """List leases ordered by end_date then lease_id, 50 per page. Optional filters: end_from / end_to
    (inclusive YYYY-MM-DD bounds on end_date, the end of the current term), status ('active', 'notice_given',
    'ended'). Items: lease_id, unit_id, tenant_name, tenant_email, start_date, end_date, monthly_rent, deposit,
    status. Returns {"items", "page", "page_size", "total", "next_page"}."""
    _date(end_from, "end_from")
    _date(end_to, "end_to")
    if status is not None and status not in LEASE_STATUSES:
        raise ToolError(f"status must be one of {', '.join(LEASE_STATUSES)}")
    return env.query_page(
        "select * from leases where (:a is null or end_date >= :a) and (:b is null or end_date <= :b)"
        " and (:s is null or status = :s) order by end_date, lease_id",
        {"a": end_from, "b": end_to, "s": status}, page_no, 50)


@tool
def list_payments(env: Env, lease_id: int | None = None, due_from: str | None = None, due_to: str | None = None,
                  paid_after_due: bool = False, page_no: int = 1) -> dict:
    """List rent payments ordered by due_date then payment_id, 50 per page. Optional filters: lease_id,
    due_from / due_to (inclusive bounds on due_date), paid_after_due=true to return only payments paid after
    their due date or not paid at all (paid_date null). Items: payment_id, lease_id, due_date, amount_due,
    paid_date, amount_paid, method. Returns {"items", "page", "page_size", "total", "next_page"}."""
    _date(due_from, "due_from")
    _date(due_to, "due_to")
    return env.query_page(
        "select * from payments where (:l is null or lease_id = :l) and (:a is null or due_date >= :a)"
        " and (:b is null or due_date <= :b) and (:late = 0 or paid_date is null or paid_date > due_date)"
        " order by due_date, payment_id",
        {"l": lease_id, "a": due_from, "b": due_to, "late": 1 if paid_after_due else 0}, page_no, 50)


@tool
def list_renewal_offers(env: Env, lease_id: int | None = None, page_no: int = 1) -> dict:
    """List renewal offers already on file ordered by offer_id, 50 per page; optional filter lease_id.
    Items: offer_id, lease_id, proposed_rent, term_months, offer_date, status, notes.
    Returns {"items", "page", "page_size", "total", "next_page"}."""
    return env.query_page(
        "select * from renewal_offers where (:l is null or lease_id = :l) order by offer_id",
        {"l": lease_id}, page_no, 50)


@tool
def list_non_renewal_notices(env: Env, lease_id: int | None = None, page_no: int = 1) -> dict:
    """List non-renewal notices on file ordered by notice_id, 50 per page; optional filter lease_id.
    Items: notice_id, lease_id, reason_code, notice_date. Returns {"items", "page", "page_size", "total",
    "next_page"}."""
    return env.query_page(
        "select * from non_renewal_notices where (:l is null or lease_id = :l) order by notice_id",
        {"l": lease_id}, page_no, 50)


def _open_lease(env: Env, lease_id: int) -> dict:
    rows = env.query("select * from leases where lease_id = ?", (lease_id,))
    if not rows:
        raise ToolError(f"lease {lease_id} not found")
    if rows[0]["status"] != "active":
        raise ToolError(f"lease {lease_id} is {rows[0]['status']!r}; only active leases can be renewed or non-renewed")
    if env.query("select 1 from renewal_offers where lease_id = ?", (lease_id,)):
        raise ToolError(f"lease {lease_id} already has a renewal offer on file")
    if env.query("select 1 from non_renewal_notices where lease_id = ?", (lease_id,)):
        raise ToolError(f"lease {lease_id} already has a non-renewal notice on file")
    return rows[0]


@tool
def create_renewal_offer(env: Env, lease_id: int, proposed_rent: float, term_months: int) -> dict:
    """Create a renewal offer (status 'sent', dated 2025-01-15) for an active lease with no offer or notice on
    file. proposed_rent: new monthly rent in USD (whole dollars); term_months: 6 or 12.
    Returns {"offer_id", "lease_id", "current_rent", "proposed_rent", "term_months"}."""
    lease = _open_lease(env, lease_id)
    if term_months not in (6, 12):
        raise ToolError("term_months must be 6 or 12")
    if proposed_rent < lease["monthly_rent"] * 0.5 or proposed_rent > lease["monthly_rent"] * 2:
        raise ToolError(f"proposed_rent {proposed_rent} is implausible for current rent {lease['monthly_rent']}")
    cur = env.db.execute("insert into renewal_offers(lease_id, proposed_rent, term_months, offer_date, status, notes)"
                         " values (?, ?, ?, '2025-01-15', 'sent', '')", (lease_id, float(proposed_rent), term_months))
    return {"offer_id": cur.lastrowid, "lease_id": lease_id, "current_rent": lease["monthly_rent"],
            "proposed_rent": float(proposed_rent), "term_months": term_months}


@tool
def record_non_renewal(env: Env, lease_id: int, reason_code: str) -> dict:
    """Record a non-renewal notice (dated 2025-01-15) for an active lease with no offer or notice on file.
    reason_code: 'PAYMENT_HISTORY', 'OWNER_MOVE_IN', 'SUBSTANTIAL_REHAB' or 'LEASE_VIOLATION'.
    Returns {"notice_id", "lease_id", "reason_code"}."""
    _open_lease(env, lease_id)
    if reason_code not in REASON_CODES:
        raise ToolError(f"reason_code must be one of {', '.join(REASON_CODES)}")
    cur = env.db.execute("insert into non_renewal_notices(lease_id, reason_code, notice_date)"
                         " values (?, ?, '2025-01-15')", (lease_id, reason_code))
    return {"notice_id": cur.lastrowid, "lease_id": lease_id, "reason_code": reason_code}
