"""LOCA-bench as an evaluation source (envs/benchmarks/loca/), on a miniature checkout in LOCA's format.

tests/fixtures/loca_checkout is ours: one task type whose environment class generates its state into
task_dir and evaluates it in step(), a mock server in LOCA's style (plain-text errors, a shell tool
like LOCA's terminal), a config loader with LOCA's signature, two presets. It runs in this project's
Python (`LocaRef.python`; the real adapter makes LOCA's own 3.12 environment), with the npm filesystem
server scripts/install.sh installs (`node_dir`). Everything else is real: the driver process in the
benchmark sandbox, the servers in theirs, the kernel, the episode loop.
"""

import asyncio
import sys
from pathlib import Path

import pytest

from envs.benchmarks.commands import CommandError, server_command
from envs.benchmarks.loca.checkout import LocaCheckout, LocaError
from envs.benchmarks.loca.episode import LocaTaskEnv
from envs.benchmarks.loca.kind import LocaRef
from envs.runtime.episode import Runtime
from schema.config import RuntimeConfig
from tests.conftest import NPM_FS, ROOT, processes_with

CHECKOUT = ROOT / "tests" / "fixtures" / "loca_checkout"
NODE_DIR = ROOT / ".mcp-servers"
needs_npm = pytest.mark.skipif(not NPM_FS.exists(), reason="npm filesystem server not installed (scripts/install.sh)")


def ref(preset: str = "1k", seed: int = 1, name: str = "ShelfAuditS2LEnv") -> LocaRef:
    return LocaRef(str(CHECKOUT), preset, name, seed, sys.executable, str(NODE_DIR))


def test_checkout_lists_presets_and_tasks_and_names_what_is_missing(tmp_path):
    co = LocaCheckout(CHECKOUT)
    assert co.presets() == ["1k", "4k"]
    assert [t.task_id for t in co.tasks("4k")] == ["ShelfAuditS2LEnv.s1", "ShelfAuditS2LEnv.s2",
                                                  "BrokenGeneratorS2LEnv.s7"]
    assert [t.task_id for t in co.tasks("1k", ["ShelfAuditS2LEnv"], [2])] == ["ShelfAuditS2LEnv.s2"]
    with pytest.raises(LocaError, match="preset '64k'.*presets here: 1k, 4k"):
        co.tasks("64k")
    with pytest.raises(LocaError, match="no task type Nope.*known: BrokenGeneratorS2LEnv, ShelfAuditS2LEnv"):
        co.tasks("1k", ["Nope"])
    with pytest.raises(LocaError, match="not a LOCA-bench checkout"):
        LocaCheckout(tmp_path)
    (tmp_path / "gem" / "envs").mkdir(parents=True)
    (tmp_path / "task-configs").mkdir()
    (tmp_path / "task-configs" / "final_8k_set_config.json").write_text('{"configurations": [{"name": "x"}]}')
    with pytest.raises(LocaError, match="configuration 0 lacks"):
        LocaCheckout(tmp_path).tasks("8k")


