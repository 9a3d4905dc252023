"""Rotterdam cycle-count reconciliation: items, bins, bin stock, count sessions and count lines.

The SOP, the per-category tolerances and the memo that voids one session exist only as workspace
files. Planted at every scale: case counts, a serial-tracked variance, a unit-limit boundary, a value
breach, stock found in an empty bin, a category without its own tolerance, superseded duplicates and
the voided night-shift session.
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

WAREHOUSES = ["RTM", "ANR", "DUS"]
WEEK_START = {33: date(2024, 8, 12), 34: date(2024, 8, 19), 35: date(2024, 8, 26), 36: date(2024, 9, 2)}
TOLERANCES = {
    "Consumer Electronics": {"max_units": 1, "max_value_eur": 120.0},
    "Small Appliances": {"max_units": 2, "max_value_eur": 150.0},
    "Home & Garden": {"max_units": 4, "max_value_eur": 80.0},
    "Toys & Games": {"max_units": 5, "max_value_eur": 75.0},
    "Stationery": {"max_units": 20, "max_value_eur": 40.0},
    "Health & Beauty": {"max_units": 6, "max_value_eur": 60.0},
}
DEFAULT_TOL = {"max_units": 3, "max_value_eur": 50.0}
VOID_SESSION = "RTM-W36-C2"

CATS = {
    "Consumer Electronics": (["Bluetooth Speaker", "Wireless Earbuds", "USB-C Hub", "Smart Plug", "Action Camera",
                              "E-Reader", "Power Bank 20000mAh", "Mechanical Keyboard"], (9, 260)),
    "Small Appliances": (["Hand Blender", "Milk Frother", "Electric Kettle 1.7L", "Toaster 2-Slice",
                          "Air Fryer 4L", "Steam Iron", "Espresso Machine", "Hair Dryer"], (14, 230)),
    "Home & Garden": (["Plant Pot Ceramic", "Solar Garden Light", "Doormat Coir", "Storage Box 30L",
                       "Hose Connector Set", "Bamboo Cutting Board", "Scented Candle", "Cushion Cover"], (1.5, 35)),
    "Toys & Games": (["Puzzle 1000pc", "Wooden Train Set", "Card Game", "Plush Bear", "Building Blocks 250pc",
                      "Kite", "Marble Run", "Colouring Set"], (2, 45)),
    "Stationery": (["Gel Pen Black", "A5 Notebook Dotted", "Sticky Notes 76x76", "Highlighter Set",
                    "Stapler Mini", "Envelope C5 (50)", "Ring Binder A4", "Pencil HB"], (0.3, 9)),
    "Health & Beauty": (["Shampoo 250ml", "Hand Cream 75ml", "Toothbrush Soft", "Sunscreen SPF50",
                         "Lip Balm", "Shower Gel 400ml", "Cotton Pads (80)", "Nail File"], (1.2, 18)),
    "Sporting Goods": (["Yoga Mat", "Resistance Band Set", "Water Bottle 750ml", "Tennis Balls (3)",
                        "Skipping Rope", "Cycling Gloves", "Foam Roller", "Swim Goggles"], (2.5, 40)),
    "Pet Supplies": (["Cat Litter 10L", "Dog Chew Toy", "Pet Bowl Steel", "Bird Seed 1kg", "Cat Scratcher",
                      "Dog Lead 1.5m", "Fish Food 100g", "Pet Shampoo"], (1.5, 28)),
}
BRANDS = ["Nordvik", "Lumo", "Kaspar", "Verde", "Halcyon", "Brio", "Zenit", "Oakley & Finch", "Maru", "Tidal"]
COUNTERS = ["J. de Vries", "S. Bakker", "M. Jansen", "A. El Amrani", "K. Visser", "T. Smit", "L. Mulder",
            "R. de Boer", "F. Yilmaz", "N. Peeters", "D. Hoffmann", "E. Claes"]
PLANTED = [  # (category, case_qty, unit_cost, serial)
    ("Stationery", 10, 0.85, 0),        # P2 case count, within tolerance after conversion
    ("Health & Beauty", 12, 3.40, 0),   # P1 case count, zero variance
    ("Consumer Electronics", 1, 89.00, 1),  # P3 serial-tracked
    ("Toys & Games", 6, 4.99, 0),       # P4 unit boundary (= max_units)
    ("Small Appliances", 1, 95.50, 0),  # P5 value breach
    ("Pet Supplies", 4, 2.35, 0),       # P6 found in an empty bin (default tolerance)
    ("Sporting Goods", 5, 3.00, 0),     # P7 default tolerance, units breach
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


def _tol(cat: str) -> dict:
    return TOLERANCES.get(cat, DEFAULT_TOL)


SCHEMA = """
create table items (sku text primary key, description text, category text, uom text, case_qty integer,
    unit_cost real, serial_tracked integer);
