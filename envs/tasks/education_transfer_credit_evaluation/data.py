"""Transfer credit evaluation: applicants, institutions, external coursework and already posted credit in
SQLite; the transfer credit policy, partner articulation tables (CSV) and the elective subject map (JSON)
in the workspace, among drafts, superseded documents and office memos."""

from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
from pathlib import Path

from envs.taskkit import Scale

FIRST = [
    "Adriana", "Ahmad", "Alana", "Alexei", "Amina", "Andre", "Anjali", "Ariel", "Bao", "Bianca", "Brandon",
    "Caleb", "Carmen", "Cheng", "Dante", "Delia", "Devon", "Dmitri", "Eamon", "Elif", "Emilio", "Esme",
    "Fernando", "Fiona", "Gideon", "Giulia", "Hamza", "Harper", "Ibrahim", "Ines", "Jada", "Jiho", "Joaquin",
    "Jordan", "Kamala", "Kenji", "Khadija", "Kiara", "Lars", "Leticia", "Lucas", "Mackenzie", "Mariam",
    "Marcus", "Mei-Ling", "Mikhail", "Nadia", "Nico", "Nkechi", "Oliver", "Paloma", "Pedro", "Petra", "Rashid",
    "Renata", "Riley", "Rohan", "Salma", "Santiago", "Selin", "Shauna", "Tobias", "Trinh", "Uma", "Vanessa",
    "Wesley", "Ximena", "Yasmin", "Yosef", "Zara", "Zeke", "Hollis", "Marguerite", "Desmond", "Anouk",
]
LAST = [
    "Acosta", "Adebayo", "Albrecht", "Aoki", "Barnes", "Bautista", "Bianchi", "Boateng", "Cabrera", "Carver",
    "Chowdhury", "Cruz", "Dimitrov", "Doyle", "Duarte", "Eze", "Farouk", "Fitzgerald", "Gallagher", "Greer",
    "Gutierrez", "Halvorsen", "Hashemi", "Holt", "Iqbal", "Jovanovic", "Kaplan", "Kariuki", "Khoury", "Lindgren",
    "Luong", "Macias", "Marchetti", "McAllister", "Mensah", "Moreau", "Nair", "Nowak", "Obi", "Ochoa", "Pham",
    "Pillai", "Quiroga", "Rahman", "Reinholt", "Rocha", "Salazar", "Sato", "Serrano", "Sharma", "Sorensen",
    "Stein", "Takahashi", "Toussaint", "Umarov", "Valdez", "Vance", "Wojcik", "Xu", "Yadav", "Zapata",
]
MAJORS = ["Biology", "Business Administration", "Computer Science", "Psychology", "Nursing (pre-licensure)",
          "Mechanical Engineering", "English", "History", "Economics", "Undeclared", "Kinesiology",
          "Environmental Science", "Sociology", "Graphic Design", "Mathematics"]

# key, internal dept, internal number (None = no internal equivalent), title, semester credits, kind
TOPICS = [
    ("alg_dev", "MATH", "095", "Intermediate Algebra", 3, "dev"),
    ("wri_dev", "ENGL", "098", "Basic Writing Skills", 3, "dev"),
    ("col_alg", "MATH", "101", "College Algebra", 3, "core"),
    ("precalc", "MATH", "120", "Precalculus", 4, "acad"),
    ("calc1", "MATH", "151", "Calculus I", 4, "core"),
    ("calc2", "MATH", "152", "Calculus II", 4, "acad"),
    ("stats", "MATH", "207", "Elementary Statistics", 3, "acad"),
    ("linalg", "MATH", "221", "Linear Algebra", 3, "acad"),
    ("comp1", "ENGL", "101", "English Composition I", 3, "core"),
    ("comp2", "ENGL", "102", "English Composition II", 3, "acad"),
    ("worldlit", "ENGL", "210", "World Literature", 3, "acad"),
    ("amlit", "ENGL", "230", "American Literature", 3, "acad"),
    ("bio1", "BIOL", "110", "Principles of Biology", 4, "acad"),
    ("anat", "BIOL", "120", "Human Anatomy and Physiology I", 4, "acad"),
    ("microbio", "BIOL", "230", "Microbiology", 4, "acad"),
    ("chem1", "CHEM", "111", "General Chemistry I", 4, "acad"),
    ("chem2", "CHEM", "112", "General Chemistry II", 4, "acad"),
    ("ochem", "CHEM", "221", "Organic Chemistry I", 4, "acad"),
    ("phys1", "PHYS", "121", "General Physics I", 4, "acad"),
    ("phys2", "PHYS", "122", "General Physics II", 4, "acad"),
    ("psych", "PSYC", "101", "Introduction to Psychology", 3, "core"),
    ("devpsy", "PSYC", "230", "Lifespan Development", 3, "acad"),
    ("worldhist", "HIST", "110", "Modern World History", 3, "acad"),
    ("ushist1", "HIST", "201", "United States History I", 3, "acad"),
    ("ushist2", "HIST", "202", "United States History II", 3, "acad"),
    ("microecon", "ECON", "201", "Principles of Microeconomics", 3, "acad"),
    ("macroecon", "ECON", "202", "Principles of Macroeconomics", 3, "acad"),
    ("soc", "SOCI", "101", "Introduction to Sociology", 3, "acad"),
    ("prog1", "CSCI", "110", "Introduction to Programming", 3, "acad"),
    ("datastruct", "CSCI", "210", "Data Structures", 3, "acad"),
    ("drawing", "ARTS", "110", "Drawing I", 3, "acad"),
    ("musapp", "MUSC", "105", "Music Appreciation", 3, "acad"),
    ("span1", "SPAN", "101", "Elementary Spanish I", 4, "acad"),
    ("span2", "SPAN", "102", "Elementary Spanish II", 4, "acad"),
    ("acct", "BUSN", "201", "Financial Accounting", 3, "acad"),
    ("introbus", "BUSN", "110", "Introduction to Business", 3, "acad"),
    ("ethics", "PHIL", "110", "Introduction to Ethics", 3, "acad"),
    ("speech", "COMM", "101", "Public Speaking", 3, "acad"),
    ("fitness", "KINE", "101", "Fitness Walking", 1, "acad"),
    ("biolab", "BIOL", "111", "Biology Laboratory", 1, "acad"),
    ("culinary", "CUL", None, "Culinary Foundations", 3, "voc"),
    ("hvac", "HVAC", None, "Refrigeration Principles", 4, "voc"),
    ("welding", "WELD", None, "Welding I", 3, "voc"),
    ("auto", "AUTO", None, "Automotive Brake Systems", 3, "voc"),
    ("nursing", "NURS", None, "Nursing Fundamentals", 4, "voc"),
]
TOPIC = {t[0]: t for t in TOPICS}
ACAD = [t[0] for t in TOPICS if t[5] in ("acad", "core")]

