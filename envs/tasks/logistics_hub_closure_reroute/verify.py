"""Verifier: replay the closure playbook (DEN, 2025-11-18..20 per the final advisory) on the initial database with
the published matrix and spare capacity, then compare stops, shipments and the reported summary."""

from __future__ import annotations

import csv
import io
import json
import re

from envs.taskkit import VerifyContext, answer_field

CLOSED, FIRST, LAST = "DEN", "2025-11-18", "2025-11-20"
RANK = {"critical": 0, "express": 1, "standard": 2, "economy": 3}


def expected_plan(env) -> dict[int, tuple]:
    """shipment_id -> ('reroute', stop_id, hub, pallets) | ('hold', reason)."""
    matrix = json.loads(env.read_text("network/reroute_matrix.json"))["alternates"][CLOSED]
    spare, hazmat_ok, cold_ok = {}, {}, {}
    for r in csv.DictReader(io.StringIO(env.read_text("network/hub_spare_capacity_2025-11.csv"))):
        spare[(r["hub"], r["date"])] = int(r["spare_pallets"])
        hazmat_ok[r["hub"]] = r["hazmat_certified"] == "yes"
        cold_ok[r["hub"]] = r["cold_dock"] == "yes"
    rows = env.query("select s.*, r.stop_id, r.planned_date from shipments s join route_stops r"
                     " on r.shipment_id = s.shipment_id where s.status in ('scheduled', 'in_transit')"
                     " and r.hub_code = ? and r.status = 'planned' and r.planned_date between ? and ?",
                     (CLOSED, FIRST, LAST))
    rows.sort(key=lambda s: (RANK[s["service_level"]], s["promised_date"], s["shipment_id"]))
    plan: dict[int, tuple] = {}
    for s in rows:
        if s["service_level"] == "economy":
            plan[s["shipment_id"]] = ("hold", "economy_deferred")
            continue
        for hub in matrix[s["dest_region"]]:
            key = (hub, s["planned_date"])
            if spare.get(key, 0) >= s["pallets"] and (not s["hazmat"] or hazmat_ok.get(hub)) and \
                    (not s["temp_controlled"] or cold_ok.get(hub)):
                spare[key] -= s["pallets"]
                plan[s["shipment_id"]] = ("reroute", s["stop_id"], hub, s["pallets"])
                break
        else:
            plan[s["shipment_id"]] = ("hold", "no_alternate")
    return plan


def verify(ctx: VerifyContext) -> dict[str, bool]:
    plan = expected_plan(ctx.initial)
    init_s = {r["shipment_id"]: r for r in ctx.initial.query("select * from shipments")}
    fin_s = {r["shipment_id"]: r for r in ctx.final.query("select * from shipments")}
    init_r = {r["stop_id"]: r for r in ctx.initial.query("select * from route_stops")}
    fin_r = {r["stop_id"]: r for r in ctx.final.query("select * from route_stops")}
    rerouted_stops = {p[1]: p[2] for p in plan.values() if p[0] == "reroute"}

    reroute_ok = hold_ok = bool(plan) and set(init_r) == set(fin_r) and set(init_s) == set(fin_s)
    for sid, p in plan.items():
        if p[0] == "reroute":
            f = fin_r.get(p[1])
            if f is None or f["hub_code"] != p[2] or fin_s.get(sid) != init_s[sid]:
                reroute_ok = False
        else:
            f = fin_s.get(sid)
            if f is None or f["status"] != "on_hold" or f["hold_reason"] != p[1]:
                hold_ok = False
            elif any(fin_r.get(stop) != row for stop, row in init_r.items() if row["shipment_id"] == sid):
                hold_ok = False

    held = {sid for sid, p in plan.items() if p[0] == "hold"}
    others_ok = set(init_s) == set(fin_s) and set(init_r) == set(fin_r)
    others_ok = others_ok and all(fin_s[sid] == row for sid, row in init_s.items() if sid not in held)
    others_ok = others_ok and all(
        {k: v for k, v in fin_s[sid].items() if k not in ("status", "hold_reason")}
        == {k: v for k, v in init_s[sid].items() if k not in ("status", "hold_reason")} for sid in held)
    for stop, row in init_r.items():
        f = fin_r.get(stop)
        if stop in rerouted_stops:
            keep = ("shipment_id", "seq", "planned_date", "status")
            others_ok = others_ok and f is not None and all(f[k] == row[k] for k in keep)
        else:
            others_ok = others_ok and f == row
    for name, key in (("hubs", "hub_code"), ("customers", "customer_id")):
        a = {r[key]: r for r in ctx.initial.query(f"select * from {name}")}
        b = {r[key]: r for r in ctx.final.query(f"select * from {name}")}
        others_ok = others_ok and a == b

    pallets: dict[str, int] = {}
    for p in plan.values():
        if p[0] == "reroute":
            pallets[p[2]] = pallets.get(p[2], 0) + p[3]
    top = {h for h, v in pallets.items() if v == max(pallets.values())} if pallets else set()
    n_re, n_hold = sum(1 for p in plan.values() if p[0] == "reroute"), len(held)
    field = answer_field(ctx.answer, "ANSWER") or ""
    nums = [int(x) for x in re.findall(r"\b\d+\b", field)]
    codes = re.findall(r"\b[A-Z]{3}\b", field)
    answer_ok = len(nums) >= 2 and nums[0] == n_re and nums[1] == n_hold and bool(codes) and codes[0] in top
    return {
        "answer_correct": answer_ok,
        "reroutes_correct": reroute_ok,
        "holds_correct": hold_ok,
        "no_other_rows_changed": others_ok,
    }
