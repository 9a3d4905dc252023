"""Tools of the freight invoice audit: workspace files (read and write), carriers, invoices, lines, shipments,
approve and dispute."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

INVOICE_STATUSES = ("received", "approved", "disputed", "paid")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@tool
def list_files(env: Env, directory: str = "", page_no: int = 1) -> dict:
    """List workspace files under `directory` ("" = whole workspace), recursively, 25 per page.
    Returns {"items": [{"path", "bytes"}], "page", "page_size", "total", "next_page"}."""
    return page(env.list_files(directory), page_no, 25)


@tool
def read_file(env: Env, path: str) -> dict:
    """Read one workspace file (text). `path` is relative to the workspace, as returned by list_files.
    Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}


@tool
def write_file(env: Env, path: str, content: str) -> dict:
    """Create or overwrite a text file in the workspace's `audit/` folder (e.g. 'audit/summary.csv').
    Returns {"path", "bytes"}."""
    if not path.startswith("audit/") or path.endswith("/"):
        raise ToolError("files can only be written under audit/, e.g. 'audit/dispute_summary_2025-10.csv'")
    return {"path": path, "bytes": env.write_text(path, content)}


@tool
def list_carriers(env: Env, page_no: int = 1) -> dict:
    """List the contracted carriers, 25 per page. Returns {"items": [{"carrier_id", "code", "name", "mode",
    "billing_email"}], "page", "page_size", "total", "next_page"}."""
    return page(env.query("select carrier_id, code, name, mode, billing_email from carriers order by carrier_id"),
                page_no, 25)


@tool
def list_invoices(env: Env, status: str | None = None, billing_period: str | None = None,
                  carrier_id: int | None = None, page_no: int = 1) -> dict:
    """List carrier invoices, 25 per page, ordered by invoice_id, optionally filtered by status ('received',
    'approved', 'disputed', 'paid'), billing_period ('YYYY-MM') and carrier_id. Returns {"items": [{"invoice_id",
    "carrier_id", "invoice_no", "invoice_date", "billing_period", "status", "amount_total"}], "page", "page_size",
    "total", "next_page"}."""
    if status is not None and status not in INVOICE_STATUSES:
        raise ToolError(f"unknown status {status!r}; expected one of {', '.join(INVOICE_STATUSES)}")
    return env.query_page(
        "select invoice_id, carrier_id, invoice_no, invoice_date, billing_period, status, amount_total"
        " from invoices where (:s is null or status = :s) and (:p is null or billing_period = :p)"
        " and (:c is null or carrier_id = :c) order by invoice_id",
        {"s": status, "p": billing_period, "c": carrier_id}, page_no, 25)


@tool
def list_invoice_lines(env: Env, invoice_id: int | None = None, page_no: int = 1) -> dict:
    """List invoice lines, 50 per page, ordered by line_id, for one invoice or (invoice_id omitted) for all
    invoices. charge_type is 'linehaul', 'fuel', 'liftgate', 'residential', 'inside_delivery' or 'detention'
    (quantity = hours for detention). Returns {"items": [{"line_id", "invoice_id", "shipment_id", "charge_type",
    "quantity", "amount"}], "page", "page_size", "total", "next_page"}."""
    if invoice_id is not None and not env.query("select 1 from invoices where invoice_id = ?", (invoice_id,)):
        raise ToolError(f"no invoice with invoice_id {invoice_id}")
    return env.query_page(
        "select line_id, invoice_id, shipment_id, charge_type, quantity, amount from invoice_lines"
        " where (? is null or invoice_id = ?) order by line_id",
        (invoice_id, invoice_id), page_no, 50)


@tool
def list_shipments(env: Env, ship_date_from: str | None = None, ship_date_to: str | None = None,
                   carrier_id: int | None = None, page_no: int = 1) -> dict:
    """List shipment records, 50 per page, ordered by shipment_id, optionally filtered by ship-date range
    (YYYY-MM-DD, inclusive) and carrier_id. Returns {"items": [{"shipment_id", "pro_number", "carrier_id",
    "ship_date", "dest_city", "dest_state", "actual_weight_kg", "length_cm", "width_cm", "height_cm", "pieces",
    "residential", "liftgate_requested", "inside_delivery", "detention_approved_hours", "po_reference"}], "page",
    "page_size", "total", "next_page"}."""
    for name, value in (("ship_date_from", ship_date_from), ("ship_date_to", ship_date_to)):
        if value is not None and not DATE.match(value):
            raise ToolError(f"{name} must be a date YYYY-MM-DD, got {value!r}")
    return env.query_page(
        "select shipment_id, pro_number, carrier_id, ship_date, dest_city, dest_state, actual_weight_kg,"
        " length_cm, width_cm, height_cm, pieces, residential, liftgate_requested, inside_delivery,"
        " detention_approved_hours, po_reference from shipments where (:a is null or ship_date >= :a)"
        " and (:b is null or ship_date <= :b) and (:c is null or carrier_id = :c) order by shipment_id",
        {"a": ship_date_from, "b": ship_date_to, "c": carrier_id}, page_no, 50)


def _received(env: Env, invoice_id: int) -> dict:
    r = env.query("select * from invoices where invoice_id = ?", (invoice_id,))
    if not r:
        raise ToolError(f"no invoice with invoice_id {invoice_id}")
    if r[0]["status"] != "received":
        raise ToolError(f"invoice {invoice_id} has status {r[0]['status']!r}; only 'received' invoices can be audited")
    return r[0]


@tool
def approve_invoice(env: Env, invoice_id: int) -> dict:
    """Approve a 'received' invoice for payment in full. Returns the updated invoice."""
    _received(env, invoice_id)
    env.db.execute("update invoices set status = 'approved' where invoice_id = ?", (invoice_id,))
    return env.query("select * from invoices where invoice_id = ?", (invoice_id,))[0]


@tool
def dispute_invoice(env: Env, invoice_id: int, disputed_amount: float, line_ids: list[int], note: str = "") -> dict:
    """Dispute a 'received' invoice: disputed_amount is the total overcharge in dollars, line_ids the invoice lines
    disputed. The invoice's status becomes 'disputed' and a dispute record is created. Returns the dispute."""
    _received(env, invoice_id)
    amount = round(float(disputed_amount), 2)
    if amount <= 0:
        raise ToolError("disputed_amount must be positive; approve the invoice instead if nothing is disputed")
    if not line_ids:
        raise ToolError("line_ids must list the disputed lines")
    ids = sorted({int(i) for i in line_ids})
    own = {r["line_id"] for r in env.query("select line_id from invoice_lines where invoice_id = ?", (invoice_id,))}
    bad = [i for i in ids if i not in own]
    if bad:
        raise ToolError(f"lines {bad} are not lines of invoice {invoice_id}")
    env.db.execute("update invoices set status = 'disputed' where invoice_id = ?", (invoice_id,))
    cur = env.db.execute("insert into invoice_disputes (invoice_id, disputed_amount, line_ids, note, created_on)"
                         " values (?,?,?,?, '2025-11-05')", (invoice_id, amount, ",".join(map(str, ids)), note))
    return env.query("select * from invoice_disputes where dispute_id = ?", (cur.lastrowid,))[0]
