"""Corporate travel desk during a weather event: flights, seat inventory, travelers, bookings, vouchers.

The rules (event scope, window, priority order, co-terminals, voucher bands) live only in workspace files.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import shutil
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

from envs.taskkit import Scale

AIRPORTS = {
    "DEN": ("Denver International", "Denver", "CO", 39.86, -104.67),
    "COS": ("Colorado Springs Municipal", "Colorado Springs", "CO", 38.81, -104.70),
    "SLC": ("Salt Lake City International", "Salt Lake City", "UT", 40.79, -111.98),
    "PHX": ("Phoenix Sky Harbor", "Phoenix", "AZ", 33.43, -112.01),
    "LAS": ("Harry Reid International", "Las Vegas", "NV", 36.08, -115.15),
    "DFW": ("Dallas/Fort Worth International", "Dallas", "TX", 32.90, -97.04),
    "DAL": ("Dallas Love Field", "Dallas", "TX", 32.85, -96.85),
    "ORD": ("Chicago O'Hare", "Chicago", "IL", 41.98, -87.90),
    "MDW": ("Chicago Midway", "Chicago", "IL", 41.79, -87.75),
    "SEA": ("Seattle-Tacoma International", "Seattle", "WA", 47.45, -122.31),
    "MSP": ("Minneapolis-St Paul", "Minneapolis", "MN", 44.88, -93.22),
    "LAX": ("Los Angeles International", "Los Angeles", "CA", 33.94, -118.41),
    "BUR": ("Hollywood Burbank", "Burbank", "CA", 34.20, -118.36),
    "SNA": ("John Wayne / Orange County", "Santa Ana", "CA", 33.68, -117.87),
    "SFO": ("San Francisco International", "San Francisco", "CA", 37.62, -122.38),
    "OAK": ("Oakland International", "Oakland", "CA", 37.72, -122.22),
    "SJC": ("San Jose Mineta", "San Jose", "CA", 37.36, -121.93),
    "JFK": ("New York JFK", "New York", "NY", 40.64, -73.78),
    "LGA": ("New York LaGuardia", "New York", "NY", 40.78, -73.87),
    "EWR": ("Newark Liberty", "Newark", "NJ", 40.69, -74.17),
    "BOS": ("Boston Logan", "Boston", "MA", 42.36, -71.01),
    "ATL": ("Atlanta Hartsfield-Jackson", "Atlanta", "GA", 33.64, -84.43),
    "IAH": ("Houston Bush Intercontinental", "Houston", "TX", 29.98, -95.34),
    "HOU": ("Houston Hobby", "Houston", "TX", 29.65, -95.28),
    "MCO": ("Orlando International", "Orlando", "FL", 28.43, -81.31),
    "MIA": ("Miami International", "Miami", "FL", 25.79, -80.29),
    "FLL": ("Fort Lauderdale-Hollywood", "Fort Lauderdale", "FL", 26.07, -80.15),
    "IAD": ("Washington Dulles", "Washington", "VA", 38.95, -77.46),
    "DCA": ("Washington Reagan National", "Washington", "VA", 38.85, -77.04),
    "BWI": ("Baltimore/Washington", "Baltimore", "MD", 39.18, -76.67),
    "BOI": ("Boise Airport", "Boise", "ID", 43.56, -116.22),
    "PDX": ("Portland International", "Portland", "OR", 45.59, -122.60),
    "AUS": ("Austin-Bergstrom", "Austin", "TX", 30.19, -97.67),
    "STL": ("St. Louis Lambert", "St. Louis", "MO", 38.75, -90.37),
}

# destinations flown from DEN/COS by the random schedule (WAS group and BOI are reserved for fixed cases)
DEST_WEIGHTS = [("LAX", 8), ("SFO", 6), ("OAK", 2), ("SJC", 2), ("ORD", 7), ("MDW", 3), ("DFW", 6), ("DAL", 2),
                ("PHX", 6), ("LAS", 6), ("SEA", 5), ("JFK", 3), ("LGA", 4), ("EWR", 3), ("ATL", 4), ("MSP", 4),
                ("SLC", 4), ("BOS", 3), ("IAH", 3), ("HOU", 2), ("MCO", 3), ("MIA", 2), ("FLL", 1), ("PDX", 3),
                ("AUS", 3), ("STL", 2), ("BUR", 2), ("SNA", 2)]
OTHER_ORIGINS = ["SLC", "PHX", "LAS", "DFW", "ORD", "SEA", "MSP", "ATL", "LAX", "SFO"]
CARRIERS = [("UA", 40), ("WN", 30), ("F9", 18), ("AA", 12)]
DATES = ["2025-01-13", "2025-01-14", "2025-01-15", "2025-01-16"]
NOW = datetime(2025, 1, 14, 12, 0)

FIRST = ["Amara", "Bennett", "Chiara", "Dmitri", "Eleanor", "Farid", "Greta", "Hiroshi", "Imani", "Jonas", "Keiko",
         "Lucía", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosalind", "Santiago", "Tamsin", "Uriel", "Vera",
         "Wesley", "Ximena", "Yusuf", "Zofia", "Adebayo", "Brigid", "Caspian", "Delphine", "Emeka", "Fiona", "Gideon",
         "Hollis", "Ingrid", "Jasper", "Kalani", "Leopold", "Marisol", "Niamh", "Orla", "Pavel", "Rafael", "Saoirse",
         "Tobias", "Ulrike", "Valentina", "Winona", "Yara", "Zeke", "Anouk", "Bodhi", "Cormac", "Dagny", "Elio"]
LAST = ["Okafor", "Lindqvist", "Marchetti", "Haddad", "Nakamura", "Oyelaran", "Castellanos", "Brennan", "Kowalczyk",
        "Abernathy", "Vasquez", "Thorsen", "Iyer", "Delacroix", "Whitfield", "Sørensen", "Achebe", "Fitzgerald",
        "Ramírez", "Lindgren", "Moreau", "Petrakis", "Gallagher", "Yamamoto", "Novak", "Quinlan", "Ferreira", "Holm",
        "Ostrowski", "Banerjee", "Calloway", "Dubois", "Eriksen", "Fontaine", "Grünewald", "Hargreaves", "Ishikawa",
        "Jaramillo", "Kerrigan", "Larkspur", "Mwangi", "Nordstrom", "Ouellette", "Pemberton", "Rasmussen", "Sandoval"]
COMPANIES = [("Halvorsen Biotech", "halvorsenbio.com"), ("Quarry Peak Energy", "quarrypeak.com"),
             ("Bluestem Analytics", "bluestem.io"), ("Ridgeline Aerospace", "ridgeline-aero.com"),
             ("Tamarack Legal LLP", "tamaracklaw.com"), ("Copperline Mining", "copperline.co"),
             ("Northfork Health", "northforkhealth.org"), ("Solvay Reed Partners", "solvayreed.com"),
             ("Juniper Grid Systems", "junipergrid.com"), ("Arapahoe Outdoor Co.", "arapahoe-outdoor.com"),
             ("Meridian Freight", "meridianfreight.com"), ("Kestrel Robotics", "kestrelrobotics.ai"),
             ("Pinecrest Capital", "pinecrestcap.com"), ("Larimer Foods", "larimerfoods.com")]
TRAVELER_NOTES = ["Prefers aisle, rows 8-15", "Window seat please", "Travel arranger: exec assistant, cc on changes",
                  "Known traveler number on file", "Allergic to peanuts - inform carrier", "",
                  "Prefers morning departures", "Do not book basic economy", "Company policy: economy under 3h",
                  "", "", "Often travels with equipment case", "Spanish-speaking, prefers calls in Spanish",
                  "Mobile only, no email notifications", "", "Requires hotel near client office"]
AGENT_NOTES = ["", "", "", "Booked via online tool", "Phone booking - verified card", "Client meeting 1/15 AM",
               "Conference: WestTech Summit", "Part of group of 4 (sales kickoff)", "Return on separate PNR",
               "Exception approved by travel manager", "Hold hotel until flight confirmed", "Upgrade requested",
               "Seat 3A confirmed", "Traveler asked for earliest flight", "Fare matched after price drop", ""]
SSR = ["", "", "", "", "", "", "WCHR", "VGML", "DOCS", "EXST", "KSML", "PETC"]


def _dist(a: str, b: str) -> int:
    la1, lo1, la2, lo2 = map(math.radians, (AIRPORTS[a][3], AIRPORTS[a][4], AIRPORTS[b][3], AIRPORTS[b][4]))
    h = math.sin((la2 - la1) / 2) ** 2 + math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2
    return int(round(3958.8 * 2 * math.asin(math.sqrt(h))))


def _wchoice(rng: random.Random, pairs):
    return rng.choices([p[0] for p in pairs], weights=[p[1] for p in pairs], k=1)[0]


def _equipment(rng: random.Random, dist: int) -> str:
    if dist < 700:
        return rng.choice(["E175", "CRJ-900", "A220-300", "737-700"])
    return rng.choice(["737-800", "A320neo", "737 MAX 8", "A321", "757-200"])


def _fmt(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M")


class _Builder:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.flights: list[dict] = []
        self.used_numbers: set[tuple[str, str, str]] = set()

    def flight(self, carrier, origin, dest, dep: datetime, status, code=None, econ=0, bus=0, number=None):
        rng = self.rng
        date = dep.strftime("%Y-%m-%d")
        while number is None or (carrier, number, date) in self.used_numbers:
            number = f"{carrier}{rng.randint(100, 2999)}"
        self.used_numbers.add((carrier, number, date))
        dist = _dist(origin, dest)
        arr = dep + timedelta(minutes=int(dist / 7.5) + rng.choice([25, 30, 35, 40]))
        f = {"carrier": carrier, "flight_no": number, "origin": origin, "dest": dest, "sched_dep": _fmt(dep),
             "sched_arr": _fmt(arr), "distance_mi": dist, "equipment": _equipment(rng, dist), "status": status,
             "cancel_code": code, "econ": econ, "bus": bus, "tie": rng.random(), "bookings": []}
        self.flights.append(f)
        return f


def _seats(rng: random.Random) -> tuple[int, int]:
    return rng.choice([0, 0, 0, 1, 1, 2, 2, 3, 4, 5, 7]), rng.choice([0, 0, 0, 0, 1, 1, 2])


def _clear(root: Path) -> None:
    db = root / "db.sqlite"
    if db.exists():
        db.unlink()
    ws = root / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    for p in sorted(ws.iterdir()):
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


def build(root: Path, scale: Scale, seed: int) -> None:
    rng = random.Random(seed)
    _clear(root)
    b = _Builder(rng)

    # ---- travelers
    travelers = []
    used_names = set()
    for i in range(scale.n_rows(190)):
        while True:
            name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
            if name not in used_names:
                used_names.add(name)
                break
        company, domain = rng.choice(COMPANIES)
        tier = rng.choices(["platinum", "gold", "silver", "none"], weights=[8, 14, 18, 60])[0]
        email = name.lower().replace(" ", ".").replace("í", "i").replace("ø", "o").replace("ü", "u") \
            .replace("ú", "u").replace("é", "e") + "@" + domain
        travelers.append({"traveler_id": 5001 + i, "full_name": name, "email": email, "company": company,
                          "loyalty_tier": tier, "home_airport": rng.choice(["DEN"] * 5 + ["COS"] * 2 + OTHER_ORIGINS),
                          "notes": rng.choice(TRAVELER_NOTES)})

    # ---- random schedule
    for _ in range(scale.n_rows(140)):
        date = rng.choice(DATES)
        r = rng.random()
        origin = "DEN" if r < 0.44 else ("COS" if r < 0.56 else rng.choice(OTHER_ORIGINS))
        if origin in ("DEN", "COS"):
            dest = _wchoice(rng, DEST_WEIGHTS)
        else:
            dest = "DEN" if rng.random() < 0.5 else _wchoice(rng, [p for p in DEST_WEIGHTS if p[0] != origin])
        if dest == origin:
            dest = "DEN"
        carrier = _wchoice(rng, CARRIERS)
        dep = datetime.strptime(date, "%Y-%m-%d") + timedelta(hours=rng.randint(5, 22), minutes=5 * rng.randint(0, 11))
        status, code = "scheduled", None
        if date == "2025-01-13":
            status = "departed"
            if origin == "SLC" and dep.hour < 15 and rng.random() < 0.6:
                status, code = "cancelled", "WX"
        elif date == "2025-01-14" and origin in ("DEN", "COS") and dep.hour < 16:
            if rng.random() < 0.5:
                status, code = "cancelled", _wchoice(rng, [("WX", 80), ("MX", 12), ("CREW", 8)])
        elif date == "2025-01-14" and dest in ("DEN", "COS") and dep.hour < 14 and rng.random() < 0.35:
            status, code = "cancelled", "WX"
        elif rng.random() < 0.03:
            status, code = "cancelled", rng.choice(["MX", "ATC", "CREW"])
        if status == "scheduled" and dep < NOW:
            status = "departed"
        econ, bus = _seats(rng) if status == "scheduled" else (0, 0)
        b.flight(carrier, origin, dest, dep, status, code, econ, bus)

    # ---- fixed cases present at every scale
    d = lambda s: datetime.strptime(s, "%Y-%m-%d %H:%M")  # noqa: E731
    fixed = {}
    fixed["dca"] = b.flight("UA", "DEN", "DCA", d("2025-01-14 09:15"), "cancelled", "WX")
    b.flight("UA", "DEN", "IAD", d("2025-01-14 17:40"), "scheduled", None, 2, 0)
    b.flight("F9", "DEN", "BWI", d("2025-01-14 19:05"), "scheduled", None, 6, 0)
    b.flight("AA", "DEN", "DCA", d("2025-01-15 08:10"), "scheduled", None, 4, 1)
    b.flight("UA", "DEN", "DCA", d("2025-01-16 07:00"), "scheduled", None, 3, 2)
    fixed["boi"] = b.flight("WN", "DEN", "BOI", d("2025-01-14 07:30"), "cancelled", "WX")
    b.flight("WN", "DEN", "BOI", d("2025-01-14 18:05"), "scheduled", None, 1, 0)
    b.flight("WN", "DEN", "BOI", d("2025-01-15 21:30"), "scheduled", None, 5, 0)
    fixed["mx"] = b.flight("UA", "DEN", "LAX", d("2025-01-14 10:20"), "cancelled", "MX")
    b.flight("UA", "DEN", "LAX", d("2025-01-14 16:45"), "scheduled", None, 3, 1)
    fixed["inbound"] = b.flight("WN", "PHX", "DEN", d("2025-01-14 08:45"), "cancelled", "WX")
    b.flight("WN", "PHX", "DEN", d("2025-01-14 15:10"), "scheduled", None, 4, 0)
    fixed["cos"] = b.flight("F9", "COS", "LAS", d("2025-01-14 06:40"), "cancelled", "WX")
    b.flight("F9", "COS", "LAS", d("2025-01-15 06:40"), "scheduled", None, 2, 0)

    # ---- sort and number flights
    b.flights.sort(key=lambda f: (f["sched_dep"], f["tie"]))
    for i, f in enumerate(b.flights):
        f["flight_id"] = 3001 + i

    # ---- bookings
    refs: set[str] = set()
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

    def new_ref() -> str:
        while True:
            r = "".join(rng.choice(alphabet) for _ in range(6))
            if r not in refs:
                refs.add(r)
                return r

    def booked_at() -> str:
        return _fmt(datetime(2024, 9, 1) + timedelta(minutes=rng.randint(0, 132 * 24 * 60)))

    bookings = []

    def add_booking(f, traveler, cabin, status, when=None):
        base = f["distance_mi"] * 0.11 + rng.randint(59, 260)
        fare = round(base * (2.7 if cabin == "business" else 1.0) + rng.choice([0, 0.2, 0.4, 0.6, 0.8]), 2)
        bk = {"booking_ref": new_ref(), "traveler_id": traveler["traveler_id"], "flight_id": f["flight_id"],
              "cabin": cabin, "fare_usd": fare, "booked_at": when or booked_at(), "status": status,
              "ssr": rng.choice(SSR), "agent_notes": rng.choice(AGENT_NOTES), "original_flight_id": None}
        bookings.append(bk)
        return bk

    fixed_ids = {id(f) for f in fixed.values()}
    for f in b.flights:
        if id(f) in fixed_ids:
            continue
        if f["origin"] in ("DEN", "COS") and f["sched_dep"].startswith("2025-01-14") and f["status"] == "cancelled":
            k = rng.choice([1, 2, 2, 3, 3, 4])
        else:
            k = rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5])
        for _ in range(k):
            cabin = "business" if rng.random() < 0.15 else "economy"
            if f["status"] == "departed":
                status = "flown"
            elif f["status"] == "cancelled" and f["sched_dep"] < "2025-01-14":
                status = "voucher" if rng.random() < 0.7 else "refunded"
            else:
                status = "ticketed" if rng.random() < 0.92 else "cancelled"
            add_booking(f, rng.choice(travelers), cabin, status)

    def pick(tier: str, skip: set) -> dict:
        for t in travelers:
            if t["loyalty_tier"] == tier and t["traveler_id"] not in skip:
                skip.add(t["traveler_id"])
                return t
        raise RuntimeError(tier)

    used: set[int] = set()
    add_booking(fixed["dca"], pick("gold", used), "economy", "ticketed", "2024-12-02 10:14")
    add_booking(fixed["dca"], pick("none", used), "economy", "ticketed", "2024-12-09 16:40")
    add_booking(fixed["dca"], pick("silver", used), "economy", "cancelled", "2024-11-21 08:03")
    add_booking(fixed["boi"], pick("none", used), "economy", "ticketed", "2024-10-15 09:30")
    add_booking(fixed["boi"], pick("silver", used), "economy", "ticketed", "2024-11-02 13:12")
    add_booking(fixed["boi"], pick("platinum", used), "economy", "ticketed", "2024-12-20 18:55")
    add_booking(fixed["mx"], pick("gold", used), "economy", "ticketed")
    add_booking(fixed["mx"], pick("none", used), "business", "ticketed")
    add_booking(fixed["inbound"], pick("platinum", used), "economy", "ticketed")
    add_booking(fixed["inbound"], pick("none", used), "economy", "ticketed")
    add_booking(fixed["cos"], pick("gold", used), "business", "ticketed")
    rng.shuffle(bookings)

    # ---- voucher history (earlier events)
    vouchers = []
    old_bands = [(0, 499, 125, 250), (500, 999, 175, 350), (1000, 1749, 225, 450), (1750, 99999, 275, 600)]
    by_id = {f["flight_id"]: f for f in b.flights}
    for bk in bookings:
        if bk["status"] == "voucher":
            dist = by_id[bk["flight_id"]]["distance_mi"]
            band = next(x for x in old_bands if x[0] <= dist <= x[1])
            vouchers.append((bk["booking_ref"], float(band[2] if bk["cabin"] == "economy" else band[3]),
                             "WX13-WASATCH", "2025-01-13"))
    for _ in range(scale.n_rows(25)):
        vouchers.append((new_ref(), float(rng.choice([125, 175, 225, 250, 275, 350, 450])),
                         rng.choice(["WX-1219-ORD", "ATC-1230-EWR", "MX-GOODWILL", "WX-0106-DFW", "SVC-RECOVERY"]),
                         (datetime(2024, 11, 1) + timedelta(days=rng.randint(0, 70))).strftime("%Y-%m-%d")))
    rng.shuffle(vouchers)

    # ---- write database
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript("""
        create table airports(code text primary key, name text, city text, state text);
        create table flights(flight_id integer primary key, carrier text, flight_no text, origin text, dest text,
            sched_dep text, sched_arr text, distance_mi integer, equipment text, status text, cancel_code text);
        create table seat_inventory(flight_id integer, cabin text, seats_open integer, primary key(flight_id, cabin));
        create table travelers(traveler_id integer primary key, full_name text, email text, company text,
            loyalty_tier text, home_airport text, notes text);
        create table bookings(booking_ref text primary key, traveler_id integer, flight_id integer, cabin text,
            fare_usd real, booked_at text, status text, ssr text, agent_notes text, original_flight_id integer);
        create table vouchers(voucher_id integer primary key autoincrement, booking_ref text, amount_usd real,
            reason_code text, issued_at text);
    """)
    con.executemany("insert into airports values (?,?,?,?)", [(k, v[0], v[1], v[2]) for k, v in AIRPORTS.items()])
    for f in b.flights:
        con.execute("insert into flights values (?,?,?,?,?,?,?,?,?,?,?)",
                    (f["flight_id"], f["carrier"], f["flight_no"], f["origin"], f["dest"], f["sched_dep"],
                     f["sched_arr"], f["distance_mi"], f["equipment"], f["status"], f["cancel_code"]))
        con.execute("insert into seat_inventory values (?,?,?)", (f["flight_id"], "economy", f["econ"]))
        con.execute("insert into seat_inventory values (?,?,?)", (f["flight_id"], "business", f["bus"]))
    for t in travelers:
        con.execute("insert into travelers values (?,?,?,?,?,?,?)", tuple(t.values()))
    for bk in bookings:
        con.execute("insert into bookings values (?,?,?,?,?,?,?,?,?,?)", tuple(bk.values()))
    con.executemany("insert into vouchers(booking_ref, amount_usd, reason_code, issued_at) values (?,?,?,?)",
                    vouchers)
    con.commit()
    con.close()

    _write_files(root / "workspace", scale, rng)


# ----------------------------------------------------------------------------------------------- files

EVENT_MEMO = """# IROPS-2025-014 — Front Range snow event (DEN / COS)

