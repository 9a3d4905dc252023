"""Products with stock and reorder levels, their suppliers, and a few warehouse notes.

About one product in eight is below its reorder level at every scale; a few sit exactly at it
(not below: those must not be flagged).
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

CATEGORIES = ["fasteners", "paint", "plumbing", "electrical", "garden", "tools"]
NOUNS = ["bolt", "hinge", "bracket", "valve", "cable", "fuse", "brush", "roller", "hose", "trowel", "clamp", "washer"]


def build(root: Path, scale, seed: int) -> None:
    rng = random.Random(seed * 10 + scale.index)
    db = sqlite3.connect(root / "db.sqlite")
    db.executescript(
        "create table suppliers (id text primary key, name text, lead_days integer);"
        "create table products (sku text primary key, name text, category text, stock integer,"
        " reorder_level integer, supplier_id text references suppliers(id), flagged integer default 0);"
        "create table notifications (id integer primary key, recipient text, count integer, sent_at text);")
    suppliers = [(f"SUP-{i:02d}", f"Supplier {i:02d}", rng.randint(2, 21)) for i in range(scale.n_rows(4))]
    db.executemany("insert into suppliers values (?, ?, ?)", suppliers)
    for i in range(scale.n_rows(24)):
        level = rng.randint(5, 40)
        kind = i % 8
        stock = level - rng.randint(1, level) if kind == 3 else level if kind == 6 else level + rng.randint(1, 60)
        name = f"{rng.choice(NOUNS)} {rng.randint(3, 90)}mm"
        db.execute("insert into products values (?, ?, ?, ?, ?, ?, 0)",
                   (f"SKU-{1000 + i}", name, CATEGORIES[i % len(CATEGORIES)], stock, level,
                    suppliers[i % len(suppliers)][0]))
    db.execute("create table stock_movements (id integer primary key, sku text, delta integer, note text)")
    for i in range(scale.n_rows(150)):
        db.execute("insert into stock_movements (sku, delta, note) values (?, ?, ?)",
                   (f"SKU-{1000 + i % scale.n_rows(24)}", rng.randint(-20, 20),
                    " ".join(rng.choice(NOUNS) for _ in range(12))))
    db.commit()
    db.close()
    ws = root / "workspace"
    for i in range(scale.n_files(3)):
        (ws / f"warehouse_note_{i + 1:02d}.md").write_text(
            f"# Warehouse note {i + 1}\n\nAisle {rng.randint(1, 30)} was recounted on day {rng.randint(1, 28)}.\n")
