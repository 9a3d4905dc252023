"""Loyalty points backfill: members, stores, products, orders with lines, and the points ledger.

The earn rates, the promotion calendar and the incident that says which promotions were not applied
(and when) live only in workspace files. Planted orders at every scale cover each trap: wrong tier,
wrong channel, outside the incident window, returned/cancelled, closed member, already credited by
hand, promotions that worked normally.
"""

from __future__ import annotations

import csv
import io
import random
import shutil
import sqlite3
from datetime import date, datetime, timedelta
from pathlib import Path

TIERS = ["Basic", "Silver", "Gold", "Platinum"]
RATE = {"Basic": 1.0, "Silver": 1.25, "Gold": 1.5, "Platinum": 2.0}
INCIDENT_ID = "INC-2291"
WINDOW_START = datetime(2024, 9, 14, 6, 0)
WINDOW_END = datetime(2024, 9, 21, 14, 30)

# promo_id, name, start, end, categories, multiplier, min_tier, channels
PROMOS = [
    ("PR-0802", "Summer Picnic Days", "2024-08-02", "2024-08-11", ["Outdoor", "Grocery"], 2, "Basic", "store|online"),
    ("PR-0815", "Back to School", "2024-08-15", "2024-09-08", ["Stationery"], 2, "Basic", "store|online"),
    ("PR-0822", "Pet Parents Weekend", "2024-08-23", "2024-08-25", ["Pet"], 3, "Silver", "store"),
    ("PR-0911", "Fall Home Refresh", "2024-09-10", "2024-09-20", ["Home & Kitchen"], 3, "Silver", "store|online"),
    ("PR-0913", "Trail Weekend", "2024-09-13", "2024-09-15", ["Outdoor"], 2, "Basic", "store"),
    ("PR-0916", "Beauty Week", "2024-09-16", "2024-09-29", ["Beauty", "Personal Care"], 2, "Basic", "store"),
    ("PR-0918", "Gold Tech Days", "2024-09-18", "2024-09-24", ["Electronics"], 2, "Gold", "store|online"),
    ("PR-1004", "Cozy Knits", "2024-10-04", "2024-10-13", ["Apparel"], 2, "Basic", "store|online"),
    ("PR-1018", "Toy Preview", "2024-10-18", "2024-10-27", ["Toys"], 3, "Silver", "online"),
]
BROKEN = ("PR-0911", "PR-0916")

CATALOG = {
    "Home & Kitchen": (["Stoneware Mug Set", "Cast Iron Skillet", "Bamboo Cutting Board", "Linen Tea Towels",
                        "Glass Storage Jars", "Ceramic Planter", "Chef's Knife", "Pour-Over Kettle",
                        "Waffle Bath Towel", "Enamel Dutch Oven", "Spice Rack", "Salad Spinner"], (9, 89)),
    "Beauty": (["Hydrating Serum", "Clay Face Mask", "Matte Lipstick", "Volume Mascara", "Rose Toner",
                "Night Cream", "Brow Pencil", "Makeup Brush Kit", "Setting Spray"], (7, 48)),
    "Personal Care": (["Charcoal Toothpaste", "Oat Body Wash", "Bamboo Toothbrush 4pk", "Deodorant Stick",
                       "Argan Shampoo", "Shea Hand Cream", "Cotton Rounds", "Beard Oil"], (3, 26)),
    "Electronics": (["Wireless Earbuds", "USB-C Charger 65W", "Smart Plug 2pk", "Bluetooth Speaker",
                     "Power Bank 20000mAh", "HDMI Cable 2m", "LED Desk Lamp", "Fitness Tracker"], (12, 149)),
    "Outdoor": (["Trail Water Bottle", "Camping Lantern", "Packable Rain Jacket", "Hiking Socks 3pk",
                 "Folding Camp Chair", "Insulated Cooler Bag", "Headlamp"], (8, 79)),
    "Stationery": (["Dot Grid Notebook", "Gel Pen 10pk", "Desk Organizer", "Highlighter Set",
                    "Kraft Envelopes", "Weekly Planner", "Sticky Notes Cube"], (2, 24)),
    "Toys": (["Wooden Train Set", "Building Blocks 250pc", "Plush Fox", "Puzzle 1000pc", "Kite",
              "Science Kit", "Card Game"], (6, 59)),
    "Grocery": (["Cold Brew Coffee", "Dark Chocolate Bar", "Trail Mix", "Herbal Tea Sampler",
                 "Olive Oil 500ml", "Maple Granola", "Sea Salt Crackers"], (2, 18)),
    "Apparel": (["Merino Beanie", "Cable Knit Scarf", "Fleece Pullover", "Crew Socks 5pk", "Flannel Shirt",
                 "Lounge Pants"], (9, 69)),
    "Pet": (["Grain-Free Kibble", "Rope Tug Toy", "Cat Scratcher", "Pet Bed Medium", "Dental Chews"], (4, 55)),
}
CAT_WEIGHTS = {"Home & Kitchen": 5, "Beauty": 4, "Personal Care": 3, "Electronics": 8, "Outdoor": 8,
               "Stationery": 10, "Toys": 8, "Grocery": 14, "Apparel": 10, "Pet": 8}

