"""Expected AW24 clearance prices from the initial database, the playbook, the vendor terms and the memo."""

from __future__ import annotations

import json
import re

from envs.taskkit import VerifyContext, answer_field

RUN_DATE = "2025-01-06"
WINDOW = ("2024-11-11", "2024-12-30")
LATEST_LAUNCH = "2024-11-11"
REASON = "CLR-AW24"
SHALLOWER = {50: 30, 30: 20, 20: 0, 0: 0}


def _tier(units: int, on_hand: int) -> int:
    total = units + on_hand
    if units * 100 < 25 * total:
        return 50
    if units * 100 < 45 * total:
        return 30
    if units * 100 < 65 * total:
        return 20
    return 0


def expected(env) -> dict[str, tuple[int, int, int]]:
    """sku -> (old price cents, new price cents, chain on-hand)."""
    terms = json.loads(env.read_text("merchandising/vendor_terms.json"))["brands"]
    on_hand = {r["sku"]: r["q"] for r in env.query("select sku, sum(on_hand) as q from stock group by sku")}
    sold = {r["sku"]: r["u"] for r in env.query(
        "select sku, sum(units) as u from weekly_sales where week_start between ? and ? group by sku", WINDOW)}
    out = {}
    for p in env.query("select * from products where season = 'AW24' and launch_date <= ?", (LATEST_LAUNCH,)):
        if p["style_name"].startswith("Aurora"):
            continue
        oh = on_hand.get(p["sku"], 0)
        if oh <= 0:
            continue
        pct = _tier(sold.get(p["sku"], 0), oh)
        if p["category"] == "Outerwear":
            pct = SHALLOWER[pct]
        t = terms.get(p["brand_id"], {})
        if t.get("markdown_embargo_until", "0000") > RUN_DATE:
            pct = 0
        if "max_markdown_pct" in t:
            pct = min(pct, int(t["max_markdown_pct"]))
        if pct == 0:
            continue
        orig = round(p["original_price"] * 100)
        cur = round(p["current_price"] * 100)
        new = ((orig * (100 - pct) + 100) // 10000) * 100 - 1
        if new < cur:
            out[p["sku"]] = (cur, new, oh)
    return out


def _rows(env, sql: str) -> list[tuple]:
    return [tuple(r.values()) for r in env.query(sql)]


def _num(text: str) -> float | None:
    text = re.sub(r"[,\s£$]|GBP", "", text or "", flags=re.I)
    try:
        return float(text)
    except ValueError:
        return None


def verify(ctx: VerifyContext) -> dict[str, bool]:
    exp = expected(ctx.initial)
    init = {r["sku"]: r for r in ctx.initial.query("select * from products")}
    final = {r["sku"]: r for r in ctx.final.query("select * from products")}
    changed = {s for s, r in final.items() if r != init.get(s)}
    priced_ok = set(init) == set(final) and all(
        abs(final[s]["current_price"] * 100 - new) < 0.5
        and {k: v for k, v in final[s].items() if k != "current_price"}
        == {k: v for k, v in init[s].items() if k != "current_price"}
        for s, (_, new, _) in exp.items())

    max_id = ctx.initial.query("select coalesce(max(change_id), 0) as m from price_changes")[0]["m"]
    new_rows = ctx.final.query("select * from price_changes where change_id > ? order by change_id", (max_id,))
    by_sku: dict[str, list] = {}
    for r in new_rows:
        by_sku.setdefault(r["sku"], []).append(r)
    history_ok = set(by_sku) == set(exp) and all(
        len(v) == 1 and abs(v[0]["new_price"] * 100 - exp[s][1]) < 0.5 and abs(v[0]["old_price"] * 100 - exp[s][0]) < 0.5
        and (v[0]["reason"] or "").strip().upper() == REASON for s, v in by_sku.items())

    others_same = all(_rows(ctx.initial, q) == _rows(ctx.final, q) for q in (
        "select * from stock order by sku, location_id", "select * from weekly_sales order by sku, week_start",
        "select * from brands order by brand_id", "select * from locations order by location_id",
    )) and _rows(ctx.initial, "select * from price_changes order by change_id") == _rows(
        ctx.final, f"select * from price_changes where change_id <= {int(max_id)} order by change_id")

    value = sum((old - new) * oh for old, new, oh in exp.values()) / 100
    field = answer_field(ctx.answer, "ANSWER") or ""
    parts = [p.strip() for p in field.split(";")]
    count = _num(parts[0]) if parts and parts[0] else None
    got_value = _num(parts[1]) if len(parts) > 1 else None
    return {
        "repriced_exactly_the_eligible_skus": changed == set(exp),
        "new_prices_correct": changed == set(exp) and priced_ok,
        "price_changes_logged_with_reason_code": bool(exp) and history_ok,
        "no_other_rows_changed": others_same,
        "answer_count_correct": count is not None and count == len(exp),
        "answer_markdown_value_correct": got_value is not None and abs(got_value - value) <= 0.015,
    }
