"""The synthesis configuration (configs/synth.yaml): msgspec Structs.

    cfg = load_synth_config("configs/synth.yaml", overrides=["max_repair_rounds=2", "domains=[library]"])

Every LLM stage names its own model and endpoint, so intents can come from one model, construction
from a stronger one, and the audit from a *different* one (an independent solver: a model auditing
its own task shares its blind spots). An endpoint is any OpenAI-compatible base URL: an external
API, or a model served by our own generator pool.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from schema.bounds import Amount, Count, Resources, Seconds, Temperature
from schema.config import RuntimeConfig
from schema.load import ConfigError, decode, read_tree

__all__ = ["ConfigError", "SynthConfig", "load_synth_config"]

#: LLM stages of the pipeline, in order (also the keys of `models`)
LLM_STAGES = ("intents", "construct", "verifier", "repair", "audit", "diagnose")


class ModelSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    model: str
    #: None: $PROGAGENT_SYNTH_BASE_URL, else $OPENAI_BASE_URL, else the OpenAI API
    base_url: str | None = None
    #: environment variable holding the key; None: $PROGAGENT_SYNTH_API_KEY, else $OPENAI_API_KEY
    api_key_env: str | None = None
    #: None: not sent (OpenAI reasoning models accept only their default)
    temperature: Temperature | None = 0.7
    max_tokens: Count = 16_384
    #: the request field carrying max_tokens: "max_completion_tokens" for OpenAI reasoning models
    max_tokens_field: str = "max_tokens"
    timeout_s: Seconds = 600.0
    max_retries: Amount = 3
    #: passed as the request's extra_body (vendor options such as reasoning effort)
    extra_body: dict[str, Any] = {}

    def endpoint(self) -> tuple[str | None, str]:
        """(base_url, api_key) resolved from the spec and the environment."""
        base_url = self.base_url or os.environ.get("PROGAGENT_SYNTH_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
        key = key or os.environ.get("PROGAGENT_SYNTH_API_KEY") or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        return base_url, key


class StageModels(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The model of each LLM stage; verifier and repair default to construct, diagnose to audit."""

    construct: ModelSpec
    audit: ModelSpec
    intents: ModelSpec | None = None
    verifier: ModelSpec | None = None
    repair: ModelSpec | None = None
    diagnose: ModelSpec | None = None

    def for_stage(self, stage: str) -> ModelSpec:
        if stage not in LLM_STAGES:
            raise KeyError(f"unknown LLM stage {stage!r}; expected one of {', '.join(LLM_STAGES)}")
        spec = getattr(self, stage)
        if spec is not None:
            return spec
        return self.audit if stage == "diagnose" else self.construct


class AuditConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    scale: str = "v3"  # the paper audits at the largest scale
    harness: str = "ptc"
    max_turns: Count = 20
    max_context_tokens: Count = 262_144
    max_new_tokens: Count = 16_384
    #: a failed audit that the diagnosis blames on the solver (not the task) still passes
    accept_solver_errors: bool = True
    #: Hugging Face tokenizer folder used to record the auditor's trajectory ("": the project tokenizer;
    #: fabric.mode=local only)
    tokenizer: str = ""


class SynthFabric(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Where the candidates' checks run (synth/checker.py): "fabric" (env workers, the generator pool
    serving the audit model, judges, through the scheduler: launch/synth_fabric.py) or "local" (this
    process, a runtime of its own)."""

    mode: str = "fabric"
    env_workers: Count = 1
    concurrency: Count = 4  # checks and audit episodes at once per env worker
    judges: Count = 1
    num_cpus: Resources = 1.0  # per env worker
    ray_address: str | None = None  # None: Ray in this process; "auto": a running cluster

    def __post_init__(self) -> None:
        if self.mode not in ("fabric", "local"):
            raise ValueError(f"fabric.mode must be 'fabric' or 'local', got {self.mode!r}")
        if self.env_workers < 1 or self.concurrency < 1 or self.judges < 1:
            raise ValueError("fabric.env_workers, fabric.concurrency and fabric.judges must be at least 1")


class SynthConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    models: StageModels
    domains: list[str] = msgspec.field(default_factory=lambda: ["retail"])
    intents_per_domain: Count = 2
    #: stop after this many candidates (0: every intent)
    max_candidates: Amount = 0
    #: repair rounds per candidate (oracle, audit and validator failures share them), then discard
    max_repair_rounds: Amount = 3
    #: a reply that cannot be parsed is sent back with the parse error this many times
    format_retries: Amount = 1
    #: candidates synthesized at once
    concurrency: Count = 2
    #: a shipped task shown to the constructing model as a style reference ("": none)
    example_task: str = "retail_clearance_markdown"
    #: where accepted tasks are written ("": OUT/library); load_library() can load it
    library_dir: str = ""
    #: the scale of the first execution (and of the repair loop's quick checks)
    execute_scale: str = "v0"
    #: wall-clock limit of one run of a candidate's own code (data.py build, verify(), importing its
    #: modules) in its child process; past it the child is killed and the timeout is repair feedback
    code_timeout_s: Seconds = 60.0
    #: where that child runs: "bwrap" (no network, only the candidate folder and its output visible),
    #: "process" (a plain child: the deadline only), "auto" (bwrap when usable here, else process)
    code_sandbox: str = "auto"
    audit: AuditConfig = AuditConfig()
    runtime: RuntimeConfig = RuntimeConfig(warm_pool=2, program_timeout_s=120.0)
    fabric: SynthFabric = SynthFabric()

    def __post_init__(self) -> None:
        construct, audit = self.models.for_stage("construct"), self.models.for_stage("audit")
        if construct.model == audit.model:
            raise ConfigError(f"models.audit must be a different model from models.construct "
                              f"(both are {audit.model!r}): the audit is an independent solver")
        if not self.domains:
            raise ConfigError("domains: at least one domain is needed")
        if self.code_sandbox not in ("auto", "bwrap", "process"):
            raise ConfigError(f"code_sandbox must be auto, bwrap or process, got {self.code_sandbox!r}")
        if self.code_timeout_s <= 0:
            raise ConfigError(f"code_timeout_s must be positive, got {self.code_timeout_s}")
        if self.fabric.mode == "fabric" and self.audit.tokenizer:
            raise ConfigError("audit.tokenizer is the local checker's: on the fabric the auditor's turns are tokenised "
                              "with the project tokenizer (as every API model's); drop it, or fabric.mode=local")


def load_synth_config(path: str | Path | None = None, overrides: list[str] | None = None) -> SynthConfig:
    """Decode YAML plus `dotted.key=value` overrides (values parsed as YAML)."""
    return decode(read_tree(path, overrides), SynthConfig, path)
