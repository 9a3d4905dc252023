"""Harbor tasks from outside: our own exports round-tripped, a hand-written MCP task, broken tasks.

Real components throughout: the exported and hand-written MCP servers run as processes in the
task's bubblewrap container view, the kernel is the sandboxed runtime's, tests/test.sh and
solution/solve.sh run under bubblewrap with the container paths bound. Models are scripted.
"""

import shutil
import time
from pathlib import Path

import pytest

from envs.format.library import get_task, split_cells
from envs.harbor.episode import HarborTaskEnv, check, read_rewards, verdict_from_rewards, verify
from envs.harbor.export import export_harbor
from envs.harbor.task import HarborTaskError, load_harbor_task
from rollout.agent_loop import ChatRenderer
from rollout.episode import run_episode
from rollout.generators.scripted import ScriptedGenerator
from rollout.teacher import OracleGenerator, call_text
from rollout.tiny_model import project_tokenizer
from schema.config import LoopLimits

FIXTURE = Path(__file__).parent.parent / "envs" / "starter_harbor" / "warehouse-restock"
LIMITS = LoopLimits(max_turns=20, max_context_tokens=1 << 18, max_new_tokens=1 << 13)

SOLVE_PTC = """\
orders, page = [], 1
suppliers = {}
while page:
    listing = tools["list_items"](page=page)
    for item in listing["items"]:
        sid = item["supplier_id"]
        if sid not in suppliers:
            suppliers[sid] = tools["get_supplier"](supplier_id=sid)
        s = suppliers[sid]
        if item["on_hand"] < item["reorder_point"] and s["active"]:
            qty = max(item["target_level"] - item["on_hand"], s["min_order"])
            orders.append(tools["place_order"](sku=item["sku"], quantity=qty))
    page = listing["next_page"]
total = sum(o["quantity"] for o in orders)
print(len(orders), "orders,", total, "units")
"""
FIRST_PAGE_ONLY = SOLVE_PTC.replace("page = listing[\"next_page\"]", "page = None")  # misses pages 2 and 3


async def harbor_trajectory(runtime, task, harness, renderer, generator, limits):
    """One episode of an imported task, judged in this process (rollout/episode.run_episode)."""
    return await run_episode(HarborTaskEnv(task), runtime, generator, renderer, harness, limits=limits)


@pytest.fixture(scope="module")
def renderer():
    return ChatRenderer(project_tokenizer())


def program(code: str) -> str:
    return call_text("programmatic_tool_call", {"code": code})


# ---- (1) our own tasks: export → import → oracle check and real PTC episodes ----

@pytest.mark.parametrize("task_id", ["retail_clearance_markdown", "hr_leave_carryover"])
async def test_library_task_round_trip(task_id, tmp_path, runtime, renderer):
    exported = export_harbor(get_task(task_id), "v0", tmp_path / task_id)
    task = load_harbor_task(exported)
    assert task.mounts == ["/app", "/opt/progagent"] and task.layout.env["PYTHONPATH"] == "/opt/progagent"

    # the oracle path: solution/solve.sh in the container view, then tests/test.sh → 1; untouched → 0
    report = check(task)
    assert report.ok, report.error
    assert report.oracle.verdict.reward == 1.0 and report.nop.verdict.reward == 0.0
    assert report.oracle.verdict.criteria and all(report.oracle.verdict.criteria.values())

    # a replayed model whose programs are the exported oracle, through the PTC harness
    cells = split_cells((exported / "solution" / "oracle.py").read_text())
    solved = await harbor_trajectory(runtime, task, "ptc", renderer,
                                     lambda ep: OracleGenerator(renderer.tok, [program(c) for c in cells], ep),
                                     limits=LIMITS)
    assert solved.termination == "answer" and solved.verifier_error is None
    assert solved.reward == 1.0 and solved.score == 1.0
    assert solved.metrics["tool_calls_program"] > 0 and solved.scale == "harbor"

    # a model that answers at once leaves the environment untouched
    lazy = await harbor_trajectory(runtime, task, "ptc", renderer, ScriptedGenerator(renderer.tok, ["ANSWER: 0"]),
                                   limits=LIMITS)
    assert lazy.termination == "answer" and lazy.reward == 0.0 and lazy.verifier_error is None


