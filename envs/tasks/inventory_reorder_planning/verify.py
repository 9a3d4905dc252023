"""Recompute the Leeds replenishment run from the initial state and compare with the final state."""

from __future__ import annotations

import csv
import io
import json
import math
import re

from envs.taskkit import answer_field

RUN_DATE = "2024-09-09"
SITE = "LDS"
COVER_WEEKS = 4  # policies/replenishment_policy_v3.md section 4
ON_ORDER = ("sent", "confirmed")  # section 2
HELD = {"SUP-104"}  # memos: SUP-104 still on hold, SUP-107 lifted on 2024-08-20


def _rows(env, table: str, key: str = "id") -> dict:
    return {r[key]: r for r in env.query(f"select * from {table}")}


def expected_lines(env) -> dict[str, dict[str, tuple[int, float]]]:
    """supplier_code -> {sku: (qty, unit_cost)}."""
    safety = json.loads(env.read_text("config/safety_stock.json"))
    weeks = {k: float(v) for k, v in safety["safety_weeks_by_abc_class"].items()}
    review = float(safety["review_period_weeks"])
    lead = {r["supplier_code"]: int(r["lead_time_weeks"])
            for r in csv.DictReader(io.StringIO(env.read_text("data/supplier_lead_times.csv")))}
    price: dict[str, tuple[str, float]] = {}
    for r in csv.DictReader(io.StringIO(env.read_text("data/price_changes.csv"))):
        if r["effective_from"] <= RUN_DATE and (r["sku"] not in price or r["effective_from"] > price[r["sku"]][0]):
            price[r["sku"]] = (r["effective_from"], float(r["new_unit_cost"]))
    products = {r["sku"]: r for r in env.query("select * from products")}
    on_order: dict[str, int] = {}
    for r in env.query("select l.sku, l.qty from po_lines l join purchase_orders p on p.id = l.po_id"
                       " where p.warehouse_code = ? and p.status in (?, ?)", (SITE, *ON_ORDER)):
        on_order[r["sku"]] = on_order.get(r["sku"], 0) + r["qty"]
    out: dict[str, dict[str, tuple[int, float]]] = {}
    for st in env.query("select * from stock_levels where warehouse_code = ?", (SITE,)):
        p = products[st["sku"]]
        if p["status"] != "active" or p["supplier_code"] in HELD:
            continue
        d = st["avg_weekly_demand"]
        ip = st["on_hand"] - st["allocated"] + on_order.get(p["sku"], 0)
        rop = math.ceil(d * (lead[p["supplier_code"]] + review) + d * weeks[p["abc_class"]])
        if ip > rop:
            continue
        qty = rop + COVER_WEEKS * d - ip
        qty = -(-qty // p["pack_size"]) * p["pack_size"]
        if qty <= 0:
            continue
        cost = price[p["sku"]][1] if p["sku"] in price else p["unit_cost"]
        out.setdefault(p["supplier_code"], {})[p["sku"]] = (qty, round(cost, 2))
    return out


def _number(text: str | None) -> float | None:
    if not text:
        return None
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", text.replace("£", "").replace(" ", ""))
    return float(m.group(0).replace(",", "")) if m else None


def verify(ctx) -> dict[str, bool]:
    init, fin = ctx.initial, ctx.final
    expected = expected_lines(init)
    total = round(sum(q * c for lines in expected.values() for q, c in lines.values()), 2)

    unchanged = True
    for table, key in (("suppliers", "code"), ("warehouses", "code"), ("products", "id"), ("stock_levels", "id"),
                       ("stock_movements", "id")):
        unchanged &= _rows(init, table, key) == _rows(fin, table, key)
    ipos, fpos = _rows(init, "purchase_orders"), _rows(fin, "purchase_orders")
    ilines, flines = _rows(init, "po_lines"), _rows(fin, "po_lines")
    existing_untouched = all(fpos.get(k) == v for k, v in ipos.items()) and \
        all(flines.get(k) == v for k, v in ilines.items())

    new_pos = {k: v for k, v in fpos.items() if k not in ipos}
    new_lines = [v for k, v in flines.items() if k not in ilines]
    got: dict[str, dict[str, tuple[int, float]]] = {}
    headers_ok = True
    sup_count: dict[str, int] = {}
    for po in new_pos.values():
        headers_ok &= po["warehouse_code"] == SITE and po["status"] == "draft"
        sup_count[po["supplier_code"]] = sup_count.get(po["supplier_code"], 0) + 1
    one_per_supplier = all(n == 1 for n in sup_count.values()) and set(sup_count) == set(expected)
    lines_ok = all(line["po_id"] in new_pos for line in new_lines)
    for line in new_lines:
        if line["po_id"] in new_pos:
            sup = new_pos[line["po_id"]]["supplier_code"]
            got.setdefault(sup, {})[line["sku"]] = (line["qty"], round(line["unit_cost"], 2))
    same_items = {s: {k: q for k, (q, _) in v.items()} for s, v in got.items()} == \
        {s: {k: q for k, (q, _) in v.items()} for s, v in expected.items()}
    prices_ok = same_items and all(abs(got[s][k][1] - c) < 0.005 for s, v in expected.items()
                                   for k, (_, c) in v.items())

    ans = _number(answer_field(ctx.answer, "ANSWER"))
    return {
        "answer_total_value_correct": ans is not None and abs(ans - total) <= 0.01,
        "one_draft_po_per_supplier_for_leeds": bool(new_pos) and headers_ok and one_per_supplier,
        "po_lines_have_policy_quantities": lines_ok and same_items,
        "po_lines_use_current_unit_costs": lines_ok and prices_ok,
        "existing_purchase_orders_untouched": existing_untouched,
        "no_other_tables_changed": unchanged,
    }
