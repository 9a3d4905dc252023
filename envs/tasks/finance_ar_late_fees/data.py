"""AR month-end late fees and dunning: customers, invoices, payments, credit notes, disputes, late fees.

Payment terms (CSV, including an end-of-month basis), the late-fee policy (grace, de-minimis, rate,
minimum/maximum, exemptions, dunning bands) and two memos (enterprise rate cut, named waivers) live only
in workspace files. Planted invoices at every scale sit on the grace boundary, use end-of-month terms,
were part-paid after the run date, are reduced by credit notes, disputed, exempt, waived, capped or
already charged.
"""

from __future__ import annotations

import csv
import io
import random
import shutil
import sqlite3
from datetime import date, timedelta
from pathlib import Path

RUN = date(2024, 10, 31)
TERMS = [  # code, description, net_days, grace_days, basis
    ("DOR", "Due on receipt", 0, 7, "invoice_date"),
    ("NET15", "Net 15 days", 15, 3, "invoice_date"),
    ("NET30", "Net 30 days", 30, 5, "invoice_date"),
    ("NET45", "Net 45 days", 45, 5, "invoice_date"),
    ("NET60", "Net 60 days", 60, 10, "invoice_date"),
    ("EOM30", "30 days end of month", 30, 5, "end_of_month"),
    ("EOM60", "60 days end of month", 60, 10, "end_of_month"),
]
SEGMENTS = ["enterprise", "mid_market", "smb", "government", "nonprofit"]
WAIVED = ["Lindqvist Marine AB", "Orchard Valley Co-op"]
PREFIX = ["Acorn", "Bluewater", "Cobalt", "Driftwood", "Evergreen", "Foxglove", "Granite", "Harbor", "Ironwood",
          "Juniper", "Keystone", "Larkspur", "Meridian", "Northstar", "Oakmont", "Pioneer", "Quarry", "Redstone",
          "Silverline", "Tamarack", "Upland", "Valley", "Westbrook", "Yellowpine", "Zephyr", "Alder", "Beacon",
          "Cedar", "Delta", "Ember"]
SUFFIX = {"enterprise": ["Holdings Inc.", "Industries Corp.", "Global LLC", "Manufacturing Co."],
          "mid_market": ["Logistics LLC", "Distribution Inc.", "Foods Co.", "Engineering Ltd"],
          "smb": ["Bakery", "Auto Repair", "Design Studio", "Dental Group", "Hardware"],
          "government": ["County Public Works", "City Transit Authority", "School District", "State Parks Dept."],
          "nonprofit": ["Community Foundation", "Food Bank", "Arts Council", "Animal Rescue"]}
MANAGERS = ["d.osei", "l.fontaine", "r.gupta", "c.moreno", "h.berg"]
SERVICES = ["Annual maintenance contract", "Replacement parts", "Consulting hours", "Subscription renewal",
            "Equipment rental", "Installation services", "Training workshop", "Freight and handling",
            "Support plan upgrade", "Hardware refresh"]
CN_REASONS = ["Pricing error", "Returned goods", "Service credit (SLA)", "Duplicate billing", "Goodwill"]
DISPUTE_CATS = ["pricing", "quantity", "quality", "not received", "billing contact"]

