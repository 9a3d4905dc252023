"""Tools of the support operations team: files, customers, tickets, messages, escalations."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

PLANS = ("starter", "business", "enterprise")
REGIONS = ("NA", "EU", "UK", "APAC")
STATUSES = ("open", "pending", "solved", "closed", "spam", "merged")
PRIORITIES = ("low", "normal", "high", "urgent")
AUTHOR_TYPES = ("customer", "agent", "system")
LEVELS = ("L1", "L2")
NOTIFY = ("csm", "team_lead", "none")


def _bound(value: str | None, name: str, end: bool) -> str | None:
    """Accept 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM'; a bare date as an upper bound means the end of that day."""
    if value is None:
        return None
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return value + (" 23:59" if end else " 00:00")
    if re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", value):
        return value
    raise ToolError(f"{name} {value!r} must be 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM' (UTC)")


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
def list_customers(env: Env, plan: str | None = None, region: str | None = None, page_no: int = 1) -> dict:
    """List customer accounts ordered by customer_id, 50 per page. Optional filters: plan ('starter',
    'business', 'enterprise'), region ('NA', 'EU', 'UK', 'APAC'). Items: customer_id, company, plan, region,
    csm_email, customer_since. Returns {"items", "page", "page_size", "total", "next_page"}."""
    if plan is not None and plan not in PLANS:
        raise ToolError(f"plan must be one of {', '.join(PLANS)}")
    if region is not None and region not in REGIONS:
        raise ToolError(f"region must be one of {', '.join(REGIONS)}")
    return env.query_page(
        "select * from customers where (:p is null or plan = :p) and (:r is null or region = :r)"
        " order by customer_id",
        {"p": plan, "r": region}, page_no, 50)


@tool
def list_tickets(env: Env, created_from: str | None = None, created_to: str | None = None,
                 status: str | None = None, priority: str | None = None, page_no: int = 1) -> dict:
    """List tickets ordered by created_at then ticket_id, 50 per page. Optional filters: created_from /
    created_to (inclusive, 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM' UTC; a bare date as created_to includes that whole
    day), status ('open', 'pending', 'solved', 'closed', 'spam', 'merged'), priority ('low', 'normal', 'high',
    'urgent'). Items: ticket_id, customer_id, subject, priority, status, channel, created_at (UTC), assignee_id.
    Returns {"items", "page", "page_size", "total", "next_page"}."""
    a, b = _bound(created_from, "created_from", False), _bound(created_to, "created_to", True)
    if status is not None and status not in STATUSES:
        raise ToolError(f"status must be one of {', '.join(STATUSES)}")
    if priority is not None and priority not in PRIORITIES:
        raise ToolError(f"priority must be one of {', '.join(PRIORITIES)}")
    return env.query_page(
        "select * from tickets where (:a is null or created_at >= :a) and (:b is null or created_at <= :b)"
        " and (:s is null or status = :s) and (:p is null or priority = :p) order by created_at, ticket_id",
        {"a": a, "b": b, "s": status, "p": priority}, page_no, 50)


@tool
def list_messages(env: Env, ticket_id: int | None = None, author_type: str | None = None,
                  created_from: str | None = None, created_to: str | None = None, page_no: int = 1) -> dict:
    """List ticket messages ordered by created_at then message_id, 50 per page. Optional filters: ticket_id,
    author_type ('customer', 'agent', 'system'), created_from / created_to (inclusive, 'YYYY-MM-DD' or
    'YYYY-MM-DD HH:MM' UTC). Items: message_id, ticket_id, author_type, author_id, is_internal (1 = internal note
    not visible to the customer), created_at, body. Returns {"items", "page", "page_size", "total", "next_page"}."""
    a, b = _bound(created_from, "created_from", False), _bound(created_to, "created_to", True)
    if author_type is not None and author_type not in AUTHOR_TYPES:
        raise ToolError(f"author_type must be one of {', '.join(AUTHOR_TYPES)}")
    return env.query_page(
        "select * from ticket_messages where (:t is null or ticket_id = :t) and (:u is null or author_type = :u)"
        " and (:a is null or created_at >= :a) and (:b is null or created_at <= :b)"
        " order by created_at, message_id",
        {"t": ticket_id, "u": author_type, "a": a, "b": b}, page_no, 50)


@tool
def list_escalations(env: Env, ticket_id: int | None = None, page_no: int = 1) -> dict:
    """List escalations ordered by escalation_id, 50 per page; optional filter ticket_id. Items: escalation_id,
    ticket_id, level ('L1' or 'L2'; L2 is higher), reason, notify, created_at.
    Returns {"items", "page", "page_size", "total", "next_page"}."""
    return env.query_page(
        "select * from escalations where (:t is null or ticket_id = :t) order by escalation_id",
        {"t": ticket_id}, page_no, 50)


@tool
def escalate_ticket(env: Env, ticket_id: int, level: str, notify: str, reason: str) -> dict:
    """Escalate a ticket: records an escalation (created 2025-06-02 09:00) at `level` ('L1' or 'L2'), notifying
    `notify` ('csm', 'team_lead' or 'none'), with a short `reason`. Returns {"escalation_id", "ticket_id",
    "level", "notify"}."""
    t = env.query("select * from tickets where ticket_id = ?", (ticket_id,))
    if not t:
        raise ToolError(f"ticket {ticket_id} not found")
    if level not in LEVELS:
        raise ToolError(f"level must be one of {', '.join(LEVELS)}")
    if notify not in NOTIFY:
        raise ToolError(f"notify must be one of {', '.join(NOTIFY)}")
    if not (reason or "").strip():
        raise ToolError("reason is required")
    cur = env.db.execute("insert into escalations(ticket_id, level, reason, notify, created_at)"
                         " values (?, ?, ?, ?, '2025-06-02 09:00')", (ticket_id, level, reason.strip(), notify))
    return {"escalation_id": cur.lastrowid, "ticket_id": ticket_id, "level": level, "notify": notify}
