"""Support tickets in several statuses, the agents who own them, and a few shift notes.

About a fifth of the tickets are `resolved`; `reopened` and `pending_customer` tickets look close
but must stay open.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

STATUSES = ["open", "resolved", "pending_customer", "reopened", "open", "resolved", "open", "escalated", "open",
            "pending_customer"]
TOPICS = ["login fails", "refund request", "invoice copy", "shipping delay", "password reset", "app crash",
          "billing address", "cancel plan"]


def build(root: Path, scale, seed: int) -> None:
    rng = random.Random(seed * 10 + scale.index)
    db = sqlite3.connect(root / "db.sqlite")
    db.executescript(
        "create table agents (id text primary key, name text, team text);"
        "create table tickets (id text primary key, subject text, status text, agent_id text references agents(id),"
        " customer text, closed integer default 0);"
        "create table summaries (id integer primary key, closed_count integer);")
    agents = [(f"AG-{i:02d}", f"Agent {i:02d}", rng.choice(["tier1", "tier2"])) for i in range(scale.n_rows(3))]
    db.executemany("insert into agents values (?, ?, ?)", agents)
    for i in range(scale.n_rows(30)):
        db.execute("insert into tickets values (?, ?, ?, ?, ?, 0)",
                   (f"T-{5000 + i}", rng.choice(TOPICS), STATUSES[i % len(STATUSES)], agents[i % len(agents)][0],
                    f"customer{rng.randint(1, 999):03d}@example.com"))
    db.execute("create table ticket_messages (id integer primary key, ticket_id text, body text)")
    for i in range(scale.n_rows(150)):
        db.execute("insert into ticket_messages (ticket_id, body) values (?, ?)",
                   (f"T-{5000 + i % scale.n_rows(30)}", " ".join(rng.choice(TOPICS) for _ in range(8))))
    db.commit()
    db.close()
    ws = root / "workspace"
    for i in range(scale.n_files(3)):
        (ws / f"shift_note_{i + 1:02d}.md").write_text(
            f"# Shift {i + 1}\n\n{rng.randint(3, 40)} chats handled; queue peaked at {rng.randint(5, 20)}.\n")
