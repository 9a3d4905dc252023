"""Verifier: recompute the outreach tasks the SOP requires for the two active patient-level recalls from the
initial database, then compare the tasks created and the reported counts."""

from __future__ import annotations

import re

from envs.taskkit import VerifyContext, answer_field

# The active patient-level recalls in notices/ (identical at every scale): id -> (cvx, lots, window)
RECALLS = {
    "RC-2025-0412": ("150", {"FZ4417A", "FZ4417B", "FZ4420C"}, "2024-09-15", "2025-01-31"),
    "RC-2025-0530": ("08", {"HB2291", "HB2294"}, "2025-01-06", "2025-04-30"),
}
IC_PREFIXES = ("B20", "C81", "C82", "C83", "C85", "C90", "C91", "C92", "D70", "D80", "D81", "D82", "D83", "D84",
               "Z94", "Z79.52", "Z92.21")
TODAY = (2025, 6, 2)


def _age(dob: str) -> int:
    y, m, d = map(int, dob.split("-"))
    return TODAY[0] - y - ((TODAY[1], TODAY[2]) < (m, d))


def expected_tasks(env) -> dict[tuple[int, str], dict]:
    doses = env.query("select i.imm_id, i.patient_id, i.administered_on, i.site_id, i.status, l.lot_number, v.cvx"
                      " from immunizations i join lots l on l.lot_id = i.lot_id"
                      " join vaccines v on v.vaccine_id = l.vaccine_id")
    patients = {p["patient_id"]: p for p in env.query("select * from patients")}
    ic = {r["patient_id"] for r in env.query("select patient_id, icd10 from problems where status = 'active'")
          if r["icd10"].startswith(IC_PREFIXES)}
    out: dict[tuple[int, str], dict] = {}
    for ref, (cvx, lots, lo, hi) in RECALLS.items():
        affected: dict[int, list[dict]] = {}
        for d in doses:
            if d["lot_number"] in lots and lo <= d["administered_on"] <= hi and d["status"] == "completed":
                affected.setdefault(d["patient_id"], []).append(d)
        for pid, ds in affected.items():
            p = patients[pid]
            if p["deceased_on"]:
                continue
            latest = max(ds, key=lambda d: (d["administered_on"], d["imm_id"]))
            if any(d["patient_id"] == pid and d["cvx"] == cvx and d["lot_number"] not in lots
                   and d["status"] == "completed" and d["administered_on"] > latest["administered_on"] for d in doses):
                continue
            age = _age(p["dob"])
            urgent = age < 2 or age >= 65 or pid in ic
            channel = "portal" if p["portal_active"] else ("phone" if (p["phone"] or "").strip() else "letter")
            out[(pid, ref)] = {"ids": {d["imm_id"] for d in ds}, "priority": "urgent" if urgent else "routine",
                               "channel": channel, "site_id": latest["site_id"]}
    return out


def verify(ctx: VerifyContext) -> dict[str, bool]:
    exp = expected_tasks(ctx.initial)
    init_tasks = {r["task_id"]: r for r in ctx.initial.query("select * from outreach_tasks")}
    fin_tasks = {r["task_id"]: r for r in ctx.final.query("select * from outreach_tasks")}
    new = [r for tid, r in fin_tasks.items() if tid not in init_tasks]
    got: dict[tuple[int, str], dict] = {}
    dup = False
    for r in new:
        key = (r["patient_id"], r["recall_ref"])
        dup = dup or key in got
        ids = {int(x) for x in re.findall(r"\d+", r["immunization_ids"] or "")}
        got[key] = {"ids": ids, "priority": r["priority"], "channel": r["channel"], "site_id": r["site_id"]}

    right_set = not dup and set(got) == set(exp)
    doses_ok = right_set and all(got[k]["ids"] == v["ids"] for k, v in exp.items())
    priority_ok = right_set and all(got[k]["priority"] == v["priority"] for k, v in exp.items())
    channel_site_ok = right_set and all(got[k]["channel"] == v["channel"] and got[k]["site_id"] == v["site_id"]
                                        for k, v in exp.items())
    others_ok = all(fin_tasks.get(tid) == row for tid, row in init_tasks.items())
    for name, key in (("patients", "patient_id"), ("problems", "problem_id"), ("immunizations", "imm_id"),
                      ("lots", "lot_id"), ("vaccines", "vaccine_id"), ("sites", "site_id")):
        a = {r[key]: r for r in ctx.initial.query(f"select * from {name}")}
        b = {r[key]: r for r in ctx.final.query(f"select * from {name}")}
        others_ok = others_ok and a == b

    n_urgent = sum(1 for v in exp.values() if v["priority"] == "urgent")
    field = answer_field(ctx.answer, "ANSWER") or ""
    nums = [int(x) for x in re.findall(r"\d+", field.replace(",", " ").replace(";", " "))]
    return {
        "answer_counts_correct": len(nums) >= 2 and nums[0] == len(exp) and nums[1] == n_urgent,
        "tasks_for_exactly_the_right_patients": right_set,
        "affected_doses_listed": doses_ok,
        "priorities_correct": priority_ok,
        "channel_and_site_correct": channel_site_ok,
        "no_other_rows_changed": others_ok,
    }
