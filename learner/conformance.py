"""Both learner backends meet the learner contract (learner/base.Learner), checked statically: the
type check of `.ci/run` (mypy, `[tool.mypy]` in pyproject.toml) reads this module; nothing imports
it at run time. A backend whose methods drift from the Protocol fails the suite here."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from learner.base import Learner
    from learner.megatron_backend import MegatronLearner
    from learner.torch_backend import TorchLearner

    def backends(torch_learner: TorchLearner, megatron_learner: MegatronLearner) -> list[Learner]:
        return [torch_learner, megatron_learner]
