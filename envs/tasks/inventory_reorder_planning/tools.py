"""Tools for the Leeds replenishment task: supplier/product/stock/PO reads, workspace files, PO writes."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool

PRODUCT_STATUSES = ("active", "discontinued", "seasonal")
PO_STATUSES = ("draft", "sent", "confirmed", "received", "cancelled")


def _warehouse(env: Env, code: str) -> str:
    code = (code or "").strip().upper()
    if not env.query("select 1 from warehouses where code = ?", (code,)):
        known = ", ".join(r["code"] for r in env.query("select code from warehouses order by code"))
        raise ToolError(f"unknown warehouse_code {code!r}; known warehouses: {known}")
    return code


@tool
def list_suppliers(env: Env, page_no: int = 1) -> dict:
    """List suppliers, 25 per page, ordered by code.
    Returns {"items": [{"code", "name", "country", "contact_email", "payment_terms", "account_manager"}],
    "page", "page_size", "total", "next_page"} (next_page is null on the last page)."""
    return env.query_page(
        "select code, name, country, contact_email, payment_terms, account_manager"
        " from suppliers order by code",
        (), page_no, 25)


@tool
def list_products(env: Env, supplier_code: str | None = None, category: str | None = None,
                  status: str | None = None, page_no: int = 1) -> dict:
    """List products from the product master, 50 per page, ordered by SKU. Optional filters:
    supplier_code (e.g. 'SUP-101'), category (e.g. 'Fasteners'), status ('active', 'discontinued', 'seasonal').
    Returns {"items": [{"sku", "name", "category", "supplier_code", "unit_cost", "pack_size", "abc_class",
    "status", "notes"}], "page", "page_size", "total", "next_page"}. unit_cost is in GBP."""
    if status is not None and status not in PRODUCT_STATUSES:
        raise ToolError(f"bad status {status!r}; use one of {', '.join(PRODUCT_STATUSES)} or omit it")
    return env.query_page(
        "select sku, name, category, supplier_code, unit_cost, pack_size, abc_class, status, notes from products"
        " where (:s is null or supplier_code = :s) and (:c is null or category = :c) and (:t is null or status = :t)"
        " order by sku",
        {"s": supplier_code, "c": category, "t": status}, page_no, 50)


@tool
def list_stock_levels(env: Env, warehouse_code: str, page_no: int = 1) -> dict:
    """List the stock records of one warehouse (e.g. 'LDS'), 50 per page, ordered by SKU.
    Returns {"items": [{"sku", "on_hand", "allocated", "avg_weekly_demand", "last_counted"}], "page",
    "page_size", "total", "next_page"}. allocated = units already promised to customer orders."""
    code = _warehouse(env, warehouse_code)
    return env.query_page(
        "select sku, on_hand, allocated, avg_weekly_demand, last_counted from stock_levels"
        " where warehouse_code = ? order by sku",
        (code,), page_no, 50)


@tool
def list_purchase_orders(env: Env, warehouse_code: str | None = None, status: str | None = None,
                         page_no: int = 1) -> dict:
    """List purchase-order headers, 25 per page, newest first. Optional filters: warehouse_code, status
    ('draft', 'sent', 'confirmed', 'received', 'cancelled'). Lines are not included: use get_purchase_order.
    Returns {"items": [{"po_number", "supplier_code", "warehouse_code", "status", "created_on", "expected_on",
    "line_count"}], "page", "page_size", "total", "next_page"}."""
    if status is not None and status not in PO_STATUSES:
        raise ToolError(f"bad status {status!r}; use one of {', '.join(PO_STATUSES)} or omit it")
    code = _warehouse(env, warehouse_code) if warehouse_code else None
    return env.query_page(
        "select po_number, supplier_code, warehouse_code, status, created_on, expected_on,"
        " (select count(*) from po_lines l where l.po_id = p.id) as line_count from purchase_orders p"
        " where (:w is null or warehouse_code = :w) and (:s is null or status = :s)"
        " order by created_on desc, id desc",
        {"w": code, "s": status}, page_no, 25)


@tool
def get_purchase_order(env: Env, po_number: str) -> dict:
    """Get one purchase order with its lines.
    Returns {"po_number", "supplier_code", "warehouse_code", "status", "created_on", "expected_on", "notes",
    "lines": [{"sku", "qty", "unit_cost"}]}."""
    rows = env.query("select * from purchase_orders where po_number = ?", ((po_number or "").strip(),))
    if not rows:
        raise ToolError(f"unknown po_number {po_number!r}; use list_purchase_orders to find PO numbers")
    po = rows[0]
    lines = env.query("select sku, qty, unit_cost from po_lines where po_id = ? order by id", (po["id"],))
    return {k: po[k] for k in ("po_number", "supplier_code", "warehouse_code", "status", "created_on",
                               "expected_on", "notes")} | {"lines": lines}


@tool
def list_stock_movements(env: Env, sku: str, warehouse_code: str | None = None, page_no: int = 1) -> dict:
    """List the movement history (receipts, dispatches, transfers, adjustments) of one SKU, 25 per page,
    newest first, optionally for one warehouse. Returns {"items": [{"moved_on", "warehouse_code", "kind", "qty",
    "reference"}], "page", "page_size", "total", "next_page"} (dispatches and transfers out are negative)."""
    if not env.query("select 1 from products where sku = ?", (sku,)):
        raise ToolError(f"unknown sku {sku!r}; use list_products to find SKUs")
    code = _warehouse(env, warehouse_code) if warehouse_code else None
    return env.query_page(
        "select moved_on, warehouse_code, kind, qty, reference from stock_movements"
        " where sku = :k and (:w is null or warehouse_code = :w) order by moved_on desc, id desc",
        {"k": sku, "w": code}, page_no, 25)


@tool
def list_files(env: Env, directory: str = "", page_no: int = 1) -> dict:
    """List workspace files (recursively) under `directory` ('' = the whole workspace), 20 per page, sorted by path.
    Returns {"items": [{"path", "bytes"}], "page", "page_size", "total", "next_page"}."""
    return page(env.list_files(directory), page_no, 20)


@tool
def read_file(env: Env, path: str) -> dict:
    """Read one workspace text file (policy, memo, CSV, JSON...). Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}


