"""Tools for the clearance markdown run: products, brands, sales, stock, price history, repricing."""

from __future__ import annotations

from datetime import date

from envs.taskkit import Env, ToolError, page, tool

LINES_PER_READ = 200
RUN_DATE = "2025-01-06"


def _monday(value: str, name: str) -> str:
    try:
        d = date.fromisoformat(value)
    except (TypeError, ValueError):
        raise ToolError(f"{name} must be a date written YYYY-MM-DD, got {value!r}") from None
    if d.weekday() != 0:
        raise ToolError(f"{name} must be a week start (a Monday); {value} is a {d.strftime('%A')}")
    return d.isoformat()


def _season(env: Env, season: str | None) -> str | None:
    if season is None:
        return None
    known = [r["season"] for r in env.query("select distinct season from products order by season")]
    s = season.strip().upper()
    if s not in known:
        raise ToolError(f"unknown season {season!r}; seasons in the range: {', '.join(known)}")
    return s


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
def list_brands(env: Env, page_no: int = 1) -> dict:
    """List brands, 25 per page. Returns {"items": [{"brand_id", "name", "sourcing" ('own_label' or
    'wholesale'), "country"}], ...paging}."""
    return page(env.query("select * from brands order by brand_id"), page_no, 25)


@tool
def list_products(env: Env, season: str | None = None, department: str | None = None, page_no: int = 1) -> dict:
    """List products ordered by sku, 50 per page, optionally filtered by season code (e.g. 'AW24', 'SS24',
    'CORE') and/or department ('Womenswear', 'Menswear', 'Kids', 'Accessories').
    Returns {"items": [{"sku", "style_name", "colour", "department", "category", "season", "brand_id",
    "launch_date", "original_price", "current_price"}], ...paging}."""
    season = _season(env, season)
    if department is not None:
        known = [r["department"] for r in env.query("select distinct department from products order by 1")]
        match = [d for d in known if d.lower() == department.strip().lower()]
        if not match:
            raise ToolError(f"unknown department {department!r}; expected one of: {', '.join(known)}")
        department = match[0]
    return env.query_page(
        "select sku, style_name, colour, department, category, season, brand_id, launch_date, original_price, "
        "current_price from products where (? is null or season = ?) and (? is null or department = ?) "
        "order by sku",
        (season, season, department, department), page_no, 50)


@tool
def list_units_sold(env: Env, week_from: str, week_to: str, season: str | None = None, page_no: int = 1) -> dict:
    """Units sold per SKU, summed over the trading weeks whose week start (a Monday, YYYY-MM-DD) lies
    between week_from and week_to inclusive; optionally only SKUs of one season. SKUs with no sales in
    the range are omitted. 50 per page, ordered by sku. Returns {"items": [{"sku", "units", "net_revenue",
    "weeks_with_sales"}], ...paging}."""
    w1, w2 = _monday(week_from, "week_from"), _monday(week_to, "week_to")
    if w1 > w2:
        raise ToolError("week_from must not be after week_to")
    season = _season(env, season)
    return env.query_page(
        "select s.sku, sum(s.units) as units, round(sum(s.net_revenue), 2) as net_revenue, "
        "sum(s.units > 0) as weeks_with_sales from weekly_sales s join products p on p.sku = s.sku "
        "where s.week_start between ? and ? and (? is null or p.season = ?) group by s.sku "
        "having sum(s.units) > 0 order by s.sku",
        (w1, w2, season, season), page_no, 50)


@tool
def list_stock_positions(env: Env, season: str | None = None, location_type: str | None = None,
                         page_no: int = 1) -> dict:
    """Current on-hand units per SKU, 50 per page, ordered by sku: summed over all locations, or only over
    'store' or 'dc' locations when location_type is given; optionally only SKUs of one season. SKUs with
    no stock record are omitted. Returns {"items": [{"sku", "on_hand", "locations"}], ...paging}."""
    season = _season(env, season)
    if location_type is not None and location_type.lower() not in ("store", "dc"):
        raise ToolError("location_type must be 'store', 'dc' or omitted (all locations)")
    lt = location_type.lower() if location_type else None
    return env.query_page(
        "select s.sku, sum(s.on_hand) as on_hand, count(*) as locations from stock s "
        "join locations l on l.location_id = s.location_id join products p on p.sku = s.sku "
        "where (? is null or l.type = ?) and (? is null or p.season = ?) group by s.sku order by s.sku",
        (lt, lt, season, season), page_no, 50)


@tool
def list_price_changes(env: Env, sku: str | None = None, page_no: int = 1) -> dict:
    """Price change history, 50 per page, oldest first, optionally for one SKU.
    Returns {"items": [{"change_id", "sku", "effective_date", "old_price", "new_price", "reason",
    "approved_by"}], ...paging}."""
    return env.query_page(
        "select * from price_changes where (? is null or sku = ?) order by change_id",
        (sku, sku), page_no, 50)


@tool
def set_price(env: Env, sku: str, new_price: float, reason_code: str) -> dict:
    """Reprice one SKU effective on the run date (2025-01-06): sets its current price to `new_price`
    (in GBP, at most 2 decimals) and records a price change with `reason_code`. Returns
    {"sku", "old_price", "new_price", "reason", "change_id"}."""
    rows = env.query("select current_price from products where sku = ?", (sku,))
    if not rows:
        raise ToolError(f"unknown sku {sku!r}; use list_products to find SKUs")
    try:
        price = float(new_price)
    except (TypeError, ValueError):
        raise ToolError(f"new_price must be a number, got {new_price!r}") from None
    if price <= 0 or abs(round(price, 2) - price) > 1e-9:
        raise ToolError("new_price must be positive with at most 2 decimals")
    price = round(price, 2)
    reason_code = (reason_code or "").strip()
    if not reason_code:
        raise ToolError("reason_code is required (see the markdown playbook)")
    old = rows[0]["current_price"]
    env.db.execute("update products set current_price = ? where sku = ?", (price, sku))
    cur = env.db.execute(
        "insert into price_changes (sku, effective_date, old_price, new_price, reason, approved_by) "
        "values (?, ?, ?, ?, ?, 'clearance-run')", (sku, RUN_DATE, old, price, reason_code))
    return {"sku": sku, "old_price": old, "new_price": price, "reason": reason_code, "change_id": cur.lastrowid}
