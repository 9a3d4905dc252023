"""The three harnesses: which tools the model is offered, what it is told, how a call is executed.

- DTC: the task's tools, one structured call per turn; the raw result returns to the context.
- PTC: only `programmatic_tool_call(code)`; programs call the task's tools from the kernel and only
  what they print returns.
- Hybrid: both at once.
The same task pool, instruction and verifier serve all three (the paper's controlled comparison).
"""

from __future__ import annotations

from typing import Any

from envs.runtime import ptc_tool
from envs.runtime.episode import Episode
from rollout.parser import ParsedCall
from schema.records import ToolCallSummary

HARNESSES = ("dtc", "ptc", "hybrid")

SYSTEM_COMMON = (
    "You are an operations agent. You complete the user's task by calling tools, then reply with a final answer. "
    "A reply without a tool call ends the task, so only answer when the work is done and follow the answer format "
    "the user asks for."
)
SYSTEM = {
    "dtc": SYSTEM_COMMON + " Call one tool per turn; its raw result is returned to you.",
    "ptc": SYSTEM_COMMON + (
        " Work by writing Python programs with programmatic_tool_call. Variables persist between programs, so fetch "
        "data once and reuse it. Only what a program prints comes back to you: print short summaries, not raw data. "
        "Inspect one result before processing many, page through list results, and use loops, conditions and "
        "try/except ToolError to handle many records and failures in one program."),
    "hybrid": SYSTEM_COMMON + (
        " You can call the task's tools directly (one per turn, raw results come back) or write Python programs "
        "with programmatic_tool_call, where variables persist and only printed output comes back. Prefer programs "
        "for work over many records."),
}


def function_spec(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


def program_error_label(result: Any) -> str:
    """A failed program's label in its turn's errors (what schema/outcomes.policy_cause reads):
    program_oom (killed at its memory limit, or MemoryError under rlimits), program_timeout,
    program_died (the kernel ended otherwise), program_disk_limit, or program_<ExceptionName>."""
    if result.oom_killed or result.error_name == "MemoryError":
        return "program_oom"
    if result.timed_out:
        return "program_timeout"
    if result.died:
        return "program_died"
    if result.error_name:
        return f"program_{result.error_name}"
    return "program_disk_limit" if result.ended else "program_error"


class Harness:
    def __init__(self, name: str, max_output_chars: int = 50_000, program_timeout_s: float = 120.0):
        if name not in HARNESSES:
            raise ValueError(f"unknown harness {name!r}; expected one of {', '.join(HARNESSES)}")
        self.name = name
        self.system_prompt = SYSTEM[name]
        self.max_output_chars = max_output_chars
        self.program_timeout_s = program_timeout_s

    def tools(self, catalogue: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The function specs offered to the model, given the episode's tool catalogue."""
        specs = []
        if self.name in ("ptc", "hybrid"):
            specs.append(function_spec(ptc_tool.NAME, ptc_tool.description(catalogue, self.max_output_chars,
                                                                              self.program_timeout_s),
                                       ptc_tool.INPUT_SCHEMA))
        if self.name in ("dtc", "hybrid"):
            specs += [function_spec(t["name"], t.get("description") or "", t.get("input_schema") or {})
                      for t in catalogue]
        return specs

    @staticmethod
    def schemas(specs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {s["function"]["name"]: s["function"]["parameters"] for s in specs}

    async def execute(self, episode: Episode, call: ParsedCall,
                      time_left: float | None = None) -> tuple[str, list[ToolCallSummary], str | None]:
        """Run one parsed call; returns (observation text, tool calls made, error or None). A program
        runs for at most `program_timeout_s`, or `time_left` of the episode when that is less."""
        if call.name == ptc_tool.NAME:
            code = call.arguments.get("code")
            if not isinstance(code, str):
                return ("Error: programmatic_tool_call needs `code`, a string of Python source.", [],
                        "bad_program_argument")
            timeout = self.program_timeout_s if time_left is None else min(self.program_timeout_s, time_left)
            result = await episode.run_program(code, timeout_s=timeout)
            calls = [ToolCallSummary(tool=c.tool, ok=c.ok, source="program", result_chars=c.result_chars)
                     for c in result.tool_calls]
            return result.text, calls, (program_error_label(result) if result.is_error else None)
        direct = await episode.call_tool(call.name, call.arguments)
        summary = ToolCallSummary(tool=call.name, ok=not direct.is_error, source="direct",
                                  result_chars=direct.record.result_chars)
        return direct.text, [summary], ("tool_error" if direct.is_error else None)
