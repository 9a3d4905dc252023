"""Verifier: recompute every pending award's renewal decision from the initial database and the rules of the
2025-26 policy (program sheets), then compare the final awards table and the reported total."""

from __future__ import annotations

import re
from fractions import Fraction

from envs.taskkit import VerifyContext, answer_field

POINTS = {"A": Fraction(4), "A-": Fraction(37, 10), "B+": Fraction(33, 10), "B": Fraction(3),
          "B-": Fraction(27, 10), "C+": Fraction(23, 10), "C": Fraction(2), "C-": Fraction(17, 10),
          "D+": Fraction(13, 10), "D": Fraction(1), "F": Fraction(0)}
# code: (min gpa, probation floor or None, min credits)
RULES = {"PRES": (Fraction(350, 100), Fraction(320, 100), 24), "DEAN": (Fraction(325, 100), Fraction(300, 100), 24),
         "STEM": (Fraction(300, 100), Fraction(275, 100), 24), "FGEN": (Fraction(250, 100), Fraction(200, 100), 20),
         "ARTS": (Fraction(275, 100), None, 24)}
STEM_DEPTS = {"MATH", "PHYS", "CHEM", "BIOL", "CSCI", "ENGR"}
ARTS_DEPTS = {"ARTS", "MUSC", "THEA"}


def _half_up(x: Fraction, places: int) -> Fraction:
    q = Fraction(10) ** places
    return Fraction(int(x * q + Fraction(1, 2)), q)


def expected_decisions(env) -> dict[int, tuple[str, Fraction]]:
    status = {r["student_id"]: r["status"] for r in env.query("select student_id, status from students")}
    rows: dict[int, list[dict]] = {}
    for r in env.query("select e.student_id, t.code as term, c.department, c.credits, e.grade from enrollments e"
                       " join courses c on c.course_id = e.course_id join terms t on t.term_id = e.term_id"
                       " where t.code in ('FA2024', 'SP2025', 'SU2025')"):
        rows.setdefault(r["student_id"], []).append(r)
    integrity = {r["student_id"] for r in env.query(
        "select student_id from conduct_cases where category = 'academic_integrity' and outcome = 'responsible'"
        " and case_date between '2024-08-15' and '2025-06-30'")}
    prior_prob = {(r["student_id"], r["program_code"]) for r in env.query(
        "select student_id, program_code from awards where academic_year = '2023-24' and decision = 'probation'")}
    out: dict[int, tuple[str, Fraction]] = {}
    for a in env.query("select * from awards where status = 'pending_review' and academic_year = '2024-25'"):
        sid, prog = a["student_id"], a["program_code"]
        amount = Fraction(str(a["amount"]))
        mn, floor, mc = RULES[prog]
        pts = cr = Fraction(0)
        earned = stem = 0
        arts = False
        for r in rows.get(sid, []):
            g = r["grade"]
            if (g in POINTS and g != "F") or g == "P":
                earned += r["credits"]
                stem += r["credits"] if r["department"] in STEM_DEPTS else 0
                arts = arts or r["department"] in ARTS_DEPTS
            if g in POINTS and r["term"] != "SU2025":
                pts += POINTS[g] * r["credits"]
                cr += r["credits"]
        gpa = _half_up(pts / cr, 2) if cr else Fraction(0)
        extra = (stem >= 12) if prog == "STEM" else (arts if prog == "ARTS" else True)
        if status[sid] != "active" or sid in integrity:
            dec = "terminate"
        elif gpa >= mn and earned >= mc and extra:
            dec = "renew"
        elif floor is not None and gpa >= floor and (sid, prog) not in prior_prob:
            dec = "probation"
        else:
            dec = "terminate"
        if dec == "terminate":
            nxt = Fraction(0)
        elif prog == "PRES":
            nxt = _half_up(amount * Fraction(103, 100), 0) if dec == "renew" else amount
        elif prog == "FGEN":
            nxt = min(amount + 500, Fraction(6000)) if dec == "renew" else amount
        else:
            nxt = amount if dec == "renew" else amount / 2
        out[a["award_id"]] = (dec, nxt)
    return out


def _parse_amount(text: str | None) -> float | None:
    if not text:
        return None
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", text.replace("$", ""))
    return float(m.group(0).replace(",", "")) if m else None


def _table(env, name: str, key: str) -> dict:
    return {r[key]: r for r in env.query(f"select * from {name}")}


def verify(ctx: VerifyContext) -> dict[str, bool]:
    exp = expected_decisions(ctx.initial)
    total = float(sum(v[1] for v in exp.values()))
    init_awards = _table(ctx.initial, "awards", "award_id")
    fin_awards = _table(ctx.final, "awards", "award_id")

    decisions_ok = amounts_ok = reviewed_ok = bool(exp)
    for aid, (dec, nxt) in exp.items():
        f = fin_awards.get(aid)
        if f is None or f["status"] != "reviewed":
            reviewed_ok = decisions_ok = amounts_ok = False
            continue
        if f["decision"] != dec:
            decisions_ok = False
        if f["next_year_amount"] is None or abs(float(f["next_year_amount"]) - float(nxt)) > 0.005:
            amounts_ok = False

    others_ok = set(init_awards) == set(fin_awards)
    for aid, row in init_awards.items():
        if aid not in exp and fin_awards.get(aid) != row:
            others_ok = False
    for aid in exp:
        f, i = fin_awards.get(aid), init_awards[aid]
        if f is not None and any(f[k] != i[k] for k in ("student_id", "program_code", "academic_year", "amount")):
            others_ok = False
    for name, key in (("students", "student_id"), ("enrollments", "enrollment_id"), ("conduct_cases", "case_id"),
                      ("courses", "course_id"), ("terms", "term_id"), ("scholarship_programs", "program_code")):
        if _table(ctx.initial, name, key) != _table(ctx.final, name, key):
            others_ok = False

    got = _parse_amount(answer_field(ctx.answer, "ANSWER"))
    return {
        "answer_total_correct": got is not None and abs(got - total) <= 0.01,
        "every_pending_award_reviewed": reviewed_ok,
        "decisions_correct": decisions_ok,
        "next_year_amounts_correct": amounts_ok,
        "no_other_rows_changed": others_ok,
    }
