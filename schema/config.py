"""Every configuration of a run: msgspec Structs decoded from YAML (schema/load.py), the one source
of truth. Each field does what its comment says, or it does not exist.

    cfg = load_config("configs/local.yaml", ["train.steps=4", "fabric.env_workers=2"])   # a TrainConfig

Sections: `run`, `model`, `tasks`, `fabric` (generators, env workers and their runtime, judges, the
learner's placement), `rollout` (groups, staleness, the in-flight window), `learner`, `sft`, `train`,
`eval`, `wandb`, `ray`; evaluation sweeps and difficulty filtering read their own `sweep:` and
`filter:` sections of the same file (SweepSettings, FilterSettings); synthesis has its own file
(schema/synth.py).
"""

from __future__ import annotations

from typing import Any

import msgspec

from schema.bounds import (
    Amount,
    Count,
    Fraction,
    NonNegative,
    Positive,
    PositiveFraction,
    Resources,
    Seconds,
    Temperature,
)
from schema.records import SCALES, SamplingParams

GiB = 1024**3



# ---------------------------------------------------------------- the PTC runtime (envs/runtime)

class RuntimeConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Settings of the PTC runtime (envs/runtime/episode.Runtime)."""

    program_timeout_s: Seconds = 120.0
    #: how long an interrupted kernel may take to come back before it is restarted
    interrupt_grace_s: Seconds = 3.0
    #: printed output returned to the model is cut to this many characters (a marker says how much)
    max_output_chars: Count = 50_000
    memory_bytes: Count = 2 * GiB
    max_processes: Count = 256
    #: "auto" picks cgroup2 where delegated, else cgroup1, else rlimits; or force one of them
    limits: str = "auto"
    #: sandboxed kernels kept started and ready so that opening an episode does not pay a start
    warm_pool: Amount = 2
    #: a tool call from a program that takes longer than this fails with ToolError
    tool_timeout_s: Seconds = 60.0
    #: host folders programs see at the same path, read-only ("/data/x") or read-write ("/data/x:rw"):
    #: a path then means the same to a tool server on the host and to a program (envs/runtime/sandbox.py)
    binds: list[str] = []
    #: keep each episode's tool-server logs (their stderr, 8 MiB each at most) in <logs_dir>/<episode id>/
    #: after it closes; "" keeps them in the episode's own folder, removed with it
    logs_dir: str = ""
    #: tool calls of one episode running at once (more wait, holding no thread): one episode cannot
    #: take every worker thread of the in-process tool servers it shares a process with
    max_tool_calls_in_flight: Count = 8
    #: a tool call's record (the episode's call log, trajectories) keeps arguments, result text and
    #: error up to this many characters each (previews beyond; the full length is kept)
    call_record_chars: Amount = 65_536
    #: calls recorded per episode; later ones are counted, not kept
    max_call_records: Amount = 20_000
    #: raise ToolError when a server reports failure only in its text (see upstream.looks_like_error)
    error_heuristic: bool = True
    #: show the value of a program's last expression (like a notebook) in addition to prints
    show_last_expression: bool = False
    kernel_start_timeout_s: Seconds = 30.0
    #: disk one episode may add to its host folders (workspace, database, kernel run folder), in
    #: allocated bytes; no single file a sandboxed process writes grows past it (RLIMIT_FSIZE)
    disk_bytes: Count = 512 * 2**20
    #: files and folders one episode may add, and how deep its folders may nest
    disk_entries: Count = 20_000
    disk_depth: Count = 64
    #: how often the watchdog measures a running program's disk use (episode.py)
    disk_check_s: Seconds = 0.25


# ---------------------------------------------------------------- rollouts (rollout/, actors/)

class LoopLimits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The agent loop's limits (rollout/agent_loop.py); an environment's own limits may be stricter
    (envs/episode_env.EnvLimits: the smaller applies)."""

    max_turns: Count = 30
    max_context_tokens: Count = 32_768
    max_new_tokens: Count = 1024
    max_calls_per_turn: Count = 1
    #: the response (every token after the prompt: the model's and the observations') ends within this
    #: many tokens (`response_limit`), as a host trainer with a fixed response length needs (verl's
    #: `response_length`): cutting an episode judged whole would train on a prefix of it. None: no budget
    max_response_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_response_tokens is not None and self.max_response_tokens < 1:
            raise ValueError(f"max_response_tokens must be ≥ 1 (or unset), got {self.max_response_tokens}")


