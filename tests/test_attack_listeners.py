"""Who can reach a single-machine run: its listening sockets.

A run of configs/local.yaml on the embedded Ray (`launch/fabric.py` `init_ray`, no `ray.address`) is
one machine's business: Ray's GCS, raylet, object manager, workers and agents, and the project's own
listeners (the weight transport's store and process group, the learner's rendezvous) all listen on
loopback only, so nothing on the machine's network reaches them. The run is a real one (one step,
the collective weight transport so that its store and group listen too), in a process of its own:
the embedded default is what is checked, not the test session's cluster.
"""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

RUN = r"""
import asyncio, json, sys
import psutil
from launch.train import train
from schema.load import load_config

found = []

def listeners():
    me = psutil.Process()
    pids = {me.pid} | {p.pid for p in me.children(recursive=True)}
    out = []
    for c in psutil.net_connections(kind="inet"):
        udp = c.type == 2 and not c.raddr  # a bound UDP socket receives from anyone
        if c.pid in pids and (c.status == psutil.CONN_LISTEN or udp):
            out.append([c.laddr.ip, c.laddr.port, psutil.Process(c.pid).name()])
    return out

async def on_step(step, fabric, manager):
    await fabric.publish()  # the collective group forms (its store and gloo pairs listen)
    found.extend(listeners())

cfg = load_config(sys.argv[1], sys.argv[2:])
asyncio.run(train(cfg, on_step=on_step))
print("LISTENERS " + json.dumps(found))
"""

LOOPBACK = ("127.", "::1", "::ffff:127.")


@pytest.mark.timeout(900)  # a Ray start and one training step in a process of its own: minutes on a busy host
def test_a_single_machine_run_listens_on_loopback_only(tmp_path):
    """Every listening TCP socket and bound UDP socket of the run's process tree (the driver, the GCS,
    the raylet, every worker and agent) is on 127.0.0.0/8 or ::1 while it trains."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}  # the default, not the tests'
    env["PYTHONPATH"] = str(ROOT)
    overrides = [
        f"run.out_dir={tmp_path}", "train.steps=1", "train.checkpoint_every=0", "tasks.tasks=[inventory_reorder_flags]",
        "tasks.scales={v0: 1.0}", "fabric.env_worker.limits={max_turns: 1, max_new_tokens: 16, max_context_tokens: 8192}",
        "fabric.env_worker.concurrency=2", "rollout.group_size=2", "train.groups_per_step=1", "sft.enabled=false",
        "eval.before=false", "eval.after=false", "wandb.mode=disabled", "ray.num_cpus=4",
        "learner.loss.filter_equal_reward_groups=false", "fabric.weights.kind=collective",
        "fabric.weights.backend=gloo"]
    done = subprocess.run([sys.executable, "-c", RUN, str(ROOT / "configs" / "local.yaml"), *overrides], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=900)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("LISTENERS ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-5000:]
    found = json.loads(lines[-1].removeprefix("LISTENERS "))
    names = {name for _, _, name in found}
    assert "gcs_server" in names and "raylet" in names, found  # the enumeration sees Ray's own listeners
    exposed = [s for s in found if not s[0].startswith(LOOPBACK)]
    assert not exposed, f"listening beyond loopback: {exposed}"