STYLES = {
    "A": {"MATH": "MAT", "ENGL": "ENG", "BIOL": "BIO", "CHEM": "CHM", "PHYS": "PHY", "PSYC": "PSY", "HIST": "HIS",
          "ECON": "ECO", "SOCI": "SOC", "CSCI": "CIS", "ARTS": "ART", "MUSC": "MUS", "SPAN": "SPA", "BUSN": "BUS",
          "PHIL": "PHI", "COMM": "COM", "KINE": "PED", "CUL": "CUL", "HVAC": "HVA", "WELD": "WLD", "AUTO": "AUT",
          "NURS": "NUR"},
    "B": {"MATH": "MATH", "ENGL": "ENGL", "BIOL": "BIOL", "CHEM": "CHEM", "PHYS": "PHYS", "PSYC": "PSYC",
          "HIST": "HIST", "ECON": "ECON", "SOCI": "SOCI", "CSCI": "CSC", "ARTS": "ARTS", "MUSC": "MUSI",
          "SPAN": "SPAN", "BUSN": "BUSI", "PHIL": "PHIL", "COMM": "SPCH", "KINE": "HPER", "CUL": "CULA",
          "HVAC": "HVAC", "WELD": "WELD", "AUTO": "AUTO", "NURS": "NURS"},
    "Q": {"MATH": "MATH", "ENGL": "ENGL", "BIOL": "BIOL", "CHEM": "CHEM", "PHYS": "PHYS", "PSYC": "PSYC",
          "HIST": "HIST", "ECON": "ECON", "SOCI": "SOC", "CSCI": "CS", "ARTS": "ART", "MUSC": "MUSC",
          "SPAN": "SPAN", "BUSN": "BUS", "PHIL": "PHIL", "COMM": "CMST", "KINE": "PE", "CUL": "CUL",
          "HVAC": "HVAC", "WELD": "WELD", "AUTO": "AUTO", "NURS": "NURS"},
}
SUBJECT_MAP = {
    "MAT": "MATH", "MATH": "MATH", "ENG": "ENGL", "ENGL": "ENGL", "BIO": "BIOL", "BIOL": "BIOL", "CHM": "CHEM",
    "CHEM": "CHEM", "PHY": "PHYS", "PHYS": "PHYS", "PSY": "PSYC", "PSYC": "PSYC", "HIS": "HIST", "HIST": "HIST",
    "ECO": "ECON", "ECON": "ECON", "SOC": "SOCI", "SOCI": "SOCI", "CIS": "CSCI", "CSC": "CSCI", "CS": "CSCI",
    "ART": "ARTS", "ARTS": "ARTS", "MUS": "MUSC", "MUSC": "MUSC", "MUSI": "MUSC", "SPA": "SPAN", "SPAN": "SPAN",
    "BUS": "BUSN", "BUSI": "BUSN", "PHI": "PHIL", "PHIL": "PHIL", "COM": "COMM", "SPCH": "COMM", "CMST": "COMM",
    "PED": "KINE", "HPER": "KINE", "PE": "KINE",
}

