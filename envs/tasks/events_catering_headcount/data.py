"""Catering headcount: events, ticket types, registrations, caterers and draft catering orders.

The guidelines (entitlements, diet mapping, crew, buffer, minimum order, dinners), the crew list and
the date-dependent caterer rates exist only as workspace files. Planted at every scale: a three-day
summit that crosses a caterer rate change, a small one-day event below the minimum order, a cancelled
and a postponed event with draft orders, and events just outside the window.
"""

from __future__ import annotations

import csv
import io
import json
import random
import shutil
import sqlite3
from datetime import date, datetime, timedelta
from pathlib import Path

WINDOW = (date(2024, 10, 14), date(2024, 10, 20))
CATERERS = [
    ("BIA", "Bia Catering Co.", "Saoirse Kenny", "orders@bia-catering.example.ie"),
    ("GRN", "Greenhouse Kitchen", "Tomas Herrera", "events@greenhouse-kitchen.example.ie"),
    ("SAV", "Savour Events Ltd", "Anna Lisowska", "bookings@savour.example.ie"),
    ("HRB", "Harbour Hospitality", "Colm Fitzgerald", "catering@harbourhosp.example.ie"),
]
# (caterer, meal, standard, special, valid_from, valid_to)
RATES = [
    ("BIA", "lunch", 19.50, 23.00, "2023-09-01", "2024-08-31"),
    ("BIA", "dinner", 44.00, 49.00, "2023-09-01", "2024-08-31"),
    ("BIA", "lunch", 21.00, 24.50, "2024-09-01", "2024-10-16"),
    ("BIA", "dinner", 46.00, 52.00, "2024-09-01", "2024-10-16"),
    ("BIA", "lunch", 22.75, 26.25, "2024-10-17", "2025-08-31"),
    ("BIA", "dinner", 48.50, 55.00, "2024-10-17", "2025-08-31"),
    ("GRN", "lunch", 17.25, 19.75, "2023-09-01", "2024-08-31"),
    ("GRN", "dinner", 39.00, 42.00, "2023-09-01", "2024-08-31"),
    ("GRN", "lunch", 18.40, 21.10, "2024-09-01", "2025-08-31"),
    ("GRN", "dinner", 41.50, 44.90, "2024-09-01", "2025-08-31"),
    ("SAV", "lunch", 24.00, 27.50, "2024-01-01", "2024-10-31"),
    ("SAV", "dinner", 58.00, 63.00, "2024-01-01", "2024-10-31"),
    ("SAV", "lunch", 25.20, 28.90, "2024-11-01", "2025-10-31"),
    ("SAV", "dinner", 60.90, 66.20, "2024-11-01", "2025-10-31"),
    ("HRB", "lunch", 16.80, 20.40, "2024-03-01", "2025-02-28"),
    ("HRB", "dinner", 37.50, 41.00, "2024-03-01", "2025-02-28"),
]
DIETS = ["none", "vegetarian", "vegan", "gluten_free", "halal", "kosher"]
DIET_W = [70, 12, 6, 5, 4, 3]
REG_STATUS = ["confirmed", "cancelled", "waitlisted", "pending_payment"]
REG_W = [75, 12, 6, 7]
VENUES = ["Convention Centre Dublin", "Aviva Stadium Suites", "RDS Concert Hall", "Croke Park Meeting Centre",
          "Clayton Hotel Cork", "Galway Bay Hotel", "Printworks, Dublin Castle", "The Round Room, Mansion House"]
TOPICS = ["FinTech", "MedTech", "Data Protection", "Renewable Energy", "Supply Chain", "Cloud Security",
          "Digital Health", "AgriFood Innovation", "Public Procurement", "HR Leaders", "Marketing Analytics",
          "Smart Cities", "Insurance Risk", "Life Sciences Quality", "Tax & Treasury", "Legal Tech"]
KINDS = ["Summit", "Forum", "Conference", "Expo", "Masterclass", "Symposium", "Roundtable", "Congress"]
FIRST = ["Aoife", "Ciaran", "Niamh", "Declan", "Siobhan", "Padraig", "Orla", "Eoin", "Grainne", "Ronan", "Maeve",
         "Tadhg", "Sarah", "James", "Priya", "Lukas", "Marta", "Chen", "Fatima", "Oisin", "David", "Rachel", "Tomasz",
         "Ines", "Kwame", "Yuki", "Sofia", "Mark", "Helen", "Brian"]
LAST = ["Murphy", "Kelly", "O'Brien", "Walsh", "Byrne", "Ryan", "O'Connor", "Doyle", "McCarthy", "Gallagher",
        "Nolan", "Quinn", "Kowalski", "Schmidt", "Nair", "Rossi", "Okafor", "Tanaka", "Fernandes", "Lynch",
        "Brennan", "Farrell", "Power", "Daly"]