Issued: 2025-01-14 05:10 MT by the duty manager, Summit Corporate Travel 24/7 desk
Status: **ACTIVE**

## Situation
An upslope snow band stalled over the Front Range overnight. Denver International (DEN) and
Colorado Springs (COS) ran single-runway operations until mid-afternoon and the carriers cancelled a
large part of the morning and early-afternoon bank. Carriers have published travel waivers; the
desk rebooks our travelers under them rather than waiting for carrier auto-reaccommodation.

## Scope
This event covers **ticketed** bookings on flights that meet ALL of the following:

- departure airport **DEN or COS**;
- scheduled departure on **2025-01-14** (local time);
- flight status `cancelled` with cancellation code **`WX`** (weather).

Not covered by this event:

- mechanical (`MX`), crew (`CREW`) and air-traffic-control (`ATC`) cancellations — carriers
  reaccommodate those themselves under their contract of carriage; leave those bookings alone;
- flights *into* DEN/COS cancelled at other airports (they will be handled under IROPS-2025-015);
- bookings the traveler had already cancelled, and anything handled in earlier events.

## Rebooking window
For this event the waiver allows alternates that depart **after** the cancelled flight's scheduled
departure and **no more than 36 hours after it** (inclusive). Later flights are not covered by
the waivers and must not be used.

