"""Recompute the compliance sweep from the initial state and compare protocols, memberships, log and answer."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import date

from envs.taskkit import answer_field

AS_OF = date(2024, 7, 1)
WITHDRAWN = ("NovaLearn", "2023-03-01", "2023-05-31")  # memo of 12 June 2024


def expected(env) -> tuple[set[str], dict[tuple[str, str], str], set[str]]:
    """(protocols to expire, {(protocol, researcher): 'CODE,CODE'} to suspend, protocols to suspend)."""
    req = json.loads(env.read_text("ethics/training_requirements.json"))
    counts_as: dict[str, str] = {}
    for r in csv.DictReader(io.StringIO(env.read_text("ethics/course_equivalences.csv"))):
        if r["counts_as"].strip():
            counts_as[r["course_code"]] = r["counts_as"].strip()
    current: dict[str, set[str]] = {}
    for t in env.query("select * from training_records"):
        code = counts_as.get(t["course_code"], t["course_code"])
        years = req["validity_years"].get(code)
        if years is None or t["score"] < req["pass_mark"]:
            continue
        if t["provider"] == WITHDRAWN[0] and WITHDRAWN[1] <= t["completed_on"] <= WITHDRAWN[2]:
            continue
        if t["completed_on"] >= AS_OF.replace(year=AS_OF.year - years).isoformat():
            current.setdefault(t["researcher_id"], set()).add(code)
    expire: set[str] = set()
    suspend_members: dict[tuple[str, str], str] = {}
    suspend_protocols: set[str] = set()
    rules = req["human"]
    for p in env.query("select * from protocols where type = 'human' and status = 'active' order by id"):
        if p["expires_on"] < AS_OF.isoformat():
            expire.add(p["id"])
            continue
        for m in env.query("select * from protocol_members where protocol_id = ? and status = 'active'", (p["id"],)):
            need = set(rules["all_members"]) | set(rules["by_role"].get(m["role"], [])) | \
                set(rules["by_risk_level"].get(p["risk_level"], []))
            missing = need - current.get(m["researcher_id"], set())
            if missing:
                suspend_members[(p["id"], m["researcher_id"])] = ",".join(sorted(missing))
                if m["role"] == "PI":
                    suspend_protocols.add(p["id"])
    return expire, suspend_members, suspend_protocols


def verify(ctx) -> dict[str, bool]:
    init, fin = ctx.initial, ctx.final
    expire, susp_m, susp_p = expected(init)
    ip = {r["id"]: r for r in init.query("select * from protocols")}
    fp = {r["id"]: r for r in fin.query("select * from protocols")}
    want_status = {k: ("expired" if k in expire else "suspended" if k in susp_p else v["status"]) for k, v in ip.items()}
    protocols_ok = set(ip) == set(fp) and all(
        fp[k]["status"] == want_status[k] and {**fp[k], "status": 0} == {**v, "status": 0} for k, v in ip.items())
    im = {r["id"]: r for r in init.query("select * from protocol_members")}
    fm = {r["id"]: r for r in fin.query("select * from protocol_members")}
    members_ok = set(im) == set(fm) and all(
        fm[k]["status"] == ("suspended" if (v["protocol_id"], v["researcher_id"]) in susp_m else v["status"])
        and {**fm[k], "status": 0} == {**v, "status": 0} for k, v in im.items())
    il = {r["id"]: r for r in init.query("select * from compliance_log")}
    fl = {r["id"]: r for r in fin.query("select * from compliance_log")}
    new = [r for k, r in fl.items() if k not in il]
    log_members = sorted((r["protocol_id"], r["researcher_id"], r["detail"]) for r in new
                         if r["action"] == "member_suspended")
    log_ok = all(fl.get(k) == v for k, v in il.items()) and \
        log_members == sorted((p, r, d) for (p, r), d in susp_m.items()) and \
        sorted(r["protocol_id"] for r in new if r["action"] == "protocol_suspended") == sorted(susp_p) and \
        sorted(r["protocol_id"] for r in new if r["action"] == "protocol_expired") == sorted(expire) and \
        len(new) == len(susp_m) + len(susp_p) + len(expire)
    static_ok = all(init.query(f"select * from {t} order by 1") == fin.query(f"select * from {t} order by 1")
                    for t in ("researchers", "training_records"))
    raw = answer_field(ctx.answer, "ANSWER")
    got = None if raw is None else sorted({x.upper() for x in re.findall(r"[A-Za-z]+-\d{4}-\d+", raw)})
    return {
        "answer_lists_suspended_protocols": got is not None and got == sorted(susp_p) and
        (bool(susp_p) or raw.strip().lower() == "none"),
        "lapsed_protocols_expired_and_pi_protocols_suspended": protocols_ok,
        "non_compliant_members_suspended": members_ok,
        "compliance_log_records_exact_actions_and_missing_courses": log_ok,
        "researchers_and_training_untouched": static_ok,
    }
