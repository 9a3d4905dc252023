"""Denied claim lines: payers, providers, patients, claims and claim lines in SQLite; the denial playbook,
payer filing limits and per-payer fee schedules (CSV) in the workspace, among bulletins and old versions."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from pathlib import Path

from envs.taskkit import Scale

WORK_DATE = dt.date(2025, 4, 15)
# payer_id, code, name, plan_type, corrected-claim limit, appeal limit
PAYERS = [
    (1, "NWHP", "Northwind Health Plan", "commercial", 180, 180),
    (2, "KSM", "Keystone Mutual", "commercial", 90, 60),
    (3, "SMA", "State Medical Assistance", "medicaid", 365, 90),
    (4, "MCA", "Meridian Care Advantage", "medicare_advantage", 365, 120),
    (5, "CBS", "Cascade BlueShield", "commercial", 120, 180),
]
# cpt, description, chargemaster price, base allowed 2024
CPTS = [
    ("99203", "Office visit, new patient, low MDM", 210.00, 112.40),
    ("99204", "Office visit, new patient, moderate MDM", 320.00, 168.90),
    ("99213", "Office visit, established, low MDM", 165.00, 91.75),
    ("99214", "Office visit, established, moderate MDM", 240.00, 129.30),
    ("99215", "Office visit, established, high MDM", 330.00, 181.20),
    ("99396", "Preventive visit, established, 40-64", 285.00, 143.60),
    ("G0439", "Annual wellness visit, subsequent", 215.00, 133.10),
    ("36415", "Routine venipuncture", 22.00, 3.10),
    ("80053", "Comprehensive metabolic panel", 68.00, 10.60),
    ("85025", "Complete blood count with differential", 42.00, 7.80),
    ("81002", "Urinalysis, non-automated, without microscopy", 24.00, 3.50),
    ("87880", "Strep A antigen, rapid", 45.00, 16.20),
    ("93000", "Electrocardiogram, complete", 95.00, 17.40),
    ("71046", "Chest X-ray, 2 views", 145.00, 31.90),
    ("20610", "Arthrocentesis, major joint", 260.00, 64.80),
    ("11102", "Tangential biopsy of skin, single lesion", 225.00, 96.40),
    ("17110", "Destruction of benign lesions, up to 14", 190.00, 112.30),
    ("12001", "Simple repair of superficial wound, 2.5 cm or less", 310.00, 98.70),
    ("69210", "Removal of impacted cerumen", 110.00, 52.60),
    ("96372", "Therapeutic injection, SC/IM", 55.00, 14.90),
    ("90471", "Immunization administration", 38.00, 18.10),
    ("97110", "Therapeutic exercise, each 15 minutes", 85.00, 29.40),
    ("97140", "Manual therapy, each 15 minutes", 80.00, 27.10),
    ("29125", "Application of short arm splint", 175.00, 48.20),
    ("99406", "Smoking cessation counseling, 3-10 minutes", 40.00, 14.60),
]
PAYER_FACTOR = {1: 1.18, 2: 1.06, 3: 0.74, 4: 1.00, 5: 1.12}
FACTOR_2025 = {1: 1.031, 2: 1.025, 3: 1.000, 4: 0.972, 5: 1.040}
SPECIALTIES = [("Family Medicine", ["99203", "99213", "99214", "99396", "36415", "80053", "85025", "81002", "90471", "96372", "99406"]),
               ("Internal Medicine", ["99204", "99214", "99215", "G0439", "36415", "80053", "93000", "85025"]),
               ("Orthopedics", ["99203", "99214", "20610", "29125", "71046", "96372"]),
               ("Dermatology", ["99203", "99213", "11102", "17110"]),
               ("Urgent Care", ["99213", "99214", "87880", "12001", "69210", "71046", "96372"]),
               ("Physical Therapy", ["97110", "97140"])]
PROV_NAMES = ["Dr. Amelia Rourke", "Dr. Sunil Varma", "Dr. Hanne Kristoffersen", "Dr. Marcus Odum", "Dr. Keiko Arai",
              "Dr. Leandro Fuentes", "Dr. Priscilla Okoye", "Dr. Gareth Llewellyn", "Tessa Marlowe, DPT",
              "Ibrahim Sesay, PA-C", "Dr. Noor Al-Rashid", "Carmen Villalobos, NP"]
FIRST = ["Alma", "Bernard", "Celeste", "Dwayne", "Edith", "Florian", "Gloria", "Horace", "Ivy", "Jerome", "Kirsten",
         "Lamar", "Maude", "Nestor", "Odalys", "Percy", "Queenie", "Rupert", "Sylvie", "Thaddeus", "Uriel", "Verna",
         "Winston", "Xiomara", "Yusuf", "Zelda", "Anika", "Bartosz", "Consuelo", "Dmitri", "Eun-ji", "Fergus",
         "Gulnara", "Hiroko", "Isidro", "Jovana", "Kwabena", "Lucinda", "Mehmet", "Nanami"]
LAST = ["Abbott", "Bellweather", "Cardenas", "Drummond", "Ellison", "Fonseca", "Grimaldi", "Hargrove", "Ilunga",
        "Jaramillo", "Kettering", "Lachance", "Maddox", "Nakagawa", "Oduya", "Pruitt", "Quaresma", "Radcliffe",
        "Stavros", "Thibodeaux", "Ueda", "Vasquez", "Whitaker", "Xiong", "Yardley", "Zamora", "Achterberg",
        "Brannigan", "Cisneros", "Dunleavy"]
POS = ["11 office", "11 office", "11 office", "20 urgent care", "22 outpatient hospital"]
DENIAL_TEXT = {"CO-16": "Claim lacks information or has submission/billing errors",
               "CO-45": "Charge exceeds fee schedule/maximum allowable",
               "CO-97": "Benefit included in the payment for another service",
               "CO-29": "Time limit for filing has expired",
               "CO-50": "Not deemed a medical necessity by the payer",
               "PR-204": "Service not covered under the patient's current benefit plan"}

BASE_SCENARIOS = ["co45_2024", "co45_2025", "co16_ok", "co16_late", "co16_exact", "co97_mod", "co97_mod25", "co29",
                  "co50_ok", "co50_late", "pr204_comm", "pr204_mcd", "small", "small_25"]
EXTRA_POOL = ["co45_2024", "co45_2025", "co45_2025", "co45_late", "co16_ok", "co16_ok", "co16_late", "co97_mod",
              "co97_nomod", "co97_mod25", "co29", "co50_ok", "co50_late", "pr204_comm", "pr204_mcd", "small"]


def allowed(cpt: str, payer_id: int, year: int) -> float:
    base = next(c[3] for c in CPTS if c[0] == cpt)
    v = round(base * PAYER_FACTOR[payer_id], 2)
    return round(v * FACTOR_2025[payer_id], 2) if year == 2025 else v


def _date(d: dt.date) -> str:
    return d.isoformat()


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
    for pid, code, name, kind, _c, _a in PAYERS:
        con.execute("insert into payers values (?,?,?,?,?)",
                    (pid, code, name, kind, f"PO Box {rng.randint(1000, 99999)}, {rng.choice(['Portland, OR', 'Boise, ID', 'Olympia, WA', 'Salem, OR'])}"))
    providers = []
    for i, name in enumerate(PROV_NAMES, start=1):
        spec = SPECIALTIES[(i - 1) % len(SPECIALTIES)]
        providers.append((i, spec))
        con.execute("insert into providers values (?,?,?,?)", (i, f"1{rng.randint(100000000, 999999999)}", name, spec[0]))

    n_patients = scale.n_rows(120)
    patients = []
    used = set()
    for pid in range(1, n_patients + 1):
        while True:
            fn, ln = rng.choice(FIRST), rng.choice(LAST)
            if (fn, ln) not in used or len(used) > len(FIRST) * len(LAST) - 5:
                used.add((fn, ln))
                break
        payer = rng.choice([1, 1, 2, 2, 3, 4, 5, 5])
        patients.append((pid, payer))
        con.execute("insert into patients values (?,?,?,?,?,?,?)",
                    (pid, f"HL{rng.randint(1000000, 9999999)}", f"{fn} {ln}",
                     _date(dt.date(1940, 1, 1) + dt.timedelta(days=rng.randint(0, 29000))), payer,
                     f"{['NW', 'KS', 'SM', 'MC', 'CB'][payer - 1]}{rng.randint(10000000, 99999999)}",
                     rng.choice(["", "", "Secondary coverage on file.", "Self-pay balance plan.", "Address updated 2025-01."])))
    by_payer: dict[int, list[int]] = {}
    for pid, payer in patients:
        by_payer.setdefault(payer, []).append(pid)

    claims: list[dict] = []

    def new_claim(patient: int, payer: int, service: dt.date, provider: tuple) -> dict:
        c = {"patient": patient, "payer": payer, "service": service, "provider": provider,
             "submitted": service + dt.timedelta(days=rng.randint(2, 12)), "lines": [],
             "pos": rng.choice(POS)}
        claims.append(c)
        return c

    def line(c: dict, cpt: str, units: int = 1, modifier: str = "", status: str = "paid", code: str | None = None,
             billed: float | None = None, denied_on: dt.date | None = None, prior_action: tuple | None = None) -> None:
        price = next(x[2] for x in CPTS if x[0] == cpt)
        billed = round(price * units, 2) if billed is None else billed
        al = allowed(cpt, c["payer"], c["service"].year)
        paid = round(min(billed, al * units) * rng.choice([0.8, 0.8, 1.0]), 2) if status == "paid" else 0.0
        c["lines"].append({"cpt": cpt, "units": units, "mod": modifier, "status": status, "code": code,
                           "billed": billed, "paid": paid, "denied_on": denied_on, "prior": prior_action})

    # noise claims
    n_claims = scale.n_rows(420)
    for _ in range(n_claims):
        pid, payer = rng.choice(patients)
        prov = rng.choice(providers)
        service = WORK_DATE - dt.timedelta(days=rng.randint(5, 330))
        c = new_claim(pid, payer, service, prov)
        r = rng.random()
        for _j in range(rng.choice([1, 1, 2, 2, 3, 4])):
            cpt = rng.choice(prov[1][1])
            units = rng.randint(2, 4) if cpt in ("97110", "97140") else 1
            if (WORK_DATE - service).days < 25 and r < 0.5:
                line(c, cpt, units, status="pending")
            elif r < 0.06:
                code = rng.choice(list(DENIAL_TEXT))
                act = rng.choice([("resubmitted", None), ("written_off", "bundled"), ("written_off", "timely_filing"),
                                  ("appeal", None), ("patient_responsibility", None)])
                line(c, cpt, units, status=act[0], code=code,
                     denied_on=min(WORK_DATE - dt.timedelta(days=3), service + dt.timedelta(days=rng.randint(18, 40))),
                     prior_action=act)
            else:
                line(c, cpt, units)

    # the denied lines to work
    n_denied = scale.n_rows(len(BASE_SCENARIOS))
    scenarios = list(BASE_SCENARIOS)
    while len(scenarios) < n_denied:
        scenarios.append(rng.choice(EXTRA_POOL))
    for sc in scenarios:
        _denied_line(rng, sc, by_payer, providers, new_claim, line)

    # insert claims in service-date order with shuffled ties
    rng.shuffle(claims)
    claims.sort(key=lambda c: c["submitted"])
    line_id = 0
    for cid, c in enumerate(claims, start=1):
        statuses = {ln["status"] for ln in c["lines"]}
        if "denied" in statuses:
            status = "denied" if statuses == {"denied"} else "partially_denied"
        elif statuses == {"pending"}:
            status = "pending"
        elif statuses & {"resubmitted", "appeal"}:
            status = "in_rework"
        else:
            status = "closed"
        con.execute("insert into claims values (?,?,?,?,?,?,?,?,?,?)",
                    (cid, f"HLC-{c['submitted'].year}-{100000 + cid * 7 + rng.randint(0, 6)}", c["patient"],
                     c["provider"][0], c["payer"], _date(c["service"]), _date(c["submitted"]), c["pos"], status,
                     round(sum(ln["billed"] for ln in c["lines"]), 2)))
        for no, ln in enumerate(c["lines"], start=1):
            line_id += 1
            prior = ln["prior"]
            con.execute("insert into claim_lines values (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        (line_id, cid, no, ln["cpt"], ln["mod"], ln["units"], ln["billed"], ln["status"], ln["code"],
                         DENIAL_TEXT.get(ln["code"]) if ln["code"] else None,
                         _date(ln["denied_on"]) if ln["denied_on"] else None, ln["paid"],
                         (ln["billed"] if prior and prior[0] == "resubmitted" else None),
                         prior[1] if prior else None,
                         "Worked by R. Castellano" if prior else None))
    con.commit()
    con.close()
    _write_files(ws, scale, rng)


def _denied_line(rng, sc, by_payer, providers, new_claim, line) -> None:
    limits = {p[0]: (p[4], p[5]) for p in PAYERS}
    commercial = [1, 2, 5]

    def pick_patient(payer: int) -> int:
        return rng.choice(by_payer[payer])

    def in_window(payer: int, lo_days: int = 25, year: int | None = None) -> dt.date:
        lim = limits[payer][0]
        for _ in range(1000):
            d = WORK_DATE - dt.timedelta(days=rng.randint(lo_days, lim))
            if year is None or d.year == year:
                return d
        raise RuntimeError("no date")

    def denied_on(service: dt.date, days_ago: int | None = None) -> dt.date:
        if days_ago is not None:
            return WORK_DATE - dt.timedelta(days=days_ago)
        return min(WORK_DATE - dt.timedelta(days=4), service + dt.timedelta(days=rng.randint(18, 35)))

    prov = rng.choice(providers[:5])
    cpt_pool = [c for c in prov[1][1] if c not in ("36415", "81002")]
    code, mod, billed = None, "", None
    payer = rng.choice([1, 2, 3, 4, 5])
    if sc == "co45_2024":
        payer = rng.choice([1, 4, 5])
        service, code = in_window(payer, 110, 2024), "CO-45"
    elif sc == "co45_2025":
        service, code = in_window(payer, 25, 2025), "CO-45"
    elif sc == "co45_late":
        payer = rng.choice([2, 5])
        service, code = WORK_DATE - dt.timedelta(days=limits[payer][0] + rng.randint(1, 40)), "CO-45"
    elif sc == "co16_ok":
        service, code = in_window(payer), "CO-16"
    elif sc == "co16_late":
        payer = rng.choice([2, 5, 1])
        service, code = WORK_DATE - dt.timedelta(days=limits[payer][0] + rng.randint(1, 25)), "CO-16"
    elif sc == "co16_exact":
        payer = rng.choice([2, 5])
        service, code = WORK_DATE - dt.timedelta(days=limits[payer][0]), "CO-16"
    elif sc in ("co97_mod", "co97_nomod", "co97_mod25"):
        service, code = in_window(payer), "CO-97"
        mod = {"co97_mod": rng.choice(["59", "XS", "XU"]), "co97_nomod": "", "co97_mod25": "25"}[sc]
    elif sc == "co29":
        service, code = WORK_DATE - dt.timedelta(days=rng.randint(200, 330)), "CO-29"
    elif sc == "co50_ok":
        service, code = in_window(payer, 40), "CO-50"
    elif sc == "co50_late":
        payer = rng.choice([2, 3])
        service, code = WORK_DATE - dt.timedelta(days=rng.randint(limits[payer][1] + 30, limits[payer][1] + 90)), "CO-50"
    elif sc == "pr204_comm":
        payer = rng.choice(commercial)
        service, code = in_window(payer), "PR-204"
    elif sc == "pr204_mcd":
        payer = 3
        service, code = in_window(payer), "PR-204"
    elif sc == "small":
        service, code = in_window(payer), rng.choice(["CO-45", "CO-16", "CO-97"])
        cpt_pool = ["36415", "81002"]
    elif sc == "small_25":
        payer = rng.choice([1, 4, 5])
        service, code = in_window(payer), "CO-16"
        cpt_pool, billed = ["99406"], 25.00
    else:
        raise ValueError(sc)
    if sc == "co50_late":
        den = WORK_DATE - dt.timedelta(days=limits[payer][1] + rng.randint(1, 20))
    elif sc == "co50_ok":
        den = WORK_DATE - dt.timedelta(days=rng.randint(5, min(limits[payer][1], (WORK_DATE - service).days - 10)))
    else:
        den = denied_on(service)
    c = new_claim(pick_patient(payer), payer, service, prov)
    cpt = rng.choice(cpt_pool)
    units = rng.randint(2, 4) if cpt in ("97110", "97140") else 1
    if sc == "co45_2024" and rng.random() < 0.5:
        cpt, units = rng.choice(["97110", "97140"]), rng.randint(2, 3)
    # sometimes a paid E/M line on the same claim
    if rng.random() < 0.5 and sc != "small_25":
        line(c, rng.choice(["99213", "99214"]), 1, modifier="25" if code == "CO-97" else "")
    line(c, cpt, units, modifier=mod, status="denied", code=code, billed=billed, denied_on=den)
    if sc == "co97_mod" and rng.random() < 0.5:
        line(c, rng.choice(["20610", "96372"]), 1, status="denied", code="CO-97", denied_on=den)


SCHEMA = """
create table payers (payer_id integer primary key, code text, name text, plan_type text, claims_address text);
create table providers (provider_id integer primary key, npi text, name text, specialty text);
create table patients (patient_id integer primary key, mrn text, name text, dob text, payer_id integer references payers,
                       member_id text, account_note text);
