"""Vaccine lot recall outreach: sites, patients, problem lists, vaccine lots, immunizations and earlier
outreach tasks in SQLite; manufacturer notices (recalls, withdrawals, shortages...), the outreach SOP and the
immunocompromising code list in the workspace."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from pathlib import Path

from envs.taskkit import Scale

FIRST_F = ["Abigail", "Adwoa", "Aiko", "Alicia", "Amani", "Beatrix", "Carla", "Chiara", "Dana", "Divya", "Eleanor",
           "Esperanza", "Fatou", "Gwen", "Hadley", "Ilse", "Jana", "Joy", "Kalani", "Kerry-Ann", "Lorena", "Lucille",
           "Mabel", "Marisa", "Mireille", "Nour", "Opal", "Parisa", "Rosalind", "Ruth", "Shirin", "Tamsin", "Ursula",
           "Vivian", "Wanjiru", "Yolanda", "Zofia", "Noor", "Harriet", "Ngozi"]
FIRST_M = ["Aarav", "Abel", "Alonso", "Anton", "Bertrand", "Bongani", "Cedric", "Chidi", "Cormac", "Dariusz",
           "Desmond", "Elias", "Ernesto", "Femi", "Gunnar", "Hector", "Hugo", "Ignatius", "Jalen", "Joaquim",
           "Kenta", "Lorenzo", "Magnus", "Mustafa", "Nikolai", "Obinna", "Orrin", "Pavel", "Quincy", "Rashad",
           "Stellan", "Tevita", "Ulrich", "Vikram", "Walter", "Yonatan", "Zubair", "Ezra", "Lionel", "Hamid"]
LAST = ["Abernathy", "Achebe", "Almeida", "Arslan", "Bachmann", "Bergstrom", "Bhatt", "Calloway", "Castellanos",
        "Chaudhry", "Corrigan", "Da Silva", "Dlamini", "Ebersole", "Escobar", "Fairbanks", "Feng", "Gallo",
        "Gruber", "Haugen", "Herrera", "Holloway", "Ishikawa", "Jablonski", "Juarez", "Kamara", "Keller",
        "Kovacs", "Laine", "Lozano", "Madsen", "Mbatha", "Mercado", "Nakashima", "Nwosu", "O'Connell",
        "Oyelowo", "Pacheco", "Petersen", "Quintero", "Rasmussen", "Riordan", "Sandoval", "Seo", "Solberg",
        "Tembo", "Trujillo", "Van Dyke", "Villanueva", "Whitlock", "Yeboah", "Zielinski", "Ferraro", "Lindqvist"]
LANGS = ["English"] * 8 + ["Spanish", "Spanish", "Vietnamese", "Somali", "Russian", "Tagalog"]
SITES = [
    (1, "BV-NORTH", "Bayview Family Health — North Clinic", "Lynnwood", "425-555-0141"),
    (2, "BV-DOWN", "Bayview Family Health — Downtown", "Seattle", "206-555-0178"),
    (3, "BV-PEDS", "Bayview Pediatrics Center", "Bellevue", "425-555-0190"),
    (4, "BV-SOUTH", "Bayview Family Health — South Clinic", "Kent", "253-555-0112"),
    (5, "BV-ISL", "Bayview Island Clinic", "Vashon", "206-555-0133"),
    (6, "BV-MOBILE", "Bayview Mobile Vaccination Unit", "Seattle", "206-555-0166"),
]
# vaccine_id, cvx, product, manufacturer, presentation, kind
VACCINES = [
    (1, "150", "Fluzora Quadrivalent 2024-2025", "Corvane Biologics", "0.5 mL prefilled syringe", "flu"),
    (2, "150", "Influvance Quad 2024-2025", "Meridian Vaccines", "0.5 mL single-dose vial", "flu"),
    (3, "08", "Hepavance-B Pediatric", "Lystra Pharma", "0.5 mL vial", "hepb"),
    (4, "08", "HBVax-Ped", "Corvane Biologics", "0.5 mL prefilled syringe", "hepb"),
    (5, "115", "Tdaplex", "Meridian Vaccines", "0.5 mL prefilled syringe", "tdap"),
    (6, "187", "Zostrava", "Halden Bio", "2-vial kit", "zoster"),
    (7, "216", "Pneumova 20", "Northwind Biotech", "0.5 mL prefilled syringe", "pneumo"),
    (8, "03", "MMRevive", "Lystra Pharma", "lyophilized, 0.5 mL", "mmr"),
    (9, "21", "Varistat", "Halden Bio", "lyophilized, 0.5 mL", "varicella"),
    (10, "165", "Papillon-9", "Northwind Biotech", "0.5 mL prefilled syringe", "hpv"),
    (11, "308", "Covira 2024-2025", "Northwind Biotech", "0.3 mL multi-dose vial", "covid"),
]
# lot number, vaccine_id, received, expiration, group
LOTS = [
    ("FZ4417A", 1, "2024-08-19", "2025-06-30", "R1"), ("FZ4417B", 1, "2024-08-26", "2025-06-30", "R1"),
    ("FZ4420C", 1, "2024-09-09", "2025-06-30", "R1"), ("FZ4425D", 1, "2024-09-30", "2025-06-30", "ok"),
    ("FZ4431E", 1, "2024-10-21", "2025-06-30", "ok"), ("IQ88120", 2, "2024-08-22", "2025-06-30", "ok"),
    ("IQ88177", 2, "2024-10-02", "2025-06-30", "ok"), ("FZ3902K", 1, "2023-08-28", "2024-06-30", "old"),
    ("IQ80011", 2, "2023-09-05", "2024-06-30", "old"),
    ("HB2291", 3, "2024-12-16", "2026-03-31", "R2"), ("HB2294", 3, "2025-01-13", "2026-03-31", "R2"),
    ("HB2302", 3, "2025-02-24", "2026-05-31", "ok"), ("HB2310", 3, "2025-04-07", "2026-08-31", "ok"),
    ("HV51207", 4, "2024-06-10", "2026-01-31", "ok"), ("HB2188", 3, "2024-05-13", "2025-12-31", "ok"),
    ("TD7781", 5, "2024-07-08", "2026-02-28", "W1"), ("TD7790", 5, "2024-11-18", "2026-06-30", "ok"),
    ("ZS1102", 6, "2024-02-05", "2025-10-31", "C1"), ("ZS1140", 6, "2024-09-16", "2026-03-31", "ok"),
    ("PN20031", 7, "2024-03-11", "2025-11-30", "ok"), ("PN20077", 7, "2024-12-02", "2026-05-31", "ok"),
    ("MR6610", 8, "2024-04-15", "2025-10-31", "ok"), ("MR6655", 8, "2025-01-20", "2026-07-31", "ok"),
    ("VR3301", 9, "2024-06-03", "2025-12-31", "ok"), ("HP9120", 10, "2024-07-29", "2026-01-31", "ok"),
    ("CV24X19", 11, "2024-09-03", "2025-08-31", "ok"), ("CV24X52", 11, "2024-11-11", "2025-08-31", "ok"),
]
R1_WINDOW = ("2024-09-15", "2025-01-31")
R2_WINDOW = ("2025-01-06", "2025-04-30")
OUTREACH_DATE = dt.date(2025, 6, 2)

NOISE_PROBLEMS = [("I10", "Essential hypertension"), ("E11.9", "Type 2 diabetes mellitus without complications"),
                  ("J45.909", "Unspecified asthma, uncomplicated"), ("E78.5", "Hyperlipidemia, unspecified"),
                  ("F41.1", "Generalized anxiety disorder"), ("M54.50", "Low back pain, unspecified"),
                  ("K21.9", "Gastro-esophageal reflux disease"), ("E03.9", "Hypothyroidism, unspecified"),
                  ("Z79.4", "Long term (current) use of insulin"), ("Z79.899", "Other long term drug therapy"),
                  ("N18.30", "Chronic kidney disease, stage 3 unspecified"), ("M06.9", "Rheumatoid arthritis, unspecified"),
                  ("L40.0", "Psoriasis vulgaris"), ("J44.9", "Chronic obstructive pulmonary disease"),
                  ("Z86.19", "Personal history of other infectious diseases"), ("D64.9", "Anemia, unspecified")]
IC_PROBLEMS = [("C91.10", "Chronic lymphocytic leukemia of B-cell type, not in remission"),
               ("B20", "Human immunodeficiency virus [HIV] disease"), ("Z94.0", "Kidney transplant status"),
               ("D84.821", "Immunodeficiency due to drugs"), ("Z79.52", "Long term (current) use of systemic steroids"),
               ("C83.30", "Diffuse large B-cell lymphoma, unspecified site"), ("D70.1", "Agranulocytosis secondary to cancer chemotherapy"),
               ("Z92.21", "Personal history of antineoplastic chemotherapy"), ("D83.9", "Common variable immunodeficiency, unspecified")]
DECOY_IC = [("Z79.4", "Long term (current) use of insulin"), ("M06.9", "Rheumatoid arthritis, unspecified"),
            ("Z79.899", "Other long term drug therapy"), ("C44.91", "Basal cell carcinoma of skin, unspecified")]
STAFF = ["RN T. Okafor", "MA L. Guerrero", "RN P. Lindahl", "LPN J. Mwangi", "RN S. Castillo", "MA D. Huang",
         "PharmD K. Romero", "RN A. Bjornsson"]

# recall, age kind, ic, contact, doses, deceased
BASE_CANDIDATES = [
    ("R1", "adult", None, "portal", "one", False),
    ("R1", "exact65", None, "phone", "one", False),
    ("R1", "just64", "decoy", "letter", "one", False),
    ("R1", "adult", "active", "phone", "end_of_window", False),
    ("R1", "adult", "resolved", "portal", "one", False),
    ("R1", "senior", None, "phone", "one", True),
    ("R1", "adult", None, "portal", "revaccinated", False),
    ("R1", "adult", None, "phone", "before_window", False),
    ("R1", "infant", None, "phone", "two", False),
    ("R1", "child", None, "letter", "error_only", False),
    ("R2", "infant", None, "phone", "one", False),
    ("R2", "exact2", None, "portal", "one_plus_error", False),
    ("R2", "infant", None, "portal", "revaccinated", False),
]
EXTRA_POOL = [
    ("R1", "adult", None, "portal", "one", False), ("R1", "senior", None, "phone", "one", False),
    ("R1", "adult", "active", "letter", "one", False), ("R1", "adult", "decoy", "phone", "one", False),
    ("R1", "child", None, "portal", "two", False), ("R1", "adult", None, "phone", "revaccinated", False),
    ("R1", "senior", None, "portal", "after_window", False), ("R1", "adult", None, "phone", "one", True),
    ("R1", "adult", "resolved", "phone", "end_of_window", False), ("R1", "senior", "active", "letter", "two", False),
    ("R2", "infant", None, "phone", "one", False), ("R2", "infant", None, "portal", "two", False),
    ("R2", "infant", None, "letter", "revaccinated", False), ("R2", "child", "active", "phone", "one", False),
    ("R2", "infant", None, "phone", "error_only", False), ("R2", "adult", None, "portal", "one", False),
]


def _d(s: str) -> dt.date:
    return dt.date.fromisoformat(s)


def _rand_date(rng: random.Random, lo: str, hi: str) -> str:
    a, b = _d(lo), _d(hi)
    return (a + dt.timedelta(days=rng.randint(0, (b - a).days))).isoformat()


def _dob(rng: random.Random, kind: str, recall: str | None = None) -> str:
    if kind == "exact65":
        return "1960-06-02"
    if kind == "just64":
        return "1960-06-03"
    if kind == "exact2":
        return "2023-06-02"
    if kind == "infant":
        return _rand_date(rng, "2023-07-15", "2024-03-15" if recall == "R1" else "2024-11-30")
    if kind == "child":
        return _rand_date(rng, "2013-01-01", "2022-12-31")
    if kind == "senior":
        return _rand_date(rng, "1932-01-01", "1958-12-31")
    return _rand_date(rng, "1962-01-01", "2006-12-31")


def build(root: Path, scale: Scale, seed: int) -> None:
    rng = random.Random(seed)
    root = Path(root)
    ws = root / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    for p in sorted(ws.rglob("*"), reverse=True):
        if p.is_file():
            p.unlink()
        elif p.is_dir():
            p.rmdir()
    db_path = root / "db.sqlite"
    if db_path.exists():
        db_path.unlink()
    con = sqlite3.connect(db_path)
    con.execute("pragma page_size = 1024")
    con.executescript(SCHEMA)
    for s in SITES:
        con.execute("insert into sites values (?,?,?,?,?)", s)
    for v in VACCINES:
        con.execute("insert into vaccines values (?,?,?,?,?)", v[:5])

    # lots: each lot number shipped to 1-3 sites
    lot_rows = []
    for ln, vid, rec, exp, grp in LOTS:
        kind = VACCINES[vid - 1][5]
        sites = [3] if kind in ("hepb", "mmr", "varicella") and rng.random() < 0.5 else []
        sites += rng.sample([1, 2, 3, 4, 5, 6], rng.randint(1, 3))
        for sid in sorted(set(sites)):
            lot_rows.append((ln, vid, sid, rec, exp, rng.choice([50, 100, 100, 200]), grp))
    rng.shuffle(lot_rows)
    lots_by_num: dict[str, list[int]] = {}
    lot_info: dict[int, tuple] = {}
    for lid, (ln, vid, sid, rec, exp, n, grp) in enumerate(lot_rows, start=1):
        con.execute("insert into lots values (?,?,?,?,?,?,?)", (lid, ln, vid, sid, rec, exp, n))
        lots_by_num.setdefault(ln, []).append(lid)
        lot_info[lid] = (ln, vid, sid, rec, grp)
    group_lots = {}
    for ln, _vid, _rec, _exp, grp in LOTS:
        group_lots.setdefault(grp, []).append(ln)

    def lot_at(ln: str) -> tuple[int, int]:
        lid = rng.choice(lots_by_num[ln])
        return lid, lot_info[lid][2]

    # people
    n_candidates = scale.n_rows(len(BASE_CANDIDATES))
    candidates = list(BASE_CANDIDATES)
    while len(candidates) < n_candidates:
        candidates.append(rng.choice(EXTRA_POOL))
    n_noise = scale.n_rows(230)
    people = [("cand", c) for c in candidates] + [("noise", None)] * n_noise
    rng.shuffle(people)

    patients, problems, imms, tasks = [], [], [], []
    used = set()
    for pid, (role, cand) in enumerate(people, start=1):
        if cand:
            recall, age_kind, ic, contact, doses, deceased = cand
        else:
            recall, ic = None, None
            age_kind = rng.choice(["adult"] * 5 + ["senior"] * 3 + ["child", "infant"])
            contact = rng.choice(["portal", "portal", "phone", "phone", "letter"])
            deceased = rng.random() < 0.03
        sex = rng.choice("FM")
        while True:
            fn = rng.choice(FIRST_F if sex == "F" else FIRST_M)
            ln_ = rng.choice(LAST)
            if (fn, ln_) not in used:
                used.add((fn, ln_))
                break
        dob = _dob(rng, age_kind, recall)
        phone = "" if contact == "letter" else f"{rng.choice(['206', '425', '253', '360'])}-555-{rng.randint(1000, 9999)}"
        portal = 1 if contact == "portal" else 0
        if contact == "phone" and rng.random() < 0.3:
            portal = 0
        death = _rand_date(rng, "2025-02-01", "2025-05-20") if deceased else None
        home = rng.choice([1, 2, 3, 4, 5]) if age_kind not in ("infant", "exact2", "child") else 3
        patients.append((pid, f"MRN{rng.randint(100000, 999999)}", fn, ln_, dob, sex, phone,
                         f"{fn.lower()}.{ln_.lower().replace(' ', '').replace(chr(39), '')}@example.net" if portal or rng.random() < 0.5 else "",
                         portal, rng.choice(LANGS), death, home))
        # problems
        if ic == "active":
            code, desc = rng.choice(IC_PROBLEMS)
            problems.append((pid, code, desc, _rand_date(rng, "2015-01-01", "2024-06-30"), "active"))
        elif ic == "resolved":
            code, desc = rng.choice([p for p in IC_PROBLEMS if p[0].startswith(("D70", "Z79.52", "C83"))])
            problems.append((pid, code, desc, _rand_date(rng, "2016-01-01", "2021-12-31"), "resolved"))
        elif ic == "decoy":
            code, desc = rng.choice(DECOY_IC)
            problems.append((pid, code, desc, _rand_date(rng, "2012-01-01", "2023-12-31"), "active"))
        if age_kind not in ("infant", "exact2"):
            for _ in range(rng.choice([0, 1, 1, 2, 3])):
                code, desc = rng.choice(NOISE_PROBLEMS)
                problems.append((pid, code, desc, _rand_date(rng, "2008-01-01", "2025-03-31"),
                                 rng.choice(["active", "active", "resolved"])))
            if role == "noise" and rng.random() < 0.06:
                code, desc = rng.choice(IC_PROBLEMS)
                problems.append((pid, code, desc, _rand_date(rng, "2014-01-01", "2024-01-01"), "active"))

        # immunization history (noise doses, never from R1/R2 lots)
        hist = _history(rng, age_kind, dob, group_lots)
        if recall == "R1":
            hist = [(ln, d) for ln, d in hist if not (ln[:2] in ("FZ", "IQ") and d >= "2024-09-01")]
        elif recall == "R2":
            hist = [(ln, d) for ln, d in hist if not (ln[:2] in ("HB", "HV") and d >= "2025-01-01")]
        for ln, date in hist:
            lid, sid = lot_at(ln)
            imms.append((pid, lid, date, sid, "completed", rng.choice(STAFF)))
        if cand:
            _candidate_doses(rng, cand, dob, imms, pid, lot_at, group_lots)
        elif rng.random() < 0.12:
            # noise patients with a dose from the withdrawn or closed-recall lots
            ln = rng.choice(group_lots["W1"] + group_lots["C1"])
            lid, sid = lot_at(ln)
            imms.append((pid, lid, _rand_date(rng, "2024-07-15", "2025-05-15"), sid, "completed", rng.choice(STAFF)))
        if role == "noise" and rng.random() < 0.15:
            tasks.append((pid, "RC-2024-0918", "", rng.choice(["routine", "urgent"]),
                          rng.choice(["portal", "phone", "letter"]), home, rng.choice(["completed", "closed_unreachable"]),
                          _rand_date(rng, "2024-09-20", "2024-10-15"),
                          rng.choice(["Revaccinated 10/02.", "Left voicemail x3, letter sent.", "Patient declined revaccination.",
                                      "Portal message read; appointment booked."])))

    for row in patients:
        con.execute("insert into patients values (?,?,?,?,?,?,?,?,?,?,?,?)", row)
    rng.shuffle(problems)
    for i, row in enumerate(problems, start=1):
        con.execute("insert into problems values (?,?,?,?,?,?)", (i, *row))
    imms.sort(key=lambda r: (r[2], r[0]))
    imm_ids_by_patient: dict[int, list[int]] = {}
    series: dict[tuple[int, int], int] = {}
    for i, row in enumerate(imms, start=1):
        pid, lid, date, sid, status, by = row
        vid = lot_info[lid][1]
        if status == "completed":
            series[(pid, vid)] = series.get((pid, vid), 0) + 1
        con.execute("insert into immunizations values (?,?,?,?,?,?,?,?)",
                    (i, pid, lid, date, sid, series.get((pid, vid), 1), status, by))
        imm_ids_by_patient.setdefault(pid, []).append(i)
    for i, row in enumerate(tasks, start=1):
        pid, ref, _ids, pri, ch, site, st, created, note = row
        old = [j for j in imm_ids_by_patient.get(pid, [])][:1]
        con.execute("insert into outreach_tasks values (?,?,?,?,?,?,?,?,?,?)",
                    (i, pid, ref, ",".join(map(str, old)), pri, ch, site, st, created, note))
    con.commit()
    con.close()
    _write_files(ws, scale, rng)


def _history(rng: random.Random, age_kind: str, dob: str, group_lots: dict) -> list[tuple[str, str]]:
    """Ordinary doses (no recalled lots): prior flu seasons, current-season flu from good lots, others."""
    out = []
    born = _d(dob)
    lo = max(born + dt.timedelta(days=30), dt.date(2022, 1, 1)).isoformat()
    by_kind = {
        "infant": ["HV51207", "HB2188", "MR6655", "VR3301", "HB2302"],
        "child": ["MR6610", "VR3301", "TD7790", "HP9120", "CV24X19"],
        "adult": ["TD7790", "CV24X19", "CV24X52", "HP9120", "PN20031"],
        "senior": ["ZS1140", "PN20031", "PN20077", "CV24X52", "TD7790"],
    }
    kind = {"exact65": "senior", "just64": "adult", "exact2": "infant"}.get(age_kind, age_kind)
    for ln in rng.sample(by_kind[kind], rng.randint(1, 3)):
        out.append((ln, _rand_date(rng, lo, "2025-05-30")))
    if kind != "infant" and rng.random() < 0.6:
        out.append((rng.choice(["FZ3902K", "IQ80011"]), _rand_date(rng, max(lo, "2023-09-15"), "2024-02-28")))
    if kind != "infant" and rng.random() < 0.35:
        out.append((rng.choice(["FZ4425D", "FZ4431E", "IQ88120", "IQ88177"]), _rand_date(rng, "2024-10-22", "2025-02-28")))
    return [(ln, d) for ln, d in out if d >= lo]


def _candidate_doses(rng, cand, dob, imms, pid, lot_at, group_lots) -> None:
    recall, _age, _ic, _contact, doses, _dead = cand
    lo, hi = R1_WINDOW if recall == "R1" else R2_WINDOW
    bad = group_lots[recall]
    good = ["FZ4425D", "FZ4431E"] if recall == "R1" else ["HB2302", "HB2310"]
    born = _d(dob)
    lo_eff = max(_d(lo), born + dt.timedelta(days=14)).isoformat()

    def add(ln: str, date: str, status: str = "completed") -> None:
        lid, sid = lot_at(ln)
        imms.append((pid, lid, date, sid, status, rng.choice(STAFF)))

    if doses in ("one", "revaccinated", "one_plus_error"):
        d1 = _rand_date(rng, lo_eff, (_d(hi) - dt.timedelta(days=35)).isoformat())
        add(rng.choice(bad), d1)
        if doses == "revaccinated":
            add(rng.choice(good), _rand_date(rng, (_d(d1) + dt.timedelta(days=20)).isoformat(), "2025-05-28"))
        if doses == "one_plus_error":
            add(rng.choice(bad), (_d(d1) + dt.timedelta(days=1)).isoformat(), "entered_in_error")
    elif doses == "end_of_window":
        add(rng.choice(bad), hi)
    elif doses == "before_window":
        add(rng.choice(bad), (_d(lo) - dt.timedelta(days=rng.randint(2, 6))).isoformat())
    elif doses == "after_window":
        add(rng.choice(bad), (_d(hi) + dt.timedelta(days=rng.randint(1, 10))).isoformat())
    elif doses == "two":
        d1 = _rand_date(rng, lo_eff, (_d(hi) - dt.timedelta(days=60)).isoformat())
        d2 = (_d(d1) + dt.timedelta(days=28 + rng.randint(0, 14))).isoformat()
        ln1 = rng.choice(bad)
        lid1, sid1 = lot_at(ln1)
        imms.append((pid, lid1, d1, sid1, "completed", rng.choice(STAFF)))
        for _ in range(30):
            ln2 = rng.choice(bad)
            lid2, sid2 = lot_at(ln2)
            if sid2 != sid1:
                break
        imms.append((pid, lid2, d2, sid2, "completed", rng.choice(STAFF)))
    elif doses == "error_only":
        add(rng.choice(bad), _rand_date(rng, lo_eff, hi), "entered_in_error")
    else:
        raise ValueError(doses)


SCHEMA = """
create table sites (site_id integer primary key, code text, name text, city text, phone text);
create table vaccines (vaccine_id integer primary key, cvx text, product text, manufacturer text, presentation text);
create table lots (lot_id integer primary key, lot_number text, vaccine_id integer references vaccines,
                   site_id integer references sites, received_on text, expiration_date text, doses_received integer);
