"""Annual-leave year-end close: entities, employees, balances, leave requests and manual adjustments.

Entitlements by tenure band, FTE and joiner proration, carry-over caps and country-specific conditions
live only in the per-country policy files; an HR memo adds two exceptions. Planted employees at every
scale cover the band boundaries, joiners, FR's one-year condition, the NL-OPS cap, employees on leave,
negative balances, pending/rejected requests, unapproved adjustments and leavers.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from datetime import date, timedelta
from pathlib import Path

ENTITIES = [
    ("DE-GMBH", "Kestrel Software GmbH", "DE"), ("FR-SAS", "Kestrel France SAS", "FR"),
    ("NL-BV", "Kestrel Nederland B.V.", "NL"), ("NL-OPS", "Kestrel Operations B.V.", "NL"),
    ("UK-LTD", "Kestrel Software Ltd", "UK"), ("ES-SL", "Kestrel Iberia S.L.", "ES"),
    ("IE-LTD", "Kestrel Ireland Ltd", "IE"),
]
# country -> (bands [(min completed years, days)], cap)
POLICY = {
    "DE": ([(0, 28), (5, 30)], 5),
    "FR": ([(0, 25)], 10),
    "NL": ([(0, 25), (10, 27)], 5),
    "UK": ([(0, 25), (2, 27), (5, 28)], 5),
    "ES": ([(0, 23), (8, 25)], 3),
    "IE": ([(0, 21), (3, 23)], 8),
}
DEPTS = ["Engineering", "Product", "Sales", "Customer Success", "Finance", "People", "Operations", "Marketing"]
NAMES = {
    "DE": (["Lukas", "Anna", "Jonas", "Lea", "Felix", "Marie", "Tobias", "Hannah", "Niklas", "Sophie"],
           ["Müller", "Schmidt", "Weber", "Becker", "Hoffmann", "Schäfer", "Koch", "Richter", "Wolf", "Braun"]),
    "FR": (["Camille", "Louis", "Chloé", "Hugo", "Manon", "Jules", "Léa", "Arthur", "Inès", "Théo"],
           ["Martin", "Bernard", "Dubois", "Lefèvre", "Moreau", "Girard", "Fournier", "Mercier", "Blanc"]),
    "NL": (["Daan", "Sanne", "Bram", "Fleur", "Thijs", "Lotte", "Sem", "Noor", "Ruben", "Eva"],
           ["de Jong", "Jansen", "de Vries", "van Dijk", "Bakker", "Visser", "Smit", "Meijer", "Mulder"]),
    "UK": (["Oliver", "Amelia", "Harry", "Isla", "George", "Ava", "Jack", "Poppy", "Leo", "Freya"],
           ["Smith", "Jones", "Taylor", "Brown", "Williams", "Wilson", "Davies", "Evans", "Khan", "Patel"]),
    "ES": (["Lucía", "Hugo", "Martina", "Pablo", "Sofía", "Álvaro", "Carmen", "Diego", "Elena", "Javier"],
           ["García", "Fernández", "López", "Martínez", "Sánchez", "Pérez", "Gómez", "Ruiz", "Díaz"]),
    "IE": (["Seán", "Aoife", "Conor", "Niamh", "Cian", "Róisín", "Darragh", "Saoirse", "Oisín", "Ciara"],
           ["Murphy", "Kelly", "O'Sullivan", "Walsh", "Byrne", "Ryan", "O'Brien", "Doyle", "McCarthy"]),
}
APPROVERS = ["M. Okafor", "S. Lindqvist", "P. Duarte", "K. Brennan", "A. Haddad", "T. Verhoeven"]
ADJ_NOTES = {"purchase": "Bought leave via benefits window", "sale": "Sold leave back (payroll)",
             "correction": "Correction after payroll audit", "award": "Long-service award day"}

SCHEMA = """
create table entities (entity_id text primary key, name text, country text);
create table employees (employee_id text primary key, first_name text, last_name text, entity_id text,
    department text, job_title text, hire_date text, fte real, status text, termination_date text);
