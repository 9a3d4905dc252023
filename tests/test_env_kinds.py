"""Environment kinds as plug-ins (envs/kinds.py): a kind defined in this file, and nowhere in the
project, trains two GSPO steps and runs a sweep on the actor fabric; the registry refuses what is not
a kind; sources mix by their weights; a kind whose ground truth is in an episode's reach is evaluated
but never trained on."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import msgspec
import msgspec.inspect
import pytest

from envs.episode_env import EnvLimits, OneStep, restore, snapshot
from envs.kinds import ListContext, LoadContext, kind_named, kinds, load_env, register, unregister
from envs.sources import check_trainable, resolve_sources
from schema.config import SourceSpec
from schema.load import ConfigError, load_config
from schema.records import EnvRef, Verdict
from tests.conftest import ROOT

# ---------------------------------------------------------------- the toy kind: one task, one tool


class ToyRef(EnvRef, frozen=True, tag="toy_sum"):
    """The toy's one task: add two numbers with its `add` tool."""

    a: int
    b: int

    @property
    def task_id(self) -> str:
        return f"sum_{self.a}_{self.b}"

    @property
    def scale(self) -> str:
        return "toy"


class ToyArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    a: int = 17
    b: int = 25


class ToyEnv(OneStep):
    """The episode contract (envs/episode_env.EpisodeEnv) in forty lines: an in-process MCP server with
    one tool that records each sum in the episode's folder, the folder shipped to a judge, a verdict
    that needs both the recorded sum and the answer."""

    judge_timeout_s = 10.0
    judged_in_place = False
    limits = EnvLimits(max_turns=3)

    def __init__(self, ref: ToyRef):
        self.ref = ref
        self.instruction = f"Add {ref.a} and {ref.b} with the add tool and answer with the sum."

    async def open(self, runtime):
        from mcp.server.mcpserver import MCPServer

        from envs.runtime.upstream import Upstream, UpstreamSpec

        async def prepare(env_root: Path) -> list:
            server = MCPServer("toy")

            @server.tool()
            def add(a: int, b: int) -> int:
                """a + b"""
                (env_root / "sums").mkdir(exist_ok=True)
                (env_root / "sums" / f"{a}+{b}").write_text(str(a + b))
                return a + b

            return [Upstream(UpstreamSpec("toy"), server_object=server)]

        return await runtime.open_episode(prepare)

    def snapshot(self, state) -> bytes:
        sums = Path(state.env_root) / "sums"
        return snapshot([(sums, "sums")] if sums.is_dir() else [])

    def judge(self, state, answer: str) -> Verdict:
        total = str(self.ref.a + self.ref.b)
        recorded = Path(getattr(state, "env_root", state)) / "sums" / f"{self.ref.a}+{self.ref.b}"
        return Verdict.of({"added_with_the_tool": recorded.is_file() and recorded.read_text() == total,
                           "answer": total in answer})

    def judge_canary(self) -> None:
        return None

    def judge_untouched(self, answer: str) -> None:
        return None

    def cheat_probes(self) -> dict:
        return {}

    def judge_shipped(self, state: bytes, answer: str) -> Verdict:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            return self.judge(restore(state, tmp), answer)


class ToyKind:
    name = "toy_sum"
    ref_type = ToyRef
    args_type = ToyArgs
    ground_truth_hidden = True
    has_oracle = False

    def refs(self, args: ToyArgs, ctx: ListContext) -> list[ToyRef]:
        return [ToyRef(args.a, args.b)]

    def load(self, ref: ToyRef, ctx: LoadContext) -> ToyEnv:
        return ToyEnv(ref)


register(ToyKind())  # at import: an env worker or judge that unpickles a ToyRef imports this module


def toy_script() -> list[str]:
    code = "print(tools['add'](a=17, b=25))"
    call = json.dumps({"name": "programmatic_tool_call", "arguments": {"code": code}})
    return [f"<tool_call>\n{call}\n</tool_call>", "ANSWER: 42"]


