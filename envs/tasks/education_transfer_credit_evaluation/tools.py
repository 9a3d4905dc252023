"""Tools of the transfer credit evaluation: workspace files, applicants, institutions, coursework, credit."""

from __future__ import annotations

import re

from envs.taskkit import Env, ToolError, page, tool

EVAL_STATUSES = ("pending", "on_hold", "completed")
ADMIT_STATUSES = ("admitted", "deposited")
SOURCES = ("transfer", "AP", "IB", "CLEP", "military")
EQUIV = re.compile(r"^[A-Z]{3,4} (\d{3}|[12]XX)$")


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
def list_applicants(env: Env, admit_term: str | None = None, admission_status: str | None = None,
                    evaluation_status: str | None = None, page_no: int = 1) -> dict:
    """List transfer applicants, 25 per page, optionally filtered by admit_term (e.g. 'FA2025'),
    admission_status ('admitted', 'deposited') and evaluation_status ('pending', 'on_hold', 'completed').
    Returns {"items": [{"applicant_id", "first_name", "last_name", "admit_term", "intended_major",
    "admission_status", "evaluation_status", "notes"}], "page", "page_size", "total", "next_page"}."""
    if admission_status is not None and admission_status not in ADMIT_STATUSES:
        raise ToolError(f"unknown admission_status {admission_status!r}; expected one of {', '.join(ADMIT_STATUSES)}")
    if evaluation_status is not None and evaluation_status not in EVAL_STATUSES:
        raise ToolError(f"unknown evaluation_status {evaluation_status!r}; expected one of {', '.join(EVAL_STATUSES)}")
    return env.query_page(
        "select applicant_id, first_name, last_name, admit_term, intended_major, admission_status,"
        " evaluation_status, notes from applicants where (:t is null or admit_term = :t)"
        " and (:a is null or admission_status = :a) and (:e is null or evaluation_status = :e) order by applicant_id",
        {"t": admit_term, "a": admission_status, "e": evaluation_status}, page_no, 25)


@tool
def list_institutions(env: Env, page_no: int = 1) -> dict:
    """List the institutions applicants attended, 25 per page.
    Returns {"items": [{"institution_id", "name", "city", "state", "accreditation" ('regional' | 'national' |
    'none'), "calendar" ('semester' | 'quarter')}], "page", "page_size", "total", "next_page"}."""
    return env.query_page(
        "select institution_id, name, city, state, accreditation, calendar from institutions"
        " order by institution_id",
        (), page_no, 25)


@tool
def list_external_courses(env: Env, applicant_id: int, page_no: int = 1) -> dict:
    """One applicant's coursework from other institutions, 50 per page, ordered by ext_id. Credits are in the
    institution's own units (see its calendar). Returns {"applicant_id", "items": [{"ext_id", "institution_id",
    "subject", "number", "title", "credits", "grade", "completed_on"}], "page", "page_size", "total", "next_page"}."""
    if not env.query("select 1 from applicants where applicant_id = ?", (applicant_id,)):
        raise ToolError(f"no applicant with applicant_id {applicant_id}")
    rows = env.query("select ext_id, institution_id, subject, number, title, credits, grade, completed_on"
                     " from external_courses where applicant_id = ? order by ext_id", (applicant_id,))
    return {"applicant_id": applicant_id, **page(rows, page_no, 50)}


@tool
def list_posted_credits(env: Env, applicant_id: int | None = None, source: str | None = None,
                        page_no: int = 1) -> dict:
    """Credit already posted to student records, 50 per page, optionally filtered by applicant_id and source
    ('transfer', 'AP', 'IB', 'CLEP', 'military'). Returns {"items": [{"credit_id", "applicant_id", "source",
    "ext_id", "description", "equivalent", "credits", "posted_on"}], "page", "page_size", "total", "next_page"}."""
    if source is not None and source not in SOURCES:
        raise ToolError(f"unknown source {source!r}; expected one of {', '.join(SOURCES)}")
    return env.query_page(
        "select credit_id, applicant_id, source, ext_id, description, equivalent, credits, posted_on"
        " from posted_credits where (:a is null or applicant_id = :a) and (:s is null or source = :s)"
        " order by credit_id",
        {"a": applicant_id, "s": source}, page_no, 50)


@tool
def post_transfer_evaluation(env: Env, applicant_id: int, awards: list[dict]) -> dict:
    """Post the transfer evaluation of one applicant whose evaluation is 'pending' and mark it 'completed'.
    `awards` lists every external course that receives credit, as {"ext_id": int, "equivalent": "MATH 151" or
    "ENGL 1XX", "credits": semester hours}; pass [] when nothing transfers. One call per applicant.
    Returns {"applicant_id", "posted", "credits_posted"}."""
    app = env.query("select evaluation_status from applicants where applicant_id = ?", (applicant_id,))
    if not app:
        raise ToolError(f"no applicant with applicant_id {applicant_id}")
    if app[0]["evaluation_status"] != "pending":
        raise ToolError(f"applicant {applicant_id} has evaluation_status {app[0]['evaluation_status']!r};"
                        " only 'pending' evaluations can be posted")
    if not isinstance(awards, list):
        raise ToolError("awards must be a list of {ext_id, equivalent, credits} objects")
    courses = {r["ext_id"]: r for r in env.query(
        "select e.ext_id, e.subject, e.number, e.title, i.name from external_courses e join institutions i"
        " on i.institution_id = e.institution_id where e.applicant_id = ?", (applicant_id,))}
    seen: set[int] = set()
    rows = []
    for a in awards:
        if not isinstance(a, dict) or not {"ext_id", "equivalent", "credits"} <= set(a):
            raise ToolError("each award needs the keys ext_id, equivalent and credits")
        try:
            ext_id, credits = int(a["ext_id"]), round(float(a["credits"]), 2)
        except (TypeError, ValueError):
            raise ToolError(f"bad ext_id or credits in {a!r}") from None
        eq = " ".join(str(a["equivalent"]).upper().split())
        if ext_id not in courses:
            raise ToolError(f"ext_id {ext_id} is not a course of applicant {applicant_id}")
        if ext_id in seen:
            raise ToolError(f"ext_id {ext_id} is listed twice")
        if not EQUIV.match(eq):
            raise ToolError(f"equivalent {a['equivalent']!r} is not a course code like 'MATH 151' or 'ENGL 1XX'")
        if not 0 < credits <= 10:
            raise ToolError(f"credits {a['credits']!r} out of range (0, 10]")
        seen.add(ext_id)
        c = courses[ext_id]
        rows.append((applicant_id, "transfer", ext_id, f"{c['subject']} {c['number']} {c['title']} ({c['name']})",
                     eq, credits, "2025-07-21", "transfer_eval_batch_2025b"))
    env.db.executemany("insert into posted_credits (applicant_id, source, ext_id, description, equivalent, credits,"
                       " posted_on, posted_by) values (?,?,?,?,?,?,?,?)", rows)
    env.db.execute("update applicants set evaluation_status = 'completed' where applicant_id = ?", (applicant_id,))
    return {"applicant_id": applicant_id, "posted": len(rows), "credits_posted": round(sum(r[5] for r in rows), 2)}