create table bins (bin_code text primary key, warehouse text, zone text, aisle integer, level integer,
    bin_type text);
create table bin_stock (id integer primary key, bin_code text references bins(bin_code),
    sku text references items(sku), qty integer, last_movement text);
create table count_sessions (session_id text primary key, warehouse text, week integer, zone text,
    started_at text, shift text, team text, status text);
create table count_lines (id integer primary key, session_id text references count_sessions(session_id),
    bin_code text, sku text, counted_qty integer, counted_uom text, counted_by text, counted_at text,
    status text, remark text);
create table adjustments (id integer primary key, bin_code text, sku text, delta_qty integer, value_eur real,
    reason_code text, count_line_id integer, posted_at text, posted_by text);
"""


def build(root: Path, scale, seed: int) -> None:
    rng = random.Random(seed)
    root = Path(root)
    _reset(root)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)

    # items -------------------------------------------------------------------------------------
    items = []
    used = set()

    def new_sku():
        while True:
            s = f"ITM-{rng.randint(100000, 999999)}"
            if s not in used:
                used.add(s)
                return s

    for cat, case, cost, serial in PLANTED:
        nouns, _ = CATS[cat]
        items.append({"sku": new_sku(), "desc": f"{rng.choice(BRANDS)} {rng.choice(nouns)}", "cat": cat,
                      "case": case, "cost": cost, "serial": serial})
    for _ in range(scale.n_rows(110) - len(PLANTED)):
        cat = rng.choice(list(CATS))
        nouns, (lo, hi) = CATS[cat]
        cost = round(rng.uniform(lo, hi), 2)
        serial = 1 if cat in ("Consumer Electronics", "Small Appliances") and cost > 80 and rng.random() < 0.6 else 0
        case = 1 if cost > 60 else rng.choice([1, 2, 4, 6, 6, 8, 10, 12, 12, 24, 48])
        items.append({"sku": new_sku(), "desc": f"{rng.choice(BRANDS)} {rng.choice(nouns)}", "cat": cat,
                      "case": case, "cost": cost, "serial": serial})
    order = list(range(len(items)))
    rng.shuffle(order)
    for i in order:
        it = items[i]
        con.execute("insert into items values (?,?,?,?,?,?,?)",
                    (it["sku"], it["desc"], it["cat"], "EA", it["case"], it["cost"], it["serial"]))
    by_sku = {it["sku"]: it for it in items}

    # bins and stock ----------------------------------------------------------------------------
    bins = {wh: [] for wh in WAREHOUSES}
    stock = {}  # (bin, sku) -> qty
    last_move = {}
    for wh in WAREHOUSES:
        codes = set()
        while len(codes) < scale.n_rows(70):
            zone = rng.choice("AABBCCD")
            code = f"{wh}-{zone}{rng.randint(1, 9 * scale.rows):02d}-{rng.randint(1, 5)}{rng.choice('ABCD')}"
            codes.add(code)
        for code in sorted(codes):
            bins[wh].append(code)
            for sku in rng.sample([it["sku"] for it in items], rng.randint(1, 3)):
                it = by_sku[sku]
                qty = rng.randint(1, 8) if it["cost"] > 60 else rng.randint(1, 30) * it["case"]
                stock[(code, sku)] = qty
                last_move[(code, sku)] = (date(2024, 9, 1) - timedelta(days=rng.randint(1, 120))).isoformat()
    for wh in WAREHOUSES:
        for code in bins[wh]:
            zone = code.split("-")[1][0]
            con.execute("insert into bins values (?,?,?,?,?,?)",
                        (code, wh, zone, int(code.split("-")[1][1:]), int(code.split("-")[2][0]),
                         "pick" if code.split("-")[2][0] in "12" else rng.choice(["reserve", "bulk"])))

    def zone_bins(wh, zone):
        return [b for b in bins[wh] if b.split("-")[1][0] == zone]

    # RTM week 36 count lines -------------------------------------------------------------------
    lines = []  # dicts: session, bin, sku, counted, uom, at, status, remark
    taken = set()

    def pick_pair(zone, want=None):
        cands = [(b, s) for (b, s) in stock if b.startswith(f"RTM-{zone}") and (b, s) not in taken
                 and (want is None or want(by_sku[s]))]
        pair = rng.choice(sorted(cands))
        taken.add(pair)
        return pair

    def counted_for(sku, sys_qty, kind):
        it = by_sku[sku]
        tol = _tol(it["cat"])
        if kind == "zero":
            return sys_qty
        if kind == "small":
            v = rng.randint(1, tol["max_units"])
            while v > 1 and v * it["cost"] > tol["max_value_eur"]:
                v -= 1
        else:
            v = tol["max_units"] + rng.randint(1, 12)
        if rng.random() < 0.5 and sys_qty - v >= 0:
            v = -v
        return sys_qty + v

    def at(day, shift):
        base = datetime.combine(WEEK_START[36] + timedelta(days=day), datetime.min.time())
        start = 22 if shift == "night" else 7
        return (base + timedelta(hours=start, minutes=rng.randint(0, 300))).strftime("%Y-%m-%d %H:%M")

    def add_line(session, day, shift, pair, counted, uom="EA", remark=""):
        lines.append({"session": session, "bin": pair[0], "sku": pair[1], "counted": counted, "uom": uom,
                      "by": rng.choice(COUNTERS), "at": at(day, shift), "status": "submitted", "remark": remark})

    def random_line(session, day, shift, zone):
        pair = pick_pair(zone)
        it = by_sku[pair[1]]
        kind = rng.choices(["zero", "small", "large"], weights=[50, 32, 18])[0]
        counted = counted_for(pair[1], stock[pair], kind)
        if it["case"] > 1 and counted % it["case"] == 0 and counted > 0 and rng.random() < 0.3:
            add_line(session, day, shift, pair, counted // it["case"], "CS")
        else:
            add_line(session, day, shift, pair, counted, "EA", rng.choice(["", "", "", "Label damaged",
                                                                          "Mixed with neighbour bin",
                                                                          "Top shelf, used ladder"]))

    p = [it["sku"] for it in items[:len(PLANTED)]]
    a_bins = zone_bins("RTM", "A")
    # P1: case count, zero variance
    b = a_bins[0]
    stock[(b, p[1])] = 12 * rng.randint(3, 9)
    taken.add((b, p[1]))
    add_line("RTM-W36-A1", 1, "day", (b, p[1]), stock[(b, p[1])] // 12, "CS", "Counted sealed cases")
    # P2: case count, one case short (-10 EA, within Stationery tolerance)
    b = a_bins[1 % len(a_bins)]
    stock[(b, p[0])] = 10 * rng.randint(4, 12)
    taken.add((b, p[0]))
    add_line("RTM-W36-A1", 1, "day", (b, p[0]), stock[(b, p[0])] // 10 - 1, "CS")
    # P3: serial-tracked, one unit missing
    b = a_bins[2 % len(a_bins)]
    stock[(b, p[2])] = rng.randint(3, 7)
    taken.add((b, p[2]))
    add_line("RTM-W36-A1", 1, "day", (b, p[2]), stock[(b, p[2])] - 1, "EA", "One unit missing, box opened")
    # P4: exactly max_units over
    b = a_bins[3 % len(a_bins)]
    stock[(b, p[3])] = rng.randint(10, 30)
    taken.add((b, p[3]))
    add_line("RTM-W36-A1", 1, "day", (b, p[3]), stock[(b, p[3])] + 5, "EA")
    # P5: within units, over value
    b = zone_bins("RTM", "B")[0]
    stock[(b, p[4])] = rng.randint(4, 8)
    taken.add((b, p[4]))
    add_line("RTM-W36-B1", 2, "day", (b, p[4]), stock[(b, p[4])] - 2, "EA")
    # P6: found stock in a bin with no stock record for the item
    b = zone_bins("RTM", "B")[1]
    stock.pop((b, p[5]), None)
    taken.add((b, p[5]))
    add_line("RTM-W36-B1", 2, "day", (b, p[5]), 3, "EA", "Not on system for this bin")
    # P7: category without its own tolerance (default 3 units): 4 over -> recount
    b = zone_bins("RTM", "C")[0]
    stock[(b, p[6])] = rng.randint(10, 25)
    taken.add((b, p[6]))
    add_line("RTM-W36-C1", 2, "day", (b, p[6]), stock[(b, p[6])] + 4, "EA")

    # P8: a small variance in zone A that the Friday recount overturns (earlier line is superseded)
    p8 = pick_pair("A", lambda it: not it["serial"] and it["cost"] < 5 and it["sku"] not in p)
    add_line("RTM-W36-A1", 1, "day", p8, stock[p8] + 1, "EA")
    for _ in range(scale.n_rows(8)):
        random_line("RTM-W36-A1", 1, "day", "A")
    for _ in range(scale.n_rows(8)):
        random_line("RTM-W36-B1", 2, "day", "B")
    for _ in range(scale.n_rows(8)):
        random_line("RTM-W36-C1", 2, "day", "C")
    # voided night-shift session: mostly clean-looking counts
    for k in range(scale.n_rows(5)):
        pair = pick_pair("C")
        kind = "zero" if k % 3 != 2 else "small"
        add_line(VOID_SESSION, 2, "night", pair, counted_for(pair[1], stock[pair], kind))
    # recount session in zone A on Friday: repeats some A1 lines (later timestamp) plus new bins
    a1 = [ln for ln in lines if ln["session"] == "RTM-W36-A1" and ln["remark"] == "" and ln["uom"] == "EA"
          and not by_sku[ln["sku"]]["serial"] and ln["sku"] not in p]
    first = [ln for ln in a1 if (ln["bin"], ln["sku"]) == p8]
    dups = first + [ln for ln in a1 if ln not in first][: scale.n_rows(3) - 1]
    for ln in dups:
        sys_qty = stock[(ln["bin"], ln["sku"])]
        kind = "zero" if rng.random() < 0.6 or ln is dups[0] else "small"
        add_line("RTM-W36-A2", 4, "day", (ln["bin"], ln["sku"]), counted_for(ln["sku"], sys_qty, kind), "EA",
                 "Recount requested by supervisor")
    for _ in range(scale.n_rows(2)):
        random_line("RTM-W36-A2", 4, "day", "A")

    # sessions ----------------------------------------------------------------------------------
    sessions = []
    teams = {"RTM": ["Dagploeg 1", "Dagploeg 2", "Nachtploeg 2"], "ANR": ["Ploeg Noord", "Ploeg Zuid"],
             "DUS": ["Team Rhein", "Team Ruhr"]}
    hist_lines = []
    for wh in WAREHOUSES:
        for week in (33, 34, 35, 36):
            for zone, day in (("A", 1), ("B", 2), ("C", 2)):
                sid = f"{wh}-W{week}-{zone}1"
                started = datetime.combine(WEEK_START[week] + timedelta(days=day), datetime.min.time()) + \
                    timedelta(hours=7, minutes=rng.randint(0, 50))
                done = week < 36
                sessions.append((sid, wh, week, zone, started.strftime("%Y-%m-%d %H:%M"), "day",
                                 teams[wh][0] if zone != "C" else teams[wh][1],
                                 "reconciled" if done else "submitted"))
                if wh == "RTM" and week == 36:
                    continue
                zb = zone_bins(wh, zone)
                for _ in range(scale.n_rows(6)):
                    b = rng.choice(zb)
                    skus_here = [s for (bb, s) in stock if bb == b] or [rng.choice(items)["sku"]]
                    sku = rng.choice(sorted(skus_here))
                    sys_qty = stock.get((b, sku), 0)
                    kind = rng.choices(["zero", "small", "large"], weights=[55, 30, 15])[0]
                    counted = counted_for(sku, sys_qty, kind)
                    if done:
                        status = "matched" if counted == sys_qty else rng.choice(["adjusted", "adjusted", "recount"])
                    else:
                        status = "submitted"
                    t = started + timedelta(minutes=rng.randint(5, 400))
                    hist_lines.append({"session": sid, "bin": b, "sku": sku, "counted": counted, "uom": "EA",
                                       "by": rng.choice(COUNTERS), "at": t.strftime("%Y-%m-%d %H:%M"),
                                       "status": status, "remark": "", "delta": counted - sys_qty})
    sessions.append(("RTM-W36-C2", "RTM", 36, "C", "2024-09-04 22:05", "night", "Nachtploeg 2", "submitted"))
    sessions.append(("RTM-W36-A2", "RTM", 36, "A", "2024-09-06 07:20", "day", "Dagploeg 2", "submitted"))
    sessions.append(("DUS-W36-C2", "DUS", 36, "C", "2024-09-04 22:15", "night", "Team Ruhr", "submitted"))
    for _ in range(scale.n_rows(3)):
        b = rng.choice(zone_bins("DUS", "C"))
        sku = rng.choice([s for (bb, s) in stock if bb == b] or [items[0]["sku"]])
        hist_lines.append({"session": "DUS-W36-C2", "bin": b, "sku": sku, "counted": stock.get((b, sku), 0),
                           "uom": "EA", "by": rng.choice(COUNTERS), "at": "2024-09-04 23:40", "status": "submitted",
                           "remark": "", "delta": 0})
    sessions.sort()
    for s in sessions:
        con.execute("insert into count_sessions values (?,?,?,?,?,?,?,?)", s)

    all_lines = hist_lines + lines
    all_lines.sort(key=lambda ln: (ln["at"], ln["session"], ln["bin"], ln["sku"]))
    adjustments = []
    for i, ln in enumerate(all_lines):
        con.execute("insert into count_lines values (?,?,?,?,?,?,?,?,?,?)",
                    (i + 1, ln["session"], ln["bin"], ln["sku"], ln["counted"], ln["uom"], ln["by"], ln["at"],
                     ln["status"], ln["remark"]))
        if ln["status"] == "adjusted":
            adjustments.append((ln["at"][:10], ln["bin"], ln["sku"], ln["delta"], "CC-VAR", i + 1))
    for _ in range(scale.n_rows(70)):
        wh = rng.choice(WAREHOUSES)
        b = rng.choice(bins[wh])
        sku = rng.choice([s for (bb, s) in stock if bb == b] or [items[0]["sku"]])
        d = (date(2024, 9, 1) - timedelta(days=rng.randint(1, 150))).isoformat()
        adjustments.append((d, b, sku, -rng.randint(1, 6), rng.choice(["DMG", "DMG", "RCV-ERR", "EXPIRED", "QA-HOLD"]),
                            None))
    adjustments.sort(key=lambda a: (a[0], a[1], a[2]))
    for a in adjustments:
        cost = by_sku[a[2]]["cost"]
        con.execute("insert into adjustments (bin_code, sku, delta_qty, value_eur, reason_code, count_line_id,"
                    " posted_at, posted_by) values (?,?,?,?,?,?,?,?)",
                    (a[1], a[2], a[3], round(a[3] * cost, 2), a[4], a[5], a[0], rng.choice(COUNTERS[:4])))
    for (b, sku) in sorted(stock):
        con.execute("insert into bin_stock (bin_code, sku, qty, last_movement) values (?,?,?,?)",
                    (b, sku, stock[(b, sku)], last_move.get((b, sku), "2024-08-30")))
    con.commit()
    con.close()
    _write_files(root, scale, rng, bins)


def _csv(header, rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def _write_files(root: Path, scale, rng: random.Random, bins) -> None:
    _write(root, "procedures/SOP-INV-07_cycle_count_reconciliation.md", SOP)
    _write(root, "procedures/SOP-INV-03_goods_receipt.md", SOP_GR)
    _write(root, "config/count_tolerances.json", json.dumps(
        {"document": "Cycle count auto-adjust tolerances", "effective_from": "2024-06-01", "currency": "EUR",
         "by_category": TOLERANCES, "default": DEFAULT_TOL,
         "notes": "Both limits apply to the absolute variance of a line, in eaches (EA)."}, indent=2) + "\n")
    old = {k: {"max_units": v["max_units"] * 2, "max_value_eur": v["max_value_eur"] * 2}
           for k, v in TOLERANCES.items()}
    _write(root, "config/archive/count_tolerances_2023.json", json.dumps(
        {"document": "Cycle count auto-adjust tolerances", "effective_from": "2023-01-01",
         "superseded_on": "2024-06-01", "by_category": old, "default": {"max_units": 8, "max_value_eur": 120.0}},
        indent=2) + "\n")
    _write(root, "memos/2024-09-06_handheld_scanner_fault.txt", MEMO_VOID)

    # noise: shift handover logs, other memos, count plans
    days = [date(2024, 8, 19) + timedelta(days=i) for i in range(21)]
    n_logs = scale.n_files(4)
    for i in range(n_logs):
        d = days[-1 - (i // 2)]
        shift = "day" if i % 2 == 0 else "late"
        _write(root, f"shift_logs/{d.isoformat()}_{shift}.txt", _shift_log(rng, d, shift))
    for i in range(scale.n_files(2)):
        topic, body = NOISE_MEMOS[(i * 3 + rng.randint(0, 2)) % len(NOISE_MEMOS)]
        d = date(2024, 9, 5) - timedelta(days=7 * i + rng.randint(0, 5))
        _write(root, f"memos/{d.isoformat()}_{topic}.txt", body.format(d=d.strftime("%d-%m-%Y"),
                                                                        n=rng.randint(2, 30)))
    for i in range(scale.n_files(2)):
        week = 37 + i
        rows = []
        for wh in ("RTM", "ANR", "DUS"):
            for zone in "ABCD":
                rows.append([wh, zone, rng.choice(["Mon", "Tue", "Wed", "Thu"]), rng.choice(["day", "late"]),
                             rng.randint(15, 70), rng.choice(["ABC-A", "ABC-B", "full", "random"])])
        _write(root, f"schedules/count_plan_2024-W{week}.csv",
               _csv(["warehouse", "zone", "day", "shift", "bins_planned", "selection"], rows))


def _shift_log(rng, d: date, shift: str) -> str:
    pool = ["Dock 4 door sensor faulty; reported to facilities.",
            "Inbound container MSKU{n} unloaded, {k} pallets, no damage.",
            "Reach truck RT-{k} battery swapped mid-shift.",
            "Picking backlog cleared by 14:30.",
            "Two agency staff did not show; zone D picking slowed.",
            "Fire door in aisle B{k} propped open - closed and reported.",
            "Returns cage full; overflow moved to bulk area.",
            "Cycle count team finished zone {z} early; paperwork handed to the inventory controller.",
            "Label printer at packing bench {k} jammed twice.",
            "Carrier collection for DHL late by 40 minutes."]
    lines = [f"SHIFT HANDOVER - Rotterdam DC - {d.isoformat()} ({shift})",
             f"Supervisor: {rng.choice(COUNTERS)}", ""]
    for s in rng.sample(pool, 4):
        lines.append("* " + s.format(n=rng.randint(1000000, 9999999), k=rng.randint(1, 12), z=rng.choice("ABC")))
    lines += ["", f"Headcount: {rng.randint(18, 44)}  |  Lines picked: {rng.randint(6000, 19000)}", ""]
    return "\n".join(lines)


NOISE_MEMOS = [
    ("peak_season_hours", "Memo {d} - HR\nPeak season opening hours start in October. Voluntary overtime sign-up "
     "closes on Friday; {n} slots left on the late shift.\n"),
    ("pallet_exchange", "Memo {d} - Transport\nEuro-pallet exchange with carriers is suspended for {n} days while "
     "the pallet account is audited. Record all outgoing pallets on the exchange sheet.\n"),
    ("canteen", "Memo {d} - Facilities\nThe canteen will be closed for refurbishment for {n} days. Food trucks will "
     "be available at the car park entrance.\n"),
    ("ppe_reminder", "Memo {d} - HSE\nReminder: safety shoes and hi-vis are mandatory on the warehouse floor. {n} "
     "near-miss reports last month involved pedestrians in forklift aisles.\n"),
    ("wms_release", "Memo {d} - IT\nWMS release 7.{n} goes live on Sunday night. Change: the count screen now shows "
     "the case size next to the unit of measure. No change to count procedures.\n"),
    ("audit_visit", "Memo {d} - Finance\nExternal auditors will attend the year-end count planning meeting. Please "
     "keep count sheets for at least {n} months.\n"),
]

SOP = """# SOP-INV-07 - Cycle count reconciliation