STORES = [
    ("ST-01", "Riverside Commons", "Portland", "Northwest"), ("ST-02", "Union Square", "Seattle", "Northwest"),
    ("ST-03", "Pearl District", "Portland", "Northwest"), ("ST-04", "Capitol Hill", "Denver", "Mountain"),
    ("ST-05", "Old Town", "Boise", "Mountain"), ("ST-06", "Gaslamp", "San Diego", "Southwest"),
    ("ST-07", "Mission Bay", "San Francisco", "Southwest"), ("ST-08", "Midtown", "Sacramento", "Southwest"),
    ("ST-09", "Lakeshore", "Chicago", "Central"), ("ST-10", "Short North", "Columbus", "Central"),
    ("ST-11", "Deep Ellum", "Dallas", "South"), ("ST-12", "Music Row", "Nashville", "South"),
    ("WEB", "Online Store", "-", "Online"),
]

FIRST = ["Olivia", "Liam", "Amara", "Noah", "Sofia", "Mateo", "Hannah", "Kenji", "Priya", "Lucas", "Zoe",
         "Omar", "Chloe", "Elijah", "Mei", "Diego", "Aisha", "Jonah", "Freya", "Malik", "Ingrid", "Tomás",
         "Leila", "Ravi", "Grace", "Yusuf", "Nora", "Dmitri", "Camila", "Theo", "Hana", "Samuel", "Ava",
         "Kwame", "Isla", "Felix", "Rosa", "Arjun", "Maeve", "Joaquín", "Esther", "Wei", "Lena", "Marcus"]
LAST = ["Nguyen", "Okafor", "Schmidt", "Patel", "García", "Kowalski", "Hughes", "Tanaka", "Haddad",
        "Johansson", "Moreau", "Reyes", "Chen", "Abernathy", "Mensah", "O'Brien", "Rossi", "Delgado",
        "Lindqvist", "Fischer", "Barros", "Kim", "Adeyemi", "Novak", "Sullivan", "Castillo", "Yamamoto",
        "Baker", "Ivanova", "Whitfield", "Quintero", "Brennan", "Salazar", "Holm", "Park", "Dubois"]
MAIL = ["example.com", "mailbox.org", "fastmail.com", "inbox.net", "posteo.de"]

LEDGER_NOTES = ["", "", "", "", "Redeemed at checkout", "Birthday reward", "Receipt scan", "Points match",
                "Goodwill - late delivery", "Survey completion", "Referral bonus"]


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


def _price(rng: random.Random, lo: int, hi: int) -> float:
    return rng.randint(lo, hi) + rng.choice([0.99, 0.99, 0.49])


def _ts(d: datetime) -> str:
    return d.strftime("%Y-%m-%d %H:%M")


SCHEMA = """
create table stores (store_id text primary key, name text, city text, region text);
create table products (sku text primary key, name text, category text, brand text, list_price real);
create table members (member_id text primary key, first_name text, last_name text, email text,
    tier text, status text, joined_on text, home_store text);
create table orders (order_id text primary key, member_id text, store_id text, channel text,
    ordered_at text, status text);
create table order_lines (order_id text, line_no integer, sku text, qty integer, unit_price real,
    discount real, primary key (order_id, line_no));
create table points_ledger (entry_id integer primary key, member_id text, posted_at text, points integer,
    kind text, reference text, note text);
"""


