"""Cloud provider support: accounts, subscriptions, support tickets (incl. SLA-credit claims), issued credits.

Incident facts (postmortems), the credit schedule and the SLA terms exist only as workspace files.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

from envs.taskkit import Scale

SERVICES = {"compute": (200, 6000), "object-storage": (50, 2500), "managed-db": (300, 4000), "cdn": (100, 1500),
            "dns": (20, 150)}
REGIONS = ["us-east", "us-west", "eu-central", "ap-southeast"]
TODAY = datetime(2025, 6, 16, 9, 0)

# id, service, regions, start, end, customer impact, severity, title
INCIDENTS = [
    ("INC-2025-0488", "compute", ["us-west"], "2025-04-22 19:40", "2025-04-22 21:05", True, "SEV-2",
     "Hypervisor kernel regression caused instance restarts"),
    ("INC-2025-0509", "dns", ["global"], "2025-05-02 16:20", "2025-05-02 17:05", True, "SEV-1",
     "Authoritative DNS answered SERVFAIL for a subset of zones"),
    ("INC-2025-0517", "compute", ["us-east"], "2025-05-06 14:05", "2025-05-06 15:47", True, "SEV-2",
     "Instance launches and VPC networking degraded"),
    ("INC-2025-0523", "managed-db", ["eu-central"], "2025-05-12 08:30", "2025-05-12 08:52", True, "SEV-3",
     "Failover storm on managed PostgreSQL clusters"),
    ("INC-2025-0526", "compute", ["us-east"], "2025-05-14 09:00", "2025-05-14 09:25", True, "SEV-3",
     "Block storage attach latency made instances unresponsive"),
    ("INC-2025-0531", "object-storage", ["us-east", "us-west"], "2025-05-19 22:10", "2025-05-20 02:25", True,
     "SEV-1", "Object storage metadata service overload"),
    ("INC-2025-0538", "cdn", ["ap-southeast"], "2025-05-27 03:00", "2025-05-27 03:41", False, "SEV-4",
     "Edge health-check alarms (monitoring false positive)"),
    ("INC-2025-0544", "compute", ["eu-central", "ap-southeast"], "2025-05-29 10:15", "2025-05-29 11:05", True,
     "SEV-2", "Control-plane certificate expiry blocked API calls"),
]
FIRST = ["Ines", "Kobe", "Mirela", "Tobias", "Anjali", "Rafael", "Sunniva", "Haruto", "Olamide", "Clara", "Dmitri",
         "Esther", "Gustavo", "Hye-jin", "Ivo", "Jana", "Luca", "Maeve", "Nikolai", "Paloma", "Quentin", "Rhea"]
LAST = ["Almeida", "Brandt", "Chowdhury", "Duarte", "Engström", "Fujita", "Greaves", "Horvat", "Ivanova", "Jensen",
        "Kamara", "Lopes", "Murphy", "Nowak", "Oduya", "Petrov", "Quaresma", "Rinaldi", "Sato", "Toivonen"]
CO_A = ["Arclight", "Birchway", "Cobalt", "Delta Nine", "Emberly", "Fathom", "Glasshouse", "Helix", "Indigo",
        "Jetstream", "Keystone", "Lattice", "Monsoon", "Nightjar", "Orbital", "Pollen", "Quill", "Riverstone",
        "Sable", "Tessellate", "Uplink", "Verdant", "Wayfarer", "Xenon", "Yellowfin", "Zenith"]
CO_B = ["Labs", "Analytics", "Health", "Games", "Media", "Logistics", "Robotics", "Fintech", "Studios", "Software",
        "Security", "Mobility", "Retail", "Learning"]
OTHER_SUBJECTS = {
    "billing": ["Invoice for May shows wrong VAT ID", "Please update our billing address", "Card declined on renewal",
                "Question about reserved instance pricing", "Duplicate charge for object storage"],
    "technical": ["Cannot resize managed-db volume", "CDN cache purge not propagating", "Slow cold starts on compute",
                  "How to configure private DNS zones?", "Snapshot restore stuck at 80%", "Need higher API rate limit"],
    "account": ["Add a new admin user", "Transfer ownership to new CTO", "Enable SSO enforcement",
                "Close sub-account for old project", "Request SOC 2 report"],
}


def _fmt(d: datetime) -> str:
    return d.strftime("%Y-%m-%d %H:%M")


def _ts(s: str) -> datetime:
    return datetime.strptime(s, "%Y-%m-%d %H:%M")


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
        self.accounts: list[dict] = []
        self.subs: list[dict] = []
        self.tickets: list[dict] = []
        self.credits: list[tuple] = []
        self.names: set[str] = set()

    def account(self, contract: str | None = None) -> dict:
        rng = self.rng
        while True:
            n = f"{rng.choice(CO_A)} {rng.choice(CO_B)}"
            if n not in self.names:
                break
            n = f"{n} {rng.choice(['GmbH', 'Inc', 'Ltd', 'Pte', 'SAS', 'AB', 'KK', 'BV'])}"
            if n not in self.names:
                break
        self.names.add(n)
        a = {"account_id": None, "name": n, "contract": contract or rng.choices(
            ["standard", "enterprise_msa"], weights=(78, 22))[0], "home": rng.choice(REGIONS),
             "contact": f"{rng.choice(FIRST)} {rng.choice(LAST)}", "subs": [], "tie": rng.random(), "mrr": 0.0}
        self.accounts.append(a)
        return a

    def sub(self, acct: dict, service: str, region: str, fee: float | None = None, start: str | None = None,
            end: str | None = None) -> dict:
        rng = self.rng
        lo, hi = SERVICES[service]
        fee = fee if fee is not None else round(rng.uniform(lo, hi) / 5) * 5.0
        start = start or (datetime(2022, 1, 1) + timedelta(days=rng.randint(0, 1150))).strftime("%Y-%m-%d")
        s = {"account": acct, "service": service, "region": "global" if service == "dns" else region, "fee": fee,
             "start": start, "end": end, "tie": rng.random()}
        acct["subs"].append(s)
        self.subs.append(s)
        return s

    def ticket(self, acct: dict, category: str, subject: str, body: str, created: datetime, status: str,
               resolution: str | None = None) -> dict:
        t = {"account": acct, "category": category, "subject": subject, "body": body, "created": created,
             "status": status, "resolution": resolution, "tie": self.rng.random(), "ticket_id": None}
        self.tickets.append(t)
        return t

    def claim(self, acct: dict, incs: list[str], created: datetime, status: str = "open", resolution=None):
        rng = self.rng
        refs = " and ".join(incs)
        svc = {i[0]: i[1] for i in INCIDENTS}
        body = rng.choice([
            f"Hello Stratus team,\n\nOur {svc[incs[0]]} workloads were impacted during {refs}. Per our agreement we "
            f"request the applicable SLA credit.\n\nRegards,\n{acct['contact']}",
            f"Hi,\nwe saw errors and timeouts ({refs}). Please review and credit our account as per the SLA.\n"
            f"Thanks, {acct['contact']}",
            f"Dear support,\n\nreferencing your status page posts for {refs}: our production was affected for most "
            f"of the incident. Kindly apply service credits.\n\nBest,\n{acct['contact']} ({acct['name']})",
        ])
        return self.ticket(acct, "sla_credit", f"SLA credit request - {incs[0]}", body, created, status, resolution)


def build(root: Path, scale: Scale, seed: int) -> None:
    rng = random.Random(seed)
    _clear(root)
    g = _Gen(rng)
    for _ in range(scale.n_rows(110)):
        a = g.account()
        for _ in range(rng.randint(1, 5)):
            svc = rng.choices(list(SERVICES), weights=(35, 25, 18, 12, 10))[0]
            region = a["home"] if rng.random() < 0.7 else rng.choice(REGIONS)
            end = None
            if rng.random() < 0.06:
                end = (datetime(2024, 6, 1) + timedelta(days=rng.randint(0, 300))).strftime("%Y-%m-%d")
            start = None
            if rng.random() < 0.05:
                start = (datetime(2025, 5, 1) + timedelta(days=rng.randint(0, 40))).strftime("%Y-%m-%d")
            g.sub(a, svc, region, start=start, end=end)

    inc = {i[0]: i for i in INCIDENTS}

    def affected(acct: dict) -> list[str]:
        out = []
        for i in INCIDENTS:
            if any(s["service"] == i[1] and (s["region"] in i[2] or "global" in i[2]) for s in acct["subs"]):
                out.append(i[0])
        return out

    # ---- random claims (open), resolved older claims with credits, other tickets
    for _ in range(scale.n_rows(12)):
        a = rng.choice(g.accounts)
        cands = affected(a)
        if cands and rng.random() < 0.8:
            incs = rng.sample(cands, min(len(cands), rng.choice([1, 1, 1, 2])))
        else:
            incs = [rng.choice(INCIDENTS)[0]]
        incs.sort()
        last_end = max(_ts(inc[i][4]) for i in incs)
        created = last_end + timedelta(hours=rng.randint(6, 24 * 34))
        if created > TODAY - timedelta(hours=20):
            created = TODAY - timedelta(hours=rng.randint(20, 200))
        if created < last_end:
            created = last_end + timedelta(hours=3)
        g.claim(a, incs, created)
    for _ in range(scale.n_rows(10)):
        a = rng.choice(g.accounts)
        period = rng.choice(["2025-03", "2025-04", "2025-05"])
        created = datetime(int(period[:4]), int(period[5:]), rng.randint(3, 27), rng.randint(0, 23))
        t = g.claim(a, ["INC-2025-0509" if period == "2025-05" else "INC-2025-0488"], created, "resolved", "credited")
        amt = round(rng.uniform(15, 400), 2)
        g.credits.append((a, t, amt, period, "SLA credit", _fmt(created + timedelta(days=2))))
    for _ in range(scale.n_rows(260)):
        a = rng.choice(g.accounts)
        cat = rng.choice(list(OTHER_SUBJECTS))
        created = datetime(2025, 4, 1) + timedelta(minutes=rng.randint(0, 76 * 24 * 60))
        subj = rng.choice(OTHER_SUBJECTS[cat])
        detail = rng.choice(["It started after the weekend.", "Our finance team flagged it.",
                             "We tried the steps in the docs without luck.", "This is blocking a release.",
                             "No rush, but we need it before month end.", "Screenshots attached."])
        g.ticket(a, cat, subj, f"Hi team,\n\n{subj}. {detail}\nAccount: {a['name']}.\n\nThanks,\n{a['contact']}",
                 created,
                 rng.choice(["open", "pending", "resolved", "resolved"]))

    # ---- fixed cases present at every scale
    d = lambda s: datetime.strptime(s, "%Y-%m-%d %H:%M")  # noqa: E731
    a1 = g.account("standard")  # two compute incidents on the same subscription: minutes add up
    g.sub(a1, "compute", "us-east", fee=2400.0, start="2023-03-01")
    g.sub(a1, "compute", "us-west", fee=900.0, start="2023-03-01")  # wrong region
    g.claim(a1, ["INC-2025-0517", "INC-2025-0526"], d("2025-05-21 10:12"))
    a2 = g.account("standard")  # DNS claim filed after the 30-day window
    g.sub(a2, "dns", "global", fee=120.0, start="2024-01-10")
    g.sub(a2, "cdn", "ap-southeast", fee=640.0, start="2024-01-10")
    g.claim(a2, ["INC-2025-0509"], d("2025-06-04 08:30"))
    g.claim(a2, ["INC-2025-0538"], d("2025-05-28 11:00"))  # no customer impact
    a3 = g.account("enterprise_msa")  # MSA multiplier
    g.sub(a3, "object-storage", "us-east", fee=1850.0, start="2022-11-01")
    g.sub(a3, "object-storage", "eu-central", fee=700.0, start="2022-11-01")
    g.claim(a3, ["INC-2025-0531"], d("2025-05-22 16:45"))
    a4 = g.account("standard")  # cap across existing credit and two claims
    g.sub(a4, "compute", "eu-central", fee=4200.0, start="2024-02-01")
    g.sub(a4, "managed-db", "eu-central", fee=800.0, start="2024-02-01")
    old = g.claim(a4, ["INC-2025-0509"], d("2025-05-03 09:00"), "resolved", "credited")
    g.credits.append((a4, old, 1350.0, "2025-05", "Goodwill credit (renewal negotiation)", "2025-05-05 10:00"))
    g.claim(a4, ["INC-2025-0523"], d("2025-05-13 07:40"))
    g.claim(a4, ["INC-2025-0544"], d("2025-05-30 12:00"))
    a5 = g.account("standard")  # subscription started after the incident
    g.sub(a5, "compute", "us-east", fee=3100.0, start="2025-05-10")
    g.claim(a5, ["INC-2025-0517"], d("2025-05-15 15:00"))
    a6 = g.account("standard")  # cap already exhausted
    g.sub(a6, "compute", "ap-southeast", fee=1000.0, start="2023-08-01")
    old = g.claim(a6, ["INC-2025-0509"], d("2025-05-04 09:00"), "resolved", "credited")
    g.credits.append((a6, old, 300.0, "2025-05", "Goodwill credit (approved by CSM)", "2025-05-06 10:00"))
    g.claim(a6, ["INC-2025-0544"], d("2025-06-02 09:30"))

    # ---- ids, mrr, rows
    g.accounts.sort(key=lambda a: a["tie"])
    for i, a in enumerate(g.accounts):
        a["account_id"] = f"ACC-{10001 + i * 7}"
        a["mrr"] = round(sum(s["fee"] for s in a["subs"] if s["end"] is None), 2)
    g.subs.sort(key=lambda s: (s["account"]["account_id"], s["tie"]))
    g.tickets.sort(key=lambda t: (t["created"], t["tie"]))
    for i, t in enumerate(g.tickets):
        t["ticket_id"] = 73001 + i
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript("""
        create table accounts(account_id text primary key, name text, contract_type text, home_region text,
            mrr_usd real, primary_contact text);
        create table subscriptions(subscription_id integer primary key, account_id text, service text, region text,
            monthly_fee real, start_date text, end_date text);
        create table tickets(ticket_id integer primary key, account_id text, category text, subject text, body text,
            created_at text, status text, resolution text);
        create table credits(credit_id integer primary key autoincrement, account_id text, ticket_id integer,
            amount_usd real, period text, note text, issued_at text);
    """)
    con.executemany("insert into accounts values (?,?,?,?,?,?)",
                    [(a["account_id"], a["name"], a["contract"], a["home"], a["mrr"], a["contact"])
                     for a in sorted(g.accounts, key=lambda a: a["account_id"])])
    con.executemany("insert into subscriptions values (?,?,?,?,?,?,?)",
                    [(5001 + i, s["account"]["account_id"], s["service"], s["region"], s["fee"], s["start"], s["end"])
                     for i, s in enumerate(g.subs)])
    con.executemany("insert into tickets values (?,?,?,?,?,?,?,?)",
                    [(t["ticket_id"], t["account"]["account_id"], t["category"], t["subject"], t["body"],
                      _fmt(t["created"]), t["status"], t["resolution"]) for t in g.tickets])
    cr = sorted(g.credits, key=lambda c: (c[5], c[1]["ticket_id"]))
    con.executemany("insert into credits(account_id, ticket_id, amount_usd, period, note, issued_at) values (?,?,?,?,?,?)",
                    [(c[0]["account_id"], c[1]["ticket_id"], c[2], c[3], c[4], c[5]) for c in cr])
    con.commit()
    con.close()
    _files(root / "workspace", scale, rng)


# ----------------------------------------------------------------------------------------------- files

TERMS = """# Stratus Cloud — Service Level Agreement: credit terms (excerpt)

