"""AP three-way match: vendors, purchase orders with lines, goods receipts, vendor invoices with lines.

The matching policy (check order, hold codes, duplicate-number normalisation, cumulative quantity rule,
price tolerance), the vendor tolerance overrides (JSON), the payment-run FX rates (CSV) and a compliance
memo naming a vendor under review live only in workspace files. Planted queue invoices at every scale
hit each rule, the priority between rules, and the queue-order dependency.
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

RUN_DATE = date(2024, 10, 31)
FX = {"USD": 1.0, "EUR": 1.0862, "GBP": 1.2987, "CAD": 0.7194, "SEK": 0.0937, "JPY": 0.006583}
FX_OLD = {"2024-08": {"USD": 1.0, "EUR": 1.1047, "GBP": 1.3129, "CAD": 0.7411, "SEK": 0.0976, "JPY": 0.006874},
          "2024-09": {"USD": 1.0, "EUR": 1.1135, "GBP": 1.3375, "CAD": 0.7392, "SEK": 0.0985, "JPY": 0.006962}}
OVERRIDES = {"V-1004": 5.0, "V-1011": 0.0, "V-1016": 3.5}
REVIEW_VENDOR = "V-1013"

VENDORS = [
    ("V-1001", "Apex Industrial Supply Inc.", "US", "USD", "active", "Net 30"),
    ("V-1002", "Brightline Office Products", "US", "USD", "active", "Net 45"),
    ("V-1003", "Cascade Packaging Co.", "US", "USD", "active", "Net 30"),
    ("V-1004", "Delmar Freight Services", "US", "USD", "active", "Net 15"),
    ("V-1005", "Elbe Maschinenbau GmbH", "DE", "EUR", "active", "Net 60"),
    ("V-1006", "Fjord Components AB", "SE", "SEK", "active", "Net 30"),
    ("V-1007", "Greenway Janitorial LLC", "US", "USD", "blocked", "Net 30"),
    ("V-1008", "Hartwell Electronics Ltd", "GB", "GBP", "active", "Net 30"),
    ("V-1009", "Ironbridge Steel Corp.", "US", "USD", "active", "Net 60"),
    ("V-1010", "Juniper Lab Supplies", "CA", "CAD", "active", "Net 30"),
    ("V-1011", "Kobayashi Precision KK", "JP", "JPY", "active", "Net 45"),
    ("V-1012", "Lumen Lighting SAS", "FR", "EUR", "active", "Net 45"),
    ("V-1013", "Nordlicht Logistik GmbH", "DE", "EUR", "active", "Net 30"),
    ("V-1014", "Oakridge IT Services", "US", "USD", "active", "Net 30"),
    ("V-1015", "Pinnacle Safety Gear", "US", "USD", "active", "Net 30"),
    ("V-1016", "Quayside Marine Parts Ltd", "GB", "GBP", "active", "Net 60"),
    ("V-1017", "Redwood Timber Products", "CA", "CAD", "active", "Net 30"),
    ("V-1018", "Sierra Chemical Distributors", "US", "USD", "blocked", "Net 30"),
    ("V-1019", "Tessaro Ceramiche SpA", "IT", "EUR", "active", "Net 60"),
]
ITEMS = [
    ("BRG-6204", "Deep groove ball bearing 6204-2RS", "EA", 4, 18), ("MTR-0750", "Motor 0.75 kW IE3", "EA", 180, 420),
    ("PLT-1200", "Euro pallet 1200x800 heat treated", "EA", 9, 22), ("TAP-4866", "Carton tape 48mm x 66m", "CS", 38, 64),
    ("GLV-NTR9", "Nitrile gloves size 9, box of 100", "BX", 6, 14), ("CBL-CAT6", "Cat6 patch cable 3m", "EA", 3, 9),
    ("LBL-4X6T", "Thermal labels 4x6, roll of 500", "RL", 11, 24), ("FLT-HEPA", "HEPA filter H13 592x592", "EA", 95, 210),
    ("STL-PL10", "Steel plate S355 10mm, per tonne", "TN", 780, 1150), ("SOL-IPA5", "Isopropyl alcohol 99% 5L", "EA", 21, 44),
    ("LED-PNL6", "LED panel 600x600 36W", "EA", 24, 58), ("FRT-LTL", "LTL freight, per shipment", "SH", 220, 980),
    ("SRV-HR", "On-site technician, per hour", "HR", 65, 140), ("VLV-DN50", "Ball valve DN50 PN40", "EA", 48, 130),
    ("TMB-2X4", "Kiln-dried lumber 2x4x8, bundle", "BD", 310, 520), ("CER-TL60", "Porcelain tile 60x60, m2", "M2", 19, 41),
]
CARRIERS = ["UPS Freight", "FedEx Ground", "DHL Express", "XPO Logistics", "Vendor truck", "Maersk LCL",
            "Old Dominion", "Customer pickup"]
BUYERS = ["a.kowalski", "m.reyes", "j.obrien", "s.nakamura", "t.lindgren", "p.adeyemi"]
WAREHOUSES = ["RNO-1", "CLT-2", "DAL-1", "TOR-1"]
INV_NOTES = ["", "", "", "Remit to new bank account per letter dated 2024-08-01", "Partial shipment",
             "Freight included in unit price", "Backorder to follow", "Ref. contract MSA-2023-114",
             "Early payment discount 2% 10 days", "Please quote PO on remittance"]

SCHEMA = """
create table vendors (vendor_id text primary key, name text, country text, currency text, status text,
    payment_terms text, remit_email text);
