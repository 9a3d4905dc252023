"""Leeds DC replenishment: suppliers, products, stock per warehouse, purchase orders, movements.

The rules (lead times, safety stock, price changes, credit holds, the policy itself) live only in
workspace files. Trap records are planted at every scale: open/draft/received POs, a boundary
position, credit-hold suppliers, discontinued lines and past/future price changes.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import shutil
import sqlite3
from datetime import date, timedelta
from pathlib import Path

TODAY = date(2024, 9, 9)
HOME = "LDS"
WAREHOUSES = [
    ("LDS", "Leeds Distribution Centre", "Leeds", "Priya Raman"),
    ("BHM", "Birmingham Hub", "Birmingham", "Tomasz Nowak"),
    ("GLA", "Glasgow Cross-Dock", "Glasgow", "Eilidh Fraser"),
    ("BRS", "Bristol Depot", "Bristol", "Marcus Oyelaran"),
    ("NCL", "Newcastle Satellite", "Newcastle", "Hannah Corbett"),
]
SAFETY_WEEKS = {"A": 2.0, "B": 1.5, "C": 1.0}
COVER_WEEKS = 4
REVIEW_WEEKS = 1
HELD = "SUP-104"
LIFTED = "SUP-107"

FIXED_SUPPLIERS = [
    ("SUP-101", "Northbridge Fasteners Ltd", "GB", "30 days EOM"),
    ("SUP-102", "Pennine Hygiene Products", "GB", "45 days"),
    ("SUP-103", "Albion Tools & Hardware", "GB", "30 days"),
    ("SUP-104", "Kestrel Safety Wear Ltd", "GB", "30 days"),
    ("SUP-105", "Meridian Electricals", "IE", "60 days"),
    ("SUP-106", "Thornfield Adhesives", "DE", "30 days"),
    ("SUP-107", "Calder Packaging Co", "GB", "30 days EOM"),
    ("SUP-108", "Brightwater Lubricants BV", "NL", "45 days"),
]
SUP_PREFIX = ["Ashgrove", "Harbour", "Wolds", "Greystone", "Fenwick", "Ridgeway", "Holloway", "Saxon",
              "Copperfield", "Lindqvist", "Oakhurst", "Marchetti", "Dunmore", "Stirling", "Vantage", "Emberton",
              "Kingsway", "Larchmont", "Whitcombe", "Rosendal"]
SUP_SUFFIX = ["Industrial Supplies", "Trade Packaging", "Fixings Ltd", "Workwear", "Cleaning Solutions",
              "Hardware GmbH", "Storage Systems", "Electrical Wholesale", "Sealants", "Tooling Ltd"]
COUNTRIES = ["GB", "GB", "GB", "IE", "DE", "NL", "PL", "FR", "IT", "SE"]
TERMS = ["30 days", "30 days EOM", "45 days", "60 days", "14 days"]

CATALOG = {
    "Fasteners": (["Hex Bolt", "Coach Screw", "Wood Screw", "Machine Screw", "Nyloc Nut", "Flat Washer",
                   "Anchor Bolt", "Self-Tapping Screw"],
                  ["M5 x 20", "M6 x 30", "M8 x 40", "M10 x 50", "M12 x 80", "4.0 x 40", "5.0 x 60", "M8 x 100"],
                  ["Zinc Plated", "A2 Stainless", "Bright", "Yellow Passivated", "Hot-Dip Galv"]),
    "Packaging": (["Stretch Wrap", "Carton Double Wall", "Carton Single Wall", "Packing Tape", "Void Fill Paper",
                   "Mailing Bag", "Pallet Corner Board", "Bubble Roll"],
                  ["500mm x 250m", "457x457x457", "305x229x229", "48mm x 66m", "750mm x 450m", "C4", "50x50x1000",
                   "600mm x 100m"],
                  ["Clear", "Brown", "White", "Recycled", "Printed FRAGILE"]),
    "Cleaning & Hygiene": (["Centrefeed Roll", "Hand Soap Cartridge", "Degreaser", "Nitrile Gloves",
                            "Floor Cleaner", "Bin Liner", "Blue Roll", "Sanitiser Gel"],
                           ["2-ply 150m", "800ml", "5L", "Size L", "Size M", "90L", "400 sheet", "500ml"],
                           ["Unscented", "Citrus", "Heavy Duty", "Eco", "Food Safe"]),
    "Hand Tools": (["Claw Hammer", "Tape Measure", "Utility Knife", "Spirit Level", "Screwdriver Set",
                    "Combination Spanner", "Hacksaw", "Pliers"],
                   ["16oz", "8m", "18mm", "600mm", "6pc", "13mm", "300mm", "200mm"],
                   ["Fibreglass Handle", "Magnetic", "Retractable", "Chrome Vanadium", "Insulated"]),
    "PPE": (["Safety Boot", "Hi-Vis Vest", "Safety Glasses", "Ear Defender", "Hard Hat", "Dust Mask FFP2",
             "Cut Resistant Glove", "Disposable Coverall"],
            ["Size 9", "Size XL", "Anti-Fog", "SNR 30", "Vented", "Box 20", "Level C", "Size L"],
            ["Black", "Yellow", "Orange", "Clear Lens", "White"]),
    "Electrical": (["LED Batten", "Extension Lead", "Cable Tie", "Junction Box", "Twin & Earth Cable",
                    "Fused Spur", "GU10 Lamp", "Insulation Tape"],
                   ["1500mm 24W", "4-Gang 5m", "300 x 4.8mm", "IP65 100mm", "2.5mm 50m", "13A", "5W 4000K",
                    "19mm x 33m"],
                   ["White", "Black", "Grey", "Weatherproof", "Low Smoke"]),
    "Adhesives & Sealants": (["Silicone Sealant", "Grab Adhesive", "PVA Wood Glue", "Expanding Foam",
                              "Epoxy Putty", "Threadlocker", "Contact Adhesive", "Frame Sealant"],
                             ["310ml", "290ml", "1L", "750ml", "114g", "50ml", "500ml", "380ml"],
                             ["Clear", "White", "Fast Grab", "Exterior Grade", "Medium Strength"]),
    "Lubricants": (["Penetrating Oil", "Lithium Grease", "Chain Lube", "Silicone Spray", "Cutting Fluid",
                    "Hydraulic Oil", "Dry PTFE Spray", "Copper Grease"],
                   ["400ml", "500g", "5L", "200ml", "1L", "20L", "300ml", "100g"],
                   ["Aerosol", "Tub", "Cartridge", "Trigger", "Drum"]),
}
NOTES = ["", "", "", "Fragile - store on low racking", "Hazmat: flammable store only", "Check batch codes on receipt",
         "Trade counter best seller", "Bulky - floor location only", "Customer-specific packaging for Hale & Co",
         "Shelf life 24 months - FEFO picking", "Replaces legacy SKU {old}", "Sold in outer only",
         "Temperature sensitive: keep above 5C", "Promo line in Q4 catalogue", "Supplier barcode unreliable - relabel"]


def _reset(root: Path) -> None:
    for name in ("db.sqlite", "db.sqlite-journal", "db.sqlite-wal", "db.sqlite-shm"):
        p = root / name
        if p.exists():
            p.unlink()
    ws = root / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    for p in sorted(ws.iterdir()):
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


def _write(root: Path, rel: str, text: str) -> None:
    path = root / "workspace" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")


def _csv(header: list[str], rows: list[list]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def rop_of(demand: int, lead: int, cls: str) -> int:
    return math.ceil(demand * (lead + REVIEW_WEEKS) + demand * SAFETY_WEEKS[cls])


SCHEMA = """
create table suppliers (code text primary key, name text not null, country text, contact_email text,
    payment_terms text, account_manager text);