def test_server_commands_map_to_what_is_installed_here():
    py = sys.executable
    assert server_command("a", {"command": "python", "args": ["/c/s.py", "--x"]}, py, "") == [py, "/c/s.py", "--x"]
    assert server_command("b", {"command": "uv", "args": ["--directory", "/c", "run", "python", "/c/m.py"]}, py, "") \
        == [py, "/c/m.py"]
    assert server_command("c", {"command": "uvx", "args": ["mcp-server-time"]}, py, "") == \
        [str(Path(py).parent / "mcp-server-time")]
    if NPM_FS.exists():
        fs = server_command("d", {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/w"]},
                            py, str(NODE_DIR))
        assert fs[0].endswith(".js") and fs[1:] == ["/w"]
    assert server_command("g", {"command": "uv", "args": ["run", "-m", "mcp_server_git"]}, py, "") == \
        [py, "-m", "mcp_server_git"]
    assert server_command("h", {"command": "uvx", "args": ["--from", "pkg-x", "mcp-server-git", "--v"]}, py, "") == \
        [str(Path(py).parent / "mcp-server-git"), "--v"]
    with pytest.raises(CommandError, match="npm package @x/y is not installed"):
        server_command("e", {"command": "npx", "args": ["@x/y"]}, py, str(NODE_DIR))
    with pytest.raises(CommandError, match="cli-mcp-server is not installed in the benchmark's environment"):
        server_command("terminal", {"command": "uvx", "args": ["cli-mcp-server"]}, py, "")
    with pytest.raises(CommandError, match="is not `uv … run …`"):
        server_command("f", {"command": "uv", "args": ["tool", "install", "x"]}, py, "")


SOLVE = """
import json
items = json.loads(tools["list_items"]())
threshold = int(open("policy.txt").read().split(":")[1])
low = sorted(i["sku"] for i in items if i["qty"] < threshold)
for sku in low:
    tools["flag_item"](sku=sku)
tools["write_file"](path=WS + "/low_stock.txt", content="\\n".join(low))
print(len(low), "flagged")
"""


async def open_env(runtime, r: LocaRef):
    env = LocaTaskEnv(r)
    episode = await env.open(runtime)
    return env, episode


@needs_npm
async def test_an_episode_runs_on_locas_state_and_locas_evaluator_decides():
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        env, ep = await open_env(runtime, ref("1k", 1))
        work = Path(runtime.root).glob("envs/loca-*").__next__()
        assert env.instruction.startswith("Audit the shelf")
        names = {t["name"] for t in ep.tools()}
        assert {"list_items", "flag_item", "write_file", "claim_done", "get_current_time"} <= names
        # one path means one thing: the server's allowed directory is the folder the program works in
        r = await ep.run_program("import os\nWS = tools['list_allowed_directories']()['content'].split('\\n')[1]\n"
                                 "print(os.getcwd(), os.path.samefile(WS, '.'), sorted(os.listdir(WS)))")
        assert "/workspace True ['policy.txt']" in r.text, r.text
        # LOCA's servers report failures in text: the rule turns "… not found: …" into a ToolError
        r = await ep.run_program("tools['flag_item'](sku='nope')")
        assert r.is_error and "ToolError" in r.text and "Item not found: nope" in r.text
        r = await ep.run_program(SOLVE)
        assert not r.is_error and "flagged" in r.text, r.text
        await ep.stop()
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "done")
        assert verdict.reward == 1.0 and verdict.criteria == {"loca_evaluator": True} and verdict.error is None
        assert verdict.metrics["state_seed"] == 1.0 and verdict.metrics["launch_time"] > 1.7e9
        await ep.close()
        assert not work.exists() and processes_with(str(work)) == []

        # the untouched state fails, by LOCA's evaluator (a verdict, not a verifier error)
        env, ep = await open_env(runtime, ref("4k", 2))
        await ep.stop()
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "")
        assert verdict.reward == 0.0 and verdict.criteria == {"loca_evaluator": False} and verdict.error is None
        await ep.close()


@needs_npm
@needs_npm
async def test_a_fifo_where_loca_reads_is_the_policys_and_an_untouched_generation_is_the_canary():
    """LOCA's evaluator reads low_stock.txt: a FIFO there blocked it to its deadline, an infra outcome
    (masked). What the live state holds is checked first (envs/episode_env.unjudgeable): the policy's
    state_refused, at once. The canary is a second, untouched generation, judged by its own driver."""
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        env, ep = await open_env(runtime, ref("1k", 1))
        await ep.run_program("import os\nos.mkfifo('low_stock.txt')")
        await ep.stop()
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "done")
        await ep.close()
    assert verdict.cause == "policy/state_refused" and "pipe (FIFO)" in verdict.error, verdict
    canary = await asyncio.to_thread(env.judge_canary)
    assert canary.error is None and canary.reward == 0.0 and canary.criteria == {"loca_evaluator": False}
    assert env.judge_untouched("anything") is canary  # one generation per environment: LOCA ignores the answer


async def test_a_generator_that_logs_a_failure_is_an_error_that_says_so():
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        with pytest.raises(LocaError, match="(?s)generate step failed.*the item generator was given no categories"):
            await open_env(runtime, ref("1k", 7, "BrokenGeneratorS2LEnv"))
        assert list(Path(runtime.root).glob("envs/loca-*")) == []


