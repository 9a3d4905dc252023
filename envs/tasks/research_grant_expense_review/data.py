"""Research grant expense review: funders, grants, budget lines, researchers and expense claims.

The university procedure, each funder's terms (eligibility, pre-approval thresholds), the FX table and
the equipment pre-approval register exist only as workspace files. Planted at every scale: a running
budget line that ends exactly at zero, equipment with missing / too small / valid pre-approvals,
ineligible categories per funder, a EUR purchase below the GBP threshold, an out-of-period claim and
a suspended grant.
"""

from __future__ import annotations

import csv
import io
import random
import shutil
import sqlite3
from datetime import date, datetime, timedelta
from pathlib import Path

FUNDERS = [
    ("UKRI", "UK Research and Innovation", "public"),
    ("WELL", "Wellcome Trust", "charity"),
    ("ERC", "European Research Council", "public"),
    ("LEVH", "Leverhulme Trust", "charity"),
    ("BHF", "British Heart Foundation", "charity"),
    ("CRUK", "Cancer Research UK", "charity"),
    ("NIHR", "National Institute for Health and Care Research", "public"),
]
# funder -> (ineligible categories, equipment pre-approval threshold in GBP or None if equipment ineligible)
TERMS = {
    "UKRI": ({"hospitality"}, 10000),
    "WELL": ({"publication", "hospitality"}, 5000),
    "ERC": (set(), 20000),
    "LEVH": ({"equipment"}, None),
    "BHF": ({"subcontract", "hospitality"}, 5000),
    "CRUK": ({"hospitality"}, 10000),
    "NIHR": (set(), 25000),
}
CATEGORIES = ["consumables", "travel", "equipment", "publication", "hospitality", "subcontract"]
FX = {  # GBP per unit, by month 2024-01..12
    "EUR": [0.8597, 0.8553, 0.8565, 0.8568, 0.8546, 0.8467, 0.8441, 0.8521, 0.8408, 0.8353, 0.8322, 0.8279],
    "USD": [0.7873, 0.7918, 0.7857, 0.7950, 0.7891, 0.7868, 0.7767, 0.7713, 0.7571, 0.7640, 0.7836, 0.7893],
    "CHF": [0.9207, 0.9012, 0.8795, 0.8725, 0.8676, 0.8803, 0.8745, 0.9011, 0.8938, 0.8897, 0.8934, 0.8847],
}
DEPTS = ["Chemistry", "Physics", "Biosciences", "Medicine", "Computer Science", "History", "Psychology",
         "Engineering", "Public Health", "Earth Sciences"]
FIRST = ["Amelia", "Rahul", "Grace", "Tobias", "Nadia", "Oliver", "Mei", "Kofi", "Hannah", "Luca", "Zara", "Ewan",
         "Ingrid", "Samuel", "Aisha", "Patrick", "Elena", "Joseph", "Freya", "Daniel", "Yasmin", "Callum"]
LAST = ["Thompson", "Iyer", "Whitfield", "Becker", "Haddad", "Morgan", "Zhang", "Mensah", "Clarke", "Ferrari",
        "Sheikh", "MacLeod", "Sørensen", "Adeyemi", "Rahman", "Gallagher", "Petrova", "Hughes", "Lindqvist", "Evans"]
TOPICS = ["cardiac fibrosis", "quantum sensing", "antimicrobial resistance", "medieval trade networks",
          "machine learning for imaging", "coastal erosion", "child language acquisition", "battery materials",
          "immune ageing", "sleep and memory", "urban heat islands", "protein folding", "early modern print culture",
          "gut microbiome", "soft robotics", "dementia care pathways", "exoplanet atmospheres", "tumour evolution"]