create table claims (claim_id integer primary key, claim_no text, patient_id integer references patients,
                     provider_id integer references providers, payer_id integer references payers, service_date text,
                     submitted_on text, place_of_service text, status text, total_billed real);
create table claim_lines (line_id integer primary key, claim_id integer references claims, line_no integer, cpt text,
                          modifier text, units integer, billed_amount real, status text, denial_code text,
                          denial_reason text, denied_on text, paid_amount real, action_amount real, action_reason text, action_note text);
"""

PLAYBOOK = """# Denial Management Playbook — 2025

Harborlight Medical Group · Revenue Cycle · effective 2025-01-01 (replaces the 2023 playbook)

**Work date for the current queue: 2025-04-15.** All day counts below are calendar days up to and including
the work date (work date minus the reference date).

Scope: every claim line whose status is `denied`. Lines already worked (resubmitted, written off, in
appeal or transferred to the patient) are not touched again.

## Step 1 — Small balances
A denied line whose billed amount is **under $25.00** is written off with reason `small_balance`,
whatever the denial code. (A line billed exactly $25.00 is worked normally.)

## Step 2 — Action by denial code (CARC)
| Code | Meaning | Action |
|---|---|---|
| CO-16 | Missing / incorrect information | Correct and **resubmit at the billed amount** |
| CO-45 | Charge exceeds fee schedule | **Resubmit at the contracted amount**: the payer's allowed amount for the CPT in the fee schedule of the **service-date year**, times the units |
| CO-97 | Bundled into another service | If the line carries a distinct-service modifier (**59, XE, XP, XS or XU**) **resubmit at the billed amount**; otherwise write off with reason `bundled`. Modifier 25 is an E/M modifier, not a distinct-service modifier. |
| CO-29 | Filing limit expired | Write off with reason `timely_filing` |
| CO-50 | Medical necessity | **Route to appeals** when the appeal window is still open; otherwise write off with reason `appeal_window_expired` |
| PR-204 | Not covered by the plan | **Transfer to patient responsibility** — except for Medicaid plans (plan type `medicaid`), whose members may not be billed: write off with reason `non_covered` |

