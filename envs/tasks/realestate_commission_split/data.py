"""Brokerage back office: agents, transactions, agents per transaction, and the commission payout ledger.

Commission plans, caps, team overrides, referral letters and the batch memo exist only as workspace files.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from datetime import date, timedelta
from pathlib import Path

from envs.taskkit import Scale

PLANS = {"SPLIT-70": (30.0, 20000.0), "SPLIT-80": (20.0, 14000.0), "FLAT-100": None}
FLAT_FEE = 395.0
TEAMS = {"T-01": ("Flatirons Home Group", 10.0), "T-02": ("Mile High Collective", 15.0),
         "T-03": ("Poudre River Partners", 8.0)}
OFFICES = [("OF-BLD", "Boulder - Pearl Street", "Boulder"), ("OF-DEN", "Denver - LoHi", "Denver"),
           ("OF-FTC", "Fort Collins - Old Town", "Fort Collins"), ("OF-GLD", "Golden - Washington Ave", "Golden")]
CITIES = ["Boulder", "Denver", "Fort Collins", "Golden", "Longmont", "Louisville", "Lakewood", "Arvada", "Loveland",
          "Lafayette", "Erie", "Westminster"]
STREETS = ["Larkspur", "Aspen Ridge", "Columbine", "Sunshine Canyon", "Bluebell", "Mapleton", "Pine Brook",
           "Juniper", "Cottonwood", "Spruce", "Linden", "Hawthorne", "Wildflower", "Quail Creek", "Silver Sage",
           "Red Fox", "Canyon View", "Old Stage", "Meadowlark", "Kestrel", "Mesa Verde", "Sagebrush", "Prairie Star"]
SUFFIX = ["Lane", "Ct", "Dr", "Way", "Rd", "Pl", "Ave", "St", "Circle", "Trail"]
FIRST = ["Adrienne", "Beckett", "Cassidy", "Dashiell", "Elodie", "Fintan", "Georgina", "Holden", "Ivy", "Jude",
         "Kendra", "Lorcan", "Marisa", "Nolan", "Opal", "Porter", "Reese", "Sloane", "Thatcher", "Una", "Vaughn",
         "Wren", "Xavier", "Yvette", "Zane", "Annika", "Bryce", "Celeste", "Dorian", "Esme", "Graham", "Harlow"]
LAST = ["Ashby", "Blackwood", "Castellanos", "Drummond", "Eastman", "Farrow", "Galloway", "Hendricks", "Ingersoll",
        "Jessup", "Kincaid", "Lockhart", "Merriweather", "Northcott", "Oyama", "Pendergast", "Quigley", "Ravensworth",
        "Stanhope", "Thornbury", "Upton", "Vance", "Whitlock", "Yardley", "Zeller", "Abara", "Bhattacharya"]
BROKERS = ["Summit Peak Realty (Boise, ID)", "Gulf Shore Properties (Naples, FL)", "Lakeside Realty Group (Madison, WI)",
           "Harborline Homes (Portland, ME)", "Desert Bloom Realty (Tucson, AZ)", "Cascade Crest Realty (Bend, OR)",
           "Bluegrass Home Partners (Lexington, KY)", "Prairie Wind Realty (Omaha, NE)"]


def _clear(root: Path) -> None:
    db = root / "db.sqlite"
    if db.exists():
        db.unlink()
    ws = root / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    for p in sorted(ws.iterdir()):
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def cap_start(hire: date, paid: date) -> date:
    day = 28 if (hire.month == 2 and hire.day == 29) else hire.day
    start = date(paid.year, hire.month, day)
    return start if start <= paid else date(paid.year - 1, hire.month, day)


def settle(txn: dict, parts: list[tuple[dict, float]], ref_pct: float, broker: str, paid: date,
           ledger: dict[str, list]) -> list[tuple]:
    """Settlement lines (payee, kind, agent_id, amount) following the written commission plans."""
    gci = round(txn["price"] * txn["pct"] / 100, 2)
    ref = round(gci * ref_pct / 100, 2) if ref_pct else 0.0
    net = round(gci - ref, 2)
    parts = sorted(parts, key=lambda p: p[0]["agent_id"])
    gross, acc = [], 0.0
    for i, (_, share) in enumerate(parts):
        g = round(net * share / 100, 2) if i < len(parts) - 1 else round(net - acc, 2)
        acc = round(acc + g, 2)
        gross.append(g)
    lines = []
    if ref:
        lines.append((f"referral:{broker}", "referral", None, ref))
    for (agent, _), g in zip(parts, gross, strict=True):
        plan = PLANS[agent["plan"]]
        comp = fee = 0.0
        if plan is None:
            fee = min(FLAT_FEE, g)
        else:
            start = cap_start(agent["hire"], paid)
            used = round(sum(a for d, a in ledger.get(agent["agent_id"], []) if d >= start), 2)
            comp = min(round(g * plan[0] / 100, 2), max(0.0, round(plan[1] - used, 2)))
            ledger.setdefault(agent["agent_id"], []).append((paid, comp))
        agent_net = round(g - comp - fee, 2)
        lead_amt = 0.0
        if agent["team"] and agent["agent_id"] != agent["team_lead"]:
            lead_amt = round(agent_net * TEAMS[agent["team"]][1] / 100, 2)
            agent_net = round(agent_net - lead_amt, 2)
        lines.append((f"agent:{agent['agent_id']}", "agent", agent["agent_id"], agent_net))
        if comp:
            lines.append((f"company:{agent['agent_id']}", "company", agent["agent_id"], comp))
        if fee:
            lines.append((f"fee:{agent['agent_id']}", "fee", agent["agent_id"], fee))
        if lead_amt:
            lines.append((f"lead:{agent['team_lead']}", "team_lead", agent["team_lead"], lead_amt))
    return lines


class _Gen:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.agents: list[dict] = []
        self.txns: list[dict] = []
        self.addresses: set[str] = set()
        self.names: set[str] = set()

    def agent(self, plan=None, hire=None, team=None) -> dict:
        rng = self.rng
        while True:
            n = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
            if n not in self.names:
                self.names.add(n)
                break
        a = {"agent_id": None, "name": n, "office": rng.choice(OFFICES)[0],
             "plan": plan or rng.choices(list(PLANS), weights=(45, 35, 20))[0],
             "hire": hire or date(2009, 1, 1) + timedelta(days=rng.randint(0, 5600)),
             "team": team, "team_lead": None, "license": f"FA.{rng.randint(100000000, 100999999)}",
             "status": "active", "tie": rng.random()}
        self.agents.append(a)
        return a

    def address(self) -> tuple[str, str]:
        rng = self.rng
        while True:
            a = f"{rng.randint(100, 9899)} {rng.choice(STREETS)} {rng.choice(SUFFIX)}"
            if a not in self.addresses:
                self.addresses.add(a)
                return a, rng.choice(CITIES)

    def txn(self, close: date, status: str, settled: int, parts, price=None, pct=None, side=None,
            address=None, hold=False) -> dict:
        rng = self.rng
        addr, city = address or self.address()
        self.addresses.add(addr)
        t = {"txn_id": None, "address": addr, "city": city, "close": close,
             "price": price or rng.randint(38, 185) * 10000 + rng.choice([0, 2500, 5000, 7500]),
             "pct": pct or rng.choice([2.0, 2.25, 2.5, 2.5, 2.75, 3.0]),
             "side": side or rng.choice(["listing", "buyer"]), "status": status, "settled": settled,
             "parts": parts, "hold": hold, "lines": [], "paid": None, "ref": (0.0, "")}
        self.txns.append(t)
        return t

    def parts(self, pool: list[dict]) -> list[tuple[dict, float]]:
        rng = self.rng
        if rng.random() < 0.8:
            return [(rng.choice(pool), 100.0)]
        a, b = rng.sample(pool, 2)
        s = rng.choice([50.0, 60.0, 70.0, 65.0])
        return [(a, s), (b, 100.0 - s)]


def build(root: Path, scale: Scale, seed: int) -> None:
    rng = random.Random(seed)
    _clear(root)
    g = _Gen(rng)

    # ---- agents and teams
    leads = {}
    for tid in TEAMS:
        lead = g.agent(plan="SPLIT-80", team=tid)
        leads[tid] = lead
    for _ in range(scale.n_rows(40)):
        team = rng.choice(list(TEAMS)) if rng.random() < 0.22 else None
        g.agent(team=team)
    near_cap = g.agent(plan="SPLIT-70", hire=date(2016, 6, 10))
    reset = g.agent(plan="SPLIT-80", hire=date(2018, 2, 20))
    flat = g.agent(plan="FLAT-100")
    member = g.agent(plan="SPLIT-80", team="T-02")
    co_a, co_b = g.agent(plan="SPLIT-70"), g.agent(plan="SPLIT-80")
    g.agents.sort(key=lambda a: a["tie"])
    for i, a in enumerate(g.agents):
        a["agent_id"] = f"A-{1001 + i}"
    for tid, lead in leads.items():
        for a in g.agents:
            if a["team"] == tid:
                a["team_lead"] = lead["agent_id"]
    special = {near_cap["agent_id"], reset["agent_id"]}
    pool = [a for a in g.agents if a["agent_id"] not in special]

    # ---- history (settled), Feb 2025 batch, later pipeline
    for m in range(25):
        y, mo = 2023 + m // 12, m % 12 + 1
        for _ in range(scale.n_rows(8)):
            close = date(y, mo, rng.randint(1, 28))
            st = "closed" if rng.random() < 0.96 else "fell_through"
            g.txn(close, st, 1 if st == "closed" else 0, g.parts(pool))
    fixed_hist = [(near_cap, date(2024, 7, 18), 840000), (near_cap, date(2024, 10, 9), 1000000),
                  (near_cap, date(2025, 1, 22), 720000), (near_cap, date(2024, 4, 30), 900000),
                  (reset, date(2024, 5, 14), 980000), (reset, date(2024, 12, 11), 1200000),
                  (reset, date(2025, 1, 16), 600000)]
    for agent, close, price in fixed_hist:
        g.txn(close, "closed", 1, [(agent, 100.0)], price=price, pct=2.5, side="listing")
    batch = []
    for _ in range(scale.n_rows(10)):
        batch.append(g.txn(date(2025, 2, rng.randint(1, 28)), "closed", 0, g.parts(pool)))
    for _ in range(scale.n_rows(6)):
        g.txn(date(2025, 3, 10) + timedelta(days=rng.randint(0, 80)), "pending", 0, g.parts(pool))
    g.txn(date(2025, 2, 18), "fell_through", 0, g.parts(pool))
    # fixed batch cases
    g.txn(date(2025, 2, 11), "closed", 0, [(near_cap, 100.0)], price=1120000, pct=2.5, side="listing")
    g.txn(date(2025, 2, 24), "closed", 0, [(reset, 100.0)], price=1600000, pct=2.5, side="buyer")
    ref_ok = g.txn(date(2025, 2, 6), "closed", 0, [(rng.choice(pool), 100.0)], price=845000, pct=2.5,
                   side="buyer", address=("1847 Larkspur Lane", "Boulder"))
    ref_expired = g.txn(date(2025, 2, 12), "closed", 0, [(rng.choice(pool), 100.0)], price=612500, pct=2.75,
                        side="buyer", address=("612 Aspen Ridge Ct", "Golden"))
    g.txn(date(2025, 2, 19), "closed", 0, [(flat, 100.0)], price=1255000, pct=2.5, side="listing")
    g.txn(date(2025, 2, 7), "closed", 0, [(member, 100.0)], price=732000, pct=2.75, side="buyer")
    g.txn(date(2025, 2, 26), "closed", 0, [(co_a, 60.0), (co_b, 40.0)], price=1487300, pct=2.5, side="listing")
    held = g.txn(date(2025, 2, 20), "closed", 0, [(rng.choice(pool), 100.0)], price=1040000, pct=2.5, side="listing")
    early = g.txn(date(2025, 2, 3), "closed", 1, [(rng.choice(pool), 100.0)], price=689000, pct=2.5, side="buyer")
    future_ref = g.txn(date(2025, 4, 18), "pending", 0, [(rng.choice(pool), 100.0)])
    past_ref = g.txn(date(2024, 9, 5), "closed", 1, [(rng.choice(pool), 100.0)])

    # ---- referral letters (files) for some transactions
    letters = [(ref_ok, BROKERS[0], 25.0, "2025-06-30"), (ref_expired, BROKERS[1], 30.0, "2025-01-31"),
               (future_ref, BROKERS[2], 25.0, "2025-12-31"), (past_ref, BROKERS[3], 20.0, "2024-12-31")]
    n_letters = scale.n_files(4)
    batch_pool = [t for t in batch if len(t["parts"]) == 1]
    hist_pool = [t for t in g.txns if t["settled"] and t["close"].year == 2024 and t["status"] == "closed"]
    k = 0
    while len(letters) < n_letters:
        kind = k % 3
        k += 1
        if kind < 2 and batch_pool:
            t = batch_pool.pop(0)
            valid = "2025-12-31" if kind == 0 else "2025-01-15"
            letters.append((t, rng.choice(BROKERS), rng.choice([20.0, 25.0, 30.0]), valid))
        else:
            t = hist_pool.pop(rng.randrange(len(hist_pool)))
            letters.append((t, rng.choice(BROKERS), rng.choice([20.0, 25.0]), "2025-06-30"))
    for t, broker, pct, valid in letters:
        if t["settled"] or valid >= t["close"].isoformat():
            t["ref"] = (pct, broker)

    # ---- settle history in payout order
    ledger: dict[str, list] = {}
    g.txns.sort(key=lambda t: (t["close"], t["address"]))
    for i, t in enumerate(g.txns):
        t["txn_id"] = f"TX-{t['close']:%y}-{i + 1:05d}"
    for t in g.txns:
        if not t["settled"]:
            continue
        paid = date(2025, 2, 20) if t is early else date(t["close"].year + (t["close"].month == 12),
                                                           t["close"].month % 12 + 1, 3)
        t["paid"] = paid
        t["lines"] = settle(t, t["parts"], t["ref"][0], t["ref"][1], paid, ledger)

    # ---- write
    con = sqlite3.connect(root / "db.sqlite")
    con.executescript("""
        create table offices(office_id text primary key, name text, city text);
        create table agents(agent_id text primary key, full_name text, office_id text, plan_code text,
            hire_date text, team_id text, license_no text, status text);
        create table transactions(txn_id text primary key, property_address text, city text, close_date text,
            sale_price real, commission_pct real, side text, status text, settled integer);
        create table transaction_agents(txn_id text, agent_id text, share_pct real, primary key(txn_id, agent_id));
        create table payouts(payout_id integer primary key autoincrement, txn_id text, payee text, kind text,
            agent_id text, amount real, paid_date text);
    """)
    con.executemany("insert into offices values (?,?,?)", OFFICES)
    for a in sorted(g.agents, key=lambda a: a["agent_id"]):
        con.execute("insert into agents values (?,?,?,?,?,?,?,?)",
                    (a["agent_id"], a["name"], a["office"], a["plan"], a["hire"].isoformat(), a["team"],
                     a["license"], a["status"]))
    for t in g.txns:
        con.execute("insert into transactions values (?,?,?,?,?,?,?,?,?)",
                    (t["txn_id"], t["address"], t["city"], t["close"].isoformat(), float(t["price"]), t["pct"],
                     t["side"], t["status"], t["settled"]))
        for a, share in sorted(t["parts"], key=lambda p: p[0]["agent_id"]):
            con.execute("insert into transaction_agents values (?,?,?)", (t["txn_id"], a["agent_id"], share))
    paid_rows = sorted(((t["paid"], t["txn_id"], ln) for t in g.txns if t["lines"] for ln in t["lines"]),
                       key=lambda r: (r[0], r[1]))
    con.executemany("insert into payouts(txn_id, payee, kind, agent_id, amount, paid_date) values (?,?,?,?,?,?)",
                    [(tid, ln[0], ln[1], ln[2], ln[3], paid.isoformat()) for paid, tid, ln in paid_rows])
    con.commit()
    con.close()
    _files(root / "workspace", scale, rng, letters, held, g)


# ----------------------------------------------------------------------------------------------- files

PLANS_MD = """# Agent commission plans — 2025

