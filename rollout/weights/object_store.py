"""Weights through Ray's object store: the learner puts the state dict once; each generator fetches it.

Right for one node (the object store is shared memory there) and small models. On a cluster every
generator node pulls the whole state dict over the network at every update, and the learner's
node holds it until the last generator has it: `collective` is the transport for that.
A replacement generator gets the same update again (the pool keeps the last one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from schema.records import WeightUpdate


class ObjectStoreSender:
    def offer(self, version: int, weights: dict[str, Any], epoch: int = 0, world_size: int = 0) -> WeightUpdate:
        import ray

        return WeightUpdate(version=version, kind="object_store", ref=[ray.put(weights)])

    def send(self, update: WeightUpdate) -> None:
        return None  # the object store holds it; receivers fetch


class ObjectStoreReceiver:
    def receive(self, update: WeightUpdate, rank: int = 0) -> Iterator[dict[str, Any]]:
        import ray

        yield ray.get(update.ref[0])