def _promo_hits(category: str, channel: str, tier: str, when: datetime) -> list[tuple]:
    out = []
    for p in PROMOS:
        pid, _, start, end, cats, mult, min_tier, channels = p
        if category not in cats or channel not in channels.split("|"):
            continue
        if TIERS.index(tier) < TIERS.index(min_tier):
            continue
        if not (date.fromisoformat(start) <= when.date() <= date.fromisoformat(end)):
            continue
        out.append(p)
    return out


def build(root: Path, scale, seed: int) -> None:
    _reset(root)
    rng = random.Random(seed)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)

    con.executemany("insert into stores values (?,?,?,?)", STORES)

    # products (fixed catalogue)
    products: dict[str, tuple] = {}
    brands = ["Northwind", "Juniper & Co", "Alder", "Basecamp", "Lumen", "Kindred", "Saltwater", "Oakline"]
    n = 0
    for cat, (names, (lo, hi)) in CATALOG.items():
        for name in names:
            n += 1
            sku = f"{cat[:2].upper().replace(' ', 'X')}-{1000 + n * 7}"
            products[sku] = (sku, name, cat, rng.choice(brands), _price(rng, lo, hi))
    con.executemany("insert into products values (?,?,?,?,?)", list(products.values()))
    by_cat: dict[str, list[str]] = {}
    for sku, p in products.items():
        by_cat.setdefault(p[2], []).append(sku)
    cats = list(CAT_WEIGHTS)
    weights = [CAT_WEIGHTS[c] for c in cats]

    # members
    n_members = scale.n_rows(110)
    ids = rng.sample(range(10001, 99999), n_members)
    members = []
    for mid in ids:
        fn, ln = rng.choice(FIRST), rng.choice(LAST)
        tier = rng.choices(TIERS, [40, 30, 20, 10])[0]
        status = "closed" if rng.random() < 0.06 else "active"
        joined = date(2016, 1, 1) + timedelta(days=rng.randint(0, 3100))
        email = f"{fn.lower()}.{ln.lower().replace(chr(39), '')}{rng.randint(1, 99)}@{rng.choice(MAIL)}"
        email = email.replace("á", "a").replace("é", "e").replace("í", "i").replace("ó", "o").replace("ú", "u")
        members.append([f"M{mid}", fn, ln, email, tier, status, joined.isoformat(), rng.choice(STORES[:12])[0]])
    members.sort(key=lambda m: m[0])
    mem = {m[0]: m for m in members}

    def pick_member(tier: str | None = None, status: str = "active", min_tier: str | None = None) -> str:
        pool = [m[0] for m in members if m[5] == status and (tier is None or m[4] == tier)
                and (min_tier is None or TIERS.index(m[4]) >= TIERS.index(min_tier))]
        return rng.choice(pool)

    # orders: (member_id, store_id, channel, datetime, status, lines[(sku, qty, price, discount)])
    orders: list[list] = []

    def make_lines(force_cats: list[str] | None = None) -> list[tuple]:
        lines = []
        k = rng.choices([1, 2, 3, 4], [35, 35, 20, 10])[0]
        chosen = list(force_cats or [])
        while len(chosen) < k:
            chosen.append(rng.choices(cats, weights)[0])
        for c in chosen[:4]:
            sku = rng.choice(by_cat[c])
            qty = rng.choices([1, 2, 3], [70, 22, 8])[0]
            price = products[sku][4]
            disc = 0.0
            if rng.random() < 0.15 and price * qty > 8:
                disc = float(rng.randint(1, min(5, int(price * qty) - 2)))
            lines.append((sku, qty, price, disc))
        return lines

    start = datetime(2024, 8, 1, 0, 0)
    n_orders = scale.n_rows(250)
    for _ in range(n_orders):
        channel = "online" if rng.random() < 0.35 else "store"
        day = start + timedelta(days=rng.randint(0, 91))
        if channel == "store":
            when = day + timedelta(hours=rng.randint(9, 20), minutes=rng.randint(0, 59))
            store = rng.choice(STORES[:12])[0]
        else:
            when = day + timedelta(hours=rng.randint(0, 23), minutes=rng.randint(0, 59))
            store = "WEB"
        member = None if rng.random() < 0.08 else rng.choice(members)[0]
        status = rng.choices(["completed", "returned", "cancelled"], [88, 7, 5])[0]
        orders.append([member, store, channel, when, status, make_lines(), False])

    # planted orders (every scale): (tier/min_tier, status, channel, when, categories, order status, manual)
    def plant(member: str, channel: str, when: datetime, force: list[str], status: str = "completed",
              manual: bool = False) -> None:
        store = "WEB" if channel == "online" else rng.choice(STORES[:12])[0]
        orders.append([member, store, channel, when, status, make_lines(force), manual])

    top = pick_member(tier="Platinum")
    plant(top, "store", datetime(2024, 9, 15, 11, 5), ["Home & Kitchen", "Home & Kitchen", "Home & Kitchen"])
    plant(top, "store", datetime(2024, 9, 19, 17, 40), ["Beauty", "Home & Kitchen", "Home & Kitchen"])
    plant(pick_member(tier="Gold"), "store", datetime(2024, 9, 15, 12, 31), ["Home & Kitchen"])
    plant(pick_member(tier="Basic"), "store", datetime(2024, 9, 16, 10, 2), ["Home & Kitchen", "Grocery"])
    plant(pick_member(tier="Silver"), "online", datetime(2024, 9, 17, 22, 48), ["Home & Kitchen"])
    plant(pick_member(tier="Platinum"), "online", datetime(2024, 9, 18, 8, 15), ["Beauty", "Personal Care"])
    plant(pick_member(tier="Silver"), "store", datetime(2024, 9, 14, 5, 40), ["Home & Kitchen"])
    plant(pick_member(tier="Gold"), "store", datetime(2024, 9, 21, 13, 10), ["Beauty"])
    plant(pick_member(tier="Gold"), "store", datetime(2024, 9, 21, 15, 20), ["Beauty", "Personal Care"])
    plant(pick_member(tier="Silver"), "store", datetime(2024, 9, 19, 14, 0), ["Beauty", "Home & Kitchen"])
    plant(pick_member(tier="Platinum", status="closed"), "store", datetime(2024, 9, 18, 16, 45),
          ["Home & Kitchen"])
    plant(pick_member(tier="Gold"), "store", datetime(2024, 9, 17, 19, 5), ["Home & Kitchen"], status="returned")
    plant(pick_member(tier="Silver"), "store", datetime(2024, 9, 18, 12, 12), ["Home & Kitchen"], manual=True)
    plant(pick_member(tier="Basic"), "store", datetime(2024, 9, 20, 18, 30), ["Personal Care"])
    plant(pick_member(tier="Gold"), "store", datetime(2024, 9, 19, 11, 20), ["Electronics"])
    plant(pick_member(tier="Silver"), "store", datetime(2024, 9, 21, 10, 0), ["Home & Kitchen"])
    plant(pick_member(tier="Basic"), "store", datetime(2024, 9, 14, 15, 0), ["Outdoor"])
    plant(pick_member(tier="Gold"), "online", datetime(2024, 9, 16, 9, 30), ["Personal Care"], status="cancelled")
    plant(pick_member(tier="Platinum"), "store", datetime(2024, 9, 20, 20, 50), ["Beauty", "Beauty"], manual=True)

    # a share of random in-window orders was credited by hand at the stores
    orders.sort(key=lambda o: (o[3], o[1]))
    order_rows, line_rows, ledger = [], [], []
    for i, (member, store, channel, when, status, lines, manual) in enumerate(orders):
        oid = f"SO-{240000 + i * 3 + rng.randint(0, 2)}"
        order_rows.append((oid, member, store, channel, _ts(when), status))
        for j, (sku, qty, price, disc) in enumerate(lines, start=1):
            line_rows.append((oid, j, sku, qty, price, disc))
        if member is None or status != "completed":
            continue
        tier = mem[member][4]
        total = sum(q * p - d for _, q, p, d in lines)
        post = when + timedelta(minutes=rng.randint(1, 50))
        base = int(int(total) * RATE[tier])
        # promotions: the engine folds bonuses into the earn entry, except broken ones in the window
        spend: dict[str, tuple] = {}
        for sku, q, p, d in lines:
            for promo in _promo_hits(products[sku][2], channel, tier, when):
                s = spend.get(promo[0], (promo, 0.0))
                spend[promo[0]] = (promo, s[1] + q * p - d)
        bonus, manual_rows = 0, []
        for pid, (promo, amount) in sorted(spend.items()):
            pts = int(int(amount) * RATE[tier] * (promo[5] - 1))
            broken = pid in BROKEN and WINDOW_START <= when < WINDOW_END
            if not broken:
                bonus += pts
                continue
            if manual or (mem[member][5] == "active" and rng.random() < 0.08):
                mpost = datetime(2024, 9, 23, 9, 0) + timedelta(minutes=rng.randint(0, 4000))
                note = rng.choice(["Manual credit - store desk", "Manual promo credit per customer call",
                                   "Store manager override"])
                manual_rows.append([member, _ts(mpost), pts, "bonus", f"{oid}:{pid}", note])
        ledger.append([member, _ts(post), base + bonus, "earn", oid, "incl. promotion bonus" if bonus else ""])
        ledger.extend(manual_rows)
    # redemptions and misc entries
    for _ in range(scale.n_rows(40)):
        m = rng.choice(members)
        when = datetime(2024, 8, 1) + timedelta(minutes=rng.randint(0, 91 * 1440))
        if rng.random() < 0.7:
            ledger.append([m[0], _ts(when), -rng.choice([250, 500, 500, 1000, 2000]), "redeem",
                           f"RW-{rng.randint(10000, 99999)}", "Redeemed at checkout"])
        else:
            ledger.append([m[0], _ts(when), rng.choice([50, 100, 150, 200]), "adjustment",
                           f"CS-{rng.randint(1000, 9999)}", rng.choice(LEDGER_NOTES[5:])])
    ledger.sort(key=lambda e: (e[1], e[0]))
    con.executemany("insert into members values (?,?,?,?,?,?,?,?)", members)
    con.executemany("insert into orders values (?,?,?,?,?,?)", order_rows)
    con.executemany("insert into order_lines values (?,?,?,?,?,?)", line_rows)
    con.executemany("insert into points_ledger (member_id, posted_at, points, kind, reference, note) "
                    "values (?,?,?,?,?,?)", ledger)
    con.commit()
    con.close()
    _files(root, scale, rng)


