"""Verifier: recompute every October invoice line from the shipment records and the contract files of the
initial workspace, then compare invoice statuses, dispute records, the summary CSV and the reported total."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import re

from envs.taskkit import ToolError, VerifyContext, answer_field

REPORT = "audit/dispute_summary_2025-10.csv"


def expected_audit(env) -> dict[int, tuple[float, set[int]]]:
    """invoice_id -> (disputed amount, disputed line ids) for every invoice in scope (amount 0 = approve)."""
    terms = json.loads(env.read_text("contracts/contract_terms_2025.json"))
    tol = float(terms["dispute_tolerance_usd"])
    zones = {r["dest_state"]: int(r["zone"]) for r in csv.DictReader(io.StringIO(env.read_text("contracts/zone_chart.csv")))}
    fuel = {r["week_start"]: r for r in csv.DictReader(io.StringIO(env.read_text("contracts/fuel_surcharge_2025.csv")))}
    carriers = {c["carrier_id"]: c for c in env.query("select * from carriers")}
    rates = {}
    for c in carriers.values():
        rates[c["carrier_id"]] = [
            (int(r["zone"]), int(r["min_kg"]), int(r["max_kg"]), float(r["rate_per_kg"]), float(r["minimum_charge"]))
            for r in csv.DictReader(io.StringIO(env.read_text(f"contracts/rates/{c['code'].lower()}_rates_2025.csv")))]
    ships = {s["shipment_id"]: s for s in env.query("select * from shipments")}
    invoices = {i["invoice_id"]: i for i in env.query("select * from invoices")}
    lines = env.query("select * from invoice_lines")
    first: dict[tuple[int, str], int] = {}
    for ln in sorted(lines, key=lambda x: (invoices[x["invoice_id"]]["invoice_date"], x["line_id"])):
        first.setdefault((ln["shipment_id"], ln["charge_type"]), ln["line_id"])

    def expected(ln: dict) -> float:
        if first[(ln["shipment_id"], ln["charge_type"])] != ln["line_id"]:
            return 0.0
        s = ships[ln["shipment_id"]]
        c = carriers[s["carrier_id"]]
        t = terms["carriers"][c["code"]]
        dim = s["length_cm"] * s["width_cm"] * s["height_cm"] / t["dim_divisor"]
        kg = math.ceil(max(s["actual_weight_kg"], dim))
        zone = zones[s["dest_state"]]
        row = next(r for r in rates[c["carrier_id"]] if r[0] == zone and r[1] <= kg <= r[2])
        lh = round(max(row[4], kg * row[3]), 2)
        typ = ln["charge_type"]
        if typ == "linehaul":
            return lh
        if typ == "fuel":
            d = dt.date.fromisoformat(s["ship_date"])
            pct = float(fuel[(d - dt.timedelta(days=d.weekday())).isoformat()][c["code"]])
            return round(lh * pct / 100, 2)
        if typ == "detention":
            rate = t.get("detention_per_hour")
            return round(rate * s["detention_approved_hours"], 2) if rate else 0.0
        flag = {"liftgate": "liftgate_requested", "residential": "residential", "inside_delivery": "inside_delivery"}[typ]
        return float(t["accessorials"][typ]) if s[flag] and typ in t["accessorials"] else 0.0

    out: dict[int, tuple[float, set[int]]] = {}
    for iid, inv in invoices.items():
        if inv["status"] != "received" or inv["billing_period"] != "2025-10":
            continue
        amount, ids = 0.0, set()
        for ln in lines:
            if ln["invoice_id"] == iid:
                over = round(ln["amount"] - expected(ln), 2)
                if over > tol:
                    amount += over
                    ids.add(ln["line_id"])
        out[iid] = (round(amount, 2), ids)
    return out


def _parse_amount(text: str | None) -> float | None:
    if not text:
        return None
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", text.replace("$", ""))
    return float(m.group(0).replace(",", "")) if m else None


def verify(ctx: VerifyContext) -> dict[str, bool]:
    exp = expected_audit(ctx.initial)
    total = round(sum(a for a, _ in exp.values()), 2)
    init_inv = {r["invoice_id"]: r for r in ctx.initial.query("select * from invoices")}
    fin_inv = {r["invoice_id"]: r for r in ctx.final.query("select * from invoices")}
    carriers = {c["carrier_id"]: c["code"] for c in ctx.initial.query("select * from carriers")}

    status_ok = bool(exp) and set(init_inv) == set(fin_inv) and all(
        fin_inv[i]["status"] == ("disputed" if a > 0 else "approved") for i, (a, _ids) in exp.items())
    disputes = ctx.final.query("select * from invoice_disputes")
    by_inv: dict[int, list[dict]] = {}
    for d in disputes:
        by_inv.setdefault(d["invoice_id"], []).append(d)
    want = {i: v for i, v in exp.items() if v[0] > 0}
    records_ok = set(by_inv) == set(want) and all(len(v) == 1 for v in by_inv.values())
    records_ok = records_ok and all(
        abs(by_inv[i][0]["disputed_amount"] - a) <= 0.005
        and {int(x) for x in re.findall(r"\d+", by_inv[i][0]["line_ids"] or "")} == ids for i, (a, ids) in want.items())

    report_ok = False
    try:
        text = ctx.final.read_text(REPORT)
    except ToolError:  # missing, or not a readable regular file
        text = None
    if text is not None:
        try:
            rows = list(csv.DictReader(io.StringIO(text)))
            got = {(r["invoice_no"].strip(), r["carrier_code"].strip().upper()): float(r["disputed_amount"].replace("$", "").replace(",", ""))
                   for r in rows}
            wanted = {(init_inv[i]["invoice_no"], carriers[init_inv[i]["carrier_id"]]): a for i, (a, _ids) in want.items()}
            report_ok = len(rows) == len(wanted) and set(got) == set(wanted) and all(
                abs(got[k] - v) <= 0.005 for k, v in wanted.items())
        except (KeyError, ValueError, AttributeError):
            report_ok = False

    others_ok = set(init_inv) == set(fin_inv) and all(
        fin_inv[i] == row if i not in exp else {k: v for k, v in fin_inv[i].items() if k != "status"}
        == {k: v for k, v in row.items() if k != "status"} for i, row in init_inv.items())
    for name, key in (("invoice_lines", "line_id"), ("shipments", "shipment_id"), ("carriers", "carrier_id"),
                      ("tracking_events", "event_id")):
        a = {r[key]: r for r in ctx.initial.query(f"select * from {name}")}
        b = {r[key]: r for r in ctx.final.query(f"select * from {name}")}
        others_ok = others_ok and a == b

    got_total = _parse_amount(answer_field(ctx.answer, "ANSWER"))
    return {
        "answer_total_correct": got_total is not None and abs(got_total - total) <= 0.01,
        "invoice_statuses_correct": status_ok,
        "dispute_records_correct": records_ok,
        "summary_report_correct": report_ok,
        "no_other_rows_changed": others_ok,
    }
