"""Ethics training compliance: researchers, protocols, protocol members, training records, compliance log.

Requirements (JSON), course equivalences (CSV), the procedure (Markdown) and a memo that invalidates a
provider's certificates from a date window exist only as workspace files. Planted at every scale:
validity boundaries, a failed score, legacy/equivalent course codes, a non-accepted introductory
course, invalidated and still-valid NovaLearn certificates, a PI out of date (protocol suspended), a
lapsed protocol, an expiry-date boundary, and out-of-scope animal/suspended protocols and removed members.
"""

from __future__ import annotations

import csv
import io
import json
import random
import shutil
import sqlite3
from datetime import date, timedelta
from pathlib import Path

AS_OF = date(2024, 7, 1)
REQUIREMENTS = {
    "pass_mark": 80,
    "validity_years": {"HSR-CORE": 3, "GCP": 2, "DATA-PROT": 2, "ANIMAL-MOD1": 5},
    "human": {"all_members": ["HSR-CORE"], "by_role": {"PI": ["GCP"], "co_investigator": ["GCP"]},
              "by_risk_level": {"high": ["DATA-PROT"]}},
    "animal": {"all_members": ["ANIMAL-MOD1"], "by_role": {}, "by_risk_level": {}},
}
EQUIV = [("HSR-BASIC", "HSR-CORE", "Legacy human subjects course, retired in 2022; still accepted"),
         ("CITI-HSR", "HSR-CORE", "CITI Program human subjects certificate accepted"),
         ("ICH-GCP", "GCP", "NIHR / TransCelerate ICH-GCP certificates accepted"),
         ("GCP-INTRO", "", "Introductory module only - NOT accepted as GCP"),
         ("GDPR-BASICS", "", "General staff GDPR e-learning - NOT accepted as DATA-PROT")]
DEPTS = ["Psychology", "Medicine", "Public Health", "Nursing", "Sport Science", "Education", "Biosciences",
         "Sociology", "Dentistry"]
FIRST = ["Amelia", "Rahul", "Grace", "Tobias", "Nadia", "Oliver", "Mei", "Kofi", "Hannah", "Luca", "Zara", "Ewan",
         "Ingrid", "Samuel", "Aisha", "Patrick", "Elena", "Joseph", "Freya", "Daniel", "Yasmin", "Callum", "Bethan",
         "Arjun", "Chloe", "Dominic", "Leah", "Marcus", "Noor", "Owen"]
LAST = ["Thompson", "Iyer", "Whitfield", "Becker", "Haddad", "Morgan", "Zhang", "Mensah", "Clarke", "Ferrari",
        "Sheikh", "MacLeod", "Sorensen", "Adeyemi", "Rahman", "Gallagher", "Petrova", "Hughes", "Lindqvist", "Evans",
        "Okoro", "Davies", "Kaur", "Novak", "Price"]
TOPICS = ["Mindfulness for exam stress", "Remote physiotherapy after knee surgery", "Sleep in night-shift nurses",
          "Peer tutoring in numeracy", "Diet and gut health in older adults", "Smartphone CBT for insomnia",
          "Hydration in care homes", "Vaccine hesitancy interviews", "Concussion in school rugby",
          "Dental anxiety in children", "Loneliness after retirement", "Wearables and cardiac rehab",
          "Online gambling behaviour", "Bilingual reading development", "Chronic pain self-management",
          "Heat stress in outdoor workers"]
PROVIDERS = ["Internal LMS", "Internal LMS", "CITI Program", "NIHR Learn", "NovaLearn"]

