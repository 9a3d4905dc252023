"""The synthesis pipeline for real on replayed chat.completions: only the remote LLM API is replayed.

The replayed models build `library_overdue_fines`: an intent, the environment, a verifier with an oracle
(and wrong solutions) that crash on a misnamed tool argument, the repair, and an independent auditor's
PTC trajectory at v3. Everything else — sandboxed runtime, task server, judge, validator — runs as in
production.
"""

import argparse
import asyncio
import json
import os
import shutil
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from envs.format.code_runner import CandidateCodeError, CodeRunner, CodeTimeout, bwrap_works
from envs.format.library import load_library, load_task
from envs.format.task_env import EnvironmentCache, judge
from launch import synth_cli
from launch.synth_fabric import FabricChecker
from schema.synth import load_synth_config
from synth import checks
from synth.llm import LLM
from synth.parse import ResponseFormatError, parse_files, parse_json
from synth.pipeline import Pipeline
from synth.prompts import CONSTRUCT_FILES, IntentList
from synth.records import Store
from tests.servers.chat_endpoint import ChatEndpoint

FIX = Path(__file__).parent / "fixtures" / "synth_replay"
TASK = "library_overdue_fines"
PLANNER, BUILDER, AUDITOR = "planner-mini-2026-06", "builder-large-2026-09", "auditor-pro-2026-08"
HAPPY = ["intents_library", "construct", "verifier_broken", "repair_oracle",
         "audit_1_files", "audit_2_rules", "audit_3_assess", "audit_4_answer"]


def recorded(name: str) -> dict:
    return json.loads((FIX / f"{name}.json").read_text())


class Replay:
    """Recorded chat.completions responses served in order on loopback (tests/servers/chat_endpoint.py):
    the pipeline's LLM stages and the generator pool's audit model (another process) both reach it. A
    request for the wrong model, or one too many, is answered 500 and kept in `problems`."""

    def __init__(self) -> None:
        self.queue: list[dict] = []
        self.requests: list[dict] = []
        self.problems: list[str] = []
        self.lock = threading.Lock()
        self.endpoint = ChatEndpoint(self._answer)
        self.url = self.endpoint.url

    def _answer(self, path: str, body: dict) -> tuple[int, dict]:
        with self.lock:
            self.requests.append(body)
            problem = ("not chat.completions" if not path.endswith("/chat/completions") else
                       f"unexpected request for {body['model']}" if not self.queue else
                       f"the stage asked {body['model']}, the record is {self.queue[0]['model']}"
                       if body["model"] != self.queue[0]["model"] else "")
            if problem:
                self.problems.append(problem)
                return 500, {"error": {"message": problem}}
            return 200, self.queue.pop(0)

    def serve(self, names: list[str | dict]) -> "Replay":
        self.queue = [recorded(n) if isinstance(n, str) else n for n in names]
        self.requests, self.problems = [], []
        return self


@pytest.fixture(scope="module")
def replay():
    endpoint = Replay()
    yield endpoint
    endpoint.endpoint.close()


def config(replay: Replay, *overrides: str):
    url = replay.url
    return load_synth_config("configs/synth.yaml", [
        "domains=[library]", "intents_per_domain=1", "concurrency=1", "max_repair_rounds=2",
        f"models={{intents: {{model: {PLANNER}, base_url: '{url}', max_retries: 0}}, construct: {{model: {BUILDER}, "
        f"base_url: '{url}', max_retries: 0}}, audit: {{model: {AUDITOR}, base_url: '{url}', max_retries: 0}}}}",
        "audit.max_turns=8", "runtime.program_timeout_s=60", *overrides])


@pytest.fixture(scope="module")
def fabric(ray_session, replay):
    """The synthesis fabric (launch/synth_fabric.py) every pipeline of this file checks its candidates on:
    one env worker, a judge, the generator pool serving the auditor through the replay endpoint."""
    runner = asyncio.run(FabricChecker.start(config(replay))).runner
    yield runner
    asyncio.run(runner.close())


def synthesize(cfg, out: Path, replay: Replay, fabric):
    summary = asyncio.run(Pipeline(cfg, out, checker=FabricChecker(cfg, fabric, owns=False)).run())
    assert replay.problems == []
    return summary