Cedar & Vale Realty · Finance · effective 2025-01-01 (unchanged from 2024 except where noted)

All amounts are in USD and every computed amount is rounded to cents. For a transaction:

1. **Gross commission (GCI)** = sale price × commission % (the rate recorded on the transaction).
2. **Outbound referral fee**: if a valid referral letter (folder `referrals/`) covers the property, the
   referral fee is that letter's percentage of the GCI, paid to the referring broker off the top.
   A letter is valid only if the transaction closed **on or before** the letter's "valid through" date.
3. **Net commission** = GCI − referral fee. It is divided between the transaction's agents by their
   `share_pct`, in agent-id order; the last agent in that order receives the remainder so that the shares add
   up exactly to the net commission. This is each agent's *agent gross*.
4. Each agent's plan then applies to their agent gross:

| Plan | Company share | Annual cap on company share | Transaction fee |
|---|---|---|---|
| SPLIT-70 | 30% | $20,000 | — |
| SPLIT-80 | 20% | $14,000 | — |
| FLAT-100 | — | — | $395 per transaction (never more than the agent gross) |

   **Cap.** The company share is limited so that the company dollar collected from an agent within one cap
   year never exceeds the cap; once capped, the agent keeps 100% until the cap year ends. The cap year starts
   on the **anniversary of the agent's hire date** (the most recent one on or before the payout date) — not
   on January 1. Company dollar already paid in the current cap year is in the payout ledger
   (kind `company`, by agent); amounts paid earlier in the same batch count too, so process the batch in
   close-date order (then transaction id). Transaction fees do not count toward any cap.