## Compensation
If the rebooking policy finds no eligible alternate, issue a travel voucher from the *current*
voucher band table (`reference/voucher_bands.csv`), using the cancelled flight's distance and the
booked cabin. Platinum travelers receive **150%** of the band amount (round to whole dollars).
Every voucher of this event carries the reason code **`WX14-FRONTRANGE`**.

## Contacts
Duty manager: R. Castellanos (ext. 4410) · Carrier desk UA/WN: ext. 4402 · F9/AA: ext. 4403
"""

POLICY = """# IROPS rebooking policy

Version 3.2 · effective 2024-10-01 · owner: Traveler Care

This policy applies whenever an active IROPS event memo (folder `ops/irops/`) tells the desk to
rebook travelers. The event memo decides *which* bookings are in scope, the rebooking window and
the compensation; this policy decides *how* seats are handed out.

## 1. Order of processing
Seats on alternate flights are scarce during an event, so bookings are processed one at a time in
this priority order:

1. loyalty tier — Platinum first, then Gold, then Silver, then travelers without status;
2. within a tier, the booking made earliest (`booked_at`) goes first;
3. any remaining tie: booking reference in alphabetical order.

A booking takes its seat before the next booking is considered: a seat given to an earlier
booking is no longer available to later ones.

## 2. Eligible alternate flights
An alternate flight is eligible for a booking when all of these hold:

