"""Scholarship renewal review: students, transcripts, conduct cases and awards in SQLite; the renewal
policy, one criteria sheet per scholarship program and the grade-point table in the workspace."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from fractions import Fraction
from pathlib import Path

from envs.taskkit import Scale

FIRST = [
    "Aaliyah", "Abdul", "Adaeze", "Aiden", "Akira", "Alejandro", "Amara", "Amelia", "Anika", "Arjun", "Ava",
    "Beatriz", "Benjamin", "Bilal", "Bryce", "Camila", "Carlos", "Chen", "Chloe", "Dalia", "Daniel", "Darius",
    "Deepa", "Diego", "Elena", "Elijah", "Emeka", "Emily", "Esther", "Farah", "Felix", "Fatima", "Gabriel",
    "Grace", "Hana", "Hassan", "Hiroshi", "Imani", "Isaac", "Isabella", "Jae-won", "Jamal", "Jasmine", "Javier",
    "Jonah", "Juliana", "Kai", "Kavya", "Keanu", "Kofi", "Layla", "Leila", "Liam", "Lucia", "Malik", "Maria",
    "Mateo", "Maya", "Mei", "Miguel", "Mohammed", "Nadia", "Naomi", "Nathaniel", "Nia", "Noah", "Olivia",
    "Omar", "Priya", "Quentin", "Rafael", "Rania", "Ravi", "Rosa", "Ryan", "Sakura", "Samuel", "Sana",
    "Sebastian", "Siddharth", "Sofia", "Tariq", "Thandiwe", "Theo", "Valentina", "Victor", "Wen", "Xavier",
    "Yara", "Yusuf", "Zainab", "Zoe", "Ingrid", "Oskar", "Marisol", "Tomasz", "Ayesha", "Kwame", "Lena",
]
LAST = [
    "Abara", "Adeyemi", "Ahmed", "Alvarez", "Anderson", "Banerjee", "Barros", "Becker", "Bennett", "Brooks",
    "Castillo", "Chandra", "Chen", "Clarke", "Costa", "Dang", "Delgado", "Diallo", "Dubois", "Edwards",
    "Eriksen", "Fernandes", "Fischer", "Flores", "Friedman", "Garcia", "Ghosh", "Gonzalez", "Gupta", "Haddad",
    "Hernandez", "Hoang", "Hughes", "Ibrahim", "Ito", "Jackson", "Jensen", "Johansson", "Kaur", "Kim",
    "Kowalski", "Kumar", "Lambert", "Larsen", "Lee", "Lopez", "Mahmoud", "Martin", "Mbeki", "Mendoza",
    "Morales", "Murphy", "Nakamura", "Nguyen", "Novak", "Okafor", "Olsen", "Ortiz", "Osei", "Park", "Patel",
    "Pereira", "Petrov", "Quinn", "Ramirez", "Rao", "Reyes", "Rossi", "Saito", "Santos", "Schmidt", "Shah",
    "Silva", "Singh", "Sokolov", "Suzuki", "Tan", "Taylor", "Thompson", "Torres", "Tran", "Usman", "Vargas",
    "Volkov", "Walker", "Wang", "Williams", "Wong", "Yamamoto", "Yilmaz", "Young", "Zhang", "Zimmerman",
]
ADVISORS = ["Dr. Helen Marsh", "Dr. Kenji Oduya", "Prof. Ruth Calloway", "Dr. Samir Haddad", "Prof. Ines Vidal",
            "Dr. Lorna Whitfield", "Prof. Arturo Benitez", "Dr. Grace Okonkwo", "Prof. Daniel Strand"]
STUDENT_NOTES = [
    "", "", "", "Prefers contact by email.", "Transferred 9 credits from Riverside Community College.",
    "Works 15 h/week in the campus library.", "Commuter student.", "Member of the honors college.",
    "Participates in the peer mentoring program.", "Requested a name change on the diploma.",
    "Student-athlete (cross country).", "Resident assistant, North Hall.", "Studied abroad in Valencia (summer).",
    "FAFSA verification completed.", "Has a documented accommodation on file with Disability Services.",
    "Double major under consideration.", "Undergraduate research assistant in the Chemistry department.",
]

# dept -> (name, is_stem, courses[(number, title, credits, basis)])
CATALOG = {
    "MATH": (True, [("101", "College Algebra", 3, "letter"), ("151", "Calculus I", 4, "letter"),
                    ("152", "Calculus II", 4, "letter"), ("221", "Linear Algebra", 3, "letter"),
                    ("241", "Discrete Mathematics", 3, "letter"), ("330", "Probability", 3, "letter"),
                    ("410", "Real Analysis", 3, "letter")]),
    "PHYS": (True, [("121", "General Physics I", 4, "letter"), ("122", "General Physics II", 4, "letter"),
                    ("231", "Modern Physics", 3, "letter"), ("305", "Classical Mechanics", 3, "letter")]),
    "CHEM": (True, [("111", "General Chemistry I", 4, "letter"), ("112", "General Chemistry II", 4, "letter"),
                    ("221", "Organic Chemistry I", 4, "letter"), ("195", "Chemistry Lab Safety", 1, "pass_fail")]),
    "BIOL": (True, [("110", "Principles of Biology", 4, "letter"), ("215", "Genetics", 3, "letter"),
                    ("240", "Ecology", 3, "letter"), ("320", "Cell Biology", 3, "letter")]),
    "CSCI": (True, [("110", "Intro to Programming", 3, "letter"), ("210", "Data Structures", 3, "letter"),
                    ("310", "Algorithms", 3, "letter"), ("199", "Coding Lab", 1, "pass_fail"),
                    ("340", "Databases", 3, "letter")]),
    "ENGR": (True, [("101", "Engineering Design", 3, "letter"), ("220", "Statics", 3, "letter"),
                    ("250", "Circuits I", 4, "letter")]),
    "ENGL": (False, [("101", "College Writing", 3, "letter"), ("210", "World Literature", 3, "letter"),
                     ("305", "Shakespeare", 3, "letter"), ("320", "Creative Nonfiction", 3, "letter")]),
    "HIST": (False, [("110", "Modern World History", 3, "letter"), ("225", "History of the Americas", 3, "letter"),
                     ("340", "The Cold War", 3, "letter")]),
    "ECON": (False, [("201", "Principles of Microeconomics", 3, "letter"), ("202", "Principles of Macroeconomics", 3, "letter"),
                     ("310", "Econometrics", 3, "letter")]),
    "PSYC": (False, [("101", "Introduction to Psychology", 3, "letter"), ("230", "Developmental Psychology", 3, "letter"),
                     ("315", "Research Methods", 4, "letter")]),
    "SOCI": (False, [("101", "Introduction to Sociology", 3, "letter"), ("250", "Race and Ethnicity", 3, "letter")]),
    "PHIL": (False, [("110", "Ethics", 3, "letter"), ("220", "Logic", 3, "letter")]),
    "SPAN": (False, [("101", "Elementary Spanish I", 4, "letter"), ("201", "Intermediate Spanish", 3, "letter")]),
    "BUSN": (False, [("201", "Financial Accounting", 3, "letter"), ("250", "Marketing", 3, "letter"),
                     ("330", "Operations Management", 3, "letter")]),
    "ARTS": (False, [("110", "Drawing I", 3, "letter"), ("215", "Ceramics", 3, "letter"),
                     ("260", "Digital Photography", 3, "letter")]),
    "MUSC": (False, [("120", "Music Theory I", 3, "letter"), ("150", "University Ensemble", 1, "pass_fail"),
                     ("210", "History of Jazz", 3, "letter")]),
    "THEA": (False, [("101", "Introduction to Theatre", 3, "letter"), ("230", "Acting I", 3, "letter")]),
    "KINE": (False, [("110", "Fitness and Wellness", 1, "pass_fail"), ("210", "Sports Nutrition", 3, "letter")]),
    "FYSE": (False, [("100", "First-Year Seminar", 1, "pass_fail")]),
}
ARTS_DEPTS = ("ARTS", "MUSC", "THEA")
MAJORS = ["MATH", "PHYS", "CHEM", "BIOL", "CSCI", "ENGR", "ENGL", "HIST", "ECON", "PSYC", "SOCI", "BUSN",
          "ARTS", "MUSC", "THEA", "SPAN", "PHIL"]
STEM_MAJORS = ["MATH", "PHYS", "CHEM", "BIOL", "CSCI", "ENGR"]

LETTER = [("A", 40), ("A-", 37), ("B+", 33), ("B", 30), ("B-", 27), ("C+", 23), ("C", 20), ("C-", 17),
          ("D+", 13), ("D", 10), ("F", 0)]
POINTS10 = dict(LETTER)

TERMS = [  # code, name, start, end, academic year
    ("FA2021", "Fall 2021", "2021-08-23", "2021-12-17", "2021-22"),
    ("SP2022", "Spring 2022", "2022-01-18", "2022-05-13", "2021-22"),
    ("SU2022", "Summer 2022", "2022-05-31", "2022-07-29", "2021-22"),
    ("FA2022", "Fall 2022", "2022-08-22", "2022-12-16", "2022-23"),
    ("SP2023", "Spring 2023", "2023-01-17", "2023-05-12", "2022-23"),
    ("SU2023", "Summer 2023", "2023-05-30", "2023-07-28", "2022-23"),
    ("FA2023", "Fall 2023", "2023-08-21", "2023-12-15", "2023-24"),
    ("SP2024", "Spring 2024", "2024-01-16", "2024-05-10", "2023-24"),
    ("SU2024", "Summer 2024", "2024-05-28", "2024-07-26", "2023-24"),
    ("FA2024", "Fall 2024", "2024-08-26", "2024-12-20", "2024-25"),
    ("SP2025", "Spring 2025", "2025-01-21", "2025-05-16", "2024-25"),
    ("SU2025", "Summer 2025", "2025-06-02", "2025-06-27", "2024-25"),
]

# program code -> (name, min_gpa, floor, min_credits, amounts)
PROGRAMS = {
    "PRES": ("Presidential Scholarship", Fraction(350, 100), Fraction(320, 100), 24),
    "DEAN": ("Dean's Merit Award", Fraction(325, 100), Fraction(300, 100), 24),
    "STEM": ("STEM Excellence Grant", Fraction(300, 100), Fraction(275, 100), 24),
    "FGEN": ("First-Generation Access Scholarship", Fraction(250, 100), Fraction(200, 100), 20),
    "ARTS": ("Fine Arts Talent Award", Fraction(275, 100), Fraction(250, 100), 24),
}
AMOUNTS = {"PRES": [10000, 12000, 12500, 14800, 15000], "DEAN": [5000, 6000, 7500, 8000],
           "STEM": [3500, 4000, 4500, 5000], "FGEN": [3000, 4000, 4500, 5000, 5500],
           "ARTS": [2000, 2500, 3000]}

# The ten pending awards every scale starts with; each one exercises a rule.
BASE_SCENARIOS = [
    ("PRES", "renew"), ("PRES", "exact"), ("DEAN", "band_other_prior"), ("DEAN", "prior_probation"),
    ("STEM", "stem_short"), ("FGEN", "summer_needed"), ("ARTS", "band"), ("PRES", "integrity"),
    ("DEAN", "withdrawn"), ("STEM", "summer_low"),
]
EXTRA_KINDS = ["renew", "renew", "renew", "band", "low", "credits_short", "summer_needed", "summer_low",
               "w_grades", "exact", "integrity", "integrity_old", "integrity_pending", "withdrawn", "on_leave",
               "prior_probation", "stem_short", "arts_missing"]


def _round2(x: Fraction) -> Fraction:
    return Fraction(int(x * 100 + Fraction(1, 2)), 100)


class Course:
    def __init__(self, cid: int, dept: str, number: str, title: str, credits: int, basis: str):
        self.id, self.dept, self.number, self.title, self.credits, self.basis = cid, dept, number, title, credits, basis


def _stats(rows: list[tuple[str, Course, str]]) -> dict:
    """rows: (term, course, grade) of FA2024/SP2025/SU2025."""
    pts = cr = pts_s = cr_s = pts_wf = cr_wf = 0
    earned = earned_fs = stem = 0
    arts = False
    for term, c, g in rows:
        passing = (g in POINTS10 and g != "F") or g == "P"
        if passing:
            earned += c.credits
            if term != "SU2025":
                earned_fs += c.credits
            if CATALOG[c.dept][0]:
                stem += c.credits
            if c.dept in ARTS_DEPTS:
                arts = True
        if g in POINTS10:
            pts_s += POINTS10[g] * c.credits
            cr_s += c.credits
            if term != "SU2025":
                pts += POINTS10[g] * c.credits
                cr += c.credits
        if term != "SU2025" and (g in POINTS10 or g == "W") and c.basis == "letter":
            pts_wf += POINTS10.get(g, 0) * c.credits
            cr_wf += c.credits
    gpa = Fraction(pts, cr * 10) if cr else None
    gpa_s = Fraction(pts_s, cr_s * 10) if cr_s else None
    gpa_wf = Fraction(pts_wf, cr_wf * 10) if cr_wf else None
    return {"gpa": gpa, "gpa_s": gpa_s, "gpa_wf": gpa_wf, "earned": earned, "earned_fs": earned_fs,
            "stem": stem, "arts": arts}


def _ok_fraction(x: Fraction | None) -> bool:
    return x is not None and (x * 100 - int(x * 100)) != Fraction(1, 2)


def _grade(rng: random.Random, ability: float, basis: str, w_rate: float = 0.03) -> str:
    if basis == "pass_fail":
        r = rng.random()
        return "P" if r < 0.93 else ("NP" if r < 0.97 else "W")
    r = rng.random()
    if r < w_rate:
        return "W"
    if r < w_rate + 0.005:
        return "I"
    gp = ability + rng.gauss(0, 0.45)
    best = min(LETTER, key=lambda t: abs(t[1] / 10 - gp))
    return best[0]


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

    # terms and catalog
    term_id = {}
    for i, t in enumerate(TERMS, start=1):
        con.execute("insert into terms values (?,?,?,?,?,?)", (i, *t))
        term_id[t[0]] = i
    courses: list[Course] = []
    for dept, (_stem, items) in CATALOG.items():
        for number, title, credits, basis in items:
            c = Course(len(courses) + 1, dept, number, title, credits, basis)
            courses.append(c)
            con.execute("insert into courses values (?,?,?,?,?,?,?)",
                        (c.id, f"{dept} {number}", title, dept, credits, basis, "STEM" if _stem else "non-STEM"))
    by_dept: dict[str, list[Course]] = {}
    for c in courses:
        by_dept.setdefault(c.dept, []).append(c)
    for code, (name, *_rest) in PROGRAMS.items():
        src = {"PRES": "University endowment", "DEAN": "Annual fund", "STEM": "Halvorsen Foundation gift",
               "FGEN": "State access grant match", "ARTS": "Friends of the Arts"}[code]
        con.execute("insert into scholarship_programs values (?,?,?,?)", (code, name, src, "institutional"))

    n_students = scale.n_rows(130)
    n_pending = scale.n_rows(10)
    scenarios = list(BASE_SCENARIOS)
    while len(scenarios) < n_pending:
        kind = rng.choice(EXTRA_KINDS)
        if kind == "stem_short":
            prog = "STEM"
        elif kind == "arts_missing":
            prog = "ARTS"
        else:
            prog = rng.choice(list(PROGRAMS))
        scenarios.append((prog, kind))
    n_prior_only = scale.n_rows(18)
    roles = [("pending", s) for s in scenarios] + [("prior", None)] * n_prior_only
    roles += [("none", None)] * (n_students - len(roles))
    rng.shuffle(roles)

    used_names = set()
    award_rows: list[tuple] = []
    conduct_rows: list[tuple] = []
    enroll_rows: list[tuple] = []
    for sid, (role, scen) in enumerate(roles, start=1):
        while True:
            fn, ln = rng.choice(FIRST), rng.choice(LAST)
            if (fn, ln) not in used_names:
                used_names.add((fn, ln))
                break
        prog, kind = scen if scen else (None, None)
        if role == "pending":
            entry = rng.choice([2021, 2022, 2023, 2023, 2024]) if kind not in ("prior_probation", "band_other_prior") else rng.choice([2022, 2023])
            if prog == "STEM":
                major = rng.choice(STEM_MAJORS)
            elif prog == "ARTS":
                major = rng.choice(["ARTS", "MUSC", "THEA"])
            else:
                major = rng.choice(MAJORS)
            status = {"withdrawn": "withdrawn", "on_leave": "leave"}.get(kind, "active")
        else:
            entry = rng.choice([2021, 2021, 2022, 2023, 2024])
            major = rng.choice(MAJORS)
            r = rng.random()
            status = "active"
            if entry == 2021 and r < 0.5:
                status = "graduated"
            elif r < 0.06:
                status = "withdrawn"
            elif r < 0.11:
                status = "leave"
        student_no = f"U{rng.randint(1000000, 9999999)}"
        email = f"{fn.lower().replace('-', '')}.{ln.lower()}{rng.randint(1, 99)}@student.northfield.edu"
        con.execute("insert into students values (?,?,?,?,?,?,?,?,?,?)",
                    (sid, student_no, fn, ln, email, major, entry, status, rng.choice(ADVISORS),
                     rng.choice(STUDENT_NOTES)))

        ability = rng.uniform(2.3, 3.9)
        # history before the review year
        hist_terms = [t[0] for t in TERMS if int(t[0][2:]) >= entry + (0 if t[0].startswith("FA") else 1)
                      and t[0] not in ("FA2024", "SP2025", "SU2025")]
        for tc in hist_terms:
            if tc.startswith("SU") and rng.random() > 0.25:
                continue
            k = rng.randint(1, 2) if tc.startswith("SU") else rng.randint(4, 5)
            for c in _pick_courses(rng, by_dept, courses, major, k):
                enroll_rows.append((sid, c.id, term_id[tc], _grade(rng, ability, c.basis)))
        # review year
        if role == "pending":
            review = _review_rows(rng, by_dept, courses, major, prog, kind)
        elif status in ("graduated",):
            review = []
        else:
            review = []
            for tc in ("FA2024", "SP2025", "SU2025"):
                if tc == "SU2025" and rng.random() > 0.3:
                    continue
                if status == "withdrawn" and tc != "FA2024":
                    continue
                k = rng.randint(1, 2) if tc == "SU2025" else rng.randint(3, 5)
                for c in _pick_courses(rng, by_dept, courses, major, k):
                    review.append((tc, c, _grade(rng, ability, c.basis)))
        for tc, c, g in review:
            enroll_rows.append((sid, c.id, term_id[tc], g))

        # awards
        if role == "pending":
            amount = rng.choice(AMOUNTS[prog])
            if kind == "summer_needed" and prog == "FGEN":
                amount = 5700
            if entry <= 2023:
                dec = "probation" if kind == "prior_probation" else "renew"
                award_rows.append((sid, prog, "2023-24", amount, "closed", dec, amount,
                                   _prior_note(rng, dec), "2023-07-14"))
            if kind == "band_other_prior":
                award_rows.append((sid, "ARTS", "2023-24", 2000, "closed", "probation", 1000,
                                   "Probation: GPA below program minimum.", "2023-07-14"))
            award_rows.append((sid, prog, "2024-25", amount, "pending_review", None, None, None, "2024-07-12"))
        elif role == "prior":
            p2 = rng.choice(list(PROGRAMS))
            amount = rng.choice(AMOUNTS[p2])
            dec = rng.choice(["renew", "renew", "probation", "terminate"])
            award_rows.append((sid, p2, "2023-24", amount, "closed", dec,
                               {"renew": amount, "probation": amount / 2, "terminate": 0}[dec],
                               _prior_note(rng, dec), "2023-07-14"))
            r = rng.random()
            if dec != "terminate" and r < 0.5:
                st = rng.choice(["declined", "cancelled", "reviewed"])
                award_rows.append((sid, p2, "2024-25", amount, st, "terminate" if st == "reviewed" else None,
                                   0 if st == "reviewed" else None,
                                   {"declined": "Student declined the award (accepted external scholarship).",
                                    "cancelled": "Cancelled: student did not enroll for fall.",
                                    "reviewed": "Early review: student graduated in December."}[st],
                                   "2024-07-12"))
        elif entry == 2024 and rng.random() < 0.15:
            p2 = rng.choice(list(PROGRAMS))
            award_rows.append((sid, p2, "2025-26", rng.choice(AMOUNTS[p2]), "offered", None, None,
                               "Offer letter sent with admission packet.", "2025-03-28"))

        # conduct cases
        if role == "pending":
            if kind == "integrity":
                conduct_rows.append((sid, _date(rng, "2024-09-10", "2025-04-30"), "academic_integrity", "responsible",
                                     "Grade penalty and integrity seminar",
                                     "Unauthorized collaboration on a take-home examination; student admitted the violation."))
            elif kind == "integrity_old":
                conduct_rows.append((sid, _date(rng, "2023-10-01", "2024-05-01"), "academic_integrity", "responsible",
                                     "Written warning", "Improper citation in a term paper (first offense)."))
            elif kind == "integrity_pending":
                conduct_rows.append((sid, _date(rng, "2025-03-01", "2025-05-30"), "academic_integrity", "pending",
                                     "None yet", "Instructor report of suspected plagiarism; hearing scheduled."))
            elif kind == "summer_low":
                conduct_rows.append((sid, "2024-05-02", "academic_integrity", "responsible", "Written warning",
                                     "Reused a lab report from a previous course without permission."))
                conduct_rows.append((sid, _date(rng, "2024-10-01", "2025-03-01"), "housing", "responsible",
                                     "Fine $75", "Candle found during a fire-safety inspection."))
            elif rng.random() < 0.25:
                conduct_rows.append((sid, _date(rng, "2024-09-01", "2025-05-01"), rng.choice(["parking", "housing"]),
                                     rng.choice(["responsible", "not_responsible"]), "Fine $40",
                                     rng.choice(NOISE_CASES)))
            if kind in ("renew", "exact") and rng.random() < 0.3:
                conduct_rows.append((sid, _date(rng, "2024-11-01", "2025-04-15"), "academic_integrity", "not_responsible",
                                     "None", "Allegation of exam-answer sharing; panel found insufficient evidence."))
        else:
            for _ in range(rng.choice([0, 0, 0, 1, 1, 2])):
                cat = rng.choice(["academic_integrity", "housing", "housing", "parking", "behavioral", "alcohol"])
                conduct_rows.append((sid, _date(rng, "2022-09-01", "2025-06-20"), cat,
                                     rng.choice(["responsible", "responsible", "not_responsible", "pending", "dismissed"]),
                                     rng.choice(["Written warning", "Fine $50", "Probation (conduct)", "Educational module", "None"]),
                                     rng.choice(NOISE_CASES)))

    rng.shuffle(award_rows)
    for i, row in enumerate(award_rows, start=1):
        con.execute("insert into awards values (?,?,?,?,?,?,?,?,?,?)", (i, *row))
    conduct_rows.sort(key=lambda r: (r[1], r[0]))
    for i, row in enumerate(conduct_rows, start=1):
        con.execute("insert into conduct_cases values (?,?,?,?,?,?,?)", (i, *row))
    for i, row in enumerate(enroll_rows, start=1):
        con.execute("insert into enrollments values (?,?,?,?,?)", (i, *row))
    con.commit()
    con.close()
    _write_files(ws, scale, rng)


def _date(rng: random.Random, lo: str, hi: str) -> str:
    a, b = dt.date.fromisoformat(lo), dt.date.fromisoformat(hi)
    return (a + dt.timedelta(days=rng.randint(0, (b - a).days))).isoformat()


def _prior_note(rng: random.Random, dec: str) -> str:
    return {"renew": rng.choice(["Renewed; criteria met.", "Renewed at committee review.", "Met GPA and credit requirements."]),
            "probation": rng.choice(["Probation: GPA below program minimum.", "Probation: credit shortfall."]),
            "terminate": rng.choice(["Terminated: GPA below floor.", "Terminated: student withdrew."])}[dec]


NOISE_CASES = [
    "Parked in a reserved faculty lot on three occasions.", "Noise complaint after quiet hours in residence hall.",
    "Unregistered guest staying overnight for a week.", "Possession of alcohol in a substance-free hall.",
    "Verbal altercation with another student at the dining commons.", "Tampering with a smoke detector.",
    "Shared a homework solution file on a course forum.", "Copied portions of a classmate's programming assignment.",
    "Submitted a paper purchased from an online service.", "Failure to comply with a staff member's directive.",
    "Bicycle stored in a stairwell, blocking the fire exit.", "Use of a phone during a proctored exam.",
]


def _pick_courses(rng: random.Random, by_dept: dict, courses: list[Course], major: str, k: int,
                  exclude_depts: tuple = (), only: list[Course] | None = None) -> list[Course]:
    pool = only if only is not None else [c for c in courses if c.dept not in exclude_depts]
    major_pool = [c for c in by_dept.get(major, []) if c.dept not in exclude_depts and (only is None or c in only)]
    chosen: list[Course] = []
    while len(chosen) < k:
        src = major_pool if (major_pool and rng.random() < 0.45) else pool
        c = rng.choice(src)
        if c not in chosen:
            chosen.append(c)
    return chosen


def _review_rows(rng: random.Random, by_dept: dict, courses: list[Course], major: str, prog: str,
                 kind: str) -> list[tuple[str, Course, str]]:
    _name, mn, fl, mc = PROGRAMS[prog]
    kind_core = {"band_other_prior": "band", "prior_probation": "band", "integrity": "renew",
                 "integrity_old": "renew", "integrity_pending": "renew", "withdrawn": "renew",
                 "on_leave": "renew"}.get(kind, kind)
    stem_courses = [c for c in courses if CATALOG[c.dept][0]]
    no_arts = [c for c in courses if c.dept not in ARTS_DEPTS]

    def extra_ok(s: dict) -> bool:
        if prog == "STEM" and kind_core != "stem_short" and s["stem"] < 12:
            return False
        if prog == "ARTS" and kind_core != "arts_missing" and not s["arts"]:
            return False
        return True

    if kind_core == "exact":
        three = [c for c in courses if c.credits == 3 and c.basis == "letter"
                 and (prog != "STEM" or CATALOG[c.dept][0])]
        pattern = {"PRES": "AAAABBBB", "DEAN": "AABBBBBB", "STEM": "BBBBBBBB", "FGEN": "BBBBCCCC",
                   "ARTS": "BBBBBBCC"}[prog]
        picks = rng.sample(three, 8)
        rows = [("FA2024" if i < 4 else "SP2025", c, pattern[i]) for i, c in enumerate(picks)]
        rng.shuffle(rows)
        if prog == "ARTS":
            rows.append(("SP2025", next(c for c in courses if c.dept == "MUSC" and c.basis == "pass_fail"), "P"))
        else:
            rows.append(("FA2024", next(c for c in courses if c.dept == "FYSE"), "P"))
        s = _stats(rows)
        assert s["gpa"] == mn and s["earned"] >= mc and extra_ok(s)
        return rows

    target = {"renew": float(mn) + 0.45, "band": float(fl + mn) / 2, "low": float(fl) - 0.45,
              "credits_short": float(mn) + 0.45, "summer_needed": float(mn) + 0.45,
              "summer_low": float(mn) + 0.2, "w_grades": float(mn) + 0.12, "stem_short": float(mn) + 0.45,
              "arts_missing": float(mn) + 0.45}[kind_core]
    for _attempt in range(50000):
        ability = min(3.95, target + rng.uniform(-0.15, 0.15))
        rows: list[tuple[str, Course, str]] = []
        for tc in ("FA2024", "SP2025", "SU2025"):
            if tc == "SU2025":
                k = {"summer_needed": rng.randint(1, 2), "summer_low": rng.randint(1, 2)}.get(
                    kind_core, rng.choice([0, 0, 1]))
            elif kind_core == "credits_short":
                k = rng.randint(3, 4)
            elif kind_core == "summer_needed":
                k = rng.randint(3, 4)
            else:
                k = rng.randint(4, 5)
            only = None
            if kind_core == "arts_missing":
                only = no_arts
            elif kind_core == "stem_short":
                only = rng.choice([None, [c for c in courses if not CATALOG[c.dept][0]]])
            elif prog == "STEM" and tc != "SU2025":
                only = stem_courses if rng.random() < 0.6 else None
            picked = _pick_courses(rng, by_dept, courses, major, k, only=only)
            for c in picked:
                if tc == "SU2025" and kind_core == "summer_low" and c.basis == "letter":
                    g = rng.choice(["D", "D+", "C-", "F"])
                elif kind_core == "w_grades" and tc != "SU2025" and c.basis == "letter" and rng.random() < 0.3:
                    g = "W"
                else:
                    g = _grade(rng, ability, c.basis, w_rate=0.0 if kind_core == "w_grades" else 0.03)
                rows.append((tc, c, g))
        if prog == "ARTS" and kind_core != "arts_missing" and rng.random() < 0.7:
            rows.append(("SP2025", next(c for c in courses if c.dept == "MUSC" and c.basis == "pass_fail"), "P"))
        s = _stats(rows)
        g = s["gpa"]
        if not (_ok_fraction(g) and _ok_fraction(s["gpa_s"]) and _ok_fraction(s["gpa_wf"])):
            continue
        gr = _round2(g)
        ok = False
        if kind_core == "renew":
            ok = gr >= mn + Fraction(1, 10) and s["earned"] >= mc and extra_ok(s)
        elif kind_core == "band":
            ok = fl + Fraction(3, 100) <= gr <= mn - Fraction(5, 100) and s["earned"] >= mc and extra_ok(s)
        elif kind_core == "low":
            ok = gr <= fl - Fraction(1, 10) and s["earned"] >= mc and extra_ok(s)
        elif kind_core == "credits_short":
            ok = gr >= mn + Fraction(1, 10) and mc - 7 <= s["earned"] < mc and extra_ok(s)
        elif kind_core == "summer_needed":
            ok = gr >= mn + Fraction(1, 10) and s["earned_fs"] < mc <= s["earned"] and extra_ok(s)
        elif kind_core == "summer_low":
            ok = (gr >= mn + Fraction(3, 100) and s["gpa_s"] is not None and _round2(s["gpa_s"]) < mn
                  and s["earned"] >= mc and extra_ok(s))
        elif kind_core == "w_grades":
            ok = (gr >= mn + Fraction(2, 100) and _round2(s["gpa_wf"]) < mn and s["earned"] >= mc and extra_ok(s))
        elif kind_core == "stem_short":
            ok = gr >= mn + Fraction(1, 10) and s["earned"] >= mc and s["stem"] < 12
        elif kind_core == "arts_missing":
            ok = gr >= mn + Fraction(1, 10) and s["earned"] >= mc and not s["arts"]
        if ok:
            return rows
    raise RuntimeError(f"could not generate transcript for {prog}/{kind}")


SCHEMA = """
create table terms (term_id integer primary key, code text unique, name text, start_date text, end_date text,
                    academic_year text);
