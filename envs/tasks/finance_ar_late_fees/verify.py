"""Expected October late fees and dunning levels from the initial ledger, terms, policy and memos."""

from __future__ import annotations

import csv
import io
import re
from datetime import date, timedelta

from envs.taskkit import VerifyContext, answer_field

RUN = date(2024, 10, 31)
PERIOD = "2024-10"
RATE_BP = {"enterprise": 100}  # basis points; everyone else 150 (CFO memo)
DEFAULT_BP = 150
MIN_C, MAX_C, DE_MINIMIS_C = 2500, 75000, 5000
EXEMPT = ("government", "nonprofit")
WAIVED = ("Lindqvist Marine AB", "Orchard Valley Co-op")


def _due(issued: date, term: dict) -> date:
    if term["basis"] == "end_of_month":
        nxt = date(issued.year + (issued.month == 12), issued.month % 12 + 1, 1)
        return nxt - timedelta(days=1) + timedelta(days=int(term["net_days"]))
    return issued + timedelta(days=int(term["net_days"]))


def expected(env) -> tuple[dict[str, int], dict[str, int]]:
    """(invoice_id -> fee in cents, customer_id -> dunning level)."""
    terms = {r["terms_code"]: r for r in csv.DictReader(io.StringIO(env.read_text("ar/payment_terms.csv")))}
    customers = {c["customer_id"]: c for c in env.query("select * from customers")}
    reduce: dict[str, int] = {}
    for r in env.query("select invoice_id, amount from payments where received_on <= ?", (RUN.isoformat(),)):
        reduce[r["invoice_id"]] = reduce.get(r["invoice_id"], 0) + round(r["amount"] * 100)
    for r in env.query("select invoice_id, amount from credit_notes where issued_on <= ?", (RUN.isoformat(),)):
        reduce[r["invoice_id"]] = reduce.get(r["invoice_id"], 0) + round(r["amount"] * 100)
    disputed = {r["invoice_id"] for r in env.query("select invoice_id from disputes where status = 'open'")}
    charged = {r["invoice_id"] for r in env.query("select invoice_id from late_fees where period = ?", (PERIOD,))}
    fees: dict[str, int] = {}
    worst: dict[str, int] = {}
    for inv in env.query("select * from invoices where status = 'open'"):
        c = customers[inv["customer_id"]]
        term = terms[c["terms_code"]]
        bal = round(inv["amount"] * 100) - reduce.get(inv["invoice_id"], 0)
        dpd = (RUN - _due(date.fromisoformat(inv["issued_on"]), term)).days
        if bal < DE_MINIMIS_C or inv["invoice_id"] in disputed:
            continue
        worst[c["customer_id"]] = max(worst.get(c["customer_id"], 0), dpd)
        if dpd <= int(term["grace_days"]) or c["segment"] in EXEMPT or c["name"] in WAIVED \
                or inv["invoice_id"] in charged:
            continue
        bp = RATE_BP.get(c["segment"], DEFAULT_BP)
        fee = (bal * bp + 5000) // 10000
        fees[inv["invoice_id"]] = min(MAX_C, max(MIN_C, fee))
    levels = {}
    for cid in customers:
        d = worst.get(cid, 0)
        levels[cid] = 0 if d <= 0 else 1 if d <= 30 else 2 if d <= 60 else 3
    return fees, levels


def rows(env, q: str) -> list[tuple]:
    return [tuple(r.values()) for r in env.query(q)]


def verify(ctx: VerifyContext) -> dict[str, bool]:
    fees, levels = expected(ctx.initial)
    max_id = ctx.initial.query("select coalesce(max(fee_id), 0) as m from late_fees")[0]["m"]
    new = ctx.final.query("select * from late_fees where fee_id > ?", (max_id,))
    by_inv: dict[str, list] = {}
    for f in new:
        by_inv.setdefault(f["invoice_id"], []).append(f)
    right_set = set(by_inv) == set(fees) and all(len(v) == 1 for v in by_inv.values())
    right_amounts = right_set and all(abs(round(by_inv[k][0]["amount"] * 100) - c) <= 1 for k, c in fees.items())
    well_formed = bool(new) and all(f["period"] == PERIOD for f in new)

    init_c = {r["customer_id"]: r for r in ctx.initial.query("select * from customers")}
    fin_c = {r["customer_id"]: r for r in ctx.final.query("select * from customers")}
    dunning_ok = set(init_c) == set(fin_c) and all(fin_c[k]["dunning_level"] == v for k, v in levels.items())
    cust_other = set(init_c) == set(fin_c) and all(
        {a: b for a, b in fin_c[k].items() if a != "dunning_level"}
        == {a: b for a, b in init_c[k].items() if a != "dunning_level"} for k in init_c)

    tables_same = cust_other and all(rows(ctx.initial, q) == rows(ctx.final, q) for q in (
        "select * from invoices order by invoice_id", "select * from payments order by payment_id",
        "select * from credit_notes order by credit_note_id", "select * from disputes order by dispute_id",
    )) and rows(ctx.initial, "select * from late_fees order by fee_id") == rows(
        ctx.final, f"select * from late_fees where fee_id <= {int(max_id)} order by fee_id")

    total = sum(fees.values()) / 100
    n3 = sum(1 for v in levels.values() if v == 3)
    field = answer_field(ctx.answer, "ANSWER") or ""
    parts = [p.strip() for p in field.split(";")]
    got_total = got_n3 = None
    try:
        got_total = float(re.sub(r"[,\s$]|USD", "", parts[0], flags=re.I))
        got_n3 = int(re.sub(r"\D", "", parts[1]))
    except (ValueError, IndexError):
        pass
    return {
        "fees_posted_on_exactly_the_chargeable_invoices": right_set and well_formed,
        "fee_amounts_correct": right_amounts,
        "dunning_levels_correct": dunning_ok,
        "no_other_rows_changed": tables_same,
        "answer_total_fees_correct": got_total is not None and abs(got_total - total) <= 0.01 * (len(fees) + 1),
        "answer_level3_count_correct": got_n3 == n3,
    }