@pytest.fixture(scope="module")
def happy(tmp_path_factory, replay, fabric):
    out = tmp_path_factory.mktemp("synth") / "out"
    episodes = asyncio.run(fabric.episodes_on_workers())
    summary = synthesize(config(replay.serve(HAPPY)), out, replay, fabric)
    # every check and the audit's solver ran on the env worker: execute r0 and r1, the audit's oracle
    # and solver, validate
    assert asyncio.run(fabric.episodes_on_workers()) - episodes == 5
    return out, summary, replay


def test_pipeline_accepts_a_task_that_passes_the_validator(happy):
    out, summary, replay = happy
    assert not summary.errors and replay.queue == []
    assert summary.accepted == [TASK]
    outcome = summary.outcomes[0]
    assert (outcome.status, outcome.revision, outcome.domain) == ("accepted", 1, "library")
    tasks, errors = load_library(out / "library")
    assert list(tasks) == [TASK] and errors == {}
    store = Store(out)
    report = store.load(store.stage_path(TASK, 1, "validate"))
    assert report.ok and report.outputs["problems"] == []
    # the candidate's tools.py was served in its own bubblewrap sandbox where bubblewrap works
    execute = store.load(store.stage_path(TASK, 1, "execute"))
    assert execute.outputs["tool_transport"] == ("sandboxed" if BWRAP else "inprocess")
    sizes = [report.outputs["scales"][s]["db_bytes"] for s in ("v0", "v1", "v2", "v3")]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    audit = store.load(store.stage_path(TASK, 1, "audit"))
    assert audit.ok and audit.model == AUDITOR and audit.outputs["scale"] == "v3"
    assert audit.outputs["solver"]["final_answer"].endswith("ANSWER: 168; 1032.09")
    assert audit.outputs["solver"]["turns"][0]["program"].startswith('r = tools["list_files"]()')
    # the auditor saw what a policy sees: the instruction and the PTC tool, nothing of the verifier or oracle
    first = replay.requests[HAPPY.index("audit_1_files")]
    assert [t["function"]["name"] for t in first["tools"]] == ["programmatic_tool_call"]
    assert "verify" not in json.dumps(first["messages"]) and "Riverbend" in first["messages"][1]["content"]
    # the library copy is the accepted revision, byte for byte
    for p in (store.task_dir(TASK, 1)).rglob("*.py"):
        rel = p.relative_to(store.task_dir(TASK, 1))
        assert "__pycache__" in rel.parts or (out / "library" / TASK / rel).read_bytes() == p.read_bytes()


def test_failed_oracle_is_repaired_and_recorded(happy):
    out, _, replay = happy
    store = Store(out)
    failed = store.load(store.stage_path(TASK, 0, "execute"))
    assert not failed.ok and "oracle fails the verifier" in failed.error and "reason_code" in failed.error
    repair = store.load(store.stage_path(TASK, 1, "repair"))
    assert repair.ok and repair.model == BUILDER and set(repair.outputs["result"]) == {
        "oracle.py", "wrong/first_page_only.py", "wrong/ignores_eastgate_closure.py",
        "wrong/ignores_junior_exemption.py"}
    # the execution's errors were fed back to the constructing model
    sent = replay.requests[HAPPY.index("repair_oracle")]["messages"][-1]["content"]
    assert "failed the execute check" in sent and failed.error in sent
    assert store.load(store.stage_path(TASK, 1, "execute")).ok
    assert [(r.revision, r.stage) for r in store.records(TASK)] == [
        (0, "construct"), (0, "verifier"), (0, "execute"), (1, "repair"), (1, "execute"), (1, "audit"),
        (1, "validate")]


def test_token_cost_is_recorded_per_stage(happy):
    out, summary, _ = happy

    def usage(*names):
        u = [recorded(n)["usage"] for n in names]
        return (sum(x["prompt_tokens"] for x in u), sum(x["completion_tokens"] for x in u), len(u))

    expected = {"intents": usage("intents_library"), "construct": usage("construct"),
                "verifier": usage("verifier_broken"), "repair": usage("repair_oracle"),
                "audit": usage(*HAPPY[4:]), "execute": (0, 0, 0), "validate": (0, 0, 0)}
    got = {k: (u.prompt_tokens, u.completion_tokens, u.requests) for k, u in summary.usage_by_stage.items()}
    assert got == expected
    store = Store(out)
    assert store.load(store.intents_path("library")).model == PLANNER
    assert {r.stage: r.model for r in store.records(TASK)}["construct"] == BUILDER
    assert summary.outcomes[0].usage_by_stage["repair"].completion_tokens == expected["repair"][1]


