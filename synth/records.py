"""What the pipeline writes under its output folder: one JSON record per finished stage.

    OUT/run.json                                the config of the latest run
    OUT/intents/<domain>.json                   StageRecord of the intent stage of one domain
    OUT/candidates/<id>/stages/r<N>-<stage>.json StageRecord (construct, verifier, execute, repair,
                                                audit, diagnose, validate) of revision N
    OUT/candidates/<id>/task/r<N>/<id>/         the task folder of revision N (rebuilt from records)
    OUT/candidates/<id>/outcome.json            Outcome: accepted (with the library path) or discarded
    OUT/summary.json                            every candidate's outcome and the token cost per stage

A record is written only when its stage has finished (atomically), so a re-run skips exactly the
finished stages and an interrupted or failed endpoint call is simply retried. A stage whose check
failed is finished too: its record (ok=false, the error) is what the repair stage reads.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec


class Usage(msgspec.Struct, frozen=True):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0

    def add(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens,
                     self.requests + other.requests)


class StageRecord(msgspec.Struct, kw_only=True):
    stage: str
    candidate: str  # "" for the intent stage
    revision: int = 0
    ok: bool
    model: str | None = None  # None for stages that use no LLM (execute, validate)
    inputs: dict[str, Any] = {}  # what the stage was given (the messages sent, the task folder)
    outputs: dict[str, Any] = {}  # what it produced (replies, files, verdicts, reports)
    usage: Usage = Usage()
    error: str | None = None  # why it failed: the feedback a repair receives
    seconds: float = 0.0
    finished_at: str = ""


class Outcome(msgspec.Struct, kw_only=True):
    candidate: str
    domain: str
    status: str  # "accepted" | "discarded"
    reason: str = ""  # for a discard: the stage and what failed
    revision: int = 0
    repair_rounds: int = 0
    task_dir: str = ""  # the accepted task in the output library
    usage_by_stage: dict[str, Usage] = {}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


class Store:
    """Paths and atomic reads/writes of the records under one output folder."""

    def __init__(self, out: str | Path):
        self.out = Path(out)

    def candidate_dir(self, cid: str) -> Path:
        return self.out / "candidates" / cid

    def stage_path(self, cid: str, revision: int, stage: str) -> Path:
        return self.candidate_dir(cid) / "stages" / f"r{revision}-{stage}.json"

    def intents_path(self, domain: str) -> Path:
        return self.out / "intents" / f"{domain}.json"

    def task_dir(self, cid: str, revision: int) -> Path:
        return self.candidate_dir(cid) / "task" / f"r{revision}" / cid

    def outcome_path(self, cid: str) -> Path:
        return self.candidate_dir(cid) / "outcome.json"

    def load(self, path: Path) -> StageRecord | None:
        return msgspec.json.decode(path.read_bytes(), type=StageRecord) if path.is_file() else None

    def save(self, path: Path, record: StageRecord) -> None:
        _write_atomic(path, msgspec.json.format(msgspec.json.encode(record), indent=1))

    def load_outcome(self, cid: str) -> Outcome | None:
        path = self.outcome_path(cid)
        return msgspec.json.decode(path.read_bytes(), type=Outcome) if path.is_file() else None

    def save_outcome(self, outcome: Outcome) -> None:
        _write_atomic(self.outcome_path(outcome.candidate), msgspec.json.format(msgspec.json.encode(outcome), indent=1))

    def records(self, cid: str) -> list[StageRecord]:
        """Every stage record of a candidate, in revision then stage order."""
        order = ("construct", "verifier", "repair", "execute", "audit", "diagnose", "validate")
        recs = [self.load(p) for p in (self.candidate_dir(cid) / "stages").glob("r*-*.json")]
        return sorted((r for r in recs if r), key=lambda r: (r.revision, order.index(r.stage)))

    def write_json(self, name: str, obj: Any) -> None:
        _write_atomic(self.out / name, msgspec.json.format(msgspec.json.encode(obj), indent=1))
