"""The prompts of the LLM stages. The task contract is envs/format/TASK_FORMAT.md itself (one source of truth);
replies carry files in fenced blocks (synth/parse.py) or one JSON object.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from envs.format.library import LIBRARY_DIR
from synth.parse import FORMAT_HELP

TASK_FORMAT = Path(__file__).resolve().parents[1] / "envs" / "format" / "TASK_FORMAT.md"

CONSTRUCT_FILES = ("task.toml", "instruction.md", "data.py", "tools.py")
VERIFIER_FILES = ("verify.py", "oracle.py")


class Intent(msgspec.Struct, forbid_unknown_fields=False):
    task_id: str
    title: str
    scenario: str  # the business situation and what the user asks for
    tables: list[str] = []  # the relations the database holds
    workspace_files: list[str] = []  # the documents that hold the rules
    rules: list[str] = []  # constraints that live only in workspace files
    writes: str = ""  # what the solver changes (the verifier checks it)
    answer: str = ""  # what the final answer reports
    domain: str = ""


class IntentList(msgspec.Struct):
    intents: list[Intent]


class Diagnosis(msgspec.Struct):
    verdict: str  # "task_defect" | "solver_error"
    summary: str
    issues: list[str] = []

    def __post_init__(self) -> None:
        if self.verdict not in ("task_defect", "solver_error"):
            raise ValueError(f"verdict must be 'task_defect' or 'solver_error', got {self.verdict!r}")


PRINCIPLES = """Design principles (ProgAgent, verifiable long-horizon tool tasks):
- A realistic business workflow over a SQLite database and a workspace of files, solved only through
  single-purpose tools. Related data is spread over several tables; the rules the solver needs live ONLY
  in workspace files (policies, memos, notices, JSON/CSV), among realistic noise files.
- Tool returns are bounded (paged lists, files read in chunks), so a larger environment needs more calls.
- The same instruction, tools, logic and verifier serve four environment scales v0-v3; only the data
  grows (rows x1/x2/x4/x8, files x1..x3.4). The records the answer depends on exist at every scale.
