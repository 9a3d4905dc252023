"""Hub closure re-planning: hubs, customers, shipments and route stops in SQLite; network advisories (one of
them the current closure, an earlier preliminary one), the closure playbook, the reroute matrix (JSON) and
spare-capacity tables (CSV) in the workspace."""

from __future__ import annotations

import datetime as dt
import json
import random
import sqlite3
from pathlib import Path

from envs.taskkit import Scale

TODAY = dt.date(2025, 11, 17)
WINDOW = (dt.date(2025, 11, 18), dt.date(2025, 11, 20))
# code, name, city, state, region, hazmat, cold dock
HUBS = [
    ("DEN", "Denver Cross-Dock", "Commerce City", "CO", "mountain", True, True),
    ("SLC", "Salt Lake City Hub", "Salt Lake City", "UT", "mountain", True, True),
    ("BIL", "Billings Terminal", "Billings", "MT", "mountain", False, True),
    ("ABQ", "Albuquerque Hub", "Albuquerque", "NM", "southwest", True, False),
    ("PHX", "Phoenix Hub", "Tolleson", "AZ", "southwest", True, True),
    ("KCI", "Kansas City Hub", "Riverside", "MO", "plains", True, True),
    ("OMA", "Omaha Terminal", "Omaha", "NE", "plains", False, True),
    ("DFW", "Dallas-Fort Worth Hub", "Irving", "TX", "texas", True, True),
    ("CHI", "Chicago Gateway", "Bolingbrook", "IL", "midwest", True, True),
    ("BOI", "Boise Terminal", "Boise", "ID", "northwest", False, False),
    ("LAS", "Las Vegas Terminal", "North Las Vegas", "NV", "southwest", True, False),
]
HUB = {h[0]: h for h in HUBS}
MATRIX = {
    "DEN": {"mountain": ["SLC", "BIL"], "southwest": ["ABQ", "PHX"], "plains": ["KCI", "OMA"],
            "midwest": ["OMA", "KCI", "CHI"], "texas": ["DFW", "ABQ"], "northwest": ["BOI", "SLC"]},
    "SLC": {"mountain": ["DEN", "BOI"], "northwest": ["BOI", "DEN"], "southwest": ["LAS", "PHX"],
            "plains": ["DEN", "OMA"], "midwest": ["DEN", "CHI"], "texas": ["DEN", "ABQ"]},
    "KCI": {"plains": ["OMA", "DEN"], "midwest": ["CHI", "OMA"], "texas": ["DFW", "ABQ"],
            "mountain": ["DEN", "OMA"], "southwest": ["ABQ", "DFW"], "northwest": ["DEN", "SLC"]},
    "PHX": {"southwest": ["LAS", "ABQ"], "texas": ["ABQ", "DFW"], "mountain": ["SLC", "ABQ"],
            "plains": ["ABQ", "DFW"], "midwest": ["ABQ", "KCI"], "northwest": ["LAS", "SLC"]},
}
DEST = {
    "mountain": [("Cheyenne", "WY"), ("Casper", "WY"), ("Bozeman", "MT"), ("Grand Junction", "CO"), ("Ogden", "UT")],
    "southwest": [("Santa Fe", "NM"), ("Tucson", "AZ"), ("Flagstaff", "AZ"), ("Las Cruces", "NM")],
    "plains": [("Wichita", "KS"), ("Topeka", "KS"), ("Lincoln", "NE"), ("Sioux Falls", "SD")],
    "midwest": [("Des Moines", "IA"), ("Minneapolis", "MN"), ("Madison", "WI"), ("Peoria", "IL")],
    "texas": [("Amarillo", "TX"), ("Lubbock", "TX"), ("Austin", "TX"), ("Fort Worth", "TX")],
    "northwest": [("Spokane", "WA"), ("Twin Falls", "ID"), ("Pocatello", "ID")],
}
REGION_HUB = {"mountain": ["SLC", "BIL", "DEN"], "southwest": ["ABQ", "PHX", "LAS"], "plains": ["KCI", "OMA"],
              "midwest": ["CHI", "OMA"], "texas": ["DFW"], "northwest": ["BOI"]}
ORIGINS = [("Reno", "NV", "LAS"), ("Sacramento", "CA", "SLC"), ("Portland", "OR", "BOI"), ("Los Angeles", "CA", "PHX"),
           ("St. Louis", "MO", "KCI"), ("Memphis", "TN", "DFW"), ("Indianapolis", "IN", "CHI"),
           ("Colorado Springs", "CO", "DEN"), ("Fort Collins", "CO", "DEN"), ("Houston", "TX", "DFW"),
           ("Milwaukee", "WI", "CHI"), ("Tulsa", "OK", "KCI"), ("Spokane", "WA", "BOI"), ("Provo", "UT", "SLC")]
