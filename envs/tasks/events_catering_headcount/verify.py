"""Recompute the final catering orders from the initial state and compare with the final state."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import date, timedelta

from envs.taskkit import answer_field

WINDOW = ("2024-10-14", "2024-10-20")
TYPES = ("standard", "vegetarian", "vegan", "gluten_free", "halal")
DIET_MAP = {"none": "standard", "kosher": "vegan"}  # guidelines section 3


def expected(env) -> tuple[dict[str, dict[tuple[int, str], tuple[int, ...]]], set[str], float]:
    """(event -> {(day, meal): qty per TYPES}, events to cancel, total cost)."""
    crew_cfg = json.loads(env.read_text("config/event_crew.json"))
    rates = list(csv.DictReader(io.StringIO(env.read_text("catering/caterer_rates.csv"))))
    orders: dict[str, dict[tuple[int, str], tuple[int, ...]]] = {}
    cancel: set[str] = set()
    cost = 0.0
    for ev in env.query("select * from events where start_date between ? and ? order by id", WINDOW):
        if ev["status"] != "scheduled":
            cancel.add(ev["id"])
            continue
        tickets = {t["id"]: t for t in env.query("select * from ticket_types where event_id = ?", (ev["id"],))}
        regs = env.query("select * from registrations where event_id = ? and status = 'confirmed'", (ev["id"],))
        crew = crew_cfg["crew_by_event"].get(ev["id"], crew_cfg["default_crew"])
        start = date.fromisoformat(ev["start_date"])
        services: dict[tuple[int, str], tuple[int, ...]] = {}
        for day in range(1, ev["days"] + 1):
            meals = ["lunch"] + (["dinner"] if day < ev["days"] else [])
            for meal in meals:
                counts = dict.fromkeys(TYPES, 0)
                for r in regs:
                    t = tickets[r["ticket_type_id"]]
                    if not t["includes_" + meal] or (t["valid_day"] is not None and t["valid_day"] != day):
                        continue
                    counts[DIET_MAP.get(r["dietary"], r["dietary"])] += 1
                if sum(counts.values()) == 0:
                    continue
                if meal == "lunch":
                    counts["standard"] += crew
                counts["standard"] += -(-counts["standard"] // 20)
                total = sum(counts.values())
                if total < 20:
                    counts["standard"] += 20 - total
                services[(day, meal)] = tuple(counts[k] for k in TYPES)
                when = (start + timedelta(days=day - 1)).isoformat()
                rate = [r for r in rates if r["caterer_code"] == ev["caterer_code"] and r["meal"] == meal
                        and r["valid_from"] <= when <= r["valid_to"]][0]
                special = sum(counts.values()) - counts["standard"]
                cost += counts["standard"] * float(rate["standard_price_eur"]) + \
                    special * float(rate["special_diet_price_eur"])
        orders[ev["id"]] = services
    return orders, cancel, round(cost, 2)


def _key(r: dict) -> tuple:
    return (r["event_day"], r["meal"])


def verify(ctx) -> dict[str, bool]:
    init, fin = ctx.initial, ctx.final
    orders, cancel, cost = expected(init)
    meals = sum(sum(q) for s in orders.values() for q in s.values())
    irows = init.query("select * from catering_orders")
    frows = fin.query("select * from catering_orders")
    by_ev_f: dict[str, list[dict]] = {}
    for r in frows:
        by_ev_f.setdefault(r["event_id"], []).append(r)
    by_ev_i: dict[str, list[dict]] = {}
    for r in irows:
        by_ev_i.setdefault(r["event_id"], []).append(r)

    orders_ok = True
    for ev, services in orders.items():
        rows = by_ev_f.get(ev, [])
        got = {_key(r): tuple(r[k + "_qty"] for k in TYPES) for r in rows if r["status"] == "final"}
        orders_ok &= got == services and len(rows) == len(services)
    cancel_ok = True
    for ev in cancel:
        before = {r["id"]: r for r in by_ev_i.get(ev, [])}
        after = {r["id"]: r for r in by_ev_f.get(ev, [])}
        cancel_ok &= set(before) == set(after) and all(
            after[k]["status"] == "cancelled" and {**after[k], "status": 0, "updated_at": 0} ==
            {**v, "status": 0, "updated_at": 0} for k, v in before.items())
    touched = set(orders) | cancel
    others_ok = sorted((r["id"], tuple(r.values())) for r in irows if r["event_id"] not in touched) == \
        sorted((r["id"], tuple(r.values())) for r in frows if r["event_id"] not in touched)
    static_ok = all(init.query(f"select * from {t} order by 1") == fin.query(f"select * from {t} order by 1")
                    for t in ("events", "ticket_types", "registrations", "caterers"))
    parts = (answer_field(ctx.answer, "ANSWER") or "").replace("€", "").replace("EUR", "").split(";")
    nums = []
    for part in parts:
        m = re.search(r"\d[\d,]*(?:\.\d+)?", part)
        nums.append(float(m.group(0).replace(",", "")) if m else None)
    return {
        "answer_total_meals_correct": len(nums) == 2 and nums[0] == meals,
        "answer_total_cost_correct": len(nums) == 2 and nums[1] is not None and abs(nums[1] - cost) <= 0.01,
        "final_orders_match_guidelines": orders_ok,
        "cancelled_and_postponed_events_orders_cancelled": cancel_ok,
        "other_events_catering_untouched": others_ok,
        "events_and_registrations_untouched": static_ok,
    }
