"""A Ray started on this machine (not joined) listens on loopback only.

Rule: a run that starts its own Ray (the embedded default, the tests' cluster, the simulated
cluster of bench/cluster_sim.py) is one machine's business, so nothing it opens is reachable from
the machine's network: the GCS, raylets, object managers, workers' gRPC servers, the dashboard
agent, the runtime-env agent, and the project's own listeners (the weight transport's store and
process group, the learner's rendezvous), which bind to the node's address and so follow Ray's.

How: Ray turns a loopback node address into the machine's network address
(`resolve_ip_for_localhost`: `ray.init(_node_ip_address="127.0.0.1")` and
`ray start --node-ip-address=127.0.0.1` both end up on the network address) unless multi-node
clusters are off: `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, the switch that makes Ray single-machine on
macOS and Windows by default. With it off the node's address is 127.0.0.1 and Ray's C++ servers and
agents listen there (they bind to loopback when the node's address is loopback).

A cluster is untouched: with `ray.address` set (or under `ray job submit`) the driver joins a Ray
that its operator started, on the address the operator named.
"""

from __future__ import annotations

import os
import sys

SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def loopback_only() -> None:
    """Call before this process starts a Ray of its own (ray.init(address="local"), Cluster(...)).
    The variable reaches what that Ray spawns (GCS, raylets, workers, agents inherit the driver's
    environment); Ray reads it when it is imported, so a process that imported it already is told too."""
    os.environ[SWITCH] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:
        constants.ENABLE_RAY_CLUSTER = False
