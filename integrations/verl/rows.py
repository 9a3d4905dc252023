"""The ProgAgent part of a verl dataset row: which environment, through which harness.

    extra_info = {"index": 7, "progagent": '{"env": {"kind": "library", "source": "starter",
                                                      "task": "hr_leave_decisions", "scale": "v0"}, "harness": "ptc"}'}

verl carries a row's `extra_info` to the agent loop untouched. The row names its environment only
(envs/sources.ROW_FIELDS): a dataset is data a user downloads, so what the host runs, reads or
contacts for it (interpreters, folders, judge endpoints) comes from the sources the agent loop was
given (its `config`, `sources` or `library` settings: envs/sources.Catalog), never from the row.
The row is one JSON string, so that rows of every kind share one parquet column.
"""

from __future__ import annotations

from typing import Any

import msgspec

from envs.sources import Catalog, row_document
from schema.load import ConfigError
from schema.records import EnvRef

#: the key of extra_info that holds the row
EXTRA_INFO_KEY = "progagent"
#: the longest row accepted (names and a harness: far below this)
MAX_ROW_CHARS = 8192


class EpisodeRow(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    env: dict[str, Any]  # envs/sources.row_document: kind, source, task, scale
    harness: str = ""  # "" = the agent loop's own harness setting
    source: str = ""  # the ProgAgent source the row came from (metrics by source)

    @classmethod
    def of(cls, ref: EnvRef, harness: str = "", source: str = "") -> EpisodeRow:
        return cls(row_document(ref, source), harness, source)

    def ref(self, catalog: Catalog) -> EnvRef:
        """The reference the agent loop's own sources list for the row's names (a ConfigError when the
        row carries more than names, or names what they do not list)."""
        return catalog.resolve(self.env, f"extra_info.{EXTRA_INFO_KEY}.env")

    def names(self) -> tuple[str, str]:
        """(task, scale) as the row names them, for a failed sample's record (never trusted further)."""
        return tuple(str(self.env.get(k, "?"))[:200] for k in ("task", "scale"))  # type: ignore[return-value]

    def encode(self) -> str:
        return msgspec.json.encode(self).decode()

    @classmethod
    def from_extra_info(cls, extra_info: Any, default_harness: str = "ptc") -> EpisodeRow:
        """The row of a verl sample's `extra_info` (its harness filled in); a ConfigError saying what
        is missing (a dataset not written by integrations/verl/dataset.py)."""
        text = extra_info.get(EXTRA_INFO_KEY) if isinstance(extra_info, dict) else None
        if not isinstance(text, str):
            raise ConfigError(f"a row for the progagent agent loop needs extra_info.{EXTRA_INFO_KEY} (write the "
                              "dataset with `python -m integrations.verl.dataset`)")
        if len(text) > MAX_ROW_CHARS:
            raise ConfigError(f"extra_info.{EXTRA_INFO_KEY}: {len(text)} characters, more than a row's "
                              f"{MAX_ROW_CHARS}")
        try:
            row = msgspec.json.decode(text, type=cls)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
            raise ConfigError(f"extra_info.{EXTRA_INFO_KEY}: {exc}") from None
        if row.harness not in ("", "ptc", "dtc", "hybrid"):
            raise ConfigError(f"extra_info.{EXTRA_INFO_KEY}.harness: {row.harness[:40]!r} is not ptc, dtc or hybrid")
        return row if row.harness else msgspec.structs.replace(row, harness=default_harness)