Version 4.1 - owner: Inventory Control, Rotterdam DC - applies to all sites

## 1. Purpose
Cycle counts are counted by the count teams and submitted per count session. The inventory controller
reconciles every *submitted* count line of the week against the system stock of the bin and resolves
each line with exactly one outcome.

## 2. Steps

1. **Voided sessions.** If a session has been declared void (memo from the site manager or inventory
   control), every submitted line of that session is sent to `recount`, whatever was counted.
2. **Superseded lines.** If the same bin and item were counted more than once in the week (outside
   voided sessions), only the line with the latest `counted_at` is reconciled; the earlier lines are
   resolved as `superseded` (no stock change).
3. **Unit of measure.** Counters may record full cases: `counted_uom = CS`. Convert to eaches with the
   item's `case_qty` before comparing (system stock is always held in EA).
4. **Variance.** variance = counted quantity (EA) - system quantity of that item in that bin. If the
   item has no stock record in the bin, the system quantity is 0.
5. **Zero variance** -> outcome `matched`.
6. **Within tolerance** -> outcome `adjust`: post a stock adjustment of exactly the variance. A variance
   is within tolerance when BOTH |variance| <= max_units AND |variance| x unit_cost <= max_value_eur,
   using the item's category limits in config/count_tolerances.json (the `default` limits for a
   category that is not listed). Limits are inclusive.
