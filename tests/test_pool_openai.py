"""API models on the actor fabric (what `progagent eval sweep.models=[openai:NAME]` starts): a real Ray
fabric (a generator pool with the openai backend, an env worker, a judge) against a real HTTP server in
the test process that answers /v1/chat/completions from recorded responses. The generator actor runs
in another process, so nothing of ours is mocked: it takes exactly a live endpoint's code path."""

import asyncio
import json

import pytest

from actors.generator_pool import PoolClient
from envs.format.kind import TaskRef
from launch.rollout_cache import RolloutCache
from launch.rollouts import RolloutJob, RolloutRunner
from rollout.generators.base import GeneratorError
from schema.config import (
    EnvWorkerConfig,
    FabricConfig,
    GeneratorSpec,
    RolloutConfig,
    RuntimeConfig,
    TrainConfig,
    WeightTransportConfig,
)
from schema.records import EpisodeRequest, Prompt, SamplingParams
from tests.servers.chat_endpoint import ChatEndpoint
from tests.test_openai_teacher import FIXTURE

MODEL = "openai:teacher-model-2026-10"


class ReplayServer:
    """An OpenAI-compatible endpoint replaying (HTTP status, body) replies in order; the last one
    repeats. It records every request body in `seen`."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, bytes]] = []
        self.seen: list[dict] = []
        # the client's retries without its backoff
        self.endpoint = ChatEndpoint(self._answer, headers={"retry-after-ms": "10"})
        self.url = self.endpoint.url

    def _answer(self, path: str, body: dict) -> tuple[int, bytes]:
        if path != "/v1/chat/completions":
            return 404, b'{"error": {"message": "no such path"}}'
        self.seen.append(body)
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def serve(self, replies: list[tuple[int, bytes]]) -> None:
        self.replies, self.seen = list(replies), []


@pytest.fixture(scope="module")
def api_fabric(ray_session):
    """The eval path: RolloutRunner.start turns `openai:NAME` into the pool's openai backend."""
    server = ReplayServer()
    cfg = TrainConfig(fabric=FabricConfig(
        generator=GeneratorSpec(base_url=server.url, api_key_env="PROGAGENT_TEST_KEY", num_cpus=0.5),
        env_worker=EnvWorkerConfig(concurrency=2, runtime=RuntimeConfig(warm_pool=1), num_cpus=0.5)),
        rollout=RolloutConfig(max_attempts=2))
    try:
        runner = asyncio.run(RolloutRunner.start(cfg, MODEL))
        yield runner, server
        asyncio.run(runner.close())
    finally:
        server.endpoint.close()


async def test_api_model_episode_on_the_fabric(api_fabric):
    runner, server = api_fabric
    record = json.loads(FIXTURE.read_text())
    server.serve([(200, json.dumps(r).encode()) for r in record["responses"]])
    req = EpisodeRequest(env=TaskRef(record["task"], record["scale"]), harness=record["harness"],
                         group_id="api", sample_idx=0)
    traj = await runner.fabric.workers[0].run.remote(req)
    assert traj.termination == "answer" and traj.reward == 1.0, (traj.criteria, traj.final_answer)
    assert traj.final_answer.endswith("ANSWER: 18; 58316.84")
    assert all(lp == 0.0 for lp in traj.logprobs)  # text in, text out: never an RL sample
    assert len(server.seen) == len(record["responses"])
    assert server.seen[0]["model"] == "teacher-model-2026-10"  # `openai:` is our prefix, not the API's
    # the conversation sent back to the API is structured: tool results answer the right call ids
    last = server.seen[-1]["messages"]
    calls = [m for m in last if m["role"] == "assistant" and m.get("tool_calls")]
    tools = [m for m in last if m["role"] == "tool"]
    assert len(calls) == len(tools) == len(record["responses"]) - 1
    assert [c["tool_calls"][0]["id"] for c in calls] == [t["tool_call_id"] for t in tools]
    assert server.seen[0]["tools"][0]["function"]["name"] == "programmatic_tool_call"
    # weights never reach an API model: its version stays 0
    pool = runner.fabric.pool
    assert await pool.update_weights.remote(None, WeightTransportConfig()) == 0
    assert (await pool.health.remote())["versions"] == [0] and traj.policy_versions == [0] * len(traj.turns)


async def test_endpoint_failures_end_the_episode_not_the_worker(api_fabric, tmp_path):
    runner, server = api_fabric
    worker, pool = runner.fabric.workers[0], runner.fabric.pool
    req = EpisodeRequest(env=TaskRef("retail_clearance_markdown", "v0"), group_id="err", sample_idx=0)
    episodes = await worker.ping.remote()

    server.serve([(500, b'{"error": {"message": "upstream overloaded", "type": "server_error"}}')])
    traj = await worker.run.remote(req)
    assert traj.termination == "generator_error" and traj.turns == [] and traj.reward == 0.0
    assert len(server.seen) == 4  # the client's 3 retries, then the episode ends
    error = (await pool.stats.remote())["last_error"]
    assert server.url in error and "HTTP 500" in error and "upstream overloaded" in error, error
    assert "the server failed after 3 retries" in error

    server.serve([(200, b'{"id": "chatcmpl-x", "choices": [')])
    traj = await worker.run.remote(req)
    assert traj.termination == "generator_error"
    error = (await pool.stats.remote())["last_error"]
    assert "not a chat completion (JSONDecodeError" in error and "an OpenAI-compatible /v1" in error, error
    client = PoolClient(pool)  # env workers log the endpoint's message, not Ray's traceback
    with pytest.raises(GeneratorError, match=r"^generator pool failed: OpenAI-compatible endpoint .*JSON"):
        await client.generate(Prompt([], [{"role": "user", "content": "hi"}]), SamplingParams())

    # in a sweep such rollouts are failed jobs, never cached as the model's score
    cache = RolloutCache(tmp_path / "rollouts.jsonl", "settings")
    job = RolloutJob(MODEL, "ptc", "retail_clearance_markdown", "v0", 0, 0, TaskRef("retail_clearance_markdown", "v0"))
    assert await runner.run([job], cache) == [job] and len(cache) == 0  # rollout.max_attempts=2
    assert await worker.ping.remote() == episodes + 4  # the same worker finished every episode