create table warehouses (code text primary key, name text, city text, manager text);
create table products (id integer primary key, sku text unique not null, name text, category text,
    supplier_code text references suppliers(code), unit_cost real, pack_size integer, abc_class text,
    status text, notes text);
create table stock_levels (id integer primary key, sku text references products(sku),
    warehouse_code text references warehouses(code), on_hand integer, allocated integer,
    avg_weekly_demand integer, last_counted text);
create table purchase_orders (id integer primary key, po_number text unique, supplier_code text,
    warehouse_code text, status text, created_on text, expected_on text, notes text);
create table po_lines (id integer primary key, po_id integer references purchase_orders(id), sku text,
    qty integer, unit_cost real);
create table stock_movements (id integer primary key, sku text, warehouse_code text, moved_on text,
    kind text, qty integer, reference text);
"""


def build(root: Path, scale, seed: int) -> None:
    rng = random.Random(seed)
    root = Path(root)
    _reset(root)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)

    # suppliers ---------------------------------------------------------------------------------
    n_sup = scale.n_rows(10)
    suppliers = [list(s) for s in FIXED_SUPPLIERS]
    used = {s[1] for s in suppliers}
    while len(suppliers) < n_sup:
        name = f"{rng.choice(SUP_PREFIX)} {rng.choice(SUP_SUFFIX)}"
        if name in used:
            continue
        used.add(name)
        suppliers.append([f"SUP-{101 + len(suppliers)}", name, rng.choice(COUNTRIES), rng.choice(TERMS)])
    managers = ["Dev Patel", "Laura Kinsella", "Owen Pryce", "Sinead Murphy", "Gareth Hughes"]
    lead = {}
    for code, name, country, terms in suppliers:
        email = "orders@" + name.lower().split()[0] + ".example.com"
        con.execute("insert into suppliers values (?,?,?,?,?,?)",
                    (code, name, country, email, terms, rng.choice(managers)))
        lead[code] = rng.choice([1, 2, 2, 3, 3, 4, 5, 6]) if country == "GB" else rng.choice([3, 4, 5, 6, 8])
    lead[HELD], lead[LIFTED] = 2, 3
    for w in WAREHOUSES:
        con.execute("insert into warehouses values (?,?,?,?)", w)
    sup_codes = [s[0] for s in suppliers]

    # products ----------------------------------------------------------------------------------
    n_prod = scale.n_rows(150)
    cats = list(CATALOG)
    products = []
    skus = set()
    for i in range(n_prod):
        sup = sup_codes[i % len(sup_codes)] if i < 4 * len(sup_codes) else rng.choice(sup_codes)
        cat = rng.choice(cats)
        nouns, specs, fins = CATALOG[cat]
        name = f"{rng.choice(nouns)} {rng.choice(specs)} {rng.choice(fins)}"
        while True:
            sku = f"{cat[:2].upper()}-{rng.randint(10000, 99999)}"
            if sku not in skus:
                skus.add(sku)
                break
        cost = round(rng.choice([rng.uniform(0.4, 6), rng.uniform(3, 40), rng.uniform(20, 240)]), 2)
        pack = rng.choice([1, 1, 5, 6, 10, 12, 12, 20, 24, 50, 100])
        cls = rng.choices("ABC", weights=[2, 3, 5])[0]
        status = rng.choices(["active", "discontinued", "seasonal"], weights=[86, 9, 5])[0]
        note = rng.choice(NOTES).replace("{old}", f"{cat[:2].upper()}-{rng.randint(10000, 99999)}")
        products.append({"sku": sku, "name": name, "cat": cat, "sup": sup, "cost": cost, "pack": pack,
                         "cls": cls, "status": status, "note": note})
    # guarantee the special statuses exist among the first rows at every scale
    products[3]["status"] = "discontinued"
    products[11]["status"] = "discontinued"
    products[19]["status"] = "seasonal"
    for k, p in enumerate(products):
        con.execute("insert into products values (?,?,?,?,?,?,?,?,?,?)",
                    (k + 1, p["sku"], p["name"], p["cat"], p["sup"], p["cost"], p["pack"], p["cls"],
                     p["status"], p["note"]))
    by_sku = {p["sku"]: p for p in products}

    # stock levels ------------------------------------------------------------------------------
    stock = {}  # (sku, wh) -> dict
    forced_low = {HELD: 0, LIFTED: 0}
    n_forced_status = 0
    for p in products:
        whs = [w[0] for w in WAREHOUSES]
        at = [w for w in whs[1:] if rng.random() < 0.45]
        force = False
        if p["sup"] in forced_low and forced_low[p["sup"]] < 3:
            forced_low[p["sup"]] += 1
            force = True
        if p["status"] != "active" and n_forced_status < 4:
            n_forced_status += 1
            force = True
        if force or rng.random() < 0.75:
            at = ["LDS"] + at
        for wh in whs:
            if wh not in at:
                continue
            demand = rng.choice([0, 1, 2, 3]) if rng.random() < 0.12 else rng.randint(4, 140)
            if p["cost"] > 40:
                demand = max(demand // 8, 4) if demand >= 4 else demand
            if wh == HOME:
                if demand == 0 and force:
                    demand = 6
                rop = rop_of(demand, lead[p["sup"]], p["cls"])
                ratio = rng.uniform(0.15, 1.0) if (force or rng.random() < 0.35) else rng.uniform(1.05, 3.2)
                ip = int(rop * ratio) if demand else rng.randint(1, 40)
                allocated = rng.randint(0, max(1, ip // 4)) if rng.random() < 0.6 else 0
                on_hand = ip + allocated
            else:
                on_hand = rng.randint(0, 900)
                allocated = rng.randint(0, on_hand // 5)
            counted = TODAY - timedelta(days=rng.randint(3, 160))
            stock[(p["sku"], wh)] = {"on_hand": on_hand, "allocated": allocated, "demand": demand,
                                     "counted": counted.isoformat()}

    # purchase orders ---------------------------------------------------------------------------
    pos = []  # dicts with lines

    def add_po(sup, wh, status, lines, note=""):
        created = TODAY - timedelta(days=rng.randint(2, 75))
        if status == "draft":
            created = TODAY - timedelta(days=rng.randint(1, 6))
        expected = created + timedelta(weeks=lead.get(sup, 3))
        pos.append({"sup": sup, "wh": wh, "status": status, "created": created.isoformat(),
                    "expected": expected.isoformat(), "note": note, "lines": lines})

    sup_skus = {}
    for p in products:
        sup_skus.setdefault(p["sup"], []).append(p["sku"])
    po_notes = ["", "", "", "Chased by phone", "Part-shipped, balance to follow", "Confirm delivery slot 48h ahead",
                "Price agreed per quote Q-{q}", "Tail-lift required", "Deliver to goods-in door 3"]
    for _ in range(scale.n_rows(60)):
        sup = rng.choice(sup_codes)
        wh = rng.choice(["LDS", "BHM", "GLA", "BRS", "NCL", "BHM", "GLA", "BRS"])
        status = rng.choices(["received", "sent", "confirmed", "draft", "cancelled"], weights=[45, 18, 10, 9, 18])[0]
        cands = [s for s in sup_skus[sup] if (s, wh) in stock] or sup_skus[sup]
        lines = [(s, rng.randint(1, 30) * by_sku[s]["pack"]) for s in rng.sample(cands, min(len(cands),
                                                                                           rng.randint(1, 5)))]
        add_po(sup, wh, status, lines, rng.choice(po_notes).replace("{q}", str(rng.randint(1000, 9999))))

    def on_order(sku):
        return sum(q for po in pos if po["wh"] == HOME and po["status"] in ("sent", "confirmed")
                   for s, q in po["lines"] if s == sku)

    def needs(sku):
        p = by_sku[sku]
        st = stock[(sku, HOME)]
        ip = st["on_hand"] - st["allocated"] + on_order(sku)
        return ip <= rop_of(st["demand"], lead[p["sup"]], p["cls"])

    def reorderable(sku):
        p = by_sku[sku]
        return (sku, HOME) in stock and p["status"] == "active" and p["sup"] not in (HELD,)

    cands = [p["sku"] for p in products if reorderable(p["sku"]) and needs(p["sku"])
             and stock[(p["sku"], HOME)]["demand"] >= 4]
    planted = iter(cands)
    # open POs that cover the shortfall (sent / confirmed) -> no reorder needed
    for status in ("sent", "sent", "confirmed", "confirmed"):
        sku = next(planted)
        st = stock[(sku, HOME)]
        p = by_sku[sku]
        rop = rop_of(st["demand"], lead[p["sup"]], p["cls"])
        gap = rop - (st["on_hand"] - st["allocated"] + on_order(sku))
        qty = math.ceil((gap + st["demand"] * 3 + 1) / p["pack"]) * p["pack"]
        add_po(p["sup"], HOME, status, [(sku, qty)], "Expedite requested")
    # drafts, received and other-warehouse POs that must NOT count as on order
    for status, wh in (("draft", HOME), ("draft", HOME), ("received", HOME), ("sent", "BHM"), ("confirmed", "GLA")):
        sku = next(planted)
        st = stock[(sku, HOME)]
        p = by_sku[sku]
        rop = rop_of(st["demand"], lead[p["sup"]], p["cls"])
        qty = math.ceil((rop + st["demand"] * 4) / p["pack"]) * p["pack"]
        if (sku, wh) not in stock:
            stock[(sku, wh)] = {"on_hand": rng.randint(0, 300), "allocated": 0, "demand": rng.randint(4, 60),
                                "counted": (TODAY - timedelta(days=20)).isoformat()}
        add_po(p["sup"], wh, status, [(sku, qty)], "Raised by previous buyer - not yet approved" if status == "draft"
               else "")
    # boundary: inventory position exactly equal to the reorder point
    open_skus = {s for po in pos if po["wh"] == HOME for s, _ in po["lines"]}
    boundary = [p["sku"] for p in products if reorderable(p["sku"]) and p["sku"] not in open_skus
                and stock[(p["sku"], HOME)]["demand"] >= 5 and not needs(p["sku"])]
    for sku in boundary[:2]:
        st = stock[(sku, HOME)]
        p = by_sku[sku]
        st["allocated"] = rng.randint(3, 40)
        st["on_hand"] = rop_of(st["demand"], lead[p["sup"]], p["cls"]) + st["allocated"]

    for sku, wh in sorted(stock, key=lambda k: (by_sku[k[0]]["sku"], k[1])):
        st = stock[(sku, wh)]
        con.execute("insert into stock_levels (sku, warehouse_code, on_hand, allocated, avg_weekly_demand,"
                    " last_counted) values (?,?,?,?,?,?)",
                    (sku, wh, st["on_hand"], st["allocated"], st["demand"], st["counted"]))
    pos.sort(key=lambda po: (po["created"], po["sup"]))
    line_id = 0
    for k, po in enumerate(pos):
        po_id = k + 1
        con.execute("insert into purchase_orders values (?,?,?,?,?,?,?,?)",
                    (po_id, f"PO-{po['wh']}-{24000 + po_id * 7}", po["sup"], po["wh"], po["status"], po["created"],
                     po["expected"], po["note"]))
        for s, q in po["lines"]:
            line_id += 1
            cost = by_sku[s]["cost"]
            con.execute("insert into po_lines values (?,?,?,?,?)", (line_id, po_id, s, q, cost))

    # price changes -----------------------------------------------------------------------------
    reorder_now = [p["sku"] for p in products if reorderable(p["sku"]) and needs(p["sku"])]
    changes = []

    def bump(cost, lo, hi):
        return round(cost * rng.uniform(lo, hi), 2)

    picks = rng.sample(reorder_now, 7)
    for sku in picks[:3]:  # past-effective increases: apply
        eff = TODAY - timedelta(days=rng.randint(5, 60))
        changes.append([sku, by_sku[sku]["sup"], by_sku[sku]["cost"], bump(by_sku[sku]["cost"], 1.04, 1.18),
                        eff.isoformat()])
    sku = picks[3]  # effective today: applies
    changes.append([sku, by_sku[sku]["sup"], by_sku[sku]["cost"], bump(by_sku[sku]["cost"], 0.9, 0.97),
                    TODAY.isoformat()])
    sku = picks[4]  # two past changes: the later one wins
    mid = bump(by_sku[sku]["cost"], 1.05, 1.1)
    changes.append([sku, by_sku[sku]["sup"], by_sku[sku]["cost"], mid, (TODAY - timedelta(days=70)).isoformat()])
    changes.append([sku, by_sku[sku]["sup"], mid, bump(mid, 1.02, 1.08), (TODAY - timedelta(days=12)).isoformat()])
    for sku in picks[5:]:  # announced for later: ignore
        eff = TODAY + timedelta(days=rng.randint(1, 45))
        changes.append([sku, by_sku[sku]["sup"], by_sku[sku]["cost"], bump(by_sku[sku]["cost"], 1.05, 1.2),
                        eff.isoformat()])
    changed = {c[0] for c in changes}
    for _ in range(scale.n_rows(10)):
        p = rng.choice(products)
        if p["sku"] in changed:
            continue
        changed.add(p["sku"])
        eff = TODAY + timedelta(days=rng.randint(-120, 60))
        changes.append([p["sku"], p["sup"], p["cost"], bump(p["cost"], 0.92, 1.15), eff.isoformat()])
    changes.sort(key=lambda r: (r[4], r[0]))
    rows = [[f"PCN-{2400 + i}"] + c for i, c in enumerate(changes)]
    rows = [[r[0], r[1], r[2], f"{r[3]:.2f}", f"{r[4]:.2f}", r[5], rng.choice(["email", "portal", "letter"])]
            for r in rows]
    _write(root, "data/price_changes.csv", _csv(
        ["notice_ref", "sku", "supplier_code", "old_unit_cost", "new_unit_cost", "effective_from", "received_via"],
        rows))

    # stock movements (history, noise) ----------------------------------------------------------
    kinds = ["dispatch", "dispatch", "dispatch", "receipt", "transfer_in", "transfer_out", "adjustment"]
    keys = sorted(stock)
    moves = []
    for _ in range(scale.n_rows(500)):
        sku, wh = rng.choice(keys)
        kind = rng.choice(kinds)
        qty = rng.randint(1, 120) * (-1 if kind in ("dispatch", "transfer_out") else 1)
        if kind == "adjustment":
            qty = rng.choice([-1, 1]) * rng.randint(1, 6)
        moved = TODAY - timedelta(days=rng.randint(1, 90))
        ref = {"dispatch": "SO-", "receipt": "GRN-", "transfer_in": "TR-", "transfer_out": "TR-",
               "adjustment": "ADJ-"}[kind] + str(rng.randint(100000, 999999))
        moves.append((moved.isoformat(), sku, wh, kind, qty, ref))
    moves.sort()
    for m in moves:
        con.execute("insert into stock_movements (sku, warehouse_code, moved_on, kind, qty, reference)"
                    " values (?,?,?,?,?,?)", (m[1], m[2], m[0], m[3], m[4], m[5]))
    con.commit()
    con.close()

    _write_files(root, scale, rng, suppliers, lead)


def _write_files(root: Path, scale, rng: random.Random, suppliers, lead) -> None:
    _write(root, "policies/replenishment_policy_v3.md", POLICY_V3)
    _write(root, "policies/archive/replenishment_policy_v2.md", POLICY_V2)
    _write(root, "config/safety_stock.json", json.dumps({
        "version": "2024-07",
        "unit": "weeks of average weekly demand",
        "safety_weeks_by_abc_class": SAFETY_WEEKS,
        "review_period_weeks": REVIEW_WEEKS,
        "comment": "Applies to all warehouses from 1 July 2024. Class is the product master abc_class.",
    }, indent=2) + "\n")
    incoterms = ["DAP", "DDP", "FCA", "EXW", "CPT"]
    rows = []
    for code, name, country, _terms in suppliers:
        cutoff = rng.choice(["Mon 12:00", "Tue 16:00", "Wed 12:00", "Thu 15:00", "Fri 11:00"])
        rows.append([code, name, lead[code], cutoff, rng.choice(incoterms) if country != "GB" else "DAP",
                     (TODAY - timedelta(days=rng.randint(10, 200))).isoformat()])
    _write(root, "data/supplier_lead_times.csv",
           _csv(["supplier_code", "supplier_name", "lead_time_weeks", "order_cutoff", "incoterm", "last_reviewed"],
                rows))
    _write(root, "memos/2024-05-14_finance_credit_holds.txt", MEMO_HOLD)
    _write(root, "memos/2024-08-20_credit_hold_update.txt", MEMO_LIFT)

    # noise: weekly ops reports, general memos, meeting notes
    n_rep = scale.n_files(3)
    for i in range(n_rep):
        week = 35 - i
        _write(root, f"reports/ops_weekly_2024-W{week:02d}.md", _weekly_report(rng, week))
    memo_dates = sorted({TODAY - timedelta(days=rng.randint(3, 240)) for _ in range(scale.n_files(2) * 2)})
    for i in range(scale.n_files(2)):
        d = memo_dates[i]
        topic, body = NOISE_MEMOS[(i + rng.randint(0, 3)) % len(NOISE_MEMOS)]
        _write(root, f"memos/{d.isoformat()}_{topic}.txt", body.format(
            date=d.strftime("%d %B %Y"), n=rng.randint(2, 9), wh=rng.choice(WAREHOUSES)[1],
            name=rng.choice(["Priya Raman", "Tomasz Nowak", "Eilidh Fraser", "Marcus Oyelaran", "Hannah Corbett"])))
    for i in range(scale.n_files(1)):
        d = TODAY - timedelta(days=7 * (i + 1) + rng.randint(0, 3))
        _write(root, f"notes/{d.isoformat()}_buyers_meeting.md", _meeting_notes(rng, d, suppliers))


def _weekly_report(rng: random.Random, week: int) -> str:
    lines = [f"# Operations weekly report - 2024 week {week}", "",
             "| Site | Lines picked | OTIF % | Dock-to-stock (h) | Open exceptions |", "|---|---|---|---|---|"]
    for code, *_ in WAREHOUSES:
        lines.append(f"| {code} | {rng.randint(8000, 42000):,} | {rng.uniform(91, 99.6):.1f} | "
                     f"{rng.uniform(4, 30):.1f} | {rng.randint(0, 40)} |")
    lines += ["", "## Highlights", ""]
    pool = ["Peak readiness walk-through completed at {w}; two racking bays re-labelled.",
            "Agency headcount reduced by {n} FTE after volumes normalised.",
            "Carrier missed {n} collections on Tuesday; escalated to account manager.",
            "Pick-face replenishment trial in zone C reduced travel by {n}%.",
            "Returns backlog cleared; {n} pallets re-graded to B-stock.",
            "Fire alarm test overran by 25 minutes; no impact on despatch cut-off.",
            "New starter induction held for {n} colleagues.",
            "Inbound from Rotterdam delayed by port congestion (approx. {n} days)."]
    for s in rng.sample(pool, 3):
        lines.append("- " + s.format(w=rng.choice(WAREHOUSES)[1], n=rng.randint(2, 14)))
    lines += ["", "Stock accuracy remains above target; no policy changes this week.", ""]
    return "\n".join(lines)


def _meeting_notes(rng: random.Random, d: date, suppliers) -> str:
    sup = rng.choice(suppliers)
    other = rng.choice(suppliers)
    items = [f"- Reviewed fill-rate for {sup[1]} ({sup[0]}): {rng.randint(82, 99)}% over the last quarter.",
             f"- {other[1]} proposed moving to monthly invoicing; finance to respond.",
             f"- Seasonal plan for Q4 to be finalised by {(d + timedelta(days=21)).strftime('%d %b')}.",
             "- Reminder: the weekly replenishment run follows the current policy in policies/ only.",
             f"- Slow movers report: {rng.randint(40, 160)} SKUs with no demand in 26 weeks; review in October.",
             f"- Sample pallets from a prospective supplier arrive w/c {(d + timedelta(days=9)).strftime('%d %b')}."]
    rng.shuffle(items)
    return "\n".join([f"# Buyers' meeting {d.isoformat()}", "",
                      "Attendees: P. Raman, D. Patel, L. Kinsella, O. Pryce", ""] + items[:4] + [""])


NOISE_MEMOS = [
    ("carrier_change", "MEMO {date}\nFrom: Transport Planning\n\nFrom next month outbound parcels from {wh} move "
     "to the new carrier. Collection times are unchanged. Please use the new label printer profile; {n} stations "
     "have been configured so far.\n"),
    ("forklift_training", "MEMO {date}\nFrom: Health & Safety\n\nRefresher counterbalance training is due for {n} "
     "operators at {wh}. Bookings via {name}. Untrained staff must not operate MHE after the due date.\n"),
    ("bank_holiday_cover", "MEMO {date}\nFrom: HR\n\nBank holiday cover rota for {wh} is attached to the shared "
     "calendar. Overtime is paid at time and a half; {n} slots remain unfilled.\n"),
    ("racking_inspection", "MEMO {date}\nFrom: Facilities\n\nAnnual SEMA racking inspection at {wh} found {n} "
     "amber damage items. Affected bays are taped off; do not put stock away to them until repaired.\n"),
    ("stocktake_schedule", "MEMO {date}\nFrom: Inventory Control ({name})\n\nThe perpetual inventory schedule for "
     "next quarter is published. Each site counts {n} aisles per week. Count variances go to the stock-control "
     "mailbox, not to purchasing.\n"),
    ("it_downtime", "MEMO {date}\nFrom: IT Service Desk\n\nThe WMS will be unavailable for {n} hours on Sunday "
     "for patching. Handhelds will show offline; paper pick lists are in the supervisor office at {wh}.\n"),
    ("energy_saving", "MEMO {date}\nFrom: Sustainability lead {name}\n\nLED retrofit at {wh} is complete. Please "
     "report any dark spots in aisles; {n} sensors are still being calibrated.\n"),
]

POLICY_V3 = """# Replenishment Policy - Version 3

