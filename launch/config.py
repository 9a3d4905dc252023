"""The run configuration: YAML decoded into msgspec Structs — the one source of truth.

    cfg = load_config("configs/local.yaml", overrides=["train.steps=4", "fabric.env_workers=2"])

Overrides are `dotted.key=value` with the value parsed as YAML (numbers, booleans, lists). Unknown
keys and wrong types fail with the path of the field (msgspec's message), before anything starts.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from actors.buffer import BufferConfig
from actors.env_worker import EnvWorkerConfig
from actors.generator_pool import GeneratorSpec
from launch.yaml_config import ConfigError, decode, read_tree
from learner.config import LearnerConfig

__all__ = ["ConfigError", "TrainConfig", "load_config"]


class RunConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str = "progagent"
    out_dir: str = "runs"
    seed: int = 0
    #: write every trained-on trajectory (turns, criteria; no token ids) to rollouts.jsonl
    save_rollouts: bool = True


class ModelConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    #: a Hugging Face folder, or "tiny" for the self-built tiny Qwen3 model
    path: str = "tiny"


class TaskMix(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    tasks: list[str] = []  # empty: the whole library
    #: sampling weight of each scale (the paper trains on all four; v0-only is much worse)
    scales: dict[str, float] = msgspec.field(default_factory=lambda: {"v0": 1.0, "v1": 1.0, "v2": 1.0, "v3": 1.0})
    #: "" = the shipped library (envs/tasks); a relative path is taken from the repository root
    library_root: str = ""

    def root(self) -> str:
        from envs.library import LIBRARY_DIR

        if not self.library_root:
            return str(LIBRARY_DIR)
        path = Path(self.library_root)
        return str(path if path.is_absolute() else LIBRARY_DIR.parents[1] / path)


class FabricConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    generators: int = 1
    generator: GeneratorSpec = GeneratorSpec()
    env_workers: int = 1
    env_worker: EnvWorkerConfig = EnvWorkerConfig()
    judges: int = 1
    judge_timeout_s: float = 60.0
    learner_num_gpus: float = 0.0
    learner_threads: int = 1
    #: > 1: the learner is a LearnerGroup, one rank actor per torch.distributed rank (torch: FSDP data
    #: parallel; megatron: TP × PP × CP × DP ranks), each with learner_num_gpus / learner_ranks GPUs
    #: and learner_cpus_per_rank CPUs, in one placement group reserved before the generators start
    learner_ranks: int = 1
    learner_cpus_per_rank: float = 1.0
    learner_placement: str = "PACK"  # the placement group's strategy: PACK | SPREAD | STRICT_PACK | STRICT_SPREAD


class SFTStage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    enabled: bool = True
    teacher: str = "oracle"  # "oracle" | path to a JSONL of teacher trajectories (progagent collect)
    min_score: float = 0.7


class TrainStage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    steps: int = 150
    groups_per_step: int = 32  # tasks per step (paper: 32 × 16 rollouts)
    checkpoint_every: int = 10
    reward: str = "binary"  # "binary" (the paper) | "score" (fraction of criteria: denser, for tiny models)
    step_timeout_s: float = 3600.0


class EvalStage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    before: bool = True
    after: bool = True
    samples: int = 1
    temperature: float = 1.0


class WandbConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    mode: str = "auto"  # "auto" (online with WANDB_API_KEY, else offline) | "online" | "offline" | "disabled"
    project: str = "progagent"
    entity: str | None = None


class RayConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    address: str | None = None  # None: start Ray in-process (embedded); "auto": join a running cluster
    num_cpus: int | None = None


class TrainConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    run: RunConfig = RunConfig()
    model: ModelConfig = ModelConfig()
    tasks: TaskMix = TaskMix()
    fabric: FabricConfig = FabricConfig()
    buffer: BufferConfig = BufferConfig()
    learner: LearnerConfig = LearnerConfig()
    sft: SFTStage = SFTStage()
    train: TrainStage = TrainStage()
    eval: EvalStage = EvalStage()
    wandb: WandbConfig = WandbConfig()
    ray: RayConfig = RayConfig()


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    return decode(read_tree(path, overrides), TrainConfig, path)