COMPANIES = ["Accenture", "Stripe", "Medtronic", "ESB Networks", "Kerry Group", "Pfizer Ringaskiddy", "AIB",
             "Workday", "Intercom", "HSE", "Glanbia", "Fexco", "Irish Water", "Trinity College", "UCD", "Fiserv",
             "Analog Devices", "Ornua", "Boston Scientific", "Independent"]


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
create table caterers (code text primary key, name text, contact text, email text);
create table events (id text primary key, name text, venue text, start_date text, days integer, status text,
    caterer_code text references caterers(code), organiser text, expected_attendance integer);
create table ticket_types (id integer primary key, event_id text references events(id), code text, name text,
    price_eur real, includes_lunch integer, includes_dinner integer, valid_day integer);
create table registrations (id integer primary key, event_id text references events(id),
    ticket_type_id integer references ticket_types(id), attendee_name text, email text, company text,
    status text, dietary text, registered_at text, notes text);
create table catering_orders (id integer primary key, event_id text references events(id), event_day integer,
    meal text, standard_qty integer, vegetarian_qty integer, vegan_qty integer, gluten_free_qty integer,
    halal_qty integer, status text, updated_at text);
"""


def build(root: Path, scale, seed: int) -> None:
    rng = random.Random(seed)
    root = Path(root)
    _reset(root)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)
    for c in CATERERS:
        con.execute("insert into caterers values (?,?,?,?)", c)

    # events ------------------------------------------------------------------------------------
    planted = [  # name, start, days, status, caterer, expected
        ("Atlantic FinTech Summit 2024", date(2024, 10, 15), 3, "scheduled", "BIA", 70),
        ("Clinical Data Forum", date(2024, 10, 18), 1, "scheduled", "GRN", 22),
        ("Smart Cities Roundtable", date(2024, 10, 16), 1, "cancelled", "SAV", 40),
        ("Supply Chain Congress", date(2024, 10, 17), 2, "postponed", "HRB", 55),
        ("Tax & Treasury Masterclass", date(2024, 10, 12), 3, "scheduled", "GRN", 45),
        ("Legal Tech Expo", date(2024, 10, 21), 2, "scheduled", "BIA", 60),
    ]
    events = []
    for name, start, days, status, cat, exp in planted:
        events.append({"name": name, "start": start, "days": days, "status": status, "cat": cat, "exp": exp})
    names = {e["name"] for e in events}
    while len(events) < scale.n_rows(15):
        name = f"{rng.choice(TOPICS)} {rng.choice(KINDS)} {rng.choice(['2024', 'Ireland', 'Autumn', 'Live'])}"
        if name in names:
            continue
        names.add(name)
        if rng.random() < 0.22:
            start = WINDOW[0] + timedelta(days=rng.randint(0, 6))
        else:
            start = date(2024, 9, 2) + timedelta(days=rng.randint(0, 88))
        days = rng.choices([1, 2, 3], weights=[50, 30, 20])[0]
        status = rng.choices(["scheduled", "cancelled", "postponed"], weights=[90, 6, 4])[0]
        events.append({"name": name, "start": start, "days": days, "status": status,
                       "cat": rng.choice([c[0] for c in CATERERS]), "exp": rng.randint(20, 60)})
    events.sort(key=lambda e: (e["start"], e["name"]))
    for i, e in enumerate(events):
        e["id"] = f"EV-24{i * 7 + 101:03d}" if i < 128 else f"EV-25{i:03d}"
        con.execute("insert into events values (?,?,?,?,?,?,?,?,?)",
                    (e["id"], e["name"], rng.choice(VENUES), e["start"].isoformat(), e["days"], e["status"], e["cat"],
                     f"{rng.choice(FIRST)} {rng.choice(LAST)}", e["exp"]))

    # ticket types and registrations ------------------------------------------------------------
    tt_id = 0
    reg_rows = []
    for e in events:
        types = [("FULL", "Full pass", rng.choice([295, 395, 495, 650]), 1, 1, None),
                 ("EXPO", "Expo hall only", rng.choice([0, 25, 45]), 0, 0, None),
                 ("VIRT", "Virtual attendance", rng.choice([49, 79, 99]), 0, 0, None),
                 ("SPKR", "Speaker", 0, 1, 1, None)]
        if e["days"] > 1:
            for d in range(1, e["days"] + 1):
                types.append((f"DAY{d}", f"Day pass - day {d}", rng.choice([145, 195, 245]), 1, 0, d))
        if rng.random() < 0.5 or e["name"].startswith("Atlantic"):
            types.append(("STUD", "Student (lunch only)", rng.choice([45, 75]), 1, 0, None))
        ids = []
        for code, tname, price, lunch, dinner, vday in types:
            tt_id += 1
            ids.append((tt_id, code))
            con.execute("insert into ticket_types values (?,?,?,?,?,?,?,?)",
                        (tt_id, e["id"], code, tname, float(price), lunch, dinner, vday))
        weights = {"FULL": 40, "EXPO": 14, "VIRT": 12, "SPKR": 6, "STUD": 8}
        n = e["exp"] if e["name"] != "Clinical Data Forum" else 14
        if e["name"].startswith("Atlantic"):
            code_id = {c: t for t, c in ids}
            for code, status, diet, note in (("FULL", "confirmed", "kosher", "Kosher meals please"),
                                             ("FULL", "confirmed", "halal", ""),
                                             ("DAY2", "confirmed", "vegetarian", "Day 2 only"),
                                             ("DAY3", "confirmed", "gluten_free", "Coeliac"),
                                             ("SPKR", "confirmed", "vegan", "Speaker - panel 2"),
                                             ("STUD", "confirmed", "none", ""),
                                             ("FULL", "pending_payment", "none", "Invoice requested"),
                                             ("FULL", "waitlisted", "vegetarian", "")):
                reg_rows.append((e["id"], code_id[code], f"{rng.choice(FIRST)} {rng.choice(LAST)}",
                                 f"delegate{rng.randint(100, 999)}@atlanticfintech.example", rng.choice(COMPANIES),
                                 status, diet, f"2024-09-{rng.randint(1, 28):02d} 10:{rng.randint(10, 59)}", note))
        for _ in range(n):
            tid, code = rng.choices(ids, weights=[weights.get(c, 9) for _, c in ids])[0]
            first, last = rng.choice(FIRST), rng.choice(LAST)
            company = rng.choice(COMPANIES)
            reg = datetime(2024, 6, 1) + timedelta(minutes=rng.randint(0, 130 * 24 * 60))
            status = rng.choices(REG_STATUS, weights=REG_W)[0]
            diet = rng.choices(DIETS, weights=DIET_W)[0]
            note = rng.choice(["", "", "", "", "Wheelchair access", "Arriving late day 1", "Invoice to company",
                               "Nut allergy (severe)", "Needs receipt", "Plus-one for dinner requested",
                               "Prefers aisle seat"])
            reg_rows.append((e["id"], tid, f"{first} {last}",
                             f"{first.lower()}.{last.lower().replace(chr(39), '')}@{company.split()[0].lower()}.example",
                             company, status, diet, reg.strftime("%Y-%m-%d %H:%M"), note))
    reg_rows.sort(key=lambda r: (r[7], r[0]))
    for i, r in enumerate(reg_rows):
        con.execute("insert into registrations values (?,?,?,?,?,?,?,?,?,?)", (i + 1, *r))

    # draft catering orders (initial estimates) and finalised orders of past events --------------
    oid = 0
    for e in events:
        in_window = WINDOW[0] <= e["start"] <= WINDOW[1]
        past = e["start"] < date(2024, 10, 1)
        if not (in_window or past or rng.random() < 0.5):
            continue
        if in_window and e["status"] == "scheduled" and rng.random() < 0.3 and not e["name"].startswith("Atlantic"):
            continue  # no draft yet
        status = "final" if past else "draft"
        for d in range(1, e["days"] + 1):
            for meal in ("lunch", "dinner"):
                if meal == "dinner" and d == e["days"]:
                    continue
                est = int(e["exp"] * rng.uniform(0.6, 1.0))
                oid += 1
                con.execute("insert into catering_orders values (?,?,?,?,?,?,?,?,?,?,?)",
                            (oid, e["id"], d, meal, est, est // 8, est // 16, est // 20, est // 25, status,
                             (e["start"] - timedelta(days=rng.randint(10, 40))).isoformat()))
    con.commit()
    con.close()

    # workspace ---------------------------------------------------------------------------------
    _write(root, "catering/catering_guidelines.md", GUIDELINES)
    _write(root, "catering/archive/catering_guidelines_2023.md", GUIDELINES_2023)
    _write(root, "catering/caterer_rates.csv", _csv(
        ["caterer_code", "meal", "standard_price_eur", "special_diet_price_eur", "valid_from", "valid_to"],
        [[c, m, f"{s:.2f}", f"{sp:.2f}", a, b] for c, m, s, sp, a, b in RATES]))
    crew = {}
    for e in events:
        if e["name"].startswith("Atlantic"):
            crew[e["id"]] = 8
        elif e["name"].startswith("Clinical"):
            continue
        elif rng.random() < 0.5:
            crew[e["id"]] = rng.randint(2, 9)
    _write(root, "config/event_crew.json", json.dumps({
        "description": "Production crew fed at lunch on each event day (AV, registration desk, stewards)",
        "default_crew": 3, "crew_by_event": dict(sorted(crew.items()))}, indent=2) + "\n")

    evmap = {e["id"]: e for e in events}
    ev_ids = sorted(evmap)
    for i in range(scale.n_files(3)):
        cat = rng.choice(CATERERS)
        d = date(2024, 9, 10) + timedelta(days=rng.randint(0, 25))
        _write(root, f"correspondence/{d.isoformat()}_{cat[0].lower()}_{i + 1:02d}.txt", _email(rng, cat, d))
    for i in range(scale.n_files(3)):
        e = evmap[rng.choice(ev_ids)]
        _write(root, f"run_sheets/{e['id']}_run_sheet_v{i % 3 + 1}.md", _run_sheet(rng, e))
    for i in range(scale.n_files(2)):
        e = evmap[rng.choice(ev_ids)]
        _write(root, f"feedback/{e['id']}_survey_{i + 1:02d}.csv", _survey(rng))


def _email(rng, cat, d: date) -> str:
    pool = ["Please confirm final numbers no later than 72 hours before each service.",
            "Our vegan menu this season is fully kosher-certified.",
            "We can offer a coffee station upgrade at EUR {p} per head.",
            "Delivery access at the venue is via the loading bay; please send the dock booking reference.",
            "Our invoices will now be issued via the new portal from {m}.",
            "We have updated allergen matrices for the autumn menus (attached).",
            "Staff will arrive 90 minutes before the first service."]
    body = "\n".join(s.format(p=f"{rng.uniform(2.5, 6.5):.2f}", m=rng.choice(["October", "November"]))
                     for s in rng.sample(pool, 3))
    return f"From: {cat[3]}\nDate: {d.isoformat()}\nSubject: Upcoming events\n\nHi team,\n\n{body}\n\n" \
           f"Best,\n{cat[2]}\n{cat[1]}\n"


def _run_sheet(rng, e) -> str:
    lines = [f"# Run sheet - {e['name']}", "", f"Start date: {e['start'].isoformat()}  |  Days: {e['days']}", ""]
    t = 8 * 60
    for item in rng.sample(["Registration opens", "Welcome address", "Keynote", "Panel discussion", "Coffee break",
                            "Lunch", "Breakout sessions", "Fireside chat", "Closing remarks", "Networking"], 7):
        lines.append(f"- {t // 60:02d}:{t % 60:02d} {item}")
        t += rng.choice([30, 45, 60, 75])
    lines += ["", "Catering numbers: see the catering order (not this sheet).", ""]
    return "\n".join(lines)


def _survey(rng) -> str:
    rows = [[i + 1, rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 5),
             rng.choice(["", "Great speakers", "Lunch queue too long", "More vegan options please", "Room too warm",
                         "Excellent networking", "Wi-Fi unreliable"])] for i in range(rng.randint(15, 40))]
    return _csv(["response", "content_score", "venue_score", "catering_score", "comment"], rows)


GUIDELINES = """# Catering guidelines for delegate events

