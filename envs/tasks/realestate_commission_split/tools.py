"""Tools of the brokerage back office: files, agents, transactions, payout ledger, settlement posting."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
TXN_STATUSES = ("closed", "pending", "fell_through")
KINDS = {"agent": "agent", "company": "company", "fee": "fee", "lead": "team_lead", "referral": "referral"}
PAYOUT_KINDS = ("agent", "company", "fee", "team_lead", "referral")


def _date(value: str | None, name: str) -> None:
    if value is not None and not _DATE.match(value):
        raise ToolError(f"{name} {value!r} must look like YYYY-MM-DD")


@tool
def list_files(env: Env, directory: str = "", page_no: int = 1) -> dict:
    """List workspace files (recursively) under `directory` ("" = all), 20 per page.
    Returns {"items": [{"path", "bytes"}], "page", "page_size", "total", "next_page"}."""
    return page(env.list_files(directory), page_no, 20)


@tool
def read_file(env: Env, path: str) -> dict:
    """Read a workspace text file (path relative to the workspace, as listed by list_files).
    Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}


@tool
def list_agents(env: Env, office_id: str | None = None, team_id: str | None = None, page_no: int = 1) -> dict:
    """List agents ordered by agent_id, 50 per page. Optional filters: office_id (e.g. 'OF-BLD'), team_id
    (e.g. 'T-02'). Items: agent_id, full_name, office_id, plan_code ('SPLIT-70', 'SPLIT-80', 'FLAT-100'),
    hire_date, team_id (null if not on a team), license_no, status.
    Returns {"items", "page", "page_size", "total", "next_page"}."""
    return env.query_page(
        "select * from agents where (:o is null or office_id = :o) and (:t is null or team_id = :t)"
        " order by agent_id",
        {"o": office_id, "t": team_id}, page_no, 50)


@tool
def list_transactions(env: Env, close_from: str | None = None, close_to: str | None = None,
                      status: str | None = None, settled: bool | None = None, page_no: int = 1) -> dict:
    """List transactions ordered by close_date then txn_id, 50 per page. Optional filters: close_from /
    close_to (inclusive YYYY-MM-DD bounds on close_date), status ('closed', 'pending', 'fell_through'),
    settled (true/false). Items: txn_id, property_address, city, close_date, sale_price, commission_pct (percent
    of sale price), side ('listing' or 'buyer'), status, settled (0/1).
    Returns {"items", "page", "page_size", "total", "next_page"}."""
    _date(close_from, "close_from")
    _date(close_to, "close_to")
    if status is not None and status not in TXN_STATUSES:
        raise ToolError(f"status must be one of {', '.join(TXN_STATUSES)}")
    return env.query_page(
        "select * from transactions where (:a is null or close_date >= :a) and (:b is null or close_date <= :b)"
        " and (:s is null or status = :s) and (:st is null or settled = :st) order by close_date, txn_id",
        {"a": close_from, "b": close_to, "s": status, "st": None if settled is None else int(bool(settled))}, page_no, 50)


@tool
def list_transaction_agents(env: Env, txn_id: str | None = None, close_from: str | None = None,
                            close_to: str | None = None, page_no: int = 1) -> dict:
    """List which agents worked each transaction and their share of it, 50 per page, ordered by txn_id then
    agent_id. Optional filters: txn_id, close_from / close_to (inclusive bounds on the transaction's
    close_date). Items: txn_id, agent_id, share_pct. Returns {"items", "page", "page_size", "total", "next_page"}."""
    _date(close_from, "close_from")
    _date(close_to, "close_to")
    return env.query_page(
        "select ta.txn_id, ta.agent_id, ta.share_pct from transaction_agents ta join transactions t using(txn_id)"
        " where (:x is null or ta.txn_id = :x) and (:a is null or t.close_date >= :a)"
        " and (:b is null or t.close_date <= :b) order by ta.txn_id, ta.agent_id",
        {"x": txn_id, "a": close_from, "b": close_to}, page_no, 50)


