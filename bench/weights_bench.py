"""Weight transport, object store against collective (gloo), side by side: `python -m bench.weights_bench`.

A source actor offers a synthetic state dict (float32 tensors of 32 MiB, as a model's layers) by
each transport (rollout/weights/) to two receiver actors holding a model-sized set of parameters,
as the generator pool does. Per size (0.1, 0.5, 2 GiB) and transport, the median of three updates:

    update_s     from the learner's offer until both receivers hold the new weights
    s_per_gib    update_s / size
    pause_s      how long a receiver cannot serve: copying what arrived into the parameters. Both
                 arrive beside serving: the object store's fetch, and the collective's buckets, staged
                 in host memory (a vLLM worker receives them in a thread of its own and loads them
                 between two engine steps; a transformers generator swaps between two batches). The
                 loads start once every receiver holds the update (on a cluster each generator has its
                 own node; here a load beside the other receiver's transfer measured that transfer)

and the ratios collective / object store. One machine: the object store is shared memory here, so
it is the best case for `object_store`; on a cluster every generator node pulls the whole state
dict over the network from the learner's node, while the broadcast sends each bucket once per
link (NCCL rings/trees on InfiniBand). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import ray
import torch

from launch.loopback import loopback_only
from rollout.weights.base import make_receiver, make_sender
from schema.config import WeightTransportConfig

TENSOR = 8 << 20  # float32 elements: 32 MiB
SIZES_GIB = (0.1, 0.5, 2.0)


def state_dict(gib: float) -> dict[str, torch.Tensor]:
    n = max(1, round(gib * 2**30 / (TENSOR * 4)))
    return {f"layers.{i}.weight": torch.full((TENSOR,), float(i)) for i in range(n)}


@ray.remote(num_cpus=0)
class Source:
    def __init__(self, gib: float):
        self.weights, self.version, self.sender, self.cfg = state_dict(gib), 0, None, None

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.weights.values())

    def weights_offer(self, transport: WeightTransportConfig, epoch: int, world: int) -> Any:
        if self.sender is None or self.cfg != transport:
            self.sender, self.cfg = make_sender(transport), transport
        self.version += 1
        return self.sender.offer(self.version, self.weights, epoch, world)

    def weights_send(self, update: Any) -> None:
        self.sender.send(update)


@ray.remote(num_cpus=0)
class Receiver:
    def __init__(self, gib: float):
        self.params = {k: torch.empty_like(v) for k, v in state_dict(gib).items()}
        self.receiver: Any = None
        self.parts: list[dict[str, torch.Tensor]] = []
        self.kind = ""

    def stage(self, update: Any, rank: int) -> None:
        """What arrives beside serving: the object store's fetch; the collective's buckets, staged in
        host memory (as a vLLM worker's receiving thread and a transformers generator do)."""
        if self.receiver is None or self.kind != update.kind:
            self.receiver, self.kind = make_receiver(update.kind), update.kind
        self.parts = list(self.receiver.receive(update, rank))

    def load(self) -> dict[str, float]:
        """The pause: copying what was staged into the model."""
        t0 = time.perf_counter()
        for part in self.parts:
            for k, v in part.items():
                self.params[k].copy_(v)
        self.parts = []
        return {"pause_s": time.perf_counter() - t0}


def measure(gib: float, transport: WeightTransportConfig, receivers: int = 2, repeats: int = 3) -> dict[str, Any]:
    src = Source.remote(gib)
    sinks = [Receiver.remote(gib) for _ in range(receivers)]
    nbytes = ray.get(src.nbytes.remote())
    world = 1 + receivers if transport.kind == "collective" else 0
    rows = []
    for _ in range(repeats + 1):  # the first forms the group (collective) / warms the store: not counted
        t0 = time.perf_counter()
        update = ray.get(src.weights_offer.remote(transport, 1, world))
        send = src.weights_send.remote(update)
        ray.get([s.stage.remote(update, 1 + i) for i, s in enumerate(sinks)])
        ray.get(send)
        # every receiver holds the update before any loads it: on a cluster each generator has its own
        # node, and a load here must not share the CPU with the other receiver's transfer
        got = ray.get([s.load.remote() for s in sinks])
        rows.append({"update_s": time.perf_counter() - t0, "pause_s": max(g["pause_s"] for g in got)})
        del update
    for a in (src, *sinks):
        ray.kill(a)
    rows = rows[1:]
    update_s = statistics.median(r["update_s"] for r in rows)
    return {"gib": round(nbytes / 2**30, 3), "update_s": round(update_s, 3),
            "s_per_gib": round(update_s / (nbytes / 2**30), 3),
            "pause_s": round(statistics.median(r["pause_s"] for r in rows), 3)}


def main(sizes_gib: tuple[float, ...] = SIZES_GIB) -> dict[str, Any]:
    loopback_only()  # launch/loopback.py
    ray.init(address="local", num_cpus=4, include_dashboard=False, object_store_memory=5 << 30, log_to_driver=False)
    try:
        out: dict[str, Any] = {"receivers": 2, "repeats": 3, "sizes": []}
        for gib in sizes_gib:
            store = measure(gib, WeightTransportConfig())
            coll = measure(gib, WeightTransportConfig(kind="collective", backend="gloo", bucket_mb=512, timeout_s=300))
            out["sizes"].append({"gib": store["gib"], "object_store": store, "collective_gloo": coll,
                                 "ratio_update_collective_over_store": round(coll["update_s"] / store["update_s"], 2),
                                 "ratio_pause_collective_over_store": round(coll["pause_s"] / max(store["pause_s"], 1e-9),
                                                                            2)})
        return out
    finally:
        ray.shutdown()


def _size(text: str) -> float:
    gib = float(text)
    if not 0 < gib <= 64:
        raise argparse.ArgumentTypeError(f"{text}: a size in GiB above 0 and at most 64")
    return gib


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sizes", nargs="*", type=_size, default=list(SIZES_GIB),
                        help=f"state-dict sizes in GiB (default: {' '.join(map(str, SIZES_GIB))})")
    print(json.dumps(main(tuple(parser.parse_args().sizes)), indent=2))