create table patients (patient_id integer primary key, mrn text, first_name text, last_name text, dob text,
                       sex text, phone text, email text, portal_active integer, preferred_language text,
                       deceased_on text, primary_site_id integer references sites);
create table problems (problem_id integer primary key, patient_id integer references patients, icd10 text,
                       description text, onset_date text, status text);
create table immunizations (imm_id integer primary key, patient_id integer references patients,
                            lot_id integer references lots, administered_on text, site_id integer references sites,
                            dose_in_series integer, status text, administered_by text);
create table outreach_tasks (task_id integer primary key, patient_id integer references patients, recall_ref text,
                             immunization_ids text, priority text, channel text, site_id integer references sites,
                             status text, created_on text, note text);
"""

SOP = """# SOP CL-IMM-014 — Patient outreach for vaccine recalls

Bayview Family Health · Clinical Operations · revision 6 (2025-03-01)

## 1. Which notices require outreach
Manufacturer and public-health notices are filed in `notices/`. Outreach is required **only** for notices
whose *Notice type* is `Patient-level recall` **and** whose *Status* is `Active`. Market withdrawals,
shortage notices, labeling changes and closed recalls require no patient outreach.

## 2. Affected doses
A dose is affected when **all** of the following hold:
* its lot number is listed in the notice's *Affected lots* table;
* it was administered within the notice's affected administration window (both dates inclusive);
* its status is `completed` (doses marked `entered_in_error` are ignored).

