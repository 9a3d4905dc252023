"""Tools for the cycle-count reconciliation task: sessions, lines, items, bin stock, files, resolution."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool

OUTCOMES = ("matched", "adjust", "recount", "superseded")
MAX_BATCH = 25


def _wh(env: Env, code: str) -> str:
    code = (code or "").strip().upper()
    if not env.query("select 1 from bins where warehouse = ? limit 1", (code,)):
        known = ", ".join(r["warehouse"] for r in env.query("select distinct warehouse from bins order by 1"))
        raise ToolError(f"unknown warehouse {code!r}; known warehouses: {known}")
    return code


@tool
def list_count_sessions(env: Env, warehouse: str | None = None, week: int | None = None, page_no: int = 1) -> dict:
    """List cycle-count sessions, 20 per page, ordered by session_id. Optional filters: warehouse ('RTM', 'ANR',
    'DUS') and ISO week number (e.g. 36). Returns {"items": [{"session_id", "warehouse", "week", "zone",
    "started_at", "shift", "team", "status", "line_count"}], "page", "page_size", "total", "next_page"}."""
    wh = _wh(env, warehouse) if warehouse else None
    return env.query_page(
        "select s.*, (select count(*) from count_lines l where l.session_id = s.session_id) as line_count"
        " from count_sessions s where (:w is null or warehouse = :w) and (:k is null or week = :k)"
        " order by session_id",
        {"w": wh, "k": week}, page_no, 20)


@tool
def list_count_lines(env: Env, session_id: str, status: str | None = None, page_no: int = 1) -> dict:
    """List the count lines of one session, 50 per page, ordered by id. Optional status filter ('submitted',
    'matched', 'adjusted', 'recount', 'superseded'). counted_qty is in counted_uom ('EA' eaches or 'CS' cases).
    Returns {"items": [{"id", "bin_code", "sku", "counted_qty", "counted_uom", "counted_by", "counted_at",
    "status", "remark"}], "page", "page_size", "total", "next_page"}."""
    if not env.query("select 1 from count_sessions where session_id = ?", (session_id,)):
        raise ToolError(f"unknown session_id {session_id!r}; use list_count_sessions")
    return env.query_page(
        "select id, bin_code, sku, counted_qty, counted_uom, counted_by, counted_at, status, remark"
        " from count_lines where session_id = :s and (:t is null or status = :t) order by id",
        {"s": session_id, "t": status}, page_no, 50)


@tool
def list_items(env: Env, category: str | None = None, page_no: int = 1) -> dict:
    """List the item master, 50 per page, ordered by SKU, optionally for one category.
    Returns {"items": [{"sku", "description", "category", "uom", "case_qty", "unit_cost", "serial_tracked"}],
    "page", "page_size", "total", "next_page"}. unit_cost is EUR per each; case_qty = eaches per case."""
    return env.query_page(
        "select * from items where (:c is null or category = :c) order by sku",
        {"c": category}, page_no, 50)


@tool
def list_bin_stock(env: Env, warehouse: str, zone: str | None = None, page_no: int = 1) -> dict:
    """List the system stock records (in eaches) of a warehouse, optionally one zone ('A'..'D'), 50 per page,
    ordered by bin then SKU. Returns {"items": [{"bin_code", "sku", "qty", "last_movement"}], "page",
    "page_size", "total", "next_page"}. A bin/item pair without a record holds 0 on the system."""
    wh = _wh(env, warehouse)
    if zone is not None and zone not in ("A", "B", "C", "D"):
        raise ToolError("zone must be one of 'A', 'B', 'C', 'D' or omitted")
    return env.query_page(
        "select s.bin_code, s.sku, s.qty, s.last_movement from bin_stock s"
        " join bins b on b.bin_code = s.bin_code where b.warehouse = :w and (:z is null or b.zone = :z)"
        " order by s.bin_code, s.sku",
        {"w": wh, "z": zone}, page_no, 50)


@tool
def get_bin(env: Env, bin_code: str) -> dict:
    """Get one bin location and its system contents. Returns {"bin_code", "warehouse", "zone", "aisle", "level",
    "bin_type", "contents": [{"sku", "qty", "last_movement"}]}."""
    rows = env.query("select * from bins where bin_code = ?", ((bin_code or "").strip().upper(),))
    if not rows:
        raise ToolError(f"unknown bin_code {bin_code!r} (format like 'RTM-A03-2B')")
    contents = env.query("select sku, qty, last_movement from bin_stock where bin_code = ? order by sku",
                         (rows[0]["bin_code"],))
    return rows[0] | {"contents": contents}


@tool
def list_adjustments(env: Env, warehouse: str | None = None, reason_code: str | None = None,
                     page_no: int = 1) -> dict:
    """List posted stock adjustments, 25 per page, newest first, optionally by warehouse and reason_code
    ('CC-VAR', 'DMG', 'RCV-ERR', 'EXPIRED', 'QA-HOLD'). Returns {"items": [{"id", "bin_code", "sku", "delta_qty",
    "value_eur", "reason_code", "count_line_id", "posted_at", "posted_by"}], "page", "page_size", "total",
    "next_page"}."""
    wh = _wh(env, warehouse) if warehouse else None
    return env.query_page(
        "select * from adjustments where (:w is null or bin_code like :w || '-%')"
        " and (:r is null or reason_code = :r) order by posted_at desc, id desc",
        {"w": wh, "r": reason_code}, page_no, 25)


@tool
def list_files(env: Env, directory: str = "", page_no: int = 1) -> dict:
    """List workspace files (recursively) under `directory` ('' = whole workspace), 20 per page, sorted by path.
    Returns {"items": [{"path", "bytes"}], "page", "page_size", "total", "next_page"}."""
    return page(env.list_files(directory), page_no, 20)


@tool
def read_file(env: Env, path: str) -> dict:
    """Read one workspace text file. Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}