# ----------------------------------------------------------------------------------------- files
TERMS_2024 = """# Evergreen Rewards — Program Terms (effective 1 January 2024)

These terms replace the 2023 terms in `loyalty/archive/`. Customer service and store teams must apply
these rules when correcting member balances.

## 1. Tiers and base earn rates

Members earn base points on **net spend** (item price x quantity, less line discounts), per order:

| Tier     | Points per whole $1 of net spend |
|----------|----------------------------------|
| Basic    | 1                                |
| Silver   | 1.25                             |
| Gold     | 1.5                              |
| Platinum | 2                                |

Base points for an order are computed on the whole dollars of net spend (cents are dropped first) and
the result is rounded down to a whole point. Tier is the member's current tier.

## 2. Promotional bonus points

Promotions are published in the promotion calendar (`promotions/`). A promotion applies to an order when
the order was placed on a date inside the promotion's start/end dates (inclusive), through one of the
promotion's channels, by a member whose tier is at least the promotion's minimum tier
(Basic < Silver < Gold < Platinum).

The bonus for one promotion on one order is the *extra* points above base points:

    bonus = (multiplier - 1) x tier rate x whole dollars of qualifying net spend, rounded down

where the qualifying net spend is the net spend of the order's lines whose product category is one of
the promotion's categories. If an order qualifies for two promotions, each bonus is computed separately.
The points engine posts an order's base points and its bonuses together as one `earn` ledger entry
(reference = order id).

## 3. Orders that earn nothing

Orders with status `returned` or `cancelled` earn neither base nor bonus points. Guest orders (no member)
earn nothing.

## 4. Corrections and adjustments

* Balances of **closed** accounts are frozen: never post points to a closed account.
* When the points engine fails, the owed points are posted as **one** ledger entry of kind
  `adjustment` per member, with the incident number as the reference and the total owed across all
  of the member's affected orders as the points.
* Bonus points that stores already credited by hand are recorded as ledger entries of kind `bonus`
  whose reference is `<order id>:<promotion id>`; they must not be credited again.
* Members who are owed nothing get no adjustment.
"""

