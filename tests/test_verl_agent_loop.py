"""ProgAgent's episodes through verl's own agent-loop machinery (the verl extra).

verl's real AgentLoopWorker, built from verl's own hydra config with our `progagent` loop registered
through `agent_loop_config_path`, reads a parquet file our dataset builder wrote through verl's own
RLHFDataset and collate function, runs `generate_sequences` and post-processes the batch as its
trainer does. The one double is verl's rollout server (vLLM on GPUs: not here): it replays recorded
ProgAgent oracle trajectories (the model tokens that follow a given prefix, so a prompt that differs by
one token from what ProgAgent rendered gets no continuation) or scripted replies, with distinct
log-probs per position and the weights' step, in verl's TokenOutput.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("verl.experimental.agent_loop", reason="the verl extra (scripts/install.sh installs it)")

import torch  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from envs.format.kind import TaskRef  # noqa: E402
from envs.format.library import split_cells  # noqa: E402
from envs.format.task_env import EnvironmentCache  # noqa: E402
from envs.kinds import load_env  # noqa: E402
from envs.runtime.limits import LimitBackend  # noqa: E402
from envs.runtime.preflight import HostNotReady, check_host  # noqa: E402
from integrations.episode_info import EPISODE_INFO_KEYS  # noqa: E402
from integrations.host import close_shared  # noqa: E402
from integrations.verl import dataset as verl_dataset  # noqa: E402
from rollout.agent_loop import ChatRenderer  # noqa: E402
from rollout.teacher import call_text, oracle_trajectory  # noqa: E402
from schema.config import RuntimeConfig  # noqa: E402
from tests.test_rollout import tiny_path  # noqa: E402,F401

STARTER = Path(__file__).resolve().parents[1] / "envs" / "starter_tasks"
TASKS = ("hr_leave_decisions", "inventory_reorder_flags", "support_close_resolved")
STEP = 7  # the weights' step the double reports (verl's global_steps)


def logprob_at(position: int) -> float:
    """The double's log-prob of the token at `position` of the sequence: distinct everywhere."""
    return -0.001 * (position + 1)


class ReplayServer:
    """verl's server, replaying recorded trajectories: after a prompt that is a recorded prefix ending
    where the model spoke, the model's recorded tokens (module docstring)."""

    def __init__(self, trajectories):
        self.trajectories = trajectories
        self.calls: list[tuple[str, int]] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        self.calls.append((request_id, len(prompt_ids)))
        assert sampling_params["logprobs"] is True and sampling_params["max_tokens"] >= 1
        n = len(prompt_ids)
        for t in self.trajectories:
            if n < len(t.token_ids) and t.loss_mask[n] == 1 and t.token_ids[:n] == list(prompt_ids):
                end = n
                while end < len(t.token_ids) and t.loss_mask[end] == 1:
                    end += 1
                ids = t.token_ids[n:end][: sampling_params["max_tokens"]]
                return TokenOutput(token_ids=ids, log_probs=[logprob_at(n + i) for i in range(len(ids))],
                                   stop_reason="completed", extra_fields={"global_steps": STEP})
        raise LookupError("no recorded trajectory continues this prompt")


class ScriptServer:
    """verl's server, replying with scripted texts per task (found by its instruction in the first
    prompt), or failing for a task whose script is an exception."""

    def __init__(self, tokenizer, scripts: dict[str, list[str] | Exception], instructions: dict[str, str] | None = None):
        self.tok = tokenizer
        self.scripts = scripts
        self.instructions = instructions or {t: load_env(TaskRef(t, "v0", str(STARTER))).instruction for t in scripts}
        self.cursor: dict[str, tuple[str, int]] = {}
        self.end = tokenizer.convert_tokens_to_ids("<|im_end|>")

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        if request_id not in self.cursor:
            text = self.tok.decode(prompt_ids)
            task = next(t for t, i in self.instructions.items() if i.strip() in text)
            self.cursor[request_id] = (task, 0)
        task, k = self.cursor[request_id]
        script = self.scripts[task]
        if isinstance(script, Exception):
            raise script
        self.cursor[request_id] = (task, k + 1)
        ids = (self.tok.encode(script[k], add_special_tokens=False) + [self.end])[: sampling_params["max_tokens"]]
        n = len(prompt_ids)
        return TokenOutput(token_ids=ids, log_probs=[logprob_at(n + i) for i in range(len(ids))],
                           stop_reason="completed", extra_fields={"global_steps": STEP})


