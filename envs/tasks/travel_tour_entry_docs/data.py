"""Tour operator: departures with multi-country itineraries, travelers, bookings, visas, departure flags.

Entry requirements (passport validity, visa regimes), the rule-change advisory and the minimum group
sizes live only in workspace markdown files.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from datetime import date, timedelta
from pathlib import Path

from envs.taskkit import Scale

PRODUCTS = [
    ("MEK", "Mekong Discovery", "small-group", [("VN", 7), ("KH", 4)]),
    ("HIM", "Himalayan Kingdoms", "classic", [("IN", 5), ("NP", 6)]),
    ("SSP", "Safari & Spice", "classic", [("KE", 6), ("TZ", 5)]),
    ("JPD", "Japan in Depth", "small-group", [("JP", 11)]),
    ("VNS", "Vietnam North to South", "classic", [("VN", 12)]),
    ("SRG", "Serengeti Migration", "small-group", [("TZ", 9)]),
    ("DKO", "Delhi to Kathmandu Overland", "small-group", [("IN", 8), ("NP", 4)]),
    ("KEH", "Kenya Highlands", "small-group", [("KE", 8)]),
    ("TNT", "Temples & Tea", "classic", [("JP", 6), ("VN", 6)]),
    ("ANG", "Angkor Private Journey", "private", [("KH", 5)]),
    ("RAJ", "Rajasthan Private Circuit", "private", [("IN", 9)]),
    ("KLM", "Kilimanjaro & Zanzibar", "small-group", [("TZ", 10)]),
    ("GTJ", "Grand Tour of Japan", "classic", [("JP", 14)]),
    ("EAS", "East Africa Private Safari", "private", [("KE", 5), ("TZ", 5)]),
]
CAPACITY = {"small-group": 12, "classic": 20, "private": 4}

# The rules as the workspace files state them (including the 2025-03 advisory); used to decide who needs visas.
RULES = {
    "JP": ("exit", 0, "exempt", {"US", "CA", "GB", "IE", "AU", "NZ", "DE", "FR", "NL", "CH", "PL", "CZ", "SG", "KR",
                                 "MX", "BR"}),
    "VN": ("entry", 6, "exempt", {"GB", "DE", "FR", "KR", "JP", "PL", "CZ", "CH"}),
    "KH": ("entry", 6, "voa_except", {"NG", "PK", "BD", "LK"}),
    "IN": ("entry", 6, "exempt", set()),
    "NP": ("entry", 6, "voa_except", {"NG"}),
    "KE": ("exit", 6, "exempt", set()),
    "TZ": ("entry", 6, "exempt", {"KE", "ZA"}),
}
NP_NEW = {"BD", "PK", "LK"}  # need a visa for Nepal entries on/after 2025-05-01

NATS = [("US", 22), ("GB", 14), ("CA", 8), ("AU", 9), ("DE", 7), ("FR", 4), ("NL", 4), ("IE", 3), ("NZ", 3),
        ("SG", 2), ("IN", 4), ("ZA", 3), ("BR", 2), ("MX", 2), ("PL", 3), ("CZ", 2), ("CH", 3), ("NG", 2),
        ("PK", 1), ("BD", 1), ("LK", 1), ("KR", 2)]
NAMES = {
    "US": (["Madison", "Tyler", "Brooke", "Caleb", "Jenna", "Marcus", "Whitney", "Derek", "Lauren", "Austin"],
           ["Hollister", "McAllister", "Barlow", "Greer", "Sutton", "Prescott", "Dawson", "Kimball"]),
    "GB": (["Harriet", "Alfie", "Imogen", "Rupert", "Poppy", "Callum", "Beatrix", "Hamish", "Tilly"],
           ["Ashworth", "Pennington", "Crowther", "Blythe", "Featherstone", "Marlow", "Hargreaves"]),
    "CA": (["Émilie", "Liam", "Geneviève", "Owen", "Chloé", "Declan"], ["Tremblay", "Gagnon", "MacLeod", "Bouchard"]),
    "AU": (["Lachlan", "Matilda", "Kirra", "Hamish", "Sienna", "Bodhi"], ["Fitzroy", "Kowalski", "Pearce", "Nguyen"]),
    "DE": (["Lukas", "Annika", "Florian", "Katrin", "Matthias", "Leonie"], ["Schäfer", "Hoffmann", "Brandt", "Vogel"]),
    "FR": (["Camille", "Théo", "Margaux", "Baptiste"], ["Lefèvre", "Garnier", "Rousseau", "Chevalier"]),
    "NL": (["Sanne", "Joost", "Femke", "Bram"], ["de Vries", "van Dijk", "Bakker", "Visser"]),
    "IE": (["Aoife", "Cian", "Siobhán", "Darragh"], ["Ó Briain", "Kavanagh", "Doyle", "Byrne"]),
    "NZ": (["Aroha", "Nikau", "Mackenzie", "Finn"], ["Te Rangi", "Whitcombe", "Harland"]),
    "SG": (["Wei Ling", "Darren", "Hui Min"], ["Tan", "Lim", "Goh"]),
    "IN": (["Ananya", "Rohan", "Kavya", "Arjun", "Meera"], ["Sharma", "Iyengar", "Banerjee", "Kulkarni"]),
    "ZA": (["Thandiwe", "Pieter", "Lerato", "Johan"], ["Nkosi", "van der Merwe", "Dlamini", "Botha"]),
    "BR": (["Larissa", "Thiago", "Beatriz"], ["Carvalho", "Ribeiro", "Moura"]),
    "MX": (["Ximena", "Diego", "Renata"], ["Villaseñor", "Guerrero", "Ochoa"]),
    "PL": (["Zuzanna", "Kacper", "Agnieszka", "Tomasz"], ["Wiśniewski", "Kowalczyk", "Zielińska", "Nowak"]),
    "CZ": (["Tereza", "Ondřej", "Veronika"], ["Dvořák", "Novotná", "Procházka"]),
    "CH": (["Seraina", "Luca", "Noémie", "Reto"], ["Brunner", "Meier", "Gerber", "Favre"]),
    "NG": (["Chidinma", "Oluwaseun", "Ifeoma", "Babatunde"], ["Adeyemi", "Okonkwo", "Balogun", "Eze"]),
    "PK": (["Ayesha", "Hamza", "Sana"], ["Qureshi", "Siddiqui", "Malik"]),
    "BD": (["Nusrat", "Tanvir", "Farhana"], ["Rahman", "Chowdhury", "Hossain"]),
    "LK": (["Dilani", "Kasun", "Nimesha"], ["Perera", "Jayasuriya", "Fernando"]),
    "KR": (["Ji-woo", "Min-jun", "Seo-yeon"], ["Park", "Choi", "Jung"]),
}
VISA_TYPES = {"JP": "single-entry tourist", "VN": "e-visa 90d", "KH": "e-visa 30d", "IN": "e-Tourist 1Y",
              "NP": "tourist 30d", "KE": "eTA", "TZ": "e-visa ordinary"}
NOISE_VISA_COUNTRIES = ["PE", "MA", "TR", "EG", "JO", "AU", "US", "GB", "CN", "RU"]


def add_months(d: date, months: int) -> date:
    y, m = divmod(d.month - 1 + months, 12)
    y += d.year
    m += 1
    for day in (d.day, 30, 29, 28):
        try:
            return date(y, m, day)
        except ValueError:
            continue
    raise ValueError(d)


def needs_visa(country: str, nat: str, enter: date) -> bool:
    _, _, regime, lst = RULES[country]
    if country == "NP" and nat in NP_NEW and enter >= date(2025, 5, 1):
        return True
    return nat not in lst if regime == "exempt" else nat in lst


def passport_limit(country: str, enter: date, exit_: date) -> date:
    base, months, _, _ = RULES[country]
    return add_months(exit_ if base == "exit" else enter, months)


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
        self.travelers: list[dict] = []
        self.tours: list[dict] = []
        self.codes: set[str] = set()
        self.bookings: list[dict] = []
        self.visas: list[dict] = []
        self.passports: set[str] = set()

    def traveler(self, nat: str | None = None, expiry: date | None = None) -> dict:
        rng = self.rng
        nat = nat or rng.choices([n for n, _ in NATS], weights=[w for _, w in NATS])[0]
        first, last = NAMES[nat]
        name = f"{rng.choice(first)} {rng.choice(last)}"
        while True:
            pno = rng.choice("ABCEHKLMNPRTXZ") + str(rng.randint(10_000_000, 99_999_999))
            if pno not in self.passports:
                self.passports.add(pno)
                break
        if expiry is None:
            expiry = date(2026, 1, 1) + timedelta(days=rng.randint(0, 9 * 365))
        birth = date(1948, 1, 1) + timedelta(days=rng.randint(0, 55 * 365))
        slug = name.lower().replace(" ", ".")
        slug = "".join(c for c in slug if c.isascii() and (c.isalnum() or c == "."))
        t = {"traveler_id": 70001 + len(self.travelers), "full_name": name, "nationality": nat,
             "passport_no": pno, "passport_expiry": expiry.isoformat(), "birth_date": birth.isoformat(),
             "email": f"{slug}{rng.randint(1, 99)}@{rng.choice(['gmail.com', 'outlook.com', 'icloud.com', 'proton.me', 'yahoo.co.uk', 'web.de'])}"}
        self.travelers.append(t)
        return t

    def tour(self, product, depart: date, status: str, code: str | None = None) -> dict:
        pcode, name, cat, legs = product
        if code is None:
            code = f"{pcode}-{depart:%y%m%d}"
            suffix = "BCDEFGH"
            i = 0
            while code in self.codes:
                code = f"{pcode}-{depart:%y%m%d}{suffix[i]}"
                i += 1
        self.codes.add(code)
        stops, d = [], depart
        for seq, (cc, nights) in enumerate(legs, 1):
            stops.append({"seq": seq, "country_code": cc, "enter": d, "exit": d + timedelta(days=nights)})
            d = d + timedelta(days=nights)
        guide = self.rng.choice(["Anh Tran", "Sunil Rao", "Wanjiru Kamau", "Kenji Mori", "Pema Sherpa",
                                 "Baraka Mushi", "Linh Pham", "Aiko Sato", "Daniel Otieno", "Ravi Menon"])
        t = {"tour_code": code, "product": name, "category": cat, "depart": depart, "return": d,
             "capacity": CAPACITY[cat], "guide": guide, "status": status, "stops": stops}
        self.tours.append(t)
        return t

    def book(self, tour: dict, trav: dict, status: str, doc_status: str, hold_reason=None, hold_country=None):
        rng = self.rng
        booked = tour["depart"] - timedelta(days=rng.randint(35, 300))
        b = {"tour_code": tour["tour_code"], "traveler_id": trav["traveler_id"], "booked_on": booked.isoformat(),
             "status": status, "doc_status": doc_status, "hold_reason": hold_reason, "hold_country": hold_country,
             "tie": rng.random()}
        self.bookings.append(b)
        return b

    def visa(self, trav: dict, cc: str, vf: date, vt: date):
        rng = self.rng
        self.visas.append({"traveler_id": trav["traveler_id"], "country_code": cc,
                           "visa_type": VISA_TYPES.get(cc, rng.choice(["tourist", "e-visa", "ETA"])),
                           "valid_from": vf.isoformat(), "valid_to": vt.isoformat(),
                           "entries": rng.choice(["single", "single", "multiple"]),
                           "reference": f"{cc}{rng.randint(100000, 999999)}{rng.choice('ABCDEFGHJK')}",
                           "tie": rng.random()})

    def docs_for(self, tour: dict, trav: dict, fail_rate: float) -> None:
        """Visas for each stop that needs one; a small share are missing or do not cover the stay."""
        rng = self.rng
        for s in tour["stops"]:
            if not needs_visa(s["country_code"], trav["nationality"], s["enter"]):
                if rng.random() < 0.1:
                    self.visa(trav, s["country_code"], s["enter"] - timedelta(days=rng.randint(10, 60)),
                              s["exit"] + timedelta(days=rng.randint(5, 90)))
                continue
            r = rng.random()
            if r < fail_rate * 0.45:
                continue  # missing
            if r < fail_rate * 0.8:
                self.visa(trav, s["country_code"], s["enter"] - timedelta(days=rng.randint(20, 80)),
                          s["exit"] - timedelta(days=rng.randint(1, 4)))
            elif r < fail_rate:
                self.visa(trav, s["country_code"], s["enter"] + timedelta(days=rng.randint(1, 3)),
                          s["exit"] + timedelta(days=rng.randint(10, 60)))
            else:
                self.visa(trav, s["country_code"], s["enter"] - timedelta(days=rng.randint(3, 40)),
                          s["exit"] + timedelta(days=rng.randint(0, 60)))

    def fine_traveler(self, tour: dict, nat: str | None = None) -> dict:
        t = self.traveler(nat)
        self.docs_for(tour, t, 0.0)
        return t


def build(root: Path, scale: Scale, seed: int) -> None:
    rng = random.Random(seed)
    _clear(root)
    g = _Gen(rng)
    pool = [g.traveler() for _ in range(scale.n_rows(110))]

    def pick_pool(tour):
        taken = {b["traveler_id"] for b in g.bookings if b["tour_code"] == tour["tour_code"]}
        while True:
            t = rng.choice(pool)
            if t["traveler_id"] not in taken:
                return t

    # ---- fixed departures present at every scale
    prod = {p[0]: p for p in PRODUCTS}
    t1 = g.tour(prod["MEK"], date(2025, 4, 15), "scheduled", "MEK-250415")
    g.book(t1, g.fine_traveler(t1, "PL"), "confirmed", "pending")  # exempt for VN by the advisory, VOA in KH
    for _ in range(7):
        g.book(t1, g.fine_traveler(t1), "confirmed", "pending")
    t2 = g.tour(prod["HIM"], date(2025, 5, 18), "scheduled", "HIM-250518")
    for nat in ("BD", "NG"):  # India visa yes, Nepal visa missing
        tr = g.traveler(nat)
        g.book(t2, tr, "confirmed", "pending")
        s = t2["stops"][0]
        g.visa(tr, "IN", s["enter"] - timedelta(days=30), s["enter"] + timedelta(days=335))
    for _ in range(9):
        g.book(t2, g.fine_traveler(t2), "confirmed", "pending")
    t3 = g.tour(prod["JPD"], date(2025, 4, 22), "scheduled", "JPD-250422")
    g.book(t3, g.traveler("GB", date(2025, 7, 15)), "confirmed", "pending")  # fine for Japan (duration of stay)
    for _ in range(5):
        g.book(t3, g.fine_traveler(t3), "confirmed", "pending")
    g.book(t3, g.fine_traveler(t3), "confirmed", "hold", "passport_renewal_pending")
    t4 = g.tour(prod["KEH"], date(2025, 6, 9), "scheduled", "KEH-250609")
    for _ in range(5):
        g.book(t4, g.fine_traveler(t4), "confirmed", "pending")
    g.book(t4, g.fine_traveler(t4), "confirmed", "hold", "passport_renewal_pending")
    for _ in range(2):
        g.book(t4, g.fine_traveler(t4), "waitlisted", "pending")
    t5 = g.tour(prod["VNS"], date(2025, 6, 2), "scheduled", "VNS-250602")
    tr = g.traveler("DE", add_months(date(2025, 6, 2), 6) + timedelta(days=3))  # 6 months from entry: ok
    g.book(t5, tr, "confirmed", "pending")
    for _ in range(11):
        g.book(t5, g.fine_traveler(t5), "confirmed", "pending")

    # ---- random departures: Q1 (completed), Q2 (in review), Q3 (later)
    plan = [("q1", date(2025, 1, 6), 80, scale.n_rows(11)), ("q2", date(2025, 4, 1), 90, scale.n_rows(18)),
            ("q3", date(2025, 7, 1), 91, scale.n_rows(6))]
    for quarter, start, span, n in plan:
        for _ in range(n):
            product = rng.choice(PRODUCTS)
            depart = start + timedelta(days=rng.randint(0, span - 1))
            status = "completed" if quarter == "q1" else ("cancelled" if rng.random() < 0.06 else "scheduled")
            tour = g.tour(product, depart, status)
            cat = tour["category"]
            lo, hi = {"small-group": (5, 12), "classic": (9, 18), "private": (2, 4)}[cat]
            for _ in range(rng.randint(lo, hi)):
                if quarter == "q1":
                    g.book(tour, pick_pool(tour), "confirmed", "cleared")
                    continue
                if rng.random() < 0.7:
                    exp = None
                    if rng.random() < 0.035:
                        exp = depart + timedelta(days=rng.randint(15, 230))
                    trav = g.traveler(expiry=exp)
                else:
                    trav = pick_pool(tour)
                status_b = "confirmed"
                if tour["status"] == "cancelled":
                    status_b = "cancelled"
                elif rng.random() < 0.05:
                    status_b = "cancelled"
                doc = "pending"
                reason = country = None
                if quarter == "q2" and status_b == "confirmed" and rng.random() < 0.02:
                    doc, reason = "hold", "passport_renewal_pending"
                g.book(tour, trav, status_b, doc, reason, country)
                g.docs_for(tour, trav, 0.045)
            if tour["status"] == "scheduled" and cat != "private" and rng.random() < 0.4:
                for _ in range(rng.randint(1, 3)):
                    trav = g.traveler()
                    g.book(tour, trav, "waitlisted", "pending")
                    g.docs_for(tour, trav, 0.0)

    # ---- noise visas for other destinations
    for _ in range(scale.n_rows(40)):
        tr = rng.choice(g.travelers)
        vf = date(2024, 1, 1) + timedelta(days=rng.randint(0, 600))
        g.visa(tr, rng.choice(NOISE_VISA_COUNTRIES), vf, vf + timedelta(days=rng.choice([30, 90, 180, 365, 730])))

    # ---- departure flags (other types)
    flags = []
    notes = {"guide_change": ["Lead guide on leave; replacement confirmed", "Guide swap with sister departure"],
             "supplier_issue": ["Lodge overbooked night 3; alternative held", "Coach supplier changed"],
             "weather_watch": ["Monsoon onset may affect day 5 trek", "Heavy rains forecast in the park"],
             "hotel_swap": ["Hotel renovation; upgraded to partner property", "Ryokan night moved to day 4"]}
    for _ in range(scale.n_rows(8)):
        t = rng.choice(g.tours)
        ft = rng.choice(sorted(notes))
        flags.append((t["tour_code"], ft, rng.choice(notes[ft]),
                      (date(2025, 1, 10) + timedelta(days=rng.randint(0, 60))).isoformat()))

    # ---- write
    g.tours.sort(key=lambda t: (t["depart"], t["tour_code"]))
    g.bookings.sort(key=lambda b: b["tie"])
    g.visas.sort(key=lambda v: v["tie"])
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript("""
        create table tours(tour_code text primary key, product text, category text, depart_date text,
            return_date text, capacity integer, lead_guide text, status text);
        create table itinerary_stops(tour_code text, seq integer, country_code text, enter_date text,
            exit_date text, primary key(tour_code, seq));
        create table travelers(traveler_id integer primary key, full_name text, nationality text,
            passport_no text, passport_expiry text, birth_date text, email text);
        create table tour_bookings(booking_id integer primary key, tour_code text, traveler_id integer,
            booked_on text, status text, doc_status text, hold_reason text, hold_country text);
        create table visas(visa_id integer primary key, traveler_id integer, country_code text, visa_type text,
            valid_from text, valid_to text, entries text, reference text);
        create table departure_flags(flag_id integer primary key autoincrement, tour_code text, flag_type text,
            note text, created_on text);
    """)
    for t in g.tours:
        con.execute("insert into tours values (?,?,?,?,?,?,?,?)",
                    (t["tour_code"], t["product"], t["category"], t["depart"].isoformat(), t["return"].isoformat(),
                     t["capacity"], t["guide"], t["status"]))
        for s in t["stops"]:
            con.execute("insert into itinerary_stops values (?,?,?,?,?)",
                        (t["tour_code"], s["seq"], s["country_code"], s["enter"].isoformat(), s["exit"].isoformat()))
    for t in g.travelers:
        con.execute("insert into travelers values (?,?,?,?,?,?,?)", tuple(t.values()))
    for i, b in enumerate(g.bookings):
        con.execute("insert into tour_bookings values (?,?,?,?,?,?,?,?)",
                    (40001 + i, b["tour_code"], b["traveler_id"], b["booked_on"], b["status"], b["doc_status"],
                     b["hold_reason"], b["hold_country"]))
    for i, v in enumerate(g.visas):
        con.execute("insert into visas values (?,?,?,?,?,?,?,?)",
                    (900001 + i, v["traveler_id"], v["country_code"], v["visa_type"], v["valid_from"],
                     v["valid_to"], v["entries"], v["reference"]))
    con.executemany("insert into departure_flags(tour_code, flag_type, note, created_on) values (?,?,?,?)", flags)
    con.commit()
    con.close()
    _files(root / "workspace", scale, rng)


# ----------------------------------------------------------------------------------------------- files

COUNTRY_DOCS = {
    "JP": ("Japan", """## Passport
