"""Tools of the hub closure re-planning: workspace files, hubs, route stops, shipments, reroute and hold."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

STOP_STATUSES = ("planned", "completed", "cancelled")
SHIP_STATUSES = ("scheduled", "in_transit", "delivered", "cancelled", "on_hold")
LEVELS = ("critical", "express", "standard", "economy")
HOLD_REASONS = ("economy_deferred", "no_alternate")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SHIP_COLS = ("shipment_id, pro_number, customer_id, origin_city, origin_state, dest_city, dest_state, dest_region,"
             " service_level, promised_date, pallets, weight_lb, hazmat, temp_controlled, status, hold_reason, notes")


@tool
def list_files(env: Env, directory: str = "", page_no: int = 1) -> dict:
    """List workspace files under `directory` ("" = whole workspace), recursively, 25 per page.
    Returns {"items": [{"path", "bytes"}], "page", "page_size", "total", "next_page"}."""
    return page(env.list_files(directory), page_no, 25)


@tool
def read_file(env: Env, path: str) -> dict:
    """Read one workspace file (text). `path` is relative to the workspace, as returned by list_files.
    Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}


@tool
def list_hubs(env: Env, page_no: int = 1) -> dict:
    """List the network hubs, 25 per page. Returns {"items": [{"hub_code", "name", "city", "state", "region"}],
    "page", "page_size", "total", "next_page"}."""
    return page(env.query("select hub_code, name, city, state, region from hubs order by hub_code"), page_no, 25)


@tool
def list_route_stops(env: Env, hub_code: str | None = None, date_from: str | None = None, date_to: str | None = None,
                     status: str | None = None, page_no: int = 1) -> dict:
    """List shipment route stops, 50 per page, ordered by stop_id, optionally filtered by hub_code, planned-date
    range (YYYY-MM-DD, inclusive) and stop status ('planned', 'completed', 'cancelled').
    Returns {"items": [{"stop_id", "shipment_id", "seq", "hub_code", "planned_date", "status", "original_hub"}],
    "page", "page_size", "total", "next_page"}."""
    for name, value in (("date_from", date_from), ("date_to", date_to)):
        if value is not None and not DATE.match(value):
            raise ToolError(f"{name} must be a date YYYY-MM-DD, got {value!r}")
    if status is not None and status not in STOP_STATUSES:
        raise ToolError(f"unknown stop status {status!r}; expected one of {', '.join(STOP_STATUSES)}")
    if hub_code is not None and not env.query("select 1 from hubs where hub_code = ?", (hub_code,)):
        raise ToolError(f"unknown hub_code {hub_code!r}; see list_hubs")
    return env.query_page(
        "select stop_id, shipment_id, seq, hub_code, planned_date, status, original_hub from route_stops"
        " where (:h is null or hub_code = :h) and (:a is null or planned_date >= :a)"
        " and (:b is null or planned_date <= :b) and (:s is null or status = :s) order by stop_id",
        {"h": hub_code, "a": date_from, "b": date_to, "s": status}, page_no, 50)


@tool
def get_shipments(env: Env, shipment_ids: list[int]) -> dict:
    """Fetch up to 50 shipments by id, each with its full route. Returns {"items": [{"shipment_id", "pro_number",
    "customer_id", "origin_city", "dest_city", "dest_state", "dest_region", "service_level", "promised_date",
    "pallets", "weight_lb", "hazmat" (0/1), "temp_controlled" (0/1), "status", "hold_reason", "notes",
    "stops": [{"stop_id", "seq", "hub_code", "planned_date", "status"}]}], "not_found": [ids]}."""
    if not isinstance(shipment_ids, list) or not shipment_ids:
        raise ToolError("shipment_ids must be a non-empty list of integers")
    if len(shipment_ids) > 50:
        raise ToolError(f"at most 50 shipment ids per call (got {len(shipment_ids)}); split the list")
    items, missing = [], []
    for sid in shipment_ids:
        r = env.query(f"select {SHIP_COLS} from shipments where shipment_id = ?", (int(sid),))
        if not r:
            missing.append(sid)
            continue
        r[0]["stops"] = env.query("select stop_id, seq, hub_code, planned_date, status from route_stops"
                                  " where shipment_id = ? order by seq", (int(sid),))
        items.append(r[0])
    return {"items": items, "not_found": missing}


@tool
def list_shipments(env: Env, status: str | None = None, service_level: str | None = None, page_no: int = 1) -> dict:
    """List shipments (without routes), 50 per page, ordered by shipment_id, optionally filtered by status
    ('scheduled', 'in_transit', 'delivered', 'cancelled', 'on_hold') and service_level ('critical', 'express',
    'standard', 'economy'). Returns {"items": [...shipment fields...], "page", "page_size", "total", "next_page"}."""
    if status is not None and status not in SHIP_STATUSES:
        raise ToolError(f"unknown status {status!r}; expected one of {', '.join(SHIP_STATUSES)}")
    if service_level is not None and service_level not in LEVELS:
        raise ToolError(f"unknown service_level {service_level!r}; expected one of {', '.join(LEVELS)}")
    return env.query_page(
        f"select {SHIP_COLS} from shipments where (:s is null or status = :s)"
        " and (:l is null or service_level = :l) order by shipment_id",
        {"s": status, "l": service_level}, page_no, 50)


def _live(env: Env, shipment_id: int) -> dict:
    r = env.query(f"select {SHIP_COLS} from shipments where shipment_id = ?", (shipment_id,))
    if not r:
        raise ToolError(f"no shipment with shipment_id {shipment_id}")
    if r[0]["status"] not in ("scheduled", "in_transit"):
        raise ToolError(f"shipment {shipment_id} has status {r[0]['status']!r}; only scheduled or in-transit"
                        " shipments can be re-planned")
    return r[0]


@tool
def reroute_shipment(env: Env, shipment_id: int, stop_id: int, new_hub: str) -> dict:
    """Move one planned stop of a live shipment to another hub (same planned date). The stop keeps its date and
    records the original hub. Returns the updated stop."""
    _live(env, shipment_id)
    stop = env.query("select * from route_stops where stop_id = ? and shipment_id = ?", (stop_id, shipment_id))
    if not stop:
        raise ToolError(f"stop {stop_id} is not a stop of shipment {shipment_id}")
    if stop[0]["status"] != "planned":
        raise ToolError(f"stop {stop_id} has status {stop[0]['status']!r}; only planned stops can be rerouted")
    if not env.query("select 1 from hubs where hub_code = ?", (new_hub,)):
        raise ToolError(f"unknown hub {new_hub!r}; see list_hubs")
    if new_hub == stop[0]["hub_code"]:
        raise ToolError(f"stop {stop_id} is already at {new_hub}")
    env.db.execute("update route_stops set original_hub = coalesce(original_hub, hub_code), hub_code = ?"
                   " where stop_id = ?", (new_hub, stop_id))
    return env.query("select * from route_stops where stop_id = ?", (stop_id,))[0]


@tool
def hold_shipment(env: Env, shipment_id: int, reason: str) -> dict:
    """Put a live shipment on hold. reason: 'economy_deferred' or 'no_alternate'. Its status becomes 'on_hold'.
    Returns the updated shipment."""
    _live(env, shipment_id)
    if reason not in HOLD_REASONS:
        raise ToolError(f"unknown reason {reason!r}; expected one of {', '.join(HOLD_REASONS)}")
    env.db.execute("update shipments set status = 'on_hold', hold_reason = ? where shipment_id = ?", (reason, shipment_id))
    return env.query(f"select {SHIP_COLS} from shipments where shipment_id = ?", (shipment_id,))[0]
