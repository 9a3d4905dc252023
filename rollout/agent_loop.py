"""The token-in-token-out agent loop: one task episode → one `Trajectory`.

    prompt ids  = chat template (system + instruction, with the harness's tools), tokenised once
    loop:  ids += generator output (exactly as generated; loss mask 1, behaviour log-probs kept)
           parse the reply → execute the calls in the episode → render ONLY the new observation
           messages (the template's delta) → ids += their ids (loss mask 0)
Earlier turns are never re-tokenised, so the learner trains on exactly the generator's tokens and
the rendered conversation is `decode(ids)`.

Limits: `max_turns` model turns; `max_context_tokens` for the whole sequence (the next turn's
generation budget is what is left; an observation that would not fit ends the episode with
`context_limit`); `max_new_tokens` per turn (a cut turn gets an error observation and continues).
An episode the runtime ended (its disk limit) ends the loop with `disk_limit` after that observation.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from envs.runtime.episode import Episode
from rollout.generators.base import Generator, GeneratorError
from rollout.harness import Harness
from rollout.parser import parse_turn, strip_think
from rollout.program_features import FEATURES, program_features
from schema.config import LoopLimits
from schema.records import Generation, SamplingParams, Trajectory, Turn


class ChatRenderer:
    """Renders the prompt and each observation delta with the tokenizer's (append-only) template."""

    PROBE = "\x00probe\x00"

    def __init__(self, tokenizer: Any):
        self.tok = tokenizer
        base = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        head = self._render(base, gen=True)
        closed = self._render(base + [{"role": "assistant", "content": self.PROBE}])
        if not closed.startswith(head + self.PROBE):
            raise ValueError("the chat template is not append-only for assistant turns")
        after = closed[len(head) + len(self.PROBE):]  # e.g. "<|im_end|>\n"
        self.end_text = tokenizer.convert_ids_to_tokens(tokenizer.eos_token_id) if tokenizer.eos_token_id is not None \
            else "<|im_end|>"
        if not after.startswith(self.end_text):
            raise ValueError(f"the template closes assistant turns with {after!r}, not the eos token {self.end_text!r}")
        self.after_eos = after[len(self.end_text):]  # e.g. "\n"
        self._base = base + [{"role": "assistant", "content": self.PROBE}]
        self._base_text = closed

    def _render(self, messages: list[dict[str, Any]], gen: bool = False, tools: list | None = None) -> str:
        return self.tok.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=gen)

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    def prompt(self, system: str, user: str, tools: list[dict[str, Any]]) -> tuple[str, list[int]]:
        text = self._render([{"role": "system", "content": system}, {"role": "user", "content": user}], True, tools)
        return text, self.encode(text)

    def turn_close(self, finish_reason: str) -> str:
        """Text that closes a model turn after the generated tokens (not trained on)."""
        return self.after_eos if finish_reason == "stop" else self.end_text + self.after_eos

    def user_turn(self, text: str) -> str:
        """Text that opens a new user turn (and the assistant's reply after it) after a closed model turn."""
        full = self._render(self._base + [{"role": "user", "content": text}], gen=True)
        if not full.startswith(self._base_text):
            raise ValueError("the chat template is not append-only for user turns")
        return full[len(self._base_text):]

    def observation(self, texts: list[str]) -> str:
        full = self._render(self._base + [{"role": "tool", "content": t} for t in texts], gen=True)
        if not full.startswith(self._base_text):
            raise ValueError("the chat template is not append-only for tool turns")
        return full[len(self._base_text):]


def _metrics(turns: list[Turn], programs: list[str]) -> dict[str, float]:
    m: dict[str, float] = {
        "turns": len(turns),
        "tool_calls_direct": sum(1 for t in turns for c in t.tool_calls if c.source == "direct"),
        "tool_calls_program": sum(1 for t in turns for c in t.tool_calls if c.source == "program"),
        "tool_errors": sum(1 for t in turns for c in t.tool_calls if not c.ok),
        "format_errors": sum(1 for t in turns for e in t.errors if e.startswith("format:")),
        "program_errors": sum(1 for t in turns for e in t.errors if e.startswith("program")),
        "programs": len(programs),
        "generate_s": sum(t.generate_s for t in turns),
        "execute_s": sum(t.execute_s for t in turns),
        "new_tokens": sum(t.new_tokens for t in turns),
    }
    feats = [program_features(p) for p in programs]
    for key in (*FEATURES, "dtc_like", "syntax_error"):
        m[f"program_{key}"] = float(sum(f[key] for f in feats))
    m["programs_with_" + "loops"] = float(sum(1 for f in feats if f["loops"]))
    m["programs_with_try_except"] = float(sum(1 for f in feats if f["try_except"]))
    m["dtc_like_rate"] = m["program_dtc_like"] / len(programs) if programs else 0.0
    return m


async def _generate(generator: Generator, renderer: ChatRenderer, ids: list[int], messages: list[dict[str, Any]],
                    specs: list[dict[str, Any]], sampling: SamplingParams) -> Generation:
    """Token backends get the exact ids; chat backends (API models) get the messages, and their text
    reply is tokenised with the project tokenizer (zero log-probs: never used for RL updates)."""
    if getattr(generator, "chat_api", False):
        text, finish = await generator.generate_chat(messages, specs, sampling)
        new = renderer.encode(text)[: sampling.max_new_tokens - 1]
        end = renderer.tok.convert_tokens_to_ids(renderer.end_text)
        return Generation(token_ids=new + [end] if finish == "stop" else new, logprobs=[0.0] * (len(new) + (finish == "stop")),
                          finish_reason=finish, policy_version=generator.policy_version)
    return await generator.generate(list(ids), sampling)


