# ruff: noqa: F821
# WRONG: applies the jurisdiction cap to every building there, ignoring the year-built
# condition in rent_caps.json.
import csv
import io
import json
from datetime import date, timedelta


def fetch(name, **kw):
    out, p = [], 1
    while p:
        r = tools[name](**kw, page_no=p)
        out += r["items"]
        p = r["next_page"]
    return out


paths = [f["path"] for f in fetch("list_files")]
print(len(paths), "files:", [p for p in paths if p.startswith(("policies/renewal", "memos/2025", "market/", "compliance/rent"))][:8])
policy = tools["read_file"](path="policies/renewal_pricing_policy_2025.md")["content"]
print(policy[policy.index("## 2."):][:700])

# %%
caps = json.loads(tools["read_file"](path="compliance/rent_caps.json")["content"])["jurisdictions"]
market = {(r["building_id"], r["unit_type"]): float(r["market_rent"]) for r in csv.DictReader(io.StringIO(
    tools["read_file"](path="market/market_rents_2025Q1.csv")["content"]))}
memo = tools["read_file"](path="memos/2025-01-06_capital_projects_2025.md")["content"]
print(memo[:400])
six_month = {"HB-11"}  # Kinnear Place: 6-month terms only (capital projects memo)

buildings = {b["building_id"]: b for b in fetch("list_buildings")}
units = {u["unit_id"]: u for u in fetch("list_units")}
leases = fetch("list_leases", end_from="2025-03-01", end_to="2025-04-30", status="active")
taken = {o["lease_id"] for o in fetch("list_renewal_offers")} | {n["lease_id"] for n in fetch("list_non_renewal_notices")}
late = {}
for p in fetch("list_payments", due_from="2024-01-01", due_to="2024-12-31", paid_after_due=True):
    if p["paid_date"] is None or date.fromisoformat(p["paid_date"]) > date.fromisoformat(p["due_date"]) + timedelta(days=5):
        late[p["lease_id"]] = late.get(p["lease_id"], 0) + 1
todo = [x for x in leases if x["lease_id"] not in taken]
print(len(units), "units;", len(leases), "leases in window;", len(todo), "to process;", len(late), "leases with late 2024 payments")

# %%
n_offers = n_notices = 0
total = 0
for x in todo:
    u = units[x["unit_id"]]
    b = buildings[u["building_id"]]
    rule = caps[b["jurisdiction"]]
    k = late.get(x["lease_id"], 0)
    if k >= 3 and not rule["just_cause"]:
        tools["record_non_renewal"](lease_id=x["lease_id"], reason_code="PAYMENT_HISTORY")
        n_notices += 1
        continue
    rent = x["monthly_rent"]
    inc = max(0.0, market[(b["building_id"], u["unit_type"])] - rent)
    if rule["cap_pct"] is not None:
        inc = min(inc, rent * rule["cap_pct"] / 100)
    if k == 0:
        inc /= 2
    proposed = (round((rent + inc) * 100) + 50) // 100
    term = 6 if b["building_id"] in six_month else 12
    tools["create_renewal_offer"](lease_id=x["lease_id"], proposed_rent=proposed, term_months=term)
    n_offers += 1
    total += proposed - rent
print(n_offers, "offers,", n_notices, "non-renewals, total increase", total)
final_answer = f"ANSWER: {total:.0f}"