## 3. Who is contacted
Every patient with at least one affected dose gets **one** outreach task per recall, listing all of the
patient's affected dose ids for that recall, **except**:
* deceased patients (a `deceased_on` date is recorded);
* patients already revaccinated: a `completed` dose of the same vaccine (same CVX code) from a lot that is
  **not** listed in the notice, administered **after** the patient's latest affected dose.

## 4. Priority
`urgent` when, on the outreach date **2025-06-02**, the patient is younger than 2 years or 65 years or older
(age in completed years), **or** has an **active** problem whose ICD-10 code starts with one of the codes in
`clinical_ops/immunocompromising_codes.csv`. Everyone else is `routine`. Resolved problems do not count.

## 5. Channel
`portal` when the patient's portal account is active; otherwise `phone` when a phone number is on file;
otherwise `letter`.

## 6. Site
Assign the task to the site where the patient's **most recent** affected dose (for that recall) was given.

## 7. Recording
Create each task with the recall's Notice ID as `recall_ref`. Do not edit or close existing tasks.
"""

IC_CSV = """code_prefix,description,notes
B20,HIV disease,
C81,Hodgkin lymphoma,
C82,Follicular lymphoma,
C83,Non-follicular lymphoma,
C85,Other non-Hodgkin lymphoma,
C90,Multiple myeloma and plasma cell neoplasms,
C91,Lymphoid leukemia,
C92,Myeloid leukemia,
D70,Neutropenia / agranulocytosis,
D80,Immunodeficiency with predominantly antibody defects,
D81,Combined immunodeficiencies,
D82,Immunodeficiency associated with other major defects,
D83,Common variable immunodeficiency,
D84,Other immunodeficiencies,
Z94,Transplanted organ and tissue status,
Z79.52,Long term (current) use of systemic steroids,only this code (not other Z79 codes)
Z92.21,Personal history of antineoplastic chemotherapy,
"""


def _notice(nid: str, title: str, ntype: str, status: str, issued: str, manufacturer: str, product: str, cvx: str,
            lots: list[tuple[str, str]], window: tuple[str, str] | None, reason: str, action: str) -> str:
    lot_tbl = "\n".join(f"| {ln} | {exp} |" for ln, exp in lots) if lots else "| (none) | |"
    win = (f"Doses administered from **{window[0]}** through **{window[1]}** (inclusive)."
           if window else "Not applicable.")
    return f"""# {title}