## Step 3 — Filing windows
* **Corrected-claim window.** A line may only be resubmitted when the number of days from the service
  date to the work date is **at most** the payer's corrected-claim limit. Otherwise write it off with reason
  `timely_filing` instead of resubmitting.
* **Appeal window.** An appeal is open when the number of days from the denial date (`denied_on`) to the
  work date is at most the payer's appeal limit.

Limits per payer are in `revenue_cycle/payer_filing_limits.csv`; contracted rates are in
`revenue_cycle/fee_schedules/` (one CSV per payer, allowed amounts per CPT for 2024 and 2025).

## Reporting
At the end of the session report the total dollar amount resubmitted.
"""

OLD_PLAYBOOK = """# Denial Management Playbook — 2023

> **Superseded** by the 2025 playbook on 2025-01-01. Kept for reference.

- Small balances under $10.00 are written off.
- CO-45: resubmit at the billed amount with a note to the payer.
- CO-97: always write off as bundled.
- PR-204: transfer every line to patient responsibility.
- Corrected claims may be sent up to 365 days after the date of service for all payers.
"""

BULLETIN_ITEMS = [
    "{payer} will move to a new clearinghouse connection on {d}; expect a 48-hour delay in 277CA acknowledgements.",
    "Reminder: modifier 25 must be supported by documentation of a significant, separately identifiable E/M service.",
    "{payer} updated its prior authorization list for advanced imaging effective {d}.",
    "Coding tip: report 97110 per 15-minute unit using the 8-minute rule.",
    "Month-end close: all payment postings must be completed by {d}.",
    "{payer} reported a system issue that denied some claims with CO-16 in error; resubmissions are being accepted.",
    "The front desk should verify coverage at every visit; eligibility errors cause most CO-16 denials.",
    "Audit finding: several CO-97 lines were resubmitted without a supporting modifier. Follow the playbook.",
    "Staffing: {name} covers the denials queue during the week of {d}.",
    "Patient statements go out on the 5th business day of each month.",
    "Clean-claim rate for last month was {n}%.",
]
FIRST_STAFF = ["Rosa Castellano", "Evan Pike", "Mina Okafor", "Jules Bertrand", "Sana Qureshi", "Tomas Ek"]


def _write_files(ws: Path, scale: Scale, rng: random.Random) -> None:
    def put(rel: str, text: str) -> None:
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    put("revenue_cycle/denial_playbook_2025.md", PLAYBOOK)
    put("revenue_cycle/archive/denial_playbook_2023.md", OLD_PLAYBOOK)
    lines = ["payer_code,payer_name,corrected_claim_limit_days,appeal_limit_days,notes"]
    notes = {"NWHP": "limits per provider manual section 7.2", "KSM": "corrected claims: frequency code 7 required",
             "SMA": "appeals go to the state fair-hearing unit", "MCA": "appeals = reconsideration requests",
             "CBS": ""}
    for _pid, code, name, _k, c, a in PAYERS:
        lines.append(f"{code},{name},{c},{a},{notes[code]}")
    put("revenue_cycle/payer_filing_limits.csv", "\n".join(lines) + "\n")
    for pid, code, _name, _k, _c, _a in PAYERS:
        rows = ["cpt,description,allowed_2024,allowed_2025"]
        for cpt, desc, _price, _base in CPTS:
            rows.append(f'{cpt},"{desc}",{allowed(cpt, pid, 2024):.2f},{allowed(cpt, pid, 2025):.2f}')
        put(f"revenue_cycle/fee_schedules/{code.lower()}_fee_schedule.csv", "\n".join(rows) + "\n")

    def fill(s: str) -> str:
        return s.format(payer=rng.choice(PAYERS)[2], d=(WORK_DATE + dt.timedelta(days=rng.randint(-90, 45))).isoformat(),
                        name=rng.choice(FIRST_STAFF), n=rng.randint(88, 97))

    for i in range(scale.n_files(3)):
        d = (WORK_DATE - dt.timedelta(days=7 * i + rng.randint(0, 6))).isoformat()
        body = "\n".join(f"- {fill(s)}" for s in rng.sample(BULLETIN_ITEMS, rng.randint(3, 5)))
        put(f"revenue_cycle/bulletins/rcm_bulletin_{d}.md", f"# Revenue cycle bulletin — week of {d}\n\n{body}\n")
    for i in range(scale.n_files(1)):
        month = (dt.date(2024, 4, 1) + dt.timedelta(days=31 * i)).strftime("%Y-%m")
        rows = ["payer_code,claims_submitted,first_pass_paid_pct,denial_rate_pct,top_denial"]
        for _pid, code, *_rest in PAYERS:
            rows.append(f"{code},{rng.randint(150, 900)},{rng.uniform(80, 96):.1f},{rng.uniform(3, 14):.1f},"
                        f"{rng.choice(list(DENIAL_TEXT))}")
        put(f"reports/denial_dashboard_{month}.csv", "\n".join(rows) + "\n")