LEVELS = ["critical", "express", "standard", "economy"]
CUSTOMERS = ["Alpine Outfitters", "Bluestem Grocers", "Cedar & Pine Furniture", "Dakota Ag Supply", "Ember Electronics",
             "Frontier Medical Supply", "Granite State Tools", "High Desert Brewing", "Ironhorse Auto Parts",
             "Juniper Home Goods", "Keystone Paints", "Lariat Western Wear", "Mesa Solar", "Northfork Pharmacy",
             "Oxbow Pet Foods", "Prairie Fire Hot Sauce", "Quarry Stone Works", "Redrock Sporting", "Sagebrush Books",
             "Tumbleweed Toys", "Uinta Water Filters", "Vantage Office Supply", "Wapiti Outdoor", "Yucca Cosmetics",
             "Zephyr Bicycles", "Chinook Chemicals", "Badlands Batteries", "Arroyo Ceramics", "Sundance Dairy",
             "Timberline Lumber"]
NOTES = ["", "", "", "Dock appointment required.", "Liftgate at delivery.", "Call consignee 1 h before arrival.",
         "Fragile — do not double stack.", "Residential delivery.", "Inside delivery requested.",
         "Consignee closed weekends.", "Customer requested photo POD."]


def _d(x: dt.date) -> str:
    return x.isoformat()


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
    for code, name, city, state, region, _hz, _cd in HUBS:
        con.execute("insert into hubs values (?,?,?,?,?)", (code, name, city, state, region))
    for i, name in enumerate(CUSTOMERS, start=1):
        con.execute("insert into customers values (?,?,?,?)",
                    (i, name, rng.choice(["gold", "silver", "silver", "bronze"]),
                     f"shipping@{name.lower().replace(' & ', '').replace(' ', '')[:14]}.example.com"))

    shipments: list[dict] = []

    def new_shipment(kind: str) -> dict:
        region = rng.choice(list(DEST))
        city, state = rng.choice(DEST[region])
        ocity, ostate, ohub = rng.choice(ORIGINS)
        level = rng.choices(LEVELS, weights=[1, 3, 5, 2])[0]
        pallets = rng.choice([1, 1, 2, 2, 3, 4, 5, 6, 8, 10, 12])
        s = {"region": region, "dest": (city, state), "origin": (ocity, ostate), "ohub": ohub, "level": level,
             "pallets": pallets, "weight": pallets * rng.randint(380, 1450),
             "hazmat": 1 if rng.random() < 0.14 else 0, "reefer": 1 if rng.random() < 0.14 else 0,
             "customer": rng.randint(1, len(CUSTOMERS)), "status": "scheduled", "stops": [], "kind": kind,
             "note": rng.choice(NOTES)}
        if s["hazmat"] and s["reefer"]:
            s["reefer"] = 0
        shipments.append(s)
        return s

    def route(s: dict, via: str | None, via_date: dt.date | None, start: dt.date) -> None:
        dest_hub = rng.choice(REGION_HUB[s["region"]])
        hubs = [s["ohub"]]
        if via:
            hubs.append(via)
        if dest_hub not in hubs:
            hubs.append(dest_hub)
        if via and via_date:
            first = via_date - dt.timedelta(days=rng.randint(1, 2))
            dates = [first, via_date] + [via_date + dt.timedelta(days=1 + k) for k in range(len(hubs) - 2)]
        else:
            dates = [start + dt.timedelta(days=k * rng.randint(1, 2)) for k in range(len(hubs))]
        s["stops"] = list(zip(hubs, dates, strict=True))
        s["promised"] = dates[-1] + dt.timedelta(days=rng.randint(1, 3) if s["level"] != "economy" else rng.randint(3, 6))

    window_days = [WINDOW[0] + dt.timedelta(days=k) for k in range(3)]
    # affected shipments (DEN stop inside the window, live); the first five exercise specific rules
    n_aff = scale.n_rows(16)
    specials = [
        {"level": "economy"},
        {"special": "pairA", "level": "critical", "region": "texas", "pallets": 6, "day": window_days[1]},
        {"special": "pairB", "level": "standard", "region": "texas", "pallets": 4, "day": window_days[1]},
        {"special": "trap", "level": "critical", "region": "midwest", "pallets": 2, "hazmat": 1, "reefer": 0},
        {"special": "trap", "level": "critical", "region": "southwest", "pallets": 2, "hazmat": 0, "reefer": 1},
        {"day": WINDOW[1]},
    ]
    for i in range(n_aff):
        s = new_shipment("affected")
        spec = specials[i] if i < len(specials) else {}
        for k in ("level", "region", "pallets", "hazmat", "reefer", "special"):
            if k in spec:
                s[k] = spec[k]
        if s.get("special") in ("pairA", "pairB"):
            s["hazmat"] = s["reefer"] = 0
        if "region" in spec:
            s["dest"] = rng.choice(DEST[s["region"]])
        day = spec.get("day") or rng.choice(window_days)
        if not s.get("special") and s["region"] == "texas" and day == window_days[1]:
            day = window_days[0]
        if s["ohub"] == "DEN":
            s["ohub"] = "KCI"
        route(s, "DEN", day, day)
        s["status"] = "in_transit" if s["stops"][0][1] < TODAY else "scheduled"
    # decoys: DEN stops just outside the window, or not live
    for i in range(scale.n_rows(7)):
        s = new_shipment("decoy")
        if s["ohub"] == "DEN":
            s["ohub"] = "SLC"
        kind = i % 4
        if kind == 0:
            route(s, "DEN", WINDOW[1] + dt.timedelta(days=1), TODAY)
        elif kind == 1:
            route(s, "DEN", TODAY, TODAY)
        else:
            route(s, "DEN", rng.choice(window_days), TODAY)
            s["status"] = "cancelled" if kind == 2 else "on_hold"
            s["hold_reason"] = "customer_request" if kind == 3 else None
        if s["status"] == "scheduled" and s["stops"][0][1] < TODAY:
            s["status"] = "in_transit"
    # noise
    for _ in range(scale.n_rows(380)):
        s = new_shipment("noise")
        start = TODAY + dt.timedelta(days=rng.randint(-16, 9))
        via = rng.choice([None, None, "KCI", "SLC", "PHX", "CHI", "DEN"])
        if via == "DEN":
            d = start + dt.timedelta(days=1)
            if WINDOW[0] <= d <= WINDOW[1]:
                d = WINDOW[0] - dt.timedelta(days=rng.randint(2, 9))
            route(s, via, d, start)
        else:
            route(s, via if via != s["ohub"] else None, None, start)
            if any(h == "DEN" and WINDOW[0] <= d <= WINDOW[1] for h, d in s["stops"]):
                s["stops"] = [(h if h != "DEN" else "SLC", d) for h, d in s["stops"]]
        last = s["stops"][-1][1]
        if last < TODAY:
            s["status"] = "delivered"
        elif s["stops"][0][1] < TODAY:
            s["status"] = "in_transit"
        if s["status"] != "delivered" and rng.random() < 0.04:
            s["status"] = "cancelled"

    rng.shuffle(shipments)
    ia = next(i for i, x in enumerate(shipments) if x.get("special") == "pairA")
    ib = next(i for i, x in enumerate(shipments) if x.get("special") == "pairB")
    if ib > ia:  # the lower-priority twin gets the smaller shipment id
        shipments[ia], shipments[ib] = shipments[ib], shipments[ia]
    stop_id = 0
    aff_rows = []
    for sid, s in enumerate(shipments, start=1):
        con.execute("insert into shipments values (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (sid, f"NL{rng.randint(10000000, 99999999)}", s["customer"], s["origin"][0], s["origin"][1],
                     s["dest"][0], s["dest"][1], s["region"], s["level"], _d(s["promised"]), s["pallets"], s["weight"],
                     s["hazmat"], s["reefer"], s["status"], s.get("hold_reason"), s["note"]))
        for seq, (hub, date) in enumerate(s["stops"], start=1):
            stop_id += 1
            st = "completed" if date < TODAY and s["status"] != "cancelled" else ("cancelled" if s["status"] == "cancelled" else "planned")
            con.execute("insert into route_stops values (?,?,?,?,?,?,?)", (stop_id, sid, seq, hub, _d(date), st, None))
        if s["kind"] == "affected":
            aff_rows.append((sid, s))
    con.commit()
    con.close()

    # spare capacity: simulate the playbook so that some alternates fill up (priority order matters)
    rank = {"critical": 0, "express": 1, "standard": 2, "economy": 3}
    order = sorted(aff_rows, key=lambda t: (rank[t[1]["level"]], t[1]["promised"], t[0]))
    used: dict[tuple[str, dt.date], int] = {}
    full: dict[tuple[str, dt.date], int] = {}  # (hub, day) -> capacity once it has refused a shipment
    no_close: dict[tuple[str, dt.date], int] = {}  # incompatible first alternates that must keep room
    for _sid, s in order:
        if s.get("special") == "trap":
            day = next(d for h, d in s["stops"] if h == "DEN")
            no_close[(MATRIX["DEN"][s["region"]][0], day)] = s["pallets"]
    for _sid, s in order:
        if s["level"] == "economy":
            continue
        day = next(d for h, d in s["stops"] if h == "DEN")
        for hub in MATRIX["DEN"][s["region"]]:
            if (s["hazmat"] and not HUB[hub][5]) or (s["reefer"] and not HUB[hub][6]):
                continue
            key = (hub, day)
            if key in full:
                if used.get(key, 0) + s["pallets"] <= full[key]:
                    used[key] = used.get(key, 0) + s["pallets"]
                    break
                continue
            if s.get("special") == "pairB":
                full[key] = used.get(key, 0)
                continue
            if key in no_close or s.get("special") == "pairA" or rng.random() < 0.68:
                used[key] = used.get(key, 0) + s["pallets"]
                break
            full[key] = used.get(key, 0) + rng.randint(0, s["pallets"] - 1)
    capacity = {}
    for code, *_rest in HUBS:
        for k in range(-4, 9):
            day = TODAY + dt.timedelta(days=k)
            key = (code, day)
            if code == "DEN" and WINDOW[0] <= day <= WINDOW[1]:
                v = 0
            elif key in full:
                v = full[key]
            elif key in used or key in no_close:
                v = used.get(key, 0) + no_close.get(key, 0) + rng.randint(0, 3) * scale.rows
            else:
                v = rng.randint(2, 30) * scale.rows
            capacity[key] = v
    _write_files(ws, scale, rng, capacity)


