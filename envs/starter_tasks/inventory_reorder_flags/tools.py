"""Tools of the reorder starter task: products, suppliers, reorder flags, the buyer's inbox, files."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool


@tool
def list_products(env: Env, below_reorder: bool = False, page_no: int = 1) -> dict:
    """List products, 50 per page; below_reorder=True keeps those whose stock is below their reorder level.
    Returns {"items": [{"sku", "name", "category", "stock", "reorder_level", "supplier_id", "flagged"}],
    "page", "page_size", "total", "next_page"}."""
    rows = env.query("select * from products where (? = 0 or stock < reorder_level) order by sku",
                     (int(bool(below_reorder)),))
    return page(rows, page_no, 50)


@tool
def get_product(env: Env, sku: str) -> dict:
    """One product by sku (e.g. 'SKU-1003')."""
    rows = env.query("select * from products where sku = ?", (sku.strip().upper(),))
    if not rows:
        raise ToolError(f"unknown sku {sku!r}; skus look like 'SKU-1003' (see list_products)")
    return rows[0]


@tool
def list_suppliers(env: Env, page_no: int = 1) -> dict:
    """List suppliers, 25 per page. Returns {"items": [{"id", "name", "lead_days"}], ...paging}."""
    return page(env.query("select * from suppliers order by id"), page_no, 25)


@tool
def flag_reorder(env: Env, sku: str) -> dict:
    """Flag one product for reorder. Returns {"sku", "flagged": true}."""
    product = get_product(env, sku)
    env.db.execute("update products set flagged = 1 where sku = ?", (product["sku"],))
    return {"sku": product["sku"], "flagged": True}


@tool
def notify_buyer(env: Env, count: int) -> dict:
    """Tell the buyer how many products were flagged for reorder. Returns {"sent": true, "count"}."""
    if count < 0:
        raise ToolError("count must be >= 0")
    env.db.execute("insert into notifications (recipient, count, sent_at) values ('buyer', ?, 'now')", (count,))
    return {"sent": True, "count": count}


@tool
def list_files(env: Env) -> dict:
    """List the workspace files. Returns {"items": [{"path"}]}."""
    return {"items": [{"path": f["path"]} for f in env.list_files()]}


@tool
def read_file(env: Env, path: str) -> dict:
    """Read one workspace file. Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}