# planted researchers: key -> (name, position)
P_PEOPLE = {
    "X1": ("Prof Helena Marsh", "Professor"), "X2": ("Dr Kwame Asante", "Senior Lecturer"),
    "X3": ("Ms Lily Chen", "PhD student"), "X4": ("Prof David Okafor", "Professor"),
    "X5": ("Mr Tom Reilly", "Research assistant"), "X6": ("Dr Sofia Marin", "Lecturer"),
    "X7": ("Mr Jack Dunne", "PhD student"), "X8": ("Dr Priya Natarajan", "Senior Lecturer"),
    "X9": ("Dr Ben Howell", "Postdoc"), "X10": ("Prof Alan Pryce", "Professor"),
    "X11": ("Dr Ruth Abara", "Senior Lecturer"), "X12": ("Prof Karen Vos", "Professor"),
    "X13": ("Dr Imran Qureshi", "Lecturer"), "X14": ("Ms Ella Brooks", "PhD student"),
}
# planted training: (person, code, completed, score, provider)
P_TRAINING = [
    ("X1", "HSR-CORE", "2023-02-10", 95, "Internal LMS"), ("X1", "GCP", "2022-06-30", 90, "NIHR Learn"),
    ("X1", "DATA-PROT", "2024-01-15", 88, "Internal LMS"),
    ("X2", "HSR-CORE", "2021-07-01", 85, "Internal LMS"), ("X2", "GCP", "2022-07-01", 82, "NIHR Learn"),
    ("X2", "DATA-PROT", "2023-11-02", 90, "Internal LMS"),
    ("X3", "HSR-BASIC", "2022-01-20", 88, "Internal LMS"), ("X3", "GDPR-BASICS", "2024-02-01", 100, "Internal LMS"),
    ("X4", "HSR-CORE", "2022-11-01", 91, "Internal LMS"), ("X4", "ICH-GCP", "2023-05-05", 87, "NIHR Learn"),
    ("X5", "HSR-CORE", "2024-03-03", 74, "Internal LMS"), ("X5", "HSR-CORE", "2020-05-01", 90, "Internal LMS"),
    ("X6", "HSR-CORE", "2023-04-12", 92, "NovaLearn"), ("X6", "GCP", "2023-09-09", 85, "NIHR Learn"),
    ("X8", "HSR-CORE", "2023-06-15", 90, "NovaLearn"), ("X8", "GCP", "2023-01-10", 84, "NIHR Learn"),
    ("X9", "HSR-CORE", "2022-09-09", 88, "CITI Program"), ("X9", "GCP-INTRO", "2024-02-02", 95, "Internal LMS"),
    ("X13", "HSR-CORE", "2023-08-08", 93, "Internal LMS"), ("X13", "GCP", "2023-08-09", 81, "NIHR Learn"),
    ("X14", "HSR-CORE", "2020-01-01", 89, "Internal LMS"),
]
# planted protocols: (id, type, risk, status, approved_on, expires_on, pi, [(member, role, status)])
P_PROTOCOLS = [
    ("HREC-2023-0101", "human", "high", "active", "2023-03-01", "2025-12-31", "X1",
     [("X2", "co_investigator", "active"), ("X3", "student", "active")]),
    ("HREC-2022-0102", "human", "minimal", "active", "2022-09-15", "2025-09-14", "X4",
     [("X5", "research_assistant", "active"), ("X6", "co_investigator", "active"), ("X7", "student", "removed")]),
    ("HREC-2024-0103", "human", "low", "active", "2024-01-20", "2027-01-19", "X8",
     [("X9", "co_investigator", "active")]),
    ("HREC-2021-0104", "human", "low", "active", "2021-07-01", "2024-06-30", "X10", []),
    ("AWERB-2023-011", "animal", "high", "active", "2023-05-01", "2028-04-30", "X11", []),
    ("HREC-2022-0105", "human", "high", "suspended", "2022-02-01", "2025-01-31", "X12", []),
    ("HREC-2021-0106", "human", "low", "active", "2021-07-02", "2024-07-01", "X13",
     [("X14", "student", "active")]),
]
NOISE_COURSES = ["LAB-SAFETY", "FIRE-SAFETY", "RCR", "MANUAL-HANDLING", "EDI-AWARENESS"]


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


SCHEMA = """
create table researchers (id text primary key, name text, department text, position text, email text);
create table protocols (id text primary key, title text, type text, risk_level text, pi_id text references
    researchers(id), department text, status text, approved_on text, expires_on text);
create table protocol_members (id integer primary key, protocol_id text references protocols(id),
    researcher_id text references researchers(id), role text, status text, added_on text);
create table training_records (id integer primary key, researcher_id text references researchers(id),
    course_code text, completed_on text, score integer, provider text, certificate_no text);
create table compliance_log (id integer primary key, protocol_id text, researcher_id text, action text,
    detail text, logged_on text, logged_by text);
"""