SCHEMA = """
create table hubs (hub_code text primary key, name text, city text, state text, region text);
create table customers (customer_id integer primary key, name text, tier text, contact_email text);
create table shipments (shipment_id integer primary key, pro_number text, customer_id integer references customers,
                        origin_city text, origin_state text, dest_city text, dest_state text, dest_region text,
                        service_level text, promised_date text, pallets integer, weight_lb integer, hazmat integer,
                        temp_controlled integer, status text, hold_reason text, notes text);
create table route_stops (stop_id integer primary key, shipment_id integer references shipments, seq integer,
                          hub_code text references hubs, planned_date text, status text, original_hub text);
"""

PLAYBOOK = """# Hub Closure Playbook

Northline Freight · Network Control · revision 2025-09

When Network Control declares a hub closure (advisories are filed in `ops/advisories/`; the most recent
advisory about an event supersedes earlier ones), every live shipment planned through the closed hub during
the closure is re-planned the day before the closure starts.

## 1. Affected shipments
A shipment is affected when its status is `scheduled` or `in_transit` and it has a route stop with status
`planned` at the closed hub whose planned date falls inside the closure window (first and last day
included). Cancelled, delivered or already held shipments are not touched.

## 2. Processing order
Handle the affected shipments one at a time, in this order:
1. service level: `critical`, then `express`, then `standard`, then `economy`;
2. earliest promised delivery date first;
3. lowest shipment id first.
Alternate-hub capacity is consumed in that order.

## 3. Economy shipments
Economy shipments are **not** rerouted: put them on hold with reason `economy_deferred`; they move when the
hub reopens.

## 4. Choosing the alternate hub
The alternates for a closed hub are listed in `network/reroute_matrix.json`, per **destination region** of
the shipment, in order of preference. The rerouted stop keeps its planned date. Use the **first** alternate
that meets all of:
* its spare capacity on that date (`network/hub_spare_capacity_2025-11.csv`, column `spare_pallets`) still
  covers the shipment's pallets — every rerouted shipment uses up its pallets on that hub and date;
* it is hazmat certified when the shipment is hazmat (`hazmat_certified`);
* it has a cold dock when the shipment is temperature controlled (`cold_dock`).
If no alternate qualifies, put the shipment on hold with reason `no_alternate`.

## 5. Recording
Reroute the affected stop through the reroute tool, or hold the shipment through the hold tool. Do not
modify other stops or shipments.
"""