TERMS_2023 = """# Evergreen Rewards — Program Terms 2023 (SUPERSEDED)

> Archived copy. Superseded by the 2024 terms on 1 January 2024. Do not use for current corrections.

| Tier     | Points per $1 |
|----------|---------------|
| Basic    | 1             |
| Silver   | 1.2           |
| Gold     | 1.4           |
| Platinum | 1.75          |

Promotional multipliers in 2023 applied to the whole order total, including items outside the promoted
category. Goodwill corrections were posted as kind `bonus` with reference `GW-<ticket>`.
Closed accounts could receive corrections within 90 days of closure.
"""

INCIDENT = """# {iid} — Promotion bonuses not applied by the points engine

* **Status:** resolved (root cause fixed), customer remediation pending
* **Severity:** S2
* **Owner:** Loyalty Platform team (on-call: D. Okafor)
* **Opened:** 2024-09-21 09:12 · **Resolved:** 2024-09-21 14:30

## Summary

The rules-engine release 7.14.0 deployed on **2024-09-14 at 06:00** broke the matching of category-based
promotions that use the new category tree. During the impact window, bonus points for the promotions
**{p1}** ({n1}) and **{p2}** ({n2}) were not awarded. Base points were awarded correctly.
Hotfix 7.14.1 went live on **2024-09-21 at 14:30**; orders placed from that moment on were processed
correctly, and orders before 06:00 on the 14th were never affected.

Other promotions that ran during the window (for example {p3} and {p4}) use the legacy category keys and
were **not** affected — their bonuses are in the ledger.

## Remediation

Loyalty ops to post the missing bonuses as adjustments (see program terms §4), reference `{iid}`.
Several stores already credited customers who complained at the service desk; those manual credits
are in the ledger and must be honoured, not duplicated.

## Timeline

| Time (local)      | Event                                                     |
|-------------------|-----------------------------------------------------------|
| 2024-09-14 06:00  | 7.14.0 deployed                                           |
| 2024-09-19 16:20  | First store ticket: "bonus missing on kitchen items"      |
| 2024-09-21 09:12  | Incident opened after spike in tickets                    |
| 2024-09-21 14:30  | 7.14.1 hotfix deployed, incident mitigated                |
"""