- The verifier is exact and independent of the oracle; the oracle passes at every scale; each wrong
  solution is a plausible mistake (a missed workspace rule, an off-by-one, only the first page) that the
  verifier rejects at every scale."""


def system_prompt(example_task: str = "") -> str:
    parts = ["You build tasks for training tool-using agents. You write complete, correct Python and "
             "realistic data.", PRINCIPLES, "The task format you must follow exactly:\n\n" + TASK_FORMAT.read_text()]
    example = LIBRARY_DIR / example_task if example_task else None
    if example is not None and example.is_dir():
        shown = "\n\n".join(_file_block(p.name, p.read_text()) for p in
                            (example / n for n in ("task.toml", "instruction.md", "tools.py", "oracle.py")))
        parts.append(f"A shipped task in this format, as a style reference (do not copy its domain):\n\n{shown}")
    parts.append("Reply format: " + FORMAT_HELP)
    return "\n\n".join(parts)


def _file_block(path: str, content: str) -> str:
    fence = "````" if "```" in content else "```"
    lang = {"py": "python", "toml": "toml", "md": "markdown", "json": "json"}.get(path.rsplit(".", 1)[-1], "")
    return f"### FILE: {path}\n{fence}{lang}\n{content.rstrip()}\n{fence}"


def files_text(files: dict[str, str]) -> str:
    return "\n\n".join(_file_block(p, files[p]) for p in sorted(files))


def intents_messages(domain: str, n: int, avoid: list[str]) -> list[dict[str, Any]]:
    shape = {"intents": [{"task_id": f"{domain}_short_snake_case_name", "title": "...", "scenario": "...",
                          "tables": ["..."], "workspace_files": ["..."], "rules": ["..."], "writes": "...",
                          "answer": "..."}]}
    return [
        {"role": "system", "content": "You propose realistic, verifiable back-office workflows for training "
                                      "tool-using agents.\n\n" + PRINCIPLES},
        {"role": "user", "content": (
            f"Propose {n} distinct task intents in the domain '{domain}'. Each is one concrete workflow a "
            "person in that business does with tools: it reads records spread over several tables, must find "
            "and apply rules written only in workspace documents (at least three rules, one of them an "
            "exception or override that is easy to miss), writes changes that can be checked, and reports a "
            "short answer (counts, totals). Avoid these existing tasks: "
            f"{', '.join(avoid) or 'none'}.\n\nReply with one JSON object in a ```json block, shaped like:\n"
            + json.dumps(shape, indent=1))},
    ]


def construct_messages(system: str, task_id: str, intent: Intent) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": (
            f"Build the environment of the task `{task_id}` (domain '{intent.domain}') from this intent:\n\n"
            f"```json\n{msgspec.json.format(msgspec.json.encode(intent), indent=1).decode()}\n```\n\n"
            f"Write now: {', '.join(CONSTRUCT_FILES)} (task.toml id = \"{task_id}\"). data.py must be "
            "deterministic, scale every table with scale.n_rows and every kind of noise file with "
            "scale.n_files, and plant the records the answer depends on at every scale. The instruction "
            "states the answer format (an `ANSWER:` line) but not the rules: they are in the workspace.")},
    ]


def verifier_messages(system: str, task_id: str, intent: Intent, files: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": (
            f"Here is the environment of the task `{task_id}`:\n\n{files_text(files)}\n\n"
            f"Intent: {intent.scenario}\n\nWrite now: verify.py (expected result computed from ctx.initial "
            "— database and workspace files — independently of the oracle; named criteria; the untouched "
            "environment with an empty answer must fail), oracle.py (the reference PTC program: cells split "
            "by `# %%`, pages through every list, reads the rules through tools, leaves `final_answer`), and "
            "at least two wrong/<name>.py programs, each a plausible mistake described in its first line, "
            "that the verifier rejects at every scale.")},
    ]


def repair_messages(system: str, task_id: str, files: dict[str, str], stage: str, feedback: str,
                    history: list[str]) -> list[dict[str, Any]]:
    earlier = ("\n\nEarlier rounds failed with:\n" + "\n".join(f"- {h}" for h in history)) if history else ""
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": (
            f"The task `{task_id}` failed the {stage} check:\n\n{feedback}{earlier}\n\nThe task's files:\n\n"
            f"{files_text(files)}\n\nFind the cause (it may be in the oracle, the verifier, the data or the "
            "tools) and fix it. Keep the task's intent. Reply with a one-paragraph diagnosis, then ONLY the "
            "files you change, each complete.")},
    ]


def diagnose_messages(task_files: dict[str, str], audit: dict[str, Any]) -> list[dict[str, Any]]:
    shape = {"verdict": "task_defect | solver_error", "summary": "one paragraph",
             "issues": ["each inconsistency between instruction, environment and verifier"]}
    shown = {k: task_files[k] for k in ("instruction.md", "tools.py", "verify.py", "data.py") if k in task_files}
    return [
        {"role": "system", "content": "You audit synthesized agent tasks. An independent solver, seeing only "
                                      "the instruction and the tools, attempted the task and the verifier "
                                      "rejected its result. Decide whether the task is at fault "
                                      "(task_defect: the instruction is ambiguous or misleading, a rule the "
                                      "verifier applies is not stated in the workspace, the tools cannot reach "
                                      "needed data, the verifier is wrong) or the solver is (solver_error: "
                                      "it missed or misread something the task states clearly)."},
        {"role": "user", "content": (
            f"{files_text(shown)}\n\nThe audit run at scale {audit.get('scale')}:\n```json\n"
            f"{json.dumps(audit, indent=1)}\n```\n\nReply with one JSON object in a ```json block, shaped "
            f"like:\n{json.dumps(shape, indent=1)}")},
    ]
