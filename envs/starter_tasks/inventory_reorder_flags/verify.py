"""Flags on exactly the products below their reorder level, one notification with that count."""

from __future__ import annotations

from envs.taskkit import answer_field


def verify(ctx) -> dict[str, bool]:
    low = {r["sku"] for r in ctx.initial.query("select sku from products where stock < reorder_level")}
    flagged = {r["sku"] for r in ctx.final.query("select sku from products where flagged = 1")}
    notes = ctx.final.query("select recipient, count from notifications")
    return {
        "flagged_every_low_product": bool(low) and low <= flagged,
        "flagged_nothing_else": bool(flagged) and flagged <= low,
        "buyer_told_the_count": [(n["recipient"], n["count"]) for n in notes] == [("buyer", len(low))],
        "answer_done": (answer_field(ctx.answer) or "").lower() == "done",
    }
