"""Residential property manager: buildings, units, leases, rent payments, renewal offers, non-renewal notices.

Pricing rules, rent caps, the current market survey and the renovation memo exist only in workspace files.
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

from envs.taskkit import Scale

# id, name, street, city, jurisdiction, year_built, manager, unit weight
BUILDINGS = [
    ("HB-01", "Alder Court", "2210 SE Alder St", "Portland", "OR-PDX", 1968, "Dana Whitlock", 10),
    ("HB-02", "Belmont Lofts", "3345 SE Belmont St", "Portland", "OR-PDX", 2014, "Dana Whitlock", 8),
    ("HB-03", "Cascadia Terrace", "1120 NE 65th St", "Seattle", "WA-SEA", 1988, "Marcus Oyelaran", 10),
    ("HB-04", "Denny Park Flats", "815 Denny Way", "Seattle", "WA-SEA", 2009, "Marcus Oyelaran", 9),
    ("HB-05", "Eastlake Commons", "4402 E 34th St", "Tacoma", "WA-TAC", 1975, "Priya Venkataraman", 7),
    ("HB-06", "Fremont Row", "3120 Fremont Ave", "Oakland", "CA-OAK", 1978, "Luis Carrasco", 8),
    ("HB-07", "Grand Lake Residences", "555 Grand Ave", "Oakland", "CA-OAK", 1996, "Luis Carrasco", 9),
    ("HB-08", "Harbor View", "1780 The Alameda", "San Jose", "CA-SJC", 1972, "Helen Zhou", 8),
    ("HB-09", "Iron Horse Apartments", "240 N 1st St", "San Jose", "CA-SJC", 2003, "Helen Zhou", 9),
    ("HB-10", "Juniper House", "1414 NW Irving St", "Portland", "OR-PDX", 1994, "Dana Whitlock", 7),
    ("HB-11", "Kinnear Place", "99 W Kinnear Pl", "Seattle", "WA-SEA", 1961, "Marcus Oyelaran", 6),
    ("HB-12", "Lakewood Gardens", "8810 Gravelly Lake Dr SW", "Tacoma", "WA-TAC", 2017, "Priya Venkataraman", 7),
]
CITY_BASE = {"Portland": (1350, 1650, 2150, 2750), "Seattle": (1700, 2150, 2900, 3700),
             "Tacoma": (1200, 1450, 1850, 2350), "Oakland": (1900, 2400, 3100, 3900),
             "San Jose": (2100, 2650, 3350, 4200)}
TYPES = ("studio", "1BR", "2BR", "3BR")
SQFT = {"studio": (420, 560), "1BR": (600, 780), "2BR": (850, 1100), "3BR": (1150, 1450)}

FIRST = ["Avery", "Benedikt", "Carmen", "Desmond", "Esperanza", "Felix", "Gwendolyn", "Hassan", "Isolde", "Jamal",
         "Katarina", "Leandro", "Mirela", "Nathaniel", "Oluwadamilare", "Penelope", "Quincy", "Rosario", "Sebastian",
         "Thuy", "Ulises", "Viviane", "Wendell", "Xiadani", "Yannick", "Zainab", "Alejandra", "Bartholomew", "Cosima",
         "Dariusz", "Eun-ji", "Fergus", "Giulia", "Hyun-woo", "Ignacio", "Jolene", "Kwame", "Lorena", "Mikkel"]
LAST = ["Abernethy", "Bautista", "Cheng", "Donnelly", "Espinoza", "Forsythe", "Gutiérrez", "Halloran", "Ibarra",
        "Jablonski", "Kaur", "Lindholm", "Mbeki", "Nakashima", "Okonjo", "Pacheco", "Quintanilla", "Rosenthal",
        "Szabo", "Tran", "Underwood", "Valenzuela", "Wojcik", "Yilmaz", "Zamora", "Agarwal", "Brightwater",
        "Castellano", "Duarte", "Ellingson", "Fairbanks", "Greenleaf", "Hollingsworth", "Iwasaki", "Jovanovic"]
OFFER_NOTES = ["", "", "Tenant asked about 18-month term", "Standard renewal", "Sent with parking addendum",
               "Tenant requested new carpet", "Offer emailed and posted", "Follow-up call scheduled"]


def _clear(root: Path) -> None:
    db = root / "db.sqlite"
    if db.exists():
        db.unlink()
    ws = root / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    for p in sorted(ws.iterdir()):
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def _r5(x: float) -> int:
    return int(round(x / 5.0)) * 5


def _months(start: date, end: date):
    d = date(start.year, start.month, 1)
    while d <= end:
        yield d
        d = date(d.year + (d.month == 12), d.month % 12 + 1, 1)


class _Gen:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.units: list[dict] = []
        self.leases: list[dict] = []
        self.payments: list[tuple] = []
        self.offers: list[tuple] = []
        self.notices: list[tuple] = []
        self.unit_nos: dict[str, set] = {}
        self.names: set[str] = set()

    def unit(self, bld: tuple, utype: str | None = None) -> dict:
        rng = self.rng
        utype = utype or rng.choices(TYPES, weights=(2, 5, 4, 1))[0]
        used = self.unit_nos.setdefault(bld[0], set())
        while True:
            floor = rng.randint(1, 6)
            no = f"{floor}{rng.randint(1, 24):02d}"
            if no not in used:
                used.add(no)
                break
        lo, hi = SQFT[utype]
        u = {"unit_id": None, "building_id": bld[0], "unit_no": no, "unit_type": utype,
             "sqft": rng.randint(lo, hi) // 5 * 5, "floor": floor, "tie": rng.random()}
        self.units.append(u)
        return u

    def tenant(self) -> tuple[str, str]:
        rng = self.rng
        while True:
            n = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
            if n not in self.names:
                self.names.add(n)
                break
        slug = "".join(c for c in n.lower().replace(" ", ".") if c.isascii())
        return n, f"{slug}@{rng.choice(['gmail.com', 'outlook.com', 'yahoo.com', 'icloud.com', 'hey.com'])}"

    def lease(self, unit: dict, start: date, end: date, rent: int, status: str, profile: str | None = None,
              late_plan: dict | None = None) -> dict:
        rng = self.rng
        name, email = self.tenant()
        lease = {"unit": unit, "tenant_name": name, "tenant_email": email, "start": start, "end": end,
                 "rent": rent, "deposit": _r5(rent * rng.choice([1.0, 1.0, 1.5])), "status": status,
                 "profile": profile or rng.choices(["good", "ok", "bad"], weights=(68, 20, 12))[0],
                 "late_plan": late_plan, "tie": rng.random(), "lease_id": None}
        self.leases.append(lease)
        return lease


def _pay_history(rng: random.Random, lease: dict) -> list[tuple]:
    """(due, paid or None, amount_paid, method) for due dates 2023-11-01 .. 2025-01-01."""
    start = max(lease["start"], date(2023, 11, 1))
    dues = list(_months(date(start.year, start.month, 1), date(2025, 1, 1)))
    if lease["start"].day > 1 and dues and dues[0] < lease["start"]:
        dues = dues[1:]
    plan = lease["late_plan"]
    late_idx: dict[int, int | None] = {}
    if plan is not None:
        for due, delay in plan.items():
            if due in dues:
                late_idx[dues.index(due)] = delay
    else:
        prof = lease["profile"]
        k = {"good": 0, "ok": rng.randint(1, 2), "bad": rng.randint(3, 6)}[prof]
        for i in rng.sample(range(len(dues)), min(k, len(dues))):
            late_idx[i] = None if (prof == "bad" and rng.random() < 0.15) else rng.randint(6, 25)
    method = rng.choice(["ACH", "ACH", "portal-card", "check", "money order"])
    out = []
    for i, due in enumerate(dues):
        if i in late_idx:
            delay = late_idx[i]
        elif plan is None and rng.random() < 0.15:
            delay = rng.randint(1, 5)  # inside the grace period
        elif plan is None and due == date(2025, 1, 1) and rng.random() < 0.06:
            delay = None
        else:
            delay = rng.randint(-4, 0)
        if delay is None:
            out.append((due, None, 0.0, method))
        else:
            out.append((due, due + timedelta(days=delay), float(lease["rent"]), method))
    return out


def build(root: Path, scale: Scale, seed: int) -> None:
    rng = random.Random(seed)
    _clear(root)
    g = _Gen(rng)
    bld = {b[0]: b for b in BUILDINGS}

    # market surveys: Q1 2025 is current; older quarters and a forecast are noise
    q1 = {}
    for b in BUILDINGS:
        f = rng.uniform(0.9, 1.15)
        for t, base in zip(TYPES, CITY_BASE[b[3]], strict=True):
            q1[(b[0], t)] = _r5(base * f)
    older = {}
    for qi, q in enumerate(["2024Q4", "2024Q3", "2024Q2", "2024Q1", "2023Q4", "2023Q3", "2023Q2", "2023Q1"]):
        older[q] = {k: _r5(v * (1 - 0.012 * (qi + 1)) * rng.uniform(0.96, 1.0)) for k, v in q1.items()}
    forecast = {k: _r5(v * rng.uniform(1.02, 1.05)) for k, v in q1.items()}

    # ---- fixed leases present at every scale
    def fixed(bid, utype, end, rent_delta, plan, status="active", start=None):
        u = g.unit(bld[bid], utype)
        rent = q1[(bid, utype)] + rent_delta
        start = start or date(end.year - 2, end.month, 1) + timedelta(days=end.day)
        return g.lease(u, start, end, rent, status, "good", plan)

    late4 = {date(2024, 2, 1): 9, date(2024, 5, 1): 12, date(2024, 8, 1): 7, date(2024, 11, 1): 15}
    fixed("HB-01", "2BR", date(2025, 3, 31), -260, late4)  # just cause: offer, capped, no discount
    late3 = {date(2024, 3, 1): 8, date(2024, 7, 1): 11, date(2024, 10, 1): None}
    fixed("HB-05", "1BR", date(2025, 4, 15), -120, late3)  # non-renewal
    grace = {date(2024, 1, 1): 5, date(2024, 4, 1): 3, date(2024, 9, 1): 4, date(2023, 11, 1): 12,
             date(2023, 12, 1): 9, date(2025, 1, 1): None}
    fixed("HB-03", "1BR", date(2025, 3, 14), -180, grace)  # good standing despite grace-period payments
    fixed("HB-07", "2BR", date(2025, 4, 30), -400, {date(2024, 6, 1): 10})  # no cap (built 1996)
    fixed("HB-06", "2BR", date(2025, 3, 1), -380, {date(2024, 6, 1): 10})  # capped (built 1978)
    has_offer = fixed("HB-02", "studio", date(2025, 4, 10), -90, {})
    fixed("HB-11", "1BR", date(2025, 3, 20), -150, {date(2024, 2, 1): 8})  # renovation: 6-month term
    fixed("HB-09", "3BR", date(2025, 4, 4), +85, {})  # market below current rent
    fixed("HB-04", "2BR", date(2025, 5, 1), -200, {})  # just outside the window
    fixed("HB-10", "1BR", date(2025, 3, 31), -140, {}, status="notice_given")  # tenant moving out
    g.offers.append((has_offer, int(q1[("HB-02", "studio")]), 12, "2025-01-08", "sent", "Sent early at tenant's request"))
    owner_move_in = fixed("HB-12", "2BR", date(2025, 3, 25), -100, {})
    g.notices.append((owner_move_in, "OWNER_MOVE_IN", "2024-12-05"))

    # ---- random portfolio
    weights = [b[7] for b in BUILDINGS]
    for _ in range(scale.n_rows(95)):
        b = rng.choices(BUILDINGS, weights=weights)[0]
        u = g.unit(b)
        r = rng.random()
        if r < 0.06:
            continue  # vacant
        start = date(2015, 1, 1) + timedelta(days=rng.randint(0, 3468))
        end = date(2025, start.month, 28 if (start.month == 2 and start.day == 29) else start.day) - timedelta(days=1)
        if end < date(2025, 1, 31):
            end = end + timedelta(days=rng.randint(120, 330))
        rent = _r5(q1[(b[0], u["unit_type"])] * rng.uniform(0.82, 1.04))
        status = "active" if rng.random() < 0.95 else "notice_given"
        lease = g.lease(u, start, end, rent, status)
        if end < date(2025, 3, 1):
            g.offers.append((lease, _r5(rent * 1.04), 12, (end - timedelta(days=rng.randint(60, 80))).isoformat(),
                             rng.choice(["accepted", "accepted", "sent", "declined"]), rng.choice(OFFER_NOTES)))
        elif end <= date(2025, 4, 30) and rng.random() < 0.08:
            g.offers.append((lease, _r5(rent * 1.03), 12, (date(2025, 1, 2) + timedelta(days=rng.randint(0, 10))).isoformat(),
                             "sent", rng.choice(OFFER_NOTES)))
        elif end > date(2025, 4, 30) and end < date(2025, 7, 1) and rng.random() < 0.1:
            g.offers.append((lease, _r5(rent * 1.03), 12, "2025-01-10", "sent", rng.choice(OFFER_NOTES)))
        if status == "active" and end > date(2025, 4, 30) and rng.random() < 0.02:
            g.notices.append((lease, rng.choice(["OWNER_MOVE_IN", "PAYMENT_HISTORY", "SUBSTANTIAL_REHAB"]),
                              "2024-12-1" + str(rng.randint(0, 9))))
    # past tenancies (ended) for history
    for _ in range(scale.n_rows(25)):
        u = rng.choice(g.units)
        end = date(2023, 1, 1) + timedelta(days=rng.randint(0, 600))
        g.lease(u, end - timedelta(days=364 * rng.randint(1, 4)), end,
                _r5(q1[(u["building_id"], u["unit_type"])] * rng.uniform(0.75, 0.92)), "ended")

    # ---- ids and rows
    g.units.sort(key=lambda u: (u["building_id"], u["tie"]))
    for i, u in enumerate(g.units):
        u["unit_id"] = 1001 + i
    g.leases.sort(key=lambda x: x["tie"])
    for i, lease in enumerate(g.leases):
        lease["lease_id"] = 24001 + i
    for lease in g.leases:
        if lease["status"] == "ended":
            continue
        for due, paid, amt, method in _pay_history(rng, lease):
            g.payments.append((lease["lease_id"], due.isoformat(), float(lease["rent"]),
                               paid.isoformat() if paid else None, amt, method if paid else None, rng.random()))
    g.payments.sort(key=lambda p: (p[1], p[6]))

    con = sqlite3.connect(root / "db.sqlite")
    con.executescript("""
        create table buildings(building_id text primary key, name text, street text, city text,
            jurisdiction text, year_built integer, property_manager text);
        create table units(unit_id integer primary key, building_id text, unit_no text, unit_type text,
            sqft integer, floor integer);
        create table leases(lease_id integer primary key, unit_id integer, tenant_name text, tenant_email text,
            start_date text, end_date text, monthly_rent real, deposit real, status text);
        create table payments(payment_id integer primary key, lease_id integer, due_date text, amount_due real,
            paid_date text, amount_paid real, method text);
        create table renewal_offers(offer_id integer primary key autoincrement, lease_id integer,
            proposed_rent real, term_months integer, offer_date text, status text, notes text);
        create table non_renewal_notices(notice_id integer primary key autoincrement, lease_id integer,
            reason_code text, notice_date text);
    """)
    con.executemany("insert into buildings values (?,?,?,?,?,?,?)", [b[:7] for b in BUILDINGS])
    con.executemany("insert into units values (?,?,?,?,?,?)",
                    [(u["unit_id"], u["building_id"], u["unit_no"], u["unit_type"], u["sqft"], u["floor"])
                     for u in g.units])
    con.executemany("insert into leases values (?,?,?,?,?,?,?,?,?)",
                    [(x["lease_id"], x["unit"]["unit_id"], x["tenant_name"], x["tenant_email"], x["start"].isoformat(),
                      x["end"].isoformat(), float(x["rent"]), float(x["deposit"]), x["status"]) for x in g.leases])
    con.executemany("insert into payments(lease_id, due_date, amount_due, paid_date, amount_paid, method)"
                    " values (?,?,?,?,?,?)", [p[:6] for p in g.payments])
    offers = sorted(g.offers, key=lambda o: (o[3], o[0]["lease_id"]))
    con.executemany("insert into renewal_offers(lease_id, proposed_rent, term_months, offer_date, status, notes)"
                    " values (?,?,?,?,?,?)", [(o[0]["lease_id"], float(o[1]), o[2], o[3], o[4], o[5]) for o in offers])
    con.executemany("insert into non_renewal_notices(lease_id, reason_code, notice_date) values (?,?,?)",
                    [(n[0]["lease_id"], n[1], n[2]) for n in g.notices])
    con.commit()
    con.close()
    _files(root / "workspace", scale, rng, q1, older, forecast)


# ----------------------------------------------------------------------------------------------- files

POLICY = """# Lease renewal pricing policy — 2025