create table purchase_orders (po_id text primary key, vendor_id text, buyer text, created_on text, currency text,
    status text, ship_to text);
create table po_lines (po_id text, line_no integer, item_code text, description text, uom text,
    qty_ordered real, unit_price real);
create table receipts (receipt_id text primary key, po_id text, line_no integer, qty_received real,
    received_on text, warehouse text, received_by text, carrier text, packing_slip text);
create table invoices (invoice_id text primary key, vendor_id text, vendor_invoice_no text, po_id text,
    invoice_date text, received_on text, currency text, total_amount real, status text, hold_reason text,
    decided_on text, notes text);
create table invoice_lines (invoice_id text, line_no integer, po_line_no integer, qty real, unit_price real,
    amount real);
"""


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


def build(root: Path, scale, seed: int) -> None:
    _reset(root)
    rng = random.Random(seed)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)
    con.executemany("insert into vendors values (?,?,?,?,?,?,?)",
                    [(*v, f"ar@{v[1].split()[0].lower()}.example") for v in VENDORS])
    cur_of = {v[0]: v[3] for v in VENDORS}
    active = [v[0] for v in VENDORS if v[4] == "active" and v[0] != REVIEW_VENDOR]

    pos, lines, receipts, invoices, inv_lines = [], [], [], [], []
    n = {"po": 240000 + rng.randint(0, 99), "rc": 70000, "ap": 510000, "vin": 1000}

    def price_for(item: tuple, currency: str) -> float:
        usd = rng.uniform(item[3], item[4])
        if currency == "JPY":
            return float(round(usd / FX["JPY"]))
        return round(usd / FX[currency], 2)

    def new_po(vendor: str, created: date, n_lines: int | None = None, qtys: list | None = None) -> str:
        n["po"] += rng.randint(1, 13)
        po = f"PO-{n['po']}"
        pos.append([po, vendor, rng.choice(BUYERS), created.isoformat(), cur_of[vendor], "open",
                    rng.choice(WAREHOUSES)])
        k = n_lines or len(qtys or []) or rng.choice([1, 2, 2, 3, 3, 4])
        for i, item in enumerate(rng.sample(ITEMS, k), start=1):
            q = float(qtys[i - 1]) if qtys else float(rng.choice([2, 4, 5, 8, 10, 12, 20, 24, 40, 50, 100]))
            lines.append([po, i, item[0], item[1], item[2], q, price_for(item, cur_of[vendor])])
        return po

    def po_lines_of(po: str) -> list:
        return [ln for ln in lines if ln[0] == po]

    def receive(po: str, line_no: int, qty: float, when: date) -> None:
        n["rc"] += rng.randint(1, 9)
        receipts.append([f"GR-{n['rc']}", po, line_no, qty, when.isoformat(), rng.choice(WAREHOUSES),
                         rng.choice(["dock.team1", "dock.team2", "r.alvarez", "k.singh", "m.chen"]),
                         rng.choice(CARRIERS), f"PS{rng.randint(1000000, 9999999)}"])

    def invoice(po: str, vendor: str, qtys: dict, when: date, status: str, price_f: dict | None = None,
                vin: str | None = None, total_delta: float = 0.0, received: date | None = None) -> str:
        n["ap"] += rng.randint(1, 17)
        inv = f"AP-{n['ap']}"
        if vin is None:
            n["vin"] += rng.randint(1, 40)
            vin = rng.choice(["INV-{}", "{}", "INV{}", "F-2024-{}", "{}/24"]).format(n["vin"])
        total = 0.0
        pl = {ln[1]: ln for ln in po_lines_of(po)}
        for i, (line_no, q) in enumerate(sorted(qtys.items()), start=1):
            price = pl[line_no][6]
            if price_f and line_no in price_f:
                price = price_f[line_no]
            amount = round(q * price, 2)
            total += amount
            inv_lines.append([inv, i, line_no, float(q), price, amount])
        received = received or (when + timedelta(days=rng.randint(1, 6)))
        decided = None if status == "received" else (received + timedelta(days=rng.randint(1, 10))).isoformat()
        invoices.append([inv, vendor, vin, po, when.isoformat(), received.isoformat(), cur_of[vendor],
                         round(total + total_delta, 2), status, None, decided, rng.choice(INV_NOTES)])
        return inv

    # history: POs with receipts and approved / paid invoices
    for _ in range(scale.n_rows(92)):
        vendor = rng.choice([v[0] for v in VENDORS])
        created = date(2024, 5, 1) + timedelta(days=rng.randint(0, 150))
        po = new_po(vendor, created)
        got = {}
        for ln in po_lines_of(po):
            q = ln[5] if rng.random() < 0.75 else float(int(ln[5] * rng.choice([0.5, 0.6, 0.8])) or 1)
            if q and rng.random() < 0.25 and q >= 2:
                half = float(int(q / 2))
                receive(po, ln[1], half, created + timedelta(days=rng.randint(5, 20)))
                receive(po, ln[1], q - half, created + timedelta(days=rng.randint(21, 40)))
            else:
                receive(po, ln[1], q, created + timedelta(days=rng.randint(5, 30)))
            got[ln[1]] = q
        if vendor in active and rng.random() < 0.8:
            when = created + timedelta(days=rng.randint(20, 45))
            status = "paid" if when < date(2024, 9, 20) else "approved"
            invoice(po, vendor, got, when, status)
        elif rng.random() < 0.3:
            status = rng.choice(["paid", "on_hold", "rejected"])
            inv = invoice(po, vendor, got, created + timedelta(days=rng.randint(20, 45)), status)
            if status == "on_hold":
                invoices[-1][9] = rng.choice(["PRICE_VARIANCE", "QTY_EXCEEDS_RECEIPT"])
            elif status == "rejected":
                invoices[-1][9] = "REJECTED_BY_BUYER"
            del inv

    # queue: random clean-ish invoices
    def q_date() -> tuple[date, date]:
        d = date(2024, 10, 1) + timedelta(days=rng.randint(0, 24))
        return d, d + timedelta(days=rng.randint(1, 5))

    for _ in range(scale.n_rows(5)):
        vendor = rng.choice(active)
        created = date(2024, 8, 15) + timedelta(days=rng.randint(0, 40))
        po = new_po(vendor, created)
        got = {}
        for ln in po_lines_of(po):
            receive(po, ln[1], ln[5], created + timedelta(days=rng.randint(5, 25)))
            got[ln[1]] = ln[5]
        d, r = q_date()
        pf = None
        if rng.random() < 0.2:
            ln = rng.choice(po_lines_of(po))
            pf = {ln[1]: round(ln[6] * rng.choice([1.01, 1.015, 1.03, 1.06]), 2)}
        invoice(po, vendor, got, d, "received", price_f=pf, received=r)

    # planted queue invoices
    def simple_po(vendor: str, qty: float, received: list[float]) -> tuple[str, list]:
        po = new_po(vendor, date(2024, 9, 2) + timedelta(days=rng.randint(0, 10)), qtys=[qty])
        for i, q in enumerate(received):
            receive(po, 1, q, date(2024, 9, 16) + timedelta(days=7 * i))
        return po, po_lines_of(po)[0]

    po, _ = simple_po("V-1001", 20, [20])
    invoice(po, "V-1001", {1: 20}, date(2024, 10, 3), "received", received=date(2024, 10, 4))      # clean USD
    po, _ = simple_po("V-1005", 12, [12])
    invoice(po, "V-1005", {1: 12}, date(2024, 10, 7), "received", received=date(2024, 10, 9))      # clean EUR
    po, _ = simple_po("V-1003", 40, [40])
    invoice(po, "V-1003", {1: 20}, date(2024, 9, 20), "paid", vin="INV-77310")
    invoice(po, "V-1003", {1: 20}, date(2024, 10, 8), "received", vin="inv 77310",
            received=date(2024, 10, 10))                                                          # duplicate (normalised)
    po, _ = simple_po("V-1009", 10, [10])
    invoice(po, "V-1009", {1: 5}, date(2024, 10, 11), "received", vin="SC-55102", received=date(2024, 10, 14))
    invoice(po, "V-1009", {1: 5}, date(2024, 10, 11), "received", vin="SC55102",
            received=date(2024, 10, 15))                                                          # dup within run
    po, _ = simple_po("V-1007", 6, [6])
    invoice(po, "V-1007", {1: 6}, date(2024, 10, 9), "received", received=date(2024, 10, 11))     # blocked vendor
    po, _ = simple_po(REVIEW_VENDOR, 3, [3])
    invoice(po, REVIEW_VENDOR, {1: 3}, date(2024, 10, 12), "received", received=date(2024, 10, 14))  # memo vendor
    po, _ = simple_po("V-1014", 10, [8])
    invoice(po, "V-1014", {1: 10}, date(2024, 10, 14), "received", received=date(2024, 10, 16))   # qty > received
    po, _ = simple_po("V-1002", 10, [10])
    invoice(po, "V-1002", {1: 6}, date(2024, 9, 25), "approved")
    invoice(po, "V-1002", {1: 5}, date(2024, 10, 15), "received", received=date(2024, 10, 17))    # cumulative qty
    po, _ = simple_po("V-1015", 10, [4, 6])
    invoice(po, "V-1015", {1: 10}, date(2024, 10, 16), "received", received=date(2024, 10, 18))   # split receipts OK
    po = new_po("V-1001", date(2024, 9, 3), qtys=[10])
    lines[-1][6] = 50.0
    receive(po, 1, 10, date(2024, 9, 20))
    invoice(po, "V-1001", {1: 10}, date(2024, 10, 17), "received", price_f={1: 51.0},
            received=date(2024, 10, 21))                                                          # exactly 2% -> OK
    po = new_po("V-1012", date(2024, 9, 4), qtys=[8])
    lines[-1][6] = 80.0
    receive(po, 1, 8, date(2024, 9, 21))
    invoice(po, "V-1012", {1: 8}, date(2024, 10, 18), "received", price_f={1: 82.0},
            received=date(2024, 10, 21))                                                          # 2.5% -> PRICE
    po = new_po("V-1004", date(2024, 9, 5), qtys=[3])
    lines[-1][6] = 400.0
    receive(po, 1, 3, date(2024, 9, 22))
    invoice(po, "V-1004", {1: 3}, date(2024, 10, 18), "received", price_f={1: 416.0},
            received=date(2024, 10, 22))                                                          # 4% within 5%
    po = new_po("V-1011", date(2024, 9, 6), qtys=[50])
    lines[-1][6] = 1800.0
    receive(po, 1, 50, date(2024, 9, 23))
    invoice(po, "V-1011", {1: 50}, date(2024, 10, 19), "received", price_f={1: 1809.0},
            received=date(2024, 10, 22))                                                          # 0% override
    po, _ = simple_po("V-1008", 15, [15])
    invoice(po, "V-1008", {1: 15}, date(2024, 10, 21), "received", total_delta=-10.0,
            received=date(2024, 10, 23))                                                          # total mismatch
    po, _ = simple_po("V-1019", 12, [12])
    invoice(po, "V-1019", {1: 7}, date(2024, 10, 22), "received", received=date(2024, 10, 23))
    invoice(po, "V-1019", {1: 7}, date(2024, 10, 22), "received", received=date(2024, 10, 24))    # order matters
    po = new_po("V-1016", date(2024, 9, 9), qtys=[5])
    receive(po, 1, 5, date(2024, 9, 25))
    invoice(po, "V-1016", {1: 5}, date(2024, 9, 30), "paid", vin="QMP-3391")
    invoice(po, "V-1016", {1: 5}, date(2024, 10, 23), "received", vin="QMP 3391",
            price_f={1: round(lines[-1][6] * 1.2, 2)}, received=date(2024, 10, 25))               # dup beats price

    con.executemany("insert into purchase_orders values (?,?,?,?,?,?,?)", sorted(pos))
    con.executemany("insert into po_lines values (?,?,?,?,?,?,?)", sorted(lines, key=lambda x: (x[0], x[1])))
    con.executemany("insert into receipts values (?,?,?,?,?,?,?,?,?)", sorted(receipts))
    con.executemany("insert into invoices values (?,?,?,?,?,?,?,?,?,?,?,?)", sorted(invoices))
    con.executemany("insert into invoice_lines values (?,?,?,?,?,?)", sorted(inv_lines, key=lambda x: (x[0], x[1])))
    con.commit()
    con.close()
    _files(root, scale, rng)


POLICY = """# Accounts Payable — three-way match policy (AP-POL-03, v4.2)