def test_rerun_skips_finished_stages(happy, tmp_path, replay, fabric):
    out = tmp_path / "out"
    shutil.copytree(happy[0], out)
    replay.serve([])
    again = synthesize(config(replay), out, replay, fabric)  # a finished candidate: nothing to do
    assert replay.requests == [] and again.accepted == [TASK] and again.stages_run == {}
    Store(out).outcome_path(TASK).unlink()  # walk every stage again: all are recorded
    shutil.rmtree(out / "library")
    again = synthesize(config(replay), out, replay, fabric)
    assert replay.requests == [] and again.accepted == [TASK] and again.stages_run == {}
    assert again.stages_skipped == {"intents": 1, "construct": 1, "verifier": 1, "execute": 2, "repair": 1,
                                    "audit": 1, "validate": 1}
    assert list(load_library(out / "library")[0]) == [TASK]


def test_candidate_failing_after_max_rounds_is_discarded(happy, tmp_path, replay, fabric):
    out = tmp_path / "out"
    shutil.copytree(happy[0], out)  # keep r0 (construct, verifier, failed execute); repair it differently
    store = Store(out)
    for p in store.candidate_dir(TASK).glob("stages/r1-*.json"):
        p.unlink()
    store.outcome_path(TASK).unlink()
    shutil.rmtree(out / "library")
    replay.serve(["repair_still_wrong"])
    summary = synthesize(config(replay, "max_repair_rounds=1"), out, replay, fabric)
    assert replay.queue == [] and summary.accepted == []
    outcome = summary.outcomes[0]
    assert (outcome.status, outcome.repair_rounds) == ("discarded", 1)
    assert outcome.reason.startswith("execute check failed after 1 repair round(s)")
    assert "fined_exactly_the_liable_loans" in outcome.reason  # the repair's off-by-one grace check
    assert summary.stages_run == {"repair": 1, "execute": 1} and not (out / "library" / TASK).exists()
    assert json.loads((out / "summary.json").read_text())["outcomes"][0]["status"] == "discarded"
    # the repair prompt carried the failed execution's errors
    assert store.load(store.stage_path(TASK, 0, "execute")).error in replay.requests[0]["messages"][-1]["content"]


@pytest.mark.parametrize("verdict", ["solver_error", "task_defect"])
def test_failed_audit_is_diagnosed(happy, tmp_path, replay, fabric, verdict):
    out = tmp_path / "out"
    shutil.copytree(happy[0], out)
    store = Store(out)
    store.stage_path(TASK, 1, "audit").unlink()  # audit again, this time with a solver that misses a rule
    store.outcome_path(TASK).unlink()
    shutil.rmtree(out / "library")
    replay.serve(["audit_1_files", "audit_2_rules", "audit_wrong_3_assess", "audit_wrong_4_answer",
                  f"diagnose_{verdict}"])
    # at v0 to keep the test short (the happy path audits at v3): the solver's mistake fails at every scale
    summary = synthesize(config(replay, "max_repair_rounds=1", "audit.scale=v0"), out, replay, fabric)
    assert replay.queue == []
    audit = store.load(store.stage_path(TASK, 1, "audit"))
    assert not audit.ok and audit.outputs["solver"]["reward"] == 0.0
    assert audit.outputs["oracle"]["reward"] == 1.0 and "ANSWER: 177" in audit.outputs["solver"]["final_answer"]
    diagnosis = store.load(store.stage_path(TASK, 1, "diagnose"))
    assert diagnosis.model == AUDITOR and diagnosis.outputs["result"]["verdict"] == verdict
    sent = replay.requests[-1]["messages"][-1]["content"]
    assert "ANSWER: 177; 1070.34" in sent and "verify.py" in sent  # the auditor's run and the task's files
    outcome = summary.outcomes[0]
    if verdict == "solver_error":  # the task is consistent: the solver's mistake does not count against it
        assert outcome.status == "accepted" and summary.stages_run == {"audit": 1, "diagnose": 1}
    else:  # no repair rounds left
        assert outcome.status == "discarded" and outcome.reason.startswith("audit check failed after 1")
        assert "issued at Eastgate" in outcome.reason


