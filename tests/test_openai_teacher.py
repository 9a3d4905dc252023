"""The openai backend against replayed chat.completions responses (the remote API is the boundary)."""

import json
from pathlib import Path

import httpx
from openai import AsyncOpenAI

from envs.format.library import get_task
from envs.format.task_env import LibraryTaskEnv
from rollout.episode import run_episode
from rollout.generators.openai_backend import OpenAIGenerator, to_api_messages
from tests.test_rollout import assert_aligned, cache, renderer, tiny_path, tokenizer  # noqa: F401

FIXTURE = Path(__file__).parent / "fixtures" / "openai_replay" / "retail_clearance_markdown_ptc_v0.json"


def replay_client(responses: list[dict], seen: list[dict]) -> AsyncOpenAI:
    queue = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/chat/completions")
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=queue.pop(0))

    return AsyncOpenAI(base_url="http://replay.invalid/v1", api_key="test",
                       http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))


async def test_api_teacher_through_runtime(renderer, runtime, cache):  # noqa: F811
    record = json.loads(FIXTURE.read_text())
    seen: list[dict] = []
    gen = OpenAIGenerator("teacher-model-2026-10", client=replay_client(record["responses"], seen),
                          tokenizer=renderer.tok)
    task = get_task(record["task"])
    traj = await run_episode(LibraryTaskEnv(task, record["scale"], cache), runtime, gen, renderer, record["harness"])
    assert traj.termination == "answer" and traj.reward == 1.0, (traj.criteria, traj.final_answer)
    assert traj.final_answer.endswith("ANSWER: 18; 58316.84")
    assert all(lp == 0.0 for lp in traj.logprobs)  # text in, text out: never an RL sample
    assert gen.usage["requests"] == len(record["responses"])
    # the conversation sent back to the API is structured: tool results answer the right call ids
    last = seen[-1]["messages"]
    calls = [m for m in last if m["role"] == "assistant" and m.get("tool_calls")]
    tools = [m for m in last if m["role"] == "tool"]
    assert len(calls) == len(tools) == len(record["responses"]) - 1
    assert [c["tool_calls"][0]["id"] for c in calls] == [t["tool_call_id"] for t in tools]
    assert seen[0]["tools"][0]["function"]["name"] == "programmatic_tool_call"


def test_api_message_conversion_keeps_error_notes():
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
            {"role": "assistant", "content": 'ok <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'},
            {"role": "tool", "content": "result"}, {"role": "tool", "content": "Error: only 1 tool call per turn"}]
    api = to_api_messages(msgs)
    assert api[2]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": 1}'}
    assert api[3] == {"role": "tool", "tool_call_id": "call_1", "content": "result"}
    assert api[4]["role"] == "user" and "only 1 tool call" in api[4]["content"]


async def test_the_providers_messages_go_back_verbatim(renderer, runtime, cache):  # noqa: F811
    """Each request extends the last one exactly: the provider's assistant message (its content, its own
    tool-call ids, its reasoning) is echoed as it came, and each of its call ids is answered by a tool
    message, also when it asked for two calls and one is run."""
    task = get_task("retail_clearance_markdown")

    def reply(i: int, calls: list[tuple[str, str]], content: str | None = None) -> dict:
        message = {"role": "assistant", "content": content, "reasoning_content": f"thinking {i}",
                   "tool_calls": [{"id": cid, "type": "function",
                                   "function": {"name": "programmatic_tool_call", "arguments": json.dumps({"code": code})}}
                                  for cid, code in calls] or None}
        return {"id": f"r{i}", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}

    responses = [reply(0, [("toolu_01XyZ", "print(1)")]),
                 reply(1, [("toolu_02a", "print(2)"), ("toolu_02b", "print(3)")], content="two at once"),
                 reply(2, [], content="ANSWER: 0; 0")]
    seen: list[dict] = []
    gen = OpenAIGenerator("m", client=replay_client(responses, seen), tokenizer=renderer.tok)
    await run_episode(LibraryTaskEnv(task, "v0", cache), runtime, gen, renderer, "ptc")
    assert len(seen) == 3
    for before, after in zip(seen, seen[1:], strict=False):
        assert after["messages"][: len(before["messages"])] == before["messages"]  # an extension, never a rewrite
        assert after["tools"] == before["tools"]
    last = seen[-1]["messages"]
    first, second = [m for m in last if m["role"] == "assistant"]
    assert first == {k: v for k, v in responses[0]["choices"][0]["message"].items() if v is not None}
    assert second["tool_calls"][1]["id"] == "toolu_02b" and second["reasoning_content"] == "thinking 1"
    answered = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert answered == ["toolu_01XyZ", "toolu_02a", "toolu_02b"]  # every id the provider issued