ADVISORY_PRELIM = """# Network advisory NA-2025-1115-01 — PRELIMINARY

Issued 2025-11-15 06:40 MT by Network Control

A major winter storm is forecast for the Front Range. **Denver Cross-Dock (DEN)** is expected to close
from **2025-11-18** through **2025-11-19**. Final dates will follow in an updated advisory.
Customers with critical freight should be contacted by their account managers.
"""

ADVISORY_FINAL = """# Network advisory NA-2025-1117-02 — UPDATE (supersedes NA-2025-1115-01)

Issued 2025-11-17 05:55 MT by Network Control

The storm track has slowed. **Denver Cross-Dock (DEN) will be closed from 2025-11-18 through 2025-11-20**
(both days included). No inbound or outbound linehaul will be worked at DEN during the closure.

Apply the hub closure playbook today to every shipment planned through DEN during the closure. Spare
capacity at the alternate hubs for the closure days is published in `network/hub_spare_capacity_2025-11.csv`.
"""

NOISE_ADVISORIES = [
    ("SLC", "Dock door repairs on doors 14-19; reduced throughput already reflected in the published spare capacity. No closure."),
    ("PHX", "Power outage on {d} resolved after 3 hours; hub fully operational."),
    ("KCI", "Winter weather watch for {d}. No closure expected; monitor for updates."),
    ("ABQ", "Planned closure for {d} has been CANCELLED; the hub operates normally."),
    ("CHI", "Yard congestion: expect 2-hour delays on outbound linehaul through {d}."),
    ("BOI", "Forklift certification training on {d}; no impact on operations."),
    ("DFW", "Holiday schedule: reduced staffing on {d}, capacity unchanged."),
    ("LAS", "Road construction on I-15 may delay arrivals on {d}."),
    ("OMA", "New cross-dock lanes open on {d}."),
]
REPORT_ITEMS = ["On-time delivery", "Claims ratio", "Average dwell (h)", "Trailer utilisation", "Linehaul cost per mile"]