async def run_agent(generator: Generator, renderer: ChatRenderer, episode: Episode, harness: Harness,
                    instruction: str, *, task_id: str, scale: str, group_id: str = "", sample_idx: int = 0,
                    limits: LoopLimits | None = None, sampling: SamplingParams | None = None,
                    deadline: float | None = None,
                    followup: Callable[[str], Awaitable[str | None]] | None = None) -> Trajectory:
    """Drive one episode to a final answer or a limit. Never raises for what the model does.
    `deadline` (time.monotonic()): the loop's wall clock; no turn starts past it ("time_limit") and no
    program runs past it. `followup(answer)`: the environment's next instruction after an answer (a
    multi-step task's next step), given as a new user turn in the same conversation; None ends it.
    The turn limit is the whole episode's."""
    limits = limits or LoopLimits()
    sampling = sampling or SamplingParams()
    specs = harness.tools(episode.tools())
    schemas = Harness.schemas(specs)
    _, ids = renderer.prompt(harness.system_prompt, instruction, specs)
    messages = [{"role": "system", "content": harness.system_prompt}, {"role": "user", "content": instruction}]
    prompt_len = len(ids)
    mask, logprobs = [0] * prompt_len, [0.0] * prompt_len
    turns: list[Turn] = []
    programs: list[str] = []
    versions: list[int] = []
    answer, termination, tool_output_tokens = "", "max_turns", 0

    def append(new: list[int], trained: bool, lps: list[float] | None = None) -> None:
        ids.extend(new)
        mask.extend([1 if trained else 0] * len(new))
        logprobs.extend(lps if lps is not None else [0.0] * len(new))

    for _ in range(limits.max_turns):
        if deadline is not None and time.monotonic() >= deadline:
            termination = "time_limit"
            break
        budget = min(limits.max_new_tokens, limits.max_context_tokens - len(ids))
        if budget < 1:
            termination = "context_limit"
            break
        t0 = time.perf_counter()
        try:
            gen = await _generate(generator, renderer, ids, messages, specs,
                                  msgspec.structs.replace(sampling, max_new_tokens=budget))
        except GeneratorError:
            termination = "generator_error"
            break
        gen_s = time.perf_counter() - t0
        append(gen.token_ids, True, gen.logprobs)
        versions.append(gen.policy_version)
        text = renderer.tok.decode(gen.token_ids, skip_special_tokens=False)
        if text.endswith(renderer.end_text):
            text = text[: -len(renderer.end_text)]
        parsed = parse_turn(text, schemas, limits.max_calls_per_turn)
        turn = Turn(action="answer", text=text, new_tokens=len(gen.token_ids), finish_reason=gen.finish_reason,
                    generate_s=gen_s, policy_version=gen.policy_version)
        turns.append(turn)
        messages.append({"role": "assistant", "content": text})
        truncated = gen.finish_reason != "stop"
        if parsed.is_answer and not truncated:
            answer, termination = strip_think(text), "answer"
            following = await followup(answer) if followup is not None else None
            if following is None:
                break
            user_ids = renderer.encode(renderer.turn_close(gen.finish_reason) + renderer.user_turn(following))
            if len(ids) + len(user_ids) >= limits.max_context_tokens:
                termination = "context_limit"
                break
            append(user_ids, False)
            messages.append({"role": "user", "content": following})
            termination = "max_turns"
            continue
        # execute the calls, then collect every observation of this turn
        t1 = time.perf_counter()
        observations: list[str] = []
        if truncated and not parsed.calls:
            observations.append(f"Error: your reply was cut at {len(gen.token_ids)} tokens before it was complete; "
                                f"nothing was run. Keep replies shorter.")
            turn.errors.append("format: truncated")
        for call in parsed.calls:
            turn.calls.append({"name": call.name, "arguments": call.arguments})
            try:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                out, calls, error = await harness.execute(episode, call, left)
            except Exception as exc:  # noqa: BLE001 - a broken environment ends the episode, recorded
                turn.errors.append(f"env: {type(exc).__name__}: {exc}")
                termination = "env_error"
                break
            if call.name == "programmatic_tool_call":
                programs.append(call.arguments.get("code", ""))
            observations.append(out)
            turn.tool_calls.extend(calls)
            if error:
                turn.errors.append(error)
        if termination == "env_error":
            break
        observations.extend(parsed.errors)
        turn.errors.extend(f"format: {e.split(':', 1)[0]}" for e in parsed.errors if not e.startswith("Note"))
        turn.action = "program" if any(c["name"] == "programmatic_tool_call" for c in turn.calls) else \
            ("call" if turn.calls else "invalid")
        turn.execute_s = time.perf_counter() - t1
        turn.observations = observations
        messages.extend({"role": "tool", "content": o} for o in observations)
        obs_ids = renderer.encode(renderer.turn_close(gen.finish_reason) + renderer.observation(observations))
        turn.observation_tokens = len(obs_ids)
        if len(ids) + len(obs_ids) >= limits.max_context_tokens:
            termination = "context_limit"
            break
        append(obs_ids, False)
        tool_output_tokens += len(obs_ids)
        if getattr(episode, "ended", None):  # its disk limit: no more programs run (envs/runtime/episode.py)
            termination = "disk_limit"
            break

    metrics = _metrics(turns, programs)
    return Trajectory(
        task_id=task_id, scale=scale, harness=harness.name, group_id=group_id, sample_idx=sample_idx,
        policy_version=min(versions) if versions else generator.policy_version, token_ids=ids, loss_mask=mask,
        logprobs=logprobs, prompt_len=prompt_len, turns=turns, final_answer=answer, termination=termination,
        context_tokens=len(ids), tool_output_tokens=tool_output_tokens, metrics=metrics, policy_versions=versions,
        uid=f"{group_id}:{sample_idx}:{uuid.uuid4().hex[:8]}")
