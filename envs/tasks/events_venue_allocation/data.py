"""Venue allocation: venues, rooms, clients, existing bookings and booking requests.

Rules live only in the workspace: layout capacity percentages (CSV), turnaround buffer and tier
priority (JSON), credit holds (CSV), room closures (memo) and the allocation rules (Markdown).
The Harbourside Centre (VEN-01) carries a planted scenario at every scale: priority conflicts, a
tentative and a cancelled booking, an exact-buffer boundary, a closure and a banquet capacity trap.
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

LAYOUT_PCT = {"theatre": 100, "reception": 120, "banquet": 60, "classroom": 50, "cabaret": 45, "boardroom": 35}
TURNAROUND = 60
TIERS = ["platinum", "gold", "standard"]

FIXED_CLIENTS = [
    ("CL-1001", "Veritas Pharma Ireland", "platinum"),
    ("CL-1002", "Lumen Analytics", "gold"),
    ("CL-1003", "Brennan & Doyle Solicitors", "standard"),
    ("CL-1004", "Cobalt Robotics", "standard"),
    ("CL-1005", "Sable Insurance Group", "gold"),
    ("CL-1006", "Greenway Housing Association", "standard"),
    ("CL-1007", "Halden Medical Devices", "platinum"),
    ("CL-1008", "Fionn Credit Union", "gold"),
]
CO_A = ["Atlas", "Brightwave", "Corrib", "Delta", "Emerald", "Fastnet", "Glenmore", "Harbour", "Inis", "Juniper",
        "Keel", "Liffey", "Moher", "Nexus", "Orbit", "Pillar", "Quarry", "Rowan", "Shannon", "Tara", "Umber",
        "Vantage", "Wexford", "Yew"]
CO_B = ["Software", "Logistics", "Consulting", "Foods", "Energy", "Bank", "Architects", "Biotech", "Media",
        "Engineering", "Retail Group", "Partners", "Foundation", "Telecom", "Insurance", "Learning"]
VENUE_A = ["Harbourside", "Kings Wharf", "Old Mill", "Aurora", "Elm Court", "Riverside", "Glasshouse", "Northgate",
           "St. Stephen's", "Custom House", "Liberty", "Docklands", "Marlay", "Spencer", "Granary", "Cathedral Quarter"]
VENUE_B = ["Conference Centre", "Hall", "Pavilion", "Forum", "Rooms", "Events Hub", "Exchange", "House"]
CITIES = ["Dublin", "Cork", "Galway", "Limerick", "Kilkenny"]
ROOM_NAMES = ["Quay", "Lantern", "Chart", "Anchor", "Compass", "Beacon", "Willow", "Oak", "Cedar", "Linen", "Loom",
              "Atrium", "Gallery", "Studio", "Library", "Orangery", "Cellar", "Terrace", "Vault", "Boardroom"]
TITLES = ["Quarterly business review", "Product launch", "Sales kick-off", "Board meeting", "Training day",
          "Awards dinner", "Town hall", "Investor briefing", "Customer workshop", "Team offsite", "Gala reception",
          "Hackathon", "Strategy day", "Recruitment fair", "Press conference", "Leadership retreat",
          "AGM", "Graduation reception", "Charity lunch", "Medical symposium"]
NOTES = ["", "", "", "Lectern and two radio mics please", "Vegetarian lunch for all", "Arrival coffee from 08:30",
         "Client will bring own banner stands", "Needs hybrid streaming", "Quiet room nearby if possible",
         "Early access for setup requested", "Photographer attending", "Several wheelchair users expected",
         "Budget approved by procurement", "Same layout as last year"]

# VEN-01 rooms: (suffix, name, theatre capacity, av, step_free, daily rate)
VEN01_ROOMS = [
    (1, "Quay Room", 40, 1, 1, 650.0),
    (2, "Lantern Suite", 80, 1, 0, 1100.0),
    (3, "Chart Room", 60, 0, 1, 700.0),
    (4, "Harbour Hall", 220, 1, 1, 3200.0),
    (5, "Boardroom", 20, 1, 1, 400.0),
    (6, "Mezzanine", 120, 1, 1, 1800.0),
]
# existing VEN-01 bookings: (room suffix, date, start, end, status, client, title)
VEN01_BOOKINGS = [
    (2, "2024-10-15", "08:00", "12:00", "confirmed", "CL-1004", "Board meeting"),
    (1, "2024-10-15", "09:00", "11:30", "tentative", "CL-1008", "Investor briefing"),
    (4, "2024-10-15", "13:00", "17:00", "cancelled", "CL-1002", "Town hall"),
    (3, "2024-10-15", "14:00", "18:00", "confirmed", "CL-1007", "Training day"),
    (5, "2024-10-22", "09:00", "11:00", "confirmed", "CL-1003", "Board meeting"),
    (1, "2024-10-22", "10:00", "12:00", "confirmed", "CL-1001", "Customer workshop"),
]
# planted VEN-01 requests: (client, date, start, end, attendees, layout, av, step_free, submitted, title)
VEN01_REQUESTS = [
    ("CL-1003", "2024-10-15", "13:00", "17:00", 35, "classroom", 1, 0, "2024-09-01 10:12", "Team offsite"),
    ("CL-1001", "2024-10-15", "13:30", "16:00", 36, "classroom", 1, 0, "2024-09-10 15:40", "Medical symposium"),
    ("CL-1002", "2024-10-15", "12:30", "15:00", 18, "boardroom", 0, 1, "2024-09-05 09:03", "Strategy day"),
    ("CL-1004", "2024-10-15", "08:00", "10:00", 30, "theatre", 0, 0, "2024-09-03 11:25", "Press conference"),
    ("CL-1005", "2024-10-15", "10:00", "12:00", 12, "theatre", 0, 0, "2024-08-28 16:50", "Investor briefing"),
    ("CL-1006", "2024-10-22", "14:00", "16:00", 45, "theatre", 1, 1, "2024-09-12 13:30", "AGM"),
    ("CL-1008", "2024-10-22", "12:00", "13:00", 15, "theatre", 1, 0, "2024-09-14 08:45", "Charity lunch"),
    ("CL-1003", "2024-10-22", "12:30", "14:00", 25, "theatre", 0, 0, "2024-09-15 17:20", "Customer workshop"),
    ("CL-1007", "2024-10-22", "19:00", "23:00", 100, "banquet", 0, 0, "2024-09-09 12:00", "Awards dinner"),
]


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
create table venues (id text primary key, name text, city text, address text, opens text, closes text);
create table rooms (id text primary key, venue_id text references venues(id), name text, floor integer,
    theatre_capacity integer, has_av integer, step_free integer, daily_rate real, notes text);
create table clients (id text primary key, name text, tier text, contact_name text, email text,
    account_manager text);
create table bookings (id integer primary key, room_id text references rooms(id), request_id text,
    client_id text, event_date text, start_time text, end_time text, status text, title text, notes text);
create table booking_requests (id text primary key, client_id text references clients(id),
    venue_id text references venues(id), event_name text, event_date text, start_time text, end_time text,
    attendees integer, layout text, needs_av integer, needs_step_free integer, submitted_at text, status text,
    assigned_room_id text, decline_reason text, notes text);
"""

