"""Safety-certification compliance review: sites, employees, certificates, training sessions, enrollments.

The role requirements (JSON), the certification policy (validity, scope, renewal window, seat
allocation order) and two memos (First Aid equivalence, LOTO grace extension) live only in workspace
files. Planted employees at every scale cover: expiry on the review date, unverified certificates,
equivalent certificates, grace-extended and not-extended LOTO, restricted employees who renewed,
employees on leave or terminated, existing registrations, full sessions and seat contention.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from datetime import date, timedelta
from pathlib import Path

REVIEW = date(2024, 11, 15)

ROLES = {
    "WH-ASSOC": ("Warehouse Associate", ["SAFETY-BASIC"], 30),
    "FORK-OP": ("Forklift Operator", ["FORKLIFT", "SAFETY-BASIC"], 20),
    "DRIVER": ("Yard Driver", ["YARD-DRIVE", "SAFETY-BASIC"], 8),
    "ELEC-TECH": ("Electrical Technician", ["ELEC-LV", "LOTO", "SAFETY-BASIC"], 8),
    "MAINT-TECH": ("Maintenance Technician", ["LOTO", "WORK-HEIGHTS", "SAFETY-BASIC"], 9),
    "SHIFT-LEAD": ("Shift Lead", ["FIRSTAID", "SAFETY-BASIC"], 9),
    "HAZMAT-HAND": ("Hazardous Goods Handler", ["HAZMAT", "FIRSTAID", "SAFETY-BASIC"], 6),
    "OFFICE-ADM": ("Site Administrator", [], 10),
}
ROLES_2023 = {"WH-ASSOC": ["SAFETY-BASIC"], "FORK-OP": ["FORKLIFT"], "DRIVER": ["YARD-DRIVE"],
              "ELEC-TECH": ["ELEC-LV", "SAFETY-BASIC"], "MAINT-TECH": ["LOTO", "SAFETY-BASIC"],
              "SHIFT-LEAD": ["SAFETY-BASIC"], "HAZMAT-HAND": ["HAZMAT", "SAFETY-BASIC"], "OFFICE-ADM": []}
VALIDITY_YEARS = {"SAFETY-BASIC": 3, "FORKLIFT": 3, "YARD-DRIVE": 2, "ELEC-LV": 3, "LOTO": 2,
                  "WORK-HEIGHTS": 2, "FIRSTAID": 3, "FA-CPR": 2, "HAZMAT": 2}
ISSUERS = {"SAFETY-BASIC": ["Internal Academy"], "FORKLIFT": ["RTITB", "ITSSAR", "Internal Academy"],
           "YARD-DRIVE": ["Internal Academy", "LogiSkills"], "ELEC-LV": ["City & Guilds", "NICEIC"],
           "LOTO": ["Internal Academy", "SafeSys Training"], "WORK-HEIGHTS": ["IPAF", "PASMA"],
           "FIRSTAID": ["St John Ambulance", "Internal Academy"], "FA-CPR": ["Red Cross"],
           "HAZMAT": ["DGSA Institute", "LogiSkills"]}
CONTRACTS = ["permanent", "permanent", "permanent", "fixed-term", "part-time"]
SHIFTS = ["earlies 06-14", "lates 14-22", "nights 22-06", "days 08-17", "4 on 4 off", "weekend"]
CERT_NOTES = ["", "", "", "Card copy on file", "Scanned by site admin", "Original seen by HR",
              "Issued after refresher course", "Employer-funded", "Transferred from previous employer",
              "Practical assessment passed first time", "Theory resit required before issue"]
EXTRA = ["MEWP", "FIRE-WARDEN", "MANUAL-HANDLING", "COSHH"]

SITES = [
    ("S01", "Tamworth DC", "Tamworth", "Central"), ("S02", "Daventry Fulfilment", "Daventry", "Central"),
    ("S03", "Coventry Returns Hub", "Coventry", "Central"), ("S04", "Doncaster iPort", "Doncaster", "North"),
    ("S05", "Warrington Omega", "Warrington", "North"), ("S06", "Wakefield Cross-Dock", "Wakefield", "North"),
    ("S07", "Avonmouth Port DC", "Bristol", "West"), ("S08", "Swindon Parts", "Swindon", "West"),
    ("S09", "Thurrock Gateway", "Grays", "South"), ("S10", "Crawley Air Cargo", "Crawley", "South"),
    ("S11", "Basingstoke Chilled", "Basingstoke", "South"),
]
REGIONS = ["Central", "North", "West", "South"]
VENUES = {"Central": ["Tamworth training room 2", "Daventry academy"], "North": ["Doncaster academy",
          "Warrington classroom B"], "West": ["Avonmouth training hall"], "South": ["Thurrock academy",
          "Crawley conference room"]}

FIRST = ["Aaliyah", "Ben", "Callum", "Dorota", "Emeka", "Fatima", "Gareth", "Harpreet", "Ioana", "Jamal",
         "Kirsty", "Lukasz", "Megan", "Nadia", "Owen", "Parveen", "Quentin", "Rhys", "Siobhan", "Tariq",
         "Ugne", "Vikram", "Wiktoria", "Xander", "Yasmin", "Zoltan", "Aoife", "Bartek", "Chidi", "Deepa",
         "Ellis", "Farah", "Graham", "Hollie", "Imran", "Jodie", "Kofi", "Leanne", "Marek", "Niamh"]
LAST = ["Ahmed", "Baxter", "Czarnecki", "Dhillon", "Evans", "Fletcher", "Gill", "Hussain", "Iqbal", "Jones",
        "Kaur", "Lewandowski", "McAllister", "Nowak", "O'Connor", "Popescu", "Quinn", "Rahman", "Singh",
        "Thompson", "Uddin", "Vasile", "Walsh", "Yilmaz", "Zielinski", "Begum", "Clarke", "Doherty",
        "Okonkwo", "Patel", "Reid", "Shah", "Turner", "Wright"]

SCHEMA = """
create table sites (site_id text primary key, name text, city text, region text);
create table employees (employee_id text primary key, first_name text, last_name text, email text,
    phone text, site_id text, role_code text, hire_date text, contract_type text, shift_pattern text,
    cost_centre text, employment_status text, work_status text, manager_id text);