create table leave_balances (employee_id text, year integer, opening_days real, forfeited_prev real,
    primary key (employee_id, year));
create table leave_requests (request_id integer primary key, employee_id text, leave_type text, start_date text,
    end_date text, days real, status text, submitted_on text, approver text, comment text);
create table leave_adjustments (adjustment_id integer primary key, employee_id text, year integer, days real,
    kind text, approved integer, note text);
"""


def _reset(root: Path) -> None:
    for name in ("db.sqlite", "db.sqlite-journal", "db.sqlite-wal", "db.sqlite-shm"):
        p = root / name
        if p.exists():
            p.unlink()
    ws = root / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    for p in sorted(ws.iterdir()):
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


def _write(root: Path, rel: str, text: str) -> None:
    path = root / "workspace" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")


def _years_on(hire: date, on: date) -> int:
    y = on.year - hire.year - ((on.month, on.day) < (hire.month, hire.day))
    return max(0, y)


def entitlement(country: str, hire: date, fte: float) -> float:
    bands, _ = POLICY[country]
    if hire.year == 2024:
        days = bands[0][1] * fte * (13 - hire.month) / 12
    else:
        yrs = _years_on(hire, date(2024, 1, 1))
        days = [d for m, d in bands if yrs >= m][-1] * fte
    return round(days + 1e-9, 2)


TITLES = {"Engineering": ["Software Engineer", "Senior Engineer", "QA Analyst", "Engineering Manager"],
          "Product": ["Product Manager", "Product Designer", "UX Researcher"],
          "Sales": ["Account Executive", "Sales Development Rep", "Sales Manager"],
          "Customer Success": ["CS Manager", "Support Specialist", "Onboarding Lead"],
          "Finance": ["Accountant", "Payroll Specialist", "FP&A Analyst"],
          "People": ["HR Business Partner", "Recruiter", "People Ops Coordinator"],
          "Operations": ["Office Manager", "IT Administrator", "Facilities Coordinator"],
          "Marketing": ["Content Marketer", "Growth Marketer", "Brand Designer"]}
REQ_COMMENTS = ["", "", "", "Family trip", "Summer holiday", "Moving house", "Wedding", "Christmas break",
                "School holidays", "Long weekend", "Festival", "Visiting parents", "Bridge day"]


def build(root: Path, scale, seed: int) -> None:
    _reset(root)
    rng = random.Random(seed)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)
    con.executemany("insert into entities values (?,?,?)", ENTITIES)
    country_of = {e[0]: e[2] for e in ENTITIES}

    emps, balances, requests, adjustments = [], [], [], []
    used: set[int] = set()

    def workdays(start: date, n: int) -> date:
        d, left = start, n
        while True:
            if d.weekday() < 5:
                left -= 1
                if left <= 0:
                    return d
            d += timedelta(days=1)

    def add_requests(eid: str, hire: date, taken: float) -> None:
        """Approved 2024 annual leave summing to `taken`, plus noise requests."""
        remaining = taken
        first = max(date(2024, 1, 2), hire + timedelta(days=14))
        span = (date(2024, 12, 20) - first).days
        chunks = []
        while remaining > 0.01:
            c = min(remaining, rng.choice([0.5, 1, 2, 3, 4, 5, 5, 8, 10]))
            chunks.append(c)
            remaining = round(remaining - c, 2)
        for c in chunks:
            start = first + timedelta(days=rng.randint(0, max(0, span)))
            while start.weekday() >= 5:
                start += timedelta(days=1)
            end = workdays(start, max(1, int(c + 0.5)))
            requests.append([eid, "annual", start.isoformat(), end.isoformat(), c, "approved",
                             (start - timedelta(days=rng.randint(3, 60))).isoformat(), rng.choice(APPROVERS),
                             rng.choice(REQ_COMMENTS)])
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            lt = rng.choice(["sick", "sick", "unpaid", "compassionate", "annual"])
            st = rng.choice(["approved", "approved", "rejected", "cancelled", "pending"]) if lt == "annual" \
                else "approved"
            yr = rng.choice([2023, 2024, 2024, 2025]) if lt == "annual" else 2024
            start = date(yr, rng.randint(1, 12), rng.randint(1, 27))
            if yr == 2024 and lt == "annual" and st == "approved":
                yr, start = 2025, date(2025, rng.randint(1, 6), rng.randint(1, 27))
            while start.weekday() >= 5:
                start += timedelta(days=1)
            if start.year == 2024 and start < hire:
                continue
            n = rng.choice([1, 1, 2, 3, 5])
            requests.append([eid, lt, start.isoformat(), workdays(start, n).isoformat(), float(n), st,
                             (start - timedelta(days=rng.randint(1, 30))).isoformat(), rng.choice(APPROVERS),
                             rng.choice(REQ_COMMENTS)])

    def employee(entity: str, hire: date, fte: float = 1.0, status: str = "active", opening: float | None = None,
                 end_balance: float | None = None, adj: list | None = None) -> str:
        n = rng.randint(100000, 999999)
        while n in used:
            n = rng.randint(100000, 999999)
        used.add(n)
        eid = f"K{n}"
        c = country_of[entity]
        fn, ln = rng.choice(NAMES[c][0]), rng.choice(NAMES[c][1])
        dept = rng.choice(DEPTS)
        term = None
        if status == "terminated":
            term = (date(2024, 3, 1) + timedelta(days=rng.randint(0, 250))).isoformat()
        emps.append([eid, fn, ln, entity, dept, rng.choice(TITLES[dept]), hire.isoformat(), fte, status, term])
        cap = POLICY[c][1]
        if opening is None:
            opening = 0.0 if hire.year == 2024 else float(rng.choice([0, 0, 0.5, 1, 2, 3, 3.5, cap, cap]))
        if hire.year < 2024:
            balances.append([eid, 2023, float(rng.choice([0, 1, 2, 5])), 0.0])
            balances.append([eid, 2024, opening, float(rng.choice([0, 0, 0, 1, 2.5]))])
        else:
            balances.append([eid, 2024, 0.0, 0.0])
        ent = entitlement(c, hire, fte)
        extra = 0.0
        for a in adj or []:
            adjustments.append([eid, 2024, a[0], a[1], a[2], ADJ_NOTES[a[1]]])
            if a[2]:
                extra += a[0]
        if end_balance is None:
            end_balance = rng.choice([0, 0, 0.5, 1, 2, 3, 4, 4.5, cap, cap + rng.choice([1, 2, 3.5, 6])])
        taken = round(opening + ent + extra - end_balance, 2)
        if taken < 0:
            taken = 0.0
        add_requests(eid, hire, taken)
        return eid

    entity_ids = [e[0] for e in ENTITIES]
    weights = [18, 12, 10, 6, 26, 14, 14]
    for _ in range(scale.n_rows(90)):
        ent = rng.choices(entity_ids, weights)[0]
        hire = date(2008, 1, 1) + timedelta(days=rng.randint(0, 6200))
        if hire > date(2024, 10, 1):
            hire = date(2024, rng.randint(1, 9), rng.randint(1, 28))
        fte = rng.choices([1.0, 0.8, 0.6, 0.5], [75, 12, 6, 7])[0]
        status = rng.choices(["active", "leave", "terminated"], [88, 4, 8])[0]
        adj = None
        if rng.random() < 0.15:
            kind = rng.choice(["purchase", "sale", "correction", "award"])
            days = {"purchase": rng.choice([1.0, 2.0, 3.0]), "sale": -rng.choice([1.0, 2.0]),
                    "correction": rng.choice([-1.0, 0.5, 1.0]), "award": 1.0}[kind]
            adj = [(days, kind, 0 if rng.random() < 0.25 else 1)]
        employee(ent, hire, fte, status, adj=adj)

    # planted, every scale
    employee("FR-SAS", date(2024, 3, 4), end_balance=6.5)                       # FR < 1 year: forfeit all
    employee("FR-SAS", date(2023, 12, 29), end_balance=12.0)                    # FR >= 1 year: cap 10
    employee("NL-OPS", date(2016, 5, 9), end_balance=9.0)                       # NL-OPS cap 10
    employee("NL-BV", date(2016, 5, 9), end_balance=9.0)                        # NL cap 5
    employee("DE-GMBH", date(2012, 2, 1), status="leave", end_balance=14.0)     # on leave: all carried
    employee("DE-GMBH", date(2010, 7, 1), opening=5.0, end_balance=26.5)        # biggest forfeiture
    employee("UK-LTD", date(2024, 6, 17), fte=0.8, end_balance=4.17)            # joiner proration
    employee("UK-LTD", date(2019, 1, 1), end_balance=7.0)                       # 5 years on 1 Jan -> 28
    employee("UK-LTD", date(2019, 1, 2), end_balance=7.0)                       # 4 years -> 27
    employee("ES-SL", date(2015, 9, 1), end_balance=-2.5)                       # negative balance
    employee("IE-LTD", date(2011, 4, 4), status="terminated", end_balance=15)   # leaver: out of scope
    employee("IE-LTD", date(2018, 10, 1), end_balance=10.0,
             adj=[(3.0, "purchase", 1), (2.0, "purchase", 0)])                  # unapproved adjustment
    eid = employee("ES-SL", date(2020, 2, 3), end_balance=5.0)
    requests.append([eid, "annual", "2024-12-23", "2024-12-27", 4.0, "pending", "2024-12-02", "P. Duarte",
                     "Christmas break"])                                         # pending: not taken
    requests.append([eid, "annual", "2024-08-05", "2024-08-09", 5.0, "rejected", "2024-06-20", "P. Duarte",
                     "Summer holiday"])                                          # rejected: not taken

    emps.sort(key=lambda e: e[0])
    con.executemany("insert into employees values (?,?,?,?,?,?,?,?,?,?)", emps)
    balances.sort(key=lambda b: (b[1], b[0]))
    con.executemany("insert into leave_balances values (?,?,?,?)", balances)
    requests.sort(key=lambda r: (r[6], r[0], r[2]))
    con.executemany("insert into leave_requests (employee_id, leave_type, start_date, end_date, days, status, "
                    "submitted_on, approver, comment) values (?,?,?,?,?,?,?,?,?)", requests)
    adjustments.sort(key=lambda a: a[0])
    con.executemany("insert into leave_adjustments (employee_id, year, days, kind, approved, note) "
                    "values (?,?,?,?,?,?)", adjustments)
    con.commit()
    con.close()
    _files(root, scale, rng)


COUNTRY_NAMES = {"DE": "Germany", "FR": "France", "NL": "Netherlands", "UK": "United Kingdom", "ES": "Spain",
                 "IE": "Ireland"}
EXTRA_RULES = {
    "DE": "Statutory minimum is 20 days (5-day week); the remainder is contractual.",
    "FR": "**Carry-over condition:** only employees with at least one full year of service on 31 December "
          "(hired on or before 31 December of the previous year) may carry days over. Employees with less "
          "service forfeit any positive balance.",
    "NL": "Statutory days expire six months after the year end if not taken; extra-statutory days follow the "
          "cap below.",
    "UK": "Bank holidays are in addition to the entitlement below.",
    "ES": "Días de libre disposición are handled by payroll and are not part of this balance.",
    "IE": "Public holidays are in addition to the entitlement below.",
}


def _policy_text(c: str) -> str:
    bands, cap = POLICY[c]
    rows = []
    for i, (m, d) in enumerate(bands):
        nxt = bands[i + 1][0] if i + 1 < len(bands) else None
        label = f"{m} to less than {nxt} years" if nxt is not None else f"{m} years or more"
        if len(bands) == 1:
            label = "all employees"
        rows.append(f"| {label} | {d} |")
    return f"""# Annual leave policy — {COUNTRY_NAMES[c]} ({c})