# name, city, state, accreditation, calendar, style
PARTNERS = [
    ("Riverbend Community College", "Eugene", "OR", "regional", "semester", "A"),
    ("Cascadia Valley College", "Everett", "WA", "regional", "quarter", "Q"),
    ("Summit Online University", "Denver", "CO", "national", "semester", "B"),
    ("Harborview Community College", "Tacoma", "WA", "regional", "semester", "B"),
    ("Pinecrest Technical College", "Bend", "OR", "regional", "quarter", "Q"),
    ("Mesa Verde College", "Grand Junction", "CO", "regional", "semester", "A"),
    ("Northgate State University", "Boise", "ID", "regional", "semester", "B"),
    ("Lakeland Community College", "Coeur d'Alene", "ID", "regional", "semester", "A"),
    ("Blue Ridge Community College", "Medford", "OR", "regional", "quarter", "Q"),
    ("Copperfield College", "Butte", "MT", "regional", "semester", "B"),
    ("Prairie Wind Community College", "Great Falls", "MT", "regional", "semester", "A"),
    ("Westbrook Polytechnic Institute", "Reno", "NV", "national", "semester", "B"),
    ("Saltmarsh Community College", "Astoria", "OR", "regional", "semester", "A"),
    ("Granite Peak College", "Missoula", "MT", "regional", "quarter", "Q"),
    ("Oakhaven Community College", "Salem", "OR", "regional", "semester", "A"),
    ("Red Canyon College", "Provo", "UT", "regional", "semester", "B"),
]
FIXED_NONPARTNERS = [
    ("Silver Creek College", "Yakima", "WA", "regional", "semester", "A"),
    ("Crossroads Career Institute", "Spokane", "WA", "none", "semester", "A"),
    ("Eastfield State University", "Pocatello", "ID", "regional", "semester", "B"),
    ("Horizon Bible College", "Nampa", "ID", "national", "semester", "B"),
]
PLACES = ["Alder", "Bayside", "Cedar Hills", "Clearwater", "Dunmore", "Elkhorn", "Fairhaven", "Glenwood",
          "Highland", "Juniper", "Kettle Falls", "Larkspur", "Maplewood", "Norwood", "Orchard Park", "Pine Bluff",
          "Quarry Hill", "Rosemont", "Sagebrush", "Timberline", "Upland", "Vista", "Willow Bend", "Yellowpine",
          "Ashford", "Brookside", "Crescent", "Driftwood", "Evergreen", "Foxhollow", "Goldendale", "Hawthorne"]
KINDS = ["Community College", "College", "State University", "Technical College", "University"]
CITIES = [("Portland", "OR"), ("Seattle", "WA"), ("Olympia", "WA"), ("Helena", "MT"), ("Ogden", "UT"),
          ("Sacramento", "CA"), ("Fresno", "CA"), ("Las Vegas", "NV"), ("Cheyenne", "WY"), ("Billings", "MT")]

EXAM_CREDITS = [
    ("AP", "AP Calculus AB (score 4)", "MATH 151", 4), ("AP", "AP English Language (score 4)", "ENGL 101", 3),
    ("AP", "AP Psychology (score 5)", "PSYC 101", 3), ("AP", "AP U.S. History (score 4)", "HIST 201", 3),
    ("AP", "AP Biology (score 4)", "BIOL 110", 4), ("AP", "AP Macroeconomics (score 3)", "ECON 202", 3),
    ("IB", "IB Chemistry HL (score 6)", "CHEM 111", 4), ("IB", "IB Spanish B HL (score 5)", "SPAN 102", 4),
    ("CLEP", "CLEP College Algebra (score 62)", "MATH 101", 3), ("CLEP", "CLEP Intro Sociology (score 58)", "SOCI 101", 3),
    ("military", "JST: Basic Leadership (ACE reviewed)", "GEN 1XX", 3),
]
GOOD = ["A", "A", "A-", "B+", "B", "B", "B-", "C+", "C"]
BAD = ["C-", "D+", "D", "F", "W", "I", "IP"]
EVAL_DATE = "2025-07-21"


class Inst:
    def __init__(self, iid: int, name: str, city: str, state: str, accr: str, cal: str, style: str,
                 partner: bool, draft: bool = False):
        self.id, self.name, self.city, self.state = iid, name, city, state
        self.accr, self.cal, self.style, self.partner, self.draft = accr, cal, style, partner, draft
        self.offer: dict[str, tuple[str, str, str, float]] = {}  # topic -> (subject, number, title, credits)
        self.articulation: dict[str, str] = {}  # topic -> equivalent or NO CREDIT

    def slug(self) -> str:
        return self.name.lower().replace("'", "").replace(" ", "_")