create table certifications (cert_id integer primary key, employee_id text, cert_code text, issued_on text,
    expires_on text, issuer text, certificate_no text, verified integer, notes text);
create table training_sessions (session_id text primary key, cert_code text, region text, start_date text,
    venue text, capacity integer, seats_taken integer);
create table enrollments (enrollment_id integer primary key, session_id text, employee_id text,
    enrolled_on text, status text);
create table status_changes (change_id integer primary key, employee_id text, changed_on text,
    old_status text, new_status text, reason text);
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


def _d(x: date) -> str:
    return x.isoformat()


def build(root: Path, scale, seed: int) -> None:
    _reset(root)
    rng = random.Random(seed)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)
    con.executemany("insert into sites values (?,?,?,?)", SITES)
    region_of = {s[0]: s[3] for s in SITES}

    employees: list[list] = []
    certs: list[list] = []
    used_ids: set[int] = set()

    def new_emp(role: str, site: str | None = None, status: str = "active", work: str = "cleared") -> list:
        n = rng.randint(10000, 99999)
        while n in used_ids:
            n = rng.randint(10000, 99999)
        used_ids.add(n)
        fn, ln = rng.choice(FIRST), rng.choice(LAST)
        site = site or rng.choice(SITES)[0]
        hired = date(2008, 1, 1) + timedelta(days=rng.randint(0, 6000))
        e = [f"E{n}", fn, ln, f"{fn.lower()}.{ln.lower().replace(chr(39), '')}@northgate-logistics.example",
             f"07{rng.randint(100, 999)} {rng.randint(100000, 999999)}", site, role, _d(hired),
             rng.choice(CONTRACTS), rng.choice(SHIFTS), f"CC-{site[1:]}{rng.randint(10, 49)}", status, work, None]
        employees.append(e)
        return e

    def cert(emp: list, code: str, expires: date, verified: int = 1, issuer: str | None = None) -> None:
        issued = min(expires - timedelta(days=365 * VALIDITY_YEARS[code]), REVIEW - timedelta(days=rng.randint(7, 40)))
        certs.append([emp[0], code, _d(issued), _d(expires), issuer or rng.choice(ISSUERS[code]),
                      f"{code[:3]}-{rng.randint(100000, 999999)}", verified,
                      rng.choice(CERT_NOTES) if verified else "Awaiting original document"])

    def healthy(emp: list, skip: tuple = ()) -> None:
        for code in ROLES[emp[6]][1]:
            if code not in skip:
                cert(emp, code, REVIEW + timedelta(days=rng.randint(90, 1000)))

    # random population
    roles = list(ROLES)
    weights = [ROLES[r][2] for r in roles]
    for _ in range(scale.n_rows(112)):
        role = rng.choices(roles, weights)[0]
        status = rng.choices(["active", "leave", "terminated"], [88, 6, 6])[0]
        e = new_emp(role, status=status)
        restricted_before = False
        for code in ROLES[role][1]:
            r = rng.random()
            if r < 0.012:
                continue  # never certified
            if code == "FIRSTAID" and rng.random() < 0.3:
                code = "FA-CPR"
            if r < 0.035:
                exp = REVIEW - timedelta(days=rng.randint(1, 200))  # expired
                if exp < REVIEW - timedelta(days=30):
                    restricted_before = True
            elif r < 0.09:
                exp = REVIEW + timedelta(days=rng.randint(0, 59))  # expiring within the window
            elif r < 0.12:
                exp = REVIEW + timedelta(days=rng.randint(60, 75))  # just outside the window
            else:
                exp = REVIEW + timedelta(days=rng.randint(76, 1100))
            cert(e, code, exp, verified=0 if rng.random() < 0.02 else 1)
            if rng.random() < 0.25:  # older, superseded certificate of the same kind
                cert(e, code, exp - timedelta(days=365 * VALIDITY_YEARS[code]))
        if rng.random() < 0.2:
            code = rng.choice(EXTRA)
            certs.append([e[0], code, _d(REVIEW - timedelta(days=rng.randint(30, 900))),
                          _d(REVIEW + timedelta(days=rng.randint(-100, 900))), "Internal Academy",
                          f"{code[:3]}-{rng.randint(100000, 999999)}", 1, rng.choice(CERT_NOTES)])
        if restricted_before or rng.random() < 0.01:
            e[12] = "restricted"

    # planted cases
    e = new_emp("FORK-OP", "S04")
    healthy(e, ("FORKLIFT",))
    cert(e, "FORKLIFT", REVIEW - timedelta(days=5))                      # expired -> restricted
    e = new_emp("FORK-OP", "S05")
    healthy(e, ("FORKLIFT",))
    cert(e, "FORKLIFT", REVIEW)                                          # valid today, renew -> enroll
    e = new_emp("HAZMAT-HAND", "S09")
    healthy(e, ("HAZMAT",))
    cert(e, "HAZMAT", REVIEW + timedelta(days=400), verified=0)          # unverified -> restricted
    e = new_emp("SHIFT-LEAD", "S02")
    healthy(e, ("FIRSTAID",))
    cert(e, "FA-CPR", REVIEW + timedelta(days=300))                      # equivalent -> compliant
    e = new_emp("SHIFT-LEAD", "S06")
    healthy(e, ("FIRSTAID",))
    cert(e, "FA-CPR", REVIEW + timedelta(days=20))                       # equivalent, renew on FIRSTAID
    e = new_emp("ELEC-TECH", "S01")
    healthy(e, ("LOTO",))
    cert(e, "LOTO", date(2024, 10, 20))                                  # grace -> compliant, no booking
    e = new_emp("MAINT-TECH", "S08", work="restricted")
    healthy(e, ("LOTO",))
    cert(e, "LOTO", date(2024, 9, 25))                                   # before grace -> restricted
    e = new_emp("MAINT-TECH", "S03")
    healthy(e, ("LOTO",))
    cert(e, "LOTO", date(2024, 12, 31))                                  # grace edge -> no booking
    e = new_emp("FORK-OP", "S10", work="restricted")
    healthy(e, ("FORKLIFT",))
    cert(e, "FORKLIFT", date(2024, 8, 30))
    cert(e, "FORKLIFT", date(2027, 11, 1))                               # renewed -> clear
    e = new_emp("DRIVER", "S07", status="leave")
    healthy(e, ("YARD-DRIVE",))
    cert(e, "YARD-DRIVE", REVIEW - timedelta(days=40))                   # on leave -> untouched
    e = new_emp("WH-ASSOC", "S11", status="terminated")                 # terminated, no certs -> untouched
    e = new_emp("WH-ASSOC", "S02")
    cert(e, "SAFETY-BASIC", date(2024, 12, 5))
    registered = e                                                       # already registered -> no booking
    e = new_emp("ELEC-TECH", "S05")
    healthy(e, ("ELEC-LV",))
    cert(e, "ELEC-LV", REVIEW + timedelta(days=10))
    cert(e, "ELEC-LV", REVIEW + timedelta(days=1090))                    # already renewed -> no booking
    e = new_emp("OFFICE-ADM", "S01", work="restricted")                  # no requirements -> clear
    contend_a = new_emp("HAZMAT-HAND", "S07")
    healthy(contend_a, ("HAZMAT",))
    contend_b = new_emp("HAZMAT-HAND", "S08")
    healthy(contend_b, ("HAZMAT",))
    if contend_a[0] > contend_b[0]:
        contend_a, contend_b = contend_b, contend_a
    cert(contend_a, "HAZMAT", date(2024, 12, 12))                        # lower id, later expiry
    cert(contend_b, "HAZMAT", date(2024, 12, 9))                         # earlier expiry gets the seat
    e = new_emp("MAINT-TECH", "S09")
    healthy(e, ("WORK-HEIGHTS",))
    cert(e, "WORK-HEIGHTS", REVIEW + timedelta(days=61))                 # outside window -> nothing
    e = new_emp("DRIVER", "S04")
    healthy(e, ("YARD-DRIVE",))
    cert(e, "YARD-DRIVE", REVIEW + timedelta(days=3))                    # expiring, no session in time
    no_session_emp = e

    employees.sort(key=lambda x: x[0])
    leads = [x[0] for x in employees if x[6] == "SHIFT-LEAD"]
    for x in employees:
        if x[6] != "SHIFT-LEAD" and leads:
            x[13] = rng.choice(leads)
    con.executemany("insert into employees values (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", employees)
    rng.shuffle(certs)
    certs.sort(key=lambda c: c[2])
    con.executemany("insert into certifications (employee_id, cert_code, issued_on, expires_on, issuer, "
                    "certificate_no, verified, notes) values (?,?,?,?,?,?,?,?)", certs)

    # training sessions
    sessions = []
    codes = sorted({c for r in ROLES.values() for c in r[1]})
    sid = [4100]

    def session(code: str, region: str, start: date, cap: int, taken: int) -> str:
        sid[0] += rng.randint(1, 7)
        s = f"TS-{sid[0]}"
        sessions.append([s, code, region, _d(start), rng.choice(VENUES[region]), cap, taken])
        return s

    for region in REGIONS:
        for code in codes:
            if (code, region) in (("HAZMAT", "West"), ("YARD-DRIVE", "North")):
                continue
            for _ in range(scale.rows + 1):
                start = REVIEW + timedelta(days=rng.randint(-20, 100))
                cap = rng.randint(4, 10)
                session(code, region, start, cap, rng.randint(cap // 2, cap))
            for _ in range(scale.rows * 2):  # past courses
                cap = rng.randint(8, 12)
                session(code, region, REVIEW - timedelta(days=rng.randint(45, 720)), cap, cap - rng.randint(0, 3))
    session("HAZMAT", "West", date(2024, 12, 2), 8, 7)       # one seat: contention
    session("HAZMAT", "West", date(2025, 1, 20), 8, 2)       # after both expiries
    session("HAZMAT", "West", date(2024, 11, 12), 8, 3)      # already started
    session("YARD-DRIVE", "North", date(2024, 11, 25), 6, 1)  # after the planted expiry
    reg_session = session("SAFETY-BASIC", "Central", date(2024, 11, 28), 10, 6)
    session("SAFETY-BASIC", "Central", date(2024, 11, 20), 12, 2)       # earlier, plenty of seats
    sessions.sort(key=lambda s: s[0])
    con.executemany("insert into training_sessions values (?,?,?,?,?,?,?)", sessions)

    # existing enrollments (history + current registrations)
    enr = [[reg_session, registered[0], "2024-11-01", "registered"]]
    emp_ids = [x[0] for x in employees if x[0] not in (no_session_emp[0], contend_a[0], contend_b[0])]
    by_region: dict[str, list[str]] = {}
    for x in employees:
        by_region.setdefault(region_of[x[5]], []).append(x[0])
    for s in sessions:
        if s[3] < _d(REVIEW - timedelta(days=40)):
            for emp in rng.sample(by_region[s[2]], min(s[6], len(by_region[s[2]]))):
                enr.append([s[0], emp, _d(date.fromisoformat(s[3]) - timedelta(days=rng.randint(7, 40))),
                            "completed"])
            if rng.random() < 0.3:
                enr.append([s[0], rng.choice(by_region[s[2]]), s[3], "cancelled"])
            continue
        for _ in range(min(s[6], rng.randint(0, 2))):
            status = "completed" if s[3] < _d(REVIEW) else rng.choice(["registered", "registered", "cancelled"])
            enr.append([s[0], rng.choice(emp_ids), _d(REVIEW - timedelta(days=rng.randint(5, 60))), status])
    enr.sort(key=lambda x: (x[2], x[0]))
    con.executemany("insert into enrollments (session_id, employee_id, enrolled_on, status) values (?,?,?,?)", enr)
    hist = []
    for x in employees:
        if x[12] == "restricted":
            hist.append([x[0], _d(REVIEW - timedelta(days=rng.randint(20, 90))), "cleared", "restricted",
                         "Quarterly compliance review"])
    hist.sort(key=lambda h: (h[1], h[0]))
    con.executemany("insert into status_changes (employee_id, changed_on, old_status, new_status, reason) "
                    "values (?,?,?,?,?)", hist)
    con.commit()
    con.close()
    _files(root, scale, rng)


POLICY = """# Operational certification policy (HS-POL-014, rev. 6)

Owner: Group Health & Safety. Applies to the **quarterly compliance review dated 15 November 2024**.

## 1. Who is reviewed
Only employees whose employment status is **active**. Employees on leave keep their current work
status until they return (they are reviewed at their return-to-work meeting); terminated employees
are out of scope.

## 2. Required certificates
The certificates each role needs are listed in `compliance/role_requirements.json` (the current
matrix). A role with an empty list needs no certificates.

A certificate counts towards a requirement only if
* it is **verified** by HR (unverified uploads do not count), and
* it has not expired on the review date — a certificate is valid up to and including its
  expiry date.

## 3. Work status
* An active employee who lacks a valid certificate for **any** requirement of their role must be set to
  work status **restricted** (no operational duties).
* An active employee who is currently restricted but now holds valid certificates for every
  requirement must be set back to **cleared**.
* Record each change with the reason "Q4-2024 compliance review".

## 4. Renewal bookings
For every active employee who is **cleared** after the review: each requirement whose valid
certificate (if there are several, the one that expires last) expires within **60 days after the
review date** (on or before 14 January 2025) needs a renewal booking:

1. Book a training session for that certificate code in the **region of the employee's site** that
   starts after the review date and no later than the certificate's expiry date, and that still has
   a free seat. Choose the earliest such session (ties: lowest session id).
2. Skip the booking if the employee is already **registered** for a session of that certificate code.
3. If no session qualifies, do not book anything; the training team follows up manually.

Seats are limited. Make the bookings in order of certificate expiry date (earliest first; ties by
employee id), so that the most urgent renewals get the seats.

Restricted employees are not booked through this process; their manager books them directly.
"""

MEMO_FA = """Subject: First Aid — external certificates now accepted
From: Group Health & Safety
Date: 28 October 2024

Following the audit in September we have reviewed the Red Cross *First Aid & CPR* course. With
immediate effect, a verified **FA-CPR** certificate satisfies a **FIRSTAID** requirement in every role.

Renewals for FA-CPR holders are booked on our own FIRSTAID sessions (certificate code FIRSTAID) — we no
longer run FA-CPR sessions.
"""

MEMO_LOTO = """Subject: LOTO certificates — temporary extension
From: Group Health & Safety
Date: 4 November 2024

Our only accredited Lock-Out/Tag-Out trainer is on leave until February. To avoid restricting
technicians through no fault of their own:

* verified **LOTO** certificates with an expiry date between **1 October 2024 and 31 December 2024**
  (inclusive) are treated as valid until **31 March 2025**;
* do **not** book renewals for these certificates in the November review — the training team will
  schedule them in Q1.

Certificates that expired before 1 October 2024 are not covered by this extension.
"""

NOISE_MEMOS = [
    ("Car park resurfacing", "The staff car park at {site} will be resurfaced on {d}. Please use the overflow "
     "area behind gate 3. Shuttle runs every 15 minutes from 05:30."),
    ("Peak season overtime", "Voluntary overtime for peak opens on {d}. Sign up with your shift lead. "
     "Agency workers will be inducted at {site} in groups of {n}."),
    ("Canteen menu changes", "From {d} the canteen at {site} will offer a hot breakfast until 09:30 and a "
     "vegetarian option every day."),
    ("Hi-vis colour change", "Visitors will wear orange vests from {d}; yellow remains for staff. Please "
     "challenge anyone in the yard without a vest."),
    ("Christmas shutdown", "Sites close at 14:00 on 24 December and reopen on 27 December, except {site} "
     "which runs a skeleton shift of {n} colleagues."),
    ("Fire drill results", "The fire drill at {site} on {d} cleared the building in {n} minutes. Two fire "
     "doors were found wedged open; the warden team will re-brief."),
    ("Payroll cut-off", "Timesheets for November must be approved by {d}. Late approvals are paid in the "
     "December run."),
]


def _files(root: Path, scale, rng: random.Random) -> None:
    matrix = {"version": "2024.2", "effective_from": "2024-07-01",
              "roles": {k: {"title": v[0], "required_certificates": v[1]} for k, v in ROLES.items()},
              "notes": "Certificate codes as recorded in the HR certification register."}
    _write(root, "compliance/role_requirements.json", json.dumps(matrix, indent=2) + "\n")
    old = {"version": "2023.1", "effective_from": "2023-01-01", "superseded_by": "2024.2",
           "roles": {k: {"required_certificates": v} for k, v in ROLES_2023.items()}}
    _write(root, "compliance/archive/role_requirements_2023.json", json.dumps(old, indent=2) + "\n")
    _write(root, "compliance/certification_policy.md", POLICY)
    _write(root, "memos/2024-10-28_first_aid_certificates.md", MEMO_FA)
    _write(root, "memos/2024-11-04_loto_extension.md", MEMO_LOTO)
    used = set()
    for _ in range(scale.n_files(5)):
        title, body = rng.choice(NOISE_MEMOS)
        d = date(2024, 8, 1) + timedelta(days=rng.randint(0, 120))
        name = f"memos/{_d(d)}_{title.lower().replace(' ', '_').replace('-', '_')}.md"
        while name in used:
            d += timedelta(days=1)
            name = f"memos/{_d(d)}_{title.lower().replace(' ', '_').replace('-', '_')}.md"
        used.add(name)
        fill = dict(site=rng.choice(SITES)[1], d=_d(d + timedelta(days=rng.randint(3, 30))), n=rng.randint(3, 25))
        _write(root, name, f"Subject: {title}\nDate: {_d(d)}\n\n{body.format(**fill)}\n")
    for k in range(scale.n_files(4)):
        site = SITES[k % len(SITES)]
        lines = [f"# {site[1]} — monthly H&S report ({['August', 'September', 'October'][k % 3]} 2024)", "",
                 f"* Lost-time incidents: {rng.randint(0, 3)}", f"* Near misses reported: {rng.randint(2, 40)}",
                 f"* Forklift audits passed: {rng.randint(80, 100)}%",
                 f"* Toolbox talks delivered: {rng.randint(4, 20)}", "",
                 "Actions: " + rng.choice(["replace damaged racking upright in aisle 12",
                                           "repaint pedestrian walkway at dock 4",
                                           "refresh spill kits in the chilled chamber",
                                           "review battery charging area ventilation"]) + "."]
        _write(root, f"reports/hs_monthly_{site[0]}_{k + 1}.md", "\n".join(lines) + "\n")
    for k in range(scale.n_files(2)):
        _write(root, f"training/course_catalogue_{k + 1}.md",
               "# Training course catalogue\n\n| Code | Course | Duration |\n|---|---|---|\n"
               + "\n".join(f"| {c} | {c.title().replace('-', ' ')} course | {rng.randint(1, 3)} day(s) |"
                           for c in sorted(VALIDITY_YEARS)) + "\n\nBooking is done by the training team "
               "through the HR system. Catalogue page " + str(k + 1) + ".\n")