Harborline Residential · Revenue Management · approved 2024-12-18

## 1. Which leases
Prepare renewals for leases that
- have status `active` (not `notice_given` or `ended`),
- end between **2025-03-01 and 2025-04-30** (inclusive, by `end_date`), and
- do not already have a renewal offer (any status) or a non-renewal notice on file.

## 2. Payment history
Look at the rent payments **due in calendar year 2024** (due dates 2024-01-01 to 2024-12-31). A payment is
**late** when it was paid more than **5 days** after its due date (the lease's grace period), or not paid at
all. Payments made within the 5-day grace period are on time.

- **3 or more late payments**: do not renew — record a non-renewal notice with reason code `PAYMENT_HISTORY`,
  *unless* the building's jurisdiction has just-cause protection (`compliance/rent_caps.json`). With
  just-cause protection the tenant gets a normal renewal offer (section 3) without the good-standing reduction.
- **No late payments**: the tenant is in *good standing* (section 3, step 3).

## 3. Proposed rent
1. Start from the market rent for the unit's building and unit type in the **Q1 2025 market survey**
   (`market/market_rents_2025Q1.csv`). Older surveys and forecasts must not be used. The raw increase is
   market rent minus current monthly rent; if that is zero or negative, offer the current rent unchanged.
2. If the building's jurisdiction caps increases (`compliance/rent_caps.json`) **and the cap applies to the
   building** (see the year-built condition in the file), the increase may not exceed `cap_pct` percent of
   the current monthly rent.
3. Tenants in good standing get **half** of the increase from step 2.
4. Proposed rent = current rent + increase, rounded to the nearest whole dollar (exact halves round up).

## 4. Term
Renewals are for **12 months**, except where a capital-projects memo in `memos/` restricts terms for a
building.

## 5. Reporting
Report the total increase in monthly rent across all offers created in this run (proposed minus current,
summed).
"""

CAPS = {
    "updated": "2024-12-20",
    "source": "Harborline Legal — statutory and municipal limits for 2025 renewals",
    "jurisdictions": {
        "OR-PDX": {"cap_pct": 9.5, "cap_applies_if_year_built_before": 2011, "just_cause": True,
                   "note": "ORS 90.323; buildings first occupied less than 15 years ago are exempt"},
        "WA-SEA": {"cap_pct": None, "cap_applies_if_year_built_before": None, "just_cause": False,
                   "note": "No cap for 2025 renewals; 180-day notice for increases over 3%"},
        "WA-TAC": {"cap_pct": None, "cap_applies_if_year_built_before": None, "just_cause": False,
                   "note": "Tacoma landlord-tenant code: 120-day notice for increases"},
        "CA-OAK": {"cap_pct": 3.0, "cap_applies_if_year_built_before": 1983, "just_cause": True,
                   "note": "Oakland RAP covers pre-1983 buildings; newer buildings uncapped"},
        "CA-SJC": {"cap_pct": 5.0, "cap_applies_if_year_built_before": 1979, "just_cause": True,
                   "note": "San Jose ARO covers buildings built before 1979"},
    },
}

CAPITAL_MEMO = """# Capital projects 2025 — leasing impacts

From: Asset Management · 2025-01-06

- **HB-11 Kinnear Place**: seismic retrofit and envelope replacement starting September 2025. Until further
  notice, renewals at Kinnear Place are offered for **6-month terms only**.
- HB-04 Denny Park Flats: elevator modernisation (Q2). No leasing impact.
- HB-08 Harbor View: roof replacement planned for 2026; no impact on 2025 renewals.
"""

MEMO_NOISE = [
    ("memos/2024-12-02_holiday_office_hours.md", "# Holiday office hours\n\nLeasing offices close at noon on "
     "Dec 24 and Dec 31. Emergency maintenance line stays open.\n"),
    ("memos/2024-11-14_utility_billing_change.md", "# Utility billing change\n\nFrom February, water/sewer is "
     "billed through Conservice for HB-03, HB-04 and HB-11. No change to base rent.\n"),
    ("memos/2024-10-21_capital_projects_2024.md", "# Capital projects 2024 (closed)\n\nHB-06 Fremont Row "
     "boiler replacement completed. Renewals at HB-06 returned to 12-month terms from November 2024.\n"),
    ("memos/2025-01-09_parking_rates.md", "# Parking rates\n\nGarage parking increases to $175/month at HB-07 "
     "and HB-09 from April. Parking is a separate addendum and not part of rent.\n"),
    ("memos/2024-09-30_pet_rent.md", "# Pet rent\n\nPet rent is $45/month per pet; it is billed separately and "
     "is not part of the renewal calculation.\n"),
    ("memos/2025-01-13_staffing.md", "# Staffing\n\nHelen Zhou covers Oakland properties during Luis Carrasco's "
     "leave (Feb 3 - Feb 21).\n"),
    ("memos/2024-08-15_smoke_detectors.md", "# Smoke detector audit\n\nAnnual audit completed; 14 units need "
     "battery replacement.\n"),
    ("memos/2024-07-01_concessions.md", "# Move-in concessions (expired)\n\nOne month free on 13-month leases at "
     "HB-12 until 2024-09-30. Not applicable to renewals.\n"),
    ("memos/2024-06-12_renewal_terms_pilot.md", "# Renewal terms pilot (ended)\n\nThe 18-month renewal pilot at "
     "HB-02 ended on 2024-12-31. Standard terms apply from 2025.\n"),
]

POLICY_NOISE = [
    ("policies/renewal_pricing_policy_2024.md", "# Lease renewal pricing policy — 2024 (superseded)\n\nFor 2024 "
     "renewals the increase was the lesser of 7% and the market gap, with a 3-day grace period. Replaced by the "
     "2025 policy.\n"),
    ("policies/security_deposits.md", "# Security deposits\n\nDeposits are held in trust and returned within 21 "
     "days (WA) / 31 days (OR) / 21 days (CA) of move-out, less itemised deductions.\n"),
    ("policies/maintenance_response.md", "# Maintenance response times\n\nEmergency: 4 hours. Urgent: 48 hours. "
     "Routine: 7 days.\n"),
    ("policies/late_fees.md", "# Late fees\n\nA late fee of 5% of monthly rent is charged on the 6th day after "
     "the due date. Late fees are billed separately from rent.\n"),
    ("policies/fair_housing.md", "# Fair housing\n\nRenewal decisions never consider protected characteristics. "
     "Document every non-renewal with its reason code.\n"),
    ("policies/subletting.md", "# Subletting\n\nSubletting requires written consent; short-term rentals are "
     "prohibited in all buildings.\n"),
    ("policies/move_out_inspections.md", "# Move-out inspections\n\nSchedule within 3 days of the move-out date; "
     "photos are mandatory.\n"),
    ("policies/communication_standards.md", "# Communication standards\n\nRenewal offers go out by email and "
     "are posted to the tenant portal the same day.\n"),
    ("policies/renters_insurance.md", "# Renters insurance\n\nRequired at all buildings; minimum liability "
     "$100,000.\n"),
]

COMPLIANCE_NOISE = [
    ("compliance/rent_caps_2024.json", {"updated": "2023-12-15", "jurisdictions": {
        "OR-PDX": {"cap_pct": 14.6, "cap_applies_if_year_built_before": 2009, "just_cause": True},
        "CA-OAK": {"cap_pct": 3.0, "cap_applies_if_year_built_before": 1983, "just_cause": True}},
        "note": "SUPERSEDED for 2025 renewals"}),
    ("compliance/notice_periods.csv", [("jurisdiction", "increase_notice_days", "non_renewal_notice_days"),
                                      ("OR-PDX", "90", "90"), ("WA-SEA", "180", "90"), ("WA-TAC", "120", "60"),
                                      ("CA-OAK", "30", "60"), ("CA-SJC", "30", "60")]),
    ("compliance/habitability_checklist.md", "# Habitability checklist\n\nHeat, hot water, weatherproofing, "
     "smoke/CO detectors, pest control, safe wiring.\n"),
    ("compliance/registration_status.csv", [("building_id", "registered_with", "registration_no", "expires"),
                                           ("HB-06", "Oakland RAP", "RAP-20931", "2025-06-30"),
                                           ("HB-08", "San Jose ARO", "ARO-7730", "2025-12-31"),
                                           ("HB-01", "Portland RRIO", "RRIO-11842", "2025-03-31")]),
    ("compliance/relocation_assistance.md", "# Relocation assistance\n\nPortland requires relocation assistance "
     "for no-cause terminations and for increases of 10% or more. Our capped increases stay below that.\n"),
    ("compliance/lead_paint_disclosures.md", "# Lead paint\n\nPre-1978 buildings need the EPA disclosure "
     "with every new lease and renewal.\n"),
    ("compliance/source_of_income.md", "# Source of income\n\nHousing vouchers are treated as income in all "
     "jurisdictions we operate in.\n"),
    ("compliance/ccr_checklist.md", "# Annual compliance calendar\n\nQ1: rent registry filings; Q2: fire "
     "inspections; Q3: elevator certificates; Q4: cap review.\n"),
]


def _csv(rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


def _write(ws: Path, rel: str, text: str) -> None:
    p = ws / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def _market(rows: dict, label: str, rng: random.Random) -> str:
    out = [("building_id", "unit_type", "market_rent", "comps", "survey")]
    for (bid, t), v in sorted(rows.items()):
        out.append((bid, t, str(v), str(rng.randint(4, 19)), label))
    return _csv(out)


def _files(ws: Path, scale: Scale, rng: random.Random, q1: dict, older: dict, forecast: dict) -> None:
    n = scale.n_files(3)
    _write(ws, "policies/renewal_pricing_policy_2025.md", POLICY)
    for rel, text in POLICY_NOISE[: n - 1]:
        _write(ws, rel, text)
    n = scale.n_files(3)
    _write(ws, "memos/2025-01-06_capital_projects_2025.md", CAPITAL_MEMO)
    for rel, text in MEMO_NOISE[: n - 1]:
        _write(ws, rel, text)
    n = scale.n_files(3)
    _write(ws, "market/market_rents_2025Q1.csv", _market(q1, "2025Q1 (Jan 2025 field survey)", rng))
    extra = [("market/market_rents_2024Q4.csv", older["2024Q4"], "2024Q4"),
             ("market/market_rents_2025Q2_forecast.csv", forecast, "2025Q2 FORECAST - not a survey")]
    extra += [(f"market/market_rents_{q}.csv", older[q], q) for q in ["2024Q3", "2024Q2", "2024Q1", "2023Q4", "2023Q3", "2023Q2", "2023Q1"]]
    for rel, rows, label in extra[: n - 1]:
        _write(ws, rel, _market(rows, label, rng))
    n = scale.n_files(3)
    _write(ws, "compliance/rent_caps.json", json.dumps(CAPS, indent=2) + "\n")
    for rel, content in COMPLIANCE_NOISE[: n - 1]:
        if isinstance(content, dict):
            text = json.dumps(content, indent=2) + "\n"
        elif isinstance(content, list):
            text = _csv(content)
        else:
            text = content
        _write(ws, rel, text)
