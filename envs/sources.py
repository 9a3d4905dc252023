"""A config's `envs:` as sources of episodes: each a kind, its settings, its scales and a weight.

    envs:
      starter: {kind: library, weight: 3, args: {library: envs/starter_tasks}}
      harbor:  {kind: harbor, weight: 1, args: {paths: [bench/harbor-example]}}

`resolve_sources` lists every source's (task, scale) references through its kind (envs/kinds.py),
with every error a ConfigError before anything starts. Training draws a source by `weight`, then a
task of it, then a scale by the source's `scales` weights (actors/rollout_manager.SourceSampler);
evaluation sweeps, the difficulty filter and `collect` run each source's references. A weight of 0
is a source that is evaluated and filtered but never trained on.

A config without `envs:` has one source named "tasks": the task library of its `tasks:` section
(schema/config.TrainConfig.sources), so configs and checkpoints from before `envs:` keep working.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from envs.kinds import EnvKind, ListContext, decode_args, kind_named
from schema.config import SourceSpec
from schema.load import ConfigError
from schema.records import EnvRef


@dataclass
class Source:
    """One source, listed: `refs` are the (task, scale) pairs that run, in the kind's order."""

    name: str
    kind: EnvKind[Any, Any]
    weight: float
    scale_weights: dict[str, float]  # the scales that run, with their sampling weight (all > 0)
    refs: list[EnvRef]
    _index: dict[tuple[str, str], EnvRef] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index = {(r.task_id, r.scale): r for r in self.refs}

    @property
    def task_ids(self) -> list[str]:
        """Its tasks in the order the kind lists them (each once)."""
        return list(dict.fromkeys(r.task_id for r in self.refs))

    @property
    def scales(self) -> list[str]:
        return list(dict.fromkeys(r.scale for r in self.refs))

    def scales_of(self, task_id: str) -> list[str]:
        return [s for s in self.scale_weights if (task_id, s) in self._index]

    def ref(self, task_id: str, scale: str) -> EnvRef | None:
        return self._index.get((task_id, scale))


def resolve_source(name: str, spec: SourceSpec, say: Callable[[str], None] = print) -> Source:
    kind = kind_named(spec.kind, f"envs.{name}.kind")
    if spec.weight < 0:
        raise ConfigError(f"envs.{name}.weight: must be >= 0 (0: evaluated, never trained on), got {spec.weight}")
    refs = list(kind.refs(decode_args(kind, spec.args, name), ListContext(name, say)))
    listed = list(dict.fromkeys(r.scale for r in refs))
    if spec.scales:
        unknown = [s for s in spec.scales if s not in listed]
        if unknown:
            raise ConfigError(f"envs.{name}.scales: {unknown} are not scales of this source (it has "
                              f"{', '.join(listed)})")
        weights = {s: spec.scales[s] for s in listed if spec.scales.get(s, 0) > 0}  # in the kind's order
        if not weights:
            raise ConfigError(f"envs.{name}.scales: no scale has a positive weight")
    else:
        weights = {s: 1.0 for s in listed}
    refs = [r for r in refs if r.scale in weights]
    if not refs:
        raise ConfigError(f"envs.{name}: lists no task")
    return Source(name, kind, spec.weight, weights, refs)


def resolve_sources(specs: dict[str, SourceSpec], only: list[str] | None = None,
                    say: Callable[[str], None] = print, where: str = "envs") -> list[Source]:
    """The sources `specs` names (only those in `only` when it is given), listed."""
    unknown = [n for n in only or [] if n not in specs]
    if unknown:
        raise ConfigError(f"{where}: no source named {unknown} in envs: (there are {', '.join(specs) or 'none'})")
    return [resolve_source(n, s, say) for n, s in specs.items() if not only or n in only]


def check_trainable(sources: list[Source]) -> list[Source]:
    """The sources training draws from (weight > 0), each of a kind whose ground truth an episode
    cannot read (envs/kinds.py): training on a benchmark whose answers are in the model's reach would
    teach it to read them."""
    train = [s for s in sources if s.weight > 0]
    if not train:
        raise ConfigError("envs: no source has a positive weight: nothing to train on")
    exposed = [f"{s.name} ({s.kind.name})" for s in train if not s.kind.ground_truth_hidden]
    if exposed:
        raise ConfigError(f"envs: {', '.join(exposed)}: this kind does not keep its ground truth out of an "
                          "episode's reach (EnvKind.ground_truth_hidden), so it is evaluated only; give it weight 0")
    return train


