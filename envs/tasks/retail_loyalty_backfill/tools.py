"""Tools for the loyalty points backfill: members, orders, order lines, ledger, workspace files."""

from __future__ import annotations

from datetime import date

from envs.taskkit import Env, ToolError, page, tool

TIERS = ("Basic", "Silver", "Gold", "Platinum")
MEMBER_STATUS = ("active", "closed")
ORDER_STATUS = ("completed", "returned", "cancelled")
CHANNELS = ("store", "online")
KINDS = ("earn", "bonus", "redeem", "adjustment")
LINES_PER_READ = 200


def _day(value: str, name: str) -> str:
    try:
        return date.fromisoformat(value).isoformat()
    except (TypeError, ValueError):
        raise ToolError(f"{name} must be a date written YYYY-MM-DD, got {value!r}") from None


def _choice(value: str | None, allowed: tuple, name: str) -> str | None:
    if value is None:
        return None
    for a in allowed:
        if value.lower() == a.lower():
            return a
    raise ToolError(f"unknown {name} {value!r}; expected one of: {', '.join(allowed)}")


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
def list_members(env: Env, tier: str | None = None, status: str | None = None, page_no: int = 1) -> dict:
    """List loyalty members ordered by member_id, 50 per page, optionally filtered by tier
    ('Basic', 'Silver', 'Gold', 'Platinum') and/or status ('active', 'closed').
    Returns {"items": [{"member_id", "name", "tier", "status", "joined_on", "home_store"}], "page",
    "page_size", "total", "next_page"}."""
    tier = _choice(tier, TIERS, "tier")
    status = _choice(status, MEMBER_STATUS, "status")
    return env.query_page(
        "select member_id, first_name || ' ' || last_name as name, tier, status, joined_on, home_store "
        "from members where (? is null or tier = ?) and (? is null or status = ?) order by member_id",
        (tier, tier, status, status), page_no, 50)


@tool
def get_member(env: Env, member_id: str) -> dict:
    """One member's profile with their current points balance (sum of all ledger entries).
    Returns {"member_id", "first_name", "last_name", "email", "tier", "status", "joined_on", "home_store",
    "points_balance"}."""
    rows = env.query("select * from members where member_id = ?", (member_id,))
    if not rows:
        raise ToolError(f"unknown member_id {member_id!r} (ids look like 'M12345'); use list_members")
    bal = env.query("select coalesce(sum(points), 0) as b from points_ledger where member_id = ?", (member_id,))
    return {**rows[0], "points_balance": bal[0]["b"]}


@tool
def list_orders(env: Env, date_from: str, date_to: str, status: str | None = None, channel: str | None = None,
                page_no: int = 1) -> dict:
    """List orders placed between date_from and date_to (YYYY-MM-DD, both inclusive), ordered by time,
    50 per page, optionally filtered by status ('completed', 'returned', 'cancelled') and channel
    ('store', 'online'). member_id is null for guest orders. Returns {"items": [{"order_id", "member_id",
    "store_id", "channel", "ordered_at" ('YYYY-MM-DD HH:MM'), "status", "line_count"}], "page", "page_size",
    "total", "next_page"}."""
    d1, d2 = _day(date_from, "date_from"), _day(date_to, "date_to")
    status = _choice(status, ORDER_STATUS, "status")
    channel = _choice(channel, CHANNELS, "channel")
    return env.query_page(
        "select o.order_id, o.member_id, o.store_id, o.channel, o.ordered_at, o.status, "
        "(select count(*) from order_lines l where l.order_id = o.order_id) as line_count from orders o "
        "where substr(o.ordered_at, 1, 10) between ? and ? and (? is null or o.status = ?) "
        "and (? is null or o.channel = ?) order by o.ordered_at, o.order_id",
        (d1, d2, status, status, channel, channel), page_no, 50)


@tool
def list_order_lines(env: Env, date_from: str, date_to: str, category: str | None = None, page_no: int = 1) -> dict:
    """List the lines of orders placed between date_from and date_to (YYYY-MM-DD, inclusive), 50 per page,
    optionally only lines whose product category equals `category` (e.g. 'Grocery', 'Pet').
    Returns {"items": [{"order_id", "line_no", "sku", "product", "category", "qty", "unit_price",
    "discount"}], ...paging}. Net amount of a line = qty * unit_price - discount."""
    d1, d2 = _day(date_from, "date_from"), _day(date_to, "date_to")
    if category is not None:
        known = [r["category"] for r in env.query("select distinct category from products order by category")]
        match = [c for c in known if c.lower() == category.strip().lower()]
        if not match:
            raise ToolError(f"unknown category {category!r}; known categories: {', '.join(known)}")
        category = match[0]
    return env.query_page(
        "select l.order_id, l.line_no, l.sku, p.name as product, p.category, l.qty, l.unit_price, l.discount "
        "from order_lines l join orders o on o.order_id = l.order_id join products p on p.sku = l.sku "
        "where substr(o.ordered_at, 1, 10) between ? and ? and (? is null or p.category = ?) "
        "order by o.ordered_at, l.order_id, l.line_no",
        (d1, d2, category, category), page_no, 50)


@tool
def list_ledger(env: Env, member_id: str | None = None, kind: str | None = None, page_no: int = 1) -> dict:
    """List points-ledger entries in posting order, 50 per page, optionally for one member and/or one kind
    ('earn', 'bonus', 'redeem', 'adjustment'). Returns {"items": [{"entry_id", "member_id", "posted_at",
    "points", "kind", "reference", "note"}], ...paging}."""
    kind = _choice(kind, KINDS, "kind")
    return env.query_page(
        "select entry_id, member_id, posted_at, points, kind, reference, note from points_ledger "
        "where (? is null or member_id = ?) and (? is null or kind = ?) order by entry_id",
        (member_id, member_id, kind, kind), page_no, 50)


@tool
def post_adjustment(env: Env, member_id: str, points: int, reference: str, note: str = "") -> dict:
    """Post one ledger entry of kind 'adjustment' (posted now) crediting `points` (a positive whole number)
    to a member, with a reference such as a ticket or incident id. Returns the new entry
    {"entry_id", "member_id", "points", "kind", "reference", "note"}."""
    if not env.query("select 1 from members where member_id = ?", (member_id,)):
        raise ToolError(f"unknown member_id {member_id!r}; use list_members / get_member")
    if isinstance(points, float) and points.is_integer():
        points = int(points)
    if not isinstance(points, int) or isinstance(points, bool) or points <= 0 or points > 200000:
        raise ToolError("points must be a positive whole number (at most 200000)")
    reference = (reference or "").strip()
    if not reference:
        raise ToolError("reference is required (e.g. the ticket or incident id)")
    cur = env.db.execute(
        "insert into points_ledger (member_id, posted_at, points, kind, reference, note) "
        "values (?, '2024-10-01 09:00', ?, 'adjustment', ?, ?)", (member_id, points, reference, note or ""))
    return {"entry_id": cur.lastrowid, "member_id": member_id, "points": points, "kind": "adjustment",
            "reference": reference, "note": note or ""}