SCHEMA = """
create table customers (customer_id text primary key, name text, segment text, terms_code text, country text,
    account_manager text, credit_limit real, dunning_level integer);
create table invoices (invoice_id text primary key, customer_id text, issued_on text, amount real, currency text,
    status text, po_reference text, description text);
create table payments (payment_id text primary key, customer_id text, invoice_id text, received_on text,
    amount real, method text, bank_reference text);
create table credit_notes (credit_note_id text primary key, invoice_id text, issued_on text, amount real,
    reason text);
create table disputes (dispute_id text primary key, invoice_id text, opened_on text, status text,
    category text, note text);
create table late_fees (fee_id integer primary key, invoice_id text, customer_id text, period text,
    assessed_on text, amount real, status text);
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


def due_date(issued: date, terms: str) -> date:
    t = next(x for x in TERMS if x[0] == terms)
    if t[4] == "end_of_month":
        nxt = date(issued.year + (issued.month == 12), issued.month % 12 + 1, 1)
        return nxt - timedelta(days=1) + timedelta(days=t[2])
    return issued + timedelta(days=t[2])


def build(root: Path, scale, seed: int) -> None:
    _reset(root)
    rng = random.Random(seed)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)

    customers, invoices, payments, credits, disputes, fees = [], [], [], [], [], []
    cnt = {"c": 20000, "i": 880000, "p": 40000, "cn": 3000, "d": 500}
    used_names: set[str] = set()

    def customer(segment: str, terms: str | None = None, name: str | None = None) -> list:
        cnt["c"] += rng.randint(1, 23)
        while name is None or name in used_names:
            name = f"{rng.choice(PREFIX)} {rng.choice(SUFFIX[segment])}"
        used_names.add(name)
        terms = terms or rng.choice(["NET30", "NET30", "NET45", "NET15", "EOM30", "NET60", "DOR", "EOM60"])
        c = [f"C-{cnt['c']}", name, segment, terms, rng.choice(["US", "US", "US", "CA", "GB", "SE", "DE"]),
             rng.choice(MANAGERS), float(rng.choice([5000, 10000, 25000, 50000, 100000, 250000])), 0]
        customers.append(c)
        return c

    def pay(c: list, inv: str, when: date, amount: float) -> None:
        cnt["p"] += rng.randint(1, 7)
        payments.append([f"PMT-{cnt['p']}", c[0], inv, when.isoformat(), round(amount, 2),
                         rng.choice(["ACH", "ACH", "wire", "check", "card"]), f"BR{rng.randint(10**8, 10**9 - 1)}"])

    def invoice(c: list, issued: date, amount: float, paid: float = 0.0, paid_on: date | None = None,
                status: str | None = None) -> str:
        cnt["i"] += rng.randint(1, 11)
        inv = f"INV-{cnt['i']}"
        st = status or ("paid" if paid >= amount - 0.005 else "open")
        invoices.append([inv, c[0], issued.isoformat(), round(amount, 2), "USD", st,
                         f"PO{rng.randint(10000, 99999)}" if rng.random() < 0.7 else "", rng.choice(SERVICES)])
        if paid > 0:
            pay(c, inv, paid_on or issued + timedelta(days=rng.randint(5, 60)), paid)
        return inv

    def amount(segment: str) -> float:
        lo, hi = {"enterprise": (2000, 60000), "mid_market": (800, 15000), "smb": (60, 3000),
                  "government": (500, 20000), "nonprofit": (80, 4000)}[segment]
        return round(rng.uniform(lo, hi), 2)

    # random book
    for _ in range(scale.n_rows(40)):
        seg = rng.choices(SEGMENTS, [18, 26, 36, 10, 10])[0]
        c = customer(seg)
        for _ in range(rng.randint(5, 14)):
            issued = date(2024, 1, 5) + timedelta(days=rng.randint(0, 295))
            amt = amount(seg)
            due = due_date(issued, c[3])
            r = rng.random()
            if issued >= date(2024, 7, 1) and r >= 0.72 and rng.random() < 0.6:
                issued = date(2024, 9, 25) + timedelta(days=rng.randint(0, 33))  # recent, mostly not yet due
                due = due_date(issued, c[3])
            if issued < date(2024, 7, 1) or r < 0.72:
                when = min(due + timedelta(days=rng.randint(-10, 25)), RUN - timedelta(days=1))
                when = max(when, issued + timedelta(days=1))
                inv = invoice(c, issued, amt, amt, when)
            elif r < 0.8:
                inv = invoice(c, issued, amt, round(amt * rng.choice([0.25, 0.5, 0.6]), 2),
                              min(issued + timedelta(days=rng.randint(10, 40)), RUN + timedelta(days=3)))
            elif r < 0.83:
                inv = invoice(c, issued, amt, status="void")
            else:
                inv = invoice(c, issued, amt)
            if invoices[-1][5] == "open":
                x = rng.random()
                if x < 0.08:
                    cnt["cn"] += rng.randint(1, 5)
                    cn_day = min(issued + timedelta(days=rng.randint(3, 40)), RUN + timedelta(days=3))
                    credits.append([f"CN-{cnt['cn']}", inv, cn_day.isoformat(),
                                    round(amt * rng.choice([0.1, 0.2, 1.0]), 2), rng.choice(CN_REASONS)])
                elif x < 0.14:
                    cnt["d"] += rng.randint(1, 4)
                    opened = min(due + timedelta(days=rng.randint(1, 20)), RUN)
                    disputes.append([f"DSP-{cnt['d']}", inv, opened.isoformat(),
                                     rng.choice(["open", "open", "resolved"]), rng.choice(DISPUTE_CATS),
                                     "Customer disputes the charge; AM investigating"])
                elif x < 0.2 and due < date(2024, 9, 30):
                    fees.append([inv, c[0], "2024-09", "2024-09-30", round(max(25.0, amt * 0.015), 2), "posted"])
                elif x < 0.23:
                    pay(c, inv, RUN + timedelta(days=rng.randint(1, 3)), round(amt * 0.5, 2))

    # planted, every scale
    c = customer("mid_market", "NET30")
    invoice(c, date(2024, 9, 20), 4820.40)                                          # 11 dpd -> fee
    invoice(c, date(2024, 9, 27), 1310.00)                                          # within grace
    c = customer("smb", "NET30")
    invoice(c, date(2024, 9, 26), 912.35)                                           # exactly grace -> none
    c = customer("mid_market", "EOM30")
    invoice(c, date(2024, 9, 10), 6400.00)                                          # due 10-30 -> none
    invoice(c, date(2024, 8, 12), 2150.75)                                          # due 09-30 -> fee
    c = customer("smb", "NET15")
    inv = invoice(c, date(2024, 8, 1), 2400.00)
    pay(c, inv, date(2024, 11, 2), 2000.00)                                         # paid after run: full fee
    c = customer("smb", "NET30")
    inv = invoice(c, date(2024, 7, 15), 780.00)
    credits.append(["CN-9001", inv, "2024-10-10", 740.00, "Returned goods"])          # balance 40 -> none
    c = customer("government", "NET60")
    invoice(c, date(2024, 6, 3), 15800.00)                                          # exempt, dunning 3
    c = customer("enterprise", "NET45")
    inv = invoice(c, date(2024, 7, 1), 22000.00)
    disputes.append(["DSP-9001", inv, "2024-09-01", "open", "pricing", "Rate card mismatch"])   # disputed
    inv = invoice(c, date(2024, 8, 1), 5100.00)
    disputes.append(["DSP-9002", inv, "2024-09-20", "resolved", "quantity", "Resolved in our favour"])  # fee 1%
    c = customer("mid_market", "NET30", name=WAIVED[0])
    invoice(c, date(2024, 8, 5), 3900.00)                                           # waived, dunning 2
    c = customer("smb", "NET30", name=WAIVED[1])
    invoice(c, date(2024, 7, 2), 640.00)                                            # waived
    c = customer("smb", "NET45", name="Orchard Valley Cooperative Bank")
    invoice(c, date(2024, 7, 2), 2200.00)                                           # similar name: not waived
    c = customer("enterprise", "NET60")
    invoice(c, date(2024, 5, 20), 118000.00)                                        # 1% -> cap 750
    invoice(c, date(2024, 8, 26), 1900.00)                                          # 1% -> min 25
    c = customer("mid_market", "NET30")
    inv = invoice(c, date(2024, 9, 2), 3333.00)
    fees.append([inv, c[0], "2024-10", "2024-10-29", 50.0, "posted"])                # already charged
    c = customer("smb", "DOR")
    invoice(c, date(2024, 10, 20), 455.10)                                          # 11 dpd > 7 -> fee
    invoice(c, date(2024, 5, 2), 980.00, status="void")                             # void

    # last month's dunning levels: mostly right, some stale
    for c in customers:
        c[7] = rng.choice([0, 0, 1, 1, 2, 3])
    customers.sort(key=lambda x: x[0])
    con.executemany("insert into customers values (?,?,?,?,?,?,?,?)", customers)
    con.executemany("insert into invoices values (?,?,?,?,?,?,?,?)", sorted(invoices))
    con.executemany("insert into payments values (?,?,?,?,?,?,?)", sorted(payments))
    con.executemany("insert into credit_notes values (?,?,?,?,?)", sorted(credits))
    con.executemany("insert into disputes values (?,?,?,?,?,?)", sorted(disputes))
    fees.sort(key=lambda f: (f[3], f[0]))
    con.executemany("insert into late_fees (invoice_id, customer_id, period, assessed_on, amount, status) "
                    "values (?,?,?,?,?,?)", fees)
    con.commit()
    con.close()
    _fix_levels(root)
    _files(root, scale, rng)


def _fix_levels(root: Path) -> None:
    """Make ~60% of last month's dunning levels equal to this month's, so the run changes a minority."""
    con = sqlite3.connect(root / "db.sqlite")
    terms = {t[0]: t for t in TERMS}
    paid: dict[str, float] = {}
    for inv, amt in con.execute("select invoice_id, amount from payments where received_on <= ?", (RUN.isoformat(),)):
        paid[inv] = paid.get(inv, 0) + amt
    for inv, amt in con.execute("select invoice_id, amount from credit_notes where issued_on <= ?", (RUN.isoformat(),)):
        paid[inv] = paid.get(inv, 0) + amt
    disputed = {r[0] for r in con.execute("select invoice_id from disputes where status = 'open'")}
    worst: dict[str, int] = {}
    for inv, cust, issued, amt, tc in con.execute(
            "select i.invoice_id, i.customer_id, i.issued_on, i.amount, c.terms_code from invoices i "
            "join customers c using (customer_id) where i.status = 'open'"):
        if inv in disputed or amt - paid.get(inv, 0) < 50 - 1e-9:
            continue
        dpd = (RUN - due_date(date.fromisoformat(issued), terms[tc][0])).days
        worst[cust] = max(worst.get(cust, 0), dpd)
    rows = con.execute("select customer_id, dunning_level from customers order by customer_id").fetchall()
    for i, (cust, _lvl) in enumerate(rows):
        d = worst.get(cust, 0)
        now = 0 if d <= 0 else 1 if d <= 30 else 2 if d <= 60 else 3
        if i % 5 != 0:
            con.execute("update customers set dunning_level = ? where customer_id = ?", (now, cust))
    con.commit()
    con.close()


POLICY = """# Late fee and dunning policy (FIN-AR-07)

