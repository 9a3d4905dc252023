"""Exactly the resolved tickets closed, and one summary with that count."""

from __future__ import annotations

from envs.taskkit import answer_field


def verify(ctx) -> dict[str, bool]:
    resolved = {r["id"] for r in ctx.initial.query("select id from tickets where status = 'resolved'")}
    closed = {r["id"] for r in ctx.final.query("select id from tickets where closed = 1")}
    summaries = [r["closed_count"] for r in ctx.final.query("select closed_count from summaries")]
    return {
        "closed_every_resolved_ticket": bool(resolved) and resolved <= closed,
        "closed_nothing_else": bool(closed) and closed <= resolved,
        "summary_has_the_count": summaries == [len(resolved)],
        "answer_done": (answer_field(ctx.answer) or "").lower() == "done",
    }
