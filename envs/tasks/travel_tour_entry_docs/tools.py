"""Tools of the tour operator's documents team: files, departures, bookings, travelers, visas, holds, flags."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TOUR_STATUSES = ("scheduled", "completed", "cancelled")
BOOKING_STATUSES = ("confirmed", "waitlisted", "cancelled")
HOLD_REASONS = ("passport_validity", "visa_missing")
FLAG_TYPES = ("min_group_risk", "guide_change", "supplier_issue", "weather_watch", "hotel_swap")


def _date(value: str | None, name: str) -> None:
    if value is not None and not _DATE.match(value):
        raise ToolError(f"{name} {value!r} must look like YYYY-MM-DD")


@tool
def list_files(env: Env, directory: str = "", page_no: int = 1) -> dict:
    """List workspace files (recursively) under `directory` ("" = everything), 20 per page.
    Returns {"items": [{"path", "bytes"}], "page", "page_size", "total", "next_page"}."""
    return page(env.list_files(directory), page_no, 20)


@tool
def read_file(env: Env, path: str) -> dict:
    """Read a workspace text file; `path` is relative to the workspace as returned by list_files.
    Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}


@tool
def list_tours(env: Env, depart_from: str | None = None, depart_to: str | None = None, status: str | None = None,
               page_no: int = 1) -> dict:
    """List departures ordered by departure date, 25 per page. Optional filters: depart_from / depart_to
    (inclusive YYYY-MM-DD bounds on depart_date), status ('scheduled', 'completed', 'cancelled').
    Items: tour_code, product, category ('small-group', 'classic', 'private'), depart_date, return_date,
    capacity, lead_guide, status, itinerary (list of {seq, country_code, enter_date, exit_date}).
    Returns {"items", "page", "page_size", "total", "next_page"}."""
    _date(depart_from, "depart_from")
    _date(depart_to, "depart_to")
    if status is not None and status not in TOUR_STATUSES:
        raise ToolError(f"status must be one of {', '.join(TOUR_STATUSES)}")
    rows = env.query(
        "select tour_code, product, category, depart_date, return_date, capacity, lead_guide, status from tours"
        " where (:a is null or depart_date >= :a) and (:b is null or depart_date <= :b)"
        " and (:s is null or status = :s) order by depart_date, tour_code",
        {"a": depart_from, "b": depart_to, "s": status})
    result = page(rows, page_no, 25)
    for t in result["items"]:
        t["itinerary"] = env.query(
            "select seq, country_code, enter_date, exit_date from itinerary_stops where tour_code = ? order by seq",
            (t["tour_code"],))
    return result


@tool
def list_tour_bookings(env: Env, tour_code: str | None = None, status: str | None = None,
                       depart_from: str | None = None, depart_to: str | None = None, page_no: int = 1) -> dict:
    """List tour bookings ordered by booking_id, 50 per page. Optional filters: tour_code, status ('confirmed',
    'waitlisted', 'cancelled'), depart_from / depart_to (inclusive bounds on the tour's depart_date).
    Items: booking_id, tour_code, traveler_id, booked_on, status, doc_status ('pending', 'cleared', 'hold'),
    hold_reason, hold_country. Returns {"items", "page", "page_size", "total", "next_page"}."""
    _date(depart_from, "depart_from")
    _date(depart_to, "depart_to")
    if status is not None and status not in BOOKING_STATUSES:
        raise ToolError(f"status must be one of {', '.join(BOOKING_STATUSES)}")
    if tour_code is not None and not env.query("select 1 from tours where tour_code = ?", (tour_code,)):
        raise ToolError(f"unknown tour_code {tour_code!r}; use list_tours to find codes")
    return env.query_page(
        "select b.booking_id, b.tour_code, b.traveler_id, b.booked_on, b.status, b.doc_status, b.hold_reason,"
        " b.hold_country from tour_bookings b join tours t using(tour_code)"
        " where (:c is null or b.tour_code = :c) and (:s is null or b.status = :s)"
        " and (:a is null or t.depart_date >= :a) and (:z is null or t.depart_date <= :z) order by b.booking_id",
        {"c": tour_code, "s": status, "a": depart_from, "z": depart_to}, page_no, 50)