async def test_malformed_reply_is_sent_back_once():
    good = recorded("construct")
    cut = json.loads(json.dumps(good))
    text = cut["choices"][0]["message"]["content"]
    cut["choices"][0]["message"]["content"] = text[: text.index("### FILE: tools.py") + 200]
    cut["choices"][0]["finish_reason"] = "length"
    queue = [cut, good]
    seen = []

    def handler(request):
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=queue.pop(0))

    cfg = load_synth_config("configs/synth.yaml", [f"models.construct.model={BUILDER}", "format_retries=1"])
    llm = LLM(httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    files, replies = await llm.ask(cfg.models.for_stage("construct"), [{"role": "user", "content": "build"}],
                                   lambda t: parse_files(t, lambda p: p in CONSTRUCT_FILES, CONSTRUCT_FILES))
    await llm.close()
    assert sorted(files) == sorted(CONSTRUCT_FILES) and len(replies) == 2
    assert seen[0]["max_completion_tokens"] == 32768 and "temperature" not in seen[0]  # as configs/synth.yaml says
    retry = seen[1]["messages"][-1]["content"]
    assert "never closed" in retry and "cut off at the token limit" in retry


def test_cli(happy, tmp_path, capsys):
    parser = argparse.ArgumentParser()
    synth_cli.add_arguments(parser)
    assert synth_cli.run(parser.parse_args(["status", "--out", str(happy[0])])) == 0
    assert "accepted" in capsys.readouterr().out
    args = parser.parse_args(["run", "--out", str(tmp_path), "domains=[library]", f"models.audit.model={BUILDER}",
                              f"models.construct.model={BUILDER}"])
    assert synth_cli.run(args) == 2 and "independent solver" in " ".join(capsys.readouterr().out.split())


def test_parsers_explain_malformed_output():
    allowed = lambda p: p in CONSTRUCT_FILES  # noqa: E731
    with pytest.raises(ResponseFormatError, match="not followed by a fenced code block"):
        parse_files("### FILE: data.py\nprint(1)\n", allowed)
    with pytest.raises(ResponseFormatError, match="lacks tools.py"):
        parse_files("### FILE: data.py\n```python\nx = 1\n```", allowed, ("data.py", "tools.py"))
    with pytest.raises(ResponseFormatError, match="relative to the task folder"):
        parse_files("### FILE: ../evil.py\n```python\nx = 1\n```", lambda p: True)
    with pytest.raises(ResponseFormatError, match="no files"):
        parse_files("I could not do it.", allowed)
    # a longer fence around a file with ``` inside; the path in the info string; the JSON form
    md = "### FILE: instruction.md\n````markdown\nUse\n```\ncode\n```\n````\n"
    assert parse_files(md, allowed)["instruction.md"] == "Use\n```\ncode\n```\n"
    assert parse_files("```python title=data.py\nx = 1\n```", allowed) == {"data.py": "x = 1\n"}
    assert parse_files('{"files": {"tools.py": "y = 2"}}', allowed) == {"tools.py": "y = 2\n"}
    intents = parse_json(recorded("intents_library")["choices"][0]["message"]["content"], IntentList)
    assert intents.intents[0].task_id == TASK
    with pytest.raises(ResponseFormatError, match="required shape"):
        parse_json('```json\n{"intents": [{"title": "x"}]}\n```', IntentList)


# ---- model-written code runs in a child with a deadline, sandboxed -----------------------------------
BWRAP = bwrap_works()
needs_bwrap = pytest.mark.skipif(not BWRAP, reason="bubblewrap cannot start a sandbox here")


def repair_reply(files: dict[str, str]) -> dict:
    """A recorded repair response carrying other files (the model's reply, as the endpoint returns it)."""
    reply = json.loads(json.dumps(recorded("repair_oracle")))
    reply["choices"][0]["message"]["content"] = "Fixed.\n\n" + "".join(
        f"### FILE: {path}\n```python\n{text}```\n\n" for path, text in files.items())
    return reply


def with_data_py(folder: Path, dst: Path, source: str, name: str = "data.py") -> Path:
    """A copy of a candidate folder with one file replaced (the folder keeps the task's id as its name)."""
    shutil.copytree(folder, dst / folder.name, ignore=shutil.ignore_patterns("__pycache__"))
    (dst / folder.name / name).write_text(source)
    return dst / folder.name


def test_endless_data_py_is_stopped_and_repaired_then_discarded(happy, tmp_path, replay, fabric):
    """r1's data.py never returns: killed after code_timeout_s, fed back to the repair; r2's reads a host
    file outside its folder: not there in the sandbox (with bubblewrap), fed back, and after two rounds
    the candidate is discarded. The pipeline neither hangs nor stops with an error."""
    out = tmp_path / "out"
    shutil.copytree(happy[0], out)
    store = Store(out)
    for p in store.candidate_dir(TASK).glob("stages/r1-*.json"):
        p.unlink()
    store.outcome_path(TASK).unlink()
    shutil.rmtree(out / "library")
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("host secret")
    data = (store.task_dir(TASK, 0) / "data.py").read_text()
    seeded = "    rng = random.Random(seed)\n"
    assert seeded in data
    looping = data.replace(seeded, seeded + "    while rng.random() < 2:  # never ends\n        pass\n", 1)
    reading = data.replace(seeded, seeded + f"    print(open({str(secret)!r}).read())\n", 1)
    replay.serve([repair_reply({"data.py": looping}), repair_reply({"data.py": reading})])
    t0 = time.perf_counter()
    summary = synthesize(config(replay, "max_repair_rounds=2", "code_timeout_s=3"), out, replay, fabric)
    seconds = time.perf_counter() - t0
    assert replay.queue == [] and summary.errors == {}
    r1 = store.load(store.stage_path(TASK, 1, "execute"))
    assert not r1.ok and "data.py build(v0) did not finish within 3 s" in r1.error
    assert r1.outputs["code_sandbox"] == ("bwrap" if BWRAP else "process")
    assert r1.error in replay.requests[1]["messages"][-1]["content"]  # the timeout is the repair's feedback
    r2 = store.load(store.stage_path(TASK, 2, "execute"))
    outcome = summary.outcomes[0]
    assert (outcome.status, outcome.repair_rounds) == ("discarded", 2)
    assert outcome.reason.startswith("execute check failed after 2 repair round(s)")
    if BWRAP:
        assert not r2.ok and "data.py build(v0) raised" in r2.error and "FileNotFoundError" in r2.error
        assert 'File "data.py", line' in r2.error and "host secret" not in json.dumps(r2.outputs)
    assert seconds < 60, seconds


@needs_bwrap
def test_candidate_code_sees_no_host_files_network_or_other_tasks(happy, tmp_path):
    folder = Store(happy[0]).task_dir(TASK, 1)
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    shipped = Path(__file__).resolve().parents[1] / "envs" / "tasks" / "retail_clearance_markdown" / "verify.py"
    assert shipped.read_text() and secret.read_text()  # both readable from this process
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    socket.create_connection(("127.0.0.1", port), timeout=5).close()  # reachable from this process
    runner = CodeRunner(timeout_s=30, mode="bwrap")
    build = "def build(root, scale, seed):\n    {}\n"
    cases = {
        "secret": (build.format(f"open({str(secret)!r}).read()"), "FileNotFoundError"),
        "shipped_task": (build.format(f"open({str(shipped)!r}).read()"), "FileNotFoundError"),
        "network": ("import socket\n" + build.format(f"socket.create_connection(('127.0.0.1', {port}), timeout=5)"),
                    "ConnectionRefusedError"),
        "write_outside": (build.format(f"open({str(tmp_path / 'escaped.txt')!r}, 'w').write('x')"),
                          "FileNotFoundError"),
    }
    for i, (name, (source, error)) in enumerate(cases.items()):
        task = load_task(with_data_py(folder, tmp_path / name, source), runner=runner)
        with pytest.raises(CandidateCodeError) as caught:
            task.build(tmp_path / f"env{i}", "v0")
        assert type(caught.value).__name__ == error, (name, caught.value.feedback)
        assert caught.value.feedback.startswith('Traceback (most recent call last):\n  File "data.py", line ')
    assert not (tmp_path / "escaped.txt").exists()
    # tools.py is imported in the sandbox first: a connection attempted at import is a load problem
    bad_tools = (folder / "tools.py").read_text()
    bad_tools += f"\nimport socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
    task, problems = checks.load(with_data_py(folder, tmp_path / "tools", bad_tools, "tools.py"), runner)
    assert task is None and "ConnectionRefusedError" in problems[0] and "tools.py" in problems[0]
    listener.close()
    # the verifier reads its environments but cannot change them
    task = load_task(folder, runner=runner)
    env = tmp_path / "env"
    task.build(env, "v0")
    assert (env / "db.sqlite").stat().st_size > 0
    writes = "from pathlib import Path\ndef verify(ctx):\n    Path(ctx.final.root, 'x').write_text('x')\n"
    task = load_task(with_data_py(folder, tmp_path / "verify_writes", writes, "verify.py"), runner=runner)
    verdict = judge(task, "v0", env, "", EnvironmentCache(tmp_path / "cache"))
    assert verdict.reward == 0.0 and verdict.error.startswith("OSError: [Errno 30] Read-only file system")
    assert not (env / "x").exists()


def test_endless_verify_and_its_processes_are_killed(happy, tmp_path):
    """A verify() that never returns is a verdict error after the deadline; in a plain child (no bubblewrap)
    the deadline still holds and kills what the code started."""
    folder = Store(happy[0]).task_dir(TASK, 1)
    mode = "bwrap" if BWRAP else "process"
    looping = "def verify(ctx):\n    while True:\n        pass\n"
    task = load_task(with_data_py(folder, tmp_path / "loop", looping, "verify.py"),
                     runner=CodeRunner(timeout_s=2, mode=mode))
    cache = EnvironmentCache(tmp_path / "cache")
    initial = cache.get(load_task(folder, runner=CodeRunner(timeout_s=60, mode=mode)), "v0")  # same data.py
    t0 = time.perf_counter()
    verdict = judge(task, "v0", initial, "", cache)
    assert verdict.reward == 0.0 and verdict.error.startswith("CodeTimeout: verify() did not finish within 2 s")
    assert time.perf_counter() - t0 < 10
    spawns = ("import subprocess\ndef build(root, scale, seed):\n"
              "    p = subprocess.Popen(['sleep', '600'])\n"
              "    (root.parent / 'pid').write_text(str(p.pid))\n    while True:\n        pass\n")  # root: the build's own folder
    task = load_task(with_data_py(folder, tmp_path / "spawn", spawns), runner=CodeRunner(timeout_s=2, mode="process"))
    with pytest.raises(CodeTimeout, match=r"build\(v0\) did not finish within 2 s"):
        task.build(tmp_path / "env", "v0")
    pid = int((tmp_path / "env" / "pid").read_text())
    for _ in range(100):  # reaped by init shortly after the kill
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"sleep {pid} survived the deadline")