Owner: Credit & Collections. This policy applies to the month-end run for **October 2024**
(run date **31 October 2024**, fee period `2024-10`).

## 1. Due date and days past due
The due date of an invoice follows the customer's payment terms (see `ar/payment_terms.csv`):
* basis `invoice_date`: invoice date + net days;
* basis `end_of_month`: last day of the invoice's month + net days.

Days past due = run date − due date (calendar days).

## 2. Balance
An invoice's balance at the run date = invoice amount − payments received **on or before** the run
date − credit notes issued on or before the run date. The invoice `status` in the ledger is refreshed
nightly and may already reflect later events; use it only to skip `void` and `paid` invoices.

## 3. Late fees
A late fee is charged on an open invoice when **all** of these hold:
1. days past due is **greater than** the grace days of the customer's terms;
2. the balance is at least **50.00**;
3. there is no **open** dispute on the invoice (resolved disputes do not block fees);
4. the customer's segment is not exempt — `government` and `nonprofit` customers are never charged;
5. no late fee for period `2024-10` has already been posted on the invoice.

Fee = balance × **1.5%**, rounded to the cent, but at least **25.00** and at most **750.00** per
invoice. Post each fee on its invoice for period `2024-10`.

## 4. Dunning levels
After fees, set every customer's dunning level from the most overdue of their open invoices that has a
balance of at least 50.00 and no open dispute (fee exemptions and waivers do **not** affect dunning):