def build(root: Path, scale, seed: int) -> None:
    rng = random.Random(seed)
    root = Path(root)
    _reset(root)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)

    # researchers -------------------------------------------------------------------------------
    people = []  # (id, name, dept, position, email)
    pid = {}
    for k, (key, (name, pos)) in enumerate(P_PEOPLE.items()):
        pid[key] = f"RS-{3001 + k * 3}"
        people.append([pid[key], name, rng.choice(DEPTS), pos])
    names = {p[1] for p in people}
    while len(people) < scale.n_rows(70):
        pos = rng.choices(["Professor", "Senior Lecturer", "Lecturer", "Postdoc", "PhD student",
                           "Research assistant", "Research nurse"], weights=[8, 10, 12, 18, 28, 16, 8])[0]
        title = {"Professor": "Prof", "PhD student": rng.choice(["Ms", "Mr"]),
                 "Research assistant": rng.choice(["Ms", "Mr"]), "Research nurse": rng.choice(["Ms", "Mr"])}.get(pos, "Dr")
        name = f"{title} {rng.choice(FIRST)} {rng.choice(LAST)}"
        if name in names:
            continue
        names.add(name)
        people.append([f"RS-{3001 + len(people) * 3}", name, rng.choice(DEPTS), pos])
    for p in people:
        email = p[1].split(" ", 1)[1].lower().replace(" ", ".") + "@uni.example.ac.uk"
        con.execute("insert into researchers values (?,?,?,?,?)", (*p, email))
    randoms = people[len(P_PEOPLE):]
    seniors = [p for p in randoms if p[3] in ("Professor", "Senior Lecturer", "Lecturer")]

    # protocols and members ---------------------------------------------------------------------
    protocols = []
    members = []
    for p_id, typ, risk, status, appr, exp, pi, mem in P_PROTOCOLS:
        protocols.append((p_id, rng.choice(TOPICS), typ, risk, pid[pi], rng.choice(DEPTS), status, appr, exp))
        members.append((p_id, pid[pi], "PI", "active", appr))
        for m, role, st in mem:
            members.append((p_id, pid[m], role, st, appr))
    used_ids = {p[0] for p in protocols}
    while len(protocols) < scale.n_rows(30):
        typ = "human" if rng.random() < 0.78 else "animal"
        appr = date(2019, 6, 1) + timedelta(days=rng.randint(0, 1850))
        exp = appr + timedelta(days=365 * 3 - 1)
        p_id = f"HREC-{appr.year}-{rng.randint(200, 9999):04d}" if typ == "human" else \
            f"AWERB-{appr.year}-{rng.randint(100, 999):03d}"
        if p_id in used_ids:
            continue
        used_ids.add(p_id)
        status = "closed" if exp < date(2024, 1, 1) and rng.random() < 0.8 else \
            rng.choices(["active", "suspended"], weights=[94, 6])[0]
        risk = rng.choices(["minimal", "low", "high"], weights=[45, 35, 20])[0]
        pi = rng.choice(seniors)
        protocols.append((p_id, rng.choice(TOPICS), typ, risk, pi[0], pi[2], status, appr.isoformat(),
                          exp.isoformat()))
        members.append((p_id, pi[0], "PI", "active", appr.isoformat()))
        for other in rng.sample([p for p in randoms if p[0] != pi[0]], rng.randint(1, 5)):
            role = {"PhD student": "student", "Research assistant": "research_assistant",
                    "Research nurse": "research_assistant"}.get(other[3], "co_investigator")
            st = "active" if rng.random() < 0.9 else "removed"
            members.append((p_id, other[0], role, st, (appr + timedelta(days=rng.randint(0, 300))).isoformat()))
    protocols.sort()
    for p in protocols:
        con.execute("insert into protocols values (?,?,?,?,?,?,?,?,?)", p)
    members.sort(key=lambda m: (m[4], m[0], m[1]))
    for i, m in enumerate(members):
        con.execute("insert into protocol_members values (?,?,?,?,?,?)", (i + 1, *m))

    # training records --------------------------------------------------------------------------
    records = [(pid[k], code, d, s, prov) for k, code, d, s, prov in P_TRAINING]
    for p in randoms:
        senior = p[3] in ("Professor", "Senior Lecturer", "Lecturer", "Postdoc")
        wants = [("HSR", 0.985), ("GCP", 0.97 if senior else 0.3), ("DATA-PROT", 0.93), ("ANIMAL-MOD1", 0.15)]
        for course, prob in wants:
            validity = {"HSR": 3, "GCP": 2, "DATA-PROT": 2, "ANIMAL-MOD1": 5}[course]
            current = rng.random() < prob
            dates = []
            if current:  # one completion inside the validity window
                dates.append(AS_OF - timedelta(days=rng.randint(20, 365 * validity - 5)))
            for _ in range(rng.choice([0, 0, 1])):  # older, lapsed completions
                dates.append(AS_OF - timedelta(days=rng.randint(365 * validity + 5, 365 * validity + 900)))
            for k, d in enumerate(dates):
                code = course
                if course == "HSR":
                    code = "HSR-BASIC" if d < date(2022, 1, 1) and rng.random() < 0.6 else \
                        rng.choice(["HSR-CORE", "HSR-CORE", "HSR-CORE", "CITI-HSR"])
                elif course == "GCP":
                    code = rng.choice(["GCP", "GCP", "GCP", "ICH-GCP"])
                score = rng.randint(81, 100)
                prov = rng.choice(PROVIDERS)
                if k == 0 and current and rng.random() < 0.03:  # a trap: failed, withdrawn or non-accepted
                    kind = rng.choice(["fail", "nova", "intro"])
                    if kind == "fail":
                        score = rng.randint(60, 79)
                    elif kind == "nova":
                        prov, d = "NovaLearn", date(2023, 3, 1) + timedelta(days=rng.randint(0, 91))
                    else:
                        code = {"HSR": "HSR-CORE", "GCP": "GCP-INTRO", "DATA-PROT": "GDPR-BASICS"}.get(course, code)
                records.append((p[0], code, d.isoformat(), score, prov))
        for _ in range(rng.randint(5, 11)):
            d = AS_OF - timedelta(days=rng.randint(10, 2000))
            records.append((p[0], rng.choice(NOISE_COURSES), d.isoformat(), rng.randint(70, 100),
                            rng.choice(PROVIDERS[:3])))
    records.sort(key=lambda r: (r[2], r[0], r[1]))
    for i, r in enumerate(records):
        con.execute("insert into training_records values (?,?,?,?,?,?,?)",
                    (i + 1, *r, f"{r[4][:3].upper()}-{rng.randint(1000000, 9999999)}"))

    # compliance log history --------------------------------------------------------------------
    hist = []
    for _ in range(scale.n_rows(160)):
        m = rng.choice(members)
        d = date(2023, 1, 1) + timedelta(days=rng.randint(0, 520))
        action, detail = rng.choice([("member_reinstated", "Training renewed"), ("reminder_sent", "Renewal due in 60 days"),
                                     ("member_suspended", "HSR-CORE"), ("reminder_sent", "GCP expiring"),
                                     ("protocol_amended", "Added recruitment site")])
        hist.append((m[0], m[1], action, detail, d.isoformat(), rng.choice(["ethics-office", "j.price", "a.iyer"])))
    hist.sort(key=lambda h: (h[4], h[0]))
    for i, h in enumerate(hist):
        con.execute("insert into compliance_log values (?,?,?,?,?,?,?)", (i + 1, *h))
    con.commit()
    con.close()

    # workspace ---------------------------------------------------------------------------------
    _write(root, "ethics/compliance_procedure.md", PROCEDURE)
    _write(root, "ethics/training_requirements.json", json.dumps(REQUIREMENTS, indent=2) + "\n")
    _write(root, "ethics/course_equivalences.csv", _csv(["course_code", "counts_as", "note"], [list(e) for e in EQUIV]))
    _write(root, "memos/2024-06-12_novalearn_certificates.txt", MEMO)
    _write(root, "ethics/archive/training_requirements_2021.json", json.dumps(
        {"pass_mark": 70, "validity_years": {"HSR-BASIC": 5, "GCP": 3},
         "human": {"all_members": ["HSR-BASIC"], "by_role": {"PI": ["GCP"]}}, "status": "superseded 2022-09-01"},
        indent=2) + "\n")
    for i in range(scale.n_files(3)):
        d = AS_OF - timedelta(days=30 * i + rng.randint(0, 20))
        _write(root, f"committee/{d.isoformat()}_hrec_minutes.md", _minutes(rng, d, protocols))
    for i in range(scale.n_files(2)):
        p = rng.choice(protocols)
        _write(root, f"amendments/{p[0]}_amendment_{i + 1:02d}.md", _amendment(rng, p))
    for i in range(scale.n_files(2)):
        _write(root, f"memos/{(AS_OF - timedelta(days=rng.randint(15, 300))).isoformat()}_{NOISE_TOPICS[i % 5]}.txt",
               _noise_memo(rng, NOISE_TOPICS[i % 5]))