FIRST = ["Aoife", "Ciaran", "Niamh", "Declan", "Siobhan", "Padraig", "Orla", "Eoin", "Grainne", "Ronan", "Maeve",
         "Tadhg", "Sarah", "James", "Priya", "Lukas", "Marta", "Chen", "Fatima", "Oisin"]
LAST = ["Murphy", "Kelly", "O'Brien", "Walsh", "Byrne", "Ryan", "O'Connor", "Doyle", "McCarthy", "Gallagher",
        "Nolan", "Quinn", "Kowalski", "Schmidt", "Nair", "Rossi"]


def _hm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def build(root: Path, scale, seed: int) -> None:
    rng = random.Random(seed)
    root = Path(root)
    _reset(root)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)

    # clients -----------------------------------------------------------------------------------
    clients = [list(c) for c in FIXED_CLIENTS]
    names = {c[1] for c in clients}
    while len(clients) < scale.n_rows(40):
        name = f"{rng.choice(CO_A)} {rng.choice(CO_B)}"
        if name in names:
            continue
        names.add(name)
        clients.append([f"CL-{1001 + len(clients)}", name, rng.choices(TIERS, weights=[15, 30, 55])[0]])
    for cid, name, tier in clients:
        contact = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        email = contact.lower().replace(" ", ".").replace("'", "") + "@" + name.split()[0].lower() + ".example.ie"
        con.execute("insert into clients values (?,?,?,?,?,?)",
                    (cid, name, tier, contact, email, rng.choice(["Emma Walsh", "Rory Nolan", "Ines Duarte"])))
    client_ids = [c[0] for c in clients]

    # venues and rooms --------------------------------------------------------------------------
    n_ven = scale.n_rows(3)
    venues = [("VEN-01", "Harbourside Centre", "Dublin")]
    vnames = {"Harbourside Centre"}
    while len(venues) < n_ven:
        name = f"{rng.choice(VENUE_A[1:])} {rng.choice(VENUE_B)}"
        if name in vnames:
            continue
        vnames.add(name)
        venues.append((f"VEN-{len(venues) + 1:02d}", name, rng.choice(CITIES)))
    rooms = {}  # venue -> list of room dicts
    for k, (vid, name, city) in enumerate(venues):
        con.execute("insert into venues values (?,?,?,?,?,?)",
                    (vid, name, city, f"{rng.randint(1, 140)} {rng.choice(['Quay', 'Street', 'Road', 'Square'])}, "
                     f"{city}", "07:00", "23:30"))
        lst = []
        if vid == "VEN-01":
            for suf, rname, cap, av, sf, rate in VEN01_ROOMS:
                lst.append({"id": f"R-{k + 1:02d}{suf:02d}", "name": rname, "cap": cap, "av": av, "sf": sf,
                            "rate": rate, "floor": 0 if sf else 1})
        else:
            used = set()
            for j in range(rng.randint(4, 7)):
                rname = rng.choice(ROOM_NAMES)
                while rname in used:
                    rname = rng.choice(ROOM_NAMES)
                used.add(rname)
                cap = rng.choice([20, 40, 40, 60, 60, 80, 100, 120, 160, 200, 300])
                rate = float(round(cap * rng.uniform(11, 17), -1))
                lst.append({"id": f"R-{k + 1:02d}{j + 1:02d}", "name": f"{rname} Room" if cap < 150 else
                            f"{rname} Hall", "cap": cap, "av": int(rng.random() < 0.7),
                            "sf": int(rng.random() < 0.75), "rate": rate, "floor": rng.randint(0, 3)})
        rooms[vid] = lst
        for r in lst:
            note = rng.choice(["", "", "Natural daylight", "Pillar restricts sightlines", "Blackout blinds",
                               "Adjoins the bar", "Fixed tiered seating", "Dividable with airwall"])
            con.execute("insert into rooms values (?,?,?,?,?,?,?,?,?)",
                        (r["id"], vid, r["name"], r["floor"], r["cap"], r["av"], r["sf"], r["rate"], note))

    # closures (memo) ---------------------------------------------------------------------------
    closures = [("R-0106", "2024-10-14", "2024-10-18", "floor refinishing")]
    for vid, *_ in venues[1:]:
        if rng.random() < 0.6:
            r = rng.choice(rooms[vid])
            d0 = date(2024, 10, rng.randint(1, 24))
            closures.append((r["id"], d0.isoformat(), (d0 + timedelta(days=rng.randint(0, 6))).isoformat(),
                             rng.choice(["AV upgrade", "carpet replacement", "ceiling repairs", "fire door works",
                                         "repainting", "HVAC servicing"])))

    # bookings ----------------------------------------------------------------------------------
    bookings = []
    for suf, d, s, e, st, cl, title in VEN01_BOOKINGS:
        bookings.append({"room": f"R-01{suf:02d}", "date": d, "start": s, "end": e, "status": st, "client": cl,
                         "title": title, "req": None})
    oct_days = [date(2024, 10, d) for d in range(1, 32)]
    hot = {}
    reserved = {date(2024, 10, 15), date(2024, 10, 22)}  # VEN-01 planted scenario days

    def free_day(vid, d):
        while vid == "VEN-01" and d in reserved:
            d += timedelta(days=1)
        return d

    for vid, *_ in venues:
        hot[vid] = sorted(rng.sample([d for d in oct_days if d.weekday() < 5 and not
                                      (vid == "VEN-01" and d in reserved)], 3))
    for vid, *_ in venues:
        for _ in range(rng.randint(85, 105)):
            r = rng.choice(rooms[vid])
            if rng.random() < 0.1:
                d = rng.choice(hot[vid])
            elif rng.random() < 0.12:
                d = rng.choice(oct_days)
            else:
                d = date(2024, 4, 1) + timedelta(days=rng.randint(0, 260))
            start = rng.randint(16, 38) * 30
            end = min(start + rng.randint(2, 9) * 30, 23 * 60)
            d = free_day(vid, d)
            bookings.append({"room": r["id"], "date": d.isoformat(), "start": _hm(start), "end": _hm(end),
                             "status": rng.choices(["confirmed", "tentative", "cancelled"], weights=[70, 15, 15])[0],
                             "client": rng.choice(client_ids), "title": rng.choice(TITLES), "req": None})

    # requests ----------------------------------------------------------------------------------
    reqs = []
    for cl, d, s, e, n, layout, av, sf, sub, title in VEN01_REQUESTS:
        reqs.append({"client": cl, "venue": "VEN-01", "date": d, "start": s, "end": e, "n": n, "layout": layout,
                     "av": av, "sf": sf, "sub": sub, "title": title, "status": "pending", "room": None,
                     "reason": None})
    for vid, *_ in venues:
        for _ in range(rng.randint(4, 6)):
            r = rng.choice(rooms[vid])
            layout = rng.choice(list(LAYOUT_PCT))
            cap = r["cap"] * LAYOUT_PCT[layout] // 100
            n = max(6, int(cap * rng.uniform(0.35, 1.0))) if rng.random() > 0.12 else cap + rng.randint(5, 60)
            d = free_day(vid, rng.choice(hot[vid]) if rng.random() < 0.7 else rng.choice(oct_days))
            start = rng.randint(16, 38) * 30
            end = min(start + rng.randint(2, 9) * 30, 23 * 60)
            sub = datetime(2024, 8, 15) + timedelta(minutes=rng.randint(0, 44 * 24 * 60))
            reqs.append({"client": rng.choice(client_ids), "venue": vid, "date": d.isoformat(), "start": _hm(start),
                         "end": _hm(end), "n": n, "layout": layout, "av": int(rng.random() < 0.5 and r["av"]),
                         "sf": int(rng.random() < 0.3 and r["sf"]), "sub": sub.strftime("%Y-%m-%d %H:%M"),
                         "title": rng.choice(TITLES), "status": "pending", "room": None, "reason": None})
        # out of scope: other months, withdrawn, already processed
        for _ in range(rng.randint(60, 70)):
            r = rng.choice(rooms[vid])
            layout = rng.choice(list(LAYOUT_PCT))
            n = max(6, int(r["cap"] * LAYOUT_PCT[layout] // 100 * rng.uniform(0.3, 1.0)))
            kind = rng.choices(["past", "nov_pending", "oct_withdrawn", "oct_done"], weights=[60, 15, 10, 15])[0]
            if kind == "past":
                d = date(2024, 7, 1) + timedelta(days=rng.randint(0, 90))
                status = rng.choice(["confirmed", "confirmed", "declined", "withdrawn"])
            elif kind == "nov_pending":
                d, status = date(2024, 11, rng.randint(1, 30)), "pending"
            elif kind == "oct_withdrawn":
                d, status = rng.choice(hot[vid]), "withdrawn"
            else:
                d, status = free_day(vid, rng.choice(oct_days)), "confirmed"
            start = rng.randint(16, 38) * 30
            end = min(start + rng.randint(2, 9) * 30, 23 * 60)
            sub = datetime(2024, 5, 1) + timedelta(minutes=rng.randint(0, 140 * 24 * 60))
            room = r["id"] if status == "confirmed" else None
            reason = "NO_ROOM" if status == "declined" else None
            reqs.append({"client": rng.choice(client_ids), "venue": vid, "date": d.isoformat(),
                         "start": _hm(start), "end": _hm(end), "n": n, "layout": layout, "av": rng.randint(0, 1),
                         "sf": int(rng.random() < 0.2), "sub": sub.strftime("%Y-%m-%d %H:%M"),
                         "title": rng.choice(TITLES), "status": status, "room": room, "reason": reason})
    reqs.sort(key=lambda q: (q["sub"], q["venue"], q["start"]))
    for i, q in enumerate(reqs):
        q["id"] = f"REQ-{24100 + i * 3}"
        if q["status"] == "confirmed":
            bookings.append({"room": q["room"], "date": q["date"], "start": q["start"], "end": q["end"],
                             "status": "confirmed", "client": q["client"], "title": q["title"], "req": q["id"]})
        con.execute("insert into booking_requests values (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (q["id"], q["client"], q["venue"], q["title"], q["date"], q["start"], q["end"], q["n"],
                     q["layout"], q["av"], q["sf"], q["sub"], q["status"], q["room"], q["reason"],
                     rng.choice(NOTES)))
    bookings.sort(key=lambda b: (b["date"], b["room"], b["start"]))
    for i, b in enumerate(bookings):
        con.execute("insert into bookings values (?,?,?,?,?,?,?,?,?,?)",
                    (i + 1, b["room"], b["req"], b["client"], b["date"], b["start"], b["end"], b["status"],
                     b["title"], rng.choice(NOTES)))
    con.commit()
    con.close()

    # workspace ---------------------------------------------------------------------------------
    _write(root, "policies/room_allocation_rules.md", RULES)
    _write(root, "policies/archive/room_allocation_rules_2023.md", RULES_2023)
    _write(root, "data/layout_capacity.csv", _csv(
        ["layout", "capacity_percent_of_theatre", "typical_use"],
        [[k, v, u] for (k, v), u in zip(LAYOUT_PCT.items(), ["talks, plenaries", "standing drinks",
                                                             "round tables of 10", "rows of tables",
                                                             "half-moon rounds", "one table"], strict=True)]))
    _write(root, "config/allocation_settings.json", json.dumps({
        "allocation_month": "2024-10", "turnaround_minutes": TURNAROUND, "tier_priority": TIERS,
        "blocking_booking_statuses": ["confirmed", "tentative"],
        "decline_reason_codes": {"NO_ROOM": "no suitable room free", "CREDIT_HOLD": "client on credit hold"},
    }, indent=2) + "\n")
    holds = [["CL-1005", "Sable Insurance Group", "2024-08-02", "", "Invoices INV-7731/7740 over 90 days"],
             ["CL-1006", "Greenway Housing Association", "2024-06-11", "2024-09-20", "Paid in full"]]
    cmap = {c[0]: c[1] for c in clients}
    for cid in rng.sample(client_ids[8:], max(2, len(client_ids) // 12)):
        released = "" if rng.random() < 0.5 else (date(2024, 9, 1) + timedelta(days=rng.randint(0, 25))).isoformat()
        holds.append([cid, cmap[cid], (date(2024, 5, 1) + timedelta(days=rng.randint(0, 100))).isoformat(), released,
                      rng.choice(["Disputed invoice", "Over credit limit", "Paid in full", "Payment plan agreed"])])
    holds.sort()
    _write(root, "finance/credit_holds.csv",
           _csv(["client_id", "client_name", "hold_from", "released_on", "comment"], holds))
    vname = {v[0]: v[1] for v in venues}
    rname = {r["id"]: (r["name"], vid) for vid, lst in rooms.items() for r in lst}
    lines = ["FACILITIES NOTICE - planned room closures, Q4 2024", "Issued 18 September 2024 by Estates & Facilities",
             "", "The following rooms are out of service on the dates shown (both dates inclusive). Do not",
             "allocate them to any event on those days.", ""]
    for rid, d0, d1, why in sorted(closures):
        lines.append(f"- {rid} {rname[rid][0]} ({vname[rname[rid][1]]}): closed {d0} to {d1} - {why}")
    lines += ["", "Questions to facilities@venues.example.ie", ""]
    _write(root, "memos/2024-09-18_facilities_room_closures_q4.txt", "\n".join(lines))

    for i in range(scale.n_files(3)):
        cid = rng.choice(client_ids)
        d = date(2024, 9, 2) + timedelta(days=rng.randint(0, 26))
        _write(root, f"correspondence/{d.isoformat()}_{cid}_{i + 1:02d}.txt", _email(rng, cmap[cid], d))
    for i in range(scale.n_files(2)):
        vid = rng.choice([v[0] for v in venues])
        _write(root, f"briefs/event_brief_{i + 1:02d}_{vid}.md", _brief(rng, vname[vid]))
    for i in range(scale.n_files(1)):
        _write(root, f"catering/menu_{['autumn', 'winter', 'buffet', 'canapes', 'bbq', 'vegan'][i % 6]}_{i + 1}.md",
               _menu(rng))


def _email(rng, client: str, d: date) -> str:
    pool = ["Could you confirm whether parking is available for around {n} cars?",
            "We would like to add a coffee break at 15:30 to our booking.",
            "Our finance team asks for the invoice to quote PO number {p}.",
            "Is it possible to visit the venue the week before the event?",
            "Please note our new billing address from next month.",
            "We may need an extra breakout room; we will confirm by Friday.",
            "Thanks for a great event last month - the feedback scores averaged {s}/5."]
    body = " ".join(s.format(n=rng.randint(5, 60), p=f"PO{rng.randint(10000, 99999)}", s=round(rng.uniform(3.8, 4.9), 1))
                    for s in rng.sample(pool, 3))
    return f"From: events@{client.split()[0].lower()}.example.ie\nDate: {d.isoformat()}\nSubject: Re: booking\n\n" \
           f"Hello,\n\n{body}\n\nKind regards,\n{rng.choice(FIRST)} {rng.choice(LAST)}\n{client}\n"


def _brief(rng, venue: str) -> str:
    return "\n".join([f"# Event brief - {rng.choice(TITLES)}", "", f"Venue: {venue}",
                      f"Expected attendance: {rng.randint(20, 250)}",
                      f"Run of show: registration {rng.choice(['08:30', '09:00', '12:30'])}, "
                      f"close {rng.choice(['16:00', '17:30', '22:00'])}",
                      f"AV: {rng.choice(['2 radio mics, lectern, confidence monitor', 'projector only', 'none'])}",
                      f"Catering: {rng.choice(['working lunch', 'three-course dinner', 'tea & coffee', 'canapes'])}",
                      "", "Status: draft - for information only; allocations are made by the booking team.", ""])


def _menu(rng) -> str:
    dishes = ["Roast chicken supreme", "Wild mushroom risotto", "Baked hake, herb crust", "Beef and Guinness stew",
              "Vegan lentil dahl", "Caesar salad", "Seasonal soup", "Apple crumble", "Chocolate torte", "Cheese board"]
    lines = ["# Catering menu", ""] + [f"- {d}: EUR {rng.uniform(6, 28):.2f} pp" for d in rng.sample(dishes, 6)]
    return "\n".join(lines + ["", "Prices exclude VAT. Minimum numbers apply.", ""])


RULES = """# Room allocation rules (booking team)

Version 2024.2 - applies from the September 2024 allocation run onwards.

Each month the booking team allocates rooms to the **pending** booking requests whose event date falls
in the allocation month (see config/allocation_settings.json). Requests for other months or in any
other status are not part of the run.

## 1. Order of processing
Process the requests one at a time, by client tier (order in `tier_priority` of the settings file,
highest first), then by `submitted_at` (earliest first), then by request id. Rooms given to an earlier
request in the run are no longer free for later requests.

## 2. Credit holds
A request from a client with an active credit hold (finance/credit_holds.csv: a hold without a
`released_on` date) is declined with reason `CREDIT_HOLD`. No room is considered for it.

## 3. Eligible rooms
A room is eligible for a request when all of the following hold:
1. it belongs to the venue named on the request;
2. its capacity for the requested layout is at least the number of attendees. Layout capacity =
   theatre capacity x the layout's percentage in data/layout_capacity.csv / 100 (round down);
3. it has AV if the request needs AV, and step-free access if the request needs it;
4. it is not closed that day (facilities closure notices in memos/);
5. it is free: no blocking booking (statuses listed in the settings file) in that room on that day
   overlaps the request once the turnaround buffer is added - i.e. between the end of one booking and
   the start of the next there must be at least `turnaround_minutes` (exactly that much is fine).
   Allocations made earlier in the same run count as blocking bookings.

## 4. Choosing the room
Allocate the eligible room with the **smallest layout capacity**; if several tie, the one with the
lower daily rate; if still tied, the lower room id. If no room is eligible, decline with reason
`NO_ROOM`.
"""

RULES_2023 = """# Room allocation rules - 2023  [ARCHIVED]

Replaced by version 2024.2. Kept for reference.

- Requests are handled strictly first come, first served (submitted_at).
- A 30 minute changeover between events is sufficient.
- Allocate the first room (by room id) large enough for the attendees in theatre style.
- Only confirmed bookings block a room.
"""