Your passport must be valid for the **entire duration of your stay** in Japan: it must not expire before
the day you leave Japan. No additional validity period is required.

## Visa
Short-term visitors (up to 90 days) holding passports of the following countries are **visa-exempt**:
US, CA, GB, IE, AU, NZ, DE, FR, NL, CH, PL, CZ, SG, KR, MX, BR.
All other nationalities need a visa issued before travel, covering the whole stay.

## Good to know
Visit Japan Web registration for immigration and customs is recommended. Cash is still widely used
outside the big cities; IC cards (Suica/ICOCA) work on most transit.
"""),
    "VN": ("Vietnam", """## Passport
Passports must have at least **6 months' validity from the date of entry** into Vietnam
(e.g. entering on 2025-04-10 requires an expiry on or after 2025-10-10) and two blank pages.

## Visa
Visa exemption (up to 45 days) applies to passport holders of: GB, DE, FR, KR, JP
(see also any later advisories in `advisories/`).
Everyone else needs an e-visa valid for the full stay in Vietnam. Visa on arrival is not offered to our groups.

## Health & customs
No mandatory vaccinations. Declare cash above USD 5,000. Drones require a permit.
"""),
    "KH": ("Cambodia", """## Passport
Passport valid for at least **6 months from the date of entry** into Cambodia.

