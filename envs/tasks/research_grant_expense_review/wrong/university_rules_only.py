# ruff: noqa: F821
# WRONG: skips the funder-specific eligibility rules (only period, pre-approval and budget).
# %%
import csv
import io


def all_pages(name, **kwargs):
    out, page_no = [], 1
    while page_no:
        res = tools[name](page_no=page_no, **kwargs)
        out.extend(res["items"])
        page_no = res["next_page"]
    return out


files = [f["path"] for f in all_pages("list_files")]
print(len(files), "files;", [p for p in files if p.startswith(("finance/", "approvals/"))])
print("funder terms:", [p for p in files if p.startswith("funders/")])

# %%
print(tools["read_file"](path="finance/grant_expense_procedure.md")["content"][:600])
for path in sorted(p for p in files if p.startswith("funders/")):
    text = tools["read_file"](path=path)["content"]
    print("==", path, "|", " ".join(line.strip() for line in text.splitlines()[2:] if line.strip())[:230])

# %%
# Rules read from the funder terms above (ineligible categories; equipment pre-approval threshold in GBP).
INELIGIBLE = {"UKRI": {"hospitality"}, "WELL": {"publication", "hospitality"}, "ERC": set(),
              "LEVH": {"equipment"}, "BHF": {"subcontract", "hospitality"}, "CRUK": {"hospitality"}, "NIHR": set()}
THRESHOLD = {"UKRI": 10000, "WELL": 5000, "ERC": 20000, "LEVH": 0, "BHF": 5000, "CRUK": 10000, "NIHR": 25000}
fx = {(r["month"], r["currency"]): float(r["gbp_per_unit"]) for r in
      csv.DictReader(io.StringIO(tools["read_file"](path="finance/fx_rates_2024.csv")["content"]))}
pas = {r["preapproval_ref"]: r for r in
       csv.DictReader(io.StringIO(tools["read_file"](path="approvals/equipment_preapprovals.csv")["content"]))}
grants = {g["id"]: g for g in all_pages("list_grants")}
remaining = {(b["grant_id"], b["category"]): b["awarded_gbp"] - b["committed_gbp"] for b in all_pages("list_budget_lines")}
queue = sorted(all_pages("list_expenses", status="submitted"), key=lambda e: (e["submitted_at"], e["id"]))
print(len(fx), "fx rates,", len(pas), "pre-approvals,", len(grants), "grants,", len(remaining), "budget lines,",
      len(queue), "submitted claims")

# %%
total, decisions = 0.0, {}
for e in queue:
    g = grants[e["grant_id"]]
    rate = 1.0 if e["currency"] == "GBP" else fx[(e["expense_date"][:7], e["currency"])]
    gbp = round(e["amount"] * rate, 2)
    pa = pas.get(e["preapproval_ref"] or "")
    key = (g["id"], e["category"])
    if g["status"] == "suspended":
        reason = "GRANT_SUSPENDED"
    elif not g["start_date"] <= e["expense_date"] <= g["end_date"]:
        reason = "OUT_OF_PERIOD"
    elif e["category"] == "equipment" and gbp >= THRESHOLD[g["funder_code"]] and not (
            pa and pa["grant_id"] == g["id"] and pa["status"] == "approved" and float(pa["max_amount_gbp"]) >= gbp):
        reason = "NO_PREAPPROVAL"
    elif key not in remaining or gbp > remaining[key] + 1e-6:
        reason = "OVER_BUDGET"
    else:
        reason = None
    if reason:
        tools["reject_expense"](expense_id=e["id"], reason_code=reason)
    else:
        tools["approve_expense"](expense_id=e["id"], amount_gbp=gbp)
        remaining[key] -= gbp
        total += gbp
    decisions[reason or "APPROVED"] = decisions.get(reason or "APPROVED", 0) + 1
print("decisions:", dict(sorted(decisions.items())), "| approved GBP", round(total, 2))
final_answer = f"Queue processed.\nANSWER: {total:.2f}"