@needs_npm
async def test_model_code_run_by_a_benchmark_server_stays_in_the_benchmark_sandbox(tmp_path):
    """LOCA's terminal and python_execute servers run what the model asks: on the host that would be
    the escape the kernel's sandbox prevents. The fixture's run_command is such a tool."""
    secret = Path.home() / f".progagent-test-secret-{tmp_path.name}"
    secret.write_text("host secret")
    try:
        async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
            env, ep = await open_env(runtime, ref("1k", 1))
            attacks = {
                "read": f"cat {secret}",
                "write_checkout": f"echo pwned > {CHECKOUT}/pwned.txt",
                "write_project": f"echo pwned > {ROOT}/pwned.txt",
                "network": "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 3)\"",
                "env": "env",
            }
            outs = {}
            for k, cmd in attacks.items():
                r = await ep.call_tool("run_command", {"command": cmd})
                outs[k] = r.text
            assert "host secret" not in outs["read"] and "No such file" in outs["read"]
            assert "Read-only file system" in outs["write_checkout"] and not (CHECKOUT / "pwned.txt").exists()
            assert not (ROOT / "pwned.txt").exists()
            assert "return code: 0" not in outs["network"]
            assert "INVENTORY_DATA_DIR" in outs["env"] and "HOME=/tmp" in outs["env"]
            assert "PATH=" in outs["env"] and "OPENAI" not in outs["env"] and "RAY_" not in outs["env"]
            await ep.close()
    finally:
        secret.unlink()


async def test_a_driver_that_floods_or_hangs_is_cut_off(tmp_path):
    """The driver's replies are read bounded and under a deadline (what it prints comes from LOCA's
    code evaluating the model's state)."""
    from envs.benchmarks.process import JsonLineProcess, ProcessFailed

    flood = JsonLineProcess.start([sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 65536)"],
                                  log_file=tmp_path / "flood.log", name="flooder")
    with pytest.raises(ProcessFailed, match="a reply longer than 16 MiB"):
        flood.receive(60)
    assert flood.closed and flood.proc.returncode is not None
    hang = JsonLineProcess.start([sys.executable, "-c", "import time; print('starting', flush=True); time.sleep(600)"],
                                 log_file=tmp_path / "hang.log", name="hanger")
    with pytest.raises(ProcessFailed, match="not a JSON object"):
        hang.receive(5)
    with pytest.raises(ProcessFailed, match="no reply within 1 s"):
        hang.receive(1)
    assert hang.proc.returncode is not None
    hang.close()
    dead = JsonLineProcess.start([sys.executable, "-c", "import sys; sys.stderr.write('boom: bad config'); sys.exit(3)"],
                                 log_file=tmp_path / "dead.log", name="dier")
    with pytest.raises(ProcessFailed, match=r"(?s)exited \(code 3\).*boom: bad config"):
        dead.receive(30)
    dead.close()



def test_a_log_read_back_is_a_bounded_tail_never_through_a_link_or_a_pipe(tmp_path):
    import os

    from envs.benchmarks.process import tail

    secret = tmp_path / "secret.txt"
    secret.write_text("HOST SECRET")
    os.symlink(secret, tmp_path / "linked.log")
    os.mkfifo(tmp_path / "fifo.log")  # no writer: an open that blocks would hang the host
    (tmp_path / "big.log").write_bytes(b"x" * 100_000 + b"END")
    assert tail(tmp_path / "linked.log") == "" and tail(tmp_path / "fifo.log") == ""
    assert tail(tmp_path / "big.log", 10) == "xxxxxxxEND"


def task_dir_of(runtime) -> Path:
    return next(Path(runtime.root).glob("envs/loca-*")).resolve() / "state" / "task"


@needs_npm
async def test_the_ground_truth_is_out_of_reach_of_every_server(tmp_path):
    """Through run_command the model read groundtruth_workspace/expected.json and overwrote it with [];
    LOCA's evaluator then gave 1.0 with nothing done. A server now sees the agent workspace, its own
    databases and its own code only: not the task's other files, not the rest of the checkout."""
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        env, ep = await open_env(runtime, ref("1k", 1))
        task = task_dir_of(runtime)
        expected = (task / "groundtruth_workspace" / "expected.json").read_text()
        answer = CHECKOUT / "gem" / "envs" / "shelf_audit_s2l" / "groundtruth_workspace" / "standard_answer.json"
        for cmd in (f"cat {task}/groundtruth_workspace/expected.json", f"echo [] > {task}/groundtruth_workspace/expected.json",
                    f"cat {answer}", f"ls {CHECKOUT}/gem/envs", f"cat {task}/logs/env.log"):
            r = await ep.call_tool("run_command", {"command": cmd})
            assert "return code: 0" not in r.text and "SKU" not in r.text, (cmd, r.text)
        r = await ep.call_tool("run_command", {"command": "ls " + str(task)})
        assert r.text.split()[:3] == ["agent_workspace", "local_db", "memory_data"], r.text  # its own folders only
        await ep.stop()
        assert (task / "groundtruth_workspace" / "expected.json").read_text() == expected
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "done")
        assert verdict.reward == 0.0 and verdict.error is None  # nothing done: LOCA's evaluator says so
        await ep.close()


