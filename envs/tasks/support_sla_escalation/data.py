"""SaaS support desk: customers, agents, tickets, ticket messages, escalations.

SLA targets, regional business hours, holidays, the escalation matrix and the review scope live only in
workspace files.
"""

from __future__ import annotations

import csv
import io
import json
import random
import shutil
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

from envs.taskkit import Scale

REGIONS = {"NA": (14, 22), "EU": (7, 15), "UK": (8, 16), "APAC": (1, 9)}
PLANS = ["starter", "business", "enterprise"]
PRIORITIES = ["low", "normal", "high", "urgent"]
CUTOFF = datetime(2025, 6, 2, 9, 0)
SUBJECTS = [
    "Label printing fails for {c} shipments", "Webhook {n} returning 500 since this morning",
    "Rates for {c} look wrong after update", "Cannot add new warehouse location", "Invoice #{n} shows double charge",
    "Tracking numbers not syncing to Shopify", "API key rotation broke our integration",
    "Batch of {n} labels stuck in 'processing'", "Customs form missing HS codes", "SSO login loop for our admins",
    "Need to change billing contact", "Return labels not generated for {c}", "Address validation rejects PO boxes",
    "CSV import times out above {n} rows", "Pickup scheduling unavailable for {c}", "Insurance claim status?",
    "Dashboard very slow this week", "Question about rate limits", "Duplicate orders created via API",
    "Carrier account disconnected ({c})",
]
CARRIERS = ["UPS", "FedEx", "DHL Express", "USPS", "Royal Mail", "DPD", "Australia Post", "Canada Post", "GLS"]
CUSTOMER_LINES = ["Hi team, this is blocking our afternoon pickup.", "Could you take a look asap?",
                  "Attaching screenshots. Started after your release.", "We have a customer waiting on this.",
                  "Please advise, thanks.", "Is there a known incident?", "This happened again today."]
AGENT_LINES = ["Thanks for reaching out — I'm looking into this now.", "I've reproduced the issue and raised it "
               "with engineering.", "Could you share the shipment IDs affected?", "This should be resolved now; "
               "please retry.", "We've applied a fix on our side, can you confirm?", "Good news: the carrier "
               "has restored the connection."]
INTERNAL_LINES = ["Checked logs, looks like carrier timeout.", "Pinging on-call about this.", "Customer is on a "
                  "renewal call next week, handle with care.", "Possible dup of an earlier ticket.",
                  "Assigning to integrations pod."]
COMPANIES_A = ["Northwind", "Bluefin", "Copperleaf", "Driftwood", "Evergreen", "Foxglove", "Granite", "Harbor",
               "Ironbark", "Juniper", "Kestrel", "Lumen", "Maple", "Nimbus", "Oakridge", "Pinnacle", "Quartz",
               "Redwood", "Saffron", "Tidewater", "Umber", "Vantage", "Willow", "Yarrow", "Zephyr"]
COMPANIES_B = ["Outfitters", "Supply Co", "Goods", "Apparel", "Coffee Roasters", "Botanicals", "Electronics",
               "Home", "Pet Supply", "Cycles", "Books", "Ceramics", "Nutrition", "Toys", "Audio", "Skincare"]
AGENTS = [("Mara Quist", "Tier 1"), ("Devon Achterberg", "Tier 1"), ("Lina Haddad", "Tier 1"),
          ("Tomasz Wrona", "Tier 2"), ("Keiko Arai", "Tier 2"), ("Ruairi Doyle", "Tier 1"),
          ("Priyanka Das", "Integrations"), ("Felipe Montoya", "Integrations"), ("Sade Ogun", "Tier 2"),
          ("Grete Lund", "Billing"), ("Owen Pryce", "Tier 1"), ("Hana Kobayashi", "APAC"),
          ("Jack Whitaker", "APAC"), ("Elif Kaya", "EU"), ("Bastien Roux", "EU")]


def _fmt(d: datetime) -> str:
    return d.strftime("%Y-%m-%d %H:%M")