Applies to every vendor invoice in status **received** (the AP queue) in the payment run of
**31 October 2024**.

## Processing order
Work the queue in order of the date AP received the invoice (`received_on`), oldest first; ties by
invoice id. Decisions made earlier in the run count for later invoices (see checks 1 and 4).

## Checks
Run the checks below in this order. The **first** check that fails decides the hold reason code; an
invoice that passes every check is **approved**.

1. **DUPLICATE** — the vendor has another invoice with the same vendor invoice number that is already
   approved or paid, or that was approved earlier in this run. Invoice numbers are compared ignoring
   upper/lower case, spaces, hyphens, dots and slashes (so `INV-0042` and `inv 0042` are the same).
2. **VENDOR_BLOCKED** — the vendor's master-data status is `blocked`.
3. **TOTAL_MISMATCH** — the invoice header total differs from the sum of its line amounts by more than
   0.01.
4. **QTY_EXCEEDS_RECEIPT** — for any invoice line, the quantity already invoiced for that PO line
   (invoices approved or paid, including approvals earlier in this run) plus this line's quantity
   exceeds the total quantity received for the PO line (all goods receipts).
5. **PRICE_VARIANCE** — for any invoice line, the unit price differs from the PO line's unit price
   by more than the vendor's price tolerance, as a percentage of the PO price. The tolerance is the
   default in `ap/vendor_tolerances.json` unless the vendor has an override there. A difference exactly
   equal to the tolerance is acceptable.

