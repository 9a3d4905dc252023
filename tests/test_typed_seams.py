"""The type check is a check: a generator or a learner that drifts from its Protocol fails it (the suite runs
mypy over the typed seams, rollout/generators/conformance.py and learner/conformance.py among them)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

HEAD = '''
from rollout.generators.base import Generator
from schema.records import Generation, Prompt, SamplingParams
'''

WRONG = HEAD + '''

class TextGenerator:  # takes text, not token ids, and generates synchronously
    policy_version: int = 0

    def generate(self, prompt: str, sampling: SamplingParams) -> Generation:
        raise NotImplementedError

    async def load_weights(self, version: int, weights: dict) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class NoClose:
    policy_version: int = 0

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation:
        raise NotImplementedError

    async def load_weights(self, version: int, weights: dict) -> None:
        raise NotImplementedError


def check(a: TextGenerator, b: NoClose) -> list[Generator]:
    return [a, b]
'''

RIGHT = HEAD + '''

class TokenGenerator:
    policy_version: int = 0

    async def generate(self, prompt: Prompt, sampling: SamplingParams) -> Generation:
        raise NotImplementedError

    async def load_weights(self, version: int, weights: dict) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


def check(a: TokenGenerator) -> list[Generator]:
    return [a]
'''


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One mypy cache for the module's runs: a cold run spends seconds on the standard library's stubs
    and the project's modules, which every run here shares; only each run's own module differs. It
    starts as a copy of the project's own cache where the type check (scripts/test.sh runs it before
    these tests) left one: mypy checks each entry against its source, so a stale one is only slower."""
    cache = tmp_path_factory.mktemp("mypy") / "cache"
    if (ROOT / ".mypy_cache").is_dir():
        shutil.copytree(ROOT / ".mypy_cache", cache, symlinks=True)
    return cache


def mypy(tmp_path, cache, name: str, source: str) -> subprocess.CompletedProcess:
    module = tmp_path / f"{name}.py"
    module.write_text(source)
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(cache), str(module)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.timeout(600)
def test_a_generator_that_drifts_from_the_protocol_fails_the_type_check(tmp_path, cache):
    wrong = mypy(tmp_path, cache, "wrong_generators", WRONG)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert 'List item 0 has incompatible type "TextGenerator"; expected "Generator"' in wrong.stdout, wrong.stdout
    assert 'List item 1 has incompatible type "NoClose"; expected "Generator"' in wrong.stdout, wrong.stdout
    assert 'Following member(s) of "TextGenerator" have conflicts' in wrong.stdout, wrong.stdout  # the signature
    assert 'is missing following "Generator" protocol member:' in wrong.stdout and "close" in wrong.stdout, wrong.stdout
    right = mypy(tmp_path, cache, "right_generators", RIGHT)
    assert right.returncode == 0, right.stdout + right.stderr


WRONG_LEARNER = '''
from pathlib import Path
from typing import Any

from learner.base import Learner


class NoExport:  # every method but export_hf, and weights without the version
    version: int = 0

    def train_step(self, groups: list[list[Any]]) -> dict[str, float]:
        raise NotImplementedError

    def sft_step(self, samples: list) -> dict[str, float]:
        raise NotImplementedError

    def logprobs(self, samples: list) -> list[list[float]]:
        raise NotImplementedError

    def reset_optimizer(self, lr: float) -> None:
        raise NotImplementedError

    def set_lr(self, lr: float) -> None:
        raise NotImplementedError

    def weights(self) -> dict[str, Any]:
        raise NotImplementedError

    def save(self, path: str | Path) -> Path:
        raise NotImplementedError

    def load(self, path: str | Path) -> None:
        raise NotImplementedError


def check(a: NoExport) -> Learner:
    return a
'''


@pytest.mark.timeout(600)
def test_a_learner_that_drifts_from_the_protocol_fails_the_type_check(tmp_path, cache):
    wrong = mypy(tmp_path, cache, "wrong_learner", WRONG_LEARNER)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert 'Incompatible return value type (got "NoExport", expected "Learner")' in wrong.stdout, wrong.stdout
    assert "export_hf" in wrong.stdout, wrong.stdout
    right = mypy(tmp_path, cache, "right_learner", WRONG_LEARNER.replace(
        "    def weights(self) -> dict[str, Any]:",
        "    def export_hf(self, path: str | Path) -> Path:\n        raise NotImplementedError\n\n"
        "    def weights(self) -> tuple[int, dict[str, Any]]:"))
    assert right.returncode == 0, right.stdout + right.stderr


WRONG_KIND = '''
from typing import Any

import msgspec

from envs.episode_env import EpisodeEnv
from envs.kinds import EnvKind, ListContext, LoadContext
from schema.records import EnvRef


class DiceRef(EnvRef, frozen=True, tag="dice"):
    sides: int


class DiceArgs(msgspec.Struct, frozen=True):
    sides: int = 6


class DiceKind:  # load takes the settings, not a reference: the registry would hand it a DiceRef
    name = "dice"
    ref_type = DiceRef
    args_type = DiceArgs
    ground_truth_hidden = True
    has_oracle = False

    def refs(self, args: DiceArgs, ctx: ListContext) -> list[DiceRef]:
        return [DiceRef(args.sides)]

    def load(self, ref: DiceArgs, ctx: LoadContext) -> EpisodeEnv:
        raise NotImplementedError


def check(k: DiceKind) -> EnvKind[DiceRef, DiceArgs]:
    return k
'''


@pytest.mark.timeout(600)
def test_an_environment_kind_that_drifts_from_the_protocol_fails_the_type_check(tmp_path, cache):
    wrong = mypy(tmp_path, cache, "wrong_kind", WRONG_KIND)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert 'Incompatible return value type (got "DiceKind", expected "EnvKind[DiceRef, DiceArgs]")' in wrong.stdout, \
        wrong.stdout
    assert "def load(self, ref: DiceArgs, ctx: LoadContext) -> EpisodeEnv" in wrong.stdout, wrong.stdout
    right = mypy(tmp_path, cache, "right_kind", WRONG_KIND.replace("def load(self, ref: DiceArgs,", "def load(self, ref: DiceRef,"))
    assert right.returncode == 0, right.stdout + right.stderr