create table courses (course_id integer primary key, code text unique, title text, department text,
                      credits integer, grading_basis text, stem_designation text);
create table scholarship_programs (program_code text primary key, name text, funding_source text, kind text);
create table students (student_id integer primary key, student_no text, first_name text, last_name text,
                       email text, major text, entry_year integer, status text, advisor text, notes text);
create table enrollments (enrollment_id integer primary key, student_id integer references students,
                          course_id integer references courses, term_id integer references terms, grade text);
create table awards (award_id integer primary key, student_id integer references students,
                     program_code text references scholarship_programs, academic_year text, amount real,
                     status text, decision text, next_year_amount real, review_note text, awarded_on text);
create table conduct_cases (case_id integer primary key, student_id integer references students, case_date text,
                            category text, outcome text, sanction text, summary text);
"""


# ----------------------------------------------------------------------------------------- files

POLICY = """# Institutional Scholarship Renewal Policy

**Office of Student Financial Aid — effective for the 2025-26 renewal cycle (review of academic year 2024-25)**
Approved by the Scholarship Committee on 2025-03-11. This policy replaces all earlier renewal policies.

## Scope
This policy governs the annual renewal review of every institutional scholarship award whose status is
`pending_review` for academic year **2024-25**. Awards in any other status or year are not part of the review
and must not be modified. Program-specific thresholds and award amounts are set in the program criteria
sheets kept in `financial_aid/programs/` (one sheet per program code).

