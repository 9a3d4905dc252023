"""Recompute the Rotterdam week-36 reconciliation from the initial state and compare with the final state."""

from __future__ import annotations

import json
import re

from envs.taskkit import answer_field

SITE, WEEK = "RTM", 36
VOID = {"RTM-W36-C2"}  # memo 2024-09-06: Rotterdam zone C night shift of 4 September is void


def expected(env) -> tuple[dict[int, str], dict[int, int]]:
    """(line_id -> outcome, line_id -> delta for adjusted lines)."""
    tol = json.loads(env.read_text("config/count_tolerances.json"))
    items = {r["sku"]: r for r in env.query("select * from items")}
    stock = {(r["bin_code"], r["sku"]): r["qty"] for r in env.query("select * from bin_stock")}
    lines = env.query("select l.* from count_lines l join count_sessions s on s.session_id = l.session_id"
                      " where s.warehouse = ? and s.week = ? and l.status = 'submitted' order by l.id", (SITE, WEEK))
    outcome: dict[int, str] = {}
    delta: dict[int, int] = {}
    latest: dict[tuple[str, str], dict] = {}
    for ln in lines:
        if ln["session_id"] in VOID:
            outcome[ln["id"]] = "recount"
            continue
        key = (ln["bin_code"], ln["sku"])
        if key not in latest or ln["counted_at"] > latest[key]["counted_at"]:
            latest[key] = ln
    for ln in lines:
        if ln["id"] in outcome:
            continue
        key = (ln["bin_code"], ln["sku"])
        if latest[key]["id"] != ln["id"]:
            outcome[ln["id"]] = "superseded"
            continue
        it = items[ln["sku"]]
        counted = ln["counted_qty"] * (it["case_qty"] if ln["counted_uom"] == "CS" else 1)
        var = counted - stock.get(key, 0)
        limits = tol["by_category"].get(it["category"], tol["default"])
        if var == 0:
            outcome[ln["id"]] = "matched"
        elif not it["serial_tracked"] and abs(var) <= limits["max_units"] and \
                abs(var) * it["unit_cost"] <= limits["max_value_eur"] + 1e-9:
            outcome[ln["id"]] = "adjusted"
            delta[ln["id"]] = var
        else:
            outcome[ln["id"]] = "recount"
    return outcome, delta


def _number(text: str | None) -> float | None:
    if not text:
        return None
    t = text.replace("€", "").replace("EUR", "").replace(" ", "").replace("\u2212", "-")
    m = re.search(r"[-+]?\d[\d,]*(?:\.\d+)?", t)
    return float(m.group(0).replace(",", "")) if m else None


def verify(ctx) -> dict[str, bool]:
    init, fin = ctx.initial, ctx.final
    outcome, delta = expected(init)
    items = {r["sku"]: r for r in init.query("select * from items")}
    ilines = {r["id"]: r for r in init.query("select * from count_lines")}
    flines = {r["id"]: r for r in fin.query("select * from count_lines")}
    statuses_ok = set(ilines) == set(flines) and all(flines[k]["status"] == v for k, v in outcome.items())
    others_ok = set(ilines) == set(flines) and all(
        (flines[k] == r) if k not in outcome else ({**flines[k], "status": None} == {**r, "status": None})
        for k, r in ilines.items())

    # stock: expected quantity per bin/item
    exp_stock = {(r["bin_code"], r["sku"]): r["qty"] for r in init.query("select * from bin_stock")}
    for lid, d in delta.items():
        key = (ilines[lid]["bin_code"], ilines[lid]["sku"])
        exp_stock[key] = exp_stock.get(key, 0) + d
    fin_stock = {(r["bin_code"], r["sku"]): r["qty"] for r in fin.query("select * from bin_stock")}
    stock_ok = fin_stock == exp_stock

    # adjustments: old rows untouched, new rows exactly one CC-VAR per adjusted line
    iadj = {r["id"]: r for r in init.query("select * from adjustments")}
    fadj = {r["id"]: r for r in fin.query("select * from adjustments")}
    old_adj_ok = all(fadj.get(k) == v for k, v in iadj.items())
    new = [r for k, r in fadj.items() if k not in iadj]
    got = {}
    dup = False
    for r in new:
        dup |= r["count_line_id"] in got
        got[r["count_line_id"]] = r
    adj_ok = not dup and set(got) == set(delta) and all(
        got[k]["delta_qty"] == d and got[k]["reason_code"] == "CC-VAR"
        and got[k]["bin_code"] == ilines[k]["bin_code"] and got[k]["sku"] == ilines[k]["sku"]
        and abs(got[k]["value_eur"] - d * items[ilines[k]["sku"]]["unit_cost"]) < 0.006 for k, d in delta.items())

    static_ok = all(
        init.query(f"select * from {t} order by 1") == fin.query(f"select * from {t} order by 1")
        for t in ("items", "bins", "count_sessions"))
    net = round(sum(d * items[ilines[k]["sku"]]["unit_cost"] for k, d in delta.items()), 2)
    ans = _number(answer_field(ctx.answer, "ANSWER"))
    return {
        "answer_net_value_correct": ans is not None and abs(ans - net) <= 0.01,
        "week36_rotterdam_lines_resolved_correctly": statuses_ok,
        "adjustments_posted_exactly_for_adjusted_lines": old_adj_ok and adj_ok,
        "bin_stock_updated_by_the_variances_only": stock_ok,
        "other_count_lines_untouched": others_ok,
        "master_data_untouched": static_ok,
    }
