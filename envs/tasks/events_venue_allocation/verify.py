"""Replay the October allocation run from the initial state and compare with the final state."""

from __future__ import annotations

import csv
import io
import json
import re

from envs.taskkit import answer_field


def _mins(hm: str) -> int:
    h, m = hm.split(":")
    return int(h) * 60 + int(m)


def expected(env) -> dict[str, tuple[str, str]]:
    """request_id -> ('room', room_id) or ('declined', reason)."""
    settings = json.loads(env.read_text("config/allocation_settings.json"))
    month, buffer = settings["allocation_month"], int(settings["turnaround_minutes"])
    tier_rank = {t: i for i, t in enumerate(settings["tier_priority"])}
    blocking = set(settings["blocking_booking_statuses"])
    pct = {r["layout"]: int(r["capacity_percent_of_theatre"])
           for r in csv.DictReader(io.StringIO(env.read_text("data/layout_capacity.csv")))}
    held = {r["client_id"] for r in csv.DictReader(io.StringIO(env.read_text("finance/credit_holds.csv")))
            if not r["released_on"].strip()}
    closed: dict[str, list[tuple[str, str]]] = {}
    memo = env.read_text("memos/2024-09-18_facilities_room_closures_q4.txt")
    for rid, d0, d1 in re.findall(r"^- (R-\d{4}) .*closed (\d{4}-\d{2}-\d{2}) to (\d{4}-\d{2}-\d{2})", memo, re.M):
        closed.setdefault(rid, []).append((d0, d1))
    tiers = {r["id"]: r["tier"] for r in env.query("select id, tier from clients")}
    rooms = env.query("select * from rooms order by id")
    busy: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for b in env.query("select * from bookings"):
        if b["status"] in blocking:
            busy.setdefault((b["room_id"], b["event_date"]), []).append((_mins(b["start_time"]), _mins(b["end_time"])))
    reqs = env.query("select * from booking_requests where status = 'pending' and substr(event_date, 1, 7) = ?",
                     (month,))
    reqs.sort(key=lambda q: (tier_rank[tiers[q["client_id"]]], q["submitted_at"], q["id"]))
    out: dict[str, tuple[str, str]] = {}
    for q in reqs:
        if q["client_id"] in held:
            out[q["id"]] = ("declined", "CREDIT_HOLD")
            continue
        s, e = _mins(q["start_time"]), _mins(q["end_time"])
        best = None
        for r in rooms:
            cap = r["theatre_capacity"] * pct[q["layout"]] // 100
            if r["venue_id"] != q["venue_id"] or cap < q["attendees"]:
                continue
            if (q["needs_av"] and not r["has_av"]) or (q["needs_step_free"] and not r["step_free"]):
                continue
            if any(d0 <= q["event_date"] <= d1 for d0, d1 in closed.get(r["id"], [])):
                continue
            if any(s < be + buffer and bs < e + buffer for bs, be in busy.get((r["id"], q["event_date"]), [])):
                continue
            key = (cap, r["daily_rate"], r["id"])
            if best is None or key < best:
                best = key
        if best is None:
            out[q["id"]] = ("declined", "NO_ROOM")
        else:
            out[q["id"]] = ("room", best[2])
            busy.setdefault((best[2], q["event_date"]), []).append((s, e))
    return out


def verify(ctx) -> dict[str, bool]:
    init, fin = ctx.initial, ctx.final
    exp = expected(init)
    ireq = {r["id"]: r for r in init.query("select * from booking_requests")}
    freq = {r["id"]: r for r in fin.query("select * from booking_requests")}
    alloc_ok = set(ireq) == set(freq)
    decl_ok = alloc_ok
    for rid, (kind, val) in exp.items():
        f = freq.get(rid) or {}
        if kind == "room":
            alloc_ok &= f.get("status") == "confirmed" and f.get("assigned_room_id") == val
        else:
            decl_ok &= f.get("status") == "declined" and f.get("decline_reason") == val and not f.get("assigned_room_id")
    others_ok = set(ireq) == set(freq) and all(freq[k] == v for k, v in ireq.items() if k not in exp)
    fields_ok = set(ireq) == set(freq) and all(
        {**freq[k], "status": 0, "assigned_room_id": 0, "decline_reason": 0} ==
        {**ireq[k], "status": 0, "assigned_room_id": 0, "decline_reason": 0} for k in exp)

    ibk = {r["id"]: r for r in init.query("select * from bookings")}
    fbk = {r["id"]: r for r in fin.query("select * from bookings")}
    old_bk_ok = all(fbk.get(k) == v for k, v in ibk.items())
    new_bk = [r for k, r in fbk.items() if k not in ibk]
    want = sorted((rid, val, ireq[rid]["event_date"], ireq[rid]["start_time"], ireq[rid]["end_time"])
                  for rid, (kind, val) in exp.items() if kind == "room")
    got = sorted((b["request_id"], b["room_id"], b["event_date"], b["start_time"], b["end_time"]) for b in new_bk
                 if b["status"] == "confirmed")
    bookings_ok = old_bk_ok and got == want and len(new_bk) == len(want)

    static_ok = all(init.query(f"select * from {t} order by 1") == fin.query(f"select * from {t} order by 1")
                    for t in ("venues", "rooms", "clients"))
    n_alloc = sum(1 for k, _ in exp.values() if k == "room")
    n_decl = len(exp) - n_alloc
    nums = [int(x) for x in re.findall(r"\d+", answer_field(ctx.answer, "ANSWER") or "")]
    return {
        "answer_counts_correct": nums == [n_alloc, n_decl],
        "rooms_allocated_per_rules": alloc_ok,
        "declines_with_correct_reasons": decl_ok,
        "bookings_created_for_allocations_only": bookings_ok,
        "out_of_scope_requests_untouched": others_ok and fields_ok,
        "venues_rooms_clients_untouched": static_ok,
    }