def _make_catalog(rng: random.Random, inst: Inst) -> None:
    style = STYLES[inst.style]
    keys = [k for k in TOPIC if k not in ("alg_dev", "wri_dev")]
    offered = ["alg_dev", "wri_dev", "comp1", "col_alg", "psych", "calc1", "fitness"]
    offered += [k for k in keys if k not in offered and rng.random() < 0.75]
    for k in offered:
        _, dept, num, title, cr, kind = TOPIC[k]
        subj = style[dept]
        if kind == "dev":
            number = rng.choice(["090", "095", "098", "080"] if dept == "MATH" else ["090", "098", "099"])
        elif kind == "voc":
            number = str(rng.choice([101, 110, 115, 120, 130, 210]))
        else:
            base = int(num)
            number = str(base + rng.choice([0, 0, 0, 1, 2, 5, 9]) if base % 100 < 90 else base)
        while any(o[0] == subj and o[1] == number for o in inst.offer.values()):
            number = f"{int(number) + 1:03d}"  # course numbers are unique within an institution
        if inst.cal == "quarter":
            credits = {3: rng.choice([5, 5, 4]), 4: 5, 1: rng.choice([1, 2])}[cr]
        else:
            credits = cr
        t = title
        if inst.style == "Q" and rng.random() < 0.2:
            t = title.replace(" I", " 1").replace(" II", " 2")
        inst.offer[k] = (subj, number, t, float(credits))
    for k in inst.offer:
        kind = TOPIC[k][5]
        if kind == "dev":
            if rng.random() < 0.6:
                inst.articulation[k] = "NO CREDIT"
        elif kind == "voc":
            if rng.random() < 0.5:
                inst.articulation[k] = "NO CREDIT"
        elif kind == "core" or rng.random() < (0.8 if inst.accr == "regional" else 0.55):
            inst.articulation[k] = f"{TOPIC[k][1]} {TOPIC[k][2]}"


def _term_dates(rng: random.Random, inst: Inst, year0: int, n_terms: int) -> list[str]:
    """Completion dates of consecutive terms starting with the fall term of year0."""
    months = [12, 3, 6] if inst.cal == "quarter" else [12, 5]
    out, y = [], year0
    for i in range(n_terms):
        m = months[i % len(months)]
        if i > 0 and months[(i - 1) % len(months)] == 12:
            y += 1
        day = {12: 14, 3: 20, 6: 12, 5: 10}[m] + rng.randint(-3, 3)
        out.append(dt.date(y, m, day).isoformat())
    return out


