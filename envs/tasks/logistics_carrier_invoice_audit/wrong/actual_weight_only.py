# ruff: noqa: F821, E402
# WRONG: rates every shipment on its actual weight, ignoring dimensional weight.

# %%
def all_pages(name, **kw):
    items, p = [], 1
    while p:
        r = tools[name](page_no=p, **kw)
        items += r["items"]
        p = r["next_page"]
    return items

files = [f["path"] for f in all_pages("list_files")]
print(len(files), "files;", [f for f in files if f.startswith(("contracts/", "finance/")) and "archive" not in f])
proc = tools["read_file"](path="finance/freight_audit_procedure.md")["content"]
print([ln for ln in proc.splitlines() if ln.startswith("## ")])

# %%
import csv
import datetime as dt
import io
import json
import math


def read_csv(path):
    return list(csv.DictReader(io.StringIO(tools["read_file"](path=path)["content"])))

terms = json.loads(tools["read_file"](path="contracts/contract_terms_2025.json")["content"])
tol = terms["dispute_tolerance_usd"]
zones = {r["dest_state"]: int(r["zone"]) for r in read_csv("contracts/zone_chart.csv")}
fuel = {r["week_start"]: r for r in read_csv("contracts/fuel_surcharge_2025.csv")}
carriers = {c["carrier_id"]: c for c in all_pages("list_carriers")}
rates = {cid: [{k: float(v) for k, v in r.items()} for r in read_csv(f"contracts/rates/{c['code'].lower()}_rates_2025.csv")]
         for cid, c in carriers.items()}
print("tolerance", tol, "| divisors", {k: v["dim_divisor"] for k, v in terms["carriers"].items()}, "|", len(fuel), "fuel weeks")

# %%
invoices = {i["invoice_id"]: i for i in all_pages("list_invoices")}
lines = all_pages("list_invoice_lines")
ships = {s["shipment_id"]: s for s in all_pages("list_shipments")}
scope = [i for i in invoices.values() if i["status"] == "received" and i["billing_period"] == "2025-10"]
print(len(invoices), "invoices,", len(lines), "lines,", len(ships), "shipments;", len(scope), "invoices in scope")

# %%
first = {}
for ln in sorted(lines, key=lambda x: (invoices[x["invoice_id"]]["invoice_date"], x["line_id"])):
    first.setdefault((ln["shipment_id"], ln["charge_type"]), ln["line_id"])


def expected(ln):
    if first[(ln["shipment_id"], ln["charge_type"])] != ln["line_id"]:
        return 0.0
    s = ships[ln["shipment_id"]]
    code = carriers[s["carrier_id"]]["code"]
    t = terms["carriers"][code]
    kg = math.ceil(s["actual_weight_kg"])
    zone = zones[s["dest_state"]]
    row = next(r for r in rates[s["carrier_id"]] if r["zone"] == zone and r["min_kg"] <= kg <= r["max_kg"])
    lh = round(max(row["minimum_charge"], kg * row["rate_per_kg"]), 2)
    typ = ln["charge_type"]
    if typ == "linehaul":
        return lh
    if typ == "fuel":
        d = dt.date.fromisoformat(s["ship_date"])
        return round(lh * float(fuel[(d - dt.timedelta(days=d.weekday())).isoformat()][code]) / 100, 2)
    if typ == "detention":
        return round((t["detention_per_hour"] or 0) * s["detention_approved_hours"], 2)
    flag = {"liftgate": "liftgate_requested", "residential": "residential", "inside_delivery": "inside_delivery"}[typ]
    return float(t["accessorials"][typ]) if s[flag] and typ in t["accessorials"] else 0.0


report = ["invoice_no,carrier_code,disputed_amount"]
total = 0.0
n_disputed = 0
for inv in sorted(scope, key=lambda i: i["invoice_id"]):
    amount, ids = 0.0, []
    for ln in lines:
        if ln["invoice_id"] == inv["invoice_id"]:
            over = round(ln["amount"] - expected(ln), 2)
            if over > tol:
                amount += over
                ids.append(ln["line_id"])
    amount = round(amount, 2)
    if ids:
        tools["dispute_invoice"](invoice_id=inv["invoice_id"], disputed_amount=amount, line_ids=ids)
        report.append(f"{inv['invoice_no']},{carriers[inv['carrier_id']]['code']},{amount:.2f}")
        total += amount
        n_disputed += 1
    else:
        tools["approve_invoice"](invoice_id=inv["invoice_id"])
tools["write_file"](path="audit/dispute_summary_2025-10.csv", content="\n".join(report) + "\n")
print(n_disputed, "disputed,", len(scope) - n_disputed, "approved")
final_answer = f"Audited {len(scope)} invoices.\nANSWER: {total:.2f}"
print(final_answer)
