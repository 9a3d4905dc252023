"""The collective weight transport's own rules, without Ray or a model (rollout/weights/collective.py):
buckets pack every dtype within their bound; a peer that never joins fails the update within the
deadline with an error that says so; a failed update closes only its own group; a peer without the
group's token can neither join nor send. End to end through real actors: tests/test_weight_transport.py.

These wait out deadlines on purpose (seconds of wall, little CPU), so they run beside the Ray tests
rather than among them (tests/conftest.py).
"""

import time
from datetime import timedelta

import pytest
import torch

from rollout.weights.base import WeightTransferError
from rollout.weights.collective import CollectiveReceiver, CollectiveSender, pack, plan_buckets, unpack
from schema.config import WeightTransportConfig


def test_buckets_pack_every_dtype_and_respect_the_bound():
    weights = {"a": torch.randn(300_000), "b": torch.ones(3, 5, dtype=torch.bfloat16),
               "c": torch.tensor(7, dtype=torch.int64), "d": torch.randn(70, 3).half(), "e": torch.randn(10)}
    buckets = plan_buckets(weights, 1 << 20)
    assert [m.name for b in buckets for m in b] == list(weights)  # in order, each once
    assert len(buckets) == 2  # "a" (1.2 MB) alone: larger than a bucket
    got = {}
    for b in buckets:
        got.update(unpack(pack(weights, b, "cpu"), b))
    assert all(got[k].dtype == v.dtype and torch.equal(got[k], v) for k, v in weights.items())


def test_a_peer_that_never_joins_fails_within_the_deadline():
    weights = {"w": torch.zeros(4)}
    sender = CollectiveSender(WeightTransportConfig(kind="collective", backend="gloo", timeout_s=2))
    update = sender.offer(1, weights, epoch=1, world_size=2)
    start = time.monotonic()
    with pytest.raises(WeightTransferError, match="did not form within 2 s.*some never joined"):
        sender.send(update)
    assert time.monotonic() - start < 30  # the deadline held; nothing hangs
    # the receiving side alone: its learner never comes
    lonely = sender.offer(1, weights, epoch=2, world_size=2)
    sender._drop()  # nobody listens at that address any more
    start = time.monotonic()
    with pytest.raises(WeightTransferError, match="rank 1 waited"):
        list(CollectiveReceiver().receive(lonely, 1))
    assert time.monotonic() - start < 30


def test_a_failed_update_closes_only_its_own_group():
    """A retried update (a new epoch) can start while the failed one still waits out its deadline in
    another thread; the failed one must not close the group the new one formed."""
    import threading

    cfg = WeightTransportConfig(kind="collective", backend="gloo", timeout_s=4)
    weights = {"w": torch.arange(4.0)}
    recv = CollectiveReceiver()
    dead = CollectiveSender(cfg)
    stale = dead.offer(1, weights, epoch=1, world_size=2)
    dead._drop()  # its learner never comes
    errors = []

    def stale_receive():
        try:
            list(recv.receive(stale, 1))
        except WeightTransferError as exc:
            errors.append(exc)

    waiting = threading.Thread(target=stale_receive)
    waiting.start()
    time.sleep(0.5)
    sender = CollectiveSender(cfg)
    for version in (2, 3):
        update = sender.offer(version, weights, epoch=2, world_size=2)
        send = threading.Thread(target=sender.send, args=(update,))
        send.start()
        got = {}
        for part in recv.receive(update, 1):
            got.update(part)
        send.join()
        assert torch.equal(got["w"], weights["w"])
        if version == 2:
            waiting.join()  # the stale update fails now, after the new group formed
    assert errors and recv.group is not None and recv.group.epoch == 2