## Visa
A tourist visa on arrival (USD 30, 30 days) is available at Siem Reap and Phnom Penh airports and at
the Bavet and Kaam Samnor border crossings to **all nationalities except** NG, PK, BD, LK.
Travelers of those four nationalities must hold an e-visa covering their stay before departure.

## Money
US dollars are accepted everywhere; small riel notes are given as change.
"""),
    "IN": ("India", """## Passport
At least **6 months' validity from the date of arrival** in India, with two blank pages.

## Visa
**All** our travelers need an e-Visa (e-Tourist) granted before departure and valid for the whole stay.
(Nepalese and Bhutanese citizens are exempt, but we do not currently have any.) There is no visa on arrival
for our groups.

## Health
Carry the e-Visa approval (ETA) printout; immigration officers may ask for it.
"""),
    "NP": ("Nepal", """## Passport
Passport valid for at least **6 months from the date of arrival** in Nepal.

## Visa
Tourist visa on arrival at Kathmandu (Tribhuvan) and at land borders is available to all nationalities
**except** NG (plus any nationalities added by a later advisory), who must obtain a visa before travel.
Bring USD cash for the on-arrival fee (15/30/90 days: USD 30/50/125).

## Trekking
TIMS cards and park permits are arranged by our ground team.
"""),
    "KE": ("Kenya", """## Passport
