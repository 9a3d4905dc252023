"""Verifier: recompute every open SLA-credit claim's outcome from the initial state."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timedelta

from envs.taskkit import answer_field

CAP_SHARE = 0.30
PERIOD = "2025-05"


def _incidents(env) -> dict[str, dict]:
    out = {}
    for f in env.list_files("incidents"):
        if not f["path"].endswith(".md") or f["path"].count("/") != 1:
            continue
        text = env.read_text(f["path"])
        stem = f["path"].rsplit("/", 1)[1][: -len(".md")]
        fields = dict(re.findall(r"^\|\s*([^|]+?)\s*\|\s*([^|]*?)\s*\|$", text, re.M))
        start = datetime.strptime(fields["Start (UTC)"], "%Y-%m-%d %H:%M")
        end = datetime.strptime(fields["End (UTC)"], "%Y-%m-%d %H:%M")
        out[stem] = {"service": fields["Service"], "regions": [r.strip() for r in fields["Regions"].split(",")],
                       "start": start, "end": end, "minutes": (end - start).total_seconds() / 60,
                       "impact": fields["Customer impact"].lower().startswith("yes")}
    return out


def expected(env) -> tuple[dict[int, tuple[str, float | str]], float]:
    incidents = _incidents(env)
    bands = list(csv.DictReader(io.StringIO(env.read_text("legal/sla_credit_schedule.csv"))))
    accounts = {a["account_id"]: a for a in env.query("select * from accounts")}
    subs: dict[str, list] = {}
    for s in env.query("select * from subscriptions order by subscription_id"):
        subs.setdefault(s["account_id"], []).append(s)
    used: dict[str, float] = {}
    for c in env.query("select * from credits where period = ?", (PERIOD,)):
        used[c["account_id"]] = used.get(c["account_id"], 0.0) + c["amount_usd"]
    outcome: dict[int, tuple[str, float | str]] = {}
    total = 0.0
    for t in env.query("select * from tickets where category = 'sla_credit' and status = 'open'"
                       " order by created_at, ticket_id"):
        created = datetime.strptime(t["created_at"], "%Y-%m-%d %H:%M")
        cited = set(re.findall(r"INC-\d{4}-\d{4}", f"{t['subject']} {t['body']}"))
        ok = [incidents[i] for i in sorted(cited) if i in incidents and incidents[i]["impact"]
              and created <= incidents[i]["end"] + timedelta(days=30)]
        acct = accounts[t["account_id"]]
        amount = 0.0
        for s in subs.get(t["account_id"], []):
            minutes = 0.0
            for inc in ok:
                day = inc["start"].strftime("%Y-%m-%d")
                if s["service"] == inc["service"] and ("global" in inc["regions"] or s["region"] in inc["regions"]) \
                        and s["start_date"] <= day and (s["end_date"] is None or s["end_date"] >= day):
                    minutes += inc["minutes"]
            if not minutes:
                continue
            pct = next(float(b["credit_pct"]) for b in bands if b["service"] == s["service"]
                       and float(b["min_minutes"]) <= minutes <= float(b["max_minutes"]))
            if acct["contract_type"] == "enterprise_msa":
                pct = min(100.0, pct * 2)
            amount += round(s["monthly_fee"] * pct / 100, 2)
        amount = round(amount, 2)
        room = round(CAP_SHARE * acct["mrr_usd"] - used.get(acct["account_id"], 0.0), 2)
        if amount > 0 and room > 0:
            credit = min(amount, room)
            used[acct["account_id"]] = used.get(acct["account_id"], 0.0) + credit
            outcome[t["ticket_id"]] = ("credit", credit)
            total += credit
        else:
            outcome[t["ticket_id"]] = ("deny", "cap_reached" if amount > 0 else "not_eligible")
    return outcome, round(total, 2)


def verify(ctx) -> dict[str, bool]:
    ini, fin = ctx.initial, ctx.final
    outcome, total = expected(ini)
    field = answer_field(ctx.answer, "ANSWER") or ""
    try:
        answer_ok = abs(float(re.sub(r"(?i)usd|\$|,|\s", "", field)) - total) < 0.02
    except ValueError:
        answer_ok = False

    c0 = {r["credit_id"]: r for r in ini.query("select * from credits")}
    c1 = {r["credit_id"]: r for r in fin.query("select * from credits")}
    new = [r for k, r in c1.items() if k not in c0]
    by_ticket: dict[int, list] = {}
    for r in new:
        by_ticket.setdefault(r["ticket_id"], []).append(r)
    want_credit = {k: v[1] for k, v in outcome.items() if v[0] == "credit"}
    tick0 = {r["ticket_id"]: r for r in ini.query("select * from tickets")}
    credits_ok = set(by_ticket) == set(want_credit) and all(
        len(rs) == 1 and abs(rs[0]["amount_usd"] - want_credit[k]) < 0.011 and rs[0]["period"] == "2025-05"
        and rs[0]["account_id"] == tick0[k]["account_id"] for k, rs in by_ticket.items())

    tick1 = {r["ticket_id"]: r for r in fin.query("select * from tickets")}
    decisions_ok = others_ok = set(tick0) == set(tick1)
    if decisions_ok:
        for k, row in tick0.items():
            if k in outcome:
                kind, val = outcome[k]
                res = "credited" if kind == "credit" else f"denied:{val}"
                decisions_ok &= tick1[k] == dict(row, status="resolved", resolution=res)
            else:
                others_ok &= tick1[k] == row
    unchanged = others_ok and all(c1.get(k) == r for k, r in c0.items()) and all(
        ini.query(f"select * from {t} order by 1") == fin.query(f"select * from {t} order by 1")
        for t in ("accounts", "subscriptions"))
    return {
        "answer_total_credited": answer_ok,
        "credits_issued_with_correct_amounts": credits_ok,
        "every_claim_resolved_with_correct_decision": decisions_ok,
        "no_other_rows_changed": unchanged,
    }
