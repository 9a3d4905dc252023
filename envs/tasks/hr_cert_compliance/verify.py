"""Expected review outcome from the initial register, the role matrix, the policy and the two memos."""

from __future__ import annotations

import json
import re

from envs.taskkit import VerifyContext, answer_field

REVIEW = "2024-11-15"
RENEW_BY = "2025-01-14"
GRACE = ("2024-10-01", "2024-12-31", "2025-03-31")  # LOTO expiring in [a, b] is valid until c, no booking
EQUIVALENT = {"FIRSTAID": ("FIRSTAID", "FA-CPR")}


def expected(env) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """(employee_id -> expected work status for active employees, [(employee_id, session_id)] in booking order)."""
    roles = json.loads(env.read_text("compliance/role_requirements.json"))["roles"]
    region = {r["site_id"]: r["region"] for r in env.query("select * from sites")}
    certs: dict[str, list[dict]] = {}
    for c in env.query("select * from certifications where verified = 1"):
        certs.setdefault(c["employee_id"], []).append(c)
    registered = {(r["employee_id"], r["cert_code"]) for r in env.query(
        "select e.employee_id, s.cert_code from enrollments e join training_sessions s using (session_id) "
        "where e.status = 'registered'")}

    status: dict[str, str] = {}
    needs = []
    for e in env.query("select * from employees where employment_status = 'active'"):
        missing, soon = False, []
        for code in roles[e["role_code"]]["required_certificates"]:
            best = None
            for c in certs.get(e["employee_id"], []):
                if c["cert_code"] not in EQUIVALENT.get(code, (code,)):
                    continue
                exp, grace = c["expires_on"], False
                if c["cert_code"] == "LOTO" and GRACE[0] <= exp <= GRACE[1]:
                    exp, grace = GRACE[2], True
                if exp >= REVIEW and (best is None or exp > best[0]):
                    best = (exp, grace)
            if best is None:
                missing = True
            elif best[0] <= RENEW_BY and not best[1]:
                soon.append((best[0], e["employee_id"], code, region[e["site_id"]]))
        status[e["employee_id"]] = "restricted" if missing else "cleared"
        if not missing:
            needs.extend(n for n in soon if (n[1], n[2]) not in registered)

    sessions = env.query("select * from training_sessions where start_date > ? order by start_date, session_id",
                         (REVIEW,))
    taken = {s["session_id"]: s["seats_taken"] for s in sessions}
    bookings = []
    for exp, emp, code, reg in sorted(needs):
        for s in sessions:
            if s["cert_code"] == code and s["region"] == reg and s["start_date"] <= exp \
                    and taken[s["session_id"]] < s["capacity"]:
                taken[s["session_id"]] += 1
                bookings.append((emp, s["session_id"]))
                break
    return status, bookings


def _rows(env, sql: str) -> list[tuple]:
    return [tuple(r.values()) for r in env.query(sql)]


def verify(ctx: VerifyContext) -> dict[str, bool]:
    status, bookings = expected(ctx.initial)
    init = {r["employee_id"]: r for r in ctx.initial.query("select * from employees")}
    final = {r["employee_id"]: r for r in ctx.final.query("select * from employees")}
    want = {k: status.get(k, r["work_status"]) for k, r in init.items()}
    statuses_ok = set(init) == set(final) and all(final[k]["work_status"] == want[k] for k in init)
    emp_other_ok = set(init) == set(final) and all(
        {c: v for c, v in final[k].items() if c != "work_status"} == {c: v for c, v in init[k].items()
                                                                     if c != "work_status"} for k in init)
    flipped = {k for k in init if want[k] != init[k]["work_status"]}

    max_log = ctx.initial.query("select coalesce(max(change_id), 0) as m from status_changes")[0]["m"]
    log = ctx.final.query("select * from status_changes where change_id > ?", (max_log,))
    log_ok = sorted(r["employee_id"] for r in log) == sorted(flipped) and all(
        r["new_status"] == want[r["employee_id"]] for r in log)

    max_enr = ctx.initial.query("select coalesce(max(enrollment_id), 0) as m from enrollments")[0]["m"]
    new_enr = ctx.final.query("select * from enrollments where enrollment_id > ?", (max_enr,))
    got = sorted((r["employee_id"], r["session_id"]) for r in new_enr)
    bookings_ok = got == sorted(bookings) and all(r["status"] == "registered" for r in new_enr)

    per_session: dict[str, int] = {}
    for _, s in bookings:
        per_session[s] = per_session.get(s, 0) + 1
    s_init = {r["session_id"]: r for r in ctx.initial.query("select * from training_sessions")}
    s_final = {r["session_id"]: r for r in ctx.final.query("select * from training_sessions")}
    seats_ok = set(s_init) == set(s_final) and all(
        s_final[k] == {**r, "seats_taken": r["seats_taken"] + per_session.get(k, 0)} for k, r in s_init.items())

    unchanged = emp_other_ok and all(_rows(ctx.initial, q) == _rows(ctx.final, q) for q in (
        "select * from certifications order by cert_id", "select * from sites order by site_id")) and _rows(
        ctx.initial, "select * from enrollments order by enrollment_id") == _rows(
        ctx.final, f"select * from enrollments where enrollment_id <= {int(max_enr)} order by enrollment_id") and _rows(
        ctx.initial, "select * from status_changes order by change_id") == _rows(
        ctx.final, f"select * from status_changes where change_id <= {int(max_log)} order by change_id")

    n_restricted = sum(1 for v in status.values() if v == "restricted")
    field = answer_field(ctx.answer, "ANSWER") or ""
    nums = [int(x) for x in re.findall(r"\d+", field)]
    return {
        "work_statuses_correct": statuses_ok,
        "status_changes_logged": bool(flipped) and log_ok,
        "renewal_bookings_correct": bool(bookings) and bookings_ok,
        "session_seats_consistent": seats_ok,
        "no_other_rows_changed": unchanged,
        "answer_correct": nums == [n_restricted, len(bookings)],
    }