def _clear(root: Path) -> None:
    db = root / "db.sqlite"
    if db.exists():
        db.unlink()
    ws = root / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    for p in sorted(ws.iterdir()):
        shutil.rmtree(p) if p.is_dir() else p.unlink()


class _Gen:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.customers: list[dict] = []
        self.tickets: list[dict] = []
        self.messages: list[tuple] = []
        self.escalations: list[tuple] = []
        self.names: set[str] = set()

    def customer(self, plan: str | None = None, region: str | None = None) -> dict:
        rng = self.rng
        while True:
            name = f"{rng.choice(COMPANIES_A)} {rng.choice(COMPANIES_B)}"
            if name not in self.names:
                self.names.add(name)
                break
            if len(self.names) > 300:
                name = f"{name} {rng.choice(['Ltd', 'Inc', 'GmbH', 'Pty', 'LLC', 'BV', 'AB'])} {len(self.names)}"
                self.names.add(name)
                break
        plan = plan or rng.choices(PLANS, weights=(50, 35, 15))[0]
        region = region or rng.choices(list(REGIONS), weights=(40, 25, 15, 20))[0]
        c = {"customer_id": 10001 + len(self.customers), "company": name, "plan": plan, "region": region,
             "csm_email": f"csm.{rng.choice(['ana', 'ben', 'chloe', 'dev', 'erin'])}@parcelwise.example"
             if plan == "enterprise" else None,
             "since": f"20{rng.randint(19, 24)}-{rng.randint(1, 12):02d}-01"}
        self.customers.append(c)
        return c

    def ticket(self, cust: dict, created: datetime, priority: str, status: str, subject: str | None = None,
               channel: str | None = None) -> dict:
        rng = self.rng
        subject = subject or rng.choice(SUBJECTS).format(c=rng.choice(CARRIERS), n=rng.randint(12, 9800))
        t = {"cust": cust, "created": created, "priority": priority, "status": status, "subject": subject,
             "channel": channel or rng.choice(["email", "email", "web", "chat"]),
             "assignee": rng.randint(1, len(AGENTS)), "tie": rng.random(), "ticket_id": None, "msgs": []}
        self.tickets.append(t)
        return t

    def msg(self, t: dict, when: datetime, author: str, internal: int = 0, body: str | None = None) -> None:
        rng = self.rng
        if body is None:
            body = {"customer": rng.choice(CUSTOMER_LINES), "agent": rng.choice(AGENT_LINES),
                    "system": "Auto-reply: we received your request and will get back to you shortly."}[author]
            if internal:
                body = rng.choice(INTERNAL_LINES)
        author_id = t["assignee"] if author == "agent" else None
        t["msgs"].append((when, author, author_id, internal, body, rng.random()))


def _created(rng: random.Random, region: str, day: datetime) -> datetime:
    lo, hi = REGIONS[region]
    if rng.random() < 0.75:
        h = rng.randint(lo, hi - 1)
    else:
        h = rng.randint(0, 23)
    return day + timedelta(hours=h, minutes=rng.randint(0, 59))