TOY = ["envs.toy.kind=toy_sum", "wandb.mode=disabled", "fabric.generator.backend=replay",
       f"fabric.generator.script={json.dumps(toy_script())}",
       "fabric.env_worker.limits={max_turns: 3, max_new_tokens: 256, max_context_tokens: 4096}",
       "fabric.env_worker.runtime={warm_pool: 1, program_timeout_s: 30}", "fabric.env_worker.concurrency=4",
       "rollout.group_size=2", "sft.enabled=false", "ray.num_cpus=4"]


def test_a_kind_defined_in_a_test_file_trains_two_gspo_steps_and_runs_a_sweep(ray_session, tmp_path):
    """No project file names the toy: the driver finds it in the registry, env workers and the judge
    (other processes) find it by unpickling its reference."""
    from launch.eval import sweep
    from launch.train import train
    from schema.config import SweepSettings
    from schema.load import load_sections

    cfg = load_config(None, [*TOY, f"run.out_dir={tmp_path}", "train.steps=2", "train.groups_per_step=2",
                             "train.checkpoint_every=0", "eval.before=false", "eval.samples=2",
                             "learner.loss.filter_equal_reward_groups=false"])
    assert list(cfg.sources()) == ["toy"]  # no `tasks:` section: the toy is the only source
    run = asyncio.run(train(cfg))
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if r["phase"] == "train"]
    assert [r["step"] for r in steps] == [1, 2]
    assert all(r["source/toy/reward"] == 1.0 and r["rollout/reward"] == 1.0 for r in steps)  # judged on a judge
    assert steps[-1]["rollout/groups_trained/toy"] == 4 and steps[-1]["rollout/groups_failed"] == 0
    after = [r for r in rows if r["phase"] == "eval"][0]
    assert after["eval_after/source/toy/episodes"] == 2 and after["eval_after/failed"] == 0
    assert "| toy | 100% |" in (run / "report.md").read_text()

    out = tmp_path / "sweep"
    cfg, st = load_sections(None, [*TOY, f"sweep.out_dir={out}", "sweep.harnesses=[ptc, dtc]", "sweep.samples=2",
                                   "sweep.models=[tiny]"], "sweep", SweepSettings)
    asyncio.run(sweep(cfg, st))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stats"]["failed"] == [] and summary["stats"]["run"] == 4
    assert summary["sources"]["toy"] == {"kind": "toy_sum", "scales": ["toy"], "tasks": ["sum_17_25"],
                                         "refs": [{"type": "toy_sum", "a": 17, "b": 25}]}
    by = {r["harness"]: r for r in summary["overall"]}
    assert by["ptc"]["reward"] == 1.0 and by["dtc"]["reward"] == 0.0  # DTC has no programmatic_tool_call
    assert "| model | harness | toy |" in (out / "report.md").read_text()


def test_the_oracle_writes_turns_only_for_a_kind_with_an_oracle_program():
    """The oracle is one of an env worker's TurnWriters (rollout/teacher.OracleTurns): asked for an
    environment of a kind without an oracle program, it refuses and names the kind."""
    from rollout.teacher import OracleTurns
    from schema.records import SamplingParams

    env = load_env(ToyRef(1, 2), None)
    with pytest.raises(ValueError, match="kind 'toy_sum' have no oracle program"):
        asyncio.run(OracleTurns(tokenizer=None).plan(env, None, "ptc", SamplingParams()))


# ---------------------------------------------------------------- the registry


def test_the_registry_finds_every_kind_of_the_checkout_and_opens_a_reference_by_its_type():
    assert {"library", "harbor", "loca", "toolathlon", "mcpmark", "toy_sum"} <= set(kinds())
    assert kind_named("toy_sum").ref_type is ToyRef
    env = load_env(ToyRef(2, 3))
    assert isinstance(env, ToyEnv) and env.judge_shipped(snapshot([]), "ANSWER: 5").criteria == {
        "added_with_the_tool": False, "answer": True}
    with pytest.raises(ConfigError, match=r"envs.x.kind: no environment kind 'nope' \(known: .*harbor.*library"):
        kind_named("nope", "envs.x.kind")


#: the kinds this checkout ships (envs.kinds.OWN_KINDS lists their modules)
SHIPPED = {"library", "harbor", "loca", "toolathlon", "mcpmark", "mcpmark_postgres", "mcp_atlas"}