@pytest.fixture(scope="module")
def tiny(tiny_path):  # noqa: F811
    return tiny_path


@pytest.fixture(scope="module")
def tokenizer(tiny):
    return AutoTokenizer.from_pretrained(tiny)


@pytest.fixture(scope="module")
def oracles(tiny, tokenizer):
    """ProgAgent's own oracle trajectories of the starter tasks at v0 (its in-process runner)."""
    from envs.runtime.episode import Runtime

    async def run():
        renderer, cache = ChatRenderer(tokenizer), EnvironmentCache()
        async with Runtime() as runtime:
            return {t: await oracle_trajectory(runtime, load_env(TaskRef(t, "v0", str(STARTER)), cache), "ptc",
                                               renderer) for t in TASKS}

    return asyncio.run(run())


def verl_worker(tmp: Path, tiny: Path, server, *, prompt_length=2048, response_length=4096, data: Path,
                settings: str = "max_episodes: 4\n  runtime: {warm_pool: 1}", sources: str = f"library: {STARTER}"):
    """verl's AgentLoopWorker from verl's own config, our loop registered by agent_loop_config_path;
    `sources`: the loop's settings naming what a row may open (as the rows were written)."""
    import verl

    loops = tmp / "agent_loops.yaml"
    loops.write_text(f"- name: progagent\n  _target_: integrations.verl.agent_loop.ProgAgentLoop\n  {settings}\n"
                     f"  {sources}\n")
    with initialize_config_dir(config_dir=str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=[
            f"actor_rollout_ref.model.path={tiny}", "actor_rollout_ref.rollout.name=vllm",
            f"actor_rollout_ref.rollout.prompt_length={prompt_length}",
            f"actor_rollout_ref.rollout.response_length={response_length}",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loops}",
            f"data.train_files={data}", f"data.val_files={data}"])
    return cfg, AgentLoopWorker(cfg, llm_client=server)


def rows_file(tmp: Path, tasks, harness="ptc") -> Path:
    assert verl_dataset.main(["--library", str(STARTER), "--scales", "v0", "--tasks", ",".join(tasks),
                              "--harness", harness, "--out", str(tmp / "train.parquet")]) == 0
    return tmp / "train.parquet"


def batch_of(cfg, worker, data: Path, repeat: int = 1) -> DataProto:
    """The batch verl's trainer hands the agent loop: its dataset's rows, collated, each `repeat` times."""
    ds = RLHFDataset(data_files=[str(data)], tokenizer=worker.tokenizer, config=cfg.data, processor=None)
    batch = DataProto.from_single_dict(collate_fn([ds[i] for i in range(len(ds))]))
    return batch.repeat(repeat_times=repeat, interleave=True) if repeat > 1 else batch


def unpadded(out: DataProto, i: int) -> dict:
    """Row i of verl's padded batch, padding removed."""
    b = out.batch
    width = b["prompts"].shape[1]
    valid = b["attention_mask"][i].bool()
    prompt = b["prompts"][i][valid[:width]].tolist()
    n = int(valid[width:].sum())
    return {"prompt": prompt, "response": b["responses"][i][:n].tolist(), "mask": b["response_mask"][i][:n].tolist(),
            "logprobs": b["rollout_log_probs"][i][:n].tolist(), "scores": b["rm_scores"][i], "n": n}


async def generate(worker, batch):
    try:
        return await worker.generate_sequences(batch)
    finally:
        await close_shared()