7. **Serial-tracked items** (`serial_tracked = 1`) are never adjusted from a count: any non-zero
   variance goes to `recount`.
8. **Everything else** -> outcome `recount` (no stock change; the line is re-issued to the count team).

## 3. Recording
Resolve lines with the reconciliation tool. Adjustments are valued at the item's unit cost and carry
reason code CC-VAR automatically. Report the net value of the adjustments posted (gains minus losses).
"""

SOP_GR = """# SOP-INV-03 - Goods receipt

1. Check the delivery note against the ASN; note any shortage on the CMR.
2. Scan every pallet label; unlabelled pallets go to the quarantine lane.
3. Damaged goods are booked with reason code DMG and photographed.
4. Receipt discrepancies are booked with reason code RCV-ERR by the inbound supervisor only.
5. Put-away within 4 hours of receipt; fast movers directly to the pick face.
"""

MEMO_VOID = """From: Site Manager, Rotterdam DC
Date: 6 September 2024
To: Inventory Control; Count teams
Subject: Handheld scanner fault - night shift 4 September

During the night shift of Wednesday 4 September, the zone C cycle count in Rotterdam was carried out
with handhelds HH-21 to HH-26, which were running the faulty firmware build that drops the last digit
of quantities above 99 and sometimes books the count against the previously scanned bin.

That count session is therefore VOID. Do not post any adjustment from it: every line of that session
must be sent for recount. The day-shift counts of the same week are not affected, and the other sites
use a different scanner fleet.

Regards,
Willem Verhoeven
"""