DESCR = {
    "consumables": ["Pipette tips and tubes", "Antibodies (3 vials)", "Cell culture media", "Reagent kit",
                    "Gas cylinders", "Sequencing run", "Glassware replacement", "Printer toner and paper",
                    "Survey participant vouchers", "Archive reproduction fees"],
    "travel": ["Conference registration and flights", "Fieldwork travel", "Train to collaborator site",
               "Accommodation, 3 nights", "Archive visit travel", "Workshop travel (economy)"],
    "equipment": ["Centrifuge", "Laptop for data analysis", "Thermal cycler", "Microscope camera",
                  "Data acquisition unit", "GPU workstation", "Environmental sensors", "Freezer -80C"],
    "publication": ["Open access article processing charge", "Book subvention", "Figure licensing fees"],
    "hospitality": ["Advisory board lunch", "Workshop catering", "Dinner with visiting speaker"],
    "subcontract": ["Transcription services", "External statistical analysis", "Sample analysis (contract lab)"],
}
RANGES = {"consumables": (20, 3000), "travel": (150, 2500), "equipment": (1500, 30000),
          "publication": (800, 3500), "hospitality": (40, 600), "subcontract": (2000, 15000)}
RUN = date(2024, 11, 4)


def _reset(root: Path) -> None:
    for name in ("db.sqlite", "db.sqlite-journal", "db.sqlite-wal", "db.sqlite-shm"):
        if (root / name).exists():
            (root / name).unlink()
    ws = root / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    for p in sorted(ws.iterdir()):
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def _write(root: Path, rel: str, text: str) -> None:
    path = root / "workspace" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")