# ---- (2) a Harbor task that is not ours: stdio MCP server script over JSON/CSV under /app/data ----

def test_fixture_task_oracle_check():
    task = load_harbor_task(FIXTURE)
    assert task.mounts == ["/app", "/opt/inventory"] and task.workdir == "/app"
    assert task.layout.env == {"INVENTORY_DIR": "/app/data"}
    assert any("RUN is not executed" in n for n in task.layout.notes)
    report = check(task)
    assert report.ok, report.error
    assert report.solve.output_tail == "7 orders, 229 units"
    assert report.nop.script.output_tail.startswith("FAIL: orders differ")
    assert (FIXTURE / "environment" / "data" / "orders.csv").exists() is False  # the source stays pristine


async def test_fixture_task_through_ptc(runtime, renderer):
    task = load_harbor_task(FIXTURE)
    solved = await harbor_trajectory(runtime, task, "ptc", renderer, ScriptedGenerator(
        renderer.tok, [program(SOLVE_PTC), "Placed 7 orders.\nANSWER: 229"]), limits=LIMITS)
    assert solved.termination == "answer" and solved.turns[0].observations[0].strip() == "7 orders, 229 units"
    assert solved.reward == 1.0 and solved.verifier_error is None
    assert solved.metrics["tool_calls_program"] == 3 + 3 + 7  # pages, suppliers, orders
    partial = await harbor_trajectory(runtime, task, "ptc", renderer, ScriptedGenerator(
        renderer.tok, [program(FIRST_PAGE_ONLY), "ANSWER: 229"]), limits=LIMITS)
    assert partial.reward == 0.0 and partial.score == 0.0 and partial.verifier_error is None


async def test_fixture_task_through_dtc(runtime, renderer):
    task = load_harbor_task(FIXTURE)
    orders = {"A-100": 80, "A-102": 48, "A-103": 35, "A-105": 10, "A-106": 25, "A-109": 10, "A-111": 21}
    calls = [call_text("list_items", {"page": p}) for p in (1, 2, 3)]
    calls += [call_text("get_supplier", {"supplier_id": s}) for s in ("S1", "S2", "S3")]
    calls += [call_text("place_order", {"sku": "A-104", "quantity": 20})]  # inactive supplier: an error result
    calls += [call_text("place_order", {"sku": k, "quantity": q}) for k, q in orders.items()]
    solved = await harbor_trajectory(runtime, task, "dtc", renderer,
                                     ScriptedGenerator(renderer.tok, calls + ["ANSWER: 229"]), limits=LIMITS)
    assert solved.termination == "answer" and solved.metrics["tool_calls_direct"] == len(calls)
    assert solved.metrics["tool_errors"] == 1 and "inactive" in solved.turns[6].observations[0]
    assert solved.reward == 1.0
    wrong = await harbor_trajectory(runtime, task, "dtc", renderer, ScriptedGenerator(
        renderer.tok, calls[:-1] + ["ANSWER: 208"]), limits=LIMITS)  # A-111 never ordered
    assert wrong.reward == 0.0 and wrong.verifier_error is None


# ---- the verifier's output, and broken tasks ----

