"""Tools of the corporate travel desk: workspace files, flights, seats, bookings, travelers, rebooking."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

FLIGHT_STATUSES = ("scheduled", "departed", "cancelled")
BOOKING_STATUSES = ("ticketed", "flown", "cancelled", "rebooked", "voucher", "refunded")
TIERS = ("platinum", "gold", "silver", "none")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _check_date(date: str | None) -> None:
    if date is not None and not _DATE.match(date):
        raise ToolError(f"date {date!r} must look like YYYY-MM-DD, e.g. 2025-01-14")


def _check_airport(env: Env, code: str | None, what: str) -> None:
    if code is None:
        return
    if not env.query("select 1 from airports where code = ?", (code,)):
        known = ", ".join(r["code"] for r in env.query("select code from airports order by code"))
        raise ToolError(f"unknown {what} airport {code!r}; use a 3-letter IATA code, one of: {known}")


@tool
def list_files(env: Env, directory: str = "", page_no: int = 1) -> dict:
    """List workspace files (recursively) under `directory` ("" = whole workspace), 20 per page.
    Returns {"items": [{"path", "bytes"}], "page", "page_size", "total", "next_page"}."""
    return page(env.list_files(directory), page_no, 20)


@tool
def read_file(env: Env, path: str) -> dict:
    """Read one workspace text file by its path relative to the workspace (as listed by list_files).
    Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}


@tool
def list_flights(env: Env, origin: str | None = None, dest: str | None = None, date: str | None = None,
                 carrier: str | None = None, status: str | None = None, page_no: int = 1) -> dict:
    """List flights ordered by scheduled departure, 50 per page. Optional exact filters: origin / dest
    (IATA code), date (YYYY-MM-DD of the local scheduled departure), carrier (e.g. 'UA'), status
    ('scheduled', 'departed', 'cancelled'). Items: flight_id, carrier, flight_no, origin, dest,
    sched_dep, sched_arr ('YYYY-MM-DD HH:MM' local), distance_mi, equipment, status, cancel_code
    (WX weather, MX mechanical, CREW, ATC, or null). Returns {"items", "page", "page_size", "total", "next_page"}."""
    _check_airport(env, origin, "origin")
    _check_airport(env, dest, "destination")
    _check_date(date)
    if status is not None and status not in FLIGHT_STATUSES:
        raise ToolError(f"status must be one of {', '.join(FLIGHT_STATUSES)}")
    return env.query_page(
        "select flight_id, carrier, flight_no, origin, dest, sched_dep, sched_arr, distance_mi, equipment, status,"
        " cancel_code from flights where (:o is null or origin = :o) and (:d is null or dest = :d)"
        " and (:dt is null or substr(sched_dep, 1, 10) = :dt) and (:c is null or carrier = :c)"
        " and (:s is null or status = :s) order by sched_dep, flight_id",
        {"o": origin, "d": dest, "dt": date, "c": carrier, "s": status}, page_no, 50)


@tool
def list_seat_inventory(env: Env, origin: str, date: str, page_no: int = 1) -> dict:
    """Open seats per cabin for every flight departing `origin` on `date` (YYYY-MM-DD), 50 rows per page,
    ordered by flight_id then cabin. Items: flight_id, cabin ('economy' or 'business'), seats_open.
    Returns {"items", "page", "page_size", "total", "next_page"}."""
    _check_airport(env, origin, "origin")
    _check_date(date)
    return env.query_page(
        "select s.flight_id, s.cabin, s.seats_open from seat_inventory s join flights f using(flight_id)"
        " where f.origin = ? and substr(f.sched_dep, 1, 10) = ? order by s.flight_id, s.cabin",
        (origin, date), page_no, 50)


@tool
def list_bookings(env: Env, flight_id: int | None = None, status: str | None = None,
                  traveler_id: int | None = None, page_no: int = 1) -> dict:
    """List bookings, 25 per page, ordered by booking_ref. Optional filters: flight_id, status ('ticketed',
    'flown', 'cancelled', 'rebooked', 'voucher', 'refunded'), traveler_id. Items: booking_ref, traveler_id,
    flight_id, cabin, fare_usd, booked_at, status, ssr, agent_notes, original_flight_id (set after a rebooking).
    Returns {"items", "page", "page_size", "total", "next_page"}."""
    if status is not None and status not in BOOKING_STATUSES:
        raise ToolError(f"status must be one of {', '.join(BOOKING_STATUSES)}")
    return env.query_page(
        "select booking_ref, traveler_id, flight_id, cabin, fare_usd, booked_at, status, ssr, agent_notes,"
        " original_flight_id from bookings where (:f is null or flight_id = :f) and (:s is null or status = :s)"
        " and (:t is null or traveler_id = :t) order by booking_ref",
        {"f": flight_id, "s": status, "t": traveler_id}, page_no, 25)