def _csv(header, rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def fx(currency: str, d: str) -> float:
    return 1.0 if currency == "GBP" else FX[currency][int(d[5:7]) - 1]


SCHEMA = """
create table funders (code text primary key, name text, kind text);
create table researchers (id text primary key, name text, department text, role text, email text);
create table grants (id text primary key, funder_ref text, funder_code text references funders(code), title text,
    pi_id text references researchers(id), department text, start_date text, end_date text, status text);
create table budget_lines (id integer primary key, grant_id text references grants(id), category text,
    awarded_gbp real, committed_gbp real);
create table expenses (id text primary key, grant_id text references grants(id), claimant_id text, category text,
    description text, amount real, currency text, expense_date text, submitted_at text, preapproval_ref text,
    status text, approved_gbp real, reject_reason text);
"""


def _ref(rng, funder: str) -> str:
    n = rng.randint(100000, 999999)
    return {"UKRI": f"MR/X{n}/1", "WELL": f"{n}/Z/23/Z", "ERC": f"ERC-2022-STG-101{n}",
            "LEVH": f"RPG-2023-{n % 1000:03d}", "BHF": f"PG/23/{n % 100000:05d}", "CRUK": f"C{n % 100000}/A{n}",
            "NIHR": f"NIHR{n}"}[funder]


def build(root: Path, scale, seed: int) -> None:
    rng = random.Random(seed)
    root = Path(root)
    _reset(root)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)
    for f in FUNDERS:
        con.execute("insert into funders values (?,?,?)", f)

    # researchers -------------------------------------------------------------------------------
    people = []
    names = set()
    while len(people) < scale.n_rows(40):
        name = f"{rng.choice(['Dr', 'Prof', 'Dr', 'Ms', 'Mr'])} {rng.choice(FIRST)} {rng.choice(LAST)}"
        if name in names:
            continue
        names.add(name)
        pid = f"R{1000 + len(people)}"
        role = "Principal Investigator" if name.startswith("Prof") else rng.choice(
            ["Postdoctoral Researcher", "Research Fellow", "PhD Student", "Lecturer", "Research Technician"])
        dept = rng.choice(DEPTS)
        email = name.split(" ", 1)[1].lower().replace(" ", ".") + "@uni.example.ac.uk"
        people.append((pid, name, dept, role, email))
        con.execute("insert into researchers values (?,?,?,?,?)", people[-1])
    pids = [p[0] for p in people]

    # grants ------------------------------------------------------------------------------------
    planted = [("UKRI", "2022-01-01", "2025-12-31", "active"), ("WELL", "2023-04-01", "2027-03-31", "active"),
               ("LEVH", "2023-09-01", "2026-08-31", "active"), ("ERC", "2022-10-01", "2027-09-30", "active"),
               ("NIHR", "2021-10-01", "2024-09-30", "active"), ("BHF", "2023-01-01", "2026-12-31", "suspended")]
    grants = []
    for f, s, e, st in planted:
        grants.append({"funder": f, "start": s, "end": e, "status": st})
    while len(grants) < scale.n_rows(25):
        s = date(2020, 1, 1) + timedelta(days=rng.randint(0, 1600))
        e = s + timedelta(days=365 * rng.randint(2, 5) - 1)
        st = "active" if e >= date(2024, 6, 1) else "closed"
        if st == "active" and rng.random() < 0.06:
            st = "suspended"
        grants.append({"funder": rng.choice(FUNDERS)[0], "start": s.isoformat(), "end": e.isoformat(), "status": st})
    for i, g in enumerate(grants):
        g["id"] = f"G-{24001 + i}"
        g["pi"] = rng.choice(pids)
        con.execute("insert into grants values (?,?,?,?,?,?,?,?,?)",
                    (g["id"], _ref(rng, g["funder"]), g["funder"], f"{rng.choice(TOPICS).capitalize()}: "
                     f"{rng.choice(['mechanisms', 'new methods', 'a longitudinal study', 'from lab to clinic', 'networks and change'])}",
                     g["pi"], rng.choice(DEPTS), g["start"], g["end"], g["status"]))

    # budget lines ------------------------------------------------------------------------------
    lines = {}  # (grant, cat) -> [awarded, committed]
    for i, g in enumerate(grants):
        cats = ["staff"] + sorted(rng.sample(CATEGORIES, rng.randint(3, 5)))
        if i < len(planted):
            cats = ["staff"] + CATEGORIES
        for c in cats:
            awarded = float(round(rng.uniform(5000, 60000) if c != "staff" else rng.uniform(80000, 400000), -2))
            committed = round(awarded * rng.uniform(0.1, 0.8), 2)
            lines[(g["id"], c)] = [awarded, committed]
    g1 = grants[0]["id"]
    lines[(g1, "consumables")] = [12000.0, 11000.0]  # exactly GBP 1,000 left
    for c in ("equipment", "travel", "hospitality"):
        lines[(g1, c)] = [60000.0, 12000.0]
    for g in grants[1:6]:
        for c in CATEGORIES:
            lines[(g["id"], c)] = [50000.0, round(rng.uniform(2000, 15000), 2)]

    # expenses ----------------------------------------------------------------------------------
    exps = []

    def add(grant, cat, desc, amount, cur, edate, sub, pa=None, status="submitted", approved=None, reason=None,
            claimant=None):
        exps.append({"grant": grant, "cat": cat, "desc": desc, "amount": amount, "cur": cur, "date": edate,
                     "sub": sub, "pa": pa, "status": status, "approved": approved, "reason": reason,
                     "claimant": claimant or rng.choice(pids)})

    G = [g["id"] for g in grants]
    add(G[0], "equipment", "Thermal cycler (replacement)", 12400.00, "GBP", "2024-09-18", "2024-10-01 09:12", "PA-0101")
    add(G[0], "equipment", "GPU workstation", 10950.00, "GBP", "2024-09-25", "2024-10-03 14:40")
    add(G[0], "equipment", "Microscope camera and mount", 15200.00, "GBP", "2024-10-02", "2024-10-07 11:05", "PA-0102")
    add(G[0], "hospitality", "Advisory board lunch", 180.00, "GBP", "2024-10-10", "2024-10-11 16:20")
    add(G[0], "consumables", "Antibodies (3 vials)", 640.00, "GBP", "2024-10-08", "2024-10-14 10:02")
    add(G[0], "consumables", "Cell culture media", 420.00, "GBP", "2024-10-01", "2024-10-16 13:30")
    add(G[0], "consumables", "Reagent kit", 360.00, "GBP", "2024-10-15", "2024-10-21 09:45")
    add(G[1], "publication", "Open access article processing charge", 1850.00, "GBP", "2024-09-30",
        "2024-10-04 12:00")
    add(G[1], "travel", "Conference registration and flights (Boston)", 1240.00, "USD", "2024-09-12",
        "2024-10-09 15:15")
    add(G[2], "equipment", "Laptop for data analysis", 2300.00, "GBP", "2024-10-03", "2024-10-10 10:10")
    add(G[3], "equipment", "Data acquisition unit", 21000.00, "EUR", "2024-08-27", "2024-10-02 08:55")
    add(G[3], "hospitality", "Workshop catering (Heidelberg)", 420.00, "EUR", "2024-09-19", "2024-10-08 17:05")
    add(G[4], "travel", "Fieldwork travel", 310.00, "GBP", "2024-10-03", "2024-10-18 11:11")
    add(G[4], "consumables", "Survey participant vouchers", 275.00, "GBP", "2024-09-27", "2024-10-15 09:20")
    add(G[5], "consumables", "Pipette tips and tubes", 96.40, "GBP", "2024-10-05", "2024-10-12 14:00")

    active = [g for g in grants[6:] if g["status"] == "active"]
    others = [g for g in grants[6:] if g["status"] != "active"]
    pas = [["PA-0101", G[0], "Thermal cycler (replacement)", "13000.00", "approved", "2024-08-30"],
           ["PA-0102", G[0], "Microscope camera and mount", "12000.00", "approved", "2024-09-05"]]
    for _ in range(scale.n_rows(15)):
        g = rng.choice(active) if rng.random() < 0.9 or not others else rng.choice(others)
        cat = rng.choice([c for (gid, c) in lines if gid == g["id"] and c != "staff"] + ["hospitality"])
        lo, hi = RANGES[cat]
        amount = round(rng.uniform(lo, hi), 2)
        cur = rng.choices(["GBP", "EUR", "USD", "CHF"], weights=[74, 14, 9, 3])[0]
        if rng.random() < 0.1:
            ed = date.fromisoformat(g["end"]) + timedelta(days=rng.randint(1, 40))
        else:
            ed = date(2024, 7, 1) + timedelta(days=rng.randint(0, 110))
        ed = min(ed, date(2024, 10, 25))
        sub = datetime(2024, 10, 1, 8) + timedelta(minutes=rng.randint(0, 31 * 24 * 60 - 600))
        pa = None
        thr = TERMS[g["funder"]][1]
        if cat == "equipment" and thr is not None and amount * fx(cur, ed.isoformat()) >= thr and rng.random() < 0.7:
            pa = f"PA-{len(pas) + 101:04d}"
            status = rng.choices(["approved", "declined", "expired"], weights=[70, 15, 15])[0]
            cap = amount * fx(cur, ed.isoformat()) * rng.choice([1.1, 1.05, 1.2, 0.9])
            pas.append([pa, g["id"], rng.choice(DESCR["equipment"]), f"{cap:.2f}", status,
                        (ed - timedelta(days=rng.randint(5, 60))).isoformat()])
        add(g["id"], cat, rng.choice(DESCR[cat]), amount, cur, ed.isoformat(), sub.strftime("%Y-%m-%d %H:%M"), pa)
    # history: decided claims of earlier months
    for _ in range(scale.n_rows(420)):
        g = rng.choice(grants)
        cat = rng.choice([c for (gid, c) in lines if gid == g["id"] and c != "staff"])
        lo, hi = RANGES[cat]
        amount = round(rng.uniform(lo, min(hi, 6000)), 2)
        cur = rng.choices(["GBP", "EUR", "USD"], weights=[80, 12, 8])[0]
        ed = date(2024, 1, 2) + timedelta(days=rng.randint(0, 250))
        sub = datetime.combine(ed, datetime.min.time()) + timedelta(days=rng.randint(1, 20), hours=rng.randint(8, 17))
        status = rng.choices(["paid", "approved", "rejected"], weights=[70, 15, 15])[0]
        approved = round(amount * fx(cur, ed.isoformat()), 2) if status != "rejected" else None
        reason = rng.choice(["INELIGIBLE", "OVER_BUDGET", "OUT_OF_PERIOD", "NO_PREAPPROVAL"]) \
            if status == "rejected" else None
        add(g["id"], cat, rng.choice(DESCR[cat]), amount, cur, ed.isoformat(), sub.strftime("%Y-%m-%d %H:%M"),
            None, status, approved, reason)
    ids = rng.sample(range(10000, 99999), len(exps))
    for e, n in zip(exps, ids, strict=True):
        e["id"] = f"EXP-{n}"
    exps.sort(key=lambda e: e["id"])
    for e in exps:
        con.execute("insert into expenses values (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (e["id"], e["grant"], e["claimant"], e["cat"], e["desc"], e["amount"], e["cur"], e["date"],
                     e["sub"], e["pa"], e["status"], e["approved"], e["reason"]))
    for (gid, cat), (aw, cm) in sorted(lines.items()):
        con.execute("insert into budget_lines (grant_id, category, awarded_gbp, committed_gbp) values (?,?,?,?)",
                    (gid, cat, aw, cm))
    con.commit()
    con.close()

    # workspace ---------------------------------------------------------------------------------
    _write(root, "finance/grant_expense_procedure.md", PROCEDURE)
    rows = []
    for cur, vals in FX.items():
        for m, v in enumerate(vals):
            rows.append([f"2024-{m + 1:02d}", cur, f"{v:.4f}"])
    rows.sort()
    _write(root, "finance/fx_rates_2024.csv", _csv(["month", "currency", "gbp_per_unit"], rows))
    for k in range(scale.n_rows(6)):
        g = rng.choice(grants)
        pas.append([f"PA-{len(pas) + 101:04d}", g["id"], rng.choice(DESCR["equipment"]),
                    f"{rng.uniform(5000, 40000):.2f}", rng.choice(["approved", "approved", "expired"]),
                    (date(2024, 1, 1) + timedelta(days=rng.randint(0, 250) + k)).isoformat()])
    pas.sort()
    _write(root, "approvals/equipment_preapprovals.csv",
           _csv(["preapproval_ref", "grant_id", "item", "max_amount_gbp", "status", "decided_on"], pas))
    for code, name, _kind in FUNDERS:
        _write(root, f"funders/{code}_terms.md", FUNDER_TEXT[code].format(name=name))

    # noise: lab meeting minutes, progress reports, newsletters
    for i in range(scale.n_files(1)):
        d = RUN - timedelta(days=14 * i + rng.randint(0, 6))
        _write(root, f"minutes/{d.isoformat()}_research_committee.md", _minutes(rng, d, people))
    for i in range(scale.n_files(1)):
        g = grants[rng.randrange(len(grants))]
        _write(root, f"reports/{g['id']}_progress_report_{i + 1:02d}.md", _report(rng, g))
    for i in range(scale.n_files(1)):
        _write(root, f"newsletters/research_office_news_{i + 1:02d}.txt", _news(rng))


