"""Freight invoice audit: carriers, shipments, invoices and invoice lines in SQLite; the audit procedure,
contract terms (JSON), per-carrier rate tables, the zone chart and the weekly fuel surcharge table (CSV) in
the workspace, among carrier bulletins, reports and a superseded rate table."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import sqlite3
from pathlib import Path

from envs.taskkit import Scale

# carrier_id, code, name, mode, divisor, accessorials, detention per hour
CARRIERS = [
    (1, "RWX", "Ridgeway Express", "LTL", 6000, {"liftgate": 75.00, "residential": 60.00, "inside_delivery": 110.00}, 65.00),
    (2, "BWP", "Bluewater Parcel", "parcel", 5000, {"residential": 5.25}, None),
    (3, "SFW", "Summit Freightways", "LTL", 6000, {"liftgate": 85.00, "residential": 55.00, "inside_delivery": 95.00}, 70.00),
    (4, "CCR", "Coastal Courier", "parcel", 5000, {"residential": 4.75, "inside_delivery": 12.50}, None),
]
CAR = {c[0]: c for c in CARRIERS}
ZONES = {"NV": 2, "CA": 3, "OR": 3, "UT": 3, "ID": 4, "AZ": 4, "WA": 4, "CO": 5, "NM": 5, "MT": 5, "WY": 5, "TX": 6,
         "KS": 6, "NE": 6, "OK": 6, "MN": 7, "IL": 7, "MO": 7, "WI": 7, "NY": 8, "FL": 8, "GA": 8, "MA": 8, "PA": 8}
CITIES = {"NV": ["Las Vegas", "Henderson", "Carson City"], "CA": ["Sacramento", "Fresno", "San Jose", "Oakland"],
          "OR": ["Portland", "Bend", "Medford"], "UT": ["Salt Lake City", "Provo", "Ogden"], "ID": ["Boise", "Nampa"],
          "AZ": ["Phoenix", "Tucson", "Mesa"], "WA": ["Seattle", "Spokane", "Tacoma"], "CO": ["Denver", "Aurora"],
          "NM": ["Albuquerque", "Santa Fe"], "MT": ["Billings", "Missoula"], "WY": ["Cheyenne", "Casper"],
          "TX": ["Dallas", "Austin", "Houston", "El Paso"], "KS": ["Wichita", "Topeka"], "NE": ["Omaha", "Lincoln"],
          "OK": ["Tulsa", "Norman"], "MN": ["Minneapolis", "Duluth"], "IL": ["Chicago", "Peoria"],
          "MO": ["St. Louis", "Springfield"], "WI": ["Milwaukee", "Madison"], "NY": ["Buffalo", "Albany"],
          "FL": ["Orlando", "Tampa"], "GA": ["Atlanta", "Savannah"], "MA": ["Worcester", "Springfield"],
          "PA": ["Pittsburgh", "Allentown"]}
LTL_BANDS = [(1, 150), (151, 500), (501, 1000), (1001, 3000)]
PARCEL_BANDS = [(1, 5), (6, 20), (21, 50), (51, 150)]
PRODUCTS = ["sofa sectional", "dining set", "rug bundle", "lamp assortment", "bookshelf", "mattress", "cookware",
            "linen sets", "patio chairs", "wall mirrors", "storage bins", "desk chairs", "throw pillows", "bed frame"]


def rate_table(rng: random.Random, carrier: tuple) -> list[tuple[int, int, int, float, float]]:
    rows = []
    ltl = carrier[3] == "LTL"
    for zone in range(2, 9):
        minimum = round((88 + zone * 9.5 if ltl else 7.40 + zone * 1.35) * rng.uniform(0.95, 1.08), 2)
        for i, (lo, hi) in enumerate(LTL_BANDS if ltl else PARCEL_BANDS):
            base = (0.62 + zone * 0.085) if ltl else (1.15 + zone * 0.21)
            rate = round(base * (1 - 0.14 * i) * rng.uniform(0.96, 1.05), 2)
            rows.append((zone, lo, hi, rate, minimum))
    return rows


def linehaul(rates: list, zone: int, kg: int) -> float:
    for z, lo, hi, rate, minimum in rates:
        if z == zone and lo <= kg <= hi:
            return round(max(minimum, kg * rate), 2)
    raise ValueError(f"no band for zone {zone} and {kg} kg")


def billable(s: dict, divisor: int) -> int:
    dim = s["l"] * s["w"] * s["h"] / divisor
    return math.ceil(max(s["kg"], dim) - 1e-9)


def week_start(d: dt.date) -> dt.date:
    return d - dt.timedelta(days=d.weekday())


BASE_PLAN = [  # (carrier_id, errors) for the October invoices present at every scale
    (1, ["zone_up", "fuel_half"]), (1, ["detention_unapproved", "dup_september"]),
    (2, ["residential_bogus", "dup_same"]), (2, ["dim_ignored", "min_charge"]),
    (3, ["liftgate_rate", "detention_excess", "fuel_51"]), (3, []),
    (4, ["dim_wrong_divisor", "liftgate_parcel"]), (4, ["fuel_prev_week"]),
]
ERRORS_ANY = ["min_charge", "zone_up", "fuel_half", "fuel_51", "fuel_prev_week", "dup_same", "dup_september", "dim_ignored",
              "dim_wrong_divisor", "residential_bogus"]
ERRORS_LTL = ["liftgate_rate", "detention_unapproved", "detention_excess"]


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
    rates = {c[0]: rate_table(rng, c) for c in CARRIERS}
    fuel: dict[tuple[int, dt.date], float] = {}
    for c in CARRIERS:
        base = rng.uniform(11.0, 19.0) if c[3] == "LTL" else rng.uniform(7.0, 12.0)
        for k in range(20):
            wk = dt.date(2025, 7, 28) + dt.timedelta(days=7 * k)
            base += rng.uniform(-0.6, 0.6)
            fuel[(c[0], wk)] = round(int(base * 5) / 5, 1)  # even tenths only
    for cid, code, name, mode, *_rest in CARRIERS:
        con.execute("insert into carriers values (?,?,?,?,?)",
                    (cid, code, name, mode, f"billing@{name.lower().replace(' ', '')}.example.com"))

    shipments: list[dict] = []

    def new_shipment(carrier: int, day: dt.date, bulky: bool | None = None) -> dict:
        ltl = CAR[carrier][3] == "LTL"
        state = rng.choice(list(ZONES))
        if ltl:
            kg = round(rng.uniform(70, 1400), 1)
            ln_, w, h = rng.randint(100, 125), rng.randint(95, 120), rng.randint(60, 190)
        else:
            kg = round(rng.uniform(0.6, 45), 1)
            ln_, w, h = rng.randint(15, 70), rng.randint(12, 55), rng.randint(8, 50)
        if bulky is True:  # dimensional weight governs
            if ltl:
                ln_, w, h = rng.randint(115, 125), rng.randint(105, 120), rng.randint(150, 200)
            else:
                ln_, w, h = rng.randint(60, 80), rng.randint(40, 60), rng.randint(40, 60)
            kg = round(ln_ * w * h / CAR[carrier][4] * rng.uniform(0.35, 0.6), 1)
        s = {"carrier": carrier, "date": day, "state": state, "city": rng.choice(CITIES[state]), "kg": max(kg, 0.5),
             "l": ln_, "w": w, "h": h, "pieces": rng.randint(1, 6) if ltl else 1,
             "residential": int(rng.random() < (0.1 if ltl else 0.4)),
             "liftgate": int(ltl and rng.random() < 0.25), "inside": int(rng.random() < 0.08 and "inside_delivery" in CAR[carrier][5]),
             "det": rng.choice([0] * 9 + [1, 2]) if ltl else 0, "ref": f"PO-{rng.randint(40000, 89999)}",
             "desc": rng.choice(PRODUCTS)}
        for _ in range(60):  # keep every expected fuel charge away from an exact half cent
            lh = linehaul(rates[carrier], ZONES[s["state"]], billable(s, CAR[carrier][4]))
            pct = fuel[(carrier, week_start(day))]
            if round(lh * 100) * round(pct * 10) % 1000 != 500:
                break
            s["kg"] = round(s["kg"] + 1.3, 1)
            s["state"] = rng.choice(list(ZONES))
            s["city"] = rng.choice(CITIES[s["state"]])
        shipments.append(s)
        return s

    def expected_lines(s: dict) -> list[dict]:
        car = CAR[s["carrier"]]
        zone = ZONES[s["state"]]
        lh = linehaul(rates[s["carrier"]], zone, billable(s, car[4]))
        out = [{"s": s, "type": "linehaul", "qty": 1, "amt": lh},
               {"s": s, "type": "fuel", "qty": 1, "amt": round(lh * fuel[(s["carrier"], week_start(s["date"]))] / 100, 2)}]
        acc = car[5]
        if s["liftgate"] and "liftgate" in acc:
            out.append({"s": s, "type": "liftgate", "qty": 1, "amt": acc["liftgate"]})
        if s["residential"] and "residential" in acc:
            out.append({"s": s, "type": "residential", "qty": 1, "amt": acc["residential"]})
        if s["inside"] and "inside_delivery" in acc:
            out.append({"s": s, "type": "inside_delivery", "qty": 1, "amt": acc["inside_delivery"]})
        if s["det"] and car[6]:
            out.append({"s": s, "type": "detention", "qty": s["det"], "amt": round(car[6] * s["det"], 2)})
        return out

    invoices: list[dict] = []
    # August and September invoices (paid), two per carrier and month per scale unit
    sept_ship: dict[int, list[dict]] = {}
    for unit in range(scale.rows):
        for month, last in ((8, 31), (9, 30)):
            for c in CARRIERS:
                for half, inv_day in ((0, dt.date(2025, month, 15)), (1, dt.date(2025, month, last))):
                    lines = []
                    for _ in range(rng.randint(5, 7)):
                        day = dt.date(2025, month, 1 + half * 15) + dt.timedelta(days=rng.randint(0, 13))
                        s = new_shipment(c[0], day)
                        if month == 9:
                            sept_ship.setdefault(c[0], []).append(s)
                        lines += expected_lines(s)
                    invoices.append({"carrier": c[0], "date": inv_day, "period": f"2025-{month:02d}", "status": "paid",
                                     "lines": lines, "unit": unit})
    # October invoices (received) with billing errors
    plan = list(BASE_PLAN)
    while len(plan) < scale.n_rows(len(BASE_PLAN)):
        c = rng.choice(CARRIERS)
        pool = ERRORS_ANY + (ERRORS_LTL if c[3] == "LTL" else ["liftgate_parcel"])
        errs = rng.sample(pool, rng.choice([0, 1, 1, 2]))
        plan.append((c[0], errs))
    for i, (cid, errs) in enumerate(plan):
        half = i % 2
        inv_day = dt.date(2025, 10, 15) if half == 0 else dt.date(2025, 10, 31)
        ships = []
        for _ in range(rng.randint(5, 7)):
            day = dt.date(2025, 10, 1 + half * 15) + dt.timedelta(days=rng.randint(0, 13))
            ships.append(new_shipment(cid, day))
        if "dim_ignored" in errs or "dim_wrong_divisor" in errs:
            ships.append(new_shipment(cid, dt.date(2025, 10, 2 + half * 15), bulky=True))
        lines = [ln for s in ships for ln in expected_lines(s)]
        for e in errs:
            _inject(rng, e, lines, ships, rates, fuel, sept_ship, expected_lines, new_shipment, cid, half)
        invoices.append({"carrier": cid, "date": inv_day, "period": "2025-10", "status": "received", "lines": lines})
    # unbilled October shipments (noise)
    for _ in range(scale.n_rows(30)):
        new_shipment(rng.choice(CARRIERS)[0], dt.date(2025, 10, 20) + dt.timedelta(days=rng.randint(0, 14)))

    for s in shipments:  # no expected fuel charge may sit on an exact half cent
        lh = linehaul(rates[s["carrier"]], ZONES[s["state"]], billable(s, CAR[s["carrier"]][4]))
        assert round(lh * 100) * round(fuel[(s["carrier"], week_start(s["date"]))] * 10) % 1000 != 500
    # insert shipments ordered by date
    order = sorted(range(len(shipments)), key=lambda i: (shipments[i]["date"], rng.random()))
    for sid, idx in enumerate(order, start=1):
        s = shipments[idx]
        s["id"] = sid
        con.execute("insert into shipments values (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (sid, f"{CAR[s['carrier']][1]}{rng.randint(1000000, 9999999)}", s["carrier"], s["date"].isoformat(),
                     s["city"], s["state"], s["kg"], s["l"], s["w"], s["h"], s["pieces"], s["residential"],
                     s["liftgate"], s["inside"], s["det"], s["ref"], s["desc"]))
    event_id = 0
    for s in sorted(shipments, key=lambda x: x["id"]):
        t = dt.datetime.combine(s["date"], dt.time(rng.randint(7, 16), rng.choice([0, 15, 30, 45])))
        hops = [("PU", "Reno, NV", "Picked up at Reno DC"), ("DEP", "Reno, NV", "Departed origin terminal")]
        if CAR[s["carrier"]][3] == "LTL":
            hops.append(("ARR", rng.choice(["Sacramento, CA", "Salt Lake City, UT", "Boise, ID", "Phoenix, AZ"]),
                         "Arrived at break-bulk terminal"))
        hops += [("OFD", f"{s['city']}, {s['state']}", "Out for delivery"),
                 ("DEL", f"{s['city']}, {s['state']}", rng.choice(["Delivered — signed by receiving", "Delivered to front door",
                                                                    "Delivered — dock 4", "Delivered, POD on file"]))]
        if rng.random() < 0.08:
            hops.insert(-1, ("EXC", f"{s['city']}, {s['state']}", rng.choice(
                ["Consignee closed — reattempt next day", "Weather delay", "Address correction required"])))
        for code, loc, detail in hops:
            event_id += 1
            con.execute("insert into tracking_events values (?,?,?,?,?,?)",
                        (event_id, s["id"], t.isoformat(timespec="minutes"), loc, code, detail))
            t += dt.timedelta(hours=rng.randint(3, 30))
    invoices.sort(key=lambda v: (v["date"], v["carrier"], rng.random()))
    line_id = 0
    numbers: set[str] = set()
    for iid, inv in enumerate(invoices, start=1):
        while True:
            no = f"{CAR[inv['carrier']][1]}-{inv['date'].strftime('%y%m%d')}-{rng.randint(100, 999)}"
            if no not in numbers:
                numbers.add(no)
                break
        total = round(sum(ln["amt"] for ln in inv["lines"]), 2)
        con.execute("insert into invoices values (?,?,?,?,?,?,?)",
                    (iid, inv["carrier"], no, inv["date"].isoformat(), inv["period"], inv["status"], total))
        for ln in inv["lines"]:
            line_id += 1
            con.execute("insert into invoice_lines values (?,?,?,?,?,?)",
                        (line_id, iid, ln["s"]["id"], ln["type"], ln["qty"], ln["amt"]))
    con.commit()
    con.close()
    _write_files(ws, scale, rng, rates, fuel)


def _inject(rng, e, lines, ships, rates, fuel, sept_ship, expected_lines, new_shipment, cid, half) -> None:
    car = CAR[cid]

    def lines_of(s: dict, typ: str) -> dict | None:
        return next((ln for ln in lines if ln["s"] is s and ln["type"] == typ), None)

    def refuel(s: dict, lh: float, pct: float | None = None) -> None:
        f = lines_of(s, "fuel")
        f["amt"] = round(lh * (pct if pct is not None else fuel[(cid, week_start(s["date"]))]) / 100, 2)

    if e == "zone_up":
        s = next((x for x in ships if ZONES[x["state"]] < 8), ships[0])
        zone = min(8, ZONES[s["state"]] + 1)
        lh = linehaul(rates[cid], zone, billable(s, car[4]))
        if lh <= lines_of(s, "linehaul")["amt"] + 0.5:  # minimum charge case: bump two zones
            lh = round(lines_of(s, "linehaul")["amt"] * 1.12 + 1, 2)
        lines_of(s, "linehaul")["amt"] = lh
        refuel(s, lh)
    elif e in ("dim_ignored", "dim_wrong_divisor"):
        s = ships[-1]
        kg = math.ceil(s["kg"] - 1e-9) if e == "dim_ignored" else math.ceil(s["l"] * s["w"] * s["h"] / 4000 - 1e-9)
        lh = linehaul(rates[cid], ZONES[s["state"]], max(1, kg))
        lines_of(s, "linehaul")["amt"] = lh
        refuel(s, lh)
    elif e in ("fuel_half", "fuel_51"):
        s = rng.choice(ships)
        lines_of(s, "fuel")["amt"] = round(lines_of(s, "fuel")["amt"] + (0.40 if e == "fuel_half" else 0.75), 2)
    elif e == "fuel_prev_week":
        s = max(ships, key=lambda x: lines_of(x, "linehaul")["amt"])
        pct = fuel[(cid, week_start(s["date"]))] + 2.4
        refuel(s, lines_of(s, "linehaul")["amt"], pct)
    elif e == "residential_bogus":
        s = next((x for x in ships if not x["residential"]), None) or new_shipment(cid, ships[0]["date"])
        if s not in ships:
            ships.append(s)
            lines.extend(expected_lines(s))
            s["residential"] = 0
        lines.append({"s": s, "type": "residential", "qty": 1, "amt": car[5]["residential"]})
    elif e == "liftgate_rate":
        s = next((x for x in ships if x["liftgate"]), ships[0])
        s["liftgate"] = 1
        ln = lines_of(s, "liftgate")
        if ln is None:
            ln = {"s": s, "type": "liftgate", "qty": 1, "amt": 0}
            lines.append(ln)
        ln["amt"] = 95.00 if car[5]["liftgate"] < 95 else 110.00
    elif e == "liftgate_parcel":
        s = rng.choice(ships)
        lines.append({"s": s, "type": "liftgate", "qty": 1, "amt": 12.00})
    elif e == "detention_unapproved":
        s = next((x for x in ships if not x["det"]), ships[0])
        s["det"] = 0
        for ln in [x for x in lines if x["s"] is s and x["type"] == "detention"]:
            lines.remove(ln)
        lines.append({"s": s, "type": "detention", "qty": 2, "amt": round(car[6] * 2, 2)})
    elif e == "detention_excess":
        s = ships[0]
        s["det"] = 1
        for ln in [x for x in lines if x["s"] is s and x["type"] == "detention"]:
            lines.remove(ln)
        lines.append({"s": s, "type": "detention", "qty": 3, "amt": round(car[6] * 3, 2)})
    elif e == "min_charge":  # a small shipment billed (correctly) at the rate row's minimum charge
        s = new_shipment(cid, ships[0]["date"])
        if car[3] == "LTL":
            s["kg"], s["l"], s["w"], s["h"] = 58.0, 100, 90, 45
        else:
            s["kg"], s["l"], s["w"], s["h"] = 0.8, 22, 16, 9
        for _ in range(40):
            lh = linehaul(rates[cid], ZONES[s["state"]], billable(s, car[4]))
            if round(lh * 100) * round(fuel[(cid, week_start(s["date"]))] * 10) % 1000 != 500:
                break
            s["state"] = rng.choice(list(ZONES))
            s["city"] = rng.choice(CITIES[s["state"]])
        ships.append(s)
        lines.extend(expected_lines(s))
    elif e == "dup_same":
        ln = next(x for x in lines if x["type"] == "linehaul")
        lines.append(dict(ln))
    elif e == "dup_september":
        s = rng.choice(sept_ship[cid])
        lines.extend(ln for ln in expected_lines(s) if ln["type"] == "linehaul")
    else:
        raise ValueError(e)


SCHEMA = """
create table carriers (carrier_id integer primary key, code text, name text, mode text, billing_email text);
create table shipments (shipment_id integer primary key, pro_number text, carrier_id integer references carriers,
                        ship_date text, dest_city text, dest_state text, actual_weight_kg real, length_cm integer,
                        width_cm integer, height_cm integer, pieces integer, residential integer,
                        liftgate_requested integer, inside_delivery integer, detention_approved_hours integer,
                        po_reference text, description text);
