"""Tools for the catering headcount task: events, tickets, registrations, caterers, files, catering orders."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MEAL_TYPES = ("standard", "vegetarian", "vegan", "gluten_free", "halal")
REG_STATUSES = ("confirmed", "cancelled", "waitlisted", "pending_payment")


def _event(env: Env, event_id: str) -> dict:
    rows = env.query("select * from events where id = ?", ((event_id or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown event_id {event_id!r}; use list_events (ids look like 'EV-24101')")
    return rows[0]


@tool
def list_events(env: Env, date_from: str | None = None, date_to: str | None = None, status: str | None = None,
                page_no: int = 1) -> dict:
    """List events whose start_date lies between date_from and date_to (inclusive, 'YYYY-MM-DD'; either may be
    omitted), optionally by status ('scheduled', 'cancelled', 'postponed'); 25 per page ordered by start date.
    Returns {"items": [{"id", "name", "venue", "start_date", "days", "status", "caterer_code", "organiser",
    "expected_attendance"}], "page", "page_size", "total", "next_page"}."""
    for v in (date_from, date_to):
        if v is not None and not DATE.match(v):
            raise ToolError("dates must look like '2024-10-14'")
    if status is not None and status not in ("scheduled", "cancelled", "postponed"):
        raise ToolError("status must be 'scheduled', 'cancelled' or 'postponed' (or omitted)")
    return env.query_page(
        "select * from events where (:a is null or start_date >= :a) and (:b is null or start_date <= :b)"
        " and (:s is null or status = :s) order by start_date, id",
        {"a": date_from, "b": date_to, "s": status}, page_no, 25)


@tool
def get_event(env: Env, event_id: str) -> dict:
    """Get one event with its ticket types and its current catering orders.
    Returns {event fields..., "ticket_types": [{"id", "code", "name", "price_eur", "includes_lunch",
    "includes_dinner", "valid_day"}], "catering_orders": [{"id", "event_day", "meal", "standard_qty",
    "vegetarian_qty", "vegan_qty", "gluten_free_qty", "halal_qty", "status", "updated_at"}]}.
    valid_day null = the ticket is valid on every event day."""
    ev = _event(env, event_id)
    tickets = env.query("select id, code, name, price_eur, includes_lunch, includes_dinner, valid_day"
                        " from ticket_types where event_id = ? order by id", (ev["id"],))
    orders = env.query("select id, event_day, meal, standard_qty, vegetarian_qty, vegan_qty, gluten_free_qty,"
                       " halal_qty, status, updated_at from catering_orders where event_id = ? order by event_day,"
                       " meal", (ev["id"],))
    return ev | {"ticket_types": tickets, "catering_orders": orders}


@tool
def list_registrations(env: Env, event_id: str, status: str | None = None, page_no: int = 1) -> dict:
    """List the registrations of one event, 50 per page, ordered by id, optionally by status ('confirmed',
    'cancelled', 'waitlisted', 'pending_payment'). dietary is one of none, vegetarian, vegan, gluten_free, halal,
    kosher. Returns {"items": [{"id", "ticket_type_id", "attendee_name", "email", "company", "status",
    "dietary", "registered_at", "notes"}], "page", "page_size", "total", "next_page"}."""
    ev = _event(env, event_id)
    if status is not None and status not in REG_STATUSES:
        raise ToolError(f"status must be one of {', '.join(REG_STATUSES)} (or omitted)")
    return env.query_page(
        "select id, ticket_type_id, attendee_name, email, company, status, dietary, registered_at, notes"
        " from registrations where event_id = :e and (:s is null or status = :s) order by id",
        {"e": ev["id"], "s": status}, page_no, 50)


@tool
def list_caterers(env: Env, page_no: int = 1) -> dict:
    """List caterers, 20 per page. Returns {"items": [{"code", "name", "contact", "email"}], "page", "page_size",
    "total", "next_page"}. Rates are not stored here."""
    return page(env.query("select * from caterers order by code"), page_no, 20)


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
def set_catering_order(env: Env, event_id: str, services: list[dict]) -> dict:
    """Place the FINAL catering order of a scheduled event, replacing all of its existing orders (drafts included).
    `services` lists every service to order, each {"day": int (1 = start date), "meal": "lunch" | "dinner",
    "standard": int, "vegetarian": int, "vegan": int, "gluten_free": int, "halal": int} (counts >= 0; each
    day/meal at most once). Returns {"event_id", "services": n, "total_meals": n}."""
    ev = _event(env, event_id)
    if ev["status"] != "scheduled":
        raise ToolError(f"event {ev['id']} is {ev['status']}; catering can only be ordered for scheduled events")
    if not isinstance(services, list) or not services:
        raise ToolError("services must be a non-empty list")
    seen, clean = set(), []
    for i, s in enumerate(services):
        keys = {"day", "meal", *MEAL_TYPES}
        if not isinstance(s, dict) or set(s) != keys:
            raise ToolError(f"services[{i}] must have exactly the keys {sorted(keys)}")
        day, meal = s["day"], s["meal"]
        if isinstance(day, bool) or not isinstance(day, int) or not 1 <= day <= ev["days"]:
            raise ToolError(f"services[{i}]: day must be between 1 and {ev['days']} for this event")
        if meal not in ("lunch", "dinner"):
            raise ToolError(f"services[{i}]: meal must be 'lunch' or 'dinner'")
        if (day, meal) in seen:
            raise ToolError(f"services[{i}]: day {day} {meal} listed twice")
        seen.add((day, meal))
        qty = []
        for k in MEAL_TYPES:
            v = s[k]
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ToolError(f"services[{i}]: {k} must be a non-negative integer")
            qty.append(v)
        clean.append((day, meal, *qty))
    env.db.execute("delete from catering_orders where event_id = ?", (ev["id"],))
    for row in sorted(clean):
        env.db.execute("insert into catering_orders (event_id, event_day, meal, standard_qty, vegetarian_qty,"
                       " vegan_qty, gluten_free_qty, halal_qty, status, updated_at) values (?,?,?,?,?,?,?,?,?,?)",
                       (ev["id"], *row, "final", "2024-10-07"))
    return {"event_id": ev["id"], "services": len(clean), "total_meals": sum(sum(r[2:]) for r in clean)}


@tool
def cancel_catering_orders(env: Env, event_id: str) -> dict:
    """Cancel every catering order of an event (status becomes 'cancelled'). Returns {"event_id", "cancelled": n}."""
    ev = _event(env, event_id)
    cur = env.db.execute("update catering_orders set status = 'cancelled', updated_at = '2024-10-07'"
                         " where event_id = ? and status != 'cancelled'", (ev["id"],))
    return {"event_id": ev["id"], "cancelled": cur.rowcount}