def _minutes(rng, d: date, people) -> str:
    chair = rng.choice(people)[1]
    items = ["Ethics applications backlog reduced to {n} pending.", "New REF impact case studies shortlisted ({n}).",
             "Reminder: equipment above funder thresholds needs pre-approval BEFORE ordering.",
             "Studentship allocations for next year: {n} funded places.", "Open access compliance at {n}%.",
             "Technician cover for the mass spec facility agreed."]
    body = "\n".join("- " + s.format(n=rng.randint(3, 95)) for s in rng.sample(items, 4))
    return f"# Research Committee minutes - {d.isoformat()}\n\nChair: {chair}\n\n{body}\n"


def _report(rng, g) -> str:
    return (f"# Progress report - {g['id']}\n\nFunder: {g['funder']}  |  Period: {g['start']} to {g['end']}\n\n"
            f"Milestones met: {rng.randint(2, 8)} of {rng.randint(8, 10)}. Publications this year: {rng.randint(0, 6)}.\n"
            f"Spend to date is {rng.randint(20, 90)}% of the award; no variations requested.\n")


def _news(rng) -> str:
    pool = ["The research office moves to the Hub building next month.",
            "Funding calls closing soon: Horizon Europe MSCA, Leverhulme Research Project Grants.",
            "Training: writing a data management plan (online, 90 minutes).",
            "Congratulations to the {n} teams awarded seed funding this round.",
            "Finance reminds claimants to attach itemised receipts to every claim."]
    return "\n\n".join(s.format(n=rng.randint(3, 20)) for s in rng.sample(pool, 4)) + "\n"