#: the fields of an environment reference that arrives from data (a host framework's dataset row, a
#: task list): names only. Everything else a reference holds (interpreters, binaries, folders, judge
#: endpoints and key names) comes from the sources of the process that opens it (Catalog).
ROW_FIELDS = ("kind", "source", "task", "scale")
#: the longest name a row's field may hold (a task id, a source's name)
MAX_ROW_NAME = 512


def row_document(ref: EnvRef, source: str) -> dict[str, str]:
    """`ref` of the source called `source` as the names a dataset row carries (ROW_FIELDS)."""
    from envs.kinds import kind_of

    return {"kind": kind_of(ref).name, "source": source, "task": ref.task_id, "scale": ref.scale}


def row_from_json(text: Any, where: str = "env") -> dict[str, Any]:
    """A row's environment written as JSON text (a verifiers task's `env`), decoded under a size cap
    and refusing what is not a JSON object (a ConfigError naming `where`)."""
    if not isinstance(text, str) or len(text) > MAX_ROW_NAME * 8:
        raise ConfigError(f"{where}: not a row's environment (JSON text of at most {MAX_ROW_NAME * 8} characters)")
    try:
        doc = msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise ConfigError(f"{where}: not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: not a row's environment: a JSON object of {', '.join(ROW_FIELDS)}")
    return doc


def row_names(doc: Any, where: str = "env") -> dict[str, str]:
    """A row's names, checked: a mapping of ROW_FIELDS to strings (`source` may be empty). A field a
    reference would carry from the operator's config (`python`, `pg_bin`, `checkout`,
    `judge_base_url`, ...) is refused by name: data names a task; it never chooses what the host runs,
    reads or contacts."""
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: not an environment row: expected {{{', '.join(ROW_FIELDS)}}}, got "
                          f"{type(doc).__name__}")
    extra = [str(k)[:80] for k in doc if k not in ROW_FIELDS]
    if extra:
        raise ConfigError(f"{where}.{extra[0]}: a row names its environment only ({', '.join(ROW_FIELDS)}); "
                          f"{extra[0]!r} and every other setting come from the sources of the process that runs it "
                          "(rewrite the rows with this version's dataset builder)")
    names = {}
    for key in ROW_FIELDS:
        value = doc.get(key, "" if key == "source" else None)
        if not isinstance(value, str) or len(value) > MAX_ROW_NAME or (key != "source" and not value):
            raise ConfigError(f"{where}.{key}: must be a name (a string of 1 to {MAX_ROW_NAME} characters)")
        names[key] = value
    return names


class Catalog:
    """The environments a process opens from data: every (task, scale) of the operator's sources.

    A row names a kind, a task and a scale (and the source it was written from); the reference it
    opens is the one the operator's own source lists for them, with that source's settings. A row
    naming what no source lists is refused, so a downloaded dataset reaches only what the operator
    configured."""

    def __init__(self, sources: list[Source]):
        self.sources = {s.name: s for s in sources}
        self._by: dict[tuple[str, str, str], list[tuple[str, EnvRef]]] = {}
        for s in sources:
            for r in s.refs:
                self._by.setdefault((s.kind.name, r.task_id, r.scale), []).append((s.name, r))

    def resolve(self, doc: Any, where: str = "env") -> EnvRef:
        """The operator's reference for a row's names (row_names); a ConfigError naming `where` when
        the row is not names only, or names what no source lists (or more than one, without `source`)."""
        n = row_names(doc, where)
        found = self._by.get((n["kind"], n["task"], n["scale"]), [])
        if n["source"]:
            found = [f for f in found if f[0] == n["source"]] or (
                [] if n["source"] in self.sources else found)  # a source renamed by the operator: by kind alone
        if len(found) == 1:
            return found[0][1]
        what = f"{n['kind']} task {n['task']!r} at scale {n['scale']!r}"
        if not found:
            raise ConfigError(f"{where}: no source of this process lists the {what} (its sources: "
                              f"{', '.join(self.sources) or 'none'}; name the config that lists it in the host's "
                              "progagent settings: config, sources or library)")
        raise ConfigError(f"{where}: the {what} is listed by the sources {', '.join(f[0] for f in found)}: the row "
                          "must name one (source)")