async def test_oracle_replayed_through_verl_is_progagents_own_trajectory(tmp_path, tiny, tokenizer, oracles):
    """Three tasks, each twice (verl's rollout.n): prompt, response and mask are ProgAgent's own oracle
    trajectory token for token; log-probs are the server's on model tokens and 0 on observations;
    verl puts the reward (1.0) on the last response token; one request id per episode."""
    server = ReplayServer(list(oracles.values()))
    data = rows_file(tmp_path, TASKS)
    cfg, worker = verl_worker(tmp_path, tiny, server, data=data)
    out = await generate(worker, batch_of(cfg, worker, data, repeat=2))
    assert len(out) == 6
    tasks = list(out.non_tensor_batch["progagent_task"])
    assert sorted(tasks) == sorted(f"{t}@v0" for t in TASKS for _ in range(2))
    for i, task in enumerate(tasks):
        traj, row = oracles[task.split("@")[0]], unpadded(out, i)
        p = traj.prompt_len
        assert row["prompt"] == traj.token_ids[:p]
        assert row["response"] == traj.token_ids[p:]
        assert row["mask"] == traj.loss_mask[p:]
        expected = [logprob_at(p + k) if m else 0.0 for k, m in enumerate(traj.loss_mask[p:])]
        assert row["logprobs"] == pytest.approx(expected, abs=1e-7)
        why = {k: out.non_tensor_batch[k][i] for k in ("verifier_error", "infra", "criteria_passed", "criteria_total",
                                                        "termination_answer") if k in out.non_tensor_batch}
        assert row["scores"][row["n"] - 1].item() == 1.0 and row["scores"].sum().item() == 1.0, (task, why)
        assert out.non_tensor_batch["min_global_steps"][i] == STEP == out.non_tensor_batch["max_global_steps"][i]
    # one request id per episode: every call of an episode carried it, and no two episodes share one
    ids = list(out.non_tensor_batch["request_id"])
    assert len(set(ids)) == 6
    assert {rid for rid, _ in server.calls} == set(ids)
    turns = {rid: sum(1 for r, _ in server.calls if r == rid) for rid in ids}
    assert all(turns[ids[i]] == len(oracles[t.split("@")[0]].turns) for i, t in enumerate(tasks))
    # verl's own bookkeeping: the reward keys it logs, our fixed keys, numeric
    assert out.meta_info["reward_extra_keys"] == list(EPISODE_INFO_KEYS)
    assert list(out.non_tensor_batch["acc"]) == [1.0] * 6
    assert list(out.non_tensor_batch["termination_answer"]) == [1.0] * 6


async def test_a_wrong_program_scores_zero(tmp_path, tiny, tokenizer):
    """The task's own wrong program (wrong/approve_all.py), written by the model through verl: judged 0."""
    cells = split_cells((STARTER / "hr_leave_decisions" / "wrong" / "approve_all.py").read_text())
    script = [call_text("programmatic_tool_call", {"code": c}) for c in cells] + ["ANSWER: done"]
    data = rows_file(tmp_path, ["hr_leave_decisions"])
    cfg, worker = verl_worker(tmp_path, tiny, ScriptServer(tokenizer, {"hr_leave_decisions": script}), data=data)
    out = await generate(worker, batch_of(cfg, worker, data))
    assert out.non_tensor_batch["termination_answer"][0] == 1.0  # it answered, and was judged
    assert out.batch["rm_scores"].sum().item() == 0.0 and out.non_tensor_batch["acc"][0] == 0.0
    assert 0 < out.non_tensor_batch["score"][0] < 1  # some criteria pass, not all
    assert out.non_tensor_batch["tool_calls_program"][0] > 1


