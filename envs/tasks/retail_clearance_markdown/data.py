"""End-of-season clearance markdowns: brands, products, locations, stock, weekly sales, price history.

The playbook (scope, sell-through window, tiers, .99 rounding), the vendor terms (markdown caps and
embargoes) and the buyers' memo (Outerwear one tier shallower, a capsule collection excluded) live only
in workspace files. Planted SKUs at every scale sit on the tier boundaries, were already marked down
deeper, have no stock, launched too late, or belong to capped / embargoed brands.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from datetime import date, timedelta
from pathlib import Path

RUN_DATE = date(2025, 1, 6)
WEEKS = [date(2024, 9, 16) + timedelta(weeks=i) for i in range(16)]  # .. 2024-12-30
WINDOW_FIRST = date(2024, 11, 11)
LATEST_LAUNCH = date(2024, 11, 11)

BRANDS = [
    ("BR-01", "Northfold", "own_label", "UK"), ("BR-02", "Fenn & Wilde", "own_label", "UK"),
    ("BR-03", "Kestrel Outdoor", "wholesale", "NO"), ("BR-04", "Maison Liane", "wholesale", "FR"),
    ("BR-05", "Alder Row", "own_label", "UK"), ("BR-06", "Tidewater Denim", "wholesale", "US"),
    ("BR-07", "Solvik", "wholesale", "SE"), ("BR-08", "Pennant Kids", "own_label", "UK"),
    ("BR-09", "Casa Brava", "wholesale", "ES"), ("BR-10", "Hollis Leather", "wholesale", "IT"),
    ("BR-11", "Ora Atelier", "wholesale", "IT"), ("BR-12", "Greyfield Basics", "own_label", "UK"),
]
VENDOR_TERMS = {
    "BR-03": {"max_markdown_pct": 30, "payment_terms": "60 days EOM", "returns_to_vendor": False},
    "BR-04": {"max_markdown_pct": 20, "payment_terms": "45 days", "returns_to_vendor": True},
    "BR-06": {"max_markdown_pct": 50, "payment_terms": "30 days", "returns_to_vendor": False},
    "BR-07": {"max_markdown_pct": 30, "payment_terms": "60 days", "returns_to_vendor": False,
              "markdown_embargo_until": "2024-12-31"},
    "BR-09": {"payment_terms": "30 days", "returns_to_vendor": True},
    "BR-10": {"max_markdown_pct": 30, "payment_terms": "90 days", "returns_to_vendor": False},
    "BR-11": {"markdown_embargo_until": "2025-02-01", "payment_terms": "60 days", "returns_to_vendor": False},
}

LOCATIONS = [
    ("DC-01", "Daventry Distribution Centre", "dc", "National"),
    ("ST-101", "Manchester Arndale", "store", "North"), ("ST-102", "Leeds Trinity", "store", "North"),
    ("ST-103", "Bristol Cabot", "store", "South West"), ("ST-104", "Brighton Churchill", "store", "South East"),
    ("ST-105", "Glasgow Buchanan", "store", "Scotland"), ("ST-106", "London Covent Garden", "store", "London"),
]

DEPTS = {
    "Womenswear": {"Outerwear": ["Coat", "Puffer Jacket", "Trench", "Gilet"], "Knitwear": ["Cardigan", "Jumper",
                   "Roll Neck"], "Dresses": ["Midi Dress", "Shirt Dress", "Slip Dress"],
                   "Trousers": ["Wide Leg Trouser", "Cigarette Trouser", "Cord Trouser"]},
    "Menswear": {"Outerwear": ["Parka", "Overcoat", "Quilted Jacket", "Harrington"], "Knitwear": ["Crew Neck",
                 "Quarter Zip", "Cable Knit"], "Shirts": ["Oxford Shirt", "Flannel Shirt", "Overshirt"],
                 "Trousers": ["Chino", "Cargo Trouser", "Wool Trouser"]},
    "Kids": {"Outerwear": ["Snow Jacket", "Raincoat"], "Knitwear": ["Fair Isle Jumper", "Hoodie"],
             "Footwear": ["Wellington Boot", "Trainer"]},
    "Accessories": {"Hats & Scarves": ["Beanie", "Blanket Scarf", "Bucket Hat"], "Bags": ["Tote", "Crossbody Bag",
                    "Backpack"], "Footwear": ["Chelsea Boot", "Loafer", "Ankle Boot"]},
}
ADJ = ["Harbour", "Moorland", "Ember", "Linden", "Sable", "Quarry", "Heath", "Bramble", "Cinder", "Fjord",
       "Ashdown", "Rowan", "Pebble", "Slate", "Thistle", "Juniper", "Marlow", "Coastline", "Fieldhouse", "Dune"]
MATERIAL = ["Wool", "Merino", "Cotton", "Cord", "Recycled Nylon", "Leather", "Suede", "Lambswool", "Denim",
            "Twill", "Fleece", "Cashmere Blend"]
COLOURS = ["Navy", "Oat", "Charcoal", "Forest", "Rust", "Camel", "Black", "Ecru", "Burgundy", "Sage", "Stone",
           "Ink", "Mustard"]
PRICE_BAND = {"Outerwear": (79, 249), "Knitwear": (35, 129), "Dresses": (45, 139), "Trousers": (35, 89),
              "Shirts": (29, 69), "Footwear": (39, 159), "Hats & Scarves": (15, 49), "Bags": (29, 189)}
APPROVERS = ["j.whitlock", "r.anand", "m.costa", "s.brennan"]

SCHEMA = """
create table brands (brand_id text primary key, name text, sourcing text, country text);
create table products (sku text primary key, style_name text, colour text, department text, category text,
    season text, brand_id text, launch_date text, original_price real, current_price real, unit_cost real);
