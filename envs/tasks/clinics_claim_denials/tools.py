"""Tools of the denials work queue: workspace files, payers, claims, claim lines and the four line actions."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool

LINE_STATUSES = ("paid", "pending", "denied", "resubmitted", "written_off", "appeal", "patient_responsibility")
CLAIM_STATUSES = ("pending", "denied", "partially_denied", "in_rework", "closed")
WRITE_OFF_REASONS = ("small_balance", "bundled", "timely_filing", "appeal_window_expired", "non_covered")
LINE_COLS = ("line_id, claim_id, line_no, cpt, modifier, units, billed_amount, status, denial_code, denial_reason,"
             " denied_on, paid_amount, action_amount, action_reason")


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
def list_payers(env: Env, page_no: int = 1) -> dict:
    """List the payers (insurance plans), 25 per page. Returns {"items": [{"payer_id", "code", "name",
    "plan_type" ('commercial' | 'medicaid' | 'medicare_advantage'), "claims_address"}], "page", "page_size", "total",
    "next_page"}."""
    return page(env.query("select payer_id, code, name, plan_type, claims_address from payers order by payer_id"),
                page_no, 25)


@tool
def list_claims(env: Env, status: str | None = None, payer_id: int | None = None, page_no: int = 1) -> dict:
    """List claim headers, 25 per page, ordered by claim_id, optionally filtered by claim status ('pending',
    'denied', 'partially_denied', 'in_rework', 'closed') and payer_id. Returns {"items": [{"claim_id", "claim_no",
    "patient_id", "provider_id", "payer_id", "service_date", "submitted_on", "status", "total_billed"}], "page",
    "page_size", "total", "next_page"}."""
    if status is not None and status not in CLAIM_STATUSES:
        raise ToolError(f"unknown claim status {status!r}; expected one of {', '.join(CLAIM_STATUSES)}")
    return env.query_page(
        "select c.claim_id, c.claim_no, c.patient_id, pt.name as patient_name, pt.member_id,"
        " c.provider_id, pr.name as provider_name, c.payer_id, c.service_date, c.submitted_on,"
        " c.place_of_service, c.status, c.total_billed from claims c"
        " join patients pt on pt.patient_id = c.patient_id join providers pr on pr.provider_id = c.provider_id"
        " where (:s is null or c.status = :s) and (:p is null or c.payer_id = :p)"
        " order by c.claim_id",
        {"s": status, "p": payer_id}, page_no, 25)


@tool
def get_claim(env: Env, claim_id: int) -> dict:
    """One claim: header (patient, provider, payer, service date, ...) and all of its lines.
    Returns {"claim": {...}, "lines": [{"line_id", "line_no", "cpt", "modifier", "units", "billed_amount", "status",
    "denial_code", "denied_on", "paid_amount", ...}]}."""
    c = env.query("select * from claims where claim_id = ?", (claim_id,))
    if not c:
        raise ToolError(f"no claim with claim_id {claim_id}")
    lines = env.query(f"select {LINE_COLS} from claim_lines where claim_id = ? order by line_no", (claim_id,))
    return {"claim": c[0], "lines": lines}


@tool
def list_claim_lines(env: Env, status: str | None = None, denial_code: str | None = None, page_no: int = 1) -> dict:
    """List claim lines, 50 per page, ordered by line_id, optionally filtered by line status ('paid', 'pending',
    'denied', 'resubmitted', 'written_off', 'appeal', 'patient_responsibility') and denial code (e.g. 'CO-45').
    Returns {"items": [{"line_id", "claim_id", "line_no", "cpt", "modifier", "units", "billed_amount", "status",
    "denial_code", "denial_reason", "denied_on", "paid_amount", "action_amount", "action_reason"}], "page",
    "page_size", "total",
    "next_page"}. Service date and payer are on the claim (get_claim / list_claims)."""
    if status is not None and status not in LINE_STATUSES:
        raise ToolError(f"unknown line status {status!r}; expected one of {', '.join(LINE_STATUSES)}")
    return env.query_page(
        f"select {LINE_COLS} from claim_lines where (:s is null or status = :s)"
        " and (:d is null or denial_code = :d) order by line_id",
        {"s": status, "d": denial_code}, page_no, 50)


def _denied_line(env: Env, line_id: int) -> dict:
    r = env.query(f"select {LINE_COLS} from claim_lines where line_id = ?", (line_id,))
    if not r:
        raise ToolError(f"no claim line with line_id {line_id}")
    if r[0]["status"] != "denied":
        raise ToolError(f"line {line_id} has status {r[0]['status']!r}; only 'denied' lines can be worked")
    return r[0]


def _act(env: Env, line_id: int, status: str, amount: float | None, reason: str | None, note: str) -> dict:
    env.db.execute("update claim_lines set status = ?, action_amount = ?, action_reason = ?, action_note = ?"
                   " where line_id = ?", (status, amount, reason, note or None, line_id))
    return env.query(f"select {LINE_COLS} from claim_lines where line_id = ?", (line_id,))[0]


@tool
def resubmit_claim_line(env: Env, line_id: int, amount: float, note: str = "") -> dict:
    """Resubmit one denied line as a corrected claim for `amount` dollars (the amount the playbook prescribes).
    The line's status becomes 'resubmitted'. Returns the updated line."""
    _denied_line(env, line_id)
    amount = round(float(amount), 2)
    if amount <= 0:
        raise ToolError("amount must be positive")
    return _act(env, line_id, "resubmitted", amount, None, note)


@tool
def write_off_claim_line(env: Env, line_id: int, reason: str, note: str = "") -> dict:
    """Write off one denied line. reason: 'small_balance', 'bundled', 'timely_filing', 'appeal_window_expired' or
    'non_covered'. The line's status becomes 'written_off'. Returns the updated line."""
    _denied_line(env, line_id)
    if reason not in WRITE_OFF_REASONS:
        raise ToolError(f"unknown reason {reason!r}; expected one of {', '.join(WRITE_OFF_REASONS)}")
    return _act(env, line_id, "written_off", None, reason, note)


@tool
def route_to_appeals(env: Env, line_id: int, note: str = "") -> dict:
    """Send one denied line to the clinical appeals team. The line's status becomes 'appeal'.
    Returns the updated line."""
    _denied_line(env, line_id)
    return _act(env, line_id, "appeal", None, None, note)


@tool
def transfer_to_patient_responsibility(env: Env, line_id: int, note: str = "") -> dict:
    """Move one denied line's balance to the patient (it will appear on the next statement). The line's status
    becomes 'patient_responsibility'. Returns the updated line."""
    _denied_line(env, line_id)
    return _act(env, line_id, "patient_responsibility", None, None, note)