async def test_a_verifier_that_cannot_judge_is_a_zero_verl_sees_and_the_log_explains(tmp_path, tiny, tokenizer, oracles,
                                                                                      monkeypatch, caplog):
    """The oracle's episode, but its verifier raises (in the forked child that judges it): reward 0, marked
    `verifier_error` and `infra` for verl, and the worker's log says why (verl keeps no text per sample)."""
    import logging

    import envs.format.task_env as task_env

    def broken(*args, **kwargs):  # its message carries what a hostile answer could make a verifier quote
        raise RuntimeError("the final state's database is gone\x1b[2J\nWARNING forged: all episodes passed\r\u202e")

    monkeypatch.setattr(task_env, "judge", broken)
    data = rows_file(tmp_path, ["hr_leave_decisions"])
    cfg, worker = verl_worker(tmp_path, tiny, ReplayServer([oracles["hr_leave_decisions"]]), data=data)
    with caplog.at_level(logging.WARNING, logger="integrations.verl.agent_loop"):
        out = await generate(worker, batch_of(cfg, worker, data))
    nt = out.non_tensor_batch
    assert nt["termination_answer"][0] == 1.0 and nt["verifier_error"][0] == 1.0 and nt["infra"][0] == 1.0
    assert out.batch["rm_scores"].sum().item() == 0.0
    assert ("the verifier could not judge it (infra/judge_error): RuntimeError: the final state's database is gone"
            in caplog.text)
    # one log line, its control characters shown escaped: no screen cleared, no line forged
    (line,) = [r.getMessage() for r in caplog.records if "could not judge" in r.getMessage()]
    assert "\n" not in line and "\x1b" not in line and "\r" not in line and "\u202e" not in line
    # (the verifier raises on every state: its canary fails too, and the line says so)
    assert r"gone\x1b[2J\nWARNING forged: all episodes passed\r\u202e (its canary failed too" in line


async def test_a_prompt_over_prompt_length_is_refused_naming_the_key(tmp_path, tiny, tokenizer, oracles):
    data = rows_file(tmp_path, ["hr_leave_decisions"])
    server = ReplayServer(list(oracles.values()))
    cfg, worker = verl_worker(tmp_path, tiny, server, data=data, prompt_length=512)
    with pytest.raises(Exception, match=r"over actor_rollout_ref\.rollout\.prompt_length=512"):
        await generate(worker, batch_of(cfg, worker, data))
    assert server.calls == []  # refused before the server was asked


async def test_the_episode_ends_within_response_length(tmp_path, tiny, tokenizer, oracles):
    """A response budget smaller than the oracle's episode: the episode ends at the budget
    (response_limit) and is judged as it stands, never cut afterwards."""
    data = rows_file(tmp_path, ["hr_leave_decisions"])
    whole = oracles["hr_leave_decisions"].response_len
    budget = whole // 2
    cfg, worker = verl_worker(tmp_path, tiny, ReplayServer(list(oracles.values())), data=data, response_length=budget)
    out = await generate(worker, batch_of(cfg, worker, data))
    row = unpadded(out, 0)
    assert out.batch["responses"].shape[1] == budget and row["n"] <= budget
    assert out.non_tensor_batch["termination_response_limit"][0] == 1.0
    assert row["response"] == oracles["hr_leave_decisions"].token_ids[oracles["hr_leave_decisions"].prompt_len:][: row["n"]]
    assert out.non_tensor_batch["acc"][0] == 0.0  # judged where it stopped: not done


async def test_reward_extra_info_has_the_same_keys_whatever_the_episode_did(tmp_path, tiny, tokenizer, oracles):
    """An answered, a response-limited (verl's fixed context: its program's output overflows it) and a
    generator-error episode in one batch: verl builds one array per key from the first sample, so
    every episode must carry every key."""
    flood = call_text("programmatic_tool_call", {"code": "print('x' * 40000)"})
    oracle_hr = [call_text("programmatic_tool_call", {"code": c})
                 for c in split_cells((STARTER / "hr_leave_decisions" / "oracle.py").read_text())]
    server = ScriptServer(tokenizer, {"hr_leave_decisions": oracle_hr + ["ANSWER: done"],
                                      "inventory_reorder_flags": [flood],
                                      "support_close_resolved": ConnectionError("the replica went away")})
    data = rows_file(tmp_path, TASKS)
    cfg, worker = verl_worker(tmp_path, tiny, server, data=data, response_length=3000)
    out = await generate(worker, batch_of(cfg, worker, data))
    by_task = {t.split("@")[0]: i for i, t in enumerate(out.non_tensor_batch["progagent_task"])}
    for key in EPISODE_INFO_KEYS:
        assert len(out.non_tensor_batch[key]) == 3, key
    nt = out.non_tensor_batch
    assert nt["termination_answer"][by_task["hr_leave_decisions"]] == 1.0
    assert nt["acc"][by_task["hr_leave_decisions"]] == 1.0
    assert nt["termination_response_limit"][by_task["inventory_reorder_flags"]] == 1.0
    assert nt["termination_generator_error"][by_task["support_close_resolved"]] == 1.0
    assert out.batch["rm_scores"].sum().item() == 1.0
    assert torch.all(out.batch["response_mask"].sum(dim=1)[by_task["support_close_resolved"]] == 0)