async def test_the_local_checker_reports_what_the_env_workers_reported(happy):
    """synth/checker.LocalChecker (this process, a runtime of its own) runs the same checks as the
    fabric's env workers: the same report for the accepted revision."""
    from synth.checker import LocalChecker

    out, _, replay = happy
    store = Store(out)
    checker = LocalChecker(config(replay, "fabric.mode=local"), LLM())
    try:
        local = await checker.execute(store.task_dir(TASK, 1), "v0")
    finally:
        await checker.close()
    remote = store.load(store.stage_path(TASK, 1, "execute")).outputs
    assert local["ok"] and remote["ok"] and local["problems"] == remote["problems"] == []
    assert local["wrong"] == remote["wrong"] and local["stats"] == remote["stats"]
    assert {k: local["oracle"][k] for k in ("reward", "criteria", "answer", "calls")} == \
        {k: remote["oracle"][k] for k in ("reward", "criteria", "answer", "calls")}


def test_synthesized_tasks_are_a_source_training_can_weight(happy):
    from envs.sources import check_trainable, resolve_sources
    from schema.config import SourceSpec

    [src] = resolve_sources({"synth": SourceSpec("library", weight=2.0, args={"library": str(happy[0] / "library")})})
    assert src.task_ids == [TASK] and src.scales == ["v0", "v1", "v2", "v3"]
    assert check_trainable([src]) == [src]