NOISE_INCIDENTS = [
    ("POS terminals offline at {store}", "Card terminals at {store} lost connectivity between {t1} and {t2}. "
     "Cash-only sales were keyed later; no loyalty impact because member IDs were captured on paper and "
     "entered by the shift lead the same evening."),
    ("Duplicate marketing email", "The '{promo}' campaign email was sent twice to about {n} members on {d}. "
     "No points impact. Unsubscribe rate rose slightly; CRM added a send-lock."),
    ("Shelf labels showed the wrong price", "At {store}, {n} shelf labels in aisle {aisle} showed last week's "
     "prices. Customers were charged the lower label price at the till on request. Pricing team re-printed."),
    ("Online checkout latency", "Checkout p95 latency exceeded 8 s between {t1} and {t2} due to a payment "
     "provider slowdown. Orders completed normally; loyalty points were awarded on completion."),
    ("Receipt printer firmware", "Receipts at {store} printed without the points balance line for {n} "
     "days. Balances were correct in the app; firmware rolled back."),
    ("Member app login failures", "About {n} members could not log into the app on {d} after a token "
     "rotation. No ledger impact; sessions restored after cache flush."),
    ("Gift card activation delays", "Gift cards sold at {store} on {d} took up to 4 hours to activate. "
     "No loyalty impact."),
]

