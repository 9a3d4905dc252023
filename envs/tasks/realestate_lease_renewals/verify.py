"""Verifier: recompute this cycle's renewal offers / non-renewals from the initial state."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import date, timedelta

from envs.taskkit import answer_field

WINDOW = ("2025-03-01", "2025-04-30")
SIX_MONTH_BUILDINGS = {"HB-11"}


def expected(env) -> tuple[dict[int, tuple[int, int]], set[int], int]:
    """(lease_id -> (proposed rent, term)), {lease_id needing a PAYMENT_HISTORY notice}, total increase."""
    caps = json.loads(env.read_text("compliance/rent_caps.json"))["jurisdictions"]
    market = {(r["building_id"], r["unit_type"]): float(r["market_rent"]) for r in
              csv.DictReader(io.StringIO(env.read_text("market/market_rents_2025Q1.csv")))}
    buildings = {b["building_id"]: b for b in env.query("select * from buildings")}
    units = {u["unit_id"]: u for u in env.query("select * from units")}
    taken = {r["lease_id"] for r in env.query("select lease_id from renewal_offers")} | \
            {r["lease_id"] for r in env.query("select lease_id from non_renewal_notices")}
    late: dict[int, int] = {}
    for p in env.query("select * from payments where due_date between '2024-01-01' and '2024-12-31'"):
        limit = (date.fromisoformat(p["due_date"]) + timedelta(days=5)).isoformat()
        if p["paid_date"] is None or p["paid_date"] > limit:
            late[p["lease_id"]] = late.get(p["lease_id"], 0) + 1
    offers: dict[int, tuple[int, int]] = {}
    notices: set[int] = set()
    total = 0
    for lease in env.query("select * from leases where status = 'active' and end_date between ? and ?", WINDOW):
        if lease["lease_id"] in taken:
            continue
        unit = units[lease["unit_id"]]
        b = buildings[unit["building_id"]]
        rule = caps[b["jurisdiction"]]
        n_late = late.get(lease["lease_id"], 0)
        if n_late >= 3 and not rule["just_cause"]:
            notices.add(lease["lease_id"])
            continue
        rent = lease["monthly_rent"]
        inc = max(0.0, market[(b["building_id"], unit["unit_type"])] - rent)
        if rule["cap_pct"] is not None and b["year_built"] < rule["cap_applies_if_year_built_before"]:
            inc = min(inc, rent * rule["cap_pct"] / 100)
        if n_late == 0:
            inc = inc / 2
        cents = round((rent + inc) * 100)
        proposed = (cents + 50) // 100
        offers[lease["lease_id"]] = (proposed, 6 if b["building_id"] in SIX_MONTH_BUILDINGS else 12)
        total += proposed - int(rent)
    return offers, notices, total


def verify(ctx) -> dict[str, bool]:
    ini, fin = ctx.initial, ctx.final
    offers, notices, total = expected(ini)
    field = answer_field(ctx.answer, "ANSWER") or ""
    num = re.sub(r"(?i)usd|\$|,|\s", "", field)
    try:
        answer_ok = abs(float(num) - total) < 0.01
    except ValueError:
        answer_ok = False

    o0 = {r["offer_id"]: r for r in ini.query("select * from renewal_offers")}
    o1 = {r["offer_id"]: r for r in fin.query("select * from renewal_offers")}
    new = [r for k, r in o1.items() if k not in o0]
    by_lease = {}
    for r in new:
        by_lease.setdefault(r["lease_id"], []).append(r)
    offers_ok = set(by_lease) == set(offers) and all(
        len(rs) == 1 and abs(rs[0]["proposed_rent"] - offers[lid][0]) < 0.01 for lid, rs in by_lease.items())
    terms_ok = offers_ok and all(rs[0]["term_months"] == offers[lid][1] for lid, rs in by_lease.items())

    n0 = {r["notice_id"]: r for r in ini.query("select * from non_renewal_notices")}
    n1 = {r["notice_id"]: r for r in fin.query("select * from non_renewal_notices")}
    new_n = [r for k, r in n1.items() if k not in n0]
    notices_ok = sorted(r["lease_id"] for r in new_n) == sorted(notices) and all(
        r["reason_code"] == "PAYMENT_HISTORY" for r in new_n)

    unchanged = all(o1.get(k) == r for k, r in o0.items()) and all(n1.get(k) == r for k, r in n0.items())
    unchanged &= all(ini.query(f"select * from {t} order by 1") == fin.query(f"select * from {t} order by 1")
                     for t in ("buildings", "units", "leases", "payments"))
    return {
        "answer_total_increase": answer_ok,
        "offers_exactly_for_covered_leases_with_correct_rent": offers_ok,
        "offer_terms_correct": terms_ok,
        "non_renewals_exactly_as_required": notices_ok,
        "no_other_rows_changed": unchanged,
    }