| Field | Value |
|---|---|
| Notice ID | {nid} |
| Notice type | {ntype} |
| Status | {status} |
| Issued | {issued} |
| Manufacturer | {manufacturer} |
| Product | {product} |
| CVX | {cvx} |

## Affected lots
| Lot number | Expiration |
|---|---|
{lot_tbl}

## Affected administration window
{win}

## Reason
{reason}

## Recommended action
{action}
"""


FIXED_NOTICES = [
    ("2025-05-14_corvane_fluzora_recall.md", dict(
        nid="RC-2025-0412", title="Voluntary recall — Fluzora Quadrivalent 2024-2025 (sub-potency)",
        ntype="Patient-level recall", status="Active", issued="2025-05-14", manufacturer="Corvane Biologics",
        product="Fluzora Quadrivalent 2024-2025, 0.5 mL prefilled syringe", cvx="150",
        lots=[("FZ4417A", "2025-06-30"), ("FZ4417B", "2025-06-30"), ("FZ4420C", "2025-06-30")], window=R1_WINDOW,
        reason="Stability testing showed hemagglutinin content of one influenza B strain below the specification "
               "before the labeled expiry. Doses may provide reduced protection. No safety concern was identified.",
        action="Identify patients who received an affected dose during the window and offer revaccination with a dose "
               "from an unaffected lot. Quarantine remaining inventory and return it to the manufacturer.")),
    ("2025-05-28_lystra_hepavance_recall.md", dict(
        nid="RC-2025-0530", title="Recall — Hepavance-B Pediatric (cold-chain excursion at distributor)",
        ntype="Patient-level recall", status="Active", issued="2025-05-28", manufacturer="Lystra Pharma",
        product="Hepavance-B Pediatric, 0.5 mL vial", cvx="08",
        lots=[("HB2291", "2026-03-31"), ("HB2294", "2026-03-31")], window=R2_WINDOW,
        reason="A distributor warehouse recorded a freezing excursion affecting two lots. Frozen hepatitis B vaccine "
               "may be less immunogenic.",
        action="Contact the families of all patients who received an affected dose in the window; the dose should be "
               "repeated with an unaffected lot per the routine schedule.")),
    ("2025-04-30_meridian_tdaplex_withdrawal.md", dict(
        nid="MW-2025-0217", title="Market withdrawal — Tdaplex prefilled syringes (plunger stopper defect)",
        ntype="Market withdrawal", status="Active", issued="2025-04-30", manufacturer="Meridian Vaccines",
        product="Tdaplex, 0.5 mL prefilled syringe", cvx="115", lots=[("TD7781", "2026-02-28")], window=None,
        reason="Some syringes may have a stopper that is difficult to depress. Administered doses are not affected.",
        action="Remove unused syringes from inventory. **No patient notification or revaccination is needed.**")),
    ("2024-11-20_halden_zostrava_recall.md", dict(
        nid="RC-2024-1107", title="Recall — Zostrava lot ZS1102 (adjuvant vial fill volume)",
        ntype="Patient-level recall", status="Closed (2025-02-14) — no further action required", issued="2024-11-20",
        manufacturer="Halden Bio", product="Zostrava 2-vial kit", cvx="187", lots=[("ZS1102", "2025-10-31")],
        window=("2024-03-01", "2024-11-15"),
        reason="Low fill volume in a subset of adjuvant vials. Follow-up testing showed delivered doses were within "
               "specification.",
        action="Closed by the manufacturer on 2025-02-14 after investigation: doses are valid; outreach is not needed.")),
]
NOISE_NOTICE_TEMPLATES = [
    ("Shortage notice", "Active", "Supply constraint — {p}", "Allocation limits apply through {d}. Prioritise high-risk patients.",
     "Order in smaller quantities; no patient action."),
    ("Labeling change", "Active", "Updated package insert — {p}", "The storage section of the insert was revised "
     "to allow 72 hours at room temperature after first puncture.", "Replace the package insert; no patient action."),
    ("Market withdrawal", "Active", "Market withdrawal — {p} (carton misprint)", "Outer cartons show an incorrect NDC "
     "suffix. Product inside is correct.", "Return unopened cartons for credit. No patient notification is needed."),
    ("Patient-level recall", "Closed (2023-12-01) — no further action required", "Recall — {p} (visible particulates)",
     "Particulates were observed in retained samples of one lot.", "Closed after investigation; no outreach required."),
    ("Dear healthcare provider letter", "Informational", "Dosing reminder — {p}", "Reminder of the minimum interval "
     "between doses in the series.", "No action required beyond routine practice."),
]
OTHER_PRODUCTS = [("Covira 2024-2025", "Northwind Biotech", "308"), ("Pneumova 20", "Northwind Biotech", "216"),
                  ("Papillon-9", "Northwind Biotech", "165"), ("MMRevive", "Lystra Pharma", "03"),
                  ("Varistat", "Halden Bio", "21"), ("Rotashield-Oral", "Corvane Biologics", "119"),
                  ("Menquadra", "Meridian Vaccines", "114"), ("Influvance Quad 2024-2025", "Meridian Vaccines", "150"),
                  ("HBVax-Ped", "Corvane Biologics", "08"), ("Typhavax", "Halden Bio", "101")]
MEMO_ITEMS = [
    "The walk-in flu clinic closes for the season on {d}.",
    "Fridge #{n} at {site} logged a 3-minute door-open alarm; temperatures stayed within 2-8 °C.",
    "Reminder: document the VIS edition date for every dose.",
    "New staff orientation for immunization documentation is on {d}.",
    "The state immunization registry will be offline on {d} for maintenance.",
    "{site}: vaccine inventory count due by the end of the month.",
    "Please use the outreach scripts in the shared drive when calling families about recalls.",
    "Mobile unit schedule for {d}: senior centers in South King County.",
    "Interpreter services: request phone interpreters at least 24 hours ahead for scheduled calls.",
    "Quality metric: 92% of eligible adults at {site} received a flu vaccine this season.",
]


def _write_files(ws: Path, scale: Scale, rng: random.Random) -> None:
    def put(rel: str, text: str) -> None:
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    put("clinical_ops/sop_recall_outreach.md", SOP)
    put("clinical_ops/immunocompromising_codes.csv", IC_CSV)
    for name, kw in FIXED_NOTICES:
        put(f"notices/{name}", _notice(**kw))
    for i in range(scale.n_files(3)):
        ntype, status, title, reason, action = NOISE_NOTICE_TEMPLATES[i % len(NOISE_NOTICE_TEMPLATES)]
        prod, mfr, cvx = OTHER_PRODUCTS[(i * 3 + rng.randint(0, 9)) % len(OTHER_PRODUCTS)]
        issued = _rand_date(rng, "2023-06-01", "2025-05-30")
        lots = [(f"{prod[:2].upper()}{rng.randint(1000, 9999)}", _rand_date(rng, "2025-06-01", "2026-12-31"))
                for _ in range(rng.randint(0, 2))]
        prefix = {"Shortage notice": "SN", "Labeling change": "LC", "Market withdrawal": "MW",
                  "Patient-level recall": "RC", "Dear healthcare provider letter": "DH"}[ntype]
        nid = f"{prefix}-{issued[:4]}-{rng.randint(100, 999):04d}"
        slug = prod.split()[0].lower().replace("-", "")
        put(f"notices/{issued}_{mfr.split()[0].lower()}_{slug}_{prefix.lower()}{i}.md", _notice(
            nid=nid, title=title.format(p=prod), ntype=ntype, status=status, issued=issued, manufacturer=mfr,
            product=prod, cvx=cvx, lots=lots, window=None, reason=reason.format(d=_rand_date(rng, "2025-06-01", "2025-09-30")),
            action=action))

    def fill(s: str) -> str:
        return s.format(d=_rand_date(rng, "2025-05-01", "2025-07-31"), n=rng.randint(1, 6),
                        site=rng.choice(SITES)[2])

    for i in range(scale.n_files(2)):
        date = _rand_date(rng, "2024-10-01", "2025-05-31")
        body = "\n".join(f"- {fill(s)}" for s in rng.sample(MEMO_ITEMS, rng.randint(3, 5)))
        put(f"memos/clinic_ops_memo_{date}_{i}.md", f"# Clinic operations memo — {date}\n\n{body}\n")
    for i in range(scale.n_files(1)):
        site = SITES[i % len(SITES)]
        start = _d("2025-05-01") + dt.timedelta(days=7 * (i // len(SITES)))
        rows = ["timestamp,fridge,min_c,max_c,alarm"]
        for h in range(0, 24 * 7, 6):
            t = dt.datetime.combine(start, dt.time()) + dt.timedelta(hours=h)
            lo = round(rng.uniform(2.8, 4.5), 1)
            rows.append(f"{t.isoformat(timespec='minutes')},{site[1]}-F{rng.randint(1, 3)},{lo},{round(lo + rng.uniform(0.5, 2.6), 1)},"
                        f"{'door_open' if rng.random() < 0.03 else ''}")
        put(f"cold_chain/{site[1].lower()}_temperature_log_{start.isoformat()}.csv", "\n".join(rows) + "\n")