create table invoices (invoice_id integer primary key, carrier_id integer references carriers, invoice_no text,
                       invoice_date text, billing_period text, status text, amount_total real);
create table invoice_lines (line_id integer primary key, invoice_id integer references invoices,
                            shipment_id integer references shipments, charge_type text, quantity real, amount real);
create table tracking_events (event_id integer primary key, shipment_id integer references shipments,
                              event_time text, location text, event_code text, detail text);
create table invoice_disputes (dispute_id integer primary key, invoice_id integer references invoices,
                               disputed_amount real, line_ids text, note text, created_on text);
"""

PROCEDURE = """# Freight Invoice Audit Procedure

Pinecone Home Goods · Logistics Finance · revision 2025-07 (applies from the September 2025 billing period)

All outbound shipments leave the **Reno, NV distribution center**. Carrier invoices are audited line by
line before payment.

## Scope
Every carrier invoice with status `received` for billing period **2025-10**. Paid invoices are never
reopened, but they count when looking for duplicate billing.

## Expected charge per invoice line
1. **Billable weight** (kg): the greater of the actual weight and the dimensional weight
   (length × width × height in cm ÷ the carrier's `dim_divisor` in `contracts/contract_terms_2025.json`),
   rounded **up** to the next whole kilogram.
2. **Zone**: from `contracts/zone_chart.csv` by destination state.
3. **Linehaul**: billable kg × `rate_per_kg` of the carrier's rate row for that zone whose band contains the
   billable weight (`min_kg` ≤ kg ≤ `max_kg`, file `contracts/rates/<carrier code>_rates_2025.csv`), but
   never less than that row's `minimum_charge`. Round to the cent.
4. **Fuel**: expected linehaul × the carrier's fuel surcharge percentage for the week of the ship date
   (weeks start on Monday; `contracts/fuel_surcharge_2025.csv`), rounded to the cent.
5. **Accessorials** (`liftgate`, `residential`, `inside_delivery`): the flat amount in the carrier's contract,
   payable only when the shipment record shows the service (liftgate requested, residential, inside
   delivery). A charge type missing from the carrier's contract is not payable at all.
6. **Detention**: the contract hourly rate × the detention hours approved on the shipment record (none if
   no hours were approved or the contract has no detention rate).
7. **Duplicates**: a shipment may be billed for a charge type only once. If the same shipment and charge
   type already appears on an earlier invoice (earlier invoice date) — or earlier on the same invoice (lower
   line id) — the later line is a duplicate and its expected amount is **0**.

## Comparison and outcome
* Overcharge of a line = billed amount − expected amount. A line is disputed when its overcharge is
  **greater than** the contract's `dispute_tolerance_usd` ($0.50). Undercharges are ignored (never netted
  against overcharges).