Effective: 1 July 2024 (supersedes Version 2 in policies/archive/)
Owner: Head of Inventory Planning

## 1. Scope
This policy governs the weekly replenishment run for each distribution centre. Buyers run it every
Monday for their site. Only products with status `active` in the product master are replenished by
this process. `seasonal` lines are bought through the seasonal plan and `discontinued` lines are never
re-ordered.

## 2. Inventory position
For each product stocked at the site:

    inventory position = on_hand - allocated + on_order

`on_order` is the quantity on purchase-order lines **for the same site** whose PO status is `sent` or
`confirmed`. Draft POs are not commitments and do not count; received POs are already in `on_hand`;
cancelled POs are ignored.

## 3. Reorder point
    reorder point = ceil( avg_weekly_demand x (lead_time_weeks + review_period_weeks) + safety_stock )
    safety_stock  = avg_weekly_demand x safety_weeks

* `lead_time_weeks` per supplier: data/supplier_lead_times.csv (the supplier master does not hold it).
* `review_period_weeks` and the `safety_weeks` per ABC class: config/safety_stock.json.
* A product is re-ordered when its inventory position is **at or below** its reorder point.

## 4. Order quantity
Order up to the reorder point plus 4 weeks of cover:

    order-up-to level = reorder point + 4 x avg_weekly_demand
    order quantity    = order-up-to level - inventory position, rounded UP to a whole multiple of pack_size

