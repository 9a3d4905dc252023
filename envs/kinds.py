"""Environment kinds register themselves here: the one place a driver, an env worker or a judge finds
how to list and open an environment of any kind.

    from envs.kinds import EnvKind, register        # a kind's own module (envs/<pkg>/kind.py)
    register(MyKind())                              # name, ref_type, args_type, refs(), load()
    env = load_env(ref)                             # any process: the kind of type(ref) opens it

A kind is one registry entry (`EnvKind`): its `name` (a source's `kind:` in a config's `envs:`),
its reference struct (a tagged `schema.records.EnvRef` subclass naming one task at one scale, sent to
env workers and judges), its settings struct (a source's `args:`), how it lists a source's tasks and
scales (`refs`) and how it opens one (`load`). Adding a kind touches only that kind's package: nothing
here, in `schema/` or in `launch/` names a kind.

How a process finds a kind (`kind_named`, `kind_of`): one registered in this process (`register`,
e.g. by a test or a notebook); one of this checkout's own (a module named `kind.py` anywhere under
`envs/`, imported on first use); one an installed package declares under the entry-point group
`progagent.env_kinds` (its module registers when imported). An env worker or a judge is sent the
reference, and unpickling it imports the module that defines its struct - the kind's own module,
which registers it there too. So a kind's reference struct and its `register` call live in one
module, which imports neither Ray nor torch nor the kind's episode code (its `load` imports that):
a judge process opens only what it judges.

Training on a kind is only sound when an episode cannot read what it is judged against (expected
answers, the evaluator's code, hidden state): `ground_truth_hidden` says the kind's sandbox keeps
them out of the program's reach, and training refuses a kind that does not say so (evaluation,
which trains nothing, runs it).
"""

from __future__ import annotations

import importlib
import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import msgspec

from schema.load import ConfigError
from schema.records import EnvRef

if TYPE_CHECKING:
    from envs.episode_env import EpisodeEnv

log = logging.getLogger(__name__)

RefT = TypeVar("RefT", bound=EnvRef)
ArgsT = TypeVar("ArgsT", bound=msgspec.Struct)
#: the entry-point group through which an installed package adds kinds
ENTRY_POINTS = "progagent.env_kinds"
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


@dataclass
class ListContext:
    """What a kind's `refs` may use besides its settings: the source's name (for error messages:
    `envs.<source>.args`) and where to say what a slow setup is doing (making a benchmark's
    environment)."""

    source: str
    say: Callable[[str], None] = print


@dataclass
class LoadContext:
    """What a kind's `load` may use besides the reference: a per-process scratch where environments
    are built once and reused (`cache`: the library's EnvironmentCache; a kind may ignore it) and the
    deadline of a verifier (None: the kind's own)."""

    cache: Any = None
    judge_timeout_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class EnvKind(Protocol[RefT, ArgsT]):
    """One kind of episode environment (module docstring)."""

    #: a source's `kind:`; lower-case letters, digits and _
    name: str
    #: its reference struct (frozen, tagged, a subclass of schema.records.EnvRef)
    ref_type: type[RefT]
    #: a source's `args:`, decoded with unknown fields refused
    args_type: type[ArgsT]
    #: the episode cannot read what it is judged against (training refuses a kind without it)
    ground_truth_hidden: bool
    #: its environments carry a reference program (an oracle) for cold-start SFT data
    has_oracle: bool

    def refs(self, args: ArgsT, ctx: ListContext) -> Sequence[RefT]:
        """Every (task, scale) the source's settings name, in a stable order; a ConfigError (naming
        `envs.<source>.args`) when they name nothing or what is not there, before anything starts."""
        ...

    def load(self, ref: RefT, ctx: LoadContext) -> EpisodeEnv:
        """The environment `ref` names, as this process sees it (raises when it cannot be loaded)."""
        ...


_kinds: dict[str, EnvKind[Any, Any]] = {}
_by_ref: dict[type, EnvKind[Any, Any]] = {}
_lock = threading.Lock()
_discovered = False


def register(kind: EnvKind[RefT, ArgsT]) -> EnvKind[RefT, ArgsT]:
    """Add `kind` to this process's registry (returned, to register at definition). Its shape is
    checked here, so a kind that is not one fails when its module is imported, not mid-run."""
    problems = []
    if not isinstance(kind, EnvKind):
        missing = [a for a in ("name", "ref_type", "args_type", "ground_truth_hidden", "has_oracle", "refs", "load")
                   if not hasattr(kind, a)]
        problems.append(f"it lacks {', '.join(missing)}")
    else:
        if not isinstance(kind.name, str) or not _NAME.match(kind.name):
            problems.append(f"name {kind.name!r} is not lower-case letters, digits and _ (at most 40)")
        if not (isinstance(kind.ref_type, type) and issubclass(kind.ref_type, EnvRef)
                and kind.ref_type.__struct_config__.frozen and kind.ref_type.__struct_config__.tag is not None):
            problems.append("ref_type is not a frozen, tagged subclass of schema.records.EnvRef")
        if not (isinstance(kind.args_type, type) and issubclass(kind.args_type, msgspec.Struct)):
            problems.append("args_type is not a msgspec Struct")
        if not (callable(kind.refs) and callable(kind.load)):
            problems.append("refs and load must be methods")
    if problems:
        raise TypeError(f"not an environment kind: {kind!r}: {'; '.join(problems)}")
    with _lock:
        old = _kinds.get(kind.name)
        if old is not None and type(old).__qualname__ != type(kind).__qualname__:
            raise ValueError(f"environment kind {kind.name!r} is registered already (by {type(old).__module__})")
        clash = _by_ref.get(kind.ref_type)
        if clash is not None and clash.name != kind.name:
            raise ValueError(f"{kind.ref_type.__name__} is the reference of kind {clash.name!r} already")
        _kinds[kind.name] = kind
        _by_ref[kind.ref_type] = kind
    return kind