@tool
def list_payouts(env: Env, agent_id: str | None = None, kind: str | None = None, paid_from: str | None = None,
                 paid_to: str | None = None, txn_id: str | None = None, page_no: int = 1) -> dict:
    """List the payout ledger ordered by payout_id, 50 per page. Optional filters: agent_id, kind ('agent',
    'company', 'fee', 'team_lead', 'referral'), paid_from / paid_to (inclusive bounds on paid_date), txn_id.
    Items: payout_id, txn_id, payee, kind, agent_id (the agent the line belongs to; null for referrals),
    amount, paid_date. Returns {"items", "page", "page_size", "total", "next_page"}."""
    _date(paid_from, "paid_from")
    _date(paid_to, "paid_to")
    if kind is not None and kind not in PAYOUT_KINDS:
        raise ToolError(f"kind must be one of {', '.join(PAYOUT_KINDS)}")
    return env.query_page(
        "select * from payouts where (:ag is null or agent_id = :ag) and (:k is null or kind = :k)"
        " and (:a is null or paid_date >= :a) and (:b is null or paid_date <= :b) and (:x is null or txn_id = :x)"
        " order by payout_id",
        {"ag": agent_id, "k": kind, "a": paid_from, "b": paid_to, "x": txn_id}, page_no, 50)


@tool
def post_settlement(env: Env, txn_id: str, lines: list[dict]) -> dict:
    """Post the settlement of one closed, unsettled transaction (payout date 2025-03-03) and mark it settled.
    lines: list of {"payee": str, "amount": float}; payee is 'agent:<agent_id>', 'company:<agent_id>',
    'fee:<agent_id>', 'lead:<agent_id>' or 'referral:<broker name>'. Amounts are USD (cents), must be > 0 and
    must add up to the transaction's gross commission (sale_price x commission_pct / 100, rounded to cents).
    Returns {"txn_id", "gross_commission", "lines_posted"}."""
    rows = env.query("select * from transactions where txn_id = ?", (txn_id,))
    if not rows:
        raise ToolError(f"transaction {txn_id!r} not found; ids look like 'TX-25-01234'")
    t = rows[0]
    if t["status"] != "closed":
        raise ToolError(f"{txn_id} has status {t['status']!r}; only closed transactions can be settled")
    if t["settled"]:
        raise ToolError(f"{txn_id} is already settled")
    if not lines:
        raise ToolError("lines must contain at least one {'payee', 'amount'} entry")
    gci = round(t["sale_price"] * t["commission_pct"] / 100, 2)
    parsed = []
    for ln in lines:
        if not isinstance(ln, dict) or "payee" not in ln or "amount" not in ln:
            raise ToolError("each line must be an object with 'payee' and 'amount'")
        payee = str(ln["payee"]).strip()
        prefix, _, ref = payee.partition(":")
        if prefix not in KINDS or not ref.strip():
            raise ToolError(f"payee {payee!r} must look like 'agent:A-1001', 'company:A-1001', 'fee:A-1001', "
                            "'lead:A-1001' or 'referral:<broker name>'")
        agent_id = None
        if prefix != "referral":
            agent_id = ref.strip()
            if not env.query("select 1 from agents where agent_id = ?", (agent_id,)):
                raise ToolError(f"unknown agent {agent_id!r} in payee {payee!r}")
        amount = round(float(ln["amount"]), 2)
        if amount <= 0:
            raise ToolError(f"amount for {payee!r} must be positive; leave zero lines out")
        parsed.append((f"{prefix}:{ref.strip()}", KINDS[prefix], agent_id, amount))
    total = round(sum(p[3] for p in parsed), 2)
    if abs(total - gci) > 0.005:
        raise ToolError(f"lines add up to {total:.2f} but the gross commission of {txn_id} is {gci:.2f}")
    for payee, kind, agent_id, amount in parsed:
        env.db.execute("insert into payouts(txn_id, payee, kind, agent_id, amount, paid_date)"
                       " values (?, ?, ?, ?, ?, '2025-03-03')", (txn_id, payee, kind, agent_id, amount))
    env.db.execute("update transactions set settled = 1 where txn_id = ?", (txn_id,))
    return {"txn_id": txn_id, "gross_commission": gci, "lines_posted": len(parsed)}
