"""One LOCA-bench state, alive for one episode: runs in LOCA's own Python (3.12, its pinned
environment: envs/benchmarks/loca/setup.py), inside the benchmark sandbox, never in ours.

    python driver.py CHECKOUT TASK_DIR < commands > replies        (one JSON object per line)

It imports the configuration's `env_class` from the user's checkout, constructs it with the
configuration's `env_params` and `task_dir=TASK_DIR` (LOCA's own state generator: databases under
TASK_DIR/local_db, the agent workspace, the ground truth), and replies

    {"ok": true, "instruction": ..., "servers": {name: {command, args, env, cwd}}, "launch_time": ...}

with the servers as LOCA's own config loader (gem/tools/mcp_server/config_loader.py) builds them from
the configuration's `mcp_servers`. The process then stays alive, holding the environment object,
because LOCA's evaluator is that object's `step()`: it reads the generated ground truth and the final
state through attributes the constructor set. On `{"cmd": "judge"}` it calls `step("claim_done")`, as
LOCA's agent loop does when the model claims it is done, and replies {"ok": true, "reward": r,
"info": {...}}; on `{"cmd": "close"}` or end of input it exits.

Why the state is generated here and not shipped: LOCA generates due dates from the clock, so the
state and its ground truth belong together; the launch time is reported and recorded with the rollout.

Only the standard library is imported here (this file is not part of LOCA's environment). Everything
LOCA prints goes to stderr (the log the host opened for it), never into the reply stream.
"""

import datetime
import importlib
import importlib.util
import json
import os
import sys
import time
import traceback
from pathlib import Path

PLACEHOLDERS = ("{task_workspace}", "{agent_workspace}")


def fill(value, task_dir, agent_ws):
    if isinstance(value, str):
        return value.replace("{task_workspace}", task_dir).replace("{agent_workspace}", agent_ws)
    return value


def server_configs(checkout, servers, task_dir, agent_ws):
    """LOCA's own mapping of a configuration's `mcp_servers` to stdio commands (its config loader,
    loaded by path: importing the `gem.tools` package would pull in its agent tooling)."""
    spec = importlib.util.spec_from_file_location(
        "loca_config_loader", os.path.join(checkout, "gem", "tools", "mcp_server", "config_loader.py"))
    loader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loader)
    out = {}
    for name, cfg in servers.items():
        if not cfg.get("enabled", True):
            continue
        params = {k: fill(v, task_dir, agent_ws) for k, v in (cfg.get("params") or {}).items()}
        params.update(task_workspace=task_dir, agent_workspace=agent_ws)
        out.update(loader.build_server_config(server_type=cfg["type"], params=params, server_name=name))
    return out


def generation_errors(task_dir):
    """LOCA's environments log a failed preprocessing step and carry on; the failure is theirs to
    report, so their log's ERROR lines are read back (an episode over a half-made state is no test)."""
    log = Path(task_dir) / "logs" / "env.log"
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    first = next((i for i, line in enumerate(lines) if " - ERROR - " in line), None)
    return [] if first is None else ["\n".join(lines[first:first + 40])]


def main():
    checkout, task_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    reply_fd = os.dup(1)
    replies = os.fdopen(reply_fd, "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # what LOCA prints joins its stderr: the log the host opened, outside the sandbox
    sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)

    def reply(obj):
        replies.write(json.dumps(obj, default=str) + "\n")
        replies.flush()

    def failed(stage):
        reply({"ok": False, "stage": stage, "error": traceback.format_exc()[-6000:]})

    config = json.loads(sys.stdin.readline())
    agent_ws = os.path.join(task_dir, "agent_workspace")
    os.chdir(checkout)
    sys.path.insert(0, checkout)
    # LOCA's preprocessing runs `python preprocess/main.py` in subprocesses that import `gem`
    os.environ["PYTHONPATH"] = checkout + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ.setdefault("LOCA_QUIET", "1")
    try:
        module, cls = config["env_class"].rsplit(".", 1)
        env_class = getattr(importlib.import_module(module), cls)
        params = {k: fill(v, task_dir, agent_ws) for k, v in (config.get("env_params") or {}).items()}
        params.setdefault("task_dir", task_dir)
        launch = time.time()
        env = env_class(**params)
    except Exception:
        return failed("generate")
    errors = generation_errors(task_dir)
    if errors:
        return reply({"ok": False, "stage": "generate", "error": "\n---\n".join(errors)[-6000:]})
    try:
        os.makedirs(agent_ws, exist_ok=True)
        servers = server_configs(checkout, config.get("mcp_servers") or {}, task_dir, agent_ws)
        instruction = env._get_instructions() if hasattr(env, "_get_instructions") else env.reset()[0]
    except Exception:
        return failed("servers")
    reply({"ok": True, "instruction": instruction, "servers": servers, "launch_time": launch,
           "launch_time_iso": datetime.datetime.fromtimestamp(launch).astimezone().isoformat(),
           "seed": params.get("seed"), "agent_workspace": agent_ws})

    for line in sys.stdin:
        try:
            cmd = json.loads(line).get("cmd")
        except ValueError:
            cmd = None
        if cmd == "judge":
            try:
                _obs, reward, _term, _trunc, info = env.step("claim_done")
            except Exception:
                failed("judge")
                continue
            print(f"LOCA evaluation: reward {reward}; info {info!r}"[:20000], flush=True)
            reply({"ok": True, "reward": float(reward), "info": info})
        elif cmd == "close":
            break
        else:
            reply({"ok": False, "stage": "command", "error": f"unknown command: {line[:200]!r}"})


if __name__ == "__main__":
    main()