Owner: Event Operations. Version 3 (September 2024) - replaces the 2023 guidelines in catering/archive/.

Final catering orders are placed per event, per event day and per meal service, with the caterer
named on the event, using the headcount rules below.

## 1. Who is fed
* Only registrations with status `confirmed` count. Pending payment, waitlisted and cancelled
  registrations are not catered for.
* A registration is entitled to a meal only if its ticket type includes that meal
  (`includes_lunch` / `includes_dinner`). A ticket with a `valid_day` is only valid on that event day
  (day 1 = the start date); tickets without a valid_day cover every day.

## 2. Services
* Lunch is served on every event day.
* Dinner is served on every evening of a multi-day event **except the final day**. One-day events
  have no dinner.
* A service nobody is entitled to is not ordered.

## 3. Meal types
Order meals by dietary requirement: standard (`none`), vegetarian, vegan, gluten_free and halal.
Our caterers' vegan menus are kosher-certified: **kosher requests are ordered as vegan**.

## 4. Crew, buffer and minimum
1. Crew: add the event's production crew (config/event_crew.json; `default_crew` if the event is not
   listed) to the standard meals of every **lunch**. Crew do not take dinner.
2. Buffer: then add one extra standard meal for every 20 standard meals or part thereof
   (buffer = ceil(standard / 20)).
3. Minimum order: caterers require at least 20 meals per service (all meal types together). If a
   service is below 20 after the buffer, top up the standard meals to reach 20.

## 5. Prices
Price each service with the caterer's rate valid on the **date of that service**
(catering/caterer_rates.csv). Standard meals are charged the standard price; every other meal type
the special-diet price.

## 6. Cancelled or postponed events
Do not order for events that are cancelled or postponed; cancel any catering orders they still have.
"""

GUIDELINES_2023 = """# Catering guidelines (2023) [ARCHIVED - do not use]

* Cater for confirmed and pending-payment registrations.
* Add a 10% buffer to every meal type.
* Crew meals are ordered separately by the production company.
* Use the rate card valid on the event start date.
"""