def unregister(name: str) -> None:
    """Remove a kind (tests that define one)."""
    with _lock:
        kind = _kinds.pop(name, None)
        if kind is not None:
            _by_ref.pop(kind.ref_type, None)


def _discover() -> None:
    """Import this checkout's kinds (envs/**/kind.py) and the installed packages' (entry points), once."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("kind.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        importlib.import_module(".".join(rel.parts))
    for ep in entry_points(group=ENTRY_POINTS):
        try:
            ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plug-in must not hide the others
            log.warning("environment kind plug-in %s failed to load: %s", ep.value, exc)


def kinds() -> dict[str, EnvKind[Any, Any]]:
    """Every kind this process can find, by name."""
    _discover()
    return dict(_kinds)


def kind_named(name: str, where: str = "kind") -> EnvKind[Any, Any]:
    """The kind called `name`; a ConfigError naming `where` and the known kinds when there is none."""
    if name not in _kinds:
        _discover()
    try:
        return _kinds[name]
    except KeyError:
        raise ConfigError(f"{where}: no environment kind {name!r} (known: {', '.join(sorted(_kinds))}; a kind of "
                          f"your own registers itself: envs.kinds.register)") from None


def kind_of(ref: EnvRef) -> EnvKind[Any, Any]:
    """The kind whose reference `ref` is."""
    for cls in type(ref).__mro__:
        if cls in _by_ref:
            return _by_ref[cls]
    _discover()
    for cls in type(ref).__mro__:
        if cls in _by_ref:
            return _by_ref[cls]
    raise TypeError(f"not the reference of a registered environment kind: {ref!r}")


def load_env(ref: EnvRef, cache: Any = None, *, judge_timeout_s: float | None = None) -> EpisodeEnv:
    """The environment `ref` names, opened by its kind. `cache`: where environments are built once
    (the library's EnvironmentCache; a new temporary one when None)."""
    return kind_of(ref).load(ref, LoadContext(cache=cache, judge_timeout_s=judge_timeout_s))


def decode_args(kind: EnvKind[Any, ArgsT], args: dict[str, Any], source: str) -> ArgsT:
    """A source's `args:` as its kind's settings; a ConfigError names `envs.<source>.args.<field>`."""
    try:
        return msgspec.convert(args, kind.args_type, strict=False)
    except (msgspec.ValidationError, TypeError, ValueError) as exc:
        raise ConfigError(f"envs.{source}.args ({kind.name}): {str(exc).replace('`$', f'`$.envs.{source}.args')}") \
            from None


def operator_fields(ref_type: type) -> tuple[str, ...]:
    """The fields of a reference struct that only the operator's config sets (a class attribute
    OPERATOR_FIELDS, e.g. HarborRef.url_server_hosts: which hosts a task's server may reach)."""
    fields = getattr(ref_type, "OPERATOR_FIELDS", ())
    return tuple(fields) if isinstance(fields, tuple) else ()


def ref_document(ref: EnvRef) -> dict[str, Any]:
    """`ref` as plain data that names its kind, {"kind": NAME, "ref": {...}}: what a host framework's
    dataset row carries (integrations/), whatever the kind. Without its operator fields
    (`operator_fields`): a row is data anyone may write, so it never carries the operator's consent."""
    doc = msgspec.to_builtins(ref)
    for name in operator_fields(type(ref)):
        doc.pop(name, None)
    return {"kind": kind_of(ref).name, "ref": doc}


def ref_from_document(doc: Any, where: str = "ref") -> EnvRef:
    """The reference `ref_document` made; a ConfigError naming `where` when it is not one (a row
    written by another version, or by hand), or when it sets an operator field (`operator_fields`):
    such a reference has the fields' defaults (a Harbor task's URL servers are then refused)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str) or "ref" not in doc:
        raise ConfigError(f'{where}: not an environment reference: expected {{"kind": NAME, "ref": {{...}}}}')
    kind = kind_named(doc["kind"], f"{where}.kind")
    carried = [f for f in operator_fields(kind.ref_type) if isinstance(doc["ref"], dict) and f in doc["ref"]]
    if carried:  # the operator's setting (a source's args), never a row's: refused, not silently dropped
        raise ConfigError(f"{where}.ref: {', '.join(carried)} is the operator's setting (the source's args in the "
                          "config), which a dataset row cannot carry")
    try:
        return msgspec.convert(doc["ref"], kind.ref_type)
    except (msgspec.ValidationError, TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: not a {kind.name} reference: {exc}") from None