Passport valid for at least **6 months beyond the date you leave Kenya**
(e.g. leaving on 2025-06-17 requires an expiry on or after 2025-12-17), with one blank page.

## Entry authorisation
Kenya has replaced visas with an **Electronic Travel Authorisation (eTA)**. Every traveler on our tours needs
an approved eTA valid for the whole stay; the eTA counts as the visa for this review.

## Health
Yellow fever certificate required if arriving from a country with risk of transmission.
"""),
    "TZ": ("Tanzania", """## Passport
Passport valid for at least **6 months from the date of entry** into Tanzania.

## Visa
Citizens of KE and ZA are visa-exempt. All other travelers need an e-visa (ordinary visa) approved before
departure and covering the whole stay in Tanzania, including Zanzibar.

## Health
Zanzibar requires travel insurance bought from the Zanzibar Insurance Corporation (arranged by us).
"""),
}

NOISE_COUNTRIES = [("PE", "Peru"), ("MA", "Morocco"), ("JO", "Jordan"), ("TR", "Türkiye"), ("EG", "Egypt"),
                   ("IS", "Iceland"), ("BO", "Bolivia"), ("CL", "Chile"), ("MN", "Mongolia"), ("UZ", "Uzbekistan"),
                   ("LK", "Sri Lanka"), ("ID", "Indonesia"), ("PH", "Philippines"), ("CO", "Colombia"),
                   ("EC", "Ecuador"), ("GR", "Greece"), ("HR", "Croatia"), ("NA", "Namibia"), ("BW", "Botswana"),
                   ("RW", "Rwanda"), ("LA", "Laos"), ("MM", "Myanmar")]

REVIEW_MEMO = """# Q2 2025 pre-departure document review