def _schedule(rng: random.Random, inst: Inst, topics: list[str], year0: int) -> list[tuple[str, str]]:
    """Assign topics to consecutive terms (3-5 per term). Returns [(topic, completed_on)]."""
    per = 3 if inst.cal == "quarter" else 4
    n_terms = max(1, (len(topics) + per - 1) // per)
    dates = _term_dates(rng, inst, year0, n_terms + 1)
    out = []
    for i, k in enumerate(topics):
        out.append((k, dates[min(i // per, len(dates) - 1)]))
    return out


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

    # institutions
    n_partners = min(len(PARTNERS), max(3, scale.n_files(3)))
    insts: list[Inst] = []
    specs = [(p, True) for p in PARTNERS[:n_partners]] + [(p, False) for p in FIXED_NONPARTNERS]
    used = {p[0] for p, _ in specs}
    while len(specs) < n_partners + scale.n_rows(10):
        name = f"{rng.choice(PLACES)} {rng.choice(KINDS)}"
        if name in used:
            continue
        used.add(name)
        city, state = rng.choice(CITIES)
        r = rng.random()
        accr = "regional" if r < 0.78 else ("national" if r < 0.92 else "none")
        specs.append(((name, city, state, accr, "quarter" if rng.random() < 0.2 else "semester",
                       rng.choice("AB")), False))
    order = list(range(len(specs)))
    rng.shuffle(order)
    for iid, idx in enumerate(order, start=1):
        (name, city, state, accr, cal, style), partner = specs[idx]
        if cal == "quarter":
            style = "Q"
        inst = Inst(iid, name, city, state, accr, cal, style, partner, draft=(name == "Silver Creek College"))
        _make_catalog(rng, inst)
        insts.append(inst)
        con.execute("insert into institutions values (?,?,?,?,?,?,?)",
                    (iid, name, city, state, accr, cal, f"{rng.randint(1000, 9999)}"))
    by_name = {i.name: i for i in insts}
    partners = [i for i in insts if i.partner]
    reg_sem_partners = [i for i in partners if i.accr == "regional" and i.cal == "semester"]
    reg_q_partners = [i for i in partners if i.accr == "regional" and i.cal == "quarter"]
    nat_partners = [i for i in partners if i.accr == "national"]
    reg_sem_nonpartners = [i for i in insts if not i.partner and i.accr == "regional" and i.cal == "semester"
                           and not i.draft]
    none_insts = [i for i in insts if i.accr == "none"]
    all_regular = [i for i in insts if i.accr != "none"]

    # internal catalog (reference table)
    for t in TOPICS:
        if t[2] is not None and t[5] != "dev":
            con.execute("insert into catalog values (?,?,?,?)", (f"{t[1]} {t[2]}", t[3], t[1], t[4]))

    # applicants
    n_scope = scale.n_rows(8)
    base_profiles = ["cc_partner", "quarter", "two_schools", "national", "cap", "old", "draft", "pass_grades"]
    profiles = list(base_profiles)
    while len(profiles) < n_scope:
        profiles.append(rng.choice(base_profiles + ["cc_partner", "two_schools", "quarter"]))
    roles = [("scope", p) for p in profiles]
    roles += [("admitted_only", None)] * scale.n_rows(2) + [("spring", None)] * scale.n_rows(2)
    roles += [("on_hold", None)] * scale.n_rows(2) + [("completed", None)] * scale.n_rows(52)
    rng.shuffle(roles)

    ext_rows: list[tuple] = []
    posted: list[tuple] = []
    names_used: set = set()
    for aid, (role, prof) in enumerate(roles, start=1):
        while True:
            fn, ln = rng.choice(FIRST), rng.choice(LAST)
            if (fn, ln) not in names_used:
                names_used.add((fn, ln))
                break
        admit = "SP2026" if role == "spring" else "FA2025"
        adm_status = "admitted" if role == "admitted_only" else "deposited"
        ev_status = {"on_hold": "on_hold", "completed": "completed"}.get(role, "pending")
        note = {"on_hold": "Waiting for official transcript from prior institution.",
                "admitted_only": "Admitted 2025-04-02; enrollment deposit not yet received.",
                "spring": "Deferred admission to Spring 2026."}.get(role, rng.choice(
                    ["", "", "Veteran; GI Bill paperwork submitted.", "Reverse-transfer consent on file.",
                     "Requested evaluation before orientation.", "Transcript received via e-transcript.",
                     "Phi Theta Kappa member."]))
        con.execute("insert into applicants values (?,?,?,?,?,?,?,?,?,?)",
                    (aid, fn, ln, f"{fn.lower()}.{ln.lower().replace(' ', '')}@mailbox.example.org", admit,
                     rng.choice(MAJORS), adm_status, ev_status,
                     f"2025-{rng.randint(3, 6):02d}-{rng.randint(1, 28):02d}", note))
        courses, exams = _applicant_courses(rng, prof, reg_sem_partners, reg_q_partners, nat_partners,
                                            reg_sem_nonpartners, none_insts, all_regular, by_name)
        for inst, k, grade, date in courses:
            subj, number, title, credits = inst.offer[k]
            ext_rows.append((aid, inst.id, subj, number, title, credits, grade, date))
        for src, desc, eq, cr in exams:
            posted.append((aid, src, None, desc, eq, float(cr), f"2025-0{rng.randint(5, 6)}-{rng.randint(10, 28)}",
                           "admissions_exam_import"))
        if role == "completed":
            for inst, k, grade, _date in courses:
                if grade in GOOD and inst.accr == "regional" and TOPIC[k][5] in ("acad", "core"):
                    subj, number, title, credits = inst.offer[k]
                    eq = inst.articulation.get(k) or f"{SUBJECT_MAP.get(subj, 'GEN')} {'1XX' if int(number) < 200 else '2XX'}"
                    if eq == "NO CREDIT":
                        continue
                    cr = credits if inst.cal == "semester" else round(credits * 2 / 3, 2)
                    posted.append((aid, "transfer", None, f"{subj} {number} {title} ({inst.name})",
                                   eq, cr, f"2025-0{rng.randint(5, 7)}-{rng.randint(10, 28)}", rng.choice(
                                       ["j.whitcombe", "r.alvarez", "transfer_eval_batch_2025a"])))

    # insert external courses; link posted transfer rows to their ext ids by description
    ext_id_of: dict[tuple, int] = {}
    for eid, row in enumerate(ext_rows, start=1):
        con.execute("insert into external_courses values (?,?,?,?,?,?,?,?,?)", (eid, *row))
        inst_name = next(i.name for i in insts if i.id == row[1])
        ext_id_of[(row[0], f"{row[2]} {row[3]} {row[4]} ({inst_name})")] = eid
    rng.shuffle(posted)
    for cid, row in enumerate(posted, start=1):
        aid, src, ext, desc, eq, cr, on, by = row
        ext = ext_id_of.get((aid, desc)) if src == "transfer" else None
        con.execute("insert into posted_credits values (?,?,?,?,?,?,?,?,?)", (cid, aid, src, ext, desc, eq, cr, on, by))
    con.commit()
    con.close()
    _write_files(ws, scale, rng, insts)


def _applicant_courses(rng, prof, reg_sem_partners, reg_q_partners, nat_partners, reg_sem_nonpartners,
                       none_insts, all_regular, by_name):
    """Returns ([(inst, topic, grade, completed_on)], [exam credit tuples])."""
    courses: list[tuple] = []
    exams: list[tuple] = []

    def take(inst, n, year0, bad=0, extra=(), grades=None):
        pool = [k for k in inst.offer if TOPIC[k][5] in ("acad", "core")]
        ks = list(extra) + [k for k in rng.sample(pool, min(n, len(pool))) if k not in extra]
        ks = ks[:max(n, len(extra))]
        sched = _schedule(rng, inst, ks, year0)
        bad_idx = set(rng.sample(range(len(sched)), min(bad, len(sched))))
        for i, (k, date) in enumerate(sched):
            g = (grades[i] if grades and i < len(grades) else None) or (rng.choice(BAD) if i in bad_idx else rng.choice(GOOD))
            courses.append((inst, k, g, date))

    if prof is None:  # out of scope / completed applicants
        inst = rng.choice(all_regular + none_insts[:1])
        take(inst, rng.randint(4, 14), rng.randint(2016, 2023), bad=rng.randint(0, 2))
        if rng.random() < 0.3:
            exams.append(rng.choice(EXAM_CREDITS))
        rng.shuffle(courses)
        return courses, exams
    if prof == "cc_partner":
        inst = rng.choice(reg_sem_partners)
        take(inst, rng.randint(9, 12), rng.randint(2021, 2023), bad=1, extra=("alg_dev", "comp1"))
        # ensure a C- and a vocational course
        voc = [k for k in inst.offer if TOPIC[k][5] == "voc"]
        d = courses[-1][3]
        courses.append((inst, rng.choice([k for k in inst.offer if TOPIC[k][5] in ("acad", "core")]), "C-", d))
        if voc:
            courses.append((inst, rng.choice(voc), "A", d))
        exams.append(EXAM_CREDITS[1])  # AP English Language -> ENGL 101 (duplicates comp1)
        if rng.random() < 0.5:
            exams.append(EXAM_CREDITS[2])
    elif prof == "quarter":
        inst = rng.choice(reg_q_partners)
        take(inst, rng.randint(8, 11), rng.randint(2021, 2023), bad=1)
        courses.append((inst, rng.choice([k for k in inst.offer if TOPIC[k][5] in ("acad", "core")]), "W",
                        courses[-1][3]))
    elif prof == "two_schools":
        a, b = rng.sample(reg_sem_partners + reg_q_partners, 2)
        y = rng.randint(2019, 2022)
        take(a, rng.randint(4, 6), y, extra=("comp1",))
        take(b, rng.randint(4, 6), y + 2, extra=("comp1",))
        c = rng.choice(reg_sem_nonpartners)
        take(c, rng.randint(2, 3), y + 1)
    elif prof == "national":
        a = rng.choice(nat_partners)
        arts = [k for k in a.offer if k in a.articulation and a.articulation[k] != "NO CREDIT"]
        nonart = [k for k in a.offer if k not in a.articulation and TOPIC[k][5] in ("acad", "core")]
        ks = rng.sample(arts, min(4, len(arts))) + rng.sample(nonart, min(3, len(nonart)))
        for k, d in _schedule(rng, a, ks, rng.randint(2020, 2023)):
            courses.append((a, k, rng.choice(GOOD), d))
        n = rng.choice(none_insts)
        take(n, rng.randint(2, 3), rng.randint(2018, 2020))
    elif prof == "cap":
        for _attempt in range(400):
            courses.clear()
            exams[:] = rng.sample([e for e in EXAM_CREDITS if e[0] == "AP"], 3)
            a = rng.choice(reg_sem_partners)
            b = rng.choice(reg_sem_nonpartners)
            y = rng.randint(2018, 2020)
            take(a, 13, y, bad=1, extra=("fitness",) if rng.random() < 0.5 else ())
            take(b, 10, y + 2, extra=("fitness",))
            rng.shuffle(courses)
            if _cap_ok(courses, exams):
                return courses, exams
        else:
            raise RuntimeError("could not build a cap applicant")
    elif prof == "old":
        inst = rng.choice(reg_sem_nonpartners)
        take(inst, 4, 2012)
        pool = [k for k in inst.offer if TOPIC[k][5] in ("acad", "core")]
        courses.append((inst, rng.choice(pool), "A-", "2015-07-31"))
        courses.append((inst, rng.choice(pool), "B", "2015-12-18"))
        take(inst, rng.randint(4, 6), 2022)
        voc = [k for k in inst.offer if TOPIC[k][5] == "voc"]
        if voc:
            courses.append((inst, rng.choice(voc), "B+", "2023-05-12"))
    elif prof == "draft":
        inst = by_name["Silver Creek College"]
        take(inst, rng.randint(6, 8), rng.randint(2020, 2023), bad=1)
    elif prof == "pass_grades":
        inst = rng.choice(reg_sem_partners + reg_q_partners)
        n = rng.randint(7, 9)
        grades = ["P", "IP", "D+", "I"] + [None] * n
        rng.shuffle(grades)
        take(inst, n, rng.randint(2021, 2023), grades=grades)
        if rng.random() < 0.5:
            exams.append(rng.choice(EXAM_CREDITS))
    rng.shuffle(courses)
    return courses, exams


def _cap_ok(courses, exams) -> bool:
    """True when the 64-credit cap rejects some course and a later, smaller course still fits."""
    total = sum(e[3] for e in exams)
    seen = {e[2] for e in exams}
    rows = sorted(enumerate(courses), key=lambda t: (t[1][3], t[0]))
    rejected = accepted_after = False
    for _i, (inst, k, g, _d) in rows:
        subj, number, _title, credits = inst.offer[k]
        if g not in GOOD or int(number) < 100:
            continue
        eq = inst.articulation.get(k) or f"{SUBJECT_MAP.get(subj, 'GEN')} {'1XX' if int(number) < 200 else '2XX'}"
        if eq == "NO CREDIT" or ("XX" not in eq and eq in seen):
            continue
        if total + credits > 64:
            rejected = True
            continue
        if rejected:
            accepted_after = True
        total += credits
        seen.add(eq)
    return rejected and accepted_after and total <= 64


SCHEMA = """
create table institutions (institution_id integer primary key, name text, city text, state text,
                           accreditation text, calendar text, ceeb_code text);
create table applicants (applicant_id integer primary key, first_name text, last_name text, email text,
                         admit_term text, intended_major text, admission_status text, evaluation_status text,
                         deposit_or_admit_date text, notes text);
create table external_courses (ext_id integer primary key, applicant_id integer references applicants,
                               institution_id integer references institutions, subject text, number text,
                               title text, credits real, grade text, completed_on text);
create table posted_credits (credit_id integer primary key, applicant_id integer references applicants,
                             source text, ext_id integer references external_courses, description text,
                             equivalent text, credits real, posted_on text, posted_by text);
create table catalog (course_code text primary key, title text, department text, credits integer);
"""

POLICY = """# Transfer Credit Policy — Lakeshore State University

Office of the Registrar · Transfer Evaluation Unit · **effective for admits from Fall 2025**
(replaces the 2019 policy). Evaluation batch date: 2025-07-21.

## 1. Who is evaluated in this batch
Applicants admitted for **Fall 2025** (`admit_term` = `FA2025`) whose admission status is `deposited` and
whose evaluation status is `pending`. Applicants who have not paid the enrollment deposit, who were admitted
for another term, or whose evaluation is `on_hold` or already `completed` are **not** evaluated now.

## 2. Institutional accreditation
* **Regional** accreditation: every course is eligible for evaluation (sections 3–7).
* **National** accreditation: only courses listed in a Lakeshore articulation agreement with that institution
  can transfer; courses without an articulation entry receive **no** credit (no elective credit).
* **No recognised accreditation** (`none`): nothing transfers.

## 3. Course eligibility
A course receives no credit when any of the following holds:
* the grade is below **C** — only A, A-, B+, B, B-, C+, C and P (pass) are accepted; C-, D+, D, F, W, I
  and IP (in progress) are not;
* it was completed **before 2015-08-01** (coursework older than ten years at entry);
* it is developmental: course number below 100 (for example `MAT 095`), even if an agreement lists it.

## 4. Equivalents
1. If Lakeshore has an articulation agreement with the institution, it is the CSV file named after the
   institution in `transfer/articulation/` (lower-case, spaces replaced by underscores). When the course is
   listed there, the equivalent is the `lakeshore_equivalent` column; `NO CREDIT` means the course does not
   transfer. Draft agreements (`transfer/articulation/drafts/`) are **not in force** and must not be used.
2. Otherwise (regionally accredited institutions only) the course transfers as elective credit: the
   department comes from `transfer/elective_subject_map.json` using the external subject code (subjects
   not in the map use department `GEN`), followed by `1XX` for course numbers 100–199 and `2XX` for
   course numbers 200 and above — for example `ENG 215` becomes `ENGL 2XX`, `CUL 110` becomes `GEN 1XX`.

## 5. Credit conversion
Credits are posted in semester hours. Semester-calendar institutions: as on the transcript. Quarter-calendar
institutions: quarter hours × 2/3, rounded to two decimals (5 → 3.33, 4 → 2.67, 3 → 2.00).

## 6. Duplicates
A specific Lakeshore course (anything other than a `1XX` / `2XX` elective) can be awarded only once per
student. Credit already posted for the student (AP, IB, CLEP, military credit) counts: a transfer course
whose equivalent was already posted receives no credit. If two transfer courses map to the same course,
the one completed first is evaluated first.

## 7. Maximum transfer credit
A student may hold at most **64.00** semester hours of transfer and exam credit combined, including the
credit already posted. Evaluate the eligible courses in order of completion date (earliest first; courses
completed on the same date in order of their course record id `ext_id`). Award a course only if its credit
fits entirely within the remaining allowance; a course that does not fit receives no credit, but a later,
smaller course may still fit. Partial credit is never awarded.

## 8. Posting
Post one evaluation per applicant listing every course that receives credit (`ext_id`, equivalent,
semester credits). Posting completes the applicant's evaluation — an applicant with no transferable course
is still posted, with an empty list.
"""

OLD_POLICY = """# Transfer Credit Policy (2019)

> **SUPERSEDED** by the Fall 2025 transfer credit policy. Do not apply to current evaluations.

- Maximum transfer credit: 60 semester hours; exam credit does not count toward the maximum.
- Minimum grade: C- (1.7).
- Quarter hours are converted at 0.67 semester hours each.
- Coursework older than 15 years requires departmental review.
- Nationally accredited institutions: elective credit may be awarded at the evaluator's discretion.
"""

DRAFT_MEMO = """# Memo: articulation agreement with Silver Creek College

From: Associate Registrar, Transfer Articulation · To: Transfer evaluators

Negotiations with Silver Creek College are ongoing. A **draft** equivalency table has been shared by their
curriculum office and is stored under `transfer/articulation/drafts/` for faculty review. It has **not** been
signed and is not in force: until the agreement is executed, Silver Creek coursework is evaluated like any
other regionally accredited institution without an agreement.
"""

NOISE = {
    "advising": [
        "Transfer students must meet with an advisor in their first term to build a degree plan.",
        "Orientation for transfer students runs {d1} and {d2} in the Student Union ballroom.",
        "Students may appeal a transfer evaluation within 30 days by submitting course syllabi.",
        "The honors college accepts transfer students with a cumulative GPA of 3.5 or higher.",
        "Reverse transfer lets students combine Lakeshore credit with prior coursework to earn an associate degree.",
        "Elective credit (1XX/2XX) counts toward the 120 credits required for graduation but not toward major requirements.",
        "Students with military experience should submit their Joint Services Transcript.",
        "Placement testing in mathematics is waived for students with transfer credit in MATH 101 or above.",
        "Students planning to major in nursing must complete an additional application by {d1}.",
    ],
    "ops": [
        "The e-transcript inbox receives about {n} documents per week during peak season.",
        "Evaluators should record the evaluation batch date on every posting.",
        "Paper transcripts must be scanned within two business days of receipt.",
        "Staffing: {name} covers the transfer desk on Fridays through August.",
        "System maintenance on {d1}: the student records system will be unavailable from 6 to 9 pm.",
        "Reminder to clear the on-hold queue weekly; most holds are missing final transcripts.",
        "The state transfer council meets on {d2}; agenda items include common course numbering.",
    ],
}


def _write_files(ws: Path, scale: Scale, rng: random.Random, insts: list[Inst]) -> None:
    def put(rel: str, text: str) -> None:
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    put("transfer/transfer_credit_policy_fall2025.md", POLICY)
    put("transfer/archive/transfer_credit_policy_2019.md", OLD_POLICY)
    put("transfer/elective_subject_map.json", json.dumps(
        {"description": "External subject code -> Lakeshore department for elective (1XX/2XX) credit.",
         "map": dict(sorted(SUBJECT_MAP.items()))}, indent=2) + "\n")
    put("transfer/memos/silver_creek_articulation_status.md", DRAFT_MEMO)
    for inst in insts:
        if not (inst.partner or inst.draft):
            continue
        lines = ["external_course,external_title,lakeshore_equivalent,notes"]
        for k in sorted(inst.articulation, key=lambda k: inst.offer[k][:2]):
            subj, number, title, _cr = inst.offer[k]
            eq = inst.articulation[k]
            if inst.draft:
                # the draft proposes different, more generous equivalents
                eq = f"{TOPIC[k][1]} {TOPIC[k][2]}" if TOPIC[k][2] and TOPIC[k][5] != "dev" else "GEN 1XX"
            note = rng.choice(["", "", "", "reviewed 2024", "lab included", "equivalency confirmed by department"])
            if eq == "NO CREDIT":
                note = "non-transferable (developmental or vocational)"
            lines.append(f"{subj} {number},{title},{eq},{note}")
        rel = (f"transfer/articulation/drafts/{inst.slug()}_DRAFT.csv" if inst.draft
               else f"transfer/articulation/{inst.slug()}.csv")
        put(rel, "\n".join(lines) + "\n")

    def fill(s: str) -> str:
        return s.format(d1=f"2025-0{rng.randint(6, 8)}-{rng.randint(10, 28)}",
                        d2=f"2025-0{rng.randint(6, 8)}-{rng.randint(10, 28)}", n=rng.randint(80, 400),
                        name=f"{rng.choice(FIRST)} {rng.choice(LAST)}")

    for i in range(scale.n_files(3)):
        kind = rng.choice(list(NOISE))
        body = "\n".join(f"- {fill(s)}" for s in rng.sample(NOISE[kind], 4))
        title = {"advising": "Transfer advising notes", "ops": "Transfer office operations update"}[kind]
        put(f"transfer/notes/{kind}_{i + 1:02d}.md", f"# {title} #{i + 1}\n\n{body}\n")
    for i in range(scale.n_files(2)):
        d = dt.date(2025, 1, 6) + dt.timedelta(days=14 * i + rng.randint(0, 6))
        rows = ["date,session,location,capacity"]
        for j in range(rng.randint(4, 8)):
            day = d + dt.timedelta(days=j)
            rows.append(f"{day.isoformat()},{rng.choice(['Transfer orientation', 'Advising drop-in', 'Campus tour', 'Financial aid Q&A'])},"
                        f"{rng.choice(['Union 210', 'Library 3rd floor', 'Harmon Hall 101', 'Online'])},{rng.randint(20, 120)}")
        put(f"events/transfer_events_{d.isoformat()}.csv", "\n".join(rows) + "\n")
