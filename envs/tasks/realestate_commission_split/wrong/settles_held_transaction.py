# ruff: noqa: F821
# WRONG: ignores the compliance hold in the batch memo and settles every February closing.
import json
import re
from datetime import date


def fetch(name, **kw):
    out, p = [], 1
    while p:
        r = tools[name](**kw, page_no=p)
        out += r["items"]
        p = r["next_page"]
    return out


paths = [f["path"] for f in fetch("list_files")]
plans = tools["read_file"](path="compensation/commission_plans.md")["content"]
memo = tools["read_file"](path="memos/2025-03_payout_batch.md")["content"]
teams = json.loads(tools["read_file"](path="compensation/team_agreements.json")["content"])["teams"]
held = set()
print(len(paths), "files; held:", held, "; teams:", {k: (v["lead_agent_id"], v["override_pct"]) for k, v in teams.items()})
print(plans[plans.index("| Plan"):][:420])

# %%
letters = {}
for p in paths:
    if p.startswith("referrals/"):
        text = tools["read_file"](path=p)["content"]
        prop = re.search(r"Property:\s*(.+), CO", text).group(1)
        letters[prop.strip()] = (re.search(r"Referring broker:\s*(.+)", text).group(1).strip(),
                                 float(re.search(r"fee of ([\d.]+)%", text).group(1)),
                                 re.search(r"valid through (\d{4}-\d{2}-\d{2})", text).group(1))
batch = [t for t in fetch("list_transactions", close_from="2025-02-01", close_to="2025-02-28", status="closed",
                          settled=False) if t["txn_id"] not in held]
shares = {}
for r in fetch("list_transaction_agents", close_from="2025-02-01", close_to="2025-02-28"):
    shares.setdefault(r["txn_id"], []).append(r)
agents = {a["agent_id"]: a for a in fetch("list_agents")}


def cap_start(hire):
    h = date.fromisoformat(hire)
    s = date(2025, h.month, min(h.day, 28) if h.month == 2 else h.day)
    return s if s <= date(2025, 3, 3) else date(2024, s.month, s.day)


used = {}
for p in fetch("list_payouts", kind="company", paid_from="2024-03-04"):
    if p["paid_date"] >= cap_start(agents[p["agent_id"]]["hire_date"]).isoformat():
        used[p["agent_id"]] = used.get(p["agent_id"], 0) + p["amount"]
print(len(letters), "referral letters;", len(batch), "transactions to settle;", len(used), "agents with cap-year company $")

# %%
SPLIT = {"SPLIT-70": (30, 20000), "SPLIT-80": (20, 14000)}
retained = 0.0
n_ref = 0
batch.sort(key=lambda t: (t["close_date"], t["txn_id"]))
for t in batch:
    lines = []
    gci = round(t["sale_price"] * t["commission_pct"] / 100, 2)
    ref = 0.0
    letter = letters.get(f"{t['property_address']}, {t['city']}")
    if letter and t["close_date"] <= letter[2]:
        ref = round(gci * letter[1] / 100, 2)
        lines.append({"payee": f"referral:{letter[0]}", "amount": ref})
        n_ref += 1
    net = round(gci - ref, 2)
    parts = sorted(shares[t["txn_id"]], key=lambda r: r["agent_id"])
    so_far = 0.0
    for i, part in enumerate(parts):
        gross = round(net - so_far, 2) if i == len(parts) - 1 else round(net * part["share_pct"] / 100, 2)
        so_far = round(so_far + gross, 2)
        a = agents[part["agent_id"]]
        if a["plan_code"] == "FLAT-100":
            fee = min(395.0, gross)
            lines.append({"payee": f"fee:{a['agent_id']}", "amount": fee})
            retained += fee
            rest = round(gross - fee, 2)
        else:
            pct, cap = SPLIT[a["plan_code"]]
            comp = min(round(gross * pct / 100, 2), max(0.0, round(cap - used.get(a["agent_id"], 0), 2)))
            used[a["agent_id"]] = used.get(a["agent_id"], 0) + comp
            if comp > 0:
                lines.append({"payee": f"company:{a['agent_id']}", "amount": comp})
            retained += comp
            rest = round(gross - comp, 2)
        team = teams.get(a["team_id"] or "")
        if team and team["lead_agent_id"] != a["agent_id"]:
            over = round(rest * team["override_pct"] / 100, 2)
            lines.append({"payee": f"lead:{team['lead_agent_id']}", "amount": over})
            rest = round(rest - over, 2)
        lines.append({"payee": f"agent:{a['agent_id']}", "amount": rest})
    tools["post_settlement"](txn_id=t["txn_id"], lines=[ln for ln in lines if ln["amount"] > 0])
print(len(batch), "settled;", n_ref, "with referral fees; company retained", round(retained, 2))
final_answer = f"ANSWER: {retained:.2f}"