@tool
def list_travelers(env: Env, loyalty_tier: str | None = None, company: str | None = None, page_no: int = 1) -> dict:
    """List traveler profiles, 50 per page, ordered by traveler_id. Optional filters: loyalty_tier
    ('platinum', 'gold', 'silver', 'none'), company (exact name). Items: traveler_id, full_name, email,
    company, loyalty_tier, home_airport, notes. Returns {"items", "page", "page_size", "total", "next_page"}."""
    if loyalty_tier is not None and loyalty_tier not in TIERS:
        raise ToolError(f"loyalty_tier must be one of {', '.join(TIERS)}")
    return env.query_page(
        "select traveler_id, full_name, email, company, loyalty_tier, home_airport, notes from travelers"
        " where (:t is null or loyalty_tier = :t) and (:c is null or company = :c) order by traveler_id",
        {"t": loyalty_tier, "c": company}, page_no, 50)


def _ticketed_booking(env: Env, booking_ref: str) -> dict:
    rows = env.query("select * from bookings where booking_ref = ?", (booking_ref,))
    if not rows:
        raise ToolError(f"booking {booking_ref!r} not found; booking references are 6 characters, e.g. 'Q7XK2M'")
    bk = rows[0]
    if bk["status"] != "ticketed":
        raise ToolError(f"booking {booking_ref} has status {bk['status']!r}; only 'ticketed' bookings can be "
                        "rebooked or compensated")
    return bk


@tool
def rebook_booking(env: Env, booking_ref: str, new_flight_id: int) -> dict:
    """Move a ticketed booking to another flight in the same cabin, taking one open seat on it. The booking's
    status becomes 'rebooked' and original_flight_id keeps the old flight. Checks that the new flight is
    scheduled and has a seat open in the booked cabin (eligibility under the waiver is the caller's job).
    Returns {"booking_ref", "status", "flight_id", "original_flight_id", "seats_left"}."""
    bk = _ticketed_booking(env, booking_ref)
    fl = env.query("select * from flights where flight_id = ?", (new_flight_id,))
    if not fl:
        raise ToolError(f"flight {new_flight_id} not found; use list_flights to find flight ids")
    if fl[0]["status"] != "scheduled":
        raise ToolError(f"flight {new_flight_id} is {fl[0]['status']!r}; only scheduled flights can take bookings")
    if new_flight_id == bk["flight_id"]:
        raise ToolError("the booking is already on that flight")
    seats = env.query("select seats_open from seat_inventory where flight_id = ? and cabin = ?",
                      (new_flight_id, bk["cabin"]))
    if not seats or seats[0]["seats_open"] < 1:
        raise ToolError(f"flight {new_flight_id} has no open {bk['cabin']} seat")
    env.db.execute("update seat_inventory set seats_open = seats_open - 1 where flight_id = ? and cabin = ?",
                   (new_flight_id, bk["cabin"]))
    env.db.execute("update bookings set original_flight_id = flight_id, flight_id = ?, status = 'rebooked'"
                   " where booking_ref = ?", (new_flight_id, booking_ref))
    return {"booking_ref": booking_ref, "status": "rebooked", "flight_id": new_flight_id,
            "original_flight_id": bk["flight_id"], "seats_left": seats[0]["seats_open"] - 1}


@tool
def issue_voucher(env: Env, booking_ref: str, amount_usd: float, reason_code: str) -> dict:
    """Issue a travel voucher for a ticketed booking that could not be rebooked; the booking's status becomes
    'voucher'. amount_usd must be between 1 and 2000; reason_code is the event's voucher code.
    Returns {"voucher_id", "booking_ref", "amount_usd", "reason_code"}."""
    _ticketed_booking(env, booking_ref)
    if not (1 <= amount_usd <= 2000):
        raise ToolError("amount_usd must be between 1 and 2000")
    reason_code = (reason_code or "").strip()
    if not reason_code:
        raise ToolError("reason_code is required (the voucher code given in the event memo)")
    cur = env.db.execute("insert into vouchers(booking_ref, amount_usd, reason_code, issued_at)"
                         " values (?, ?, ?, '2025-01-14')", (booking_ref, float(amount_usd), reason_code))
    env.db.execute("update bookings set status = 'voucher' where booking_ref = ?", (booking_ref,))
    return {"voucher_id": cur.lastrowid, "booking_ref": booking_ref, "amount_usd": float(amount_usd),
            "reason_code": reason_code}