def _discover_in_copy(tmp_path: Path, plant) -> tuple[subprocess.CompletedProcess, Path]:
    """Discovery run in a fresh interpreter on a copy of the project's `envs` and `schema` in which
    `plant(root, marker)` put what it likes; the marker file exists when any planted code ran."""
    root = tmp_path / "copy"
    for package in ("envs", "schema"):
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    marker = tmp_path / "planted-code-ran"
    plant(root, marker)
    code = "import json; from envs.kinds import kinds; print(json.dumps(sorted(kinds())))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(tmp_path / "site")])}
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done, marker


def _payload(marker: Path) -> str:
    return f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"


def test_a_kind_py_in_task_data_under_envs_is_never_imported(tmp_path):
    """Kinds come from code the operator installed: the project's own listed modules and entry points.
    A Harbor task folder kept under envs/ (third-party data) holding a `kind.py`, directly or through
    a linked folder, is never imported; every shipped kind is still found."""
    def plant(root: Path, marker: Path) -> None:
        for where in ("starter_harbor/warehouse-restock/tests", "starter_harbor/third-party-task/environment",
                      "tasks/clinics_claim_denials"):
            (root / "envs" / where).mkdir(parents=True, exist_ok=True)
            (root / "envs" / where / "kind.py").write_text(_payload(marker))
        outside = root.parent / "outside"
        outside.mkdir()
        (outside / "kind.py").write_text(_payload(marker))
        (root / "envs" / "starter_harbor" / "linked-task").symlink_to(outside, target_is_directory=True)

    done, marker = _discover_in_copy(tmp_path, plant)
    assert not marker.exists(), f"task data was imported as a kind: {marker.read_text()}"
    assert set(json.loads(done.stdout.splitlines()[-1])) == SHIPPED