def build(root: Path, scale: Scale, seed: int) -> None:
    rng = random.Random(seed)
    _clear(root)
    g = _Gen(rng)
    for _ in range(scale.n_rows(90)):
        g.customer()

    # ---- random tickets: weeks 21 and 22 plus early 2025-06-02
    start = datetime(2025, 5, 19)
    for _ in range(scale.n_rows(165)):
        cust = rng.choice(g.customers)
        day = start + timedelta(days=rng.randint(0, 13))
        if rng.random() < 0.03:
            day = datetime(2025, 6, 2)
        created = _created(rng, cust["region"], day)
        if created >= CUTOFF:
            created = CUTOFF - timedelta(minutes=rng.randint(30, 500))
        prio = rng.choices(PRIORITIES, weights=(20, 50, 22, 8))[0]
        r = rng.random()
        status = "spam" if r < 0.03 else ("merged" if r < 0.05 else "open")
        t = g.ticket(cust, created, prio, status)
        g.msg(t, created, "customer")
        if t["channel"] != "chat":
            g.msg(t, created + timedelta(minutes=1), "system")
        if status in ("spam", "merged"):
            continue
        bucket = rng.random()
        if bucket < 0.4:
            delay = rng.randint(10, 120)
        elif bucket < 0.7:
            delay = rng.randint(120, 600)
        elif bucket < 0.9:
            delay = rng.randint(600, 1800)
        else:
            delay = rng.randint(1800, 4800)
        reply = created + timedelta(minutes=delay)
        if rng.random() < 0.25:
            g.msg(t, created + timedelta(minutes=rng.randint(2, max(3, delay - 1))), "agent", internal=1)
        if reply >= CUTOFF:
            t["status"] = "open"
            continue
        g.msg(t, reply, "agent")
        when = reply
        for _ in range(rng.randint(0, 3)):
            when += timedelta(minutes=rng.randint(20, 900))
            if when >= CUTOFF:
                break
            g.msg(t, when, rng.choice(["customer", "agent"]))
        t["status"] = rng.choice(["pending", "solved", "solved", "closed", "open"])
        if created >= datetime(2025, 5, 26) and rng.random() < 0.05:
            g.escalations.append((t, rng.choice(["L1", "L1", "L2"]), "Customer requested escalation",
                                  rng.choice(["team_lead", "csm"]), reply + timedelta(minutes=rng.randint(5, 300))))

    # ---- fixed tickets present at every scale
    d = lambda s: datetime.strptime(s, "%Y-%m-%d %H:%M")  # noqa: E731
    ent_na, ent_eu, ent_apac = g.customer("enterprise", "NA"), g.customer("enterprise", "EU"), \
        g.customer("enterprise", "APAC")
    biz_na = g.customer("business", "NA")
    t = g.ticket(ent_na, d("2025-05-31 10:00"), "urgent", "solved", "Entire label API down - all shipments blocked",
                 "chat")
    g.msg(t, t["created"], "customer")
    g.msg(t, d("2025-05-31 11:30"), "agent")
    t = g.ticket(biz_na, d("2025-05-26 15:00"), "normal", "solved", "Need bulk address update for Memorial Day sale")
    g.msg(t, t["created"], "customer")
    g.msg(t, t["created"] + timedelta(minutes=1), "system")
    g.msg(t, d("2025-05-27 20:00"), "agent")
    t = g.ticket(ent_eu, d("2025-05-30 08:00"), "high", "pending", "DHL Express manifests rejected")
    g.msg(t, t["created"], "customer")
    g.msg(t, d("2025-05-30 08:01"), "system")
    g.msg(t, d("2025-05-30 08:20"), "agent", internal=1, body="Looks like the DHL certificate expired, checking.")
    g.msg(t, d("2025-05-30 11:30"), "agent")
    t = g.ticket(ent_eu, d("2025-05-27 08:00"), "normal", "solved", "Monthly volume report missing columns")
    g.msg(t, t["created"], "customer")
    g.msg(t, d("2025-05-28 10:00"), "agent")
    g.escalations.append((t, "L2", "Escalated by CSM during QBR", "csm", d("2025-05-28 09:00")))
    t = g.ticket(biz_na, d("2025-05-28 15:00"), "high", "solved", "Pickup scheduling fails for FedEx Ground")
    g.msg(t, t["created"], "customer")
    g.msg(t, d("2025-05-29 21:00"), "agent")
    g.escalations.append((t, "L1", "Customer requested escalation", "team_lead", d("2025-05-29 15:00")))
    t = g.ticket(ent_apac, d("2025-05-29 02:00"), "high", "open", "Australia Post rates missing surcharge")
    g.msg(t, t["created"], "customer")
    g.msg(t, d("2025-05-30 03:00"), "agent")
    g.escalations.append((t, "L1", "Customer requested escalation", "team_lead", d("2025-05-29 07:00")))
    t = g.ticket(ent_na, d("2025-05-29 18:00"), "urgent", "spam", "RE: RE: invoice attached")
    g.msg(t, t["created"], "customer")

    # ---- older escalations (week 21 and before) for realism
    for _ in range(scale.n_rows(6)):
        t = rng.choice(g.tickets)
        if t["created"] < datetime(2025, 5, 26) and t["status"] not in ("spam", "merged"):
            g.escalations.append((t, rng.choice(["L1", "L2"]), "SLA breach (week 21 review)",
                                  rng.choice(["team_lead", "csm"]), datetime(2025, 5, 26, 9, 0)))

    # ---- ids and rows
    g.tickets.sort(key=lambda t: (t["created"], t["tie"]))
    for i, t in enumerate(g.tickets):
        t["ticket_id"] = 48001 + i
    msgs = sorted(((m[0], m[5], t["ticket_id"], m) for t in g.tickets for m in t["msgs"]), key=lambda x: (x[0], x[1]))
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript("""
        create table customers(customer_id integer primary key, company text, plan text, region text,
            csm_email text, customer_since text);
        create table agents(agent_id integer primary key, name text, team text, email text);
        create table tickets(ticket_id integer primary key, customer_id integer, subject text, priority text,
            status text, channel text, created_at text, assignee_id integer);
        create table ticket_messages(message_id integer primary key, ticket_id integer, author_type text,
            author_id integer, is_internal integer, created_at text, body text);
        create table escalations(escalation_id integer primary key autoincrement, ticket_id integer, level text,
            reason text, notify text, created_at text);
    """)
    con.executemany("insert into customers values (?,?,?,?,?,?)",
                    [(c["customer_id"], c["company"], c["plan"], c["region"], c["csm_email"], c["since"])
                     for c in g.customers])
    con.executemany("insert into agents values (?,?,?,?)",
                    [(i + 1, n, team, n.lower().replace(" ", ".") + "@parcelwise.example")
                     for i, (n, team) in enumerate(AGENTS)])
    con.executemany("insert into tickets values (?,?,?,?,?,?,?,?)",
                    [(t["ticket_id"], t["cust"]["customer_id"], t["subject"], t["priority"], t["status"],
                      t["channel"], _fmt(t["created"]), t["assignee"]) for t in g.tickets])
    con.executemany("insert into ticket_messages values (?,?,?,?,?,?,?)",
                    [(200001 + i, tid, m[1], m[2], m[3], _fmt(m[0]), m[4]) for i, (_, _, tid, m) in enumerate(msgs)])
    esc = sorted(g.escalations, key=lambda e: (e[4], e[0]["ticket_id"]))
    con.executemany("insert into escalations(ticket_id, level, reason, notify, created_at) values (?,?,?,?,?)",
                    [(e[0]["ticket_id"], e[1], e[2], e[3], _fmt(e[4])) for e in esc])
    con.commit()
    con.close()
    _files(root / "workspace", scale, rng)