def test_reward_files_are_read_as_harbor_reads_them(tmp_path):
    (tmp_path / "reward.txt").write_text("0.5\n")
    assert read_rewards(tmp_path) == {"reward": 0.5}
    half = verdict_from_rewards({"reward": 0.5})  # partial credit is the task author's: kept
    assert half.reward == 0.5 and half.score == 0.5 and half.criteria == {"reward": False}
    # reward.json wins over reward.txt; any flat object of numbers; true counts as 1
    (tmp_path / "reward.json").write_text('{"reward": 1, "criterion_a": 1, "criterion_b": 0.0, "flag": true}')
    assert read_rewards(tmp_path) == {"reward": 1.0, "criterion_a": 1.0, "criterion_b": 0.0, "flag": 1.0}
    assert verdict_from_rewards(read_rewards(tmp_path)).criteria == {"a": True, "b": False}
    (tmp_path / "reward.json").write_text('{"correctness": 1, "performance": 0}')
    multi = verdict_from_rewards(read_rewards(tmp_path))  # no "reward": the mean of the dimensions
    assert multi.reward == 0.5 and multi.criteria == {"correctness": True, "performance": False}
    (tmp_path / "reward.json").write_text('{"tests_passed": 0.75}')
    assert verdict_from_rewards(read_rewards(tmp_path)).reward == 0.75  # the only entry
    for bad, why in (('{"reward": "1"}', "not a finite number"), ('{"reward": NaN}', "not a finite number"),
                     ("[1]", "must be a JSON object"), ("", "empty"), ("{", "invalid JSON")):
        (tmp_path / "reward.json").write_text(bad)
        with pytest.raises(ValueError, match=why):
            read_rewards(tmp_path)
    (tmp_path / "reward.json").unlink()
    (tmp_path / "reward.txt").write_text("inf")
    with pytest.raises(ValueError, match="not a finite number"):
        read_rewards(tmp_path)


def test_test_sh_without_reward_is_a_recorded_error(tmp_path):
    folder = shutil.copytree(FIXTURE, tmp_path / "no-reward")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 'checking...'; exit 3\n")
    report = check(load_harbor_task(folder))
    assert not report.ok and report.nop.verdict.reward == 0.0
    assert "wrote neither /logs/verifier/reward.json nor /logs/verifier/reward.txt (exit code 3)" in \
        report.nop.verdict.error and "checking..." in report.nop.verdict.error
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\nsleep 60 &\nsleep 60\n")
    t0 = time.perf_counter()
    run = verify(load_harbor_task(folder), load_harbor_task(folder).materialize(tmp_path / "tree"), "", timeout_s=1)
    assert run.script.timed_out and "(timed out after 1 s)" in run.verdict.error and time.perf_counter() - t0 < 10


@pytest.mark.parametrize("breakage, message", [
    (lambda d: (d / "instruction.md").unlink(), r"instruction\.md: required file is missing"),
    (lambda d: (d / "tests" / "test.sh").unlink(), r"tests/test\.sh: required file is missing"),
    (lambda d: (d / "task.toml").write_text("[verifier\ntimeout_sec = 1"), r"task\.toml: invalid TOML"),
    (lambda d: (d / "task.toml").write_text("[verifier]\ntimeout_sec = 'soon'"),
     r"task\.toml: Expected `float`, got `str` - at `\$\.verifier\.timeout_sec`"),
    (lambda d: (d / "task.toml").write_text("[[environment.mcp_servers]]\nname = 'x'\ntransport = 'stdio'\n"),
     r"task\.toml: environment\.mcp_servers\[0\] \('x'\): transport 'stdio' needs a command"),
    # a server's name becomes its log's file name on the host: a task cannot aim it elsewhere
    (lambda d: (d / "task.toml").write_text("[[environment.mcp_servers]]\nname = '../../x'\ntransport = 'stdio'\n"
                                            "command = 'srv'\n"),
     r"\('\.\./\.\./x'\): '\.\./\.\./x' is not a server name \(one path component"),
    (lambda d: (d / "task.toml").write_text("[[environment.mcp_servers]]\nname = 'x'\ntransport = 'stdio'\n"
                                                "command = 'srv'\nheaders = {A = 'b'}\n"),
         r"task\.toml: environment\.mcp_servers\[0\] \('x'\): headers are for HTTP transports only"),
        (lambda d: (d / "task.toml").write_text("[environment]\nnetwork_mode = 'sometimes'\n"),
         r"task\.toml: environment\.network_mode 'sometimes'"),
        (lambda d: (d / "task.toml").write_text("[progagent]\nworkdir = '/app'\n[metadata.progagent]\nworkdir = '/app'\n"),
         r"both \[progagent\] and \[metadata\.progagent\]"),
    (lambda d: (d / "environment" / "Dockerfile").write_text("FROM x\nWORKDIR /app\nCOPY nowhere/ /app/\n"),
     r"Dockerfile:3: COPY source 'nowhere/' does not exist"),
    (lambda d: (d / "environment" / "Dockerfile").write_text("FROM x\nCOPY data/ /usr/local/data/\n"),
     r"Dockerfile: /usr/local/data: a container path under /usr"),
])
def test_broken_tasks_name_the_file(tmp_path, breakage, message):
    folder = shutil.copytree(FIXTURE, tmp_path / "broken")
    breakage(folder)
    with pytest.raises(HarborTaskError, match=message):
        load_harbor_task(folder)


