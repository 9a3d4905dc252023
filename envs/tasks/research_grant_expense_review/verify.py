"""Replay the claims review from the initial state and compare decisions, budgets and the answer."""

from __future__ import annotations

import csv
import io
import re

from envs.taskkit import answer_field

# funders/*_terms.md: ineligible categories and equipment pre-approval threshold (GBP)
INELIGIBLE = {"UKRI": {"hospitality"}, "WELL": {"publication", "hospitality"}, "ERC": set(),
              "LEVH": {"equipment"}, "BHF": {"subcontract", "hospitality"}, "CRUK": {"hospitality"}, "NIHR": set()}
THRESHOLD = {"UKRI": 10000, "WELL": 5000, "ERC": 20000, "LEVH": 0, "BHF": 5000, "CRUK": 10000, "NIHR": 25000}


def expected(env) -> dict[str, tuple[str, object]]:
    """claim id -> ('approved', gbp) or ('rejected', reason)."""
    fx = {(r["month"], r["currency"]): float(r["gbp_per_unit"])
          for r in csv.DictReader(io.StringIO(env.read_text("finance/fx_rates_2024.csv")))}
    pas = {r["preapproval_ref"]: r for r in
           csv.DictReader(io.StringIO(env.read_text("approvals/equipment_preapprovals.csv")))}
    grants = {g["id"]: g for g in env.query("select * from grants")}
    remaining = {(b["grant_id"], b["category"]): b["awarded_gbp"] - b["committed_gbp"]
                 for b in env.query("select * from budget_lines")}
    out: dict[str, tuple[str, object]] = {}
    for e in env.query("select * from expenses where status = 'submitted' order by submitted_at, id"):
        g = grants[e["grant_id"]]
        rate = 1.0 if e["currency"] == "GBP" else fx[(e["expense_date"][:7], e["currency"])]
        gbp = round(e["amount"] * rate, 2)
        pa = pas.get(e["preapproval_ref"] or "")
        key = (g["id"], e["category"])
        if g["status"] == "suspended":
            out[e["id"]] = ("rejected", "GRANT_SUSPENDED")
        elif not g["start_date"] <= e["expense_date"] <= g["end_date"]:
            out[e["id"]] = ("rejected", "OUT_OF_PERIOD")
        elif e["category"] in INELIGIBLE[g["funder_code"]]:
            out[e["id"]] = ("rejected", "INELIGIBLE")
        elif e["category"] == "equipment" and gbp >= THRESHOLD[g["funder_code"]] and not (
                pa and pa["grant_id"] == g["id"] and pa["status"] == "approved"
                and float(pa["max_amount_gbp"]) >= gbp):
            out[e["id"]] = ("rejected", "NO_PREAPPROVAL")
        elif key not in remaining or gbp > remaining[key] + 1e-6:
            out[e["id"]] = ("rejected", "OVER_BUDGET")
        else:
            out[e["id"]] = ("approved", gbp)
            remaining[key] -= gbp
    return out


def verify(ctx) -> dict[str, bool]:
    init, fin = ctx.initial, ctx.final
    exp = expected(init)
    total = round(sum(v for k, v in exp.values() if k == "approved"), 2)
    iexp = {r["id"]: r for r in init.query("select * from expenses")}
    fexp = {r["id"]: r for r in fin.query("select * from expenses")}
    same_ids = set(iexp) == set(fexp)
    approvals_ok = rejections_ok = same_ids
    for cid, (kind, val) in exp.items():
        f = fexp.get(cid, {})
        if kind == "approved":
            approvals_ok &= f.get("status") == "approved" and f.get("approved_gbp") is not None \
                and abs(f["approved_gbp"] - val) <= 0.011 and not f.get("reject_reason")
        else:
            rejections_ok &= f.get("status") == "rejected" and f.get("reject_reason") == val \
                and f.get("approved_gbp") is None
    untouched = same_ids and all(fexp[k] == v for k, v in iexp.items() if k not in exp) and all(
        {**fexp[k], "status": 0, "approved_gbp": 0, "reject_reason": 0} ==
        {**iexp[k], "status": 0, "approved_gbp": 0, "reject_reason": 0} for k in exp)

    added: dict[tuple[str, str], float] = {}
    for cid, (kind, val) in exp.items():
        if kind == "approved":
            key = (iexp[cid]["grant_id"], iexp[cid]["category"])
            added[key] = added.get(key, 0.0) + val
    ib = {(b["grant_id"], b["category"]): b for b in init.query("select * from budget_lines")}
    fb = {(b["grant_id"], b["category"]): b for b in fin.query("select * from budget_lines")}
    budget_ok = set(ib) == set(fb) and all(
        fb[k]["awarded_gbp"] == b["awarded_gbp"] and abs(fb[k]["committed_gbp"] - b["committed_gbp"] - added.get(k, 0))
        <= 0.02 for k, b in ib.items())
    static_ok = all(init.query(f"select * from {t} order by 1") == fin.query(f"select * from {t} order by 1")
                    for t in ("funders", "grants", "researchers"))
    text = (answer_field(ctx.answer, "ANSWER") or "").replace("£", "").replace("GBP", "").replace(" ", "")
    m = re.search(r"\d[\d,]*(?:\.\d+)?", text)
    ans = float(m.group(0).replace(",", "")) if m else None
    return {
        "answer_total_approved_correct": ans is not None and abs(ans - total) <= 0.05,
        "approved_exactly_the_eligible_claims_in_gbp": approvals_ok,
        "rejected_with_the_first_failing_reason": rejections_ok,
        "budget_lines_committed_updated": budget_ok,
        "decided_claims_untouched": untouched,
        "grants_and_master_data_untouched": static_ok,
    }
