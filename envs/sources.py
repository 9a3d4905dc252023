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
