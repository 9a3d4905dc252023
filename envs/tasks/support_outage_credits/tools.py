"""Tools of the cloud provider's support desk: files, accounts, subscriptions, tickets, credits, claim decisions."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

CONTRACTS = ("standard", "enterprise_msa")
SERVICES = ("compute", "object-storage", "managed-db", "cdn", "dns")
REGIONS = ("us-east", "us-west", "eu-central", "ap-southeast", "global")
CATEGORIES = ("sla_credit", "billing", "technical", "account")
STATUSES = ("open", "pending", "resolved")
DENY_REASONS = ("not_eligible", "cap_reached")


def _bound(value: str | None, name: str, end: bool) -> str | None:
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
def list_accounts(env: Env, contract_type: str | None = None, page_no: int = 1) -> dict:
    """List customer accounts ordered by account_id, 50 per page; optional filter contract_type ('standard',
    'enterprise_msa'). Items: account_id, name, contract_type, home_region, mrr_usd (monthly recurring revenue),
    primary_contact. Returns {"items", "page", "page_size", "total", "next_page"}."""
    if contract_type is not None and contract_type not in CONTRACTS:
        raise ToolError(f"contract_type must be one of {', '.join(CONTRACTS)}")
    return env.query_page(
        "select * from accounts where (:c is null or contract_type = :c) order by account_id",
        {"c": contract_type}, page_no, 50)


@tool
def list_subscriptions(env: Env, account_id: str | None = None, service: str | None = None,
                       region: str | None = None, page_no: int = 1) -> dict:
    """List subscriptions ordered by subscription_id, 50 per page. Optional filters: account_id, service
    ('compute', 'object-storage', 'managed-db', 'cdn', 'dns'), region ('us-east', 'us-west', 'eu-central',
    'ap-southeast', 'global'). Items: subscription_id, account_id, service, region, monthly_fee, start_date,
    end_date (null while active). Returns {"items", "page", "page_size", "total", "next_page"}."""
    if service is not None and service not in SERVICES:
        raise ToolError(f"service must be one of {', '.join(SERVICES)}")
    if region is not None and region not in REGIONS:
        raise ToolError(f"region must be one of {', '.join(REGIONS)}")
    return env.query_page(
        "select * from subscriptions where (:a is null or account_id = :a) and"
        " (:s is null or service = :s) and (:r is null or region = :r) order by subscription_id",
        {"a": account_id, "s": service, "r": region}, page_no, 50)


@tool
def list_tickets(env: Env, category: str | None = None, status: str | None = None, created_from: str | None = None,
                 created_to: str | None = None, page_no: int = 1) -> dict:
    """List support tickets ordered by created_at then ticket_id, 25 per page. Optional filters: category
    ('sla_credit', 'billing', 'technical', 'account'), status ('open', 'pending', 'resolved'), created_from /
    created_to (inclusive, 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM' UTC). Items: ticket_id, account_id, category,
    subject, body, created_at, status, resolution. Returns {"items", "page", "page_size", "total", "next_page"}."""
    if category is not None and category not in CATEGORIES:
        raise ToolError(f"category must be one of {', '.join(CATEGORIES)}")
    if status is not None and status not in STATUSES:
        raise ToolError(f"status must be one of {', '.join(STATUSES)}")
    a, b = _bound(created_from, "created_from", False), _bound(created_to, "created_to", True)
    return env.query_page(
        "select * from tickets where (:c is null or category = :c) and (:s is null or status = :s)"
        " and (:a is null or created_at >= :a) and (:b is null or created_at <= :b)"
        " order by created_at, ticket_id",
        {"c": category, "s": status, "a": a, "b": b}, page_no, 25)


@tool
def list_credits(env: Env, account_id: str | None = None, period: str | None = None, page_no: int = 1) -> dict:
    """List credits already issued, ordered by credit_id, 50 per page. Optional filters: account_id, period
    (service month 'YYYY-MM'). Items: credit_id, account_id, ticket_id, amount_usd, period, note, issued_at.
    Returns {"items", "page", "page_size", "total", "next_page"}."""
    if period is not None and not re.fullmatch(r"\d{4}-\d{2}", period):
        raise ToolError("period must look like 'YYYY-MM'")
    return env.query_page(
        "select * from credits where (:a is null or account_id = :a) and (:p is null or period = :p)"
        " order by credit_id",
        {"a": account_id, "p": period}, page_no, 50)


def _open_claim(env: Env, ticket_id: int) -> dict:
    rows = env.query("select * from tickets where ticket_id = ?", (ticket_id,))
    if not rows:
        raise ToolError(f"ticket {ticket_id} not found")
    t = rows[0]
    if t["category"] != "sla_credit":
        raise ToolError(f"ticket {ticket_id} is a {t['category']!r} ticket, not an SLA credit claim")
    if t["status"] == "resolved":
        raise ToolError(f"ticket {ticket_id} is already resolved ({t['resolution']})")
    return t


@tool
def issue_credit(env: Env, ticket_id: int, amount_usd: float, period: str, note: str = "") -> dict:
    """Credit the claiming account for an SLA-credit claim and resolve the ticket as 'credited'. amount_usd > 0
    (cents); period: the service month 'YYYY-MM'. Returns {"credit_id", "ticket_id", "account_id", "amount_usd",
    "period"}."""
    t = _open_claim(env, ticket_id)
    if not re.fullmatch(r"\d{4}-\d{2}", period or ""):
        raise ToolError("period must look like 'YYYY-MM'")
    amount = round(float(amount_usd), 2)
    if amount <= 0:
        raise ToolError("amount_usd must be positive; use deny_claim for claims that earn nothing")
    cur = env.db.execute("insert into credits(account_id, ticket_id, amount_usd, period, note, issued_at)"
                         " values (?, ?, ?, ?, ?, '2025-06-16 09:00')",
                         (t["account_id"], ticket_id, amount, period, note or "SLA credit"))
    env.db.execute("update tickets set status = 'resolved', resolution = 'credited' where ticket_id = ?", (ticket_id,))
    return {"credit_id": cur.lastrowid, "ticket_id": ticket_id, "account_id": t["account_id"], "amount_usd": amount,
            "period": period}


@tool
def deny_claim(env: Env, ticket_id: int, reason: str) -> dict:
    """Deny an SLA-credit claim and resolve the ticket; reason: 'not_eligible' or 'cap_reached'. The ticket's
    resolution becomes 'denied:<reason>'. Returns {"ticket_id", "resolution"}."""
    _open_claim(env, ticket_id)
    if reason not in DENY_REASONS:
        raise ToolError(f"reason must be one of {', '.join(DENY_REASONS)}")
    env.db.execute("update tickets set status = 'resolved', resolution = ? where ticket_id = ?",
                   (f"denied:{reason}", ticket_id))
    return {"ticket_id": ticket_id, "resolution": f"denied:{reason}"}