# ----------------------------------------------------------------------------------------------- files

POLICY = """# Support SLA policy — first response

Parcelwise Customer Support · version 2025.2 · effective 2025-04-01

## First-response targets
Targets are in **business hours** of the customer's region, except where noted.

| Plan \\ priority | urgent | high | normal | low |
|---|---|---|---|---|
| enterprise | 1 h (**24×7 calendar hours**) | 2 h | 4 h | 8 h |
| business | 2 h | 4 h | 8 h | 16 h |
| starter | 4 h | 8 h | 24 h | 48 h |

## Business hours
Support hours are set per customer region and are stated in **UTC**, Monday to Friday (UTC dates):

| Region | Business hours (UTC) |
|---|---|
| NA | 14:00 – 22:00 |
| EU | 07:00 – 15:00 |
| UK | 08:00 – 16:00 |
| APAC | 01:00 – 09:00 |

The SLA clock does not run on weekends or on the region's public holidays (`sla/holidays_2025.csv`;
a holiday stops the clock for that whole UTC date for customers of that region).

## What counts as the first response
The first response is the first message on the ticket written by an **agent** that is **visible to the
customer**. System auto-replies (author type `system`) and internal notes (`is_internal` = 1) do not count.

## Breach
A ticket breaches when the SLA-clock time from `created_at` to the first response is **more than** the
target. A ticket with no first response yet breaches if the SLA-clock time from `created_at` to the review
cutoff is already more than the target.
"""