def test_a_peer_without_the_groups_token_cannot_join_or_send():
    """The store is a TCP listener anyone who reaches the node can connect to (a sandbox with the host's
    network, another tenant): without the group's token a peer finds none of its keys, so it neither
    joins nor stands in for the learner; the real members' update goes through beside it."""
    import threading

    import msgspec

    cfg = WeightTransportConfig(kind="collective", backend="gloo", timeout_s=4)
    weights = {"w": torch.arange(6.0)}
    sender = CollectiveSender(cfg)
    update = sender.offer(1, weights, epoch=1, world_size=2)
    assert update.host != "" and len(update.token) == 32
    # the store listens on the node's address (loopback here), not every interface
    import psutil
    assert [c.laddr for c in psutil.Process(sender.host.proc.pid).net_connections() if c.status == "LISTEN"] \
        == [(update.host, update.port)]
    # an intruder claims rank 1 with a guessed token; the real receiver comes too
    forged = msgspec.structs.replace(update, token="0" * 32)
    intruder_errors = []

    def intrude():
        try:
            list(CollectiveReceiver().receive(forged, 1))
        except WeightTransferError as exc:
            intruder_errors.append(exc)

    intruder = threading.Thread(target=intrude)
    intruder.start()
    send = threading.Thread(target=sender.send, args=(update,))
    send.start()
    got = {}
    for part in CollectiveReceiver().receive(update, 1):
        got.update(part)
    send.join()
    intruder.join()
    assert torch.equal(got["w"], weights["w"])
    assert intruder_errors and "did not form" in str(intruder_errors[0])
    # a sender without the token: the receiver never takes its data
    rogue = CollectiveSender(cfg)
    rogue_update = rogue.offer(2, {"w": torch.full((6,), 666.0)}, epoch=2, world_size=2)
    victim_view = msgspec.structs.replace(rogue_update, token=update.token)  # what the receiver was told
    rogue_errors: list[Exception] = []

    def rogue_send():
        try:
            rogue.send(rogue_update)
        except WeightTransferError as exc:
            rogue_errors.append(exc)

    # joined, not left running: a thread still inside gloo while the interpreter finalizes is the
    # suspect (not proven) for a pytest process that ended with status 0 and no summary (scripts/test.sh)
    rogue_thread = threading.Thread(target=rogue_send)
    rogue_thread.start()
    with pytest.raises(WeightTransferError):
        list(CollectiveReceiver().receive(victim_view, 1))
    rogue_thread.join(timeout=60)
    assert not rogue_thread.is_alive() and rogue_errors  # the rogue's update did not form either


def _update_through(sender, update, receiver):
    """One update from `sender` to `receiver` (rank 1), the send in a thread; what rank 1 got."""
    import threading

    errors: list[Exception] = []

    def send():
        try:
            sender.send(update)
        except WeightTransferError as exc:
            errors.append(exc)

    thread = threading.Thread(target=send)
    thread.start()
    got = {}
    try:
        for part in receiver.receive(update, 1):
            got.update(part)
    finally:
        thread.join(timeout=60)
    assert not thread.is_alive() and not errors, errors
    return got