NOISE_TOPICS = ["room_bookings", "data_storage", "consent_templates", "lab_access", "open_day"]


def _noise_memo(rng, topic: str) -> str:
    text = {
        "room_bookings": "Ethics committee meetings move to the Senate Room from next term.",
        "data_storage": "Research data must be stored on the university's secure research storage, not personal "
                        "cloud accounts. Migration help is available from IT.",
        "consent_templates": "Updated participant consent templates (v7) are on the intranet; v6 may still be used "
                             "for studies approved before 1 May.",
        "lab_access": "Card access to the clinical research facility now requires the LAB-SAFETY module.",
        "open_day": "Volunteers needed for the research open day; talks of 10 minutes per group.",
    }[topic]
    return f"From: Research Ethics Office\nRef: REO/{rng.randint(100, 999)}\n\n{text}\n"


def _minutes(rng, d: date, protocols) -> str:
    ps = rng.sample(protocols, 3)
    lines = [f"# Human Research Ethics Committee - minutes {d.isoformat()}", "",
             f"Quorum: yes ({rng.randint(7, 12)} members)", ""]
    for p in ps:
        lines.append(f"- {p[0]} ({p[1]}): {rng.choice(['amendment approved', 'annual report noted', 'query to PI', 'adverse event report reviewed'])}.")
    lines += ["", "Training compliance sweep to be run quarterly by the ethics office as per procedure.", ""]
    return "\n".join(lines)