Owner: Operations — Traveler Documents team · prepared 2025-03-14

Before final payments are released to ground handlers we check the travel documents of everyone who is
due to travel in Q2.

## Scope
- Departures with a departure date from **2025-04-01 to 2025-06-30** (inclusive) whose status is `scheduled`.
- On those departures, **confirmed** bookings whose document status is still `pending`.
  Waitlisted and cancelled bookings are not reviewed. Bookings already on hold stay on hold — do not touch them.

## What to check
Check each country on the itinerary **in itinerary order** (stop 1, stop 2, ...), using the entry requirement
sheet for that country in `entry_requirements/` together with every advisory in `advisories/` that is in force
for the dates of the stay:

1. **Passport validity** — the traveler's passport expiry against the sheet's rule, using that stop's entry
   and exit dates (`enter_date` / `exit_date` on the itinerary). "N months from a date" means the same day
   N months later (if that day does not exist, the last day of that month); the passport must expire on or
   after that day.
2. **Visa / entry authorisation** — if the traveler's nationality needs one, they must hold a visa for that
   country in our visa records with `valid_from` on or before the stop's `enter_date` and `valid_to` on or
   after its `exit_date`. Visa-exempt travelers and travelers who can get a visa on arrival need nothing.

The first failing check decides the hold: stop order first, and within a stop the passport check before the
visa check. Place **one** document hold per failing booking with reason `passport_validity` or `visa_missing`
(use `visa_missing` also when a visa exists but does not cover the stay) and the country code of that stop.
Travelers who pass everything need no action in the system.