async def test_a_node_without_bubblewrap_fails_its_first_episode_with_the_fix(tmp_path, tiny, tokenizer, oracles,
                                                                              monkeypatch):
    data = rows_file(tmp_path, ["hr_leave_decisions"])
    server = ReplayServer(list(oracles.values()))
    cfg, worker = verl_worker(tmp_path, tiny, server, data=data)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(HostNotReady, match="apt-get install bubblewrap"):
        await generate(worker, batch_of(cfg, worker, data))
    assert server.calls == []


def test_preflight_names_the_fix_for_user_namespaces_and_cgroups(tmp_path, monkeypatch):
    """bubblewrap that cannot make a namespace (its message as a locked-down container prints it), and a
    host without a delegated cgroup: refused with what to allow; rlimit only when asked for."""
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    with monkeypatch.context() as m:
        m.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
        with pytest.raises(HostNotReady, match="No permissions to create new namespace.*unprivileged user namespaces"):
            check_host(RuntimeConfig())
    monkeypatch.setattr(LimitBackend, "_setup_v2", lambda self: False)
    monkeypatch.setattr(LimitBackend, "_setup_v1", lambda self: False)
    with pytest.raises(HostNotReady, match=r"no cgroup.*Delegate=yes.*runtime\.limits=rlimit"):
        check_host(RuntimeConfig())
    assert check_host(RuntimeConfig(limits="rlimit")) == "rlimit"


def test_the_verl_recipe_is_the_papers_gspo_and_composes_with_verls_config():
    """configs/verl/paper_gspo.yaml composes on verl's own ppo_trainer config (a key verl does not have
    fails here), verl's dataclasses accept it, and its numbers are configs/paper-8x8-h200.yaml's."""
    from omegaconf import OmegaConf
    from verl.utils.config import omega_conf_to_dataclass

    from integrations.verl.agent_loop import loop_settings
    from schema.load import load_config

    root = Path(__file__).resolve().parents[1]
    with initialize_config_dir(config_dir=str(root / "configs" / "verl"), version_base=None):
        cfg = compose(config_name="paper_gspo", overrides=["actor_rollout_ref.model.path=/models/x"])
    paper = load_config(root / "configs" / "paper-8x8-h200.yaml")
    actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    assert actor.policy_loss.loss_mode == "gspo" and actor.loss_agg_mode == paper.learner.loss.aggregation
    assert (actor.clip_ratio_low, actor.clip_ratio_high) == (paper.learner.loss.clip_low, paper.learner.loss.clip_high)
    assert actor.optim.lr == paper.learner.optim.lr and actor.optim.weight_decay == paper.learner.optim.weight_decay
    assert actor.optim.clip_grad == paper.learner.optim.grad_clip
    assert not actor.use_kl_loss and not cfg.algorithm.use_kl_in_reward and cfg.algorithm.adv_estimator == "grpo"
    rollout = omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    assert rollout.n == paper.rollout.group_size and cfg.data.train_batch_size == paper.train.groups_per_step
    assert cfg.trainer.total_training_steps == paper.train.steps
    assert rollout.temperature == paper.fabric.env_worker.sampling.temperature
    limits = paper.fabric.env_worker.limits
    assert rollout.prompt_length + rollout.response_length == limits.max_context_tokens
    assert rollout.agent.default_agent_loop == "progagent"
    (entry,) = OmegaConf.load(root / rollout.agent.agent_loop_config_path)
    assert entry["_target_"] == "integrations.verl.agent_loop.ProgAgentLoop"
    settings = loop_settings({k: v for k, v in entry.items() if k not in ("name", "_target_")})
    assert (settings.max_turns, settings.max_new_tokens) == (limits.max_turns, limits.max_new_tokens)
    assert settings.harness == paper.fabric.env_worker.harness
    assert settings.runtime.warm_pool == paper.fabric.env_worker.runtime.warm_pool
    with pytest.raises(Exception, match="max_episode"):  # a misspelt setting is refused, not ignored
        loop_settings({"max_episode": 4})