@needs_npm
async def test_a_server_cannot_swap_the_kernels_workspace(tmp_path):
    """A process left in a server swapped the workspace folder for a link to a host folder, then the
    kernel restarted and bound the host folder. The folder holding the workspace is no server's now,
    and a restart binds the folder that was checked (tests/test_attack_restarts.py)."""
    host = tmp_path / "host"
    host.mkdir()
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        env, ep = await open_env(runtime, ref("1k", 1))
        ws = task_dir_of(runtime) / "agent_workspace"
        r = await ep.call_tool("run_command", {"command": f"mv {ws} {ws}.old && ln -s {host} {ws}"})
        assert "return code: 0" not in r.text
        assert ws.is_dir() and not ws.is_symlink() and (ws / "policy.txt").exists()
        for _ in range(3):
            await ep.run_program("import os; os._exit(1)")
            r = await ep.run_program("import os; print(sorted(os.listdir('.'))); open('x', 'w').write('x')")
            assert "policy.txt" in r.text
        assert list(host.iterdir()) == []
        await ep.close()


@needs_npm
async def test_what_servers_write_counts_against_the_disk_limit(tmp_path):
    """LOCA's local_db (written by its servers) was not counted: 1.5 GiB went past a 512 MiB limit."""
    async with Runtime(RuntimeConfig(warm_pool=0, disk_bytes=32 * 2**20)) as runtime:
        env, ep = await open_env(runtime, ref("1k", 1))
        db = task_dir_of(runtime) / "local_db" / "inventory"
        for i in range(3):
            r = await ep.call_tool("run_command", {"command": f"head -c 20000000 /dev/urandom > {db}/fill-{i}.bin"})
            if ep.ended:
                break
        assert ep.ended and "disk limit" in r.text, r.text
        # a server's own file outside the workspace (its notes, as ApplyPhD's memory file) is its to write
        await ep.close()
        env, ep = await open_env(runtime, ref("1k", 1))
        r = await ep.call_tool("add_note", {"text": "remember"})
        assert r.text == "1 notes", r.text
        assert (task_dir_of(runtime) / "memory_data" / "notes.json").exists()
        await ep.close()


def test_a_server_that_names_the_tasks_own_files_is_refused_and_nothing_else_is_bound(tmp_path):
    from envs.benchmarks.loca.episode import LocaState

    state = LocaState(ref("1k", 1), tmp_path / "w", tmp_path / "w" / "logs")
    task = state.task_dir
    for d in ("agent_workspace", "local_db/inventory", "groundtruth_workspace", "files"):
        (task / d).mkdir(parents=True)
    state.generated = {"agent_workspace", "local_db", "groundtruth_workspace", "files"}
    ws, py = state.agent_workspace, sys.executable
    for bad in (f"{task}/groundtruth_workspace/expected.json", f"{task}/files", str(task)):
        with pytest.raises(LocaError, match="refused"):
            state.server_folders("evil", [py, "-c", "x", f"--path={bad}"], {}, ws)
        with pytest.raises(LocaError, match="refused"):
            state.server_folders("evil", [py, "-c", "x"], {"DATA": bad}, ws)
    script = CHECKOUT / "mcp_convert" / "mcps" / "inventory" / "server.py"
    ro, rw = state.server_folders("ok", [py, str(script), "/etc/passwd"], {"INVENTORY_DATA_DIR": f"{task}/local_db/inventory",
                                                                           "NOTES": f"{task}/mine/notes.json"}, ws)
    assert set(rw) == {ws.resolve(), (task / "local_db" / "inventory").resolve(), (task / "mine").resolve()}
    assert script.parent.resolve() in ro and (CHECKOUT / "mcp_convert" / "common").resolve() in ro
    assert not any(p == Path("/etc") or p == CHECKOUT.resolve() for p in ro + rw)  # nothing else of the host
    with pytest.raises(LocaError, match="not one of its own folders"):
        state.server_folders("cwd", [py, "-c", "x"], {}, CHECKOUT)