def _amendment(rng, p) -> str:
    return (f"# Amendment request - {p[0]}\n\nTitle: {p[1]}\n\nChange requested: "
            f"{rng.choice(['add a second recruitment site', 'extend recruitment by 6 months', 'add an online survey arm', 'replace the co-investigator'])}.\n"
            f"Decision: {rng.choice(['approved', 'approved with conditions', 'pending'])}.\n")


PROCEDURE = """# Research Ethics Office - quarterly training compliance sweep

Scope: protocols of type `human` with status `active`. Animal protocols are monitored by the AWERB
office and are out of scope. The sweep is run "as of" the first day of the quarter.

## Step 1 - lapsed approvals
An active protocol whose `expires_on` date is before the as-of date has lapsed: mark it expired.
Nothing else is done for a lapsed protocol (its team is not checked).

## Step 2 - team training
For every remaining in-scope protocol, check each member with membership status `active` (removed or
already suspended members are ignored). The courses a member needs are listed in
ethics/training_requirements.json: the courses for all members of that protocol type, plus those for
the member's role, plus those for the protocol's risk level.

A required course is **current** if the member has a completion of it, or of a course accepted as
equivalent in ethics/course_equivalences.csv, that
* has a score at or above the pass mark, and
* was completed no earlier than the validity period (in years, for the required course) before the
  as-of date - e.g. with a 3-year validity and an as-of date of 1 July 2024, completions on or after
  1 July 2021 count.
Certificates withdrawn by the Ethics Office (memos/) never count.

## Step 3 - actions
* Suspend each member who lacks one or more current required courses from that protocol, recording the
  missing required course codes (the required codes, not equivalents).
* If the protocol's PI is among them, also suspend the protocol itself.
"""

MEMO = """RESEARCH ETHICS OFFICE - NOTICE
Date: 12 June 2024
Subject: Withdrawal of NovaLearn certificates

Following an audit, the external provider NovaLearn has confirmed that its online assessments issued
between 1 March 2023 and 31 May 2023 (inclusive) were not invigilated and the pass scores cannot be
relied on. All NovaLearn certificates with a completion date in that window are WITHDRAWN and must not
be counted towards any training requirement. Researchers affected should retake the course.

NovaLearn certificates completed outside that window remain valid.
"""