MATRIX = {
    "version": "2025-04",
    "applies_to": "first-response SLA breaches found in the weekly review",
    "on_first_response_breach": {
        "enterprise": {"action": "escalate", "level": "L2", "notify": "csm"},
        "business": {"action": "escalate", "level": "L1", "notify": "team_lead"},
        "starter": {"action": "none", "note": "count only; reviewed in the monthly quality meeting"},
    },
    "level_order": ["L1", "L2"],
    "skip_if_ticket_already_has_escalation_at_or_above_level": True,
    "reason_text": "First-response SLA breach (weekly review)",
}

REVIEW = """# Weekly SLA review — 2025-W22

Owner: Support Operations · run on 2025-06-02

## Scope
Tickets **created** from **2025-05-26 00:00 to 2025-06-01 23:59 UTC**. Leave out tickets with status `spam`
or `merged` — they are not customer requests.

## Review cutoff
The review is taken at **2025-06-02 09:00 UTC**: tickets that still have no first response are measured up to
that moment.

## Steps
1. Apply the first-response SLA policy (`sla/sla_policy.md`) to every ticket in scope.
2. For every breach, act according to `sla/escalation_matrix.json`.
3. Report the number of breached tickets per plan (enterprise, business, starter).
"""

HOLIDAYS = [
    ("2025-01-01", "NA", "New Year's Day"), ("2025-01-20", "NA", "Martin Luther King Jr. Day"),
    ("2025-02-17", "NA", "Presidents' Day"), ("2025-05-26", "NA", "Memorial Day"),
    ("2025-06-19", "NA", "Juneteenth"), ("2025-07-04", "NA", "Independence Day"), ("2025-09-01", "NA", "Labor Day"),
    ("2025-11-27", "NA", "Thanksgiving"), ("2025-12-25", "NA", "Christmas Day"),
    ("2025-01-01", "UK", "New Year's Day"), ("2025-04-18", "UK", "Good Friday"), ("2025-04-21", "UK", "Easter Monday"),
    ("2025-05-05", "UK", "Early May bank holiday"), ("2025-05-26", "UK", "Spring bank holiday"),
    ("2025-08-25", "UK", "Summer bank holiday"), ("2025-12-25", "UK", "Christmas Day"),
    ("2025-12-26", "UK", "Boxing Day"), ("2025-01-01", "EU", "New Year's Day"), ("2025-04-18", "EU", "Good Friday"),
    ("2025-04-21", "EU", "Easter Monday"), ("2025-05-01", "EU", "Labour Day"), ("2025-05-29", "EU", "Ascension Day"),
    ("2025-06-09", "EU", "Whit Monday"), ("2025-12-25", "EU", "Christmas Day"), ("2025-12-26", "EU", "St Stephen's Day"),
    ("2025-01-01", "APAC", "New Year's Day"), ("2025-01-29", "APAC", "Lunar New Year"),
    ("2025-01-30", "APAC", "Lunar New Year (2nd day)"), ("2025-04-18", "APAC", "Good Friday"),
    ("2025-04-25", "APAC", "Anzac Day"), ("2025-05-01", "APAC", "Labour Day"),
    ("2025-05-31", "APAC", "Dragon Boat Festival"), ("2025-12-25", "APAC", "Christmas Day"),
]