When all holds are placed, apply the departure minimums (`ops/departure_minimums.md`).
"""

MINIMUMS = """# Departure minimums

A departure operates only with enough travelers who can actually travel. After each document review,
count per departure the **confirmed bookings that are not on a document hold** (holds from earlier reviews
count as holds too; waitlisted and cancelled bookings never count).

| Category | Minimum travelers |
|---|---|
| small-group | 6 |
| classic | 10 |
| private | 2 |

Every reviewed departure below its minimum gets one departure flag of type `min_group_risk` so that Sales
can offer the remaining travelers alternative dates. Note: capacity (12 / 20 / 4) is a maximum, not a
minimum.
"""

OPS_NOISE = {
    "ops/guide_roster_q2.md": "# Guide roster Q2\n\nGuides are assigned 6 weeks out. Pema Sherpa is on leave "
    "2025-05-01 to 2025-05-12. Kenji Mori leads all GTJ departures.\n",
    "ops/supplier_payments.md": "# Supplier payment runs\n\nGround handlers are paid 21 days before departure. "
    "Hold the payment of any departure with an open `min_group_risk` flag.\n",
    "ops/q1_document_review_summary.md": "# Q1 review summary\n\nQ1 review completed 2024-12-13: 14 holds, "
    "3 departures flagged. Minimum for classic departures was 8 at the time (raised to 10 from Q2).\n",
    "ops/insurance_requirements.md": "# Insurance\n\nAll travelers must hold travel insurance with medical "
    "evacuation cover of at least USD 250,000. Insurance is checked by Sales, not in the document review.\n",
    "ops/room_allocation_rules.md": "# Room allocation\n\nSolo travelers are paired by gender unless they paid "
    "the single supplement. Private departures always get single rooms.\n",
    "ops/accessibility_notes.md": "# Accessibility\n\nTreks on HIM and DKO involve 4-6 hours of walking; "
    "inform travelers with mobility notes.\n",
    "ops/brand_voice.md": "# Brand voice\n\nWrite to travelers in a warm, concise tone. Never promise refunds in "
    "writing before Finance approves.\n",
    "ops/visa_service_partners.md": "# Visa service partners\n\nCIBT handles India and Vietnam e-visas for US "
    "travelers; VisaHQ for the UK. Turnaround 5-10 working days.\n",
}

ADVISORY = """# Advisory 2025-03 — entry rule changes