5. **Team override.** A team member (not the lead) gives their team lead the team's override percentage
   (`compensation/team_agreements.json`) of what remains of their agent gross after the company share or
   fee. The lead's own transactions carry no override.

## Settlement lines
Post one settlement per transaction with these payees:
`agent:<agent_id>` (agent's final amount), `company:<agent_id>` (company share from that agent, if any),
`fee:<agent_id>` (flat-plan transaction fee), `lead:<lead_agent_id>` (team override, one line per member) and
`referral:<broker name exactly as in the letter>`. Lines must add up to the GCI.
"""

BATCH_MEMO = """# Payout batch — March 2025 run

Finance · prepared 2025-03-01 · payout date **2025-03-03**

This run settles every transaction that **closed in February 2025** (close dates 2025-02-01 to 2025-02-28),
has status `closed` and is **not yet settled**. Pending and fell-through transactions are never settled.

Exception: **{held}** ({held_addr}) is on compliance hold (missing signed disclosure) — do **not** settle it
in this run.

After posting, report the total retained by the company in this run: the sum of all `company:` and `fee:`
lines.
"""

COMP_NOISE = [
    ("compensation/commission_plans_2023.md", "# Agent commission plans — 2023 (ARCHIVED)\n\nIn 2023 the cap year "
     "followed the calendar year and SPLIT-70 was capped at $18,000. Superseded.\n"),
    ("compensation/mentorship_program.md", "# Mentorship program\n\nNew agents in their first 3 transactions "
     "pay 50% company share to the mentoring pool. No current agents are enrolled.\n"),
    ("compensation/bonus_pool_2024.md", "# 2024 bonus pool\n\nThe office bonus pool was paid in January 2025 "
     "outside the payout ledger.\n"),
    ("compensation/eo_insurance.md", "# E&O insurance\n\nE&O premiums are invoiced annually and are not deducted "
     "from settlements.\n"),
    ("compensation/revenue_share.md", "# Revenue share (proposal)\n\nDraft proposal for 2026; not in force.\n"),
    ("compensation/desk_fees.csv", "office_id,monthly_desk_fee\nOF-BLD,150\nOF-DEN,175\nOF-FTC,125\nOF-GLD,125\n"),
    ("compensation/team_agreements_2024.json", json.dumps({"note": "SUPERSEDED", "teams": {
        "T-01": {"lead_agent_id": "(see 2025 file)", "override_pct": 12.0}}}, indent=2) + "\n"),
    ("compensation/referral_fee_guidelines.md", "# Referral fee guidelines\n\nInbound referral fees we receive "
     "are booked by Finance directly; only outbound referral letters affect settlements.\n"),
]

MEMO_NOISE = [
    ("memos/2025-02_payout_batch.md", "# Payout batch — February 2025 run (COMPLETED)\n\nSettled January 2025 "
     "closings on 2025-02-03.\n"),
    ("memos/2025-01_payout_batch.md", "# Payout batch — January 2025 run (COMPLETED)\n\nSettled December 2024 "
     "closings on 2025-01-03.\n"),
    ("memos/2025-02-20_early_settlement.md", "# Early settlement\n\nOne February closing was settled early on "
     "2025-02-20 at the agent's request (already marked settled).\n"),
    ("memos/2025-02-10_office_move.md", "# Office move\n\nThe Golden office moves to 1020 Washington Ave on "
     "March 15.\n"),
    ("memos/2025-01-28_mls_fees.md", "# MLS fees\n\nREcolorado fees are billed to agents quarterly, outside "
     "settlements.\n"),
    ("memos/2024-12-30_year_end.md", "# Year-end\n\n1099s will be issued from the payout ledger by Jan 31.\n"),
    ("memos/2025-02-03_nar_settlement.md", "# Buyer agreements\n\nBuyer-side commission rates are now set in "
     "written buyer agreements; the rate on each transaction record is authoritative.\n"),
    ("memos/2025-02-14_compliance_checklist.md", "# Compliance checklist\n\nFiles missing signed disclosures "
     "are put on compliance hold by the batch memo of the month.\n"),
    ("memos/2024-11-12_holiday_party.md", "# Holiday party\n\nDecember 13 at the Boulder office.\n"),
]

OPS_NOISE = [
    ("operations/offices.md", "# Offices\n\n| id | name |\n|---|---|\n" + "".join(
        f"| {o[0]} | {o[1]} |\n" for o in OFFICES)),
    ("operations/transaction_coordinators.md", "# Transaction coordinators\n\nBoulder: Kim Aldana. Denver: Raf "
     "Ortega. Fort Collins/Golden: shared desk.\n"),
    ("operations/escrow_partners.csv", "title_company,contact\nLand Title Guarantee,closings@ltgc.example\n"
     "Heritage Title,escrow@heritage.example\nFidelity National,denver@fnf.example\n"),
    ("operations/marketing_budget.md", "# Marketing budget\n\nListing photography reimbursed up to $350 per "
     "listing, paid through expenses, not settlements.\n"),
    ("operations/lockbox_policy.md", "# Lockbox policy\n\nSentriLock only; return boxes within 7 days of "
     "closing.\n"),
    ("operations/open_house_rules.md", "# Open houses\n\nSign in every visitor; no food in vacant homes.\n"),
    ("operations/agent_onboarding.md", "# Onboarding\n\nNew agents choose a plan at hire; plan changes take "
     "effect on the next cap year.\n"),
]


def _write(ws: Path, rel: str, text: str) -> None:
    p = ws / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")


def _letter(rng: random.Random, n: int, t: dict, broker: str, pct: float, valid: str) -> str:
    client = f"{rng.choice(FIRST)} and {rng.choice(FIRST)} {rng.choice(LAST)}"
    agent = t["parts"][0][0]
    return f"""REFERRAL AGREEMENT  —  REF-{2024 + (n % 2)}-{n:03d}

Referring broker: {broker}
Receiving brokerage: Cedar & Vale Realty, {agent['office']}
Receiving agent: {agent['name']} ({agent['agent_id']})
Client(s): {client}
Property: {t['address']}, {t['city']}, CO

The receiving brokerage agrees to pay the referring broker a referral fee of {pct:g}% of the gross
commission earned on the referred side of the transaction for the property above, payable at
settlement.

This agreement is valid through {valid}. Transactions closing after that date are not covered.

Signed {rng.choice(['2024-09-12', '2024-10-03', '2024-11-20', '2025-01-07'])} by both brokers.
"""


def _files(ws: Path, scale: Scale, rng: random.Random, letters, held, g) -> None:
    _write(ws, "compensation/commission_plans.md", PLANS_MD)
    teams = {"effective": "2025-01-01", "teams": {}}
    for tid, (name, pct) in TEAMS.items():
        lead = next(a for a in g.agents if a["team"] == tid and a["agent_id"] == a["team_lead"])
        teams["teams"][tid] = {"name": name, "lead_agent_id": lead["agent_id"], "override_pct": pct,
                               "applies_to": "members' agent gross after company share or fee"}
    _write(ws, "compensation/team_agreements.json", json.dumps(teams, indent=2) + "\n")
    for rel, text in COMP_NOISE[: scale.n_files(3) - 2]:
        _write(ws, rel, text)
    _write(ws, "memos/2025-03_payout_batch.md",
           BATCH_MEMO.format(held=held["txn_id"], held_addr=f"{held['address']}, {held['city']}"))
    for rel, text in MEMO_NOISE[: scale.n_files(3) - 1]:
        _write(ws, rel, text)
    for rel, text in OPS_NOISE[: scale.n_files(2)]:
        _write(ws, rel, text)
    order = list(range(len(letters)))
    rng.shuffle(order)
    for n, i in enumerate(order, 1):
        t, broker, pct, valid = letters[i]
        _write(ws, f"referrals/REF-{n:03d}_{t['address'].split(' ')[1].lower()}.txt",
               _letter(rng, n, t, broker, pct, valid))