SLA_NOISE = [
    ("sla/sla_policy_2024.md", "# Support SLA policy — 2024 (SUPERSEDED)\n\nIn 2024 all regions used 09:00-17:00 "
     "UTC business hours and enterprise urgent tickets were measured in business hours. Replaced on 2025-04-01.\n"),
    ("sla/holidays_2024.csv", "date,region,name\n2024-12-25,NA,Christmas Day\n2024-12-26,UK,Boxing Day\n"
     "2024-05-27,NA,Memorial Day\n2024-05-09,EU,Ascension Day\n"),
    ("sla/resolution_targets.md", "# Resolution targets\n\nResolution time is tracked monthly and is not part of "
     "the weekly first-response review.\n"),
    ("sla/csat_survey.md", "# CSAT survey\n\nSent 24h after a ticket is solved.\n"),
    ("sla/chat_concurrency.md", "# Chat concurrency\n\nAgents handle at most 3 concurrent chats.\n"),
    ("sla/escalation_matrix_2024.json", json.dumps({"version": "2024-01", "note": "SUPERSEDED",
                                                    "on_first_response_breach": {"enterprise": {"level": "L1"}}},
                                                   indent=2) + "\n"),
    ("sla/priority_definitions.md", "# Priority definitions\n\nUrgent: production down. High: major feature "
     "impaired. Normal: question or minor bug. Low: feedback.\n"),
    ("sla/on_call.md", "# On-call\n\nEngineering on-call is paged for urgent tickets only.\n"),
    ("sla/macros.md", "# Macros\n\nUse the 'first touch' macro for the first public reply.\n"),
    ("sla/language_support.md", "# Language support\n\nEnglish, German, French and Japanese.\n"),
    ("sla/vip_list_process.md", "# VIP list\n\nVIP handling is a CSM process and does not change SLA targets.\n"),
]

KB = ["Connecting a UPS account", "Rotating API keys", "Setting up webhooks", "Batch label printing",
      "Customs forms and HS codes", "Return labels", "Address validation rules", "Rate shopping",
      "Shopify sync troubleshooting", "SSO with Okta"]
TEAM = ["roster_2025-W22.md", "roster_2025-W21.md", "roster_2025-W20.md", "training_schedule.md",
        "shift_swaps.md", "team_contacts.md", "holiday_coverage_plan.md"]


def _write(ws: Path, rel: str, text: str) -> None:
    p = ws / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def _files(ws: Path, scale: Scale, rng: random.Random) -> None:
    _write(ws, "sla/sla_policy.md", POLICY)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("date", "region", "name"))
    for row in HOLIDAYS:
        w.writerow(row)
    _write(ws, "sla/holidays_2025.csv", buf.getvalue())
    _write(ws, "sla/escalation_matrix.json", json.dumps(MATRIX, indent=2) + "\n")
    for rel, text in SLA_NOISE[: scale.n_files(4) - 3]:
        _write(ws, rel, text)
    _write(ws, "reviews/review_2025-W22.md", REVIEW)
    for i in range(scale.n_files(3) - 1):
        wk = 21 - i
        _write(ws, f"reviews/review_2025-W{wk:02d}.md",
               f"# Weekly SLA review — 2025-W{wk:02d} (COMPLETED)\n\nBreaches: enterprise {rng.randint(0, 4)}, "
               f"business {rng.randint(2, 12)}, starter {rng.randint(5, 25)}. Escalations filed per matrix.\n")
    for title in KB[: scale.n_files(3)]:
        slug = title.lower().replace(" ", "_").replace("/", "_")
        steps = rng.sample(["Open Settings > Integrations.", "Confirm the account is active with the carrier.",
                            "Regenerate the credentials and paste them in.", "Run a test label in sandbox mode.",
                            "Check the webhook delivery log for 4xx/5xx responses.", "Clear the cached rates.",
                            "Ask the customer for a HAR file if the issue persists.", "Escalate to Integrations with "
                            "the shipment IDs."], 4)
        body = "\n".join(f"{i}. {st}" for i, st in enumerate(steps, 1))
        _write(ws, f"kb/{slug}.md", f"# {title}\n\nAudience: support agents · last updated 2025-0{rng.randint(1, 5)}-"
               f"1{rng.randint(0, 9)}\n\n## Steps\n{body}\n\nThis article does not change SLA targets.\n")
    for name in TEAM[: scale.n_files(2)]:
        rows = "\n".join(f"| {n} | {team} | {rng.choice(['early', 'late', 'APAC', 'EU'])} |"
                         for n, team in rng.sample(AGENTS, 6))
        _write(ws, f"team/{name}", f"# {name.removesuffix('.md').replace('_', ' ').title()}\n\n| Agent | Team | Shift |"
               f"\n|---|---|---|\n{rows}\n")