## 1. Enrollment standing
A student whose record status is anything other than `active` (for example `withdrawn`, `graduated` or
`leave`) cannot renew: the award is **terminated**.

## 2. Academic integrity
A conduct case in category `academic_integrity` with outcome `responsible` and a case date from
**2024-08-15 through 2025-06-30** (inclusive) terminates the award regardless of academic performance.
Cases with other outcomes (`not_responsible`, `pending`, `dismissed`), cases outside those dates and cases in
other categories (housing, parking, ...) do not affect renewal.

## 3. Renewal GPA
The renewal GPA is a credit-weighted average of quality points over the **Fall 2024 and Spring 2025** terms
only. Summer 2025 grades are **not** included in the renewal GPA.
* Quality points per letter grade are listed in `registrar/grade_points.csv`.
* Only grades that carry quality points count; W (withdrawal), I (incomplete), P and NP (pass/no pass)
  are excluded from both the points and the credits of the GPA. An F counts with 0.0 points.
* Round the GPA to two decimals (half up) before comparing it with a program threshold.

## 4. Credits earned
Credits earned count every course from **Fall 2024, Spring 2025 and Summer 2025** completed with a passing
grade: any letter grade except F, or P. Courses graded F, NP, W or I earn no credit.

## 5. Decision
Apply in this order:
1. Sections 1 and 2 — if either applies, the decision is `terminate`.
2. `renew` when the renewal GPA is at least the program's minimum renewal GPA **and** the credits earned are
   at least the program's minimum **and** any additional requirement on the program sheet is met.