Issued 2025-03-05 by the Traveler Documents team. Supersedes the country sheets where they differ.

1. **Vietnam — visa exemption extended.** From **2025-03-15**, passport holders of **PL, CZ and CH** are
   visa-exempt for stays of up to 45 days (in addition to the countries on the Vietnam sheet).
2. **Nepal — visa on arrival withdrawn for three nationalities.** For entries into Nepal **on or after
   2025-05-01**, nationals of **BD, PK and LK** can no longer obtain a visa on arrival and must hold a visa
   issued before travel. Entries before 2025-05-01 are unaffected.
3. Kenya eTA fees unchanged (USD 30); no action.
"""

OLD_ADVISORIES = [
    ("advisories/2024-01_kenya_eta.md", "# Advisory 2024-01 — Kenya eTA\n\nFrom 2024-01-05 Kenya requires an eTA "
     "instead of a visa for all visitors. Already reflected in the Kenya sheet.\n"),
    ("advisories/2024-11_japan_jesta_plans.md", "# Advisory 2024-11 — Japan JESTA (planned)\n\nJapan plans an "
     "electronic travel authorisation (JESTA) for visa-exempt visitors by 2028. Not in force; no action.\n"),
    ("advisories/2024-06_peru_passport.md", "# Advisory 2024-06 — Peru\n\nPeru now requires 6 months' passport "
     "validity on entry. Not one of our Q2 destinations.\n"),
    ("advisories/2024-09_india_evisa_fees.md", "# Advisory 2024-09 — India e-Visa fees\n\nFee changes only. "
     "Validity rules unchanged.\n"),
    ("advisories/2023-12_vietnam_evisa_90d.md", "# Advisory 2023-12 — Vietnam e-visa\n\nVietnam e-visas are now "
     "valid for up to 90 days, multiple entry. Already reflected in the Vietnam sheet.\n"),
    ("advisories/2024-03_tanzania_zanzibar_insurance.md", "# Advisory 2024-03 — Zanzibar insurance\n\n"
     "Mandatory Zanzibar insurance from 2024-10-01; arranged by Operations, not a document check.\n"),
    ("advisories/2024-12_nepal_fee_draft.md", "# Advisory 2024-12 — Nepal fees (draft)\n\nProposed visa fee "
     "increase for 2026. Draft only.\n"),
]


def _write(ws: Path, rel: str, text: str) -> None:
    p = ws / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def _country_sheet(cc: str, name: str, body: str) -> str:
    return f"# Entry requirements — {name} ({cc})\n\nLast reviewed: 2025-02-20 · applies to all Meridian Journeys " \
           f"itineraries visiting {name}.\n\n{body}"


def _noise_sheet(rng: random.Random, cc: str, name: str) -> str:
    months = rng.choice([3, 6])
    base = rng.choice(["entry", "departure"])
    exempt = ", ".join(sorted(rng.sample(["US", "GB", "CA", "AU", "DE", "FR", "NL", "NZ", "IE", "SG"], 6)))
    return _country_sheet(cc, name, f"""## Passport