- same marketing carrier as the cancelled flight (waivers do not allow interline moves);
- same departure airport;
- arrival at the original arrival airport **or at a co-terminal of it** — the airport groups in
  `reference/coterminals.json`;
- the flight is `scheduled` (not cancelled, not departed);
- it departs inside the window given in the event memo;
- it has at least one open seat in the **booked cabin** (no upgrades or downgrades under a waiver).

## 3. Choice
Rebook onto the eligible flight with the earliest scheduled departure; if two depart at the same
minute, take the lower flight id. If there is no eligible flight, compensate as the event memo says.

## 4. Housekeeping
- Hotel and meal vouchers for stranded travelers are arranged by phone and are not recorded here.
- Do not split a booking; one booking is one traveler.
- Notify the travel arranger by the usual channel after the batch is complete.
"""

COTERMINALS = {
    "version": "2024-09",
    "description": "Airports treated as equivalent arrival points for waiver rebooking.",
    "groups": {
        "NYC": ["JFK", "LGA", "EWR"],
        "CHI": ["ORD", "MDW"],
        "WAS": ["IAD", "DCA", "BWI"],
        "BAY": ["SFO", "OAK", "SJC"],
        "LAX": ["LAX", "BUR", "SNA"],
        "HOU": ["IAH", "HOU"],
        "DFW": ["DFW", "DAL"],
        "SFL": ["MIA", "FLL"],
    },
    "notes": "Departure airports are never substituted. Groups apply to arrivals only.",
}

BANDS = [("0", "499", "150", "300"), ("500", "999", "200", "400"), ("1000", "1749", "250", "500"),
         ("1750", "2999", "300", "650"), ("3000", "99999", "400", "800")]
OLD_BANDS = [("0", "499", "125", "250"), ("500", "999", "175", "350"), ("1000", "1749", "225", "450"),
             ("1750", "99999", "275", "600")]

OLD_EVENTS = [
    ("IROPS-2025-011_wasatch_snow", "Wasatch snow (SLC)", "SLC", "2025-01-13", "WX", 48, "WX13-WASATCH", "CLOSED"),
    ("IROPS-2025-006_dfw_ice", "North Texas ice storm (DFW / DAL)", "DFW and DAL", "2025-01-06", "WX", 48,
     "WX-0106-DFW", "CLOSED"),
    ("IROPS-2024-219_ord_lake_effect", "Lake-effect snow (ORD / MDW)", "ORD and MDW", "2024-12-19", "WX", 24,
     "WX-1219-ORD", "CLOSED"),
    ("IROPS-2024-230_ewr_atc", "Newark ground delay program", "EWR", "2024-12-30", "ATC", 24, "ATC-1230-EWR",
     "CLOSED"),
    ("IROPS-2024-201_sea_windstorm", "Puget Sound windstorm (SEA)", "SEA", "2024-11-19", "WX", 36,
     "WX-1119-SEA", "CLOSED"),
    ("IROPS-2024-188_atl_storms", "Thunderstorm line (ATL)", "ATL", "2024-10-28", "WX", 24, "WX-1028-ATL",
     "CLOSED"),
    ("IROPS-2024-176_mco_hurricane", "Hurricane Milton (MCO / TPA)", "MCO and TPA", "2024-10-09", "WX", 72,
     "WX-1009-MCO", "CLOSED"),
    ("IROPS-2024-151_it_outage", "Carrier IT outage (DL / UA hubs)", "all hubs", "2024-07-19", "SYS", 48,
     "SYS-0719", "CLOSED"),
    ("IROPS-2025-015_den_inbound_draft", "Front Range snow — inbound flights (DRAFT)", "any airport (flights to "
     "DEN/COS)", "2025-01-14", "WX", 24, "WX14-INBOUND", "DRAFT — do not action"),
    ("IROPS-2024-122_phx_heat", "Extreme heat weight restrictions (PHX)", "PHX", "2024-07-11", "WX", 24,
     "WX-0711-PHX", "CLOSED"),
]

OTHER_POLICIES = {
    "baggage_and_equipment.md": "# Baggage and equipment\n\nCorporate travelers may expense one checked bag on "
    "flights over 2 hours. Equipment cases (trade-show kits, survey gear) must be pre-declared with the carrier; "
    "oversize fees above $200 need travel-manager approval.\n\nDuring irregular operations, bags follow the "
    "carrier's reaccommodation; the desk does not re-tag bags.\n",
    "unaccompanied_minors.md": "# Unaccompanied minors\n\nNot applicable to corporate programs except family "
    "relocation packages. Never rebook a UMNR onto a connection or the last flight of the day. Escalate to a "
    "supervisor.\n",
    "pets_in_cabin.md": "# Pets in cabin\n\nBookings with SSR PETC need the carrier's pet desk confirmation "
    "before any change. Carriers cap pets per cabin; re-confirm after a rebooking.\n",
    "travel_approval_thresholds.md": "# Approval thresholds\n\n| Item | Needs approval above |\n|---|---|\n"
    "| Domestic economy fare | $900 |\n| Domestic business | any |\n| Hotel per night | $289 |\n| Car rental "
    "per day | $95 |\n\nIRROPS rebookings under a carrier waiver do not need approval.\n",
    "duty_of_care.md": "# Duty of care\n\nDuring events the desk checks in with travelers who are stranded more "
    "than 6 hours. Use the traveler's preferred channel (see traveler notes).\n",
    "refunds_and_credits.md": "# Refunds and credits\n\nNon-refundable tickets cancelled by the traveler become "
    "carrier credit. The desk never converts a traveler cancellation into a voucher.\n",
    "lounge_access.md": "# Lounge access\n\nDay passes may be expensed for delays over 4 hours for Gold and "
    "Platinum travelers only.\n",
    "irops_rebooking_policy_v3.1_ARCHIVED.md": "# IROPS rebooking policy (v3.1 — ARCHIVED 2024-09-30)\n\n"
    "Superseded by v3.2. Under v3.1 bookings were processed strictly in booking order (first booked, first "
    "served) and interline moves were allowed when the carrier agreed. Do not use.\n",
    "hotel_program.md": "# Preferred hotel program\n\nDistressed-passenger rates at DEN: Westin DEN $149, Hyatt "
    "Place DEN $119, Hilton Garden Inn $124. Book by phone during events.\n",
}

REF_NOISE = {
    "fleet_seating.csv": [("equipment", "economy_seats", "business_seats"), ("E175", "64", "12"),
                          ("CRJ-900", "64", "12"), ("A220-300", "118", "12"), ("737-700", "126", "12"),
                          ("737-800", "150", "16"), ("A320neo", "150", "12"), ("737 MAX 8", "156", "16"),
                          ("A321", "176", "20"), ("757-200", "160", "16")],
    "carrier_desks.csv": [("carrier", "desk_phone", "waiver_portal"), ("UA", "+1-800-555-0101", "united/waivers"),
                          ("WN", "+1-800-555-0102", "swa/travel-advisories"),
                          ("F9", "+1-800-555-0103", "flyfrontier/waivers"),
                          ("AA", "+1-800-555-0104", "aa/travel-alerts")],
    "fare_basis_families.csv": [("prefix", "family", "changeable"), ("Y", "full fare", "yes"),
                                ("B", "flex", "yes"), ("M", "standard", "fee"), ("K", "saver", "fee"),
                                ("N", "basic", "no")],
    "client_travel_managers.csv": [("company", "travel_manager", "phone")] + [
        (c, f"{a} {b}", f"+1-303-555-{1100 + i:04d}") for i, ((c, _), a, b) in
        enumerate(zip(COMPANIES, ["Rhea", "Tomas", "Ines", "Kofi", "Lena", "Marek", "Nora", "Omar", "Pia", "Ravi",
                                  "Sana", "Teo", "Uma", "Vik"], LAST, strict=False))],
    "airport_hotel_rates.csv": [("airport", "hotel", "distressed_rate_usd"), ("DEN", "Westin DEN", "149"),
                                ("DEN", "Hyatt Place DEN", "119"), ("COS", "Hilton Garden Inn COS", "109"),
                                ("SLC", "Radisson SLC", "115")],
    "lounge_locations.csv": [("airport", "lounge", "terminal"), ("DEN", "United Club", "B"),
                             ("DEN", "Centurion", "A"), ("PHX", "Admirals Club", "4"), ("ORD", "Polaris", "1")],
    "corporate_discounts.csv": [("company", "carrier", "discount_pct")] + [
        (c, rng_c, str(p)) for (c, _), rng_c, p in zip(COMPANIES, ["UA", "WN", "F9", "AA"] * 4,
                                                       [4, 6, 8, 3, 5, 7, 9, 4, 6, 5, 8, 3, 7, 6], strict=False)],
    "voucher_bands_2023.csv": [("min_miles", "max_miles", "economy_usd", "business_usd")] + list(OLD_BANDS),
}


def _csv_text(rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


def _write(ws: Path, rel: str, text: str) -> None:
    p = ws / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def _old_memo(ev) -> str:
    slug, title, where, date, code, hours, reason, status = ev
    return (f"# {slug.split('_')[0]} — {title}\n\nStatus: **{status}**\n\n## Scope\nTicketed bookings on flights "
            f"departing {where} on {date} cancelled with code `{code}`.\n\n## Rebooking window\nAlternates may "
            f"depart up to **{hours} hours** after the original departure.\n\n## Compensation\nVouchers per the "
            f"band table in force at the time; reason code `{reason}`. No tier uplift for this event.\n\n"
            f"## Close-out\nAll affected bookings were actioned; see the daily ops report.\n")


def _ops_report(rng: random.Random, day: datetime) -> str:
    lines = [f"# Daily ops report — {day:%A %d %B %Y}", "", "| Metric | Value |", "|---|---|"]
    lines.append(f"| Calls handled | {rng.randint(180, 620)} |")
    lines.append(f"| Avg. speed of answer | {rng.randint(14, 95)} s |")
    lines.append(f"| Bookings changed | {rng.randint(20, 140)} |")
    lines.append(f"| Vouchers issued | {rng.randint(0, 40)} |")
    lines.append("")
    lines.append("## Notes")
    for _ in range(rng.randint(2, 4)):
        lines.append("- " + rng.choice([
            "Carrier desk hold times above 40 min in the afternoon.",
            "Two travelers missed connections at ORD; rebooked by carrier.",
            "GDS latency spike 14:10–14:35; no data loss.",
            "Reminder: vouchers are only issued under an active event memo.",
            "New traveler profiles loaded for Kestrel Robotics.",
            "Travel manager at Quarry Peak asked for a weekly disruption summary.",
            "Staffing: two agents out sick, overflow to Phoenix team.",
            "WN published a flexible-travel waiver for SLC; no action needed for our travelers.",
        ]))
    return "\n".join(lines) + "\n"


def _write_files(ws: Path, scale: Scale, rng: random.Random) -> None:
    # kind 1: IROPS event memos (the active one plus closed/draft ones)
    n = scale.n_files(3)
    _write(ws, "ops/irops/IROPS-2025-014_front_range_snow.md", EVENT_MEMO)
    for ev in OLD_EVENTS[: n - 1]:
        _write(ws, f"ops/irops/{ev[0]}.md", _old_memo(ev))
    # kind 2: policies
    n = scale.n_files(3)
    _write(ws, "policies/irops_rebooking_policy.md", POLICY)
    for name in list(OTHER_POLICIES)[: n - 1]:
        _write(ws, f"policies/{name}", OTHER_POLICIES[name])
    # kind 3: reference data
    n = scale.n_files(3)
    _write(ws, "reference/coterminals.json", json.dumps(COTERMINALS, indent=2) + "\n")
    _write(ws, "reference/voucher_bands.csv",
           _csv_text([("min_miles", "max_miles", "economy_usd", "business_usd")] + BANDS))
    for name in list(REF_NOISE)[: n - 2]:
        _write(ws, f"reference/{name}", _csv_text(REF_NOISE[name]))
    # kind 4: daily ops reports
    n = scale.n_files(3)
    for i in range(n):
        day = datetime(2025, 1, 13) - timedelta(days=i)
        _write(ws, f"reports/daily/ops_{day:%Y-%m-%d}.md", _ops_report(rng, day))
