"""Synthesis on the actor fabric: a candidate's checks run on env workers through the scheduler.

    checker = await FabricChecker.start(cfg)                 # cfg: a SynthConfig
    summary = await Pipeline(cfg, out, checker=checker).run()

The fabric is the one evaluation and filtering use (launch/rollouts.RolloutRunner, no learner): its
generator pool serves the audit model (`openai:<models.audit.model>` at its endpoint), its env
workers run the checks (schema/records.CheckRequest: execute, the audit's oracle, validate; their
code in the code sandbox, their programs in the workers' kernels) and the audit's solver episode (a
library episode of the candidate's folder), its judges judge that episode. So synthesis scales with
`fabric.env_workers` as the difficulty filter does, and a worker that dies mid-check has the check
run again elsewhere (the scheduler's policy). A check that fails for good, or an audit whose model's
endpoint keeps failing, raises: the pipeline leaves no record for that stage and a re-run retries it.
The candidate folders must be where every env worker reads them (one machine, or shared storage).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envs.format.kind import TaskRef
from launch.rollouts import RolloutRunner
from schema.config import (
    API_PREFIX,
    EnvWorkerConfig,
    FabricConfig,
    GeneratorSpec,
    LoopLimits,
    RayConfig,
    TrainConfig,
)
from schema.records import CheckRequest, EpisodeRequest
from schema.synth import SynthConfig
from synth import checks
from synth.records import Usage


def fabric_config(cfg: SynthConfig) -> TrainConfig:
    """The fabric of a synthesis run: env workers with the synthesis runtime and the audit's loop limits,
    one generator serving the audit model through its OpenAI-compatible endpoint."""
    spec, a, f = cfg.models.for_stage("audit"), cfg.audit, cfg.fabric
    base_url, _ = spec.endpoint()
    key_env = spec.api_key_env or "PROGAGENT_SYNTH_API_KEY"  # as ModelSpec.endpoint resolves it
    return TrainConfig(
        fabric=FabricConfig(
            generators=1, generator=GeneratorSpec(backend="openai", base_url=base_url or "", api_key_env=key_env,
                                                  num_cpus=0.0),
            env_workers=f.env_workers, judges=f.judges,
            env_worker=EnvWorkerConfig(concurrency=f.concurrency, harness=a.harness, runtime=cfg.runtime,
                                       num_cpus=f.num_cpus,
                                       limits=LoopLimits(max_turns=a.max_turns, max_context_tokens=a.max_context_tokens,
                                                         max_new_tokens=a.max_new_tokens))),
        ray=RayConfig(address=f.ray_address, check_resources=False))


class FabricChecker:
    """synth/checker.Checker on the actor fabric (module docstring)."""

    def __init__(self, cfg: SynthConfig, runner: RolloutRunner, owns: bool = True):
        self.cfg, self.runner, self.owns = cfg, runner, owns
        self.scheduler = runner.fabric.scheduler

    @classmethod
    async def start(cls, cfg: SynthConfig) -> FabricChecker:
        return cls(cfg, await RolloutRunner.start(fabric_config(cfg), API_PREFIX + cfg.models.for_stage("audit").model))

    def _check(self, stage: str, folder: Path, scale: str) -> CheckRequest:
        return CheckRequest(stage=stage, folder=str(folder), scale=scale, group_id=f"{stage}-{folder.parent.name}-{folder.name}",
                            code_timeout_s=self.cfg.code_timeout_s, code_sandbox=self.cfg.code_sandbox)

    async def _run(self, req: Any) -> Any:
        [out] = await self.scheduler.run_all([req])
        if out.trajectory is None:
            what = f"the {req.stage} check" if isinstance(req, CheckRequest) else "the audit's solver episode"
            raise RuntimeError(f"{what} of {req.group_id} failed on the env workers ({out.failure}): {out.detail}")
        return out.trajectory

    async def execute(self, folder: Path, scale: str) -> dict[str, Any]:
        return (await self._run(self._check("execute", folder, scale))).outputs

    async def audit(self, folder: Path) -> tuple[dict[str, Any], Usage]:
        import asyncio

        a, spec = self.cfg.audit, self.cfg.models.for_stage("audit")
        solver = EpisodeRequest(env=TaskRef(folder.name, a.scale, str(folder.parent)),
                                group_id=f"audit-{folder.parent.name}-{folder.name}", sample_idx=0, harness=a.harness,
                                temperature=1.0 if spec.temperature is None else spec.temperature)
        try:
            reference, traj = await asyncio.gather(self._run(self._check("oracle", folder, a.scale)), self._run(solver))
        except RuntimeError as exc:
            if "generator_error" in str(exc):
                raise RuntimeError(f"the audit model's endpoint failed ({spec.model}): {exc}") from None
            raise
        m = traj.metrics
        usage = Usage(int(m.get("api_prompt_tokens", 0)), int(m.get("api_completion_tokens", 0)),
                      int(m.get("api_requests", 0)))
        return checks.audit_report(reference.outputs, traj), usage

    async def validate(self, folder: Path) -> dict[str, Any]:
        return (await self._run(self._check("validate", folder, "v0"))).outputs

    async def close(self) -> None:
        if self.owns:
            await self.runner.close()
