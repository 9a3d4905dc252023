"""Verifier: recompute the February-closings settlements from the initial state and compare the ledger."""

from __future__ import annotations

import json
import re
from datetime import date

from envs.taskkit import answer_field

PAYOUT_DATE = date(2025, 3, 3)
SPLIT = {"SPLIT-70": (0.30, 20000.0), "SPLIT-80": (0.20, 14000.0)}
FLAT_FEE = 395.0


def _letters(env) -> dict[tuple[str, str], tuple[str, float, str]]:
    out = {}
    for f in env.list_files("referrals"):
        if not f["path"].endswith(".txt") or f["path"].count("/") != 1:
            continue
        text = env.read_text(f["path"])
        broker = re.search(r"^Referring broker:\s*(.+)$", text, re.M).group(1).strip()
        addr, city = re.search(r"^Property:\s*(.+?),\s*([^,]+),\s*CO\s*$", text, re.M).groups()
        pct = float(re.search(r"referral fee of\s*([\d.]+)%", text).group(1))
        valid = re.search(r"valid through (\d{4}-\d{2}-\d{2})", text).group(1)
        out[(addr.strip(), city.strip())] = (broker, pct, valid)
    return out


def _cap_year_start(hire: str) -> date:
    h = date.fromisoformat(hire)
    d = 28 if (h.month, h.day) == (2, 29) else h.day
    s = date(PAYOUT_DATE.year, h.month, d)
    return s if s <= PAYOUT_DATE else date(PAYOUT_DATE.year - 1, h.month, d)


def expected(env) -> tuple[dict[str, dict[str, float]], float]:
    memo = env.read_text("memos/2025-03_payout_batch.md")
    held = set(re.findall(r"\*\*(TX-\d{2}-\d{5})\*\*", memo))
    teams = json.loads(env.read_text("compensation/team_agreements.json"))["teams"]
    letters = _letters(env)
    agents = {a["agent_id"]: a for a in env.query("select * from agents")}
    used: dict[str, float] = {}
    for p in env.query("select * from payouts where kind = 'company'"):
        if date.fromisoformat(p["paid_date"]) >= _cap_year_start(agents[p["agent_id"]]["hire_date"]):
            used[p["agent_id"]] = used.get(p["agent_id"], 0.0) + p["amount"]
    shares: dict[str, list] = {}
    for r in env.query("select * from transaction_agents order by txn_id, agent_id"):
        shares.setdefault(r["txn_id"], []).append(r)
    batch = [t for t in env.query("select * from transactions where status = 'closed' and settled = 0 and "
                                  "close_date between '2025-02-01' and '2025-02-28' order by close_date, txn_id")
             if t["txn_id"] not in held]
    result: dict[str, dict[str, float]] = {}
    retained = 0.0
    for t in batch:
        lines: dict[str, float] = {}

        def add(payee: str, amount: float, lines=lines) -> None:
            if amount > 0:
                lines[payee] = round(lines.get(payee, 0.0) + amount, 2)

        gci = round(t["sale_price"] * t["commission_pct"] / 100, 2)
        letter = letters.get((t["property_address"], t["city"]))
        ref = 0.0
        if letter and t["close_date"] <= letter[2]:
            ref = round(gci * letter[1] / 100, 2)
            add(f"referral:{letter[0]}", ref)
        net = round(gci - ref, 2)
        parts = shares[t["txn_id"]]
        given = 0.0
        for i, part in enumerate(parts):
            gross = round(net * part["share_pct"] / 100, 2) if i < len(parts) - 1 else round(net - given, 2)
            given = round(given + gross, 2)
            a = agents[part["agent_id"]]
            keep = gross
            if a["plan_code"] == "FLAT-100":
                fee = min(FLAT_FEE, gross)
                add(f"fee:{a['agent_id']}", fee)
                retained += fee
                keep = round(gross - fee, 2)
            else:
                rate, cap = SPLIT[a["plan_code"]]
                room = max(0.0, round(cap - used.get(a["agent_id"], 0.0), 2))
                comp = min(round(gross * rate, 2), room)
                used[a["agent_id"]] = used.get(a["agent_id"], 0.0) + comp
                add(f"company:{a['agent_id']}", comp)
                retained += comp
                keep = round(gross - comp, 2)
            team = teams.get(a["team_id"]) if a["team_id"] else None
            if team and team["lead_agent_id"] != a["agent_id"]:
                over = round(keep * team["override_pct"] / 100, 2)
                add(f"lead:{team['lead_agent_id']}", over)
                keep = round(keep - over, 2)
            add(f"agent:{a['agent_id']}", keep)
        result[t["txn_id"]] = lines
    return result, round(retained, 2)


def verify(ctx) -> dict[str, bool]:
    ini, fin = ctx.initial, ctx.final
    want, retained = expected(ini)
    field = answer_field(ctx.answer, "ANSWER") or ""
    try:
        answer_ok = abs(float(re.sub(r"(?i)usd|\$|,|\s", "", field)) - retained) < 0.02
    except ValueError:
        answer_ok = False

    p0 = {r["payout_id"]: r for r in ini.query("select * from payouts")}
    p1 = {r["payout_id"]: r for r in fin.query("select * from payouts")}
    got: dict[str, dict[str, float]] = {}
    kinds_ok = True
    kind_of = {"agent": "agent", "company": "company", "fee": "fee", "lead": "team_lead", "referral": "referral"}
    for k, r in p1.items():
        if k in p0:
            continue
        lines = got.setdefault(r["txn_id"], {})
        lines[r["payee"]] = round(lines.get(r["payee"], 0.0) + r["amount"], 2)
        kinds_ok &= kind_of.get(r["payee"].split(":")[0]) == r["kind"] and r["paid_date"] == "2025-03-03"
    settled_set_ok = set(got) == set(want)
    amounts_ok = settled_set_ok and kinds_ok and all(
        set(got[t]) == set(want[t]) and all(abs(got[t][p] - want[t][p]) < 0.011 for p in want[t]) for t in want)

    t0 = {r["txn_id"]: r for r in ini.query("select * from transactions")}
    t1 = {r["txn_id"]: r for r in fin.query("select * from transactions")}
    flags_ok = set(t0) == set(t1) and all(
        t1[k] == (dict(r, settled=1) if k in want else r) for k, r in t0.items())
    unchanged = all(p1.get(k) == r for k, r in p0.items()) and all(
        ini.query(f"select * from {t} order by 1, 2") == fin.query(f"select * from {t} order by 1, 2")
        for t in ("agents", "offices", "transaction_agents"))
    return {
        "answer_company_retained": answer_ok,
        "settled_exactly_the_batch_transactions": settled_set_ok and flags_ok,
        "settlement_lines_correct": amounts_ok,
        "no_other_rows_changed": unchanged,
    }