def test_an_installed_kind_that_raises_or_exits_is_logged_and_the_others_are_found(tmp_path):
    """An entry point of the group progagent.env_kinds is imported (the operator installed it); one
    that raises, or calls sys.exit, when imported is a warning naming it, never the end of discovery
    or of the process: the plug-ins after it and the project's own kinds are still found."""
    def plant(root: Path, marker: Path) -> None:
        site = tmp_path / "site"
        (site / "kind_plugins-0.1.dist-info").mkdir(parents=True)
        (site / "kind_plugins-0.1.dist-info" / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: kind-plugins\nVersion: 0.1\n")
        (site / "kind_plugins-0.1.dist-info" / "entry_points.txt").write_text(
            "[progagent.env_kinds]\nbroken = broken_plugin\nexits = exiting_plugin\nfine = fine_plugin\n")
        (site / "broken_plugin.py").write_text(_payload(marker) + "raise RuntimeError('plug-in broke')\n")
        (site / "exiting_plugin.py").write_text(_payload(marker) + "raise SystemExit('plug-in exits')\n")
        (site / "fine_plugin.py").write_text(_payload(marker))

    done, marker = _discover_in_copy(tmp_path, plant)
    # installed code is what the operator chose: each is imported, in the order the package lists them
    assert marker.read_text().split() == ["broken_plugin", "exiting_plugin", "fine_plugin"]
    assert "broken_plugin failed to load: plug-in broke" in done.stderr
    assert "exiting_plugin failed to load: plug-in exits" in done.stderr
    assert set(json.loads(done.stdout.splitlines()[-1])) == SHIPPED


def test_every_kind_module_of_the_project_is_listed():
    """OWN_KINDS is the whole of the project's kinds: each `kind.py` of a Python package under envs/
    (folders with __init__.py; task data folders have none) is listed, and each registers its kind."""
    from envs.kinds import OWN_KINDS

    envs_dir = ROOT / "envs"
    found = set()
    for path in envs_dir.rglob("kind.py"):
        folders = path.relative_to(ROOT).parents
        if all((ROOT / f / "__init__.py").is_file() for f in folders if f != Path(".")):
            found.add(".".join(path.relative_to(ROOT).with_suffix("").parts))
    assert found == set(OWN_KINDS)
    assert {type(k).__module__ for k in kinds().values() if type(k).__module__.startswith("envs.")} == found


def test_every_shipped_reference_type_decodes_and_an_atlas_reference_round_trips_through_plain_data():
    """A reference travels as plain data (msgspec): every annotation of a shipped reference type resolves
    at run time, not only for a type checker; a dataset row names it (envs.sources.row_document) and the
    operator's sources give it back whole (Catalog)."""
    for kind in kinds().values():
        if type(kind).__module__.startswith("envs."):
            msgspec.inspect.type_info(kind.ref_type)  # NameError when an annotation names what is not imported
    from envs.benchmarks.atlas.checkout import AtlasTask
    from envs.benchmarks.atlas.kind import AtlasRef
    from envs.kinds import kind_named
    from envs.sources import Catalog, Source, row_document

    ref = AtlasRef(checkout="/co", task=AtlasTask("t1", "Sum the sales.", ("calculator_add",), "[]", ("calculator",)),
                   python="/py", node_dir="/node", judge_base_url="http://127.0.0.1:9", judge_model="m")
    assert msgspec.convert(msgspec.to_builtins(ref), AtlasRef) == ref
    row = json.loads(json.dumps(row_document(ref, "atlas")))
    assert row == {"kind": "mcp_atlas", "source": "atlas", "task": "t1", "scale": ref.scale}
    source = Source("atlas", kind_named("mcp_atlas"), 0.0, {ref.scale: 1.0}, [ref])
    assert Catalog([source]).resolve(row) == ref


class _Untagged(EnvRef, frozen=True):
    n: int


@pytest.mark.parametrize("broken,why", [
    (type("NoLoad", (), {"name": "no_load", "ref_type": ToyRef, "args_type": ToyArgs, "ground_truth_hidden": True,
                         "has_oracle": False, "refs": lambda self, a, c: []})(), "it lacks load"),
    (type("Untagged", (ToyKind,), {"name": "untagged", "ref_type": _Untagged})(), "frozen, tagged subclass"),
    (type("BadName", (ToyKind,), {"name": "Bad Name"})(), "is not lower-case"),
    (type("ArgsNotStruct", (ToyKind,), {"name": "args_dict", "args_type": dict})(), "args_type is not a msgspec"),
])
def test_what_is_not_a_kind_is_refused_when_it_registers(broken, why):
    with pytest.raises(TypeError, match=why):
        register(broken)


def test_a_second_kind_of_the_same_name_or_reference_is_refused():
    class Impostor(ToyKind):
        pass

    with pytest.raises(ValueError, match="registered already"):
        register(Impostor())
    other = type("OtherName", (ToyKind,), {"name": "toy_other"})()
    with pytest.raises(ValueError, match="is the reference of kind 'toy_sum'"):
        register(other)


def test_bad_source_settings_are_config_errors_naming_the_field():
    with pytest.raises(ConfigError, match=r"envs.toy.args \(toy_sum\).*unknown field `c`"):
        resolve_sources({"toy": SourceSpec("toy_sum", args={"c": 1})})
    with pytest.raises(ConfigError, match=r"envs.toy.scales: \['v0'\] are not scales of this source \(it has toy\)"):
        resolve_sources({"toy": SourceSpec("toy_sum", scales={"v0": 1.0})})
    with pytest.raises(ConfigError, match="envs.toy.weight: must be >= 0"):
        resolve_sources({"toy": SourceSpec("toy_sum", weight=-1)})
    with pytest.raises(ConfigError, match=r"sweep.envs: no source named \['nah'\]"):
        resolve_sources({"toy": SourceSpec("toy_sum")}, ["nah"], where="sweep.envs")
    with pytest.raises(ConfigError, match=r"envs.lib.args.tasks: unknown tasks \['nope'\]"):
        resolve_sources({"lib": SourceSpec("library", args={"library": "envs/starter_tasks", "tasks": ["nope"]})})


def test_a_kind_whose_ground_truth_is_in_reach_is_evaluated_but_never_trained_on():
    class Exposed(ToyKind):
        name = "toy_exposed"
        ground_truth_hidden = False
        ref_type = type("ExposedRef", (ToyRef,), {}, frozen=True, tag="toy_exposed")

        def refs(self, args, ctx):
            return [self.ref_type(args.a, args.b)]

    register(Exposed())
    try:
        sources = resolve_sources({"toy": SourceSpec("toy_sum"), "peek": SourceSpec("toy_exposed")})
        assert [s.name for s in sources] == ["toy", "peek"]  # a sweep runs both
        with pytest.raises(ConfigError, match=r"peek \(toy_exposed\): this kind does not keep its ground truth"):
            check_trainable(sources)
        assert [s.name for s in check_trainable(resolve_sources({
            "toy": SourceSpec("toy_sum"), "peek": SourceSpec("toy_exposed", weight=0)}))] == ["toy"]
    finally:
        unregister("toy_exposed")


def test_every_kind_of_the_checkout_keeps_its_ground_truth_out_of_reach():
    """The precondition of training on a benchmark (its containment: tests/test_attack_external_tasks.py,
    tests/test_attack_harbor.py): every shipped kind declares it, so that a new one must too."""
    shipped = {n: k for n, k in kinds().items() if type(k).__module__.startswith("envs.")}
    assert set(shipped) == {"library", "harbor", "loca", "toolathlon", "mcpmark", "mcpmark_postgres",
                            "mcp_atlas"}
    assert all(k.ground_truth_hidden is True for k in shipped.values())
    assert {n for n, k in shipped.items() if k.has_oracle} == {"library"}


# ---------------------------------------------------------------- sources: the old keys, mixtures


def test_a_config_without_envs_is_its_tasks_section_and_old_sweep_keys_name_the_new_ones():
    cfg = load_config(Path(__file__).parents[1] / "configs" / "local.yaml")
    assert cfg.sources() == {"tasks": SourceSpec("library", 1.0, {"v0": 1.0, "v1": 1.0, "v2": 1.0, "v3": 1.0},
                                                 {"library": "envs/starter_tasks", "tasks": []})}
    both = load_config(Path(__file__).parents[1] / "configs" / "local.yaml", ["envs.toy.kind=toy_sum"])
    assert list(both.sources()) == ["tasks", "toy"]
    with pytest.raises(ConfigError, match="keep one of them"):
        load_config(None, ["tasks.tasks=[a]", "envs.tasks.kind=library"])
    from schema.config import FilterSettings, SweepSettings
    from schema.load import load_sections

    for key, says in [("sweep.loca.checkout=x", "envs: {loca: {kind: loca"), ("sweep.harbor=[x]", "--harbor PATH"),
                      ("sweep.toolathlon.checkout=x", "kind: toolathlon"), ("sweep.mcpmark.checkout=x", "kind: mcpmark"),
                      ("sweep.scales=[]", "sweep.envs=[NAMES]")]:
        with pytest.raises(ConfigError, match=f"unknown field .*{says.replace('[', '.').replace(']', '.')}"):
            load_sections(None, [key], "sweep", SweepSettings)
    load_sections(None, ["filter.envs=[tasks]"], "filter", FilterSettings)


def test_the_command_line_flags_of_the_benchmarks_are_sources_of_their_kind(tmp_path):
    """`eval --harbor/--loca/--toolathlon/--mcpmark/--mcpmark-postgres` each add the source of that kind (named after it),
    listed from the fixture checkouts, beside the config's library."""
    import argparse
    import sys

    from launch.eval import add_arguments, flag_overrides
    from schema.config import SweepSettings
    from schema.load import load_sections

    fixtures = Path(__file__).parent / "fixtures"
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--harbor", str(Path(__file__).parents[1] / "envs" / "starter_harbor"),
                         "--loca", str(fixtures / "loca_checkout"), "--toolathlon", str(fixtures / "toolathlon_checkout"),
                         "--mcpmark", str(fixtures / "mcpmark_checkout"),
                         "--mcpmark-postgres", str(fixtures / "mcpmark_checkout")])
    py = [f"envs.{k}.args.python={sys.executable}" for k in ("loca", "toolathlon", "mcpmark", "mcpmark_postgres")]
    cfg, _ = load_sections(Path(__file__).parents[1] / "configs" / "local.yaml",
                           [*flag_overrides(args), *py, f"envs.mcpmark.args.data_dir={fixtures / 'mcpmark_data'}",
                            "envs.loca.args.presets=[1k]"], "sweep", SweepSettings)
    sources = {s.name: s for s in resolve_sources(cfg.sources(), say=lambda m: None)}
    assert [(n, s.kind.name) for n, s in sources.items()] == [
        ("tasks", "library"), ("harbor", "harbor"), ("loca", "loca"), ("toolathlon", "toolathlon"),
        ("mcpmark", "mcpmark"), ("mcpmark_postgres", "mcpmark_postgres")]
    assert sources["mcpmark_postgres"].task_ids == ["postgres/security__rls_posts", "postgres/shop__order_totals"]  # no backups: prepared tasks only
    assert sources["harbor"].task_ids == ["warehouse-restock"] and sources["loca"].scales == ["1k"]
    assert sources["toolathlon"].task_ids and sources["mcpmark"].task_ids
    assert all(type(r).__name__ == "MCPMarkRef" for r in sources["mcpmark"].refs)


