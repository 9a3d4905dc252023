"""Pending requests approved when days <= balance, rejected otherwise; nothing pending left."""

from __future__ import annotations

from envs.taskkit import answer_field


def verify(ctx) -> dict[str, bool]:
    balance = {e["id"]: e["balance"] for e in ctx.initial.query("select id, balance from employees")}
    pending = ctx.initial.query("select id, employee_id, days from leave_requests where status = 'pending'")
    final = {r["id"]: r["status"] for r in ctx.final.query("select id, status from leave_requests")}
    fits = [r["id"] for r in pending if r["days"] <= balance[r["employee_id"]]]
    too_long = [r["id"] for r in pending if r["days"] > balance[r["employee_id"]]]
    return {
        "approved_requests_within_balance": bool(fits) and all(final[i] == "approved" for i in fits),
        "rejected_requests_over_balance": bool(too_long) and all(final[i] == "rejected" for i in too_long),
        "answer_done": (answer_field(ctx.answer) or "").lower() == "done",
    }
