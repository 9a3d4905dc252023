"""Tools of the ticket-closing starter task: tickets, agents, batch close, summary, files."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool

STATUSES = ("open", "resolved", "pending_customer", "reopened", "escalated")


@tool
def list_tickets(env: Env, status: str | None = None, page_no: int = 1) -> dict:
    """List tickets, 50 per page, optionally only one status ('open', 'resolved', 'pending_customer',
    'reopened', 'escalated'). Returns {"items": [{"id", "subject", "status", "agent_id", "customer", "closed"}],
    "page", "page_size", "total", "next_page"}."""
    if status is not None and status not in STATUSES:
        raise ToolError(f"status must be one of {', '.join(STATUSES)} (or omitted)")
    rows = env.query("select * from tickets where (? is null or status = ?) order by id", (status, status))
    return page(rows, page_no, 50)


@tool
def get_ticket(env: Env, ticket_id: str) -> dict:
    """One ticket by id (e.g. 'T-5003')."""
    rows = env.query("select * from tickets where id = ?", (ticket_id.strip().upper(),))
    if not rows:
        raise ToolError(f"unknown ticket_id {ticket_id!r}; ids look like 'T-5003' (see list_tickets)")
    return rows[0]


@tool
def list_agents(env: Env, page_no: int = 1) -> dict:
    """List support agents, 25 per page. Returns {"items": [{"id", "name", "team"}], ...paging}."""
    return page(env.query("select * from agents order by id"), page_no, 25)


@tool
def close_tickets(env: Env, ticket_ids: list[str]) -> dict:
    """Close several tickets at once. Returns {"closed": number of tickets closed}."""
    if not ticket_ids:
        raise ToolError("ticket_ids is empty; pass the ids to close, e.g. ['T-5001', 'T-5005']")
    ids = [get_ticket(env, t)["id"] for t in ticket_ids]
    env.db.executemany("update tickets set closed = 1 where id = ?", [(i,) for i in ids])
    return {"closed": len(set(ids))}


@tool
def post_summary(env: Env, closed: int) -> dict:
    """Post the shift summary: how many tickets were closed. Returns {"posted": true}."""
    if closed < 0:
        raise ToolError("closed must be >= 0")
    env.db.execute("insert into summaries (closed_count) values (?)", (closed,))
    return {"posted": True}


@tool
def list_files(env: Env) -> dict:
    """List the workspace files. Returns {"items": [{"path"}]}."""
    return {"items": [{"path": f["path"]} for f in env.list_files()]}


@tool
def read_file(env: Env, path: str) -> dict:
    """Read one workspace file. Returns {"path", "content"}."""
    return {"path": path, "content": env.read_text(path)}
