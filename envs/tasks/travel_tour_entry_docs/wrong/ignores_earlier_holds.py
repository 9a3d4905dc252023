# ruff: noqa: F821
# WRONG: counts bookings already on hold from earlier reviews as travelling when applying the
# departure minimums.
from datetime import date


def fetch(name, **kw):
    out, p = [], 1
    while p:
        r = tools[name](**kw, page_no=p)
        out += r["items"]
        p = r["next_page"]
    return out


paths = [f["path"] for f in fetch("list_files")]
memo = tools["read_file"](path="ops/q2_document_review.md")["content"]
mins = tools["read_file"](path="ops/departure_minimums.md")["content"]
advisory = tools["read_file"](path="advisories/2025-03_entry_rule_changes.md")["content"]
print(len(paths), "files;", memo[memo.index("## Scope"):][:300])
print(advisory[:500])

# %%
tours = fetch("list_tours", depart_from="2025-04-01", depart_to="2025-06-30", status="scheduled")
countries = sorted({s["country_code"] for t in tours for s in t["itinerary"]})
sheets = {}
for cc in countries:
    path = next(p for p in paths if p.startswith(f"entry_requirements/{cc}_"))
    sheets[cc] = tools["read_file"](path=path)["content"]
print(len(tours), "Q2 departures; countries", countries)
for cc in countries:
    s = sheets[cc]
    print(cc, "|", s[s.index("## Passport") + 12:][:110].replace("\n", " "))

# %%
# Rules as read from the sheets + advisory: (validity from 'entry'/'exit', months, regime, nationalities)
RULES = {
    "JP": ("exit", 0, "exempt", {"US", "CA", "GB", "IE", "AU", "NZ", "DE", "FR", "NL", "CH", "PL", "CZ", "SG", "KR",
                                 "MX", "BR"}),
    "VN": ("entry", 6, "exempt", {"GB", "DE", "FR", "KR", "JP", "PL", "CZ", "CH"}),  # + advisory (from 03-15)
    "KH": ("entry", 6, "voa_except", {"NG", "PK", "BD", "LK"}),
    "IN": ("entry", 6, "exempt", set()),
    "NP": ("entry", 6, "voa_except", {"NG"}),
    "KE": ("exit", 6, "exempt", set()),
    "TZ": ("entry", 6, "exempt", {"KE", "ZA"}),
}
MIN = {"small-group": 6, "classic": 10, "private": 2}


def needs_visa(cc, nat, enter):
    base, months, regime, listed = RULES[cc]
    if cc == "NP" and nat in ("BD", "PK", "LK") and enter >= "2025-05-01":
        return True
    return nat not in listed if regime == "exempt" else nat in listed


def add_months(d, n):
    y, m = d.year + (d.month - 1 + n) // 12, (d.month - 1 + n) % 12 + 1
    for day in (d.day, 30, 29, 28):
        try:
            return date(y, m, day)
        except ValueError:
            pass


tour_by = {t["tour_code"]: t for t in tours}
bookings = [b for b in fetch("list_tour_bookings", status="confirmed", depart_from="2025-04-01",
                             depart_to="2025-06-30") if b["tour_code"] in tour_by]
travelers = {t["traveler_id"]: t for t in fetch("list_travelers")}
visas = {}
for cc in countries:
    for v in fetch("list_visas", country_code=cc):
        visas.setdefault((v["traveler_id"], cc), []).append(v)
print(len(bookings), "confirmed bookings;", len(travelers), "travelers;", sum(map(len, visas.values())), "visas")

# %%
held = set()
for b in bookings:
    if b["doc_status"] != "pending":
        continue
    tr = travelers[b["traveler_id"]]
    for s in tour_by[b["tour_code"]]["itinerary"]:
        cc = s["country_code"]
        base, months = RULES[cc][:2]
        ref = date.fromisoformat(s["enter_date"] if base == "entry" else s["exit_date"])
        reason = None
        if tr["passport_expiry"] < add_months(ref, months).isoformat():
            reason = "passport_validity"
        elif needs_visa(cc, tr["nationality"], s["enter_date"]) and not any(
                v["valid_from"] <= s["enter_date"] and v["valid_to"] >= s["exit_date"]
                for v in visas.get((tr["traveler_id"], cc), [])):
            reason = "visa_missing"
        if reason:
            tools["place_document_hold"](booking_id=b["booking_id"], reason=reason, country_code=cc)
            held.add(b["booking_id"])
            break
ok = {}
for b in bookings:
    if b["booking_id"] not in held:
        ok[b["tour_code"]] = ok.get(b["tour_code"], 0) + 1
flagged = sorted(c for c, t in tour_by.items() if ok.get(c, 0) < MIN[t["category"]])
for c in flagged:
    tools["flag_departure"](tour_code=c, flag_type="min_group_risk",
                            note=f"{ok.get(c, 0)} travelers cleared after Q2 document review")
print(len(held), "holds placed;", len(flagged), "departures flagged")
final_answer = "ANSWER: " + ", ".join(flagged)
