"""Verifier: recompute each in-scope applicant's evaluation from the initial database, the articulation
agreements in force and the elective subject map, then compare the posted credit and the reported total."""

from __future__ import annotations

import csv
import io
import json
import re
from fractions import Fraction

from envs.taskkit import VerifyContext, answer_field

ACCEPTED = {"A", "A-", "B+", "B", "B-", "C+", "C", "P"}
CAP = Fraction(64)
BATCH_BY = "transfer_eval_batch_2025b"


def _half_up2(x: Fraction) -> Fraction:
    return Fraction(int(x * 100 + Fraction(1, 2)), 100)


def _slug(name: str) -> str:
    return name.lower().replace("'", "").replace(" ", "_")


def expected_postings(env) -> dict[int, dict[int, tuple[str, Fraction]]]:
    subject_map = json.loads(env.read_text("transfer/elective_subject_map.json"))["map"]
    agreements: dict[str, dict[str, str]] = {}
    for f in env.list_files("transfer/articulation"):
        if not f["path"].endswith(".csv") or f["path"].count("/") != 2:
            continue
        rows = csv.DictReader(io.StringIO(env.read_text(f["path"])))
        agreements[f["path"].rsplit("/", 1)[1][: -len(".csv")]] = {" ".join(r["external_course"].split()): r["lakeshore_equivalent"].strip() for r in rows}
    insts = {r["institution_id"]: r for r in env.query("select * from institutions")}
    out: dict[int, dict[int, tuple[str, Fraction]]] = {}
    for app in env.query("select applicant_id from applicants where admit_term = 'FA2025'"
                         " and admission_status = 'deposited' and evaluation_status = 'pending'"):
        aid = app["applicant_id"]
        posted = env.query("select equivalent, credits from posted_credits where applicant_id = ?", (aid,))
        total = sum((Fraction(str(r["credits"])) for r in posted), Fraction(0))
        have = {r["equivalent"] for r in posted}
        awards: dict[int, tuple[str, Fraction]] = {}
        for c in env.query("select * from external_courses where applicant_id = ? order by completed_on, ext_id", (aid,)):
            inst = insts[c["institution_id"]]
            if inst["accreditation"] == "none" or c["grade"] not in ACCEPTED or c["completed_on"] < "2015-08-01":
                continue
            number = int(c["number"])
            if number < 100:
                continue
            agreement = agreements.get(_slug(inst["name"]), {})
            key = f"{c['subject']} {c['number']}"
            if key in agreement:
                eq = agreement[key]
                if eq.upper() == "NO CREDIT":
                    continue
            elif inst["accreditation"] == "national":
                continue
            else:
                eq = f"{subject_map.get(c['subject'], 'GEN')} {'1XX' if number < 200 else '2XX'}"
            credits = Fraction(str(c["credits"]))
            if inst["calendar"] == "quarter":
                credits = _half_up2(credits * Fraction(2, 3))
            if "XX" not in eq and eq in have:
                continue
            if total + credits > CAP:
                continue
            total += credits
            have.add(eq)
            awards[c["ext_id"]] = (eq, credits)
        out[aid] = awards
    return out


def _parse_amount(text: str | None) -> float | None:
    if not text:
        return None
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", text.replace("$", ""))
    return float(m.group(0).replace(",", "")) if m else None


def verify(ctx: VerifyContext) -> dict[str, bool]:
    exp = expected_postings(ctx.initial)
    total = float(sum(cr for aw in exp.values() for _eq, cr in aw.values()))

    init_posted = {r["credit_id"]: r for r in ctx.initial.query("select * from posted_credits")}
    fin_posted = {r["credit_id"]: r for r in ctx.final.query("select * from posted_credits")}
    new_rows = [r for cid, r in fin_posted.items() if cid not in init_posted]
    got: dict[int, dict[int, tuple[str, float]]] = {}
    dup = False
    for r in new_rows:
        per = got.setdefault(r["applicant_id"], {})
        dup = dup or r["ext_id"] in per
        per[r["ext_id"]] = (" ".join(str(r["equivalent"]).upper().split()), float(r["credits"]))

    courses_ok = not dup and set(got) <= set(exp) and all(set(got.get(a, {})) == set(aw) for a, aw in exp.items())
    details_ok = courses_ok and all(
        got[a][e][0] == eq and abs(got[a][e][1] - float(cr)) <= 0.005
        for a, aw in exp.items() for e, (eq, cr) in aw.items())

    init_app = {r["applicant_id"]: r for r in ctx.initial.query("select * from applicants")}
    fin_app = {r["applicant_id"]: r for r in ctx.final.query("select * from applicants")}
    completed_ok = bool(exp) and all(fin_app.get(a, {}).get("evaluation_status") == "completed" for a in exp)
    others_ok = set(init_app) == set(fin_app) and all(
        fin_app[a] == row for a, row in init_app.items() if a not in exp)
    others_ok = others_ok and all(
        {k: v for k, v in fin_app[a].items() if k != "evaluation_status"}
        == {k: v for k, v in init_app[a].items() if k != "evaluation_status"} for a in exp if a in fin_app)
    others_ok = others_ok and all(fin_posted.get(cid) == row for cid, row in init_posted.items())
    for name, key in (("institutions", "institution_id"), ("external_courses", "ext_id"), ("catalog", "course_code")):
        a = {r[key]: r for r in ctx.initial.query(f"select * from {name}")}
        b = {r[key]: r for r in ctx.final.query(f"select * from {name}")}
        others_ok = others_ok and a == b

    ans = _parse_amount(answer_field(ctx.answer, "ANSWER"))
    return {
        "answer_total_correct": ans is not None and abs(ans - total) <= 0.01,
        "every_due_applicant_completed": completed_ok,
        "credited_courses_correct": courses_ok,
        "equivalents_and_credits_correct": details_ok,
        "no_other_rows_changed": others_ok,
    }