3. Otherwise `probation` when the renewal GPA is at least the program's probation GPA floor, the program
   offers probation, and the student was **not** already placed on probation in the previous cycle for the
   **same program** (an award of the same program for academic year 2023-24 with decision `probation`).
   Probation received under a different program does not count.
4. Otherwise `terminate`.

## 6. Next-year amount
The 2025-26 amount follows the program sheet for `renew` and `probation`; a terminated award carries
**0.00** for 2025-26.

## 7. Recording
Record the decision and the 2025-26 amount on each reviewed award. Decisions are final once recorded;
the Financial Aid Office reports the total amount committed for 2025-26 to the Budget Office.
"""

OLD_POLICY = """# Scholarship Renewal Policy (2022-23 cycle)

> **SUPERSEDED.** This document was replaced by the 2025-26 renewal policy. Kept for audit purposes only.

1. Renewal GPA is computed over all terms of the academic year, including summer sessions.
2. Credits earned count fall and spring only; summer credits are not considered.
3. A student may be placed on probation in consecutive years at the committee's discretion.
4. Minimum renewal GPA for all merit programs: 3.30. Minimum credits: 27.
5. Academic integrity findings are referred to the committee, which decides case by case.
6. Renewed awards keep their amount; probationary awards are reduced by 25%.
"""


def _program_sheet(code: str) -> str:
    name, mn, fl, mc = PROGRAMS[code]
    extra = {
        "STEM": "At least **12** of the credits earned must be in STEM departments: MATH, PHYS, CHEM, BIOL, "
                "CSCI or ENGR (the same passing-grade rule as for credits earned applies).",
        "ARTS": "At least one course in ARTS, MUSC or THEA completed with a passing grade during the review "
                "year (Fall 2024, Spring 2025 or Summer 2025).",
    }.get(code, "none")
    renew = {
        "PRES": "current award increased by **3%**, rounded to the nearest whole dollar.",
        "DEAN": "current award amount, unchanged.",
        "STEM": "current award amount, unchanged.",
        "FGEN": "current award plus a **$500** book stipend, capped at **$6,000** in total.",
        "ARTS": "current award amount, unchanged.",
    }[code]
    prob = {
        "PRES": "current award amount, unchanged (the 3% increase is withheld).",
        "DEAN": "**50%** of the current award amount.",
        "STEM": "**50%** of the current award amount.",
        "FGEN": "current award amount, unchanged (no book stipend).",
        "ARTS": "not available — this program does **not** offer probation; an award that is not renewed is terminated.",
    }[code]
    blurb = {
        "PRES": "The Presidential Scholarship is the University's most selective merit award, offered to "
                "first-year entrants with exceptional records and renewable for up to four years.",
        "DEAN": "The Dean's Merit Award recognises strong academic achievement across all colleges and is "
                "renewable for up to four years of undergraduate study.",
        "STEM": "The STEM Excellence Grant, funded by the Halvorsen Foundation, supports students pursuing "
                "degrees in science, technology, engineering and mathematics.",
        "FGEN": "The First-Generation Access Scholarship supports students whose parents did not complete a "
                "four-year degree. It is matched by the state access grant.",
        "ARTS": "The Fine Arts Talent Award is offered by audition or portfolio review to students active in the "
                "visual and performing arts.",
    }[code]
    return f"""# {name} (program code {code})