PROCEDURE = """# Grant expense claims - review procedure (Research Finance)

Applies to all externally funded research grants. Reviewers process the queue of claims with status
`submitted` **in order of submission time** (`submitted_at`, earliest first), one claim at a time, and
either approve or reject each.

## 1. Amount in GBP
Budgets are held in GBP. Convert a claim in another currency with the monthly rate in
finance/fx_rates_2024.csv for the month of the **expense date** (GBP = amount x gbp_per_unit, rounded
to pennies). All thresholds and budget checks use this GBP amount.

## 2. Checks, in this order (the first failing check gives the rejection reason)
1. `GRANT_SUSPENDED` - the grant's status is `suspended`.
2. `OUT_OF_PERIOD` - the expense date is before the grant start date or after its end date.
3. `INELIGIBLE` - the funder's terms (funders/<FUNDER CODE>_terms.md) exclude the claim's category.
4. `NO_PREAPPROVAL` - an equipment claim at or above the funder's pre-approval threshold without a
   valid pre-approval: the claim's `preapproval_ref` must appear in approvals/equipment_preapprovals.csv
   for the same grant, with status `approved` and `max_amount_gbp` at least the claim's GBP amount.
5. `OVER_BUDGET` - the grant's budget line for the claim's category has less remaining than the GBP
   amount (remaining = awarded - committed; a claim may use the remaining budget exactly). A grant
   without a budget line for the category has nothing remaining.

## 3. Recording the decision
Approve with the GBP amount (the system adds it to the budget line's committed total, so later claims
see the reduced remaining budget), or reject with the reason code.
"""