@tool
def list_travelers(env: Env, nationality: str | None = None, page_no: int = 1) -> dict:
    """List traveler profiles ordered by traveler_id, 50 per page; optional filter nationality (ISO-3166
    alpha-2, e.g. 'GB'). Items: traveler_id, full_name, nationality, passport_no, passport_expiry, birth_date,
    email. Returns {"items", "page", "page_size", "total", "next_page"}."""
    if nationality is not None and not re.fullmatch(r"[A-Z]{2}", nationality):
        raise ToolError("nationality must be a 2-letter upper-case country code such as 'US' or 'DE'")
    return env.query_page(
        "select traveler_id, full_name, nationality, passport_no, passport_expiry, birth_date, email from travelers"
        " where (:n is null or nationality = :n) order by traveler_id",
        {"n": nationality}, page_no, 50)


@tool
def list_visas(env: Env, country_code: str | None = None, traveler_id: int | None = None, page_no: int = 1) -> dict:
    """List visa / entry-authorisation records ordered by visa_id, 50 per page. Optional filters: country_code
    (the destination, e.g. 'IN'), traveler_id. Items: visa_id, traveler_id, country_code, visa_type, valid_from,
    valid_to, entries, reference. Returns {"items", "page", "page_size", "total", "next_page"}."""
    if country_code is not None and not re.fullmatch(r"[A-Z]{2}", country_code):
        raise ToolError("country_code must be a 2-letter upper-case code such as 'VN'")
    return env.query_page(
        "select visa_id, traveler_id, country_code, visa_type, valid_from, valid_to, entries, reference from visas"
        " where (:c is null or country_code = :c) and (:t is null or traveler_id = :t) order by visa_id",
        {"c": country_code, "t": traveler_id}, page_no, 50)


@tool
def place_document_hold(env: Env, booking_id: int, reason: str, country_code: str) -> dict:
    """Put a confirmed booking whose documents are pending on document hold. reason: 'passport_validity' or
    'visa_missing'; country_code: the itinerary country whose check failed. Sets doc_status='hold',
    hold_reason and hold_country. Returns the updated booking {"booking_id", "tour_code", "doc_status",
    "hold_reason", "hold_country"}."""
    rows = env.query("select * from tour_bookings where booking_id = ?", (booking_id,))
    if not rows:
        raise ToolError(f"booking {booking_id} not found")
    b = rows[0]
    if b["status"] != "confirmed":
        raise ToolError(f"booking {booking_id} is {b['status']!r}; only confirmed bookings are reviewed")
    if b["doc_status"] != "pending":
        raise ToolError(f"booking {booking_id} already has doc_status {b['doc_status']!r}; leave it as it is")
    if reason not in HOLD_REASONS:
        raise ToolError(f"reason must be one of {', '.join(HOLD_REASONS)}")
    stops = [r["country_code"] for r in env.query(
        "select country_code from itinerary_stops where tour_code = ? order by seq", (b["tour_code"],))]
    if country_code not in stops:
        raise ToolError(f"country {country_code!r} is not on the itinerary of {b['tour_code']} ({', '.join(stops)})")
    env.db.execute("update tour_bookings set doc_status = 'hold', hold_reason = ?, hold_country = ?"
                   " where booking_id = ?", (reason, country_code, booking_id))
    return {"booking_id": booking_id, "tour_code": b["tour_code"], "doc_status": "hold", "hold_reason": reason,
            "hold_country": country_code}


@tool
def flag_departure(env: Env, tour_code: str, flag_type: str, note: str = "") -> dict:
    """Add a flag to a departure for Sales/Operations. flag_type: 'min_group_risk', 'guide_change',
    'supplier_issue', 'weather_watch' or 'hotel_swap'; note: free text. A departure can carry each flag type
    once. Returns {"flag_id", "tour_code", "flag_type"}."""
    if not env.query("select 1 from tours where tour_code = ?", (tour_code,)):
        raise ToolError(f"unknown tour_code {tour_code!r}; use list_tours to find codes")
    if flag_type not in FLAG_TYPES:
        raise ToolError(f"flag_type must be one of {', '.join(FLAG_TYPES)}")
    if env.query("select 1 from departure_flags where tour_code = ? and flag_type = ?", (tour_code, flag_type)):
        raise ToolError(f"{tour_code} already has a {flag_type!r} flag")
    cur = env.db.execute("insert into departure_flags(tour_code, flag_type, note, created_on)"
                         " values (?, ?, ?, '2025-03-17')", (tour_code, flag_type, note))
    return {"flag_id": cur.lastrowid, "tour_code": tour_code, "flag_type": flag_type}
