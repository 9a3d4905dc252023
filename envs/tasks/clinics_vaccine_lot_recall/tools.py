"""Tools of the vaccine recall outreach: workspace files, sites, lots, immunizations, patients, outreach tasks."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

PRIORITIES = ("urgent", "routine")
CHANNELS = ("portal", "phone", "letter")
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
def list_sites(env: Env, page_no: int = 1) -> dict:
    """List the clinic sites, 25 per page. Returns {"items": [{"site_id", "code", "name", "city", "phone"}],
    "page", "page_size", "total", "next_page"}."""
    return page(env.query("select site_id, code, name, city, phone from sites order by site_id"), page_no, 25)


@tool
def list_vaccine_lots(env: Env, lot_number: str | None = None, cvx: str | None = None, page_no: int = 1) -> dict:
    """List vaccine lots received by the sites (one row per lot and site), 25 per page, optionally filtered by
    lot_number or CVX code. Returns {"items": [{"lot_id", "lot_number", "cvx", "product", "manufacturer", "site_id",
    "received_on", "expiration_date"}], "page", "page_size", "total", "next_page"}."""
    return env.query_page(
        "select l.lot_id, l.lot_number, v.cvx, v.product, v.manufacturer, l.site_id, l.received_on, l.expiration_date"
        " from lots l join vaccines v on v.vaccine_id = l.vaccine_id where (:ln is null or l.lot_number = :ln)"
        " and (:cvx is null or v.cvx = :cvx) order by l.lot_id",
        {"ln": lot_number, "cvx": cvx}, page_no, 25)


@tool
def list_immunizations(env: Env, lot_number: str | None = None, cvx: str | None = None,
                       administered_from: str | None = None, administered_to: str | None = None,
                       page_no: int = 1) -> dict:
    """List administered doses, 50 per page, ordered by imm_id, optionally filtered by lot_number, CVX code and
    an administration date range (YYYY-MM-DD, inclusive). Returns {"items": [{"imm_id", "patient_id",
    "lot_number", "cvx", "product", "administered_on", "site_id", "dose_in_series", "status"}], "page",
    "page_size", "total", "next_page"}; status is 'completed' or 'entered_in_error'."""
    for name, value in (("administered_from", administered_from), ("administered_to", administered_to)):
        if value is not None and not DATE.match(value):
            raise ToolError(f"{name} must be a date YYYY-MM-DD, got {value!r}")
    return env.query_page(
        "select i.imm_id, i.patient_id, l.lot_number, v.cvx, v.product, i.administered_on, i.site_id,"
        " i.dose_in_series, i.status from immunizations i join lots l on l.lot_id = i.lot_id"
        " join vaccines v on v.vaccine_id = l.vaccine_id where (:ln is null or l.lot_number = :ln)"
        " and (:cvx is null or v.cvx = :cvx) and (:a is null or i.administered_on >= :a)"
        " and (:b is null or i.administered_on <= :b) order by i.imm_id",
        {"ln": lot_number, "cvx": cvx, "a": administered_from, "b": administered_to}, page_no, 50)


@tool
def get_patient(env: Env, patient_id: int) -> dict:
    """One patient's chart summary: demographics and contact details (dob, phone, portal_active, deceased_on,
    ...), the problem list (ICD-10 code, status 'active' or 'resolved') and the full immunization history.
    Returns {"patient": {...}, "problems": [...], "immunizations": [...]}."""
    p = env.query("select patient_id, mrn, first_name, last_name, dob, sex, phone, email, portal_active,"
                  " preferred_language, deceased_on, primary_site_id from patients where patient_id = ?", (patient_id,))
    if not p:
        raise ToolError(f"no patient with patient_id {patient_id}")
    problems = env.query("select problem_id, icd10, description, onset_date, status from problems"
                         " where patient_id = ? order by problem_id", (patient_id,))
    imms = env.query(
        "select i.imm_id, l.lot_number, v.cvx, v.product, i.administered_on, i.site_id, i.dose_in_series, i.status"
        " from immunizations i join lots l on l.lot_id = i.lot_id join vaccines v on v.vaccine_id = l.vaccine_id"
        " where i.patient_id = ? order by i.administered_on, i.imm_id", (patient_id,))
    return {"patient": p[0], "problems": problems, "immunizations": imms}


@tool
def list_outreach_tasks(env: Env, recall_ref: str | None = None, page_no: int = 1) -> dict:
    """List patient outreach tasks, 25 per page, optionally for one recall (Notice ID).
    Returns {"items": [{"task_id", "patient_id", "recall_ref", "immunization_ids", "priority", "channel", "site_id",
    "status", "created_on", "note"}], "page", "page_size", "total", "next_page"}."""
    return env.query_page(
        "select * from outreach_tasks where (? is null or recall_ref = ?) order by task_id",
        (recall_ref, recall_ref), page_no, 25)


@tool
def create_outreach_task(env: Env, patient_id: int, recall_ref: str, immunization_ids: list[int], priority: str,
                         channel: str, site_id: int, note: str = "") -> dict:
    """Open an outreach task for one patient and one recall: recall_ref is the notice's Notice ID,
    immunization_ids the patient's affected dose ids, priority 'urgent' or 'routine', channel 'portal', 'phone' or
    'letter', site_id the responsible site. Returns the created task."""
    if not env.query("select 1 from patients where patient_id = ?", (patient_id,)):
        raise ToolError(f"no patient with patient_id {patient_id}")
    if not re.match(r"^[A-Z]{2}-\d{4}-\d{3,4}$", recall_ref or ""):
        raise ToolError(f"recall_ref {recall_ref!r} is not a Notice ID like 'RC-2025-0123'")
    if priority not in PRIORITIES:
        raise ToolError(f"priority must be one of {', '.join(PRIORITIES)}")
    if channel not in CHANNELS:
        raise ToolError(f"channel must be one of {', '.join(CHANNELS)}")
    if not env.query("select 1 from sites where site_id = ?", (site_id,)):
        raise ToolError(f"no site with site_id {site_id}")
    if not immunization_ids:
        raise ToolError("immunization_ids must list at least one dose")
    ids = sorted({int(i) for i in immunization_ids})
    own = {r["imm_id"] for r in env.query("select imm_id from immunizations where patient_id = ?", (patient_id,))}
    foreign = [i for i in ids if i not in own]
    if foreign:
        raise ToolError(f"immunizations {foreign} do not belong to patient {patient_id}")
    if env.query("select 1 from outreach_tasks where patient_id = ? and recall_ref = ?", (patient_id, recall_ref)):
        raise ToolError(f"patient {patient_id} already has an outreach task for {recall_ref}")
    cur = env.db.execute(
        "insert into outreach_tasks (patient_id, recall_ref, immunization_ids, priority, channel, site_id, status,"
        " created_on, note) values (?,?,?,?,?,?,'open','2025-06-02',?)",
        (patient_id, recall_ref, ",".join(map(str, ids)), priority, channel, site_id, note))
    return env.query("select * from outreach_tasks where task_id = ?", (cur.lastrowid,))[0]