def _write_files(ws: Path, scale: Scale, rng: random.Random, capacity: dict) -> None:
    def put(rel: str, text: str) -> None:
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    put("ops/playbooks/hub_closure_playbook.md", PLAYBOOK)
    put("ops/advisories/2025-11-15_NA-2025-1115-01_DEN_storm_preliminary.md", ADVISORY_PRELIM)
    put("ops/advisories/2025-11-17_NA-2025-1117-02_DEN_storm_update.md", ADVISORY_FINAL)
    put("network/reroute_matrix.json", json.dumps(
        {"description": "Alternate hubs per closed hub and destination region, in order of preference.",
         "updated": "2025-08-30", "alternates": MATRIX}, indent=2) + "\n")
    rows = ["hub,date,spare_pallets,hazmat_certified,cold_dock"]
    for (code, day), v in sorted(capacity.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        h = HUB[code]
        rows.append(f"{code},{_d(day)},{v},{'yes' if h[5] else 'no'},{'yes' if h[6] else 'no'}")
    put("network/hub_spare_capacity_2025-11.csv", "\n".join(rows) + "\n")
    rows = ["hub,date,spare_pallets,hazmat_certified,cold_dock"]
    for k in range(10):
        day = dt.date(2025, 10, 13) + dt.timedelta(days=k)
        for h in HUBS:
            rows.append(f"{h[0]},{_d(day)},{rng.randint(5, 40) * scale.rows},{'yes' if h[5] else 'no'},{'yes' if h[6] else 'no'}")
    put("network/archive/hub_spare_capacity_2025-10.csv", "\n".join(rows) + "\n")

    for i in range(scale.n_files(3)):
        hub, text = NOISE_ADVISORIES[i % len(NOISE_ADVISORIES)]
        day = TODAY - dt.timedelta(days=rng.randint(1, 120))
        d = _d(day + dt.timedelta(days=rng.randint(0, 20)))
        num = f"NA-{day.strftime('%Y-%m%d')}-{rng.randint(1, 9):02d}"
        put(f"ops/advisories/{_d(day)}_{num}_{hub}.md",
            f"# Network advisory {num} — {HUB[hub][1]}\n\nIssued {_d(day)} by Network Control\n\n{text.format(d=d)}\n")
    for i in range(scale.n_files(3)):
        week = TODAY - dt.timedelta(days=7 * (i + 1))
        rows = ["hub," + ",".join(REPORT_ITEMS)]
        for h in HUBS:
            rows.append(f"{h[0]},{rng.uniform(88, 99):.1f}%,{rng.uniform(0.1, 1.2):.2f}%,{rng.uniform(3, 19):.1f},"
                        f"{rng.uniform(70, 96):.0f}%,${rng.uniform(1.8, 3.1):.2f}")
        put(f"reports/weekly_network_kpis_{_d(week)}.csv", "\n".join(rows) + "\n")
