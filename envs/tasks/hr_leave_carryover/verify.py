"""Expected 2024 year-end carry-over from the initial database, the country policies and the HR memo."""

from __future__ import annotations

import re
from datetime import date

from envs.taskkit import VerifyContext, answer_field

TOL = 0.011


def _policy(text: str) -> tuple[list[tuple[int, float]], float]:
    bands = []
    for label, days in re.findall(r"^\|\s*([^|]*?(?:years|employees)[^|]*?)\s*\|\s*(\d+)\s*\|", text, flags=re.M):
        m = re.match(r"(\d+)", label)
        bands.append((int(m.group(1)) if m else 0, float(days)))
    cap = float(re.search(r"Up to \*\*(\d+(?:\.\d+)?) days\*\*", text).group(1))
    return sorted(bands), cap


def expected(env) -> dict[str, tuple[float, float]]:
    """employee_id -> (carryover, forfeited) for every employee in the close."""
    countries = {r["entity_id"]: r["country"] for r in env.query("select * from entities")}
    pol = {c: _policy(env.read_text(f"policies/leave/{c}_annual_leave_2024.md"))
           for c in set(countries.values())}
    opening = {r["employee_id"]: r["opening_days"] for r in env.query(
        "select * from leave_balances where year = 2024")}
    adj: dict[str, float] = {}
    for r in env.query("select * from leave_adjustments where year = 2024 and approved = 1"):
        adj[r["employee_id"]] = adj.get(r["employee_id"], 0.0) + r["days"]
    taken: dict[str, float] = {}
    for r in env.query("select * from leave_requests where leave_type = 'annual' and status = 'approved' "
                       "and start_date like '2024-%'"):
        taken[r["employee_id"]] = taken.get(r["employee_id"], 0.0) + r["days"]
    out = {}
    for e in env.query("select * from employees where status in ('active', 'leave')"):
        c = countries[e["entity_id"]]
        bands, cap = pol[c]
        hire = date.fromisoformat(e["hire_date"])
        if hire.year == 2024:
            ent = bands[0][1] * e["fte"] * (13 - hire.month) / 12
        else:
            yrs = 2024 - hire.year - ((1, 1) < (hire.month, hire.day))
            ent = [d for m, d in bands if yrs >= m][-1] * e["fte"]
        ent = round(ent + 1e-9, 2)
        bal = round(opening.get(e["employee_id"], 0.0) + ent + adj.get(e["employee_id"], 0.0)
                    - taken.get(e["employee_id"], 0.0), 2)
        if e["entity_id"] == "NL-OPS":
            cap = 10.0
        if c == "FR" and e["hire_date"] > "2023-12-31":
            cap = 0.0
        if e["status"] == "leave":
            cap = float("inf")
        carry = bal if bal <= cap else cap
        out[e["employee_id"]] = (round(carry, 2), round(bal - carry, 2))
    return out


def _rows(env, sql: str) -> list[tuple]:
    return [tuple(r.values()) for r in env.query(sql)]


def verify(ctx: VerifyContext) -> dict[str, bool]:
    exp = expected(ctx.initial)
    rows = {r["employee_id"]: r for r in ctx.final.query("select * from leave_balances where year = 2025")}
    carry_ok = set(rows) == set(exp) and all(abs(rows[k]["opening_days"] - v[0]) <= TOL for k, v in exp.items())
    forf_ok = set(rows) == set(exp) and all(abs(rows[k]["forfeited_prev"] - v[1]) <= TOL for k, v in exp.items())
    unchanged = all(_rows(ctx.initial, q) == _rows(ctx.final, q) for q in (
        "select * from leave_balances where year < 2025 order by employee_id, year",
        "select count(*) from leave_balances where year > 2025",
        "select * from employees order by employee_id", "select * from entities order by entity_id",
        "select * from leave_requests order by request_id", "select * from leave_adjustments order by adjustment_id",
    ))
    total = round(sum(v[1] for v in exp.values()), 2)
    worst = max(v[1] for v in exp.values())
    top = min(k for k, v in exp.items() if abs(v[1] - worst) <= 1e-9)
    field = answer_field(ctx.answer, "ANSWER") or ""
    parts = [p.strip() for p in field.split(";")]
    got_total = None
    if parts and parts[0]:
        try:
            got_total = float(re.sub(r"[,\s]|days?", "", parts[0], flags=re.I))
        except ValueError:
            got_total = None
    got_top = parts[1].strip("`'\" ").upper() if len(parts) > 1 else ""
    return {
        "closed_exactly_the_in_scope_employees": set(rows) == set(exp),
        "carryover_days_correct": carry_ok,
        "forfeited_days_correct": forf_ok,
        "no_other_rows_changed": unchanged,
        "answer_total_forfeited_correct": got_total is not None and abs(got_total - total) <= 0.05,
        "answer_top_forfeiter_correct": got_top == top,
    }
