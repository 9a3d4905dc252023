"""Verifier: recompute W22 first-response breaches (regional business clock) and required escalations."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timedelta

from envs.taskkit import answer_field

SCOPE = ("2025-05-26 00:00", "2025-06-01 23:59")
CUTOFF = datetime(2025, 6, 2, 9, 0)
HOURS = {"NA": (14, 22), "EU": (7, 15), "UK": (8, 16), "APAC": (1, 9)}
TARGET_H = {"enterprise": {"urgent": 1, "high": 2, "normal": 4, "low": 8},
            "business": {"urgent": 2, "high": 4, "normal": 8, "low": 16},
            "starter": {"urgent": 4, "high": 8, "normal": 24, "low": 48}}
ACTION = {"enterprise": ("L2", "csm"), "business": ("L1", "team_lead")}
RANK = {"L1": 1, "L2": 2}


def _ts(s: str) -> datetime:
    return datetime.strptime(s, "%Y-%m-%d %H:%M")


def _clock(start: datetime, end: datetime, region: str, off: set) -> float:
    lo, hi = HOURS[region]
    minutes = 0.0
    day = datetime(start.year, start.month, start.day)
    while day <= end:
        if day.weekday() < 5 and (day.strftime("%Y-%m-%d"), region) not in off:
            s, e = max(start, day + timedelta(hours=lo)), min(end, day + timedelta(hours=hi))
            if e > s:
                minutes += (e - s).total_seconds() / 60
        day += timedelta(days=1)
    return minutes


def expected(env) -> tuple[dict[str, int], dict[int, tuple[str, str]]]:
    off = {(r["date"], r["region"]) for r in
           csv.DictReader(io.StringIO(env.read_text("sla/holidays_2025.csv")))}
    cust = {c["customer_id"]: c for c in env.query("select * from customers")}
    first: dict[int, datetime] = {}
    for m in env.query("select ticket_id, created_at from ticket_messages where author_type = 'agent'"
                       " and is_internal = 0"):
        t = _ts(m["created_at"])
        if m["ticket_id"] not in first or t < first[m["ticket_id"]]:
            first[m["ticket_id"]] = t
    existing: dict[int, int] = {}
    for e in env.query("select ticket_id, level from escalations"):
        existing[e["ticket_id"]] = max(existing.get(e["ticket_id"], 0), RANK[e["level"]])
    counts = {"enterprise": 0, "business": 0, "starter": 0}
    todo: dict[int, tuple[str, str]] = {}
    for t in env.query("select * from tickets where created_at between ? and ? and status not in ('spam', 'merged')",
                       SCOPE):
        c = cust[t["customer_id"]]
        start = _ts(t["created_at"])
        end = first.get(t["ticket_id"], CUTOFF)
        if c["plan"] == "enterprise" and t["priority"] == "urgent":
            used = (end - start).total_seconds() / 60
        else:
            used = _clock(start, end, c["region"], off)
        if used > TARGET_H[c["plan"]][t["priority"]] * 60:
            counts[c["plan"]] += 1
            if c["plan"] in ACTION and existing.get(t["ticket_id"], 0) < RANK[ACTION[c["plan"]][0]]:
                todo[t["ticket_id"]] = ACTION[c["plan"]]
    return counts, todo


def verify(ctx) -> dict[str, bool]:
    ini, fin = ctx.initial, ctx.final
    counts, todo = expected(ini)
    field = (answer_field(ctx.answer, "ANSWER") or "").lower()
    got = {}
    for plan in counts:
        m = re.search(rf"{plan}\s*[=:]\s*(\d+)", field)
        got[plan] = int(m.group(1)) if m else None
    answer_ok = got == counts

    e0 = {r["escalation_id"]: r for r in ini.query("select * from escalations")}
    e1 = {r["escalation_id"]: r for r in fin.query("select * from escalations")}
    new = [r for k, r in e1.items() if k not in e0]
    ids = sorted(r["ticket_id"] for r in new)
    set_ok = ids == sorted(todo)
    detail_ok = set_ok and all((r["level"], r["notify"]) == todo[r["ticket_id"]] for r in new)
    unchanged = all(e1.get(k) == r for k, r in e0.items()) and all(
        ini.query(f"select * from {t} order by 1") == fin.query(f"select * from {t} order by 1")
        for t in ("customers", "agents", "tickets", "ticket_messages"))
    return {
        "answer_breach_counts_per_plan": answer_ok,
        "escalated_exactly_the_required_tickets": set_ok,
        "escalation_level_and_notify_correct": detail_ok,
        "no_other_rows_changed": unchanged,
    }
