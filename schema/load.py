"""YAML files plus `dotted.key=value` overrides, decoded into msgspec Structs with clear errors.

One reader for every config of the project (training, eval/filter sections, synthesis). Overrides
are parsed as YAML (numbers, booleans, lists); unknown keys and wrong types fail with the path of
the field (msgspec's message) and the file's name, before anything starts.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
import yaml

if TYPE_CHECKING:
    from schema.config import TrainConfig

T = TypeVar("T")
S = TypeVar("S")


class ConfigError(ValueError):
    """A config that cannot be used; the message names the file and the field."""


def _set(tree: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    for k in keys[:-1]:
        node = node.setdefault(k, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {dotted!r}: {k!r} is not a section")
    node[keys[-1]] = value


def read_tree(path: str | Path | None, overrides: list[str] | None = None) -> dict[str, Any]:
    """The file's mapping (empty without a file) with the overrides applied."""
    tree: dict[str, Any] = {}
    if path is not None:
        try:
            tree = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: cannot read the config: {exc}") from exc
        if not isinstance(tree, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections")
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"override {item!r}: expected key.path=value")
        _set(tree, key.strip(), yaml.safe_load(raw))
    return tree


#: fields that existed once, and where what they meant went (the error of a config that still sets one)
GONE = {
    "buffer": "the section is `rollout` now (group_size, max_staleness, capacity, max_attempts)",
    "learner_ranks": "derived: learner.megatron's TP x PP x CP x DP, or learner.fsdp_ranks for torch",
    "library_root": "the library is tasks.library_root (every request names it)",
    "model": "the generators serve model.path (or the model an evaluation names)",
    "harbor": "Harbor tasks are a source now: envs: {harbor: {kind: harbor, args: {paths: [...]}}} (or --harbor PATH)",
    "loca": "LOCA-bench is a source now: envs: {loca: {kind: loca, args: {checkout: ..., presets: [...]}}} "
            "(or --loca CHECKOUT; its settings are envs.loca.args.*)",
    "toolathlon": "Toolathlon is a source now: envs: {toolathlon: {kind: toolathlon, args: {checkout: ...}}} "
                  "(or --toolathlon CHECKOUT)",
    "mcpmark": "MCPMark is a source now: envs: {mcpmark: {kind: mcpmark, args: {checkout: ..., data_dir: ...}}} "
               "(or --mcpmark CHECKOUT; its settings are envs.mcpmark.args.*)",
    "scales": "a sweep runs each source at its own scales: envs.<name>.scales (the library of `tasks:`: "
              "tasks.scales); sweep.envs=[NAMES] picks the sources (e.g. leaves the library out)",
}


def decode(tree: Any, cls: type[T], path: str | Path | None = None, section: str | None = None) -> T:
    """`tree` as `cls`; a `section` name is put into the error's field path (`$.filter.samples`)."""
    try:
        return msgspec.convert(tree, cls, strict=False)
    except msgspec.ValidationError as exc:
        msg = str(exc).replace("`$", f"`$.{section}") if section else str(exc)
        for field, where in GONE.items():
            if f"unknown field `{field}`" in msg:
                msg += f" ({where})"
        if "$.train.reward`" in msg and "got `str`" in msg:  # the form before reward terms
            msg += (" (the reward is terms with weights now: train.reward.terms={binary: 1.0}, or {score: 1.0}; "
                    "see rollout/rewards.py)")
        raise ConfigError(f"{path or 'config'}: {msg}") from exc


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """The run configuration: a YAML file (None: the defaults) plus `dotted.key=value` overrides."""
    from schema.config import TrainConfig

    return decode(read_tree(path, overrides), TrainConfig, path)


def load_sections(path: str | Path | None, overrides: list[str] | None, section: str,
                  cls: type[S]) -> tuple[TrainConfig, S]:
    """The training config (fabric, tasks, model, W&B, Ray) plus one extra top-level section of the
    same YAML file; `section.key=value` overrides reach the extra section."""
    from schema.config import TrainConfig

    tree = read_tree(path, overrides)
    extra = tree.pop(section, None) or {}
    return decode(tree, TrainConfig, path), decode(extra, cls, path, section)


def argument(kind: Any) -> Callable[[str], Any]:
    """An argparse `type=` that decodes a command-line value as `kind` (a bounded alias of
    schema/config.py, such as `Count`), so that a flag keeps the bounds its config field keeps: a bad
    value is a usage error naming the flag, before anything starts, not a hang (no episode ever runs
    with a concurrency of 0) or a failure after the work."""

    def parse(text: str) -> Any:
        try:
            return msgspec.convert(yaml.safe_load(text), kind, strict=False)
        except (msgspec.ValidationError, yaml.YAMLError) as exc:
            raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None

    return parse

