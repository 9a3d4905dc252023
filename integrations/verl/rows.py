"""The ProgAgent part of a verl dataset row: which environment, through which harness.

    extra_info = {"index": 7, "progagent": '{"env": {"kind": "library", "ref": {...}}, "harness": "ptc", ...}'}

verl carries a row's `extra_info` to the agent loop untouched. The row is stored as one JSON string so
that rows of different kinds (whose references have different fields: envs/kinds.ref_document) share
one parquet column without a schema of their union.
"""

from __future__ import annotations

from typing import Any

import msgspec

from envs.kinds import ref_document, ref_from_document
from schema.load import ConfigError
from schema.records import EnvRef

#: the key of extra_info that holds the row
EXTRA_INFO_KEY = "progagent"


class EpisodeRow(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    env: dict[str, Any]  # envs/kinds.ref_document
    harness: str = ""  # "" = the agent loop's own harness setting
    source: str = ""  # the ProgAgent source the row came from (metrics by source)

    @classmethod
    def of(cls, ref: EnvRef, harness: str = "", source: str = "") -> EpisodeRow:
        return cls(ref_document(ref), harness, source)

    def ref(self) -> EnvRef:
        return ref_from_document(self.env, f"extra_info.{EXTRA_INFO_KEY}.env")

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
        try:
            row = msgspec.json.decode(text, type=cls)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise ConfigError(f"extra_info.{EXTRA_INFO_KEY}: {exc}") from None
        return row if row.harness else msgspec.structs.replace(row, harness=default_harness)