def test_a_mixture_draws_groups_by_the_weights_within_one_group_at_every_point():
    from actors.rollout_manager import SourceSampler
    from envs.format.kind import library_source

    a = library_source(["t1", "t2"], {"v0": 1.0, "v1": 1.0}, name="a")
    b = library_source(["u1"], {"v3": 1.0}, name="b")
    b.weight = 1.0
    a.weight = 3.0
    sampler = SourceSampler([a, b], seed=0)
    seen: Counter = Counter()
    for n in range(1, 401):
        source, task, scale = sampler.draw()
        seen[source] += 1
        assert (task, scale) in {("t1", "v0"), ("t1", "v1"), ("t2", "v0"), ("t2", "v1")} if source == "a" \
            else (task, scale) == ("u1", "v3")
        assert abs(seen["a"] - 0.75 * n) <= 1 and abs(seen["b"] - 0.25 * n) <= 1, (n, seen)
    # a weight of 0 is evaluated, never drawn
    zero = library_source(["z"], {"v0": 1.0}, name="z")
    zero.weight = 0.0
    assert {SourceSampler([a, zero], 1).draw()[0] for _ in range(50)} == {"a"}


def test_a_checkpoint_from_before_sources_resumes_and_one_of_another_config_is_refused():
    """The manager state of a run before sources: groups without a source, no round-robin credit. It
    resumes as the source "tasks" (what a config without `envs:` has), with the same random state;
    a config whose sources lack a held group's task is refused, naming it, before anything runs."""
    import random

    from actors.rollout_manager import ManagerState, RolloutManager, SourceSampler
    from envs.format.kind import library_source
    from schema.config import RolloutConfig

    class OldGroup(msgspec.Struct):  # the checkpoint format of the previous release
        seq: int
        group_id: str
        task_id: str
        scale: str
        samples: dict = {}
        pending: list[int] = []
        failed: str | None = None

    class OldState(msgspec.Struct):
        updates: int
        version: int
        admitted: int
        accepted: int
        counters: dict[str, int]
        rng: list
        groups: list[OldGroup]

    rng = random.Random(5)
    old = msgspec.msgpack.encode(OldState(2, 2, 3, 2, {"groups_trained": 2}, list(rng.getstate()),
                                          [OldGroup(2, "g000002-t1-v0", "t1", "v0", pending=[0, 1])]))
    state = msgspec.msgpack.decode(old, type=ManagerState)
    assert state.groups[0].source == "tasks" and state.credit == {}

    class NoScheduler:
        counters: dict = {}

        def submit(self, req, done, priority):
            self.submitted.append(req)

    sched = NoScheduler()
    sched.submitted = []
    manager = RolloutManager(sched, SourceSampler([library_source(["t1", "t2"], {"v0": 1.0})], 0),
                             RolloutConfig(group_size=2, max_staleness=0), 1, harness="ptc")
    manager.load_state(old)
    assert manager.sampler.rng.getstate() == rng.getstate() and manager.updates == 2
    for idx in manager.groups["g000002-t1-v0"].pending:
        manager._submit(manager.groups["g000002-t1-v0"], idx)
    assert [(r.env.task_id, r.env.scale, r.sample_idx) for r in sched.submitted] == [("t1", "v0", 0), ("t1", "v0", 1)]

    other = RolloutManager(sched, SourceSampler([library_source(["t9"], {"v0": 1.0})], 0),
                           RolloutConfig(group_size=2), 1, harness="ptc")
    with pytest.raises(ValueError, match=r"source 'tasks', task 't1' at scale 'v0', which this config's sources "
                                         r"\(tasks\) do not have"):
        other.load_state(old)