@tool
def resolve_count_lines(env: Env, decisions: list[dict]) -> dict:
    """Resolve up to 25 submitted count lines in one call. Each decision is
    {"line_id": int, "outcome": "matched" | "adjust" | "recount" | "superseded", "delta_qty": int}
    where delta_qty (in eaches, non-zero, signed) is required for "adjust" only and is posted as a CC-VAR stock
    adjustment to that bin/item (the bin stock record is created if missing); the line status becomes
    'matched', 'adjusted', 'recount' or 'superseded'. All decisions are validated before anything is written.
    Returns {"resolved": n, "adjustments_posted": n, "net_value_eur": float}."""
    if not isinstance(decisions, list) or not decisions:
        raise ToolError("decisions must be a non-empty list")
    if len(decisions) > MAX_BATCH:
        raise ToolError(f"at most {MAX_BATCH} decisions per call; split the list")
    plan, seen, pending = [], set(), {}
    for i, d in enumerate(decisions):
        if not isinstance(d, dict) or "line_id" not in d or "outcome" not in d:
            raise ToolError(f"decisions[{i}] must be an object with line_id and outcome (and delta_qty for adjust)")
        extra = set(d) - {"line_id", "outcome", "delta_qty"}
        if extra:
            raise ToolError(f"decisions[{i}]: unexpected keys {sorted(extra)}")
        lid, outcome = d["line_id"], d["outcome"]
        if outcome not in OUTCOMES:
            raise ToolError(f"decisions[{i}]: outcome must be one of {', '.join(OUTCOMES)}")
        rows = env.query("select * from count_lines where id = ?", (lid,))
        if not rows:
            raise ToolError(f"decisions[{i}]: unknown line_id {lid!r}")
        if rows[0]["status"] != "submitted":
            raise ToolError(f"decisions[{i}]: line {lid} is already resolved ({rows[0]['status']})")
        if lid in seen:
            raise ToolError(f"decisions[{i}]: line {lid} appears twice in this batch")
        seen.add(lid)
        delta = d.get("delta_qty")
        if outcome == "adjust":
            if isinstance(delta, bool) or not isinstance(delta, int) or delta == 0:
                raise ToolError(f"decisions[{i}]: adjust needs a non-zero integer delta_qty (in eaches)")
            key = (rows[0]["bin_code"], rows[0]["sku"])
            if key not in pending:
                cur = env.query("select qty from bin_stock where bin_code = ? and sku = ?", key)
                pending[key] = cur[0]["qty"] if cur else 0
            if pending[key] + delta < 0:
                raise ToolError(f"decisions[{i}]: delta {delta} would make the stock of {key[1]} in {key[0]} negative")
            pending[key] += delta
        elif delta not in (None, 0):
            raise ToolError(f"decisions[{i}]: delta_qty is only allowed with outcome 'adjust'")
        plan.append((rows[0], outcome, delta))
    posted, net = 0, 0.0
    for line, outcome, delta in plan:
        status = {"matched": "matched", "adjust": "adjusted", "recount": "recount", "superseded": "superseded"}[outcome]
        env.db.execute("update count_lines set status = ? where id = ?", (status, line["id"]))
        if outcome != "adjust":
            continue
        cost = env.query("select unit_cost from items where sku = ?", (line["sku"],))[0]["unit_cost"]
        cur = env.query("select id from bin_stock where bin_code = ? and sku = ?", (line["bin_code"], line["sku"]))
        if cur:
            env.db.execute("update bin_stock set qty = qty + ?, last_movement = '2024-09-09' where id = ?",
                           (delta, cur[0]["id"]))
        else:
            env.db.execute("insert into bin_stock (bin_code, sku, qty, last_movement) values (?,?,?,?)",
                           (line["bin_code"], line["sku"], delta, "2024-09-09"))
        value = round(delta * cost, 2)
        env.db.execute("insert into adjustments (bin_code, sku, delta_qty, value_eur, reason_code, count_line_id,"
                       " posted_at, posted_by) values (?,?,?,?,?,?,?,?)",
                       (line["bin_code"], line["sku"], delta, value, "CC-VAR", line["id"], "2024-09-09",
                        "inventory-control"))
        posted += 1
        net += value
    return {"resolved": len(plan), "adjustments_posted": posted, "net_value_eur": round(net, 2)}