Passport valid for at least {months} months from the date of {base}.

## Visa
Visa-exempt nationalities: {exempt}. Others apply online at least 3 weeks before travel.

## Notes
{rng.choice(['Not on the 2025 programme; sheet kept for charter enquiries.', 'Programme resumes in 2026.',
             'Used for private extensions only.', 'Pre-trip extension destination; check with Sales.'])}
""")


def _files(ws: Path, scale: Scale, rng: random.Random) -> None:
    n = scale.n_files(7)
    for cc, (name, body) in COUNTRY_DOCS.items():
        _write(ws, f"entry_requirements/{cc}_{name.lower()}.md", _country_sheet(cc, name, body))
    for cc, name in NOISE_COUNTRIES[: n - len(COUNTRY_DOCS)]:
        _write(ws, f"entry_requirements/{cc}_{name.lower().replace(' ', '_').replace('ü', 'u')}.md",
               _noise_sheet(rng, cc, name))
    n = scale.n_files(2)
    _write(ws, "advisories/2025-03_entry_rule_changes.md", ADVISORY)
    for rel, text in OLD_ADVISORIES[: n - 1]:
        _write(ws, rel, text)
    n = scale.n_files(3)
    _write(ws, "ops/q2_document_review.md", REVIEW_MEMO)
    _write(ws, "ops/departure_minimums.md", MINIMUMS)
    for rel in list(OPS_NOISE)[: n - 2]:
        _write(ws, rel, OPS_NOISE[rel])
