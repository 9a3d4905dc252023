"""Tools of the scholarship renewal review: workspace files, students, transcripts, conduct, awards."""

from __future__ import annotations

from envs.taskkit import Env, ToolError, page, tool

AWARD_STATUSES = ("pending_review", "reviewed", "closed", "declined", "cancelled", "offered")
STUDENT_STATUSES = ("active", "withdrawn", "graduated", "leave")
DECISIONS = ("renew", "probation", "terminate")
CATEGORIES = ("academic_integrity", "housing", "parking", "behavioral", "alcohol")


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
def list_scholarship_programs(env: Env, page_no: int = 1) -> dict:
    """List the institutional scholarship programs (code, name, funding source), 25 per page.
    Returns {"items": [{"program_code", "name", "funding_source", "kind"}], "page", "page_size", "total", "next_page"}."""
    return env.query_page(
        "select program_code, name, funding_source, kind from scholarship_programs order by program_code",
        (), page_no, 25)


@tool
def list_awards(env: Env, academic_year: str | None = None, status: str | None = None,
                program_code: str | None = None, student_id: int | None = None, page_no: int = 1) -> dict:
    """List scholarship awards, 25 per page, optionally filtered by academic_year (e.g. '2024-25'),
    status ('pending_review', 'reviewed', 'closed', 'declined', 'cancelled', 'offered'), program_code and student_id.
    Returns {"items": [{"award_id", "student_id", "program_code", "academic_year", "amount", "status", "decision",
    "next_year_amount", "review_note"}], "page", "page_size", "total", "next_page"}; items ordered by award_id."""
    if status is not None and status not in AWARD_STATUSES:
        raise ToolError(f"unknown status {status!r}; expected one of {', '.join(AWARD_STATUSES)}")
    return env.query_page(
        "select award_id, student_id, program_code, academic_year, amount, status, decision, next_year_amount,"
        " review_note from awards where (:y is null or academic_year = :y) and (:s is null or status = :s)"
        " and (:p is null or program_code = :p) and (:st is null or student_id = :st) order by award_id",
        {"y": academic_year, "s": status, "p": program_code, "st": student_id}, page_no, 25)


@tool
def list_students(env: Env, status: str | None = None, page_no: int = 1) -> dict:
    """List student records, 50 per page, optionally filtered by record status
    ('active', 'withdrawn', 'graduated', 'leave').
    Returns {"items": [{"student_id", "student_no", "first_name", "last_name", "major", "entry_year", "status",
    "advisor"}], "page", "page_size", "total", "next_page"}; items ordered by student_id."""
    if status is not None and status not in STUDENT_STATUSES:
        raise ToolError(f"unknown status {status!r}; expected one of {', '.join(STUDENT_STATUSES)}")
    return env.query_page(
        "select student_id, student_no, first_name, last_name, major, entry_year, status, advisor"
        " from students where (? is null or status = ?) order by student_id",
        (status, status), page_no, 50)


@tool
def get_transcript(env: Env, student_id: int, page_no: int = 1) -> dict:
    """One student's course history (all terms), 50 per page, oldest term first.
    Returns {"student_id", "items": [{"term", "course_code", "title", "department", "credits", "grading_basis",
    "grade"}], "page", "page_size", "total", "next_page"}."""
    if not env.query("select 1 from students where student_id = ?", (student_id,)):
        raise ToolError(f"no student with student_id {student_id}")
    rows = env.query(
        "select t.code as term, c.code as course_code, c.title, c.department, c.credits, c.grading_basis, e.grade"
        " from enrollments e join courses c on c.course_id = e.course_id join terms t on t.term_id = e.term_id"
        " where e.student_id = ? order by t.start_date, c.code, e.enrollment_id", (student_id,))
    return {"student_id": student_id, **page(rows, page_no, 50)}


@tool
def list_conduct_cases(env: Env, student_id: int | None = None, category: str | None = None, page_no: int = 1) -> dict:
    """List student conduct cases, 25 per page, optionally filtered by student_id and category
    ('academic_integrity', 'housing', 'parking', 'behavioral', 'alcohol').
    Returns {"items": [{"case_id", "student_id", "case_date", "category", "outcome", "sanction", "summary"}],
    "page", "page_size", "total", "next_page"}; items ordered by case_id."""
    if category is not None and category not in CATEGORIES:
        raise ToolError(f"unknown category {category!r}; expected one of {', '.join(CATEGORIES)}")
    return env.query_page(
        "select case_id, student_id, case_date, category, outcome, sanction, summary from conduct_cases"
        " where (:s is null or student_id = :s) and (:c is null or category = :c) order by case_id",
        {"s": student_id, "c": category}, page_no, 25)


@tool
def set_award_decision(env: Env, award_id: int, decision: str, next_year_amount: float, note: str = "") -> dict:
    """Record the renewal decision for one award with status 'pending_review': decision is 'renew', 'probation'
    or 'terminate'; next_year_amount is the 2025-26 amount in dollars (must be 0 for 'terminate').
    The award's status becomes 'reviewed'. Returns the updated award."""
    found = env.query("select status from awards where award_id = ?", (award_id,))
    if not found:
        raise ToolError(f"no award with award_id {award_id}")
    if found[0]["status"] != "pending_review":
        raise ToolError(f"award {award_id} has status {found[0]['status']!r}; only 'pending_review' awards can be decided")
    if decision not in DECISIONS:
        raise ToolError(f"unknown decision {decision!r}; expected one of {', '.join(DECISIONS)}")
    amount = round(float(next_year_amount), 2)
    if amount < 0:
        raise ToolError("next_year_amount must be >= 0")
    if decision == "terminate" and amount != 0:
        raise ToolError("a terminated award must have next_year_amount 0")
    env.db.execute("update awards set status = 'reviewed', decision = ?, next_year_amount = ?, review_note = ?"
                   " where award_id = ?", (decision, amount, note or None, award_id))
    return env.query("select award_id, student_id, program_code, academic_year, amount, status, decision,"
                     " next_year_amount, review_note from awards where award_id = ?", (award_id,))[0]
