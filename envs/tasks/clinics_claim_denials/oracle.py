# ruff: noqa: F821, E402
# Reference solution: read the 2025 playbook, the payer filing limits and the fee schedules, load the denied
# lines and their claim headers, then apply the playbook line by line.

# %%
def all_pages(name, **kw):
    items, p = [], 1
    while p:
        r = tools[name](page_no=p, **kw)
        items += r["items"]
        p = r["next_page"]
    return items

files = [f["path"] for f in all_pages("list_files")]
print(len(files), "files;", [f for f in files if f.startswith("revenue_cycle/") and "/bulletins/" not in f])
playbook = tools["read_file"](path="revenue_cycle/denial_playbook_2025.md")["content"]
print([ln[:60] for ln in playbook.splitlines() if ln.startswith(("## ", "| CO", "| PR"))])

# %%
import csv
import datetime as dt
import io

limits = {r["payer_code"]: (int(r["corrected_claim_limit_days"]), int(r["appeal_limit_days"])) for r in
          csv.DictReader(io.StringIO(tools["read_file"](path="revenue_cycle/payer_filing_limits.csv")["content"]))}
fees = {}
for f in files:
    if f.startswith("revenue_cycle/fee_schedules/"):
        code = f.rsplit("/", 1)[1].split("_")[0].upper()
        fees[code] = {r["cpt"]: {2024: float(r["allowed_2024"]), 2025: float(r["allowed_2025"])}
                      for r in csv.DictReader(io.StringIO(tools["read_file"](path=f)["content"]))}
payers = {p["payer_id"]: p for p in all_pages("list_payers")}
print("limits:", limits, "| fee schedules:", sorted(fees), "| plan types:", {p["code"]: p["plan_type"] for p in payers.values()})

# %%
denied = all_pages("list_claim_lines", status="denied")
claims = {c["claim_id"]: c for st in ("denied", "partially_denied") for c in all_pages("list_claims", status=st)}
missing = {ln["claim_id"] for ln in denied} - set(claims)
for cid in missing:
    claims[cid] = tools["get_claim"](claim_id=cid)["claim"]
print(len(denied), "denied lines on", len({ln["claim_id"] for ln in denied}), "claims")

# %%
WORK = dt.date(2025, 4, 15)
DISTINCT = {"59", "XE", "XP", "XS", "XU"}
resubmitted_total = 0.0
counts = {}
for ln in denied:
    claim = claims[ln["claim_id"]]
    payer = payers[claim["payer_id"]]
    corrected, appeal = limits[payer["code"]]
    service = dt.date.fromisoformat(claim["service_date"])
    can_resubmit = (WORK - service).days <= corrected
    code, billed, lid = ln["denial_code"], ln["billed_amount"], ln["line_id"]
    amount = None
    if billed < 25:
        action = ("write_off", "small_balance")
    elif code == "CO-16":
        amount = billed
    elif code == "CO-45":
        amount = round(fees[payer["code"]][ln["cpt"]][service.year] * ln["units"], 2)
    elif code == "CO-97":
        if (ln["modifier"] or "").upper() in DISTINCT:
            amount = billed
        else:
            action = ("write_off", "bundled")
    elif code == "CO-29":
        action = ("write_off", "timely_filing")
    elif code == "CO-50":
        if (WORK - dt.date.fromisoformat(ln["denied_on"])).days <= appeal:
            action = ("appeal", None)
        else:
            action = ("write_off", "appeal_window_expired")
    elif code == "PR-204":
        action = ("write_off", "non_covered") if payer["plan_type"] == "medicaid" else ("patient", None)
    if amount is not None:
        action = ("resubmit", amount) if can_resubmit else ("write_off", "timely_filing")
    kind, arg = action
    if kind == "resubmit":
        tools["resubmit_claim_line"](line_id=lid, amount=arg)
        resubmitted_total += arg
    elif kind == "write_off":
        tools["write_off_claim_line"](line_id=lid, reason=arg)
    elif kind == "appeal":
        tools["route_to_appeals"](line_id=lid)
    else:
        tools["transfer_to_patient_responsibility"](line_id=lid)
    key = kind if arg is None or kind == "resubmit" else f"{kind}:{arg}"
    counts[key] = counts.get(key, 0) + 1

print({k: counts[k] for k in sorted(counts)})
final_answer = f"Worked {len(denied)} denied lines.\nANSWER: {resubmitted_total:.2f}"
print(final_answer)