STORE_NOTES = ["Staffing is tight on weekends; please schedule cross-trained associates for the service desk.",
               "The new endcap planogram for seasonal goods goes live next Monday.",
               "Reminder: count the safe at every shift change and log it in the binder.",
               "Customers keep asking about the app's digital receipts — point them to the FAQ card.",
               "Please push loyalty sign-ups at the till: the region is at 61% of target.",
               "The back-room ladder failed inspection; use the rolling stairs until it is replaced.",
               "Shrink in cosmetics is up; keep testers at the counter, not on the open shelf.",
               "Holiday hiring interviews start on the 2nd; managers please share availability."]


def _files(root: Path, scale, rng: random.Random) -> None:
    _write(root, "loyalty/program_terms_2024.md", TERMS_2024)
    _write(root, "loyalty/archive/program_terms_2023.md", TERMS_2023)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["promo_id", "name", "start_date", "end_date", "categories", "multiplier", "min_tier", "channels"])
    for pid, name, s, e, cats, mult, tier, ch in PROMOS:
        w.writerow([pid, name, s, e, "|".join(cats), mult, tier, ch])
    _write(root, "promotions/promo_calendar_2024H2.csv", buf.getvalue())
    _write(root, "promotions/README.md",
           "# Promotions\n\nThe calendar CSV lists every loyalty promotion for the half-year. `categories` and "
           "`channels` are pipe-separated. Multipliers apply to base points (2 = double points).\n"
           "Questions: merch-promos@evergreen.example\n")

    names = {p[0]: p[1] for p in PROMOS}
    _write(root, f"incidents/{INCIDENT_ID}.md", INCIDENT.format(
        iid=INCIDENT_ID, p1="PR-0911", n1=names["PR-0911"], p2="PR-0916", n2=names["PR-0916"],
        p3="PR-0913", p4="PR-0918"))
    used = set()
    for _ in range(scale.n_files(3)):
        num = rng.randint(2100, 2450)
        while num in used or num == 2291:
            num = rng.randint(2100, 2450)
        used.add(num)
        title, body = rng.choice(NOISE_INCIDENTS)
        d = date(2024, 8, 1) + timedelta(days=rng.randint(0, 90))
        fill = dict(store=rng.choice(STORES[:12])[1], t1=f"{rng.randint(8, 12)}:{rng.randint(10, 59)}",
                    t2=f"{rng.randint(13, 19)}:{rng.randint(10, 59)}", promo=rng.choice(PROMOS)[1],
                    n=rng.randint(3, 4000), d=d.isoformat(), aisle=rng.randint(1, 14))
        text = (f"# INC-{num} — {title.format(**fill)}\n\n* **Status:** closed\n* **Severity:** "
                f"S{rng.randint(3, 4)}\n* **Opened:** {d.isoformat()}\n\n## Summary\n\n{body.format(**fill)}\n\n"
                f"## Follow-up\n\n{rng.choice(STORE_NOTES)}\n")
        _write(root, f"incidents/INC-{num}.md", text)

    for k in range(scale.n_files(4)):
        wk = 31 + k * (13 / max(1, scale.n_files(4)))
        wk = int(wk)
        lines = [f"# Weekly sales flash — 2024-W{wk:02d}", "", "| Region | Net sales | vs LY | Members share |",
                 "|---|---|---|---|"]
        for reg in ["Northwest", "Mountain", "Southwest", "Central", "South", "Online"]:
            lines.append(f"| {reg} | ${rng.randint(180, 900)},{rng.randint(100, 999)} | "
                         f"{rng.choice(['+', '-'])}{rng.randint(0, 14)}.{rng.randint(0, 9)}% | "
                         f"{rng.randint(48, 79)}% |")
        lines += ["", "Top categories: " + ", ".join(rng.sample(list(CATALOG), 3)) + ".",
                  rng.choice(STORE_NOTES), ""]
        _write(root, f"reports/weekly_flash_2024-W{wk:02d}_{k}.md", "\n".join(lines))

    for k in range(scale.n_files(3)):
        st = STORES[k % 12]
        notes = rng.sample(STORE_NOTES, 3)
        text = (f"# {st[1]} ({st[0]}) — store team notes\n\n" + "\n".join(f"- {x}" for x in notes)
                + f"\n\nLoyalty sign-ups this month: {rng.randint(40, 260)}.\n")
        _write(root, f"stores/{st[0]}_team_notes_{k + 1}.md", text)