Applies to all employees of the {c} entities for the leave year **1 January – 31 December 2024**.

## Entitlement

Full-time annual entitlement by completed years of service on **1 January 2024**:

| Completed years of service | Days per year (full-time) |
|---|---|
{chr(10).join(rows)}

* Part-time employees receive the entitlement multiplied by their FTE.
* Employees who joined during 2024 receive the first band, multiplied by their FTE and by the number
  of calendar months from their hire month (inclusive) to December, divided by 12.
* Entitlements are kept to two decimals.

{EXTRA_RULES[c]}

## Year-end balance and carry-over

Year-end balance = days carried into 2024 (the 2024 opening balance) + 2024 entitlement + approved
2024 adjustments − approved annual leave taken in 2024. Pending, rejected and cancelled requests do not
count, and neither do sick, unpaid or compassionate leave.

* Up to **{cap} days** of a positive balance carry over into 2025; the rest is forfeited.
* A negative balance carries over in full (it is deducted from 2025) and nothing is forfeited.
* Leavers are settled by payroll and are not part of the year-end close.
"""


MEMO = """Subject: 2024 leave year-end close — exceptions approved by the CHRO
From: People Operations
Date: 9 December 2024

Two exceptions to the country policies apply to this year's carry-over:

1. **Employees on leave.** Colleagues whose employment status is *leave* (long-term sick, parental or
   sabbatical) on 31 December carry over their **entire** positive balance, whatever the country cap
   or carry-over condition.