class HostileServer:
    """A rollout server whose reply is not what a sampler can produce: the episode must end as the
    generator's error (a sample the learner can drop), never crash verl's step or train on it."""

    def __init__(self, reply):
        self.reply = reply

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        return self.reply(sampling_params["max_tokens"])


@pytest.mark.parametrize("reply", [
    lambda n: TokenOutput(token_ids=[10**9], log_probs=[-0.1], stop_reason="completed"),  # past the vocabulary
    lambda n: TokenOutput(token_ids=[-5, 7], log_probs=[-0.1, -0.2], stop_reason="completed"),  # negative id
    lambda n: TokenOutput(token_ids=[7, 8], log_probs=[float("nan"), -0.2], stop_reason="completed"),
    lambda n: TokenOutput(token_ids=[7, 8], log_probs=[-0.1, float("inf")], stop_reason="completed"),
    lambda n: TokenOutput(token_ids=[7, 8], log_probs=[-0.1, 3.0], stop_reason="completed"),  # a probability > 1
    lambda n: TokenOutput(token_ids=[7] * (n + 50), log_probs=[-0.1] * (n + 50), stop_reason="completed"),
], ids=["past-vocab", "negative-id", "nan-logprob", "inf-logprob", "positive-logprob", "over-budget"])
async def test_a_hostile_rollout_server_ends_the_episode_not_the_step(tmp_path, tiny, tokenizer, reply):
    data = rows_file(tmp_path, ["hr_leave_decisions"])
    cfg, worker = verl_worker(tmp_path, tiny, HostileServer(reply), data=data, response_length=600)
    out = await generate(worker, batch_of(cfg, worker, data))
    nt = out.non_tensor_batch
    assert nt["termination_generator_error"][0] == 1.0 and nt["acc"][0] == 0.0
    assert out.batch["response_mask"].sum().item() == 0  # nothing of it is trained on
    assert torch.isfinite(out.batch["rollout_log_probs"]).all()


async def test_one_episodes_failure_is_that_samples_never_the_batchs(tmp_path, tiny, tokenizer):
    """A batch of three: one episode's call is 1,000-deep brackets (it raised RecursionError out of the
    parser, failing generate_sequences for every sample), one task's folder is gone when its episode
    opens (an infra failure: its sample, masked out, counted in `infra`), one answers. All three return."""
    import shutil

    library = tmp_path / "library"
    shutil.copytree(STARTER, library)
    assert verl_dataset.main(["--library", str(library), "--scales", "v0", "--tasks", ",".join(TASKS),
                              "--harness", "ptc", "--out", str(tmp_path / "train.parquet")]) == 0
    data = tmp_path / "train.parquet"
    deep = "[" * 1_000 + "]" * 1_000
    server = ScriptServer(tokenizer, {
        "hr_leave_decisions": [f'<tool_call>{{"name": "programmatic_tool_call", "arguments": {{"code": {deep}}}}}'
                               "</tool_call>", "ANSWER: done"],
        "inventory_reorder_flags": ["ANSWER: done"]},
        {t: load_env(TaskRef(t, "v0", str(library))).instruction for t in ("hr_leave_decisions", "inventory_reorder_flags")})
    cfg, worker = verl_worker(tmp_path, tiny, server, data=data, sources=f"library: {library}")
    batch = batch_of(cfg, worker, data)
    shutil.rmtree(library / "support_close_resolved")
    out = await generate(worker, batch)
    assert len(out) == 3
    nt = out.non_tensor_batch
    by_task = {t: i for i, t in enumerate(nt["progagent_task"])}
    deep_i, gone_i = by_task["hr_leave_decisions@v0"], by_task["support_close_resolved@v0"]
    assert nt["termination_answer"][deep_i] == 1.0 and nt["infra"][deep_i] == 0.0  # the policy's zero
    assert nt["infra"][gone_i] == 1.0 and nt["acc"][gone_i] == 0.0
    assert out.batch["response_mask"][gone_i].sum().item() == 0  # nothing of it is trained on
    assert nt["termination_answer"][by_task["inventory_reorder_flags@v0"]] == 1.0


