"""The token-in-token-out agent loop: one task episode → one `Trajectory`.

    prompt ids  = chat template (system + instruction, with the harness's tools), tokenised once
    loop:  ids += generator output (exactly as generated; loss mask 1, behaviour log-probs kept)
           parse the reply → execute the calls in the episode → render ONLY the new observation
           messages (the template's delta) → ids += their ids (loss mask 0)
Earlier turns are never re-tokenised, so the learner trains on exactly the generator's tokens and
the rendered conversation is `decode(ids)`.

Limits: `max_turns` model turns; `max_context_tokens` for the whole sequence (the next turn's
generation budget is what is left; an observation that would not fit ends the episode with
`context_limit`); `max_response_tokens` the same for everything after the prompt (`response_limit`);
`max_new_tokens` per turn (a cut turn gets an error observation and continues).
An episode the runtime ended (its disk limit) ends the loop with `disk_limit` after that observation.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from envs.runtime.episode import Episode
from rollout.chat_template import BoundedTemplate
from rollout.generators.base import Generator, GeneratorError
from rollout.harness import Harness
from rollout.parser import ParsedTurn, parse_turn, strip_think
from rollout.program_features import FEATURES, program_features
from schema.config import LoopLimits
from schema.records import Generation, Prompt, SamplingParams, Trajectory, Turn, escape_surrogates

#: how a template that has no tools section is told the tools (ChatRenderer.states_tools): the Hermes
#: form our parser reads (rollout/parser.py), in the system message
TOOLS_SECTION = ("# Tools\n\nYou may call the functions whose signatures are listed inside <tools></tools>:\n<tools>\n"
                 "{tools}\n</tools>\n\nTo call one, reply with a JSON object of its name and arguments inside "
                 "<tool_call></tool_call> tags:\n<tool_call>\n{{\"name\": <function-name>, \"arguments\": "
                 "<args-json-object>}}\n</tool_call>")


def tools_section(tools: list[dict[str, Any]]) -> str:
    return TOOLS_SECTION.format(tools="\n".join(json.dumps(t, ensure_ascii=False) for t in tools))


class ChatRenderer:
    """Renders the prompt and each observation delta with the tokenizer's own chat template.

    The template must be append-only for assistant, user and tool turns (rendering one more message
    only appends text): each turn's tokens are then appended once and never re-tokenised. A template
    that is not is refused here, with the turn that breaks it, and so is one that cannot render these
    probe turns within rollout/chat_template.py's deadline and size cap (TemplateRefused, naming the
    model), before any episode. A template without a tools section (a
    chat model such as SmolLM2) gets the tools stated in the system message (`states_tools`,
    TOOLS_SECTION), so the model still sees every tool and the call format the parser reads."""

    PROBE = "\x00probe\x00"
    PROBE_TOOL = {"type": "function", "function": {"name": "progagent_probe_tool", "description": "probe",
                                                   "parameters": {"type": "object", "properties": {}}}}

    def __init__(self, tokenizer: Any):
        self.tok = tokenizer
        self._templates: dict[str, BoundedTemplate] = {}
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("the tokenizer has no chat template (ProgAgent renders every turn with the model's own)")
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
        self.states_tools = "progagent_probe_tool" not in self._render(base, gen=True, tools=[self.PROBE_TOOL])
        self.user_turn("u")  # a template that is not append-only for user or tool turns: refused now
        self.observation(["t"])

    def _render(self, messages: list[dict[str, Any]], gen: bool = False, tools: list | None = None) -> str:
        """The template's text, as apply_chat_template renders it (the tokenizer's special tokens as
        variables), within rollout/chat_template.py's deadline and size cap: a model's template is
        third-party code run by every process that renders a prompt."""
        source = self.tok.get_chat_template(None, tools) if hasattr(self.tok, "get_chat_template") else None
        if not isinstance(source, str):  # not a Hugging Face tokenizer (a test's stand-in)
            return self.tok.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=gen)
        template = self._templates.get(source)
        if template is None:
            where = f"the chat template of {getattr(self.tok, 'name_or_path', '') or 'the tokenizer'}"
            template = self._templates[source] = BoundedTemplate(source, where)
        return template.render(messages=messages, tools=tools, documents=None, add_generation_prompt=gen,
                               **dict(getattr(self.tok, "special_tokens_map", {})))

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    def prompt(self, system: str, user: str, tools: list[dict[str, Any]]) -> tuple[str, list[int]]:
        if tools and self.states_tools:
            system, tools = f"{system}\n\n{tools_section(tools)}", []
        text = self._render([{"role": "system", "content": system}, {"role": "user", "content": user}], True,
                            tools or None)
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


class _Run:
    """One episode's loop, as verl's tool agent loop is written: explicit states, each a short method.

        generate  → the model's turn (parse it)            → answer: next_step | calls: act
        act       → run the turn's calls in the episode    → observe
        observe   → the observations' tokens into the sequence
        next_step → a multi-step task's next instruction, or the end

    The token ids (loss mask 1 on the model's own tokens, their behaviour log-probs) and the same
    conversation as chat messages (for chat-API generators) grow together; a state that ends the
    episode sets `termination` and returns False (None where it would return its turn or observations)."""

    def __init__(self, generator: Generator, renderer: ChatRenderer, episode: Episode, harness: Harness,
                 instruction: str, limits: LoopLimits, sampling: SamplingParams, deadline: float | None,
                 followup: Callable[[str], Awaitable[str | None]] | None):
        self.generator, self.renderer, self.episode, self.harness = generator, renderer, episode, harness
        self.limits, self.sampling, self.deadline, self.followup = limits, sampling, deadline, followup
        self.specs = harness.tools(episode.tools())
        self.schemas = Harness.schemas(self.specs)
        _, self.ids = renderer.prompt(harness.system_prompt, instruction, self.specs)
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": harness.system_prompt},
                                               {"role": "user", "content": instruction}]
        self.prompt_len = len(self.ids)
        self.mask, self.logprobs = [0] * self.prompt_len, [0.0] * self.prompt_len
        self.turns: list[Turn] = []
        self.programs: list[str] = []
        self.versions: list[int] = []
        self.answer, self.termination, self.tool_output_tokens = "", "max_turns", 0
        self.api = {"api_requests": 0.0, "api_prompt_tokens": 0.0, "api_completion_tokens": 0.0}  # a chat API's cost

    def append(self, new: list[int], trained: bool, lps: list[float] | None = None) -> None:
        self.ids.extend(new)
        self.mask.extend([1 if trained else 0] * len(new))
        self.logprobs.extend(lps if lps is not None else [0.0] * len(new))

    def end(self, termination: str) -> bool:
        self.termination = termination
        return False

    def room(self) -> tuple[int, str]:
        """Tokens the sequence may still grow by, and the limit that binds (context or response)."""
        context = self.limits.max_context_tokens - len(self.ids)
        if self.limits.max_response_tokens is None:
            return context, "context_limit"
        response = self.limits.max_response_tokens - (len(self.ids) - self.prompt_len)
        return (response, "response_limit") if response < context else (context, "context_limit")

    def fits(self, new: list[int]) -> bool:
        """Whether `new` (tokens the model did not write) fits and leaves the model a token; if not the
        episode ends at the binding limit."""
        left, limit = self.room()
        return len(new) < left or self.end(limit)

    async def generate(self) -> tuple[Generation, Turn, ParsedTurn] | None:
        """The model's next turn, parsed; None when no turn can start (time, context, generator)."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.termination = "time_limit"
            return None
        left, limit = self.room()
        budget = min(self.limits.max_new_tokens, left)
        if budget < 1:
            self.termination = limit
            return None
        t0 = time.perf_counter()
        try:
            gen = await self.generator.generate(Prompt(list(self.ids), list(self.messages), self.specs),
                                                msgspec.structs.replace(self.sampling, max_new_tokens=budget))
            generate_s = time.perf_counter() - t0
        except GeneratorError:
            self.termination = "generator_error"
            return None
        if len(gen.token_ids) > budget:  # a backend that overran its budget (a chat API re-tokenised): cut
            gen = msgspec.structs.replace(gen, token_ids=gen.token_ids[:budget], logprobs=gen.logprobs[:budget],
                                          finish_reason="length")
        self.append(gen.token_ids, True, gen.logprobs)
        self.versions.append(gen.policy_version)
        if gen.api_prompt_tokens or gen.api_completion_tokens:
            self.api["api_requests"] += 1
            self.api["api_prompt_tokens"] += gen.api_prompt_tokens
            self.api["api_completion_tokens"] += gen.api_completion_tokens
        text = self.renderer.tok.decode(gen.token_ids, skip_special_tokens=False)
        if text.endswith(self.renderer.end_text):
            text = text[: -len(self.renderer.end_text)]
        turn = Turn(action="answer", text=text, new_tokens=len(gen.token_ids), finish_reason=gen.finish_reason,
                    generate_s=generate_s, policy_version=gen.policy_version)
        self.turns.append(turn)
        reply: dict[str, Any] = {"role": "assistant", "content": text}
        if gen.api_message is not None:  # a chat API's own message goes back to it as it came
            reply["api_message"] = gen.api_message
        self.messages.append(reply)
        return gen, turn, parse_turn(text, self.schemas, self.limits.max_calls_per_turn)

    async def next_step(self, gen: Generation, text: str) -> bool:
        """An answer: the environment's next instruction as a new user turn (True), or the end."""
        self.answer, self.termination = strip_think(text), "answer"
        following = await self.followup(self.answer) if self.followup is not None else None
        if following is None:
            return False
        user_ids = self.renderer.encode(self.renderer.turn_close(gen.finish_reason) + self.renderer.user_turn(following))
        if not self.fits(user_ids):
            return False
        self.append(user_ids, False)
        self.messages.append({"role": "user", "content": following})
        self.termination = "max_turns"
        return True

    async def act(self, gen: Generation, turn: Turn, parsed: ParsedTurn) -> list[str] | None:
        """Run the turn's calls; their observations (then the parser's notes), or None: the environment broke."""
        t1 = time.perf_counter()
        observations: list[str] = []
        if gen.finish_reason != "stop" and not parsed.calls:
            observations.append(f"Error: your reply was cut at {len(gen.token_ids)} tokens before it was complete; "
                                f"nothing was run. Keep replies shorter.")
            turn.errors.append("format: truncated")
        for call in parsed.calls:
            turn.calls.append({"name": call.name, "arguments": call.arguments})
            try:
                left = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
                out, calls, error = await self.harness.execute(self.episode, call, left)
            except Exception as exc:  # noqa: BLE001 - a broken environment ends the episode, recorded
                turn.errors.append(f"env: {type(exc).__name__}: {exc}")
                self.termination = "env_error"
                return None
            if call.name == "programmatic_tool_call":
                self.programs.append(call.arguments.get("code", ""))
            observations.append(out)
            turn.tool_calls.extend(calls)
            if error:
                turn.errors.append(error)
        observations.extend(parsed.errors)
        turn.errors.extend(f"format: {e.split(':', 1)[0]}" for e in parsed.errors if not e.startswith("Note"))
        turn.action = "program" if any(c["name"] == "programmatic_tool_call" for c in turn.calls) else \
            ("call" if turn.calls else "invalid")
        turn.execute_s = time.perf_counter() - t1
        return observations

    def observe(self, gen: Generation, turn: Turn, observations: list[str]) -> bool:
        """The observations into the conversation; False when they do not fit or the episode ended."""
        observations = [escape_surrogates(o) for o in observations]  # what a tokenizer cannot encode: escaped
        turn.observations = observations
        self.messages.extend({"role": "tool", "content": o} for o in observations)
        obs_ids = self.renderer.encode(self.renderer.turn_close(gen.finish_reason) + self.renderer.observation(observations))
        turn.observation_tokens = len(obs_ids)
        if not self.fits(obs_ids):
            return False
        self.append(obs_ids, False)
        self.tool_output_tokens += len(obs_ids)
        if getattr(self.episode, "ended", None):  # its disk limit: no more programs run (envs/runtime/episode.py)
            return self.end("disk_limit")
        return True

    def trajectory(self, task_id: str, scale: str, group_id: str, sample_idx: int) -> Trajectory:
        return Trajectory(
            task_id=task_id, scale=scale, harness=self.harness.name, group_id=group_id, sample_idx=sample_idx,
            policy_version=min(self.versions) if self.versions else self.generator.policy_version,
            token_ids=self.ids, loss_mask=self.mask, logprobs=self.logprobs, prompt_len=self.prompt_len,
            turns=self.turns, final_answer=self.answer, termination=self.termination, context_tokens=len(self.ids),
            tool_output_tokens=self.tool_output_tokens,
            metrics=_metrics(self.turns, self.programs) | ({k: v for k, v in self.api.items()} if self.api["api_requests"] else {}),
            policy_versions=self.versions, uid=f"{group_id}:{sample_idx}:{uuid.uuid4().hex[:8]}")


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
    run = _Run(generator, renderer, episode, harness, instruction, limits or LoopLimits(),
               sampling or SamplingParams(), deadline, followup)
    for _ in range(run.limits.max_turns):
        turn = await run.generate()
        if turn is None:
            break
        gen, record, parsed = turn
        if parsed.is_answer and gen.finish_reason == "stop":
            if await run.next_step(gen, record.text):
                continue
            break
        observations = await run.act(gen, record, parsed)
        if observations is None or not run.observe(gen, record, observations):
            break
    return run.trajectory(task_id, scale, group_id, sample_idx)
