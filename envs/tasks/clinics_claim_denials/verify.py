"""Verifier: recompute the playbook action for every denied line from the initial database, the payer filing
limits and the fee schedules, then compare the final claim lines and the reported resubmitted total."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re

from envs.taskkit import VerifyContext, answer_field

WORK_DATE = dt.date(2025, 4, 15)
DISTINCT = {"59", "XE", "XP", "XS", "XU"}


def expected_actions(env) -> dict[int, tuple[str, float | None, str | None]]:
    limits = {r["payer_code"]: (int(r["corrected_claim_limit_days"]), int(r["appeal_limit_days"]))
              for r in csv.DictReader(io.StringIO(env.read_text("revenue_cycle/payer_filing_limits.csv")))}
    payers = {p["payer_id"]: p for p in env.query("select * from payers")}
    fees: dict[str, dict[str, dict[int, float]]] = {}
    for p in payers.values():
        text = env.read_text(f"revenue_cycle/fee_schedules/{p['code'].lower()}_fee_schedule.csv")
        fees[p["code"]] = {r["cpt"]: {2024: float(r["allowed_2024"]), 2025: float(r["allowed_2025"])}
                           for r in csv.DictReader(io.StringIO(text))}
    out: dict[int, tuple[str, float | None, str | None]] = {}
    for ln in env.query("select l.*, c.service_date, c.payer_id from claim_lines l join claims c"
                        " on c.claim_id = l.claim_id where l.status = 'denied'"):
        payer = payers[ln["payer_id"]]
        corrected, appeal = limits[payer["code"]]
        service = dt.date.fromisoformat(ln["service_date"])
        in_window = (WORK_DATE - service).days <= corrected
        code, billed = ln["denial_code"], ln["billed_amount"]

        def resubmit(amount: float, in_window: bool = in_window) -> tuple:
            return ("resubmitted", round(amount, 2), None) if in_window else ("written_off", None, "timely_filing")

        if billed < 25.00:
            act = ("written_off", None, "small_balance")
        elif code == "CO-16":
            act = resubmit(billed)
        elif code == "CO-45":
            act = resubmit(fees[payer["code"]][ln["cpt"]][service.year] * ln["units"])
        elif code == "CO-97":
            act = resubmit(billed) if (ln["modifier"] or "").strip().upper() in DISTINCT else ("written_off", None, "bundled")
        elif code == "CO-29":
            act = ("written_off", None, "timely_filing")
        elif code == "CO-50":
            open_ = (WORK_DATE - dt.date.fromisoformat(ln["denied_on"])).days <= appeal
            act = ("appeal", None, None) if open_ else ("written_off", None, "appeal_window_expired")
        elif code == "PR-204":
            act = ("written_off", None, "non_covered") if payer["plan_type"] == "medicaid" else ("patient_responsibility", None, None)
        else:
            raise ValueError(f"unexpected denial code {code}")
        out[ln["line_id"]] = act
    return out


def _parse_amount(text: str | None) -> float | None:
    if not text:
        return None
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", text.replace("$", ""))
    return float(m.group(0).replace(",", "")) if m else None


def verify(ctx: VerifyContext) -> dict[str, bool]:
    exp = expected_actions(ctx.initial)
    total = sum(a[1] for a in exp.values() if a[0] == "resubmitted")
    init = {r["line_id"]: r for r in ctx.initial.query("select * from claim_lines")}
    fin = {r["line_id"]: r for r in ctx.final.query("select * from claim_lines")}

    status_ok = amount_ok = reason_ok = bool(exp) and set(init) == set(fin)
    for lid, (status, amount, reason) in exp.items():
        f = fin.get(lid)
        if f is None or f["status"] != status:
            status_ok = amount_ok = reason_ok = False
            continue
        if status == "resubmitted" and (f["action_amount"] is None or abs(f["action_amount"] - amount) > 0.005):
            amount_ok = False
        if status == "written_off" and f["action_reason"] != reason:
            reason_ok = False
    fixed = ("claim_id", "line_no", "cpt", "modifier", "units", "billed_amount", "denial_code", "denied_on", "paid_amount")
    others_ok = set(init) == set(fin) and all(
        fin[lid] == row if lid not in exp else all(fin[lid][k] == row[k] for k in fixed) for lid, row in init.items())
    for name, key in (("claims", "claim_id"), ("patients", "patient_id"), ("payers", "payer_id"),
                      ("providers", "provider_id")):
        a = {r[key]: r for r in ctx.initial.query(f"select * from {name}")}
        b = {r[key]: r for r in ctx.final.query(f"select * from {name}")}
        others_ok = others_ok and a == b

    got = _parse_amount(answer_field(ctx.answer, "ANSWER"))
    return {
        "answer_total_correct": got is not None and abs(got - total) <= 0.01,
        "every_denied_line_actioned_correctly": status_ok,
        "resubmitted_amounts_correct": amount_ok,
        "write_off_reasons_correct": reason_ok,
        "no_other_rows_changed": others_ok,
    }
