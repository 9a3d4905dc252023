"""Expected AP decisions from the initial database, the matching policy, tolerances, FX rates and the memo."""

from __future__ import annotations

import csv
import io
import json
import re
from fractions import Fraction

from envs.taskkit import VerifyContext, answer_field

REVIEW_VENDOR_NAME = "Nordlicht Logistik GmbH"
FX_FILE = "treasury/fx_rates_payment_run_2024-10-31.csv"


def _norm(vin: str) -> str:
    return re.sub(r"[\s\-./]", "", vin or "").upper()


def expected(env) -> tuple[dict[str, str | None], float]:
    """invoice_id -> None (approve) or hold code, for the queue; and the approved total in USD."""
    tol = json.loads(env.read_text("ap/vendor_tolerances.json"))
    default = Fraction(str(tol["default_price_tolerance_pct"]))
    overrides = {k: Fraction(str(v["price_tolerance_pct"])) for k, v in tol["overrides"].items()}
    fx = {r["currency"]: Fraction(r["usd_per_unit"])
          for r in csv.DictReader(io.StringIO(env.read_text(FX_FILE)))}
    vendors = {v["vendor_id"]: v for v in env.query("select * from vendors")}
    review = {k for k, v in vendors.items() if v["name"] == REVIEW_VENDOR_NAME}
    po_price = {(r["po_id"], r["line_no"]): round(r["unit_price"] * 100) for r in env.query("select * from po_lines")}
    received: dict[tuple, float] = {}
    for r in env.query("select * from receipts"):
        received[(r["po_id"], r["line_no"])] = received.get((r["po_id"], r["line_no"]), 0) + r["qty_received"]
    invoices = env.query("select * from invoices")
    lines: dict[str, list] = {}
    for ln in env.query("select * from invoice_lines order by invoice_id, line_no"):
        lines.setdefault(ln["invoice_id"], []).append(ln)
    invoiced: dict[tuple, float] = {}
    numbers = set()
    for inv in invoices:
        if inv["status"] in ("approved", "paid"):
            numbers.add((inv["vendor_id"], _norm(inv["vendor_invoice_no"])))
            for ln in lines.get(inv["invoice_id"], []):
                key = (inv["po_id"], ln["po_line_no"])
                invoiced[key] = invoiced.get(key, 0) + ln["qty"]
    queue = sorted((i for i in invoices if i["status"] == "received"), key=lambda i: (i["received_on"], i["invoice_id"]))
    decisions: dict[str, str | None] = {}
    total_usd = Fraction(0)
    for inv in queue:
        ls = lines.get(inv["invoice_id"], [])
        key_no = (inv["vendor_id"], _norm(inv["vendor_invoice_no"]))
        tolerance = overrides.get(inv["vendor_id"], default)
        code = None
        if key_no in numbers:
            code = "DUPLICATE"
        elif inv["vendor_id"] in review:
            code = "VENDOR_REVIEW"
        elif vendors[inv["vendor_id"]]["status"] == "blocked":
            code = "VENDOR_BLOCKED"
        elif abs(round(inv["total_amount"] * 100) - sum(round(ln["amount"] * 100) for ln in ls)) > 1:
            code = "TOTAL_MISMATCH"
        elif any(invoiced.get((inv["po_id"], ln["po_line_no"]), 0) + ln["qty"]
                 > received.get((inv["po_id"], ln["po_line_no"]), 0) for ln in ls):
            code = "QTY_EXCEEDS_RECEIPT"
        else:
            for ln in ls:
                po_c = po_price[(inv["po_id"], ln["po_line_no"])]
                if abs(round(ln["unit_price"] * 100) - po_c) * 100 > tolerance * po_c:
                    code = "PRICE_VARIANCE"
                    break
        decisions[inv["invoice_id"]] = code
        if code is None:
            numbers.add(key_no)
            for ln in ls:
                k = (inv["po_id"], ln["po_line_no"])
                invoiced[k] = invoiced.get(k, 0) + ln["qty"]
            total_usd += Fraction(str(inv["total_amount"])) * fx[inv["currency"]]
    return decisions, float(total_usd)


def verify(ctx: VerifyContext) -> dict[str, bool]:
    decisions, total = expected(ctx.initial)
    init = {r["invoice_id"]: r for r in ctx.initial.query("select * from invoices")}
    final = {r["invoice_id"]: r for r in ctx.final.query("select * from invoices")}
    same_keys = set(init) == set(final)
    approvals = same_keys and all(
        (final[k]["status"] == "approved") == (code is None) for k, code in decisions.items())
    holds = same_keys and all(
        final[k]["status"] == "approved" if code is None else
        (final[k]["status"] == "on_hold" and (final[k]["hold_reason"] or "").upper() == code)
        for k, code in decisions.items())
    fields = ("status", "hold_reason", "decided_on")
    others = same_keys and all(
        final[k] == init[k] if k not in decisions else
        {c: v for c, v in final[k].items() if c not in fields} == {c: v for c, v in init[k].items() if c not in fields}
        for k in init)
    tables_same = all(
        [tuple(r.values()) for r in ctx.initial.query(q)] == [tuple(r.values()) for r in ctx.final.query(q)]
        for q in ("select * from vendors order by vendor_id", "select * from purchase_orders order by po_id",
                  "select * from po_lines order by po_id, line_no", "select * from receipts order by receipt_id",
                  "select * from invoice_lines order by invoice_id, line_no"))
    n_hold = sum(1 for c in decisions.values() if c is not None)
    field = answer_field(ctx.answer, "ANSWER") or ""
    parts = [p.strip() for p in field.split(";")]
    got_total = got_holds = None
    try:
        got_total = float(re.sub(r"[,\s$]|USD", "", parts[0], flags=re.I))
        got_holds = int(re.sub(r"\D", "", parts[1]))
    except (ValueError, IndexError):
        pass
    return {
        "approved_exactly_the_matching_invoices": approvals,
        "holds_have_correct_reason_codes": holds,
        "no_other_rows_changed": others and tables_same,
        "answer_usd_total_correct": got_total is not None and abs(got_total - total) <= 0.05,
        "answer_hold_count_correct": got_holds == n_hold,
    }
