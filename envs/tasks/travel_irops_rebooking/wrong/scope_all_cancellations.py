# ruff: noqa: F821
# WRONG: treats every DEN/COS cancellation on 2025-01-14 as in scope (ignores the memo's WX-only
# rule), so mechanical/crew cancellations get rebooked or vouchered too.
import csv
import io
import json
from datetime import datetime, timedelta


def fetch(name, **kw):
    out, p = [], 1
    while p:
        r = tools[name](**kw, page_no=p)
        out += r["items"]
        p = r["next_page"]
    return out


files = [f["path"] for f in fetch("list_files")]
print(len(files), "files;", [p for p in files if "irops" in p.lower()][:4])
memo = tools["read_file"](path="ops/irops/IROPS-2025-014_front_range_snow.md")["content"]
policy = tools["read_file"](path="policies/irops_rebooking_policy.md")["content"]
print(memo[memo.index("## Scope"):memo.index("## Contacts")][:600])

# %%
groups = json.loads(tools["read_file"](path="reference/coterminals.json")["content"])["groups"]
metro = {a: set(g) for g in groups.values() for a in g}
bands = list(csv.DictReader(io.StringIO(tools["read_file"](path="reference/voucher_bands.csv")["content"])))
print(len(metro), "co-terminal airports;", len(bands), "voucher bands")

ORIGINS, DAYS = ["DEN", "COS"], ["2025-01-14", "2025-01-15", "2025-01-16"]
flights, seats = {}, {}
for o in ORIGINS:
    for d in DAYS:
        for f in fetch("list_flights", origin=o, date=d):
            flights[f["flight_id"]] = f
        for s in fetch("list_seat_inventory", origin=o, date=d):
            seats[(s["flight_id"], s["cabin"])] = s["seats_open"]
hit = [f for f in flights.values() if f["sched_dep"].startswith("2025-01-14") and f["status"] == "cancelled"]
todo = []
for f in hit:
    todo += fetch("list_bookings", flight_id=f["flight_id"], status="ticketed")
tier = {}
for t in ("platinum", "gold", "silver"):
    for tr in fetch("list_travelers", loyalty_tier=t):
        tier[tr["traveler_id"]] = t
print(len(flights), "flights scanned;", len(hit), "WX cancellations in scope;", len(todo), "ticketed bookings")

# %%
RANK = {"platinum": 0, "gold": 1, "silver": 2}
todo.sort(key=lambda b: (RANK.get(tier.get(b["traveler_id"]), 3), b["booked_at"], b["booking_ref"]))


def ts(s):
    return datetime.strptime(s, "%Y-%m-%d %H:%M")


n_rebooked, total = 0, 0.0
for b in todo:
    old = flights[b["flight_id"]]
    t0 = ts(old["sched_dep"])
    ok_dest = metro.get(old["dest"], {old["dest"]})
    cands = sorted((f for f in flights.values()
                    if f["carrier"] == old["carrier"] and f["origin"] == old["origin"] and f["dest"] in ok_dest
                    and f["status"] == "scheduled" and t0 < ts(f["sched_dep"]) <= t0 + timedelta(hours=36)
                    and seats.get((f["flight_id"], b["cabin"]), 0) > 0),
                   key=lambda f: (f["sched_dep"], f["flight_id"]))
    if cands:
        tools["rebook_booking"](booking_ref=b["booking_ref"], new_flight_id=cands[0]["flight_id"])
        seats[(cands[0]["flight_id"], b["cabin"])] -= 1
        n_rebooked += 1
    else:
        band = next(r for r in bands if int(r["min_miles"]) <= old["distance_mi"] <= int(r["max_miles"]))
        amount = float(band["economy_usd"] if b["cabin"] == "economy" else band["business_usd"])
        if tier.get(b["traveler_id"]) == "platinum":
            amount = float(round(amount * 1.5))
        tools["issue_voucher"](booking_ref=b["booking_ref"], amount_usd=amount, reason_code="WX14-FRONTRANGE")
        total += amount
print("rebooked", n_rebooked, "| vouchers", len(todo) - n_rebooked, "| total", total)
final_answer = f"Done.\nANSWER: {n_rebooked} | {total:.2f}"