def test_dockerfile_layout_and_path_mapping(tmp_path):
    ctx = tmp_path / "t" / "environment"
    (ctx / "src").mkdir(parents=True)
    (ctx / "src" / "main.py").write_text("print('hi')\n")
    for name in ("a.json", "b.json", "seed.csv"):
        (ctx / name).write_text(name)
    (ctx / "Dockerfile").write_text(
        "FROM python:3.12-slim\n"
        "ARG ROOT=/srv\n"
        "# a comment\n"
        "ENV APP_HOME=$ROOT/app \\\n"
        "    GREETING=\"hello world\"\n"
        "ENV PATH=/opt/tool/bin:$PATH\n"
        "WORKDIR ${APP_HOME}\n"
        "COPY . .\n"
        "COPY --chown=app:app [\"a.json\", \"b.json\", \"config/\"]\n"
        "COPY src/main.py /opt/tool/run.py\n"
        "WORKDIR work\n"
        "RUN pip install requests\n")
    (tmp_path / "t" / "task.toml").write_text('[progagent]\nanswer_path = "/out/answer.md"\n'
                                            'copy = { "/data/seed.csv" = "seed.csv" }\n')
    (tmp_path / "t" / "instruction.md").write_text("Do it.")
    (tmp_path / "t" / "tests").mkdir()
    (tmp_path / "t" / "tests" / "test.sh").write_text(  # the container paths, as the task was written for them
        'test "$(pwd)" = /srv/app/work && test "$GREETING" = "hello world" && test -f /srv/app/src/main.py \\\n'
        '  && test "$(cat /data/seed.csv)" = seed.csv && test "$(cat /out/answer.md)" = 42 && test ! -e /work/main/envs \\\n'
        '  && python3 /opt/tool/run.py && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n')
    task = load_harbor_task(tmp_path / "t")
    assert task.workdir == "/srv/app/work"
    assert task.layout.env["GREETING"] == "hello world" and task.layout.env["APP_HOME"] == "/srv/app"
    assert task.layout.env["PATH"].startswith("/opt/tool/bin:") and task.base_env()["PATH"] == task.layout.env["PATH"]
    assert [(Path(op.src).name, op.dst) for op in task.layout.copies] == [
        ("environment", "/srv/app"), ("a.json", "/srv/app/config/a.json"), ("b.json", "/srv/app/config/b.json"),
        ("main.py", "/opt/tool/run.py"), ("seed.csv", "/data/seed.csv")]
    assert task.mounts == ["/data", "/out", "/opt/tool", "/srv/app"]
    tree = task.materialize(tmp_path / "tree")
    assert (tree / "srv/app/src/main.py").exists() and (tree / "srv/app/config/b.json").read_text() == "b.json"
    assert (tree / "opt/tool/run.py").exists() and (tree / "data/seed.csv").exists() and (tree / "out").is_dir()
    assert task.host_path(tree, "/srv/app/work/../config/a.json") == tree / "srv/app/config/a.json"
    assert "(Your final reply" in task.prompt and "/out/answer.md" in task.prompt
    run = verify(task, tree, "42")
    assert run.verdict.reward == 1.0 and run.script.output_tail == "hi", run.script.output_tail
    assert verify(task, tree, "41").verdict.reward == 0.0