Compliance holds announced by Finance leadership take precedence over everything except check 1 and
use the reason code given in the announcement.

## Reporting
Report the total approved in this run in USD, converting each approved invoice's header total at the
payment-run rates published by Treasury for this run (`treasury/`), and the number of invoices put on
hold.
"""

MEMO = """From: Office of the CFO
To: Accounts Payable; Procurement
Date: 14 October 2024
Subject: Compliance review — {name}

Following a sanctions-screening alert, **{name}** is under compliance review until further notice.

Effective immediately, AP must not approve any invoice from this vendor, even when it matches. Put
each of their invoices on hold with reason code **VENDOR_REVIEW** (unless it is a duplicate, which keeps
the DUPLICATE code). Do not change the vendor master data; Procurement will do that once the review
concludes.
"""

NOISE = [
    ("ap/memos/{d}_month_end_checklist.md", "# Month-end close checklist\n\n- Accrue received-not-invoiced "
     "(GRNI) by the 3rd working day.\n- Reconcile the AP subledger to GL 2100.\n- Review aged holds older "
     "than {n} days.\n"),
    ("ap/memos/{d}_vendor_onboarding.md", "Subject: New vendor onboarding\n\n{vendor} has been onboarded "
     "with payment terms {terms}. W-9/VAT documents are on file. No effect on open invoices.\n"),
    ("procurement/notes/{d}_buyer_update.md", "# Buyer update\n\nBuyer {buyer} is covering {n} POs for "
     "{vendor} while their colleague is on leave. Expedite requests go to the shared mailbox.\n"),
    ("treasury/notes/{d}_cash_forecast.md", "# Cash forecast\n\nExpected disbursements next week: USD "
     "{k},{n:03d}. Keep the revolver undrawn. FX hedges for EUR and GBP roll on the 15th.\n"),
    ("procurement/notes/{d}_price_list_received.md", "Subject: Price list\n\n{vendor} sent its {yr} price "
     "list. Prices change only when a new PO is issued; open POs keep their agreed prices.\n"),
]


def _fx_csv(rates: dict, label: str) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["currency", "usd_per_unit", "rate_date", "source"])
    for c, r in rates.items():
        w.writerow([c, f"{r:.6f}".rstrip("0").rstrip("."), label, "Treasury month-end fixing"])
    return buf.getvalue()


def _files(root: Path, scale, rng: random.Random) -> None:
    _write(root, "ap/three_way_match_policy.md", POLICY)
    tol = {"default_price_tolerance_pct": 2.0,
           "overrides": {k: {"vendor": next(v[1] for v in VENDORS if v[0] == k), "price_tolerance_pct": t}
                         for k, t in OVERRIDES.items()},
           "updated": "2024-07-01", "approved_by": "Controller"}
    _write(root, "ap/vendor_tolerances.json", json.dumps(tol, indent=2) + "\n")
    name = next(v[1] for v in VENDORS if v[0] == REVIEW_VENDOR)
    _write(root, "ap/memos/2024-10-14_compliance_review.md", MEMO.format(name=name))
    _write(root, "treasury/fx_rates_payment_run_2024-10-31.csv", _fx_csv(FX, "2024-10-31"))
    _write(root, "treasury/archive/fx_rates_2024-08-31.csv", _fx_csv(FX_OLD["2024-08"], "2024-08-31"))
    _write(root, "treasury/archive/fx_rates_2024-09-30.csv", _fx_csv(FX_OLD["2024-09"], "2024-09-30"))
    used = set()
    for k in range(scale.n_files(9)):
        path, body = NOISE[k % len(NOISE)]
        d = date(2024, 8, 1) + timedelta(days=rng.randint(0, 88))
        while path.format(d=d.isoformat()) in used:
            d += timedelta(days=1)
        v = rng.choice(VENDORS)
        fill = dict(d=d.isoformat(), n=rng.randint(5, 90), vendor=v[1], terms=v[5], buyer=rng.choice(BUYERS),
                    k=rng.randint(200, 900), yr=2025)
        used.add(path.format(**fill))
        _write(root, path.format(**fill), body.format(**fill))