@tool
def create_purchase_order(env: Env, supplier_code: str, warehouse_code: str, lines: list[dict]) -> dict:
    """Raise a new DRAFT purchase order with one supplier for one warehouse.
    `lines` is a list of {"sku": str, "qty": int, "unit_cost": float} (unit_cost in GBP per unit; every SKU must
    belong to that supplier; each SKU at most once). Returns {"po_number", "supplier_code", "warehouse_code",
    "status": "draft", "line_count", "total_value"}."""
    sup = (supplier_code or "").strip().upper()
    if not env.query("select 1 from suppliers where code = ?", (sup,)):
        raise ToolError(f"unknown supplier_code {supplier_code!r}; use list_suppliers")
    wh = _warehouse(env, warehouse_code)
    if not isinstance(lines, list) or not lines:
        raise ToolError("lines must be a non-empty list of {sku, qty, unit_cost}")
    seen, clean = set(), []
    for i, line in enumerate(lines):
        if not isinstance(line, dict) or set(line) - {"sku", "qty", "unit_cost"} or "sku" not in line \
                or "qty" not in line or "unit_cost" not in line:
            raise ToolError(f"lines[{i}] must be an object with exactly the keys sku, qty, unit_cost")
        sku = str(line["sku"]).strip()
        prod = env.query("select supplier_code from products where sku = ?", (sku,))
        if not prod:
            raise ToolError(f"lines[{i}]: unknown sku {sku!r}")
        if prod[0]["supplier_code"] != sup:
            raise ToolError(f"lines[{i}]: sku {sku} is supplied by {prod[0]['supplier_code']}, not {sup}")
        if sku in seen:
            raise ToolError(f"lines[{i}]: sku {sku} appears twice; combine the quantities into one line")
        seen.add(sku)
        qty, cost = line["qty"], line["unit_cost"]
        if isinstance(qty, bool) or not isinstance(qty, int) or qty <= 0:
            raise ToolError(f"lines[{i}]: qty must be a positive integer, got {qty!r}")
        if isinstance(cost, bool) or not isinstance(cost, int | float) or cost <= 0:
            raise ToolError(f"lines[{i}]: unit_cost must be a positive number, got {cost!r}")
        clean.append((sku, qty, round(float(cost), 2)))
    po_id = env.db.execute("select coalesce(max(id), 0) + 1 from purchase_orders").fetchone()[0]
    po_number = f"PO-{wh}-{24000 + po_id * 7}"
    env.db.execute("insert into purchase_orders (id, po_number, supplier_code, warehouse_code, status, created_on,"
                   " expected_on, notes) values (?,?,?,?,?,?,?,?)",
                   (po_id, po_number, sup, wh, "draft", "2024-09-09", None, "Weekly replenishment run"))
    for sku, qty, cost in clean:
        env.db.execute("insert into po_lines (po_id, sku, qty, unit_cost) values (?,?,?,?)", (po_id, sku, qty, cost))
    total = round(sum(q * c for _, q, c in clean), 2)
    return {"po_number": po_number, "supplier_code": sup, "warehouse_code": wh, "status": "draft",
            "line_count": len(clean), "total_value": total}


@tool
def delete_draft_purchase_order(env: Env, po_number: str) -> dict:
    """Delete a DRAFT purchase order (and its lines), e.g. one raised by mistake. Orders in any other status
    cannot be deleted. Returns {"deleted": po_number}."""
    rows = env.query("select id, status from purchase_orders where po_number = ?", ((po_number or "").strip(),))
    if not rows:
        raise ToolError(f"unknown po_number {po_number!r}")
    if rows[0]["status"] != "draft":
        raise ToolError(f"{po_number} has status {rows[0]['status']!r}; only draft orders can be deleted")
    env.db.execute("delete from po_lines where po_id = ?", (rows[0]["id"],))
    env.db.execute("delete from purchase_orders where id = ?", (rows[0]["id"],))
    return {"deleted": po_number}
