# ruff: noqa: F821
# WRONG: escalates every enterprise/business breach, even tickets already escalated at that
# level or higher.
import csv
import io
import json
from datetime import datetime, timedelta


def fetch(name, **kw):
    out, p = [], 1
    while p:
        r = tools[name](**kw, page_no=p)
        out += r["items"]
        p = r["next_page"]
    return out


paths = [f["path"] for f in fetch("list_files")]
review = tools["read_file"](path="reviews/review_2025-W22.md")["content"]
policy = tools["read_file"](path="sla/sla_policy.md")["content"]
matrix = json.loads(tools["read_file"](path="sla/escalation_matrix.json")["content"])
holidays = {(r["date"], r["region"]) for r in csv.DictReader(io.StringIO(
    tools["read_file"](path="sla/holidays_2025.csv")["content"]))}
print(len(paths), "files;", review[review.index("## Scope"):review.index("## Steps")].strip()[:400])
print(policy[policy.index("## First-response"):policy.index("## What counts")][:900])
print(matrix["on_first_response_breach"])

# %%
tickets = [t for t in fetch("list_tickets", created_from="2025-05-26", created_to="2025-06-01")
           if t["status"] not in ("spam", "merged")]
customers = {c["customer_id"]: c for c in fetch("list_customers")}
first = {}
for m in fetch("list_messages", author_type="agent", created_from="2025-05-26", created_to="2025-06-02 09:00"):
    if not m["is_internal"] and m["ticket_id"] not in first:
        first[m["ticket_id"]] = m["created_at"]  # messages come in created_at order
level_have = {}
for e in fetch("list_escalations"):
    level_have[e["ticket_id"]] = max(level_have.get(e["ticket_id"], ""), e["level"])
print(len(tickets), "tickets in scope;", len(first), "with an agent reply;", len(level_have), "already escalated")

# %%
TARGET = {"enterprise": (1, 2, 4, 8), "business": (2, 4, 8, 16), "starter": (4, 8, 24, 48)}
PRIO = {"urgent": 0, "high": 1, "normal": 2, "low": 3}
WINDOW = {"NA": (14, 22), "EU": (7, 15), "UK": (8, 16), "APAC": (1, 9)}
CUTOFF = datetime(2025, 6, 2, 9, 0)


def parse(s):
    return datetime.strptime(s, "%Y-%m-%d %H:%M")


def business_minutes(a, b, region):
    total, day = 0, a.replace(hour=0, minute=0)
    lo, hi = WINDOW[region]
    while day < b:
        if day.weekday() < 5 and (day.strftime("%Y-%m-%d"), region) not in holidays:
            s = max(a, day + timedelta(hours=lo))
            e = min(b, day + timedelta(hours=hi))
            total += max(0, (e - s).total_seconds() / 60)
        day += timedelta(days=1)
    return total


breaches = {"enterprise": 0, "business": 0, "starter": 0}
escalated = 0
for t in tickets:
    c = customers[t["customer_id"]]
    a = parse(t["created_at"])
    b = parse(first[t["ticket_id"]]) if t["ticket_id"] in first else CUTOFF
    if c["plan"] == "enterprise" and t["priority"] == "urgent":
        used = (b - a).total_seconds() / 60
    else:
        used = business_minutes(a, b, c["region"])
    if used <= TARGET[c["plan"]][PRIO[t["priority"]]] * 60:
        continue
    breaches[c["plan"]] += 1
    rule = matrix["on_first_response_breach"][c["plan"]]
    if rule["action"] == "escalate":
        tools["escalate_ticket"](ticket_id=t["ticket_id"], level=rule["level"], notify=rule["notify"],
                                 reason=matrix["reason_text"])
        escalated += 1
print(breaches, "escalated", escalated)
final_answer = "ANSWER: " + ", ".join(f"{k}={v}" for k, v in breaches.items())