* An invoice with at least one disputed line is **disputed** for the sum of its disputed overcharges, listing
  the disputed line ids. Every other invoice in scope is **approved**.

## Report
Write `audit/dispute_summary_2025-10.csv` with the header `invoice_no,carrier_code,disputed_amount` and one
row per disputed invoice (amount with 2 decimals).
"""

OLD_RATES_NOTE = "# SUPERSEDED — 2024 contract rates, replaced by contracts/rates/*_rates_2025.csv on 2025-01-01\n"
BULLETIN = [
    "{carrier} announces a general rate increase of {n}% effective 2026-01-05.",
    "{carrier}: holiday pickup schedule — no pickups on Thanksgiving Day.",
    "{carrier} reminds shippers that liftgate service must be requested on the bill of lading.",
    "{carrier} is changing its invoice PDF layout; EDI 210 files are unchanged.",
    "{carrier}: peak season surcharge of $0.35 per parcel starts in November (not part of our contract).",
    "{carrier} opened a new terminal in {city}.",
    "{carrier}: detention is billed after 2 free hours per stop when the shipper approves it.",
    "{carrier} customer service hours extended to 8 pm Pacific.",
]


def _write_files(ws: Path, scale: Scale, rng: random.Random, rates: dict, fuel: dict) -> None:
    def put(rel: str, text: str) -> None:
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    put("finance/freight_audit_procedure.md", PROCEDURE)
    terms = {"effective": "2025-01-01", "dispute_tolerance_usd": 0.50, "carriers": {}}
    for _cid, code, name, mode, div, acc, det in CARRIERS:
        terms["carriers"][code] = {"name": name, "mode": mode, "dim_divisor": div, "accessorials": acc,
                                   "detention_per_hour": det}
    put("contracts/contract_terms_2025.json", json.dumps(terms, indent=2) + "\n")
    put("contracts/zone_chart.csv", "origin,dest_state,zone\n" + "".join(f"RENO-DC,{st},{z}\n" for st, z in ZONES.items()))
    rows = ["week_start," + ",".join(c[1] for c in CARRIERS)]
    weeks = sorted({wk for (_c, wk) in fuel})
    for wk in weeks:
        rows.append(wk.isoformat() + "," + ",".join(f"{fuel[(c[0], wk)]:.1f}" for c in CARRIERS))
    put("contracts/fuel_surcharge_2025.csv", "\n".join(rows) + "\n")
    for cid, code, *_rest in CARRIERS:
        body = ["zone,min_kg,max_kg,rate_per_kg,minimum_charge"]
        body += [f"{z},{lo},{hi},{rate:.2f},{mn:.2f}" for z, lo, hi, rate, mn in rates[cid]]
        put(f"contracts/rates/{code.lower()}_rates_2025.csv", "\n".join(body) + "\n")
    body = ["zone,min_kg,max_kg,rate_per_kg,minimum_charge"]
    body += [f"{z},{lo},{hi},{rate * 0.94:.2f},{mn * 0.95:.2f}" for z, lo, hi, rate, mn in rates[1]]
    put("contracts/archive/rwx_rates_2024_SUPERSEDED.csv", OLD_RATES_NOTE + "\n".join(body) + "\n")

    def fill(s: str) -> str:
        return s.format(carrier=rng.choice(CARRIERS)[2], n=rng.choice([3.9, 4.5, 4.9, 5.9]),
                        city=rng.choice(["Fresno", "Boise", "Tucson", "Spokane"]))

    for i in range(scale.n_files(2)):
        d = dt.date(2025, 11, 3) - dt.timedelta(days=9 * i + rng.randint(0, 5))
        body = "\n".join(f"- {fill(x)}" for x in rng.sample(BULLETIN, rng.randint(3, 4)))
        put(f"carrier_bulletins/bulletin_{d.isoformat()}.md", f"# Carrier bulletin digest — {d.isoformat()}\n\n{body}\n")
    for i in range(scale.n_files(1)):
        d = dt.date(2025, 10, 27) - dt.timedelta(days=7 * i)
        rows = ["carrier,shipments,on_time_pct,damage_claims,avg_transit_days"]
        for c in CARRIERS:
            rows.append(f"{c[1]},{rng.randint(40, 400)},{rng.uniform(86, 99):.1f},{rng.randint(0, 6)},{rng.uniform(1.5, 5.5):.1f}")
        put(f"reports/carrier_scorecard_week_{d.isoformat()}.csv", "\n".join(rows) + "\n")