def test_a_client_without_the_token_cannot_make_the_learner_hold_its_writes():
    """The store takes any key from any client before a token is looked at. An unauthenticated client
    (here on loopback, where the store listens) writes 200 keys of 1 MiB: the store's memory is capped
    (STORE_CAP_BYTES, in a process of its own), so the flood is cut off near the cap and the learner's
    own memory does not grow with it; the members' group, formed before, still carries the next
    update, and a new group forms after. The keys it can list do not show the group's token."""
    import psutil
    from torch.distributed import TCPStore

    from rollout.weights.collective import STORE_CAP_BYTES

    cfg = WeightTransportConfig(kind="collective", backend="gloo", timeout_s=4)
    sender, receiver = CollectiveSender(cfg), CollectiveReceiver()
    update = sender.offer(1, {"w": torch.arange(4.0)}, epoch=1, world_size=2)
    assert update.host == "127.0.0.1"
    assert torch.equal(_update_through(sender, update, receiver)["w"], torch.arange(4.0))
    me = psutil.Process()
    rss = me.memory_info().rss
    intruder = TCPStore(host_name=update.host, port=update.port, is_master=False, timeout=timedelta(seconds=5))
    keys = intruder.list_keys()  # the store lists its keys to anyone: they must not carry the token
    assert keys and not any(update.token in k for k in keys), keys
    payload = b"x" * (1 << 20)
    written = 0
    try:
        for i in range(200):
            intruder.set(f"flood/{i}", payload)
            written += 1
    except Exception:  # noqa: BLE001  (the store went away under the flood: torch's DistNetworkError)
        pass
    grown = me.memory_info().rss - rss
    assert written * len(payload) <= STORE_CAP_BYTES + (8 << 20), f"the store took {written} MiB"
    assert grown < 48 << 20, f"the learner grew by {grown >> 20} MiB"
    # the group formed before the flood still carries updates (gloo needs the store only to form)
    update2 = sender.offer(2, {"w": torch.arange(4.0) + 1}, epoch=1, world_size=2)
    assert torch.equal(_update_through(sender, update2, receiver)["w"], torch.arange(4.0) + 1)
    # and a new group (new store, new token) forms and carries one
    update3 = sender.offer(3, {"w": torch.arange(4.0) + 2}, epoch=2, world_size=2)
    assert update3.port != update.port and update3.token != update.token
    assert torch.equal(_update_through(sender, update3, receiver)["w"], torch.arange(4.0) + 2)
    sender._drop()
    receiver.close()


def test_a_client_that_takes_a_members_place_gets_no_weights():
    """The store lists its keys to any client, so one that reaches it while the group forms sees the
    prefix and can join in a receiver's place (gloo checks nothing). Without the token it cannot
    show the member's proof: the group is refused before the header or any bucket is sent, and the
    learner's error names the rank that was taken."""
    import threading

    from torch.distributed import BroadcastOptions, PrefixStore, TCPStore

    from rollout.weights.collective import gloo_group

    cfg = WeightTransportConfig(kind="collective", backend="gloo", timeout_s=6)
    sender = CollectiveSender(cfg)
    update = sender.offer(1, {"w": torch.arange(4.0) * 7}, epoch=1, world_size=2)
    errors: list[Exception] = []

    def send():
        try:
            sender.send(update)
        except WeightTransferError as exc:
            errors.append(exc)

    thread = threading.Thread(target=send)
    thread.start()
    spy = TCPStore(host_name=update.host, port=update.port, is_master=False, timeout=timedelta(seconds=5))
    deadline = time.monotonic() + 20
    while not (keys := spy.list_keys()) and time.monotonic() < deadline:
        time.sleep(0.01)
    prefix = "/".join(keys[0].split("/")[:3])  # progagent-weights/<hash>/<epoch>: what a spy learns
    assert update.token not in prefix
    pg = gloo_group(PrefixStore(prefix, spy), 1, 2, timedelta(seconds=6))  # rank 1's place, taken
    guess = torch.zeros(2, dtype=torch.int64)
    pg.allgather([[torch.zeros_like(guess), torch.zeros_like(guess)]], [guess]).wait()
    header, bucket = torch.zeros(5, dtype=torch.int64), torch.zeros(16, dtype=torch.uint8)
    opts = BroadcastOptions()
    opts.rootRank = 0
    with pytest.raises(Exception):  # noqa: B017  (gloo's own error: the learner left the group)
        pg.broadcast([header], opts).wait(timedelta(seconds=6))
        pg.broadcast([bucket], opts).wait(timedelta(seconds=6))
    thread.join(timeout=60)
    assert not thread.is_alive() and errors and "rank(s) [1]" in str(errors[0]) and "do not hold" in str(errors[0])
    assert not header.any() and not bucket.any()  # neither the header (its token words) nor a weight
    sender._drop()
