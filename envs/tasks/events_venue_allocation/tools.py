"""Tools for the venue allocation task: venues, rooms, clients, requests, bookings, files, allocation writes."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

REQUEST_STATUSES = ("pending", "confirmed", "declined", "withdrawn")
REASONS = ("NO_ROOM", "CREDIT_HOLD")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _venue(env: Env, venue_id: str) -> str:
    vid = (venue_id or "").strip().upper()
    if not env.query("select 1 from venues where id = ?", (vid,)):
        raise ToolError(f"unknown venue_id {venue_id!r}; use list_venues (ids look like 'VEN-01')")
    return vid


def _pending(env: Env, request_id: str) -> dict:
    rows = env.query("select * from booking_requests where id = ?", ((request_id or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown request_id {request_id!r}; use list_booking_requests")
    if rows[0]["status"] != "pending":
        raise ToolError(f"request {rows[0]['id']} is {rows[0]['status']}, only pending requests can be allocated")
    return rows[0]


@tool
def list_venues(env: Env, page_no: int = 1) -> dict:
    """List venues, 20 per page. Returns {"items": [{"id", "name", "city", "address", "opens", "closes"}],
    "page", "page_size", "total", "next_page"}."""
    return page(env.query("select * from venues order by id"), page_no, 20)


@tool
def list_rooms(env: Env, venue_id: str | None = None, page_no: int = 1) -> dict:
    """List rooms, 25 per page, ordered by room id, optionally for one venue. theatre_capacity is the seated
    capacity in theatre style; has_av / step_free are 1 or 0; daily_rate in EUR.
    Returns {"items": [{"id", "venue_id", "name", "floor", "theatre_capacity", "has_av", "step_free", "daily_rate",
    "notes"}], "page", "page_size", "total", "next_page"}."""
    vid = _venue(env, venue_id) if venue_id else None
    return env.query_page("select * from rooms where (:v is null or venue_id = :v) order by id", {"v": vid}, page_no, 25)


@tool
def list_clients(env: Env, tier: str | None = None, page_no: int = 1) -> dict:
    """List client accounts, 50 per page, optionally by tier ('platinum', 'gold', 'standard').
    Returns {"items": [{"id", "name", "tier", "contact_name", "email", "account_manager"}], "page", "page_size",
    "total", "next_page"}."""
    if tier is not None and tier not in ("platinum", "gold", "standard"):
        raise ToolError("tier must be 'platinum', 'gold' or 'standard' (or omitted)")
    return env.query_page("select * from clients where (:t is null or tier = :t) order by id", {"t": tier}, page_no, 50)


@tool
def list_booking_requests(env: Env, status: str | None = None, month: str | None = None,
                          venue_id: str | None = None, page_no: int = 1) -> dict:
    """List booking requests, 25 per page, ordered by id. Optional filters: status ('pending', 'confirmed',
    'declined', 'withdrawn'), month of the event date ('YYYY-MM'), venue_id. Times are 'HH:MM' local time;
    needs_av / needs_step_free are 1 or 0. Returns {"items": [{"id", "client_id", "venue_id", "event_name",
    "event_date", "start_time", "end_time", "attendees", "layout", "needs_av", "needs_step_free", "submitted_at",
    "status", "assigned_room_id", "decline_reason", "notes"}], "page", "page_size", "total", "next_page"}."""
    if status is not None and status not in REQUEST_STATUSES:
        raise ToolError(f"status must be one of {', '.join(REQUEST_STATUSES)} (or omitted)")
    if month is not None and not re.fullmatch(r"\d{4}-\d{2}", month):
        raise ToolError("month must look like '2024-10'")
    vid = _venue(env, venue_id) if venue_id else None
    return env.query_page(
        "select * from booking_requests where (:s is null or status = :s)"
        " and (:m is null or substr(event_date, 1, 7) = :m) and (:v is null or venue_id = :v)"
        " order by id",
        {"s": status, "m": month, "v": vid}, page_no, 25)


@tool
def list_bookings(env: Env, date_from: str, date_to: str, venue_id: str | None = None, page_no: int = 1) -> dict:
    """List room bookings with event_date between date_from and date_to (inclusive, 'YYYY-MM-DD'), 50 per page,
    ordered by date, room and start time, optionally for one venue. All statuses are listed ('confirmed',
    'tentative', 'cancelled'). Returns {"items": [{"id", "room_id", "venue_id", "request_id", "client_id",
    "event_date", "start_time", "end_time", "status", "title"}], "page", "page_size", "total", "next_page"}."""
    if not (DATE.match(date_from or "") and DATE.match(date_to or "")):
        raise ToolError("date_from and date_to must be dates like '2024-10-01'")
    vid = _venue(env, venue_id) if venue_id else None
    return env.query_page(
        "select b.id, b.room_id, r.venue_id, b.request_id, b.client_id, b.event_date, b.start_time,"
        " b.end_time, b.status, b.title from bookings b join rooms r on r.id = b.room_id"
        " where b.event_date between :a and :b and (:v is null or r.venue_id = :v)"
        " order by b.event_date, b.room_id, b.start_time, b.id",
        {"a": date_from, "b": date_to, "v": vid}, page_no, 50)


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
def assign_room(env: Env, request_id: str, room_id: str) -> dict:
    """Allocate a room to a pending request: the request becomes 'confirmed' with assigned_room_id set, and a
    confirmed booking is created for that room, date and time. The booking system does NOT check capacity,
    features, closures or clashes - that is the planner's job. Returns {"request_id", "room_id", "booking_id"}."""
    req = _pending(env, request_id)
    rows = env.query("select * from rooms where id = ?", ((room_id or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown room_id {room_id!r}; use list_rooms")
    room = rows[0]
    if room["venue_id"] != req["venue_id"]:
        raise ToolError(f"room {room['id']} is at {room['venue_id']} but request {req['id']} is for {req['venue_id']}")
    env.db.execute("update booking_requests set status = 'confirmed', assigned_room_id = ? where id = ?",
                   (room["id"], req["id"]))
    cur = env.db.execute("insert into bookings (room_id, request_id, client_id, event_date, start_time, end_time,"
                         " status, title, notes) values (?,?,?,?,?,?,?,?,?)",
                         (room["id"], req["id"], req["client_id"], req["event_date"], req["start_time"],
                          req["end_time"], "confirmed", req["event_name"], "Allocated in monthly run"))
    return {"request_id": req["id"], "room_id": room["id"], "booking_id": cur.lastrowid}


@tool
def decline_request(env: Env, request_id: str, reason_code: str) -> dict:
    """Decline a pending request with a reason code: 'NO_ROOM' (no suitable room free) or 'CREDIT_HOLD' (client on
    credit hold). Returns {"request_id", "status": "declined", "reason_code"}."""
    req = _pending(env, request_id)
    if reason_code not in REASONS:
        raise ToolError(f"reason_code must be one of {', '.join(REASONS)}")
    env.db.execute("update booking_requests set status = 'declined', decline_reason = ? where id = ?",
                   (reason_code, req["id"]))
    return {"request_id": req["id"], "status": "declined", "reason_code": reason_code}
