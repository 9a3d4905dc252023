"""Tools for the AP three-way match: vendors, invoices, invoice lines, PO lines, receipts, decisions."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

LINES_PER_READ = 200
RUN_DATE = "2024-10-31"
INV_STATUS = ("received", "approved", "paid", "on_hold", "rejected")
VENDOR_STATUS = ("active", "blocked")


def _choice(value: str | None, allowed: tuple, name: str) -> str | None:
    if value is None:
        return None
    v = value.strip().lower()
    if v not in allowed:
        raise ToolError(f"unknown {name} {value!r}; expected one of: {', '.join(allowed)}")
    return v


def _decidable(env: Env, invoice_id: str) -> dict:
    rows = env.query("select * from invoices where invoice_id = ?", ((invoice_id or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown invoice_id {invoice_id!r} (ids look like 'AP-512345'); use list_invoices")
    inv = rows[0]
    if inv["status"] != "received" and inv["decided_on"] != RUN_DATE:
        raise ToolError(f"invoice {inv['invoice_id']} is {inv['status']} (decided {inv['decided_on']}); only "
                        "invoices in the AP queue (status 'received') or decided in this run can be decided")
    return inv


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
def list_vendors(env: Env, status: str | None = None, page_no: int = 1) -> dict:
    """List vendors from the vendor master, 25 per page, optionally by status ('active', 'blocked').
    Returns {"items": [{"vendor_id", "name", "country", "currency", "status", "payment_terms",
    "remit_email"}], ...paging}."""
    st = _choice(status, VENDOR_STATUS, "status")
    return page(env.query("select * from vendors where (? is null or status = ?) order by vendor_id", (st, st)),
                page_no, 25)


@tool
def list_invoices(env: Env, status: str | None = None, vendor_id: str | None = None, page_no: int = 1) -> dict:
    """List vendor invoice headers ordered by invoice_id, 50 per page, optionally by status ('received' = in
    the AP queue, 'approved', 'paid', 'on_hold', 'rejected') and/or vendor_id. total_amount is in the
    invoice currency. Returns {"items": [{"invoice_id", "vendor_id", "vendor_invoice_no", "po_id",
    "invoice_date", "received_on", "currency", "total_amount", "status", "hold_reason", "decided_on",
    "notes"}], ...paging}."""
    st = _choice(status, INV_STATUS, "status")
    return env.query_page(
        "select * from invoices where (? is null or status = ?) and (? is null or vendor_id = ?) "
        "order by invoice_id",
        (st, st, vendor_id, vendor_id), page_no, 50)


@tool
def list_invoice_lines(env: Env, invoice_id: str | None = None, po_id: str | None = None,
                       invoice_status: str | None = None, page_no: int = 1) -> dict:
    """List invoice lines, 50 per page, optionally for one invoice, one PO, and/or invoices in one status.
    po_line_no refers to the PO line being billed. Returns {"items": [{"invoice_id", "line_no", "po_id",
    "po_line_no", "qty", "unit_price", "amount", "invoice_status"}], ...paging}."""
    st = _choice(invoice_status, INV_STATUS, "invoice_status")
    return env.query_page(
        "select l.invoice_id, l.line_no, i.po_id, l.po_line_no, l.qty, l.unit_price, l.amount, "
        "i.status as invoice_status from invoice_lines l join invoices i on i.invoice_id = l.invoice_id "
        "where (? is null or l.invoice_id = ?) and (? is null or i.po_id = ?) and (? is null or i.status = ?) "
        "order by l.invoice_id, l.line_no",
        (invoice_id, invoice_id, po_id, po_id, st, st), page_no, 50)


@tool
def list_po_lines(env: Env, po_id: str | None = None, page_no: int = 1) -> dict:
    """List purchase-order lines with their PO header fields, 50 per page, optionally for one PO.
    Returns {"items": [{"po_id", "line_no", "vendor_id", "item_code", "description", "uom",
    "qty_ordered", "unit_price", "currency", "po_status"}], ...paging}."""
    return env.query_page(
        "select l.po_id, l.line_no, p.vendor_id, l.item_code, l.description, l.uom, l.qty_ordered, "
        "l.unit_price, p.currency, p.status as po_status from po_lines l join purchase_orders p "
        "on p.po_id = l.po_id where (? is null or l.po_id = ?) order by l.po_id, l.line_no",
        (po_id, po_id), page_no, 50)


@tool
def list_receipts(env: Env, po_id: str | None = None, page_no: int = 1) -> dict:
    """List goods receipts (one row per receipt of one PO line), 50 per page, optionally for one PO.
    Returns {"items": [{"receipt_id", "po_id", "line_no", "qty_received", "received_on", "warehouse",
    "received_by"}], ...paging}."""
    return env.query_page(
        "select * from receipts where (? is null or po_id = ?) order by receipt_id",
        (po_id, po_id), page_no, 50)


@tool
def approve_invoice(env: Env, invoice_id: str) -> dict:
    """Approve an invoice from the AP queue for payment in this run (status 'approved').
    Returns {"invoice_id", "status", "total_amount", "currency"}."""
    inv = _decidable(env, invoice_id)
    env.db.execute("update invoices set status = 'approved', hold_reason = null, decided_on = ? "
                   "where invoice_id = ?", (RUN_DATE, inv["invoice_id"]))
    return {"invoice_id": inv["invoice_id"], "status": "approved", "total_amount": inv["total_amount"],
            "currency": inv["currency"]}


@tool
def hold_invoice(env: Env, invoice_id: str, reason_code: str) -> dict:
    """Put an invoice from the AP queue on hold (status 'on_hold') with a hold reason code as defined by
    AP policy (an upper-case code such as the ones in the matching policy). Returns {"invoice_id",
    "status", "hold_reason"}."""
    inv = _decidable(env, invoice_id)
    code = (reason_code or "").strip().upper()
    if not re.fullmatch(r"[A-Z][A-Z_]{2,40}", code):
        raise ToolError("reason_code must be an upper-case code like those in the AP matching policy")
    env.db.execute("update invoices set status = 'on_hold', hold_reason = ?, decided_on = ? where invoice_id = ?",
                   (code, RUN_DATE, inv["invoice_id"]))
    return {"invoice_id": inv["invoice_id"], "status": "on_hold", "hold_reason": code}