| Most days past due | Dunning level |
|---|---|
| not past due (0 or less), or no such invoice | 0 |
| 1 – 30 | 1 |
| 31 – 60 | 2 |
| more than 60 | 3 |
"""

POLICY_2023 = """# Late fee policy (FIN-AR-07) — 2023 edition (SUPERSEDED)

Fee 2% per month on the full invoice amount, minimum 15.00, no maximum. Grace period 10 days for all
terms. Dunning levels 0–4. Replaced in January 2024.
"""

MEMO_RATE = """From: Chief Financial Officer
To: Credit & Collections
Date: 2 October 2024
Subject: Late fee rate for enterprise accounts

Following the pricing committee, the late fee rate for customers in the **enterprise** segment is
reduced to **1.0%** of the balance, starting with the October 2024 run. The minimum (25.00) and
maximum (750.00) per invoice are unchanged, as is everything else in FIN-AR-07.
"""

MEMO_WAIVE = """From: VP Finance
To: Credit & Collections
Date: 28 October 2024
Subject: October fee waivers

Please **do not charge October late fees** to the following customers; both are mid-way through an
ERP migration on their side and payments are delayed on our agreement:

* {a}
* {b}

Dunning letters still go out as normal. This applies to these two accounts only (check the names
carefully — there are similarly named accounts in the ledger).
"""

NOISE = [
    ("collections/notes/{cid}_call_{k}.md", "# Collection call — {name}\n\nSpoke to accounts payable on {d}. "
     "They expect to pay {inv} within {n} days; remittance to follow. Promise-to-pay logged. Next follow-up "
     "in one week.\n"),
    ("collections/notes/{cid}_email_{k}.md", "# Email thread — {name}\n\nCustomer asked for a copy of invoice "
     "{inv} and a W-9. Sent on {d}. No dispute raised.\n"),
    ("credit/reviews/{cid}_credit_review_{k}.md", "# Credit review — {name}\n\nCurrent limit {lim}. Payment "
     "behaviour: {beh}. Recommendation: keep limit. Reviewed {d}.\n"),
    ("treasury/bank_rec_{k}.md", "# Bank reconciliation note\n\nLockbox file for {d} contained {n} items; "
     "all applied. Unapplied cash: {lim}. Nothing affects late fees.\n"),
]


def _files(root: Path, scale, rng: random.Random) -> None:
    _write(root, "ar/late_fee_policy.md", POLICY)
    _write(root, "ar/archive/late_fee_policy_2023.md", POLICY_2023)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["terms_code", "description", "net_days", "grace_days", "basis"])
    w.writerows(TERMS)
    _write(root, "ar/payment_terms.csv", buf.getvalue())
    _write(root, "ar/memos/2024-10-02_enterprise_late_fee_rate.md", MEMO_RATE)
    _write(root, "ar/memos/2024-10-28_october_fee_waivers.md", MEMO_WAIVE.format(a=WAIVED[0], b=WAIVED[1]))
    con = sqlite3.connect(root / "db.sqlite")
    custs = con.execute("select customer_id, name, credit_limit from customers order by customer_id").fetchall()
    invs = [r[0] for r in con.execute("select invoice_id from invoices where status = 'open' order by invoice_id")]
    con.close()
    for k in range(scale.n_files(9)):
        path, body = NOISE[k % len(NOISE)]
        cid, name, lim = rng.choice(custs)
        fill = dict(cid=cid, k=k + 1, name=name, d=(date(2024, 9, 1) + timedelta(days=rng.randint(0, 60))).isoformat(),
                    inv=rng.choice(invs), n=rng.randint(3, 30), lim=f"{lim:,.2f}",
                    beh=rng.choice(["pays on time", "pays 10-20 days late", "erratic", "improving"]))
        _write(root, path.format(**fill), body.format(**fill))
    _write(root, "ar/memos/2024-09-15_lockbox_change.md",
           "Subject: New lockbox address\n\nFrom 1 October customers should remit to the new lockbox. "
           "No change to terms or fees.\n")
