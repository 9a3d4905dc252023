# ruff: noqa: F821
# WRONG: matches subscriptions on service only, ignoring the incident's regions.
import csv
import io
import re
from datetime import datetime, timedelta


def fetch(name, **kw):
    out, p = [], 1
    while p:
        r = tools[name](**kw, page_no=p)
        out += r["items"]
        p = r["next_page"]
    return out


paths = [f["path"] for f in fetch("list_files")]
terms = tools["read_file"](path="legal/sla_terms.md")["content"]
bands = list(csv.DictReader(io.StringIO(tools["read_file"](path="legal/sla_credit_schedule.csv")["content"])))
print(len(paths), "files;", len(bands), "schedule rows")
print(terms[terms.index("## 2."):terms.index("## 3.")].strip()[:300])

# %%
claims = fetch("list_tickets", category="sla_credit", status="open")
cited = sorted({i for t in claims for i in re.findall(r"INC-\d{4}-\d{4}", t["subject"] + " " + t["body"])})
incidents = {}
for iid in cited:
    if f"incidents/{iid}.md" not in paths:
        continue
    text = tools["read_file"](path=f"incidents/{iid}.md")["content"]
    f = dict(re.findall(r"\| (.+?) \| (.*?) \|", text))
    s, e = (datetime.strptime(f[k], "%Y-%m-%d %H:%M") for k in ("Start (UTC)", "End (UTC)"))
    incidents[iid] = {"service": f["Service"], "regions": f["Regions"].split(", "), "start": s, "end": e,
                      "minutes": (e - s).total_seconds() / 60, "impact": f["Customer impact"] == "Yes"}
print(len(claims), "open claims citing", len(cited), "incidents;",
      sum(1 for i in incidents.values() if i["impact"]), "with customer impact")

accounts = {a["account_id"]: a for a in fetch("list_accounts")}
subs = {}
for svc in sorted({i["service"] for i in incidents.values() if i["impact"]}):
    for s in fetch("list_subscriptions", service=svc):
        subs.setdefault(s["account_id"], {})[s["subscription_id"]] = s
used = {}
for c in fetch("list_credits", period="2025-05"):
    used[c["account_id"]] = used.get(c["account_id"], 0) + c["amount_usd"]
print(len(accounts), "accounts;", sum(len(v) for v in subs.values()), "candidate subscriptions;", len(used),
      "accounts with May credits")

# %%
total, n_credit, n_deny = 0.0, 0, 0
for t in sorted(claims, key=lambda t: (t["created_at"], t["ticket_id"])):
    created = datetime.strptime(t["created_at"], "%Y-%m-%d %H:%M")
    ids = set(re.findall(r"INC-\d{4}-\d{4}", t["subject"] + " " + t["body"]))
    good = [incidents[i] for i in ids if i in incidents and incidents[i]["impact"]
            and created <= incidents[i]["end"] + timedelta(days=30)]
    acct = accounts[t["account_id"]]
    amount = 0.0
    for s in subs.get(t["account_id"], {}).values():
        mins = sum(i["minutes"] for i in good if i["service"] == s["service"]
                   and s["start_date"] <= i["start"].strftime("%Y-%m-%d")
                   and (s["end_date"] is None or s["end_date"] >= i["start"].strftime("%Y-%m-%d")))
        if mins:
            pct = next(float(b["credit_pct"]) for b in bands if b["service"] == s["service"]
                       and float(b["min_minutes"]) <= mins <= float(b["max_minutes"]))
            if acct["contract_type"] == "enterprise_msa":
                pct = min(100.0, 2 * pct)
            amount += round(s["monthly_fee"] * pct / 100, 2)
    amount = round(amount, 2)
    room = round(0.30 * acct["mrr_usd"] - used.get(acct["account_id"], 0), 2)
    if amount > 0 and room > 0:
        credit = min(amount, room)
        tools["issue_credit"](ticket_id=t["ticket_id"], amount_usd=credit, period="2025-05", note="SLA credit")
        used[acct["account_id"]] = used.get(acct["account_id"], 0) + credit
        total += credit
        n_credit += 1
    else:
        tools["deny_claim"](ticket_id=t["ticket_id"], reason="cap_reached" if amount > 0 else "not_eligible")
        n_deny += 1
print(n_credit, "credited,", n_deny, "denied; total", round(total, 2))
final_answer = f"ANSWER: {total:.2f}"
