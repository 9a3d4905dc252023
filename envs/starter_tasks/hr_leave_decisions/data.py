"""Employees with leave balances, their teams, and leave requests in several statuses.

Pending requests are mixed: some within the balance, some exactly at it (approve), some above it
(reject); already decided requests must not change.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path


def build(root: Path, scale, seed: int) -> None:
    rng = random.Random(seed * 10 + scale.index)
    db = sqlite3.connect(root / "db.sqlite")
    db.executescript(
        "create table teams (id text primary key, name text);"
        "create table employees (id text primary key, name text, team_id text references teams(id), balance integer);"
        "create table leave_requests (id text primary key, employee_id text references employees(id), days integer,"
        " status text);")
    teams = [(f"TM-{i}", f"Team {i}") for i in range(scale.n_rows(3))]
    db.executemany("insert into teams values (?, ?)", teams)
    employees = []
    for i in range(scale.n_rows(12)):
        employees.append((f"E-{300 + i}", f"Employee {300 + i}", teams[i % len(teams)][0], rng.randint(2, 20)))
    db.executemany("insert into employees values (?, ?, ?, ?)", employees)
    for i in range(scale.n_rows(12)):
        emp = employees[i % len(employees)]
        kind = i % 6
        status = "pending" if kind < 3 else ("approved", "rejected", "approved")[kind - 3]
        days = (rng.randint(1, emp[3]), emp[3], emp[3] + rng.randint(1, 5))[kind % 3]
        db.execute("insert into leave_requests values (?, ?, ?, ?)", (f"LR-{700 + i}", emp[0], days, status))
    db.execute("create table attendance (id integer primary key, employee_id text, day integer, hours real)")
    for i in range(scale.n_rows(300)):
        db.execute("insert into attendance (employee_id, day, hours) values (?, ?, ?)",
                   (employees[i % len(employees)][0], i % 28 + 1, round(rng.uniform(4, 10), 2)))
    db.commit()
    db.close()
    ws = root / "workspace"
    for i in range(scale.n_files(3)):
        (ws / f"hr_bulletin_{i + 1:02d}.md").write_text(
            f"# HR bulletin {i + 1}\n\nThe office closes at {rng.randint(16, 19)}:00 on Fridays this month.\n")
