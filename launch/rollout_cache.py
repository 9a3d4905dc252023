"""Finished rollouts, cached so that an interrupted filter or evaluation sweep resumes where it stopped.

    cache = RolloutCache(out / "rollouts.jsonl", settings=settings_digest(cfg))
    todo = [job for job in jobs if job.key() not in cache]       # what is left
    cache.add(RolloutRecord.from_trajectory(...))                # one line, flushed, per finished rollout

One append-only JSONL file per output folder; a line is one `RolloutRecord`, keyed by
(model, harness, task, scale, sample). Append-only makes a crash cost at most the line being
written: a torn last line is skipped on load. Each record carries a digest of the settings that
change outcomes (generator backend and script, loop limits, sampling); records made under other
settings are ignored, so changing `max_turns` never mixes old and new results.

Each sample has a fixed sampling seed (`rollout_seed`), so a rollout redone after an interruption
is the same experiment as the one that was lost.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

log = logging.getLogger(__name__)

Key = tuple[str, str, str, str, int]  # (model, harness, task, scale, sample)


class RolloutRecord(msgspec.Struct, frozen=True):
    """What filtering and evaluation need from one judged rollout (not its tokens)."""

    model: str
    harness: str
    task: str
    scale: str
    sample: int
    settings: str
    seed: int
    reward: float
    score: float
    termination: str
    criteria: dict[str, bool] = {}
    verifier_error: str | None = None
    turns: int = 0
    tool_calls: int = 0
    tool_output_tokens: int = 0
    context_tokens: int = 0
    response_tokens: int = 0
    metrics: dict[str, float] = {}  # the trajectory's own metrics: program structures, errors, timings
    final_answer: str = ""
    seconds: float = 0.0
    cause: str = ""  # schema/outcomes.py: "infra/..." when the fabric failed it after every attempt

    def key(self) -> Key:
        return (self.model, self.harness, self.task, self.scale, self.sample)

    @property
    def passed(self) -> bool:
        return self.reward == 1.0

    @classmethod
    def from_trajectory(cls, traj: Any, model: str, settings: str, seed: int, seconds: float) -> RolloutRecord:
        m = traj.metrics
        return cls(model=model, harness=traj.harness, task=traj.task_id, scale=traj.scale,
                   sample=traj.sample_idx, settings=settings, seed=seed, reward=traj.reward, score=traj.score,
                   termination=traj.termination, criteria=dict(traj.criteria),
                   verifier_error=traj.verifier_error, cause=traj.cause,
                   turns=len(traj.turns),
                   tool_calls=int(m.get("tool_calls_direct", 0) + m.get("tool_calls_program", 0)),
                   tool_output_tokens=traj.tool_output_tokens, context_tokens=traj.context_tokens,
                   response_tokens=sum(traj.loss_mask), metrics=dict(m), final_answer=traj.final_answer[-500:],
                   seconds=round(seconds, 3))


def rollout_seed(base: int, task: str, scale: str, sample: int) -> int:
    """A stable seed per (task, scale, sample): the same sample always samples the same way, and
    different harnesses and models see the same seeds (paired comparisons)."""
    digest = hashlib.sha256(f"{base}/{task}/{scale}/{sample}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFF_FFFF


def settings_digest(parts: dict[str, Any]) -> str:
    """A short digest of the settings that change what a rollout does."""
    return hashlib.sha256(msgspec.json.encode(parts, order="sorted")).hexdigest()[:12]


class RolloutCache:
    def __init__(self, path: str | Path, settings: str):
        self.path = Path(path)
        self.settings = settings
        self.records: dict[Key, RolloutRecord] = {}
        self.stale = 0  # records made under other settings, ignored
        self.torn = 0  # lines that do not decode (a write cut by a crash), skipped
        if self.path.exists():
            self._load()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = None
        self._encoder = msgspec.json.Encoder()

    def _load(self) -> None:
        decoder = msgspec.json.Decoder(RolloutRecord)
        for line in self.path.read_bytes().splitlines():
            if not line.strip():
                continue
            try:
                rec = decoder.decode(line)
            except msgspec.DecodeError:
                self.torn += 1
                continue
            if rec.settings != self.settings:
                self.stale += 1
                continue
            self.records[rec.key()] = rec
        if self.torn:
            log.warning("%s: skipped %d torn line(s)", self.path, self.torn)

    def __contains__(self, key: Key) -> bool:
        return key in self.records

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[RolloutRecord]:
        return iter(self.records.values())

    def get(self, key: Key) -> RolloutRecord | None:
        return self.records.get(key)

    def add(self, rec: RolloutRecord) -> None:
        """Append one record and flush it, so that a kill right after loses nothing."""
        if self._fh is None:
            self._fh = self.path.open("ab")
            if self._fh.tell() and not _ends_with_newline(self.path):
                self._fh.write(b"\n")  # a torn last line stays alone on its line
        self._fh.write(self._encoder.encode(rec) + b"\n")
        self._fh.flush()
        self.records[rec.key()] = rec

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, 2)
        return fh.read(1) == b"\n"