Version 4.1 · applies to all contracts signed or renewed after 2024-01-01 · Legal & Customer Support

## 1. What a claim covers
A claim is a support ticket in category `sla_credit`. A claim covers **only the incidents it cites by incident
ID** (e.g. `INC-2025-0517`) in its subject or body. An incident can earn a credit only if its postmortem in
`incidents/` states **customer impact: Yes**.

## 2. Filing window
The claim ticket must be created **no later than 30 days after the incident ended** (end time in the postmortem
plus 30 × 24 hours). Incidents cited after their window has closed are ignored.

## 3. Affected subscriptions
An incident affects a subscription of the claiming account when the subscription's `service` is the incident's
service, its `region` is one of the incident's regions (a `global` incident affects every region; DNS
subscriptions are `global`), and the subscription was active when the incident started (`start_date` on or
before the incident's start date and no `end_date` before it).

## 4. Amount
For each affected subscription, add up the downtime minutes (End − Start, from the postmortem summary table) of
all eligible incidents cited in the claim, look the total up in `legal/sla_credit_schedule.csv` for that
service, and credit that percentage of the subscription's monthly fee (rounded to cents). The claim's credit
is the sum over its subscriptions.

Accounts with an **enterprise MSA** (`contract_type = enterprise_msa`) receive **double** the schedule
percentage, at most 100%.

## 5. Monthly cap
All SLA and goodwill credits for one service month may not exceed **30% of the account's MRR**
(`mrr_usd`). Credits already issued for the month (period `2025-05` for May incidents) count, including credits
issued earlier in the same review. Process claims oldest first (by ticket creation time); a claim that would
exceed the cap is credited only up to what remains.

## 6. Outcome
- A claim with a positive credit (after the cap) is resolved with a credit for period `2025-05`.
- A claim whose credit before the cap is positive but whose account has no room left under the cap is denied
  with reason `cap_reached`.
- Every other claim is denied with reason `not_eligible`.
"""

SCHEDULE = """service,min_minutes,max_minutes,credit_pct
compute,0,14,0
compute,15,59,10
compute,60,239,25
compute,240,100000,50
object-storage,0,29,0
object-storage,30,119,10
object-storage,120,479,25
object-storage,480,100000,50
managed-db,0,9,0
managed-db,10,59,10
managed-db,60,239,25
managed-db,240,100000,50
cdn,0,29,0
cdn,30,119,10
cdn,120,100000,25
dns,0,4,0
dns,5,29,10
dns,30,119,25
dns,120,100000,50
"""

LEGAL_NOISE = [
    ("legal/sla_credit_schedule_2023.csv", "service,min_minutes,max_minutes,credit_pct\ncompute,0,29,0\n"
     "compute,30,100000,10\n# SUPERSEDED by the 2024 schedule\n"),
    ("legal/sla_terms_v3.md", "# SLA credit terms v3 (contracts before 2024-01-01)\n\nNo current customer is on v3 "
     "terms. Claims had to be filed within 60 days.\n"),
    ("legal/data_processing_addendum.md", "# DPA\n\nSub-processor list updated quarterly.\n"),
    ("legal/acceptable_use.md", "# Acceptable use\n\nNo crypto mining on free-tier instances.\n"),
    ("legal/support_plans.md", "# Support plans\n\nBasic, Business, Enterprise. Support plan does not change SLA "
     "credit amounts.\n"),
]

RUNBOOKS = ["credit_issuance_runbook.md", "status_page_process.md", "on_call_rotation.md", "customer_comms.md",
            "postmortem_template.md", "severity_levels.md", "billing_adjustments.md"]

TIMELINE = ["Alerts fired for elevated error rates.", "Incident commander assigned; status page updated.",
            "Mitigation deployed to the first cell.", "Recovery confirmed by synthetic checks.",
            "Rollback of the offending change completed.", "Capacity added to the affected fleet."]


def _write(ws: Path, rel: str, text: str) -> None:
    p = ws / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def _postmortem(rng: random.Random, inc) -> str:
    iid, svc, regions, start, end, impact, sev, title = inc
    t0 = _ts(start)
    lines = [f"# {iid} — {title}", "", "## Summary", "", "| Field | Value |", "|---|---|",
             f"| Severity | {sev} |", f"| Service | {svc} |", f"| Regions | {', '.join(regions)} |",
             f"| Start (UTC) | {start} |", f"| End (UTC) | {end} |",
             f"| Customer impact | {'Yes' if impact else 'No'} |", "", "## Timeline (UTC)", ""]
    mins = int((_ts(end) - t0).total_seconds() // 60)
    for k, step in enumerate(rng.sample(TIMELINE, 4)):
        lines.append(f"- {_fmt(t0 + timedelta(minutes=mins * k // 4))} {step}")
    lines += ["", "## Customer impact", "",
              "Customers saw errors and timeouts for the duration above." if impact else
              "None. Internal alerting only; customer traffic was not affected.",
              "", "## Follow-ups", "", "- Add a canary stage for this component.",
              f"- Owner: {rng.choice(FIRST)} {rng.choice(LAST)}", ""]
    return "\n".join(lines)


def _files(ws: Path, scale: Scale, rng: random.Random) -> None:
    for inc in INCIDENTS:
        _write(ws, f"incidents/{inc[0]}.md", _postmortem(rng, inc))
    for k in range(scale.n_files(8) - len(INCIDENTS)):
        month = rng.randint(1, 4)
        start = datetime(2025, month, rng.randint(1, 27), rng.randint(0, 22), rng.choice([0, 15, 30, 45]))
        end = start + timedelta(minutes=rng.randint(12, 300))
        iid = f"INC-2025-{120 + k * 17:04d}"
        inc = (iid, rng.choice(list(SERVICES)), sorted(rng.sample(REGIONS, rng.randint(1, 2))), _fmt(start),
               _fmt(end), rng.random() < 0.6, rng.choice(["SEV-2", "SEV-3", "SEV-4"]),
               rng.choice(["Elevated latency", "Partial API outage", "Degraded throughput", "Console errors"]))
        _write(ws, f"incidents/{iid}.md", _postmortem(rng, inc))
    _write(ws, "legal/sla_terms.md", TERMS)
    _write(ws, "legal/sla_credit_schedule.csv", SCHEDULE)
    for rel, text in LEGAL_NOISE[: scale.n_files(2) - 2]:
        _write(ws, rel, text)
    for name in RUNBOOKS[: scale.n_files(2)]:
        title = name.removesuffix(".md").replace("_", " ").capitalize()
        _write(ws, f"runbooks/{name}", f"# {title}\n\n{rng.choice(['Owner: Support Ops.', 'Owner: SRE.'])} "
               "Reviewed quarterly. Follow the linked checklist in the wiki.\n")
