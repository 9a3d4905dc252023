"""Verifier: recompute the event's rebookings/vouchers from the initial state and compare."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime, timedelta

from envs.taskkit import answer_field

ORIGINS = ("DEN", "COS")
EVENT_DATE = "2025-01-14"
WINDOW_H = 36
REASON = "WX14-FRONTRANGE"
TIER_RANK = {"platinum": 0, "gold": 1, "silver": 2, "none": 3}


def _t(s: str) -> datetime:
    return datetime.strptime(s, "%Y-%m-%d %H:%M")


def expected(env) -> tuple[dict[str, int], dict[str, float]]:
    """(booking_ref -> new flight_id, booking_ref -> voucher amount)."""
    groups = json.loads(env.read_text("reference/coterminals.json"))["groups"]
    metro = {a: tuple(sorted(g)) for g in groups.values() for a in g}
    bands = list(csv.DictReader(io.StringIO(env.read_text("reference/voucher_bands.csv"))))
    flights = {f["flight_id"]: f for f in env.query("select * from flights")}
    seats = {(r["flight_id"], r["cabin"]): r["seats_open"] for r in env.query("select * from seat_inventory")}
    tiers = {r["traveler_id"]: r["loyalty_tier"] for r in env.query("select * from travelers")}
    hit = {fid for fid, f in flights.items() if f["origin"] in ORIGINS and f["sched_dep"][:10] == EVENT_DATE
           and f["status"] == "cancelled" and f["cancel_code"] == "WX"}
    todo = [b for b in env.query("select * from bookings where status = 'ticketed'") if b["flight_id"] in hit]
    todo.sort(key=lambda b: (TIER_RANK[tiers[b["traveler_id"]]], b["booked_at"], b["booking_ref"]))
    rebook: dict[str, int] = {}
    vouch: dict[str, float] = {}
    for b in todo:
        old = flights[b["flight_id"]]
        t0 = _t(old["sched_dep"])
        dests = metro.get(old["dest"], (old["dest"],))
        cands = [f for f in flights.values()
                 if f["carrier"] == old["carrier"] and f["origin"] == old["origin"] and f["dest"] in dests
                 and f["status"] == "scheduled" and t0 < _t(f["sched_dep"]) <= t0 + timedelta(hours=WINDOW_H)
                 and seats.get((f["flight_id"], b["cabin"]), 0) >= 1]
        if cands:
            best = min(cands, key=lambda f: (f["sched_dep"], f["flight_id"]))
            seats[(best["flight_id"], b["cabin"])] -= 1
            rebook[b["booking_ref"]] = best["flight_id"]
        else:
            band = next(r for r in bands if int(r["min_miles"]) <= old["distance_mi"] <= int(r["max_miles"]))
            amount = float(band["economy_usd" if b["cabin"] == "economy" else "business_usd"])
            if tiers[b["traveler_id"]] == "platinum":
                amount = float(round(amount * 1.5))
            vouch[b["booking_ref"]] = amount
    return rebook, vouch


def _num(text: str) -> float | None:
    t = re.sub(r"(?i)usd|\$|,|\s", "", text or "")
    try:
        return float(t)
    except ValueError:
        return None


def _table(env, table: str, key: str) -> dict:
    return {r[key]: r for r in env.query(f"select * from {table}")}


def verify(ctx) -> dict[str, bool]:
    ini, fin = ctx.initial, ctx.final
    rebook, vouch = expected(ini)

    # answer
    field = answer_field(ctx.answer, "ANSWER") or ""
    parts = field.split("|")
    n_ok = total_ok = False
    if len(parts) == 2:
        n, tot = _num(parts[0]), _num(parts[1])
        n_ok = n is not None and n == len(rebook)
        total_ok = tot is not None and abs(tot - sum(vouch.values())) < 0.01

    # bookings
    b0, b1 = _table(ini, "bookings", "booking_ref"), _table(fin, "bookings", "booking_ref")
    rebooked_ok = set(b0) == set(b1)
    vouch_status_ok = rebooked_ok
    others_ok = rebooked_ok
    if rebooked_ok:
        for ref, row in b0.items():
            new = b1[ref]
            if ref in rebook:
                want = dict(row, flight_id=rebook[ref], status="rebooked", original_flight_id=row["flight_id"])
                rebooked_ok &= new == want
            elif ref in vouch:
                vouch_status_ok &= new == dict(row, status="voucher")
            else:
                others_ok &= new == row

    # vouchers
    v0, v1 = _table(ini, "vouchers", "voucher_id"), _table(fin, "vouchers", "voucher_id")
    old_kept = all(v1.get(k) == v for k, v in v0.items())
    added = [v for k, v in v1.items() if k not in v0]
    by_ref: dict[str, list] = {}
    for v in added:
        by_ref.setdefault(v["booking_ref"], []).append(v)
    vouchers_ok = old_kept and set(by_ref) == set(vouch) and all(
        len(vs) == 1 and abs(vs[0]["amount_usd"] - vouch[r]) < 0.01
        and (vs[0]["reason_code"] or "").strip().upper() == REASON for r, vs in by_ref.items())

    # seats
    s0 = {(r["flight_id"], r["cabin"]): r["seats_open"] for r in ini.query("select * from seat_inventory")}
    s1 = {(r["flight_id"], r["cabin"]): r["seats_open"] for r in fin.query("select * from seat_inventory")}
    want_seats = dict(s0)
    for ref, fid in rebook.items():
        want_seats[(fid, b0[ref]["cabin"])] -= 1
    seats_ok = s1 == want_seats

    static_ok = all(ini.query(f"select * from {t} order by 1") == fin.query(f"select * from {t} order by 1")
                    for t in ("flights", "travelers", "airports"))

    return {
        "answer_rebooked_count": n_ok,
        "answer_voucher_total": total_ok,
        "rebooked_exactly_the_expected_bookings": rebooked_ok,
        "voucher_bookings_marked": vouch_status_ok,
        "vouchers_issued_with_correct_amounts_and_code": vouchers_ok,
        "seat_inventory_consistent": seats_ok,
        "no_other_rows_changed": others_ok and static_ok,
    }