async def test_a_harbor_task_through_verl_is_judged_by_its_own_tests(tmp_path, tiny, tokenizer):
    """Another kind of environment through the same loop: the repository's Harbor task (its own MCP
    server and container layout, judged by its tests/), its row written from a config's source."""
    root = Path(__file__).resolve().parents[1]
    assert verl_dataset.main(["--config", str(root / "configs" / "mixture.yaml"), "--source", "harbor", "--harness",
                              "ptc", "--out", str(tmp_path / "train.parquet")]) == 0
    data = tmp_path / "train.parquet"
    instruction = (root / "envs" / "starter_harbor" / "warehouse-restock" / "instruction.md").read_text()
    from tests.test_harbor_import import SOLVE_PTC  # its tools: list_items, get_supplier, place_order

    script = [call_text("programmatic_tool_call", {"code": SOLVE_PTC}), "Placed 7 orders.\nANSWER: 229"]
    server = ScriptServer(tokenizer, {"harbor": script}, {"harbor": instruction})
    cfg, worker = verl_worker(tmp_path, tiny, server, data=data,
                              sources=f"config: {root / 'configs' / 'mixture.yaml'}\n  sources: [harbor]")
    out = await generate(worker, batch_of(cfg, worker, data))
    nt = out.non_tensor_batch
    assert list(nt["data_source"]) == ["progagent/harbor"] and nt["progagent_task"][0].startswith("warehouse-restock")
    assert nt["termination_answer"][0] == 1.0 and nt["verifier_error"][0] == 0.0
    assert out.batch["rm_scores"].sum().item() == 1.0


