"""Verifier: recompute Q2 document holds and min-group flags from the initial state."""

from __future__ import annotations

import re
from datetime import date

from envs.taskkit import answer_field

Q2 = ("2025-04-01", "2025-06-30")
MINIMUM = {"small-group": 6, "classic": 10, "private": 2}
# country -> (validity measured from 'entry' or 'exit', months, regime, nationality list); advisory applied below
SHEETS = {
    "JP": ("exit", 0, "exempt", {"US", "CA", "GB", "IE", "AU", "NZ", "DE", "FR", "NL", "CH", "PL", "CZ", "SG", "KR",
                                 "MX", "BR"}),
    "VN": ("entry", 6, "exempt", {"GB", "DE", "FR", "KR", "JP"}),
    "KH": ("entry", 6, "voa_except", {"NG", "PK", "BD", "LK"}),
    "IN": ("entry", 6, "exempt", set()),
    "NP": ("entry", 6, "voa_except", {"NG"}),
    "KE": ("exit", 6, "exempt", set()),
    "TZ": ("entry", 6, "exempt", {"KE", "ZA"}),
}


def _plus_months(d: date, n: int) -> date:
    m = d.month - 1 + n
    y, m = d.year + m // 12, m % 12 + 1
    day = d.day
    while True:
        try:
            return date(y, m, day)
        except ValueError:
            day -= 1


def _needs_visa(cc: str, nat: str, enter: str) -> bool:
    _, _, regime, listed = SHEETS[cc]
    if cc == "VN" and nat in {"PL", "CZ", "CH"} and enter >= "2025-03-15":  # advisory item 1
        return False
    if cc == "NP" and nat in {"BD", "PK", "LK"} and enter >= "2025-05-01":  # advisory item 2
        return True
    return (nat not in listed) if regime == "exempt" else (nat in listed)


def expected(env) -> tuple[dict[int, tuple[str, str]], set[str]]:
    tours = {t["tour_code"]: t for t in env.query(
        "select * from tours where status = 'scheduled' and depart_date between ? and ?", Q2)}
    stops: dict[str, list] = {}
    for s in env.query("select * from itinerary_stops order by tour_code, seq"):
        stops.setdefault(s["tour_code"], []).append(s)
    trav = {t["traveler_id"]: t for t in env.query("select * from travelers")}
    visas: dict[tuple[int, str], list] = {}
    for v in env.query("select * from visas"):
        visas.setdefault((v["traveler_id"], v["country_code"]), []).append(v)
    holds: dict[int, tuple[str, str]] = {}
    bookings = env.query("select * from tour_bookings")
    for b in bookings:
        if b["tour_code"] not in tours or b["status"] != "confirmed" or b["doc_status"] != "pending":
            continue
        t = trav[b["traveler_id"]]
        for s in stops[b["tour_code"]]:
            cc = s["country_code"]
            base, months, _, _ = SHEETS[cc]
            ref = date.fromisoformat(s["enter_date"] if base == "entry" else s["exit_date"])
            if date.fromisoformat(t["passport_expiry"]) < _plus_months(ref, months):
                holds[b["booking_id"]] = ("passport_validity", cc)
                break
            if _needs_visa(cc, t["nationality"], s["enter_date"]) and not any(
                    v["valid_from"] <= s["enter_date"] and v["valid_to"] >= s["exit_date"]
                    for v in visas.get((t["traveler_id"], cc), [])):
                holds[b["booking_id"]] = ("visa_missing", cc)
                break
    count = dict.fromkeys(tours, 0)
    for b in bookings:
        if b["tour_code"] in tours and b["status"] == "confirmed" and b["doc_status"] != "hold" \
                and b["booking_id"] not in holds:
            count[b["tour_code"]] += 1
    risky = {c for c, n in count.items() if n < MINIMUM[tours[c]["category"]]}
    return holds, risky


def verify(ctx) -> dict[str, bool]:
    ini, fin = ctx.initial, ctx.final
    holds, risky = expected(ini)

    field = (answer_field(ctx.answer, "ANSWER") or "").upper()
    answered = set(re.findall(r"[A-Z]{3}-\d{6}[A-Z]?", field))
    answer_ok = answered == risky and len(re.findall(r"[A-Z]{3}-\d{6}[A-Z]?", field)) == len(risky)

    b0 = {r["booking_id"]: r for r in ini.query("select * from tour_bookings")}
    b1 = {r["booking_id"]: r for r in fin.query("select * from tour_bookings")}
    holds_ok = others_ok = set(b0) == set(b1)
    if holds_ok:
        for bid, row in b0.items():
            if bid in holds:
                reason, cc = holds[bid]
                holds_ok &= b1[bid] == dict(row, doc_status="hold", hold_reason=reason, hold_country=cc)
            else:
                others_ok &= b1[bid] == row

    f0 = {r["flag_id"]: r for r in ini.query("select * from departure_flags")}
    f1 = {r["flag_id"]: r for r in fin.query("select * from departure_flags")}
    new = [r for k, r in f1.items() if k not in f0]
    old_flags_ok = all(f1.get(k) == r for k, r in f0.items())
    flags_ok = (all(r["flag_type"] == "min_group_risk" for r in new)
                and sorted(r["tour_code"] for r in new) == sorted(risky))

    static_ok = all(ini.query(f"select * from {t} order by 1, 2") == fin.query(f"select * from {t} order by 1, 2")
                    for t in ("tours", "itinerary_stops", "travelers", "visas"))
    return {
        "answer_lists_exactly_the_flagged_departures": answer_ok,
        "holds_placed_with_correct_reason_and_country": holds_ok,
        "min_group_flags_exactly_on_departures_below_minimum": flags_ok,
        "no_other_rows_changed": others_ok and old_flags_ok and static_ok,
    }
