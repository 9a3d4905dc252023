"""ProgAgent's tasks through verifiers' own machinery (verifiers 0.4.0, the `progagent-tasks` package).

verifiers loads the taskset and its harness as plug-ins by id, builds its single-agent environment with
the subprocess runtime, serves its interception (the proxy that records every model call into the
trace's message graph) and scores the task. The one double is the policy's OpenAI-compatible server
on loopback (tests/servers/chat_endpoint.py), replying in the chat.completions wire format with the
provider's own tool-call ids. Runs where verifiers is installed (scripts/test.sh's verifiers
environment: verifiers pins mcp==2.0.0).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

vf = pytest.importorskip("verifiers.v1", reason="verifiers (the verifiers environment of scripts/test.sh)")
pytest.importorskip("progagent_tasks", reason="the progagent-tasks package (pip install -e integrations/verifiers)")

from envs.format.library import split_cells  # noqa: E402
from integrations.host import close_shared  # noqa: E402
from tests.servers.chat_endpoint import ChatEndpoint  # noqa: E402

STARTER = Path(__file__).resolve().parents[1] / "envs" / "starter_tasks"
TASK = "hr_leave_decisions"


def program_script(path: Path) -> list[dict]:
    """The assistant messages of a model that runs `path`'s cells as programs, then answers."""
    out = [{"role": "assistant", "content": None, "reasoning_content": f"step {i}",
            "tool_calls": [{"id": f"chatcmpl-tool-{i:03d}abc", "type": "function",
                            "function": {"name": "programmatic_tool_call", "arguments": json.dumps({"code": cell})}}]}
           for i, cell in enumerate(split_cells(path.read_text()))]
    return [*out, {"role": "assistant", "content": "ANSWER: done"}]


class Policy:
    """The policy's endpoint: the scripted reply for the turn the request is at."""

    def __init__(self, script: list[dict]):
        self.script = script
        self.requests: list[dict] = []

    def __call__(self, path: str, body: dict):
        self.requests.append(body)
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        message = self.script[turn]
        return 200, {"id": f"cmpl-{turn}", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "message": message,
                                  "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                     "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}


async def run_task(script_path: Path, monkeypatch, env_data: dict | None = None):
    """One episode of TASK through verifiers' own environment (`env_data`: the task's `env` replaced,
    as a task list downloaded from elsewhere could have it)."""
    monkeypatch.setenv("PROGAGENT_POLICY_KEY", "local-secret")
    policy = Policy(program_script(script_path))
    endpoint = ChatEndpoint(policy)
    try:
        cfg = vf.resolve_env_config({
            "taskset": {"id": "progagent-tasks", "library": str(STARTER), "tasks": [TASK], "scales": ["v0"]},
            "agent": {"runtime": {"type": "subprocess"},
                      "harness": {"id": "progagent-tasks", "progagent": {
                          "max_episodes": 2, "runtime": {"warm_pool": 1}, "library": str(STARTER)}}}})
        env = vf.load_environment(cfg)
        (task,) = list(env.taskset)
        if env_data is not None:
            task = task.with_data(env=json.dumps(env_data))
        ctx = vf.ModelContext(model="policy", client=vf.EvalClientConfig(base_url=endpoint.url,
                                                                         api_key_var="PROGAGENT_POLICY_KEY"))
        async with env.serving():
            episode = await env.run_episode(task, ctx)
        return episode.traces[0], policy
    finally:
        endpoint.close()
        await close_shared()


async def test_the_oracle_program_scores_one_in_one_branch(monkeypatch):
    trace, policy = await run_task(STARTER / TASK / "oracle.py", monkeypatch)
    assert not trace.errors, trace.errors
    assert trace.reward == 1.0 and trace.state.termination == "answer"
    assert trace.metrics["acc"] == 1.0 and trace.metrics["tool_calls_program"] > 1
    assert trace.num_branches == 1  # every request extended the last: one training sample
    assert len(policy.requests) == len(program_script(STARTER / TASK / "oracle.py"))
    # verifiers' proxy passed the harness's conversation on: tool results answer the provider's own ids
    last = policy.requests[-1]["messages"]
    assert [m["tool_call_id"] for m in last if m["role"] == "tool"] == \
        [m["tool_calls"][0]["id"] for m in last if m["role"] == "assistant"]


async def test_a_wrong_program_scores_zero(monkeypatch):
    trace, _ = await run_task(STARTER / TASK / "wrong" / "approve_all.py", monkeypatch)
    assert not trace.errors, trace.errors
    assert trace.reward == 0.0 and trace.state.termination == "answer"
    assert 0 < trace.metrics["score"] < 1 and trace.num_branches == 1


async def test_re_derived_assistant_messages_would_split_the_episode(monkeypatch):
    """Why the echo matters: the same episode with each assistant message rebuilt from its text (the
    provider's ids and reasoning lost) is two branches to verifiers: two training samples of prefixes."""
    from rollout.generators import openai_backend

    generate = openai_backend.OpenAIGenerator.generate

    async def re_derived(self, prompt, sampling):
        gen = await generate(self, prompt, sampling)
        gen.api_message = None
        return gen

    monkeypatch.setattr(openai_backend.OpenAIGenerator, "generate", re_derived)
    trace, _ = await run_task(STARTER / TASK / "oracle.py", monkeypatch)
    assert trace.reward == 1.0 and trace.num_branches == 2


async def test_a_task_whose_data_carries_settings_runs_nothing_it_names(monkeypatch, tmp_path):
    """A task's `env` names its environment only: one that carries a library folder (or an interpreter)
    is refused naming the field, and nothing of the folder it named is loaded."""
    evil = tmp_path / "evil" / TASK
    evil.mkdir(parents=True)
    (evil / "task.toml").write_text("this is not read\n")
    env = {"kind": "library", "source": "library", "task": TASK, "scale": "v0", "library": str(evil.parent)}
    trace, policy = await run_task(STARTER / TASK / "oracle.py", monkeypatch, env)
    assert trace.reward in (None, 0.0) and policy.requests == []
    assert "`env`.library: a row names its environment only" in str(trace.errors) + str(trace.state.verifier_error)
    honest = {"kind": "library", "source": "library", "task": TASK, "scale": "v0"}
    trace, _ = await run_task(STARTER / TASK / "oracle.py", monkeypatch, honest)
    assert trace.reward == 1.0

