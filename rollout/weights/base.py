"""The weight-transport seam (the shape of prime-rl's `transports/weights/`).

One update, in two calls on the learner's sending rank and one on every generator worker:

    update = sender.offer(version, weights, epoch, world_size)   # learner: cheap, says what will come
    sender.send(update)             ‖  receiver.receive(update, rank)   # at the same time, every member
                                                    yields {name: tensor} bucket by bucket

`offer` returns at once (a reference, or the group's address and the bucket plan), so the pool can
hand the update to every generator before the learner starts sending; a collective transport needs
all members in the call together. `epoch` names the membership: the generator pool starts a new one
whenever a generator joins or is replaced, and a new epoch is a new process group (a process group
has a fixed world). Every failure is a `WeightTransferError` within the config's `timeout_s`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from schema.config import WeightTransportConfig
from schema.records import WeightUpdate

if TYPE_CHECKING:
    import torch


class WeightTransferError(RuntimeError):
    """A weight update did not complete: a member missing or dead, a deadline passed, a mismatch."""


class WeightSender(Protocol):
    def offer(self, version: int, weights: dict[str, torch.Tensor], epoch: int, world_size: int) -> WeightUpdate: ...

    def send(self, update: WeightUpdate) -> None: ...


class WeightReceiver(Protocol):
    def receive(self, update: WeightUpdate, rank: int) -> Iterator[dict[str, torch.Tensor]]: ...


class Outbox:
    """The learner's sending rank across updates: one sender (a collective keeps its group between
    updates), made again only when the transport's config changes."""

    def __init__(self) -> None:
        self.sender: WeightSender | None = None
        self.cfg: WeightTransportConfig | None = None

    def offer(self, transport: WeightTransportConfig, version: int, weights: dict[str, torch.Tensor], epoch: int,
              world_size: int) -> WeightUpdate:
        if self.sender is None or self.cfg != transport:
            self.sender, self.cfg = make_sender(transport), transport
        return self.sender.offer(version, weights, epoch, world_size)

    def send(self, update: WeightUpdate) -> None:
        if self.sender is None:
            raise WeightTransferError(f"send of version {update.version} without its offer")
        self.sender.send(update)


def make_sender(cfg: WeightTransportConfig) -> WeightSender:
    if cfg.kind == "collective":
        from rollout.weights.collective import CollectiveSender

        return CollectiveSender(cfg)
    from rollout.weights.object_store import ObjectStoreSender

    return ObjectStoreSender()


def make_receiver(kind: str, device: Any = "cpu") -> WeightReceiver:
    if kind == "collective":
        from rollout.weights.collective import CollectiveReceiver

        return CollectiveReceiver(device)
    from rollout.weights.object_store import ObjectStoreReceiver

    return ObjectStoreReceiver()