create table locations (location_id text primary key, name text, type text, region text);
create table stock (location_id text, sku text, on_hand integer);
create table weekly_sales (sku text, week_start text, units integer, net_revenue real);
create table price_changes (change_id integer primary key, sku text, effective_date text, old_price real,
    new_price real, reason text, approved_by text);
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


def _split(rng: random.Random, total: int, parts: int) -> list[int]:
    """Split `total` into `parts` non-negative integers (random weights)."""
    if parts <= 0:
        return []
    w = [rng.random() + 0.05 for _ in range(parts)]
    s = sum(w)
    out = [int(total * x / s) for x in w]
    for i in range(total - sum(out)):
        out[i % parts] += 1
    return out


def build(root: Path, scale, seed: int) -> None:
    _reset(root)
    rng = random.Random(seed)
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript(SCHEMA)
    con.executemany("insert into brands values (?,?,?,?)", BRANDS)
    con.executemany("insert into locations values (?,?,?,?)", LOCATIONS)

    products, stock, sales, changes = [], [], [], []
    used_names: set[str] = set()
    sku_no = [rng.randint(100, 200)]

    def new_product(season: str, dept: str | None = None, cat: str | None = None, brand: str | None = None,
                    launch: date | None = None, style: str | None = None) -> list:
        dept = dept or rng.choice(list(DEPTS))
        cat = cat or rng.choice(list(DEPTS[dept]))
        noun = rng.choice(DEPTS[dept][cat])
        while True:
            name = style or f"{rng.choice(ADJ)} {rng.choice(MATERIAL)} {noun}"
            if name not in used_names or style:
                break
        used_names.add(name)
        sku_no[0] += rng.randint(1, 9)
        sku = f"{dept[0]}{cat[:2].upper()}-{sku_no[0]:05d}"
        lo, hi = PRICE_BAND[cat]
        price = float(rng.randint(lo // 5, hi // 5) * 5 + rng.choice([0, 4]))
        if brand is None:
            brand = rng.choice(BRANDS)[0]
        if launch is None:
            if season == "AW24":
                launch = date(2024, 8, 19) + timedelta(weeks=rng.randint(0, 15))
            elif season == "SS24":
                launch = date(2024, 2, 5) + timedelta(weeks=rng.randint(0, 14))
            elif season == "AW23":
                launch = date(2023, 8, 21) + timedelta(weeks=rng.randint(0, 12))
            else:
                launch = date(2021, 3, 1) + timedelta(weeks=rng.randint(0, 150))
        cost = round(price * rng.uniform(0.28, 0.45), 2)
        p = [sku, name, rng.choice(COLOURS), dept, cat, season, brand, launch.isoformat(), price, price, cost]
        products.append(p)
        return p

    def history(p: list, st: float | None = None, units: int | None = None, on_hand: int | None = None,
                prior_md: float | None = None) -> None:
        """Give a product weekly sales and stock so that window sell-through is about `st`."""
        launch = date.fromisoformat(p[7])
        live = [w for w in WEEKS if w >= launch - timedelta(days=6)]
        win = [w for w in live if w >= WINDOW_FIRST]
        if units is None or on_hand is None:
            on_hand = rng.randint(20, 260) if on_hand is None else on_hand
            if st is None:
                st = rng.random()
            units = int(round(st * on_hand / max(0.02, 1 - st))) if st < 0.98 else rng.randint(40, 200)
        before = rng.randint(0, units * 2) if len(live) > len(win) else 0
        for w, u in zip(win, _split(rng, units, len(win)), strict=True):
            sales.append((p[0], w.isoformat(), u, round(u * p[9] * rng.uniform(0.9, 1.0), 2)))
        early = [w for w in live if w < WINDOW_FIRST]
        for w, u in zip(early, _split(rng, before, len(early)), strict=True):
            sales.append((p[0], w.isoformat(), u, round(u * p[9], 2)))
        locs = [loc[0] for loc in LOCATIONS]
        for loc, q in zip(locs, _split(rng, on_hand, len(locs)), strict=True):
            if q or rng.random() < 0.5:
                stock.append((loc, p[0], q))
        if prior_md is not None:
            new = float(int(p[8] * (1 - prior_md)) - 0.01)
            changes.append([p[0], "2024-12-02", p[9], new, "PROMO-BF24", rng.choice(APPROVERS)])
            p[9] = new

    n = scale.n_rows(104)
    for _ in range(n):
        season = rng.choices(["AW24", "SS24", "CORE", "AW23"], [36, 22, 30, 12])[0]
        p = new_product(season)
        if season == "AW24":
            st = rng.choices([rng.uniform(0.02, 0.24), rng.uniform(0.26, 0.44), rng.uniform(0.46, 0.64),
                              rng.uniform(0.66, 0.95)], [10, 12, 14, 64])[0]
            prior = rng.choice([0.2, 0.3, 0.4]) if rng.random() < 0.12 else None
            history(p, st=st, prior_md=prior)
        elif season == "SS24":
            history(p, st=rng.uniform(0.05, 0.5), on_hand=rng.randint(0, 40))
        elif season == "CORE":
            history(p, st=rng.uniform(0.3, 0.8))
        else:
            history(p, st=rng.uniform(0.2, 0.9), on_hand=rng.randint(0, 12))

    # planted SKUs, every scale
    early = date(2024, 9, 2)
    history(new_product("AW24", "Womenswear", "Knitwear", "BR-01", early), units=30, on_hand=90)   # ST 25% -> 30%
    history(new_product("AW24", "Menswear", "Shirts", "BR-05", early), units=29, on_hand=91)       # ST 24.2% -> 50%
    history(new_product("AW24", "Womenswear", "Dresses", "BR-02", early), units=45, on_hand=55)    # ST 45% -> 20%
    history(new_product("AW24", "Accessories", "Bags", "BR-12", early), units=65, on_hand=35)      # ST 65% -> none
    history(new_product("AW24", "Menswear", "Outerwear", "BR-01", early), units=10, on_hand=140)   # OW 50->30
    history(new_product("AW24", "Womenswear", "Outerwear", "BR-05", early), units=40, on_hand=80)  # OW 30->20
    history(new_product("AW24", "Kids", "Outerwear", "BR-08", early), units=55, on_hand=60)        # OW 20->none
    history(new_product("AW24", "Womenswear", "Outerwear", "BR-03", early), units=5, on_hand=120)  # OW+cap 30
    history(new_product("AW24", "Womenswear", "Knitwear", "BR-04", early), units=8, on_hand=150)   # cap 20
    history(new_product("AW24", "Menswear", "Knitwear", "BR-07", early), units=12, on_hand=100)    # embargo over
    history(new_product("AW24", "Womenswear", "Dresses", "BR-11", early), units=3, on_hand=70)     # embargo
    history(new_product("AW24", "Accessories", "Footwear", "BR-10", early), units=20, on_hand=110)  # cap 30
    history(new_product("AW24", "Womenswear", "Dresses", "BR-02", early, style="Aurora Sequin Midi Dress"),
            units=4, on_hand=80)                                                                  # capsule
    history(new_product("AW24", "Accessories", "Bags", "BR-05", early, style="Aurora Velvet Clutch"),
            units=9, on_hand=45)                                                                  # capsule
    history(new_product("AW24", "Menswear", "Knitwear", "BR-12", date(2024, 11, 18)), units=3, on_hand=80)  # new
    history(new_product("AW24", "Kids", "Knitwear", "BR-08", LATEST_LAUNCH), units=6, on_hand=70)  # launch=limit
    history(new_product("AW24", "Womenswear", "Trousers", "BR-02", early), units=0, on_hand=0)     # nothing left
    history(new_product("AW24", "Menswear", "Trousers", "BR-06", early), units=0, on_hand=64)      # ST 0 -> 50%
    history(new_product("AW24", "Womenswear", "Knitwear", "BR-01", early), units=30, on_hand=90,
            prior_md=0.4)                                                                         # deeper already
    history(new_product("AW24", "Menswear", "Outerwear", "BR-05", early), units=6, on_hand=130,
            prior_md=0.2)                                                                         # 30% beats 20%
    history(new_product("SS24", "Womenswear", "Dresses", "BR-02"), units=2, on_hand=90)           # wrong season
    history(new_product("CORE", "Menswear", "Shirts", "BR-12"), units=5, on_hand=200)             # core

    products.sort(key=lambda p: p[0])
    con.executemany("insert into products values (?,?,?,?,?,?,?,?,?,?,?)", products)
    stock.sort(key=lambda s: (s[1], s[0]))
    con.executemany("insert into stock values (?,?,?)", stock)
    sales.sort(key=lambda s: (s[1], s[0]))
    con.executemany("insert into weekly_sales values (?,?,?,?)", sales)
    # older, unrelated price changes
    for p in rng.sample(products, min(len(products), scale.n_rows(14))):
        if p[5] in ("SS24", "AW23"):
            d = date(2024, 7, 1) + timedelta(days=rng.randint(0, 60))
            changes.append([p[0], d.isoformat(), p[8], p[9], "CLR-SS24", rng.choice(APPROVERS)])
    changes.sort(key=lambda c: (c[1], c[0]))
    con.executemany("insert into price_changes (sku, effective_date, old_price, new_price, reason, approved_by) "
                    "values (?,?,?,?,?,?)", changes)
    con.commit()
    con.close()
    _files(root, scale, rng)


PLAYBOOK = """# Markdown playbook — Autumn/Winter 2024 (AW24) end-of-season clearance

Owner: Merchandise Planning · Applies to the clearance run on **Monday 6 January 2025**.
Reason code for every price change in this run: **CLR-AW24**.

## 1. Scope
* Only SKUs of season **AW24**. CORE (never-out-of-stock) lines and other seasons are out of scope.
* A SKU must have been on sale for at least 8 weeks: its launch date must be on or before
  **2024-11-11**.
* SKUs with no stock on hand anywhere (stores + DC) are not repriced.

## 2. Sell-through
Sell-through (ST) is measured over the **last 8 complete trading weeks**, i.e. the weeks starting
2024-11-11 up to and including the week starting 2024-12-30:

    ST = units sold in those 8 weeks / (units sold in those 8 weeks + current on-hand units)

On-hand is the chain total: every store **and** the distribution centre.

## 3. Markdown tiers
| Sell-through        | Markdown (off the ORIGINAL ticket price) |
|---------------------|------------------------------------------|
| below 25%           | 50%                                      |
| 25% to below 45%    | 30%                                      |
| 45% to below 65%    | 20%                                      |
| 65% or more         | no markdown                              |

## 4. Pricing
* New price = original price x (1 - markdown), then **rounded down** to the nearest price ending in
  .99 (e.g. 55.30 -> 54.99, 50.00 -> 49.99).
* Never raise a price: if the new price is not lower than the SKU's current price (for example after
  the Black Friday event), leave the SKU alone.
* Supplier agreements can cap the markdown for wholesale brands or embargo markdowns until a date;
  see `vendor_terms.json`. A cap limits the markdown percentage; an embargo that has not ended by the
  run date means no markdown at all.

## 5. After the run
Stores receive the new tickets via the overnight price file. Report the number of SKUs repriced and the
markdown value of the stock on hand (old price minus new price, times chain on-hand units).
"""

PLAYBOOK_SS24 = """# Markdown playbook — Spring/Summer 2024 (SS24) — ARCHIVED

Superseded for AW24 by the new playbook. Kept for reference only.

| Sell-through   | Markdown |
|----------------|----------|
| below 30%      | 40%      |
| 30% to 50%     | 25%      |
| above 50%      | 10%      |

Sell-through was measured over 6 weeks of store stock only (the DC was excluded). Prices were rounded
to the nearest .49 or .99. Reason code CLR-SS24.
"""

MEMO = """From: Buying Directors (Womenswear, Menswear, Kids)
To: Merchandise Planning; Pricing Ops
Date: 3 January 2025
Subject: AW24 clearance — two changes to the playbook for Monday's run

Hi all,

Two decisions from this morning's trading meeting for the clearance run on the 6th:

1. **Outerwear** (all departments): the Met Office long-range forecast shows a cold snap through late
   January, so we want to hold margin. Take Outerwear SKUs **one tier shallower** than the playbook
   says: a SKU that would get 50% gets 30%, 30% becomes 20%, and 20% becomes no markdown.
   Supplier caps still apply on top of this.

2. The **Aurora** holiday capsule (every style whose name starts with "Aurora") is moving to the outlet
   channel next month. Do **not** mark any Aurora style down in this run.

Everything else as per the playbook.

Thanks,
Harriet (Womenswear), Dev (Menswear), Carla (Kids)
"""

NOISE = [
    ("buying/trip_notes_{i}.md", "# Buying trip notes — {city}\n\nVisited {n} suppliers. Key themes for AW25: "
     "{a}, {b} and tonal dressing. Lead times are stretching to {w} weeks for knitwear; book fabric by "
     "March.\n\nFollow-ups:\n- Ask {brand} for recycled-content certificates.\n- Sampling budget: GBP {k}k.\n"),
    ("stores/visit_report_{i}.md", "# Store visit — {store}\n\nVisited by the regional manager on {d}.\n\n"
     "* Fitting rooms: queue of {n} at peak; consider a third attendant.\n* Outerwear wall looked thin in "
     "sizes S and XL.\n* Window scheme '{a}' landed well; footfall +{p}% week on week.\n"),
    ("trading/weekly_trading_{i}.md", "# Weekly trading summary — week {wk}\n\n| Department | Sales GBP k | "
     "vs LY |\n|---|---|---|\n| Womenswear | {s1} | {p}% |\n| Menswear | {s2} | -{q}% |\n| Kids | {s3} | "
     "{q}% |\n| Accessories | {s4} | {p}% |\n\nComment: {a} sold through faster than plan; {b} behind.\n"),
    ("planning/range_review_{i}.md", "# Range review — {dept}\n\nOptions carried: {n}. Proposed cuts for "
     "AW25: {k} options. {brand} to move from wholesale to concession from spring. Reminder: range reviews "
     "do not change prices; pricing follows the seasonal playbook only.\n"),
]


def _files(root: Path, scale, rng: random.Random) -> None:
    _write(root, "merchandising/markdown_playbook_AW24.md", PLAYBOOK)
    _write(root, "merchandising/archive/markdown_playbook_SS24.md", PLAYBOOK_SS24)
    _write(root, "merchandising/memos/2025-01-03_clearance_changes.md", MEMO)
    terms = {"updated": "2024-12-20", "note": "Only brands with special terms are listed; all other brands "
             "have no markdown restrictions.",
             "brands": {k: {"brand_name": next(b[1] for b in BRANDS if b[0] == k), **v}
                        for k, v in VENDOR_TERMS.items()}}
    _write(root, "merchandising/vendor_terms.json", json.dumps(terms, indent=2) + "\n")
    memo_topics = ["Visual merchandising refresh for January", "Stocktake dates for Q1",
                   "Gift card liability reminder", "Returns window extended to 31 January",
                   "New hanger supplier from February", "Click & collect cut-off times"]
    for _ in range(scale.n_files(2)):
        d = date(2024, 10, 1) + timedelta(days=rng.randint(0, 90))
        topic = rng.choice(memo_topics)
        _write(root, f"merchandising/memos/{d.isoformat()}_{topic.lower().replace(' ', '_')[:28]}.md",
               f"Subject: {topic}\nDate: {d.isoformat()}\n\nPlease note: {topic.lower()}. Store managers to "
               f"brief teams by {(d + timedelta(days=7)).isoformat()}. This does not affect pricing.\n")
    for i in range(scale.n_files(8)):
        path, body = NOISE[i % len(NOISE)]
        fill = dict(i=i + 1, city=rng.choice(["Porto", "Florence", "Istanbul", "Leicester", "Guimarães"]),
                    n=rng.randint(3, 40), a=rng.choice(ADJ) + " " + rng.choice(MATERIAL).lower(),
                    b=rng.choice(["cord trousers", "quilted jackets", "knit dresses", "loafers", "beanies"]),
                    w=rng.randint(8, 20), brand=rng.choice(BRANDS)[1], k=rng.randint(10, 90),
                    store=rng.choice(LOCATIONS[1:])[1], d=(date(2024, 10, 1) + timedelta(days=rng.randint(0, 90))),
                    p=rng.randint(1, 19), q=rng.randint(1, 12), wk=rng.randint(38, 52),
                    s1=rng.randint(300, 900), s2=rng.randint(200, 700), s3=rng.randint(80, 300),
                    s4=rng.randint(100, 400), dept=rng.choice(list(DEPTS)))
        _write(root, path.format(**fill), body.format(**fill))