## 5. Prices
The product master `unit_cost` is refreshed only at month end. Order at the current price: if
data/price_changes.csv holds notices for the SKU with `effective_from` on or before the run date, use
the `new_unit_cost` of the latest such notice; notices effective after the run date are ignored.

## 6. Suppliers on credit hold
Finance announces credit holds and releases by memo (memos/). No new purchase order may be raised with
a supplier on credit hold; its products are skipped for the run and picked up once the hold is lifted.

## 7. Raising the orders
Raise one draft purchase order per supplier for the site, containing all of that supplier's lines for
the run. Buyers release drafts after the Monday review; do not edit or release existing POs.
"""

POLICY_V2 = """# Replenishment Policy - Version 2  [SUPERSEDED]

Status: superseded by Version 3 on 1 July 2024. Kept for audit purposes only.

## Inventory position
inventory position = on_hand + on_order, where on_order includes draft, sent and confirmed POs.

## Reorder point
reorder point = avg_weekly_demand x lead_time_weeks + safety stock, with safety stock of 3 weeks for
A items, 2 weeks for B items and 1 week for C items.

## Order quantity
Order up to 6 weeks of cover above the reorder point, rounded to the nearest pack.

## Prices
Use the product master unit_cost.
"""

MEMO_HOLD = """INTERNAL MEMO
Date: 14 May 2024
From: Accounts Payable (Finance)
To: All buyers and site managers
Subject: Suppliers placed on credit hold

With immediate effect the following supplier accounts are on CREDIT HOLD pending reconciliation of
disputed invoices:

  * SUP-104  Kestrel Safety Wear Ltd
  * SUP-107  Calder Packaging Co

Do not raise new purchase orders with these suppliers until Finance confirms the hold is lifted.
Existing open orders may be received as normal.

Regards,
Joanne Whitaker, AP Manager
"""

MEMO_LIFT = """INTERNAL MEMO
Date: 20 August 2024
From: Accounts Payable (Finance)
To: All buyers
Subject: Credit hold update

Following reconciliation, the credit hold on SUP-107 Calder Packaging Co is LIFTED with effect from today;
normal ordering may resume.

SUP-104 Kestrel Safety Wear Ltd REMAINS ON HOLD until further notice. Please keep sourcing PPE
requirements through the framework call-off process.

Joanne Whitaker, AP Manager
"""
