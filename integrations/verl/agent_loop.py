"""ProgAgent as a verl agent loop: `agent_name: progagent` runs a ProgAgent episode for a dataset row.

    # agent_loop.yaml (actor_rollout_ref.rollout.agent.agent_loop_config_path)
    - name: progagent
      _target_: integrations.verl.agent_loop.ProgAgentLoop
      harness: ptc            # HostLoopConfig (schema/config.py): harness, max_episodes, max_turns, runtime, ...
      max_episodes: 8
      config: configs/mixture.yaml   # the sources a row may name (or `library: <folder>`; default: the shipped library)
      sources: [starter, harbor]

A row (integrations/verl/dataset.py writes them) names an environment of any ProgAgent kind (library
task, Harbor task, LOCA-bench, Toolathlon, MCPMark ...) and a harness. A row is data a user downloads:
it names a kind, source, task and scale only, and the reference that opens them is the one this loop's
own sources list (`config`/`sources`/`library`: envs/sources.Catalog), so no row chooses an interpreter,
a folder or an endpoint. A row that names more, or what those sources do not list, is that sample's
failure (masked, counted in `infra`), never the batch's. `run` opens it in this worker
process's shared `Runtime` (warm pool of sandboxed kernels; at most `max_episodes` episodes at once),
runs ProgAgent's own agent loop with verl's servers writing the model's turns (ServerGenerator: one
request id per episode, the server's log-probs and weights' step kept), judges the final state here
under the environment's deadline (judging), and returns verl's AgentLoopOutput: prompt ids, response ids
(model and observation tokens), response mask (1 on model tokens), log-probs (0 on observations),
the reward (so verl's reward loop is skipped) and `reward_extra_info` with the same keys for every
episode (integrations/episode_info.py).

Lengths are verl's: the prompt must fit `rollout.prompt_length` (else PromptTooLong, naming the key),
and the episode ends within `rollout.response_length` (`response_limit`) rather than being cut after
it was judged — a cut episode would train on a prefix of what was judged whole.

verl makes a new loop object per sample (hydra), so what is costly lives per worker process and
event loop (integrations/host.py: the runtime, the environment cache, the renderer, the episode
slots; the node's sandbox check).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register

from envs.runtime.untrusted_text import loggable
from integrations.episode_info import episode_info
from integrations.host import host_config, shared
from integrations.verl.rows import EpisodeRow
from integrations.verl.server_generator import PromptTooLong, ServerGenerator
from schema.config import HostLoopConfig, LoopLimits
from schema.outcomes import check_cause
from schema.records import SamplingParams, Trajectory

log = logging.getLogger(__name__)

#: what verl's AgentLoopWorker passes besides the YAML entry's settings (verl 0.9.1): its tools (for the
#: base class), and the entry's own registry name (for no one)
_VERL_KWARGS = ("tools",)
_REGISTRY_KEYS = ("name",)


def _plain(value: Any) -> Any:
    return OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig | ListConfig) else value


def loop_settings(settings: dict[str, Any]) -> HostLoopConfig:
    """The agent-loop YAML entry's keys (omegaconf's containers made plain) as HostLoopConfig."""
    return host_config({k: _plain(v) for k, v in settings.items()},
                       "the progagent agent loop's settings (agent_loop_config_path)")


@register("progagent")
class ProgAgentLoop(AgentLoopBase):
    """ProgAgent's episode as verl's agent loop (module docstring)."""

    def __init__(self, trainer_config: Any, server_manager: Any, tokenizer: Any, processor: Any, dataset_cls: Any,
                 data_config: Any, hf_model_type: str | None = None, **kwargs: Any):
        verl_kwargs = {k: kwargs.pop(k) for k in _VERL_KWARGS if k in kwargs}
        self.settings = loop_settings({k: v for k, v in kwargs.items() if k not in _REGISTRY_KEYS})
        super().__init__(trainer_config, server_manager, tokenizer, processor, dataset_cls, data_config,
                         hf_model_type, **verl_kwargs)

    def limits(self) -> LoopLimits:
        """The loop's limits under verl's fixed lengths (module docstring)."""
        prompt, response = int(self.rollout_config.prompt_length), int(self.rollout_config.response_length)
        s = self.settings
        return LoopLimits(max_turns=s.max_turns, max_context_tokens=prompt + response,
                          max_new_tokens=min(s.max_new_tokens or response, response),
                          max_calls_per_turn=s.max_calls_per_turn, max_response_tokens=response)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        tokenizer = self.tokenizer
        machinery = await shared(self.settings, lambda: tokenizer)
        generator = ServerGenerator(self.server_manager, sampling_params, machinery.stop_ids, vocab=machinery.vocab,
                                    prompt_limit=int(self.rollout_config.prompt_length), request_id=uuid.uuid4().hex)
        sampling = SamplingParams(temperature=float(sampling_params.get("temperature", 1.0)),
                                  top_p=float(sampling_params.get("top_p", 1.0)))
        task, scale, harness = "?", "?", self.settings.harness
        group_id = f"row-{kwargs.get('index', 0)}"
        try:
            # a row is data: refused here (names only, and only what this loop's sources list) it is this
            # sample's failure, never the batch's
            row = EpisodeRow.from_extra_info(kwargs.get("extra_info"), default_harness=self.settings.harness)
            (task, scale), harness = row.names(), row.harness
            ref = row.ref(machinery.catalog)
            group_id = f"{ref.task_id}-{ref.scale}-{kwargs.get('index', 0)}"
            traj = await machinery.episode(ref, generator, row.harness, limits=self.limits(), sampling=sampling,
                                           group_id=group_id)
        except PromptTooLong:  # the run's lengths do not fit its tasks: a config error, for the whole run
            raise
        except Exception as exc:  # noqa: BLE001 - verl fails the whole batch on one raise: this sample's alone
            log.warning("progagent episode %s failed (%s): %s", group_id, loggable(type(exc).__name__), loggable(exc))
            traj = failed_episode(task, scale, group_id, harness, exc, tokenizer.eos_token_id or 0)
        if traj.termination == "generator_error":
            log.warning("progagent episode %s ended with generator_error: %s", traj.group_id,
                        loggable(generator.last_error))
        if traj.verifier_error is not None:  # its reward is 0 and not the policy's: say why
            log.warning("progagent episode %s: the verifier could not judge it (%s): %s", traj.group_id, traj.cause,
                        loggable(traj.verifier_error))
        return agent_loop_output(traj, generator)


def failed_episode(task_id: str, scale: str, group_id: str, harness: str, exc: BaseException, pad: int) -> Trajectory:
    """The sample of an episode that raised (its environment would not open, a worker's own error): one
    padding token of prompt and of response, the response masked out (no gradient), reward 0, its cause
    the step that failed (envs.runtime.episode.mark_cause) or `infra/worker_error`, so verl's logged `infra`
    key counts it. Why not raise: verl's AgentLoopWorker gathers its samples together, so one raise loses
    every episode of the batch."""
    cause = getattr(exc, "outcome_cause", None) or "infra/worker_error"
    return Trajectory(task_id=task_id, scale=scale, harness=harness, group_id=group_id, sample_idx=0, policy_version=0,
                      token_ids=[pad, pad], loss_mask=[0, 0], logprobs=[0.0, 0.0], prompt_len=1, turns=[],
                      final_answer="", termination="env_error", verifier_error=f"{type(exc).__name__}: {exc}"[:2000],
                      cause=check_cause(cause))


def agent_loop_output(traj: Trajectory, generator: ServerGenerator) -> AgentLoopOutput:
    """A judged trajectory as verl's AgentLoopOutput (module docstring)."""
    p = traj.prompt_len
    extra: dict[str, Any] = {"reward_extra_info": episode_info(traj), "progagent_task": f"{traj.task_id}@{traj.scale}",
                             "progagent_termination": traj.termination, "request_id": generator.request_id}
    if generator.min_version is not None:
        extra["min_global_steps"], extra["max_global_steps"] = generator.min_version, generator.max_version
    messages = 1 + sum(1 + (1 if t.observations else 0) for t in traj.turns)  # user, assistant, tool turns
    return AgentLoopOutput(
        prompt_ids=traj.token_ids[:p], response_ids=traj.token_ids[p:], response_mask=traj.loss_mask[p:],
        response_logprobs=traj.logprobs[p:], reward_score=float(traj.reward), num_turns=messages,
        metrics=AgentLoopMetrics(generate_sequences=float(traj.metrics.get("generate_s", 0.0)),
                                 tool_calls=float(traj.metrics.get("execute_s", 0.0))),
        extra_fields=extra)
