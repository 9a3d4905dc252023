"""Where a candidate's checks run: the seam between the synthesis pipeline and the episodes it needs.

    res = await checker.execute(folder, "v0")            # synth/checks.execute's report
    res, usage = await checker.audit(folder)             # the oracle and the independent solver, + the API's cost
    res = await checker.validate(folder)                 # the library validator at v0-v3
    await checker.close()

`LocalChecker` runs them in this process on a runtime of its own (a notebook, a machine without Ray);
the actor fabric's checker (launch/synth_fabric.FabricChecker) runs them on env workers through the
scheduler, the solver's turns from the generator pool, the verdicts on judges: synthesis then scales
with env workers the way the difficulty filter does. Both run the same functions (synth/checks.py),
so a candidate's records are the same either way; model-written code never runs on the host
(synth/checks.py's docstring says where it runs).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

from envs.format.code_runner import CodeRunner
from envs.format.library import load_task
from envs.format.task_env import EnvironmentCache
from envs.runtime.episode import Runtime
from schema.synth import SynthConfig
from synth import checks
from synth.llm import LLM
from synth.records import Usage


class Checker(Protocol):
    async def execute(self, folder: Path, scale: str) -> dict[str, Any]: ...

    async def audit(self, folder: Path) -> tuple[dict[str, Any], Usage]: ...

    async def validate(self, folder: Path) -> dict[str, Any]: ...

    async def close(self) -> None: ...


class LocalChecker:
    """The checks in this process: a runtime, an environment cache and a code runner of its own,
    started on first need (a fully recorded re-run starts no kernels)."""

    def __init__(self, cfg: SynthConfig, llm: LLM):
        self.cfg, self.llm = cfg, llm
        self._runtime: Runtime | None = None
        self._cache: EnvironmentCache | None = None
        self._runner: CodeRunner | None = None
        self._renderer: Any = None
        self._lock = asyncio.Lock()

    async def _env(self) -> tuple[Runtime, EnvironmentCache, CodeRunner]:
        async with self._lock:
            if self._runtime is None:
                self._runtime = await Runtime(self.cfg.runtime).start()
                self._cache = EnvironmentCache()
                # the candidate's data.py / verify.py run in children under the kernels' memory limits
                self._runner = await asyncio.to_thread(CodeRunner, self.cfg.code_timeout_s, self.cfg.code_sandbox,
                                                       self._runtime.limits)
        assert self._cache is not None and self._runner is not None
        return self._runtime, self._cache, self._runner

    async def execute(self, folder: Path, scale: str) -> dict[str, Any]:
        runtime, cache, runner = await self._env()
        return await checks.execute(runtime, folder, cache, runner, scale)

    async def audit(self, folder: Path) -> tuple[dict[str, Any], Usage]:
        from rollout.generators.openai_backend import OpenAIGenerator

        runtime, cache, runner = await self._env()
        spec = self.cfg.models.for_stage("audit")
        renderer = await self._audit_renderer()
        gen = OpenAIGenerator(spec.model, client=self.llm.client(spec), tokenizer=renderer.tok)
        res = await checks.audit(runtime, await asyncio.to_thread(load_task, folder, runner=runner), cache, renderer,
                                 gen, self.cfg.audit, 1.0 if spec.temperature is None else spec.temperature)
        return res, Usage(gen.usage["prompt_tokens"], gen.usage["completion_tokens"], gen.usage["requests"])

    async def validate(self, folder: Path) -> dict[str, Any]:
        runtime, cache, runner = await self._env()
        return await checks.validate(runtime, await asyncio.to_thread(load_task, folder, runner=runner), cache)

    async def _audit_renderer(self) -> Any:
        if self._renderer is None:
            from rollout.agent_loop import ChatRenderer

            if self.cfg.audit.tokenizer:
                from rollout.tokenizer import load_tokenizer

                tok = await asyncio.to_thread(load_tokenizer, self.cfg.audit.tokenizer)
            else:
                from rollout.tiny_model import project_tokenizer

                tok = await asyncio.to_thread(project_tokenizer)
            self._renderer = ChatRenderer(tok)
        return self._renderer

    async def close(self) -> None:
        if self._runtime is not None:
            await self._runtime.close()
            self._runtime = None
        if self._cache is not None:
            self._cache.cleanup()
            self._cache = None
