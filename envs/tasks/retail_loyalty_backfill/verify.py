"""Expected backfill computed from the initial database, the promotion calendar and the program terms."""

from __future__ import annotations

import csv
import io
import re

from envs.taskkit import VerifyContext, answer_field

TIERS = ["Basic", "Silver", "Gold", "Platinum"]
INCIDENT = "INC-2291"
BROKEN = ("PR-0911", "PR-0916")
WINDOW = ("2024-09-14 06:00", "2024-09-21 14:30")  # [start, end) as written in the incident report


def _rates(text: str) -> dict[str, float]:
    rates = {}
    for tier in TIERS:
        m = re.search(rf"^\|\s*{tier}\s*\|\s*([0-9.]+)\s*\|", text, flags=re.M)
        rates[tier] = float(m.group(1))
    return rates


def expected(env) -> dict[str, int]:
    rates = _rates(env.read_text("loyalty/program_terms_2024.md"))
    promos = {}
    for row in csv.DictReader(io.StringIO(env.read_text("promotions/promo_calendar_2024H2.csv"))):
        if row["promo_id"] in BROKEN:
            promos[row["promo_id"]] = row
    members = {r["member_id"]: r for r in env.query("select member_id, tier, status from members")}
    credited = {r["reference"] for r in env.query("select reference from points_ledger where kind = 'bonus'")}
    orders = env.query("select * from orders where status = 'completed' and member_id is not null "
                       "and ordered_at >= ? and ordered_at < ?", WINDOW)
    owed: dict[str, int] = {}
    for o in orders:
        m = members[o["member_id"]]
        if m["status"] != "active":
            continue
        lines = env.query("select l.qty, l.unit_price, l.discount, p.category from order_lines l "
                          "join products p on p.sku = l.sku where l.order_id = ?", (o["order_id"],))
        for pid, pr in promos.items():
            day = o["ordered_at"][:10]
            if not (pr["start_date"] <= day <= pr["end_date"]):
                continue
            if o["channel"] not in pr["channels"].split("|"):
                continue
            if TIERS.index(m["tier"]) < TIERS.index(pr["min_tier"]):
                continue
            if f"{o['order_id']}:{pid}" in credited:
                continue
            cats = pr["categories"].split("|")
            cents = sum(round(ln["qty"] * ln["unit_price"] * 100) - round(ln["discount"] * 100)
                        for ln in lines if ln["category"] in cats)
            if cents <= 0:
                continue
            pts = int((cents // 100) * rates[m["tier"]] * (int(pr["multiplier"]) - 1))
            if pts > 0:
                owed[m["member_id"]] = owed.get(m["member_id"], 0) + pts
    return owed


def _table(env, sql: str) -> list[tuple]:
    return [tuple(r.values()) for r in env.query(sql)]


def verify(ctx: VerifyContext) -> dict[str, bool]:
    owed = expected(ctx.initial)
    max_id = ctx.initial.query("select coalesce(max(entry_id), 0) as m from points_ledger")[0]["m"]
    new = ctx.final.query("select * from points_ledger where entry_id > ? order by entry_id", (max_id,))
    posted: dict[str, list[dict]] = {}
    for e in new:
        posted.setdefault(e["member_id"], []).append(e)
    one_each = all(len(v) == 1 for v in posted.values())
    right_members = set(posted) == set(owed)
    right_points = right_members and one_each and all(posted[m][0]["points"] == p for m, p in owed.items())
    well_formed = bool(new) and all(e["kind"] == "adjustment" and (e["reference"] or "").strip().upper() == INCIDENT
                                    for e in new)

    unchanged = all(
        _table(ctx.initial, sql) == _table(ctx.final, sql)
        for sql in ("select * from members order by member_id", "select * from orders order by order_id",
                    "select * from order_lines order by order_id, line_no", "select * from products order by sku",
                    "select * from stores order by store_id")
    ) and _table(ctx.initial, "select * from points_ledger order by entry_id") == _table(
        ctx.final, f"select * from points_ledger where entry_id <= {int(max_id)} order by entry_id")

    total = sum(owed.values())
    best = max(owed.values()) if owed else 0
    top = min(m for m, p in owed.items() if p == best) if owed else ""
    field = answer_field(ctx.answer, "ANSWER") or ""
    parts = [p.strip() for p in field.split(";")]
    got_total = None
    if parts and parts[0]:
        try:
            got_total = int(float(re.sub(r"[,\s]|points?|pts", "", parts[0], flags=re.I)))
        except ValueError:
            got_total = None
    got_top = parts[1].strip().strip("`'\"").upper() if len(parts) > 1 else ""
    return {
        "adjusted_exactly_the_affected_members": right_members and one_each,
        "adjustment_points_correct": right_points,
        "adjustments_are_kind_adjustment_with_incident_reference": well_formed,
        "no_other_rows_changed": unchanged,
        "answer_total_points_correct": got_total == total,
        "answer_top_member_correct": got_top == top.upper(),
    }