2. **Kestrel Operations B.V. (entity NL-OPS).** Because of the warehouse system migration freeze in
   Q4, the NL carry-over cap for NL-OPS employees is raised to **10 days** for 2024 only. Kestrel
   Nederland B.V. (NL-BV) keeps the standard cap.

Everything else follows the country policies in `policies/leave/`.
"""

UK_2023 = """# Annual leave policy — United Kingdom (UK) — 2023 (ARCHIVED)

Superseded on 1 January 2024.

| Completed years of service | Days per year |
|---|---|
| all employees | 25 |

Up to 8 days could be carried into 2024 with manager approval.
"""

NEWS = ["The People team is piloting a four-day summer week in the Dublin office.",
        "Benefits enrolment for 2025 closes on 15 December.",
        "Reminder: submit expense claims for 2024 before 20 December.",
        "Our new HR system goes live in March; leave requests will migrate automatically.",
        "The Madrid office moves to Calle de Alcalá in February.",
        "Engagement survey results: 78% participation, up from 71%.",
        "Mental health first aiders are now available in every office.",
        "Payroll dates for January: 24 January (all entities)."]


def _files(root: Path, scale, rng: random.Random) -> None:
    for c in POLICY:
        _write(root, f"policies/leave/{c}_annual_leave_2024.md", _policy_text(c))
    _write(root, "policies/leave/archive/UK_annual_leave_2023.md", UK_2023)
    _write(root, "hr/memos/2024-12-09_year_end_carryover_exceptions.md", MEMO)
    topics = ["Office closure over Christmas", "Parental leave top-up", "Company car policy update",
              "Learning budget 2025", "Hybrid working guidelines", "Pension auto-enrolment"]
    for k in range(scale.n_files(4)):
        t = topics[k % len(topics)]
        d = date(2024, 9, 1) + timedelta(days=rng.randint(0, 100))
        _write(root, f"hr/memos/{d.isoformat()}_{t.lower().replace(' ', '_')}_{k + 1}.md",
               f"Subject: {t}\nFrom: People Operations\nDate: {d.isoformat()}\n\n{rng.choice(NEWS)} "
               f"{rng.choice(NEWS)}\n\nThis memo does not change annual leave entitlements or carry-over.\n")
    for k in range(scale.n_files(4)):
        m = ["September", "October", "November", "December"][k % 4]
        _write(root, f"newsletters/people_news_{m.lower()}_{k + 1}.md",
               f"# People news — {m} 2024\n\n" + "\n".join(f"- {x}" for x in rng.sample(NEWS, 4)) + "\n")