async def test_hostile_rows_choose_nothing_the_host_runs_reads_or_contacts(tmp_path, tiny, tokenizer, monkeypatch):
    """A dataset is data a user downloads. Rows that carry a whole reference (an interpreter, a PostgreSQL
    bin folder, a judge endpoint and the name of the host variable sent to it as a key, a library folder)
    decoded into that reference and the host ran and contacted what they named. Read through verl's own
    dataset and worker, each such row is its own failed, masked sample naming the field; nothing it names
    runs or is contacted; the honest row beside them runs."""
    import http.server
    import json
    import threading

    import pyarrow.parquet as pq

    marker = tmp_path / "pwned"
    evil = tmp_path / "evil"
    (evil / "bin").mkdir(parents=True)
    for name in ("python", "bin/pg_isready", "bin/psql", "bin/postgres", "bin/initdb"):
        (evil / name).write_text(f"#!/bin/sh\necho $0 >> {marker}\n")
        (evil / name).chmod(0o755)
    hits: list[str] = []

    class Judge(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the stdlib's name
            hits.append(self.headers.get("Authorization", ""))
            self.send_response(500)
            self.end_headers()

        def log_message(self, *args):
            pass

    judge = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Judge)
    threading.Thread(target=judge.serve_forever, daemon=True).start()
    monkeypatch.setenv("PROGAGENT_TEST_SECRET", "s3cret")
    data = rows_file(tmp_path, ["inventory_reorder_flags"])
    (honest,) = pq.read_table(data).to_pylist()
    hostile_envs = {
        "pg_bin": {"kind": "mcpmark_postgres", "ref": {
            "type": "mcpmark_postgres", "checkout": str(tmp_path), "task": "security__rls_posts", "backup": "",
            "master_dir": str(tmp_path / "m"), "python": str(evil / "python"), "pg_bin": str(evil / "bin")}},
        "python": {"kind": "loca", "ref": {"type": "loca", "checkout": str(tmp_path), "preset": "p", "name": "n",
                                           "seed": 0, "python": str(evil / "python")}},
        "judge_base_url": {"kind": "mcp_atlas", "source": "", "task": "t1", "scale": "default",
                           "judge_base_url": f"http://127.0.0.1:{judge.server_port}/v1",
                           "judge_api_key_env": "PROGAGENT_TEST_SECRET", "python": str(evil / "python")},
        "library": {"kind": "library", "source": "library", "task": "inventory_reorder_flags", "scale": "v0",
                    "library": str(evil)},
    }
    rows = [honest]
    for env in hostile_envs.values():
        row = json.loads(honest["extra_info"]["progagent"])
        rows.append({**honest, "extra_info": {**honest["extra_info"], "progagent": json.dumps({**row, "env": env})}})
    verl_dataset.write_parquet(rows, data)
    server = ScriptServer(tokenizer, {"inventory_reorder_flags": ["ANSWER: done"]})
    cfg, worker = verl_worker(tmp_path, tiny, server, data=data)
    try:
        out = await generate(worker, batch_of(cfg, worker, data))
    finally:
        judge.shutdown()
    nt = out.non_tensor_batch
    assert len(out) == 5
    assert nt["termination_answer"][0] == 1.0 and nt["infra"][0] == 0.0  # the honest row ran
    for i in range(1, 5):
        assert nt["infra"][i] == 1.0 and out.batch["response_mask"][i].sum().item() == 0  # masked, counted
    assert not marker.exists() and hits == []


def test_a_row_not_written_for_progagent_is_refused_naming_what_is_wrong():
    from envs.sources import Catalog
    from integrations.sources import episode_sources
    from integrations.verl.rows import EpisodeRow
    from schema.load import ConfigError

    catalog = Catalog(episode_sources(library=str(STARTER), scales=["v0"]))
    with pytest.raises(ConfigError, match=r"extra_info\.progagent .*integrations\.verl\.dataset"):
        EpisodeRow.from_extra_info({"index": 3})
    with pytest.raises(ConfigError, match=r"extra_info\.progagent"):
        EpisodeRow.from_extra_info({"progagent": "{not json"})
    bad_kind = '{"env": {"kind": "nope", "task": "t", "scale": "v0"}}'
    with pytest.raises(ConfigError, match=r"extra_info\.progagent\.env: no source of this process lists the nope"):
        EpisodeRow.from_extra_info({"progagent": bad_kind}).ref(catalog)
    no_task = '{"env": {"kind": "library", "scale": "v0"}}'
    with pytest.raises(ConfigError, match=r"extra_info\.progagent\.env\.task: must be a name"):
        EpisodeRow.from_extra_info({"progagent": no_task}).ref(catalog)
    old_format = '{"env": {"kind": "library", "ref": {"type": "task", "task_id": "hr_leave_decisions", "scale": "v0"}}}'
    with pytest.raises(ConfigError, match=r"extra_info\.progagent\.env\.ref: a row names its environment only"):
        EpisodeRow.from_extra_info({"progagent": old_format}).ref(catalog)
    carried = '{"env": {"kind": "library", "source": "library", "task": "hr_leave_decisions", "scale": "v0", ' \
              '"pg_bin": "/tmp/evil"}}'
    with pytest.raises(ConfigError, match=r"extra_info\.progagent\.env\.pg_bin: a row names its environment only"):
        EpisodeRow.from_extra_info({"progagent": carried}).ref(catalog)
    honest = '{"env": {"kind": "library", "source": "library", "task": "hr_leave_decisions", "scale": "v0"}}'
    ref = EpisodeRow.from_extra_info({"progagent": honest}).ref(catalog)
    assert ref == TaskRef("hr_leave_decisions", "v0", str(STARTER))  # the catalog's own reference