{blurb}

## Renewal criteria — 2025-26 cycle

| Criterion | Requirement |
|---|---|
| Minimum renewal GPA | {float(mn):.2f} |
| Probation GPA floor | {float(fl):.2f} |
| Minimum credits earned | {mc} |
| Additional requirement | {extra} |

## 2025-26 award amount
- **Renewal:** {renew}
- **Probation:** {prob}

Questions: scholarships@northfield.edu · Program coordinator: {_coordinator(code)}
"""


def _coordinator(code: str) -> str:
    return {"PRES": "Miriam Oyelaran", "DEAN": "Thomas Reyes-Whitaker", "STEM": "Dr. Ana Lucia Ferraz",
            "FGEN": "Jerome Baptiste", "ARTS": "Keiko Lindqvist"}[code]


GRADE_CSV = """grade,quality_points,included_in_gpa,earns_credit,description
A,4.0,yes,yes,Excellent
A-,3.7,yes,yes,
B+,3.3,yes,yes,
B,3.0,yes,yes,Good
B-,2.7,yes,yes,
C+,2.3,yes,yes,
C,2.0,yes,yes,Satisfactory
C-,1.7,yes,yes,
D+,1.3,yes,yes,
D,1.0,yes,yes,Poor (passing)
F,0.0,yes,no,Failing
P,,no,yes,Pass (pass/fail courses)
NP,,no,no,No pass
W,,no,no,Withdrawal after the drop deadline
I,,no,no,Incomplete
"""

NEWS_PARAS = [
    "The FAFSA for {yr} opens on October 1. Students who file before the priority deadline of {d} receive first "
    "consideration for need-based aid.",
    "Work-study positions for the {term} term are posted on the student employment portal. Supervisors must submit "
    "timesheets by the second Friday of each month.",
    "Reminder: outside scholarships must be reported to our office. Awards from private donors may reduce a "
    "need-based package but never reduce an institutional merit award.",
    "Our counselors hold drop-in hours every Tuesday and Thursday from 1 to 4 pm in Harmon Hall, room 112.",
    "The emergency grant fund helped {n} students this semester with unexpected costs such as medical bills and "
    "car repairs. Applications are reviewed within five business days.",
    "Verification: if your FAFSA was selected for verification, upload the requested documents within 30 days to "
    "avoid a delay in disbursement.",
    "Satisfactory Academic Progress (SAP) for federal aid is evaluated separately from institutional scholarship "
    "renewal. A SAP warning does not by itself change a scholarship decision.",
    "The Budget Office has asked every unit to report committed scholarship totals for next year by {d}.",
    "Loan entrance counseling is required for first-time borrowers; it takes about 30 minutes online.",
    "Students studying abroad through approved exchange programs remain eligible for institutional aid.",
    "The state access grant match was renewed for another three years; award levels are unchanged.",
    "Thank you to the {n} donors who attended the scholarship luncheon in the Alumni Center.",
]
MINUTES_ITEMS = [
    "Discussion of a proposal to raise the Presidential Scholarship GPA threshold for the **2026-27** cycle. "
    "Tabled; no change for the current cycle.",
    "The committee reviewed {n} appeals from the previous cycle; {k} were granted.",
    "Budget update: endowment payout for scholarships increases by 2.1% next fiscal year.",
    "Members asked the registrar to confirm that summer grades post before the review date.",
    "Proposal to merge the Dean's Merit Award with the honors stipend: referred to a working group.",
    "Reminder that committee members must recuse themselves from reviewing relatives or advisees.",
    "The STEM Excellence Grant donor requested an annual impact report by August 15.",
    "Approved: new outreach campaign for first-generation students in partner high schools.",
    "The Fine Arts Talent Award audition calendar for next spring was approved.",
]
BULLETIN_ITEMS = [
    "Final grades for {term} are due from instructors 72 hours after each final exam.",
    "Grade changes after the posting deadline require a dean's signature.",
    "Incomplete (I) grades convert to F if not resolved within one calendar year.",
    "The course repeat policy: only the most recent attempt counts toward the cumulative GPA on the transcript "
    "(this does not change how term-based reviews are computed).",
    "Degree audits for students graduating in {term} must be completed by the advisor.",
    "Room changes for the {term} final exam period are posted on the registrar website.",
    "Transcript requests now take two business days; expedited service is available.",
    "Pass/no pass elections must be made before the sixth week of the term.",
    "Withdrawals after the drop deadline appear as W on the transcript.",
]


def _write_files(ws: Path, scale: Scale, rng: random.Random) -> None:
    def put(rel: str, text: str) -> None:
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    put("financial_aid/policies/scholarship_renewal_policy_2025-26.md", POLICY)
    put("financial_aid/policies/scholarship_renewal_policy_2022-23.md", OLD_POLICY)
    slugs = {"PRES": "presidential_scholarship", "DEAN": "deans_merit_award", "STEM": "stem_excellence_grant",
             "FGEN": "first_generation_access", "ARTS": "fine_arts_talent_award"}
    for code in PROGRAMS:
        put(f"financial_aid/programs/{code}_{slugs[code]}.md", _program_sheet(code))
    put("registrar/grade_points.csv", GRADE_CSV)

    def fill(s: str) -> str:
        return s.format(yr=rng.choice(["2025-26", "2026-27"]), d=rng.choice(["March 1", "February 15", "July 31"]),
                        term=rng.choice(["Fall 2024", "Spring 2025", "Summer 2025"]), n=rng.randint(12, 240),
                        k=rng.randint(1, 9))

    months = [(y, m) for y in (2022, 2023, 2024, 2025) for m in range(1, 13)]
    for i, (y, m) in enumerate(rng.sample(months, scale.n_files(2))):
        body = "\n\n".join(fill(p) for p in rng.sample(NEWS_PARAS, rng.randint(3, 5)))
        put(f"financial_aid/newsletters/aid_newsletter_{y}-{m:02d}.md",
            f"# Financial Aid Newsletter — {y}-{m:02d}\n\nIssue {i + 1}\n\n{body}\n")
    days = sorted(rng.sample(range(1, 1400), scale.n_files(1)))
    for d in days:
        date = (dt.date(2021, 9, 1) + dt.timedelta(days=d)).isoformat()
        items = "\n".join(f"{j + 1}. {fill(t)}" for j, t in enumerate(rng.sample(MINUTES_ITEMS, rng.randint(3, 5))))
        present = ", ".join(rng.sample([f"{rng.choice(FIRST)} {rng.choice(LAST)}" for _ in range(12)], 5))
        put(f"financial_aid/committee_minutes/scholarship_committee_{date}.md",
            f"# Scholarship Committee — minutes of {date}\n\nPresent: {present}\n\n{items}\n\nMeeting adjourned.\n")
    for n in range(1, scale.n_files(1) + 1):
        items = "\n".join(f"- {fill(t)}" for t in rng.sample(BULLETIN_ITEMS, rng.randint(3, 5)))
        put(f"registrar/bulletins/registrar_bulletin_{n:03d}.md",
            f"# Registrar Bulletin No. {n}\n\n{items}\n\nOffice of the University Registrar\n")
