"""Tools for the AR late-fee run: customers, invoices, payments, credit notes, disputes, fees, dunning."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool

LINES_PER_READ = 200
RUN_DATE = "2024-10-31"
PERIOD = "2024-10"
INV_STATUS = ("open", "paid", "void")
SEGMENTS = ("enterprise", "mid_market", "smb", "government", "nonprofit")


def _choice(value: str | None, allowed: tuple, name: str) -> str | None:
    if value is None:
        return None
    v = value.strip().lower()
    if v not in allowed:
        raise ToolError(f"unknown {name} {value!r}; expected one of: {', '.join(allowed)}")
    return v


@tool
def list_files(env: Env, directory: str = "", page_no: int = 1) -> dict:
    """List workspace files under `directory` ('' = whole workspace), recursively, 25 per page.
    Returns {"items": [{"path", "bytes"}], "page", "page_size", "total", "next_page"}."""
    return page(env.list_files(directory), page_no, 25)


@tool
def read_file(env: Env, path: str, start_line: int = 1) -> dict:
    """Read a workspace text file, up to 200 lines from `start_line` (1-based).
    Returns {"path", "start_line", "total_lines", "next_start_line" (None at the end), "content"}."""
    if start_line < 1:
        raise ToolError("start_line must be >= 1")
    lines = env.read_text(path).splitlines()
    chunk = lines[start_line - 1: start_line - 1 + LINES_PER_READ]
    nxt = start_line + LINES_PER_READ if start_line - 1 + LINES_PER_READ < len(lines) else None
    return {"path": path, "start_line": start_line, "total_lines": len(lines), "next_start_line": nxt,
            "content": "\n".join(chunk)}


@tool
def list_customers(env: Env, segment: str | None = None, page_no: int = 1) -> dict:
    """List customers ordered by customer_id, 50 per page, optionally for one segment ('enterprise',
    'mid_market', 'smb', 'government', 'nonprofit'). dunning_level is the level set in the previous run.
    Returns {"items": [{"customer_id", "name", "segment", "terms_code", "country", "account_manager",
    "credit_limit", "dunning_level"}], ...paging}."""
    seg = _choice(segment, SEGMENTS, "segment")
    return env.query_page(
        "select * from customers where (? is null or segment = ?) order by customer_id",
        (seg, seg), page_no, 50)


@tool
def list_invoices(env: Env, status: str | None = None, customer_id: str | None = None, page_no: int = 1) -> dict:
    """List customer invoices (USD) ordered by invoice_id, 50 per page, optionally by ledger status ('open',
    'paid', 'void') and/or customer. amount is the original invoice amount (before payments and credits).
    Returns {"items": [{"invoice_id", "customer_id", "issued_on", "amount", "currency", "status",
    "po_reference", "description"}], ...paging}."""
    st = _choice(status, INV_STATUS, "status")
    return env.query_page(
        "select * from invoices where (? is null or status = ?) and (? is null or customer_id = ?) "
        "order by invoice_id",
        (st, st, customer_id, customer_id), page_no, 50)


@tool
def list_payments(env: Env, customer_id: str | None = None, invoice_id: str | None = None,
                  received_from: str | None = None, page_no: int = 1) -> dict:
    """List customer payments ordered by payment_id, 50 per page, optionally for one customer, one invoice,
    and/or received on or after `received_from` (YYYY-MM-DD). Each payment is applied to one invoice.
    Returns {"items": [{"payment_id", "customer_id", "invoice_id", "received_on", "amount", "method",
    "bank_reference"}], ...paging}."""
    return env.query_page(
        "select * from payments where (? is null or customer_id = ?) and (? is null or invoice_id = ?) "
        "and (? is null or received_on >= ?) order by payment_id",
        (customer_id, customer_id, invoice_id, invoice_id, received_from, received_from), page_no, 50)


@tool
def list_credit_notes(env: Env, invoice_id: str | None = None, page_no: int = 1) -> dict:
    """List credit notes, 50 per page, optionally for one invoice. Returns {"items": [{"credit_note_id",
    "invoice_id", "issued_on", "amount", "reason"}], ...paging}."""
    return env.query_page(
        "select * from credit_notes where (? is null or invoice_id = ?) order by credit_note_id",
        (invoice_id, invoice_id), page_no, 50)


@tool
def list_disputes(env: Env, status: str | None = None, page_no: int = 1) -> dict:
    """List invoice disputes, 50 per page, optionally by status ('open', 'resolved').
    Returns {"items": [{"dispute_id", "invoice_id", "opened_on", "status", "category", "note"}], ...paging}."""
    st = _choice(status, ("open", "resolved"), "status")
    return env.query_page(
        "select * from disputes where (? is null or status = ?) order by dispute_id",
        (st, st), page_no, 50)


@tool
def list_late_fees(env: Env, period: str | None = None, page_no: int = 1) -> dict:
    """List late fees already posted, 50 per page, optionally for one period ('YYYY-MM').
    Returns {"items": [{"fee_id", "invoice_id", "customer_id", "period", "assessed_on", "amount", "status"}],
    ...paging}."""
    return env.query_page(
        "select * from late_fees where (? is null or period = ?) order by fee_id",
        (period, period), page_no, 50)


@tool
def post_late_fee(env: Env, invoice_id: str, amount: float) -> dict:
    """Post a late fee of `amount` USD (2 decimals) on an invoice for the current period (2024-10), dated the
    run date. Fails if that invoice already has a fee for the period. Returns {"fee_id", "invoice_id",
    "customer_id", "period", "amount"}."""
    rows = env.query("select * from invoices where invoice_id = ?", ((invoice_id or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown invoice_id {invoice_id!r} (ids look like 'INV-881234'); use list_invoices")
    inv = rows[0]
    try:
        amt = float(amount)
    except (TypeError, ValueError):
        raise ToolError(f"amount must be a number, got {amount!r}") from None
    if amt <= 0 or abs(round(amt, 2) - amt) > 1e-9:
        raise ToolError("amount must be positive with at most 2 decimals")
    if env.query("select 1 from late_fees where invoice_id = ? and period = ?", (inv["invoice_id"], PERIOD)):
        raise ToolError(f"invoice {inv['invoice_id']} already has a late fee for period {PERIOD}")
    cur = env.db.execute("insert into late_fees (invoice_id, customer_id, period, assessed_on, amount, status) "
                         "values (?, ?, ?, ?, ?, 'posted')",
                         (inv["invoice_id"], inv["customer_id"], PERIOD, RUN_DATE, round(amt, 2)))
    return {"fee_id": cur.lastrowid, "invoice_id": inv["invoice_id"], "customer_id": inv["customer_id"],
            "period": PERIOD, "amount": round(amt, 2)}


@tool
def set_dunning_level(env: Env, customer_id: str, level: int) -> dict:
    """Set a customer's dunning level (0, 1, 2 or 3). Returns {"customer_id", "old_level", "new_level"}."""
    rows = env.query("select customer_id, dunning_level from customers where customer_id = ?",
                     ((customer_id or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown customer_id {customer_id!r} (ids look like 'C-20123'); use list_customers")
    if isinstance(level, float) and level.is_integer():
        level = int(level)
    if not isinstance(level, int) or isinstance(level, bool) or level not in (0, 1, 2, 3):
        raise ToolError("level must be 0, 1, 2 or 3")
    env.db.execute("update customers set dunning_level = ? where customer_id = ?", (level, rows[0]["customer_id"]))
    return {"customer_id": rows[0]["customer_id"], "old_level": rows[0]["dunning_level"], "new_level": level}
