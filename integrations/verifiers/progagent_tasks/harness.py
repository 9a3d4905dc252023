"""ProgAgent's episode as a verifiers v1 harness: the policy's turns through verifiers' interception,
the programs in ProgAgent's sandboxed runtime, the verdict from ProgAgent's judge.

`launch` runs the episode in process (verifiers allows it: every model call goes to `endpoint` with
`secret`, and the trace is the record of what ran): the task's environment opens in this process's
shared runtime (integrations/host.py: a warm pool of bubblewrap-sandboxed kernels, at most
`progagent.max_episodes` episodes at once), ProgAgent's agent loop asks the policy through the chat
API (rollout/generators/openai_backend.py), and the verdict and episode report go into the trace's
state for the task's reward and metrics.

One branch per episode: verifiers records the conversation as a message graph and starts a new
branch wherever a request does not extend the last one exactly, tool-call ids included. The OpenAI
backend sends the provider's assistant messages back verbatim and answers each call id it issued, so
every request extends the one before (and prime-rl trains on one sample per episode).

Model code never runs in verifiers' runtime (the subprocess runtime here is only the placeholder
verifiers requires): it runs in ProgAgent's sandbox, so EXECUTES_CODE is False and no container is
needed.
"""

from __future__ import annotations

import logging
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from envs.sources import row_from_json
from integrations.episode_info import episode_info
from integrations.host import host_config, shared
from rollout.generators.openai_backend import OpenAIGenerator
from schema.config import LoopLimits
from schema.records import SamplingParams

log = logging.getLogger(__name__)


class ProgAgentHarnessConfig(vf.HarnessConfig):
    id: str = "progagent-tasks"
    progagent: dict[str, Any] = Field(default_factory=dict)
    """ProgAgent's settings for this worker (schema/config.HostLoopConfig: max_episodes, max_turns,
    max_new_tokens, max_calls_per_turn, runtime, judge_timeout_s, and the sources a task may name:
    config, sources, library - the same as the taskset's)."""
    max_context_tokens: int = 32_768
    """The episode ends when its conversation would pass this many tokens (counted by `tokenizer`)."""
    tokenizer: str = ""
    """The Hugging Face tokenizer folder that counts ProgAgent's token budgets ("" = ProgAgent's own)."""


def _tokenizer(path: str) -> Any:
    if path:
        from rollout.tokenizer import load_tokenizer

        return load_tokenizer(path)
    from rollout.tiny_model import project_tokenizer

    return project_tokenizer()


class ProgAgentHarness(vf.Harness[ProgAgentHarnessConfig]):
    APPENDS_SYSTEM_PROMPT = True  # the system prompt is the harness's (DTC/PTC/hybrid), sent as itself
    NEEDS_CONTAINER = False
    EXECUTES_CODE = False  # model code runs in ProgAgent's bubblewrap sandbox, never in verifiers' runtime

    async def launch(self, ctx: Any, trace: Any, runtime: Any, endpoint: str, secret: str,
                     mcp_urls: dict[str, str], data: Any) -> vf.ProgramResult:
        settings = host_config(dict(self.config.progagent), "the progagent-tasks harness's `progagent` settings")
        harness = getattr(data, "harness", None) or settings.harness
        path = self.config.tokenizer
        machinery = await shared(settings, lambda: _tokenizer(path))  # loaded by this worker's first episode only
        # the task's data names its environment only; the reference is this harness's sources' (Catalog)
        ref = machinery.catalog.resolve(row_from_json(data.env, "task data `env`"), "task data `env`")
        generator = OpenAIGenerator(ctx.model, base_url=endpoint, api_key=secret, max_retries=0,
                                    tokenizer=machinery.renderer.tok)
        limits = LoopLimits(max_turns=settings.max_turns, max_context_tokens=self.config.max_context_tokens,
                            max_new_tokens=settings.max_new_tokens or LoopLimits().max_new_tokens,
                            max_calls_per_turn=settings.max_calls_per_turn)
        try:
            traj = await machinery.episode(ref, generator, harness, limits=limits, sampling=SamplingParams(),
                                           group_id=str(data.id or ref.task_id))
        finally:
            await generator.close()
        state = trace.state
        state.reward, state.info = traj.reward, episode_info(traj)
        state.termination, state.verifier_error = traj.termination, traj.verifier_error
        if traj.termination == "generator_error":
            log.warning("progagent episode %s: the policy's endpoint failed", data.id)
        return vf.ProgramResult(exit_code=0, stdout=traj.final_answer, stderr="")