FUNDER_TEXT = {
    "UKRI": """# {name} - grant terms and conditions (extract for Research Finance)

* Costs must be incurred within the grant period.
* Hospitality and entertainment costs are **not eligible**.
* Equipment: individual items costing GBP 10,000 or more (incl. VAT) require pre-approval by the
  research office before purchase. Smaller items may be bought on the consumables budget line.
* Publication (open access) costs are eligible where not covered by the UKRI OA block grant.
""",
    "WELL": """# {name} - eligible costs (extract)

* Open access publication charges are **not** paid from individual grants: they are met from the
  institution's Wellcome open access block grant. Claims for publication costs are ineligible.
* Hospitality is ineligible.
* Equipment items of GBP 5,000 and above must be pre-approved.
* Travel: economy class only; the university's travel policy applies.
""",
    "ERC": """# {name} - ERC grant agreement, eligible costs (summary)

* All actual costs necessary for the action are eligible, including hospitality for project
  workshops and open access fees.
* Equipment costs are eligible as depreciation; items of GBP 20,000 or more (GBP equivalent at the
  university's monthly rate) need pre-approval by the host institution.
* Costs must be incurred within the action duration.
""",
    "LEVH": """# {name} - Research Project Grants: what we fund

* The Trust does **not** fund equipment of any kind on project grants (no laptops, no lab equipment).
* Travel, consumables, publication and dissemination costs are eligible.
* Hospitality is eligible for project workshops only, at modest levels.
""",
    "BHF": """# {name} - award conditions (finance extract)

* Subcontracted research services are ineligible unless written into the award letter; they are
  treated as ineligible for expense claims.
* Hospitality is ineligible.
* Equipment of GBP 5,000 or more requires pre-approval.
""",
    "CRUK": """# {name} - grant conditions (finance extract)

* Hospitality costs are ineligible.
* Equipment items of GBP 10,000 or more require prior approval.
* Publication costs are eligible.
""",
    "NIHR": """# {name} - finance guidance (extract)

* Research costs, travel, dissemination and hospitality for PPI (patient and public involvement)
  events are eligible.
* Equipment items of GBP 25,000 or more require prior approval.
""",
}