#: a model named `openai:NAME` is served by the openai backend
API_PREFIX = "openai:"


class GeneratorSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One generator of the pool (actors/generator_pool.py). The model it serves is the run's
    `model.path`, or the model an evaluation names: not a field here."""

    backend: str = "transformers"  # "transformers" | "vllm" | "replay" (forced script) | "openai" (chat API)
    base_url: str = ""  # "openai": the endpoint, e.g. http://host:8000/v1 ("" = $OPENAI_BASE_URL or OpenAI's)
    api_key_env: str = "OPENAI_API_KEY"  # "openai": the variable holding the key (read by the generator)
    max_model_len: Count = 32_768
    gpu_memory_utilization: PositiveFraction = 0.85
    tensor_parallel_size: Count = 1
    num_gpus: Resources = 0.0
    num_cpus: Resources = 1.0
    threads: Count = 1
    script: list[str] = []  # the replies of the "replay" backend, one per turn


class EnvWorkerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One env worker (actors/env_worker.py). The task library is named by each request's
    environment (its EnvRef), not here."""

    concurrency: Count = 4  # episodes at once
    harness: str = "ptc"  # the harness of training and of the evaluation before/after
    limits: LoopLimits = LoopLimits()
    sampling: SamplingParams = SamplingParams()
    runtime: RuntimeConfig = RuntimeConfig(warm_pool=2)
    judge_retries: Amount = 3  # a judge that dies: tried again (on another judge) this many times
    num_cpus: float = 1.0


class HostLoopConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """ProgAgent's episodes inside another RL framework's rollout workers (integrations/: verl's agent
    loop, the verifiers harness): what one worker process runs. The host fixes the sequence lengths
    (verl's prompt_length and response_length), so the context and response budgets come from it,
    not from here."""

    harness: str = "ptc"  # a row that names no harness runs this one
    max_episodes: Count = 8  # episodes at once in one worker process (the rest wait, holding no kernel)
    max_turns: Count = 30
    #: one model turn's tokens; None: whatever is left of the response budget
    max_new_tokens: Count | None = None
    max_calls_per_turn: Count = 1
    runtime: RuntimeConfig = RuntimeConfig(warm_pool=2)
    #: a verifier's deadline (None: the environment's own)
    judge_timeout_s: Seconds | None = None
    #: the environments a row may open: the sources of this ProgAgent config file ("" = the defaults:
    #: the shipped library), only those named in `sources` when given, or one task library folder
    #: (`library`) instead. A row names a task; its settings come from here (envs/sources.Catalog)
    config: str = ""
    sources: list[str] = []
    library: str = ""

    def __post_init__(self) -> None:
        if self.library and (self.config or self.sources):
            raise ValueError("library names one task library instead of a config: give library, or config and "
                             "sources, not both")
        if self.max_episodes < 1:
            raise ValueError(f"max_episodes must be ≥ 1, got {self.max_episodes}")
        if self.harness not in ("ptc", "dtc", "hybrid"):
            raise ValueError(f"harness must be ptc, dtc or hybrid, got {self.harness!r}")


class CurriculumConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The live curriculum (actors/curriculum.py): draws where the running pass rate of a (source,
    task, scale) lies inside the band, and moves each task up its scales as it masters them."""

    enabled: bool = False  # false: the fixed weights (each source's scale weights), as before
    low: float = 0.0  # the band: draw where low < pass rate < high (both strict; the filter's defaults)
    high: float = 0.8
    explore: float = 0.1  # this share of draws ignores the band: any task, any scale, by the fixed weights
    window: int = 4  # a pass rate is over the last `window` groups of its (source, task, scale)
    #: a task moves to its next scale when its current one's rate passes `high` over at least this many groups
    min_groups: int = 1

    def __post_init__(self) -> None:
        if not 0.0 <= self.low < self.high <= 1.0:
            raise ValueError(f"rollout.curriculum needs 0 ≤ low < high ≤ 1, got low {self.low}, high {self.high}")
        if not 0.0 <= self.explore <= 1.0:
            raise ValueError(f"rollout.curriculum.explore must be in [0, 1], got {self.explore}")
        if self.window < 1 or not 1 <= self.min_groups <= self.window:
            raise ValueError(f"rollout.curriculum needs window ≥ 1 and 1 ≤ min_groups ≤ window, got window "
                             f"{self.window}, min_groups {self.min_groups}")


class RolloutConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Groups, staleness and the in-flight window (actors/rollout_manager.py states the rule)."""

    group_size: Count = 4  # samples per (task, scale) group: GSPO's group
    #: a group may be trained on at most this many GSPO updates after its oldest token was generated;
    #: 0 is the synchronous loop (generate a step's groups, train, repeat)
    max_staleness: Amount = 1
    #: trajectories the manager holds at most (buffered, not yet trained on); when full, no new group
    #: starts until the learner takes some
    capacity: Count = 4096
    #: attempts of one episode whose outcome was the fabric's (schema/outcomes.py: a judge, tool server,
    #: sandbox, environment or generator failing; env workers dying under it) before it is given up
    max_attempts: Count = 3
    #: true: an infra outcome is re-run, then left out of its group (the advantage is over the valid
    #: samples; a group left with fewer than 2 is dropped); false: a verifier's infra failure trains as a
    #: zero and an episode without a trajectory fails its whole group (trainers that do not mask)
    mask_infra: bool = True
    #: the share of a step's samples that may be masked (infra outcomes left out: masked / (masked +
    #: trained)) before the step is logged loudly, with its causes: masking keeps fake zeros out, but a
    #: policy that could make its failures look like the fabric's would hide them there
    max_masked_share: Fraction = 0.2
    #: steps in a row above max_masked_share after which the run stops, naming the causes (its
    #: checkpoint and report are written)
    max_masked_steps: Count = 5
    curriculum: CurriculumConfig = CurriculumConfig()


class PolicyLossConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The policy loss by registry name (learner/losses.py) and its knobs; here, without torch, so that
    reading a run config does not import it."""

    name: str = "gspo"
    clip_low: float = 3e-4
    clip_high: float = 4e-4
    aggregation: str = "seq-mean-token-mean"  # | "token-mean" | "seq-mean-token-sum"
    adv_eps: float = 1e-6
    std_normalize: bool = True
    filter_equal_reward_groups: bool = False
    #: truncated importance sampling: weight tokens by min(π_old_learner / π_behaviour, cap); 0 = off
    tis_cap: float = 0.0
    #: scale of negative advantages (1 = GSPO as published). A tiny model shares most parameters
    #: between tokens: pushing down a failed sample's plausible code tokens also pushes down the same
    #: tokens on the correct path (already near p = 1, so the positive samples' gradient is small);
    #: < 1 keeps the update dominated by what worked. See the notes of configs/local.yaml.
    negative_advantage_scale: float = 1.0


class OptimConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    lr: NonNegative = 1e-6
    weight_decay: NonNegative = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    grad_clip: NonNegative = 1.0  # 0: no clipping
    warmup_steps: Amount = 0


class MegatronConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    tensor_parallel: Count = 1
    pipeline_parallel: Count = 1
    context_parallel: Count = 1
    data_parallel: Count = 1
    distributed_optimizer: bool = True
    sequence_parallel: bool = False


class SFTConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    epochs: Count = 3
    batch_size: Count = 64  # sequences per optimizer step, reached by gradient accumulation
    lr: NonNegative = 1e-5
    warmup_steps: Amount = 0
    seed: int = 0


class LearnerConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    backend: str = "torch"  # "torch" | "megatron"
    #: the torch backend's data-parallel (FSDP) ranks; the megatron backend's ranks are its
    #: tensor x pipeline x context x data parallel sizes (`ranks`)
    fsdp_ranks: Count = 1
    loss: PolicyLossConfig = PolicyLossConfig()
    optim: OptimConfig = OptimConfig()
    sft: SFTConfig = SFTConfig()
    megatron: MegatronConfig = MegatronConfig()
    #: packed rows per forward pass hold at most this many tokens (gradient accumulation over rows);
    #: the torch backend on CPU without flash attention runs a row per sequence (TorchLearner._rows)
    max_tokens_per_micro_batch: Count = 16_384
    temperature: Positive = 1.0  # log-probs are of logits / temperature, as the generators report them
    bf16: bool = True  # autocast on GPU; CPU runs in float32
    gradient_checkpointing: bool = False
    seed: int = 0

    @property
    def ranks(self) -> int:
        """The learner's torch.distributed world: one rank actor each (a LearnerGroup when > 1)."""
        if self.backend == "megatron":
            m = self.megatron
            return m.tensor_parallel * m.pipeline_parallel * m.context_parallel * m.data_parallel
        return self.fsdp_ranks


# ---------------------------------------------------------------- the run

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
    scales: dict[str, float] = msgspec.field(default_factory=lambda: {s: 1.0 for s in SCALES})
    #: "" = the shipped library (envs/tasks); a relative path is taken from the repository root of
    #: each process (envs/format/library.library_dir), so every node finds it in its own checkout
    library_root: str = ""


class SourceSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One source of episodes under `envs:` (envs/sources.py): an environment kind (envs/kinds.py),
    its settings, its scales and its training weight."""

    kind: str  # a registered environment kind: library, harbor, loca, toolathlon, mcpmark, or your own
    #: training draws a source with probability weight / (sum of weights); 0 = evaluated, never trained on
    weight: NonNegative = 1.0
    #: the scales that run and their sampling weights within the source ({} = every scale it lists, equally)
    scales: dict[str, float] = {}
    args: dict[str, Any] = {}  # the kind's settings (its args struct: unknown fields are refused)


WEIGHT_TRANSPORTS = ("object_store", "collective")


class WeightTransportConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How new weights go from the learner to the generators (rollout/weights/)."""

    #: "object_store": one copy in Ray's object store, fetched by every generator (one node, small
    #: models); "collective": a process group of the learner's rank 0 and every generator worker,
    #: broadcast in buckets (a cluster: NCCL between GPUs, gloo on CPUs)
    kind: str = "object_store"
    backend: str = "auto"  # collective: "gloo" | "nccl" | "auto" (nccl when the learner has a GPU, else gloo)
    bucket_mb: int = 512  # collective: the largest buffer a transfer allocates on either side
    #: collective: every join and every bucket's broadcast must finish within this, else the update
    #: fails with the peer it waited for (a generator that never joins is found, not waited on)
    timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if self.kind not in WEIGHT_TRANSPORTS:
            raise ValueError(f"fabric.weights.kind must be one of {WEIGHT_TRANSPORTS}, got {self.kind!r}")
        if self.backend not in ("auto", "gloo", "nccl"):
            raise ValueError(f"fabric.weights.backend must be 'auto', 'gloo' or 'nccl', got {self.backend!r}")
        if self.bucket_mb < 1 or self.timeout_s <= 0:
            raise ValueError("fabric.weights.bucket_mb must be ≥ 1 and timeout_s > 0")


class FabricConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    generators: Count = 1
    generator: GeneratorSpec = GeneratorSpec()
    env_workers: Count = 1
    env_worker: EnvWorkerConfig = EnvWorkerConfig()
    judges: Count = 1
    judge_timeout_s: Seconds = 60.0  # a library task's verifier (a Harbor task's is its [verifier] timeout_sec)
    #: GPUs of the whole learner: shared among its `learner.ranks` rank actors (a LearnerGroup when
    #: there is more than one, each with learner_cpus_per_rank CPUs, in one placement group reserved
    #: before the generators start)
    learner_num_gpus: Resources = 0.0
    learner_threads: Count = 1
    learner_cpus_per_rank: Resources = 1.0
    learner_placement: str = "PACK"  # the placement group's strategy: PACK | SPREAD | STRICT_PACK | STRICT_SPREAD
    weights: WeightTransportConfig = WeightTransportConfig()
    #: fault injection, for fault-tolerance tests and benches (0 in real runs): this share of the judges'
    #: verdicts fail as a crashed verifier would ("infra/judge_error"), drawn by each judge's seeded generator
    inject_judge_errors: float = 0.0
    #: env workers and generators that have not started by then fail the run with an error naming them
    #: (the cluster lacks their resources, or Ray lost their creation) rather than leaving it waiting
    start_timeout_s: float = 900.0

    def __post_init__(self) -> None:
        if self.start_timeout_s <= 0:
            raise ValueError(f"fabric.start_timeout_s must be > 0, got {self.start_timeout_s}")
        if not 0.0 <= self.inject_judge_errors <= 1.0:
            raise ValueError(f"fabric.inject_judge_errors must be in [0, 1], got {self.inject_judge_errors}")


class SFTStage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    enabled: bool = True
    teacher: str = "oracle"  # "oracle" | path to a JSONL of teacher trajectories (progagent collect)
    min_score: Fraction = 0.7


class RewardConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The trained reward: terms from the registry (rollout/rewards.py) with weights. Gain terms
    (`binary`: 1 when every criterion passes, the paper's; `score`: the fraction of criteria) are
    averaged by weight into G in [0, 1]; penalty terms (`context_efficiency`, `dtc_like`), each in
    [0, 1], scale it down: reward = G × (1 − Σ wₚ·penaltyₚ), so it stays in [0, 1] when the
    penalties' weights sum to at most 1, which is checked when the run starts."""

    terms: dict[str, float] = msgspec.field(default_factory=lambda: {"binary": 1.0})
    #: context_efficiency: tool-output tokens an episode may put in its context before the penalty starts
    context_budget_tokens: int = 1024
    #: ... per task id, over the default (a task whose data is larger needs more)
    context_budgets: dict[str, int] = {}

    def __post_init__(self) -> None:
        if not self.terms:
            raise ValueError("train.reward.terms is empty: name at least one term (binary, score)")
        if any(w < 0 for w in self.terms.values()):
            raise ValueError(f"train.reward.terms weights must be ≥ 0, got {self.terms}")
        if self.context_budget_tokens < 1 or any(b < 1 for b in self.context_budgets.values()):
            raise ValueError("train.reward context budgets must be ≥ 1 token")


class TrainStage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    steps: Amount = 150
    groups_per_step: Count = 32  # tasks per step (paper: 32 × 16 rollouts)
    checkpoint_every: Amount = 10  # 0: only the last step's
    reward: RewardConfig = RewardConfig()
    #: a step that gets no complete group for this long stops the run (a checkpoint is written)
    step_timeout_s: Seconds = 3600.0
    #: judge each training source's tasks against cheats that solve nothing before training
    #: (envs/probes.py) and leave out those a cheat passes; false trusts every verifier as it is
    probe: bool = True


class EvalStage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Training's evaluation before and after, on the same env workers (the run's harness and tasks)."""

    before: bool = True
    after: bool = True
    samples: Count = 1  # per (task, scale)
    temperature: Temperature = 1.0  # the sampling temperature of evaluation episodes


class WandbConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    mode: str = "auto"  # "auto" (online with WANDB_API_KEY, else offline) | "online" | "offline" | "disabled"
    project: str = "progagent"
    entity: str | None = None


class RayConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    address: str | None = None  # None: start Ray in-process (embedded); "auto": join a running cluster
    num_cpus: Count | None = None
    #: refuse at start a run whose GPUs or CPUs the cluster lacks in total (launch/fabric.check_fits);
    #: false on an autoscaling cluster, whose nodes come when the actors ask for them
    check_resources: bool = True


#: the name of the one source a config without `envs:` has (its `tasks:` section)
TASKS_SOURCE = "tasks"


class TrainConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    run: RunConfig = RunConfig()
    model: ModelConfig = ModelConfig()
    #: a task library as the source named "tasks" (beside those of `envs:`); without `envs:` the
    #: only source, the shipped library when the section is left out
    tasks: TaskMix | None = None
    #: sources of episodes by name (envs/sources.py)
    envs: dict[str, SourceSpec] = {}
    fabric: FabricConfig = FabricConfig()
    rollout: RolloutConfig = RolloutConfig()
    learner: LearnerConfig = LearnerConfig()
    sft: SFTStage = SFTStage()
    train: TrainStage = TrainStage()
    eval: EvalStage = EvalStage()
    wandb: WandbConfig = WandbConfig()
    ray: RayConfig = RayConfig()

    def __post_init__(self) -> None:
        if self.tasks is not None and TASKS_SOURCE in self.envs:
            raise ValueError(f"`tasks:` is the source named {TASKS_SOURCE!r}, and `envs:` names one too: keep one "
                             "of them")

    def sources(self) -> dict[str, SourceSpec]:
        """The sources of episodes: `tasks:` as the source named "tasks" (when it is given, or when
        there is no `envs:`: the shipped library), then those of `envs:`."""
        out: dict[str, SourceSpec] = {}
        if self.tasks is not None or not self.envs:
            t = self.tasks or TaskMix()
            out[TASKS_SOURCE] = SourceSpec("library", 1.0, dict(t.scales), {"library": t.library_root,
                                                                              "tasks": list(t.tasks)})
        return out | self.envs


# ---------------------------------------------------------------- evaluation sweeps and filtering

class SweepSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The `sweep:` section of a config (the `eval:` section is training's before/after evaluation)."""

    models: list[str] = []  # [] = the config's model.path; "tiny", HF folders (checkpoints), openai:NAME
    harnesses: list[str] = msgspec.field(default_factory=lambda: ["dtc", "ptc", "hybrid"])
    samples: Count = 4  # n rollouts per (model, harness, task, scale)
    #: the k of pass@k, each at most `samples` ([] = 1, 2, 4, ... up to samples; pass@1 is always there)
    ks: list[Count] = []
    out_dir: str = ""  # "" = <run.out_dir>/eval-<run.name>; fixed, so a re-run resumes
    seed: int = 0  # base of the per-sample sampling seeds
    #: the sources of `envs:` a sweep runs, by name ([] = every source); each at its own scales
    envs: list[str] = []
    #: "paper": also the cross-benchmark table in the paper's shape (launch/paper_report.py: paper.md),
    #: every benchmark of the paper a row, configured or not
    suite: str = ""


class FilterSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The `filter:` section of a config."""

    model: str = ""  # "" = the config's model.path; "tiny" or a HF folder (e.g. a checkpoint's export)
    harness: str = "ptc"
    samples: Count = 8  # k rollouts per task and scale
    #: the sources of `envs:` filtered, by name ([] = every source)
    envs: list[str] = []
    scales: list[str] = []  # the scales a task must pass at ([] = every scale its source runs)
    low: float = 0.0  # keep when low < pass rate < high at every scale (both strict)
    high: float = 0.8
    out_dir: str = ""  # "" = <run.out_dir>/filter-<run.name>; fixed, so a re-run resumes
    seed: int = 0  # base of the per-sample sampling seeds
