"""The learner as a group of Ray actors, one per torch.distributed rank (as verl and slime run trainers),
for any number of ranks: one learner facade, whatever the layout.

    group = LearnerGroup.options(num_cpus=0).remote(model_path, cfg, LearnerPlacement(ranks=16, gpus_per_rank=1))
    await group.train_step.remote(groups)   # train_step, sft, weights_offer/send, logprobs, version, save, ...

One rank (the embedded default, a single GPU): `LearnerPlacement(reserved=False)` places its one rank
like any actor (no reserved bundle: its GPU share may be fractional, beside a generator) and
builds the backend without a process group, exactly as a lone trainer would; everything else is
the same path as sixteen ranks.

Placement: one bundle per rank, {"GPU": g, "CPU": c} (or {"CPU": c} without GPUs), in one placement
group (PACK by default: fewest nodes, tensor parallel wants NVLink). Ranks are numbered node by node,
so consecutive ranks — Megatron's tensor-parallel groups — share a node. Create the placement group
before the generators take their GPUs (`learner_placement_group`), or the learner gets the leftovers.

Start-up: rank 0 names MASTER_ADDR (its node's IP) and a port it holds bound there (its rendezvous store
serves on that socket: the node's address only, loopback on a single machine); every rank sets RANK, WORLD_SIZE,
LOCAL_RANK (its GPU's index among the visible devices), MASTER_ADDR/PORT and runs
`init_process_group` (nccl with CUDA, else gloo) before it builds the backend, which then finds an
initialised world: the torch backend shards with FSDP2, the megatron backend builds its parallel
state (TP × PP × CP × DP must equal the number of ranks) over it.

Data: torch backend, data parallel — rank r gets groups[r::W] (SFT: batch[r::W]); the backend sums
the normaliser over ranks, so a step of W ranks equals one rank's step on all the data. Megatron
backend, SPMD — every rank gets all groups (TP/PP ranks need the same batch; DP ranks take their
share of rows themselves). Metrics, weights (rollout/weights/: rank 0 sends), checkpoints and exports come from rank 0; every rank
takes part in the collectives behind them.

A rank that fails breaks the world: the call raises (it does not wait for the others, which may be
stuck in a collective) and the group must be restarted from the last checkpoint.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec
import ray
from ray.util.placement_group import (
    PlacementGroup,
    placement_group,
    placement_group_table,
    remove_placement_group,
)
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from actors.startup import collector_paused
from rollout.weights.base import Outbox
from schema.config import LearnerConfig, WeightTransportConfig
from schema.records import WeightUpdate

#: backends whose ranks all take the whole batch (they split it among data-parallel ranks themselves)
SPMD_BACKENDS = {"megatron"}


class LearnerPlacement(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    ranks: int = 1
    gpus_per_rank: float = 0.0  # 0: CPU bundles (tests, gloo); else a whole number of GPUs (NCCL)
    cpus_per_rank: float = 1.0
    strategy: str = "PACK"  # Ray's: PACK | SPREAD | STRICT_PACK | STRICT_SPREAD
    threads: int | None = None  # torch threads per rank (CPU)
    ready_timeout_s: float = 600.0
    #: in a placement group of one bundle per rank; False: one rank placed as any actor (module docstring)
    reserved: bool = True

    def __post_init__(self) -> None:
        if self.ranks < 1:
            raise ValueError(f"learner ranks must be ≥ 1, got {self.ranks}")
        if not self.reserved:
            if self.ranks != 1:
                raise ValueError(f"only a learner of one rank goes without reserved bundles, not {self.ranks}")
            return
        if self.gpus_per_rank and (self.gpus_per_rank < 1 or self.gpus_per_rank != int(self.gpus_per_rank)):
            raise ValueError(f"GPUs per learner rank must be 0 or a whole number (NCCL: one process per GPU), "
                             f"got {self.gpus_per_rank}")

    def bundles(self) -> list[dict[str, float]]:
        bundle = {"CPU": self.cpus_per_rank} | ({"GPU": self.gpus_per_rank} if self.gpus_per_rank else {})
        return [dict(bundle) for _ in range(self.ranks)]


def learner_placement_group(p: LearnerPlacement) -> PlacementGroup:
    """The reserved bundles, placed, or a TimeoutError that says what could not be found."""
    pg = placement_group(p.bundles(), strategy=p.strategy)
    ready, _ = ray.wait([pg.ready()], timeout=p.ready_timeout_s)
    if not ready:
        remove_placement_group(pg)
        raise TimeoutError(f"the learner's placement group ({p.ranks} × {p.bundles()[0]}, {p.strategy}) was not "
                           f"placed within {p.ready_timeout_s:.0f} s: the cluster lacks the resources (`ray status`)")
    return pg


def _rank_order(pg: PlacementGroup) -> tuple[list[int], list[int], list[int]]:
    """Bundle index of each rank (node by node), each rank's index on its node, ranks per node."""
    nodes = placement_group_table(pg)["bundles_to_node_id"]
    first = list(dict.fromkeys(nodes[i] for i in sorted(nodes)))
    order = sorted(nodes, key=lambda i: (first.index(nodes[i]), i))
    per_node = {n: sum(1 for b in order if nodes[b] == n) for n in first}
    local = [sum(1 for b in order[:r] if nodes[b] == nodes[order[r]]) for r in range(len(order))]
    return order, local, [per_node[nodes[b]] for b in order]


@ray.remote
class LearnerRank:
    """One rank: a torch.distributed process and its learner backend."""

    def __init__(self, rank: int, world: int, threads: int | None = None):
        with collector_paused():  # actors/startup.py
            import torch

        if threads:
            torch.set_num_threads(threads)
        self.rank, self.world = rank, world
        self.learner: Any = None
        self.outbox = Outbox()
        self.listen: Any = None  # rank 0's rendezvous socket, from `address` until `setup`

    def address(self) -> tuple[str, int]:
        """This node's IP and a port on it: rank 0's answer is the rendezvous. The socket stays bound
        and listening (no window in which another process takes the port), and rank 0's store serves
        on it: torch's own TCPStore master listens on every interface, this one on the node's address
        only (127.0.0.1 on a single machine: launch/loopback.py)."""
        import socket

        host = ray.util.get_node_ip_address()
        self.listen = socket.socket()
        self.listen.bind((host, 0))  # the node's address, not every interface
        self.listen.listen(1024)
        return host, self.listen.getsockname()[1]

    def setup(self, model_path: str, cfg: LearnerConfig, master: tuple[str, int] | None, local_world: int) -> None:
        """The backend on this rank; `master` None: the one rank of an unreserved learner, no process group."""
        import torch

        with collector_paused():  # actors/startup.py
            from learner.base import build_learner

        cuda = torch.cuda.is_available()
        local = 0
        if cuda:  # the GPU Ray gave this actor, as an index among the visible devices
            gpu = str(ray.get_gpu_ids()[0])
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            local = visible.split(",").index(gpu) if visible else int(gpu)
            torch.cuda.set_device(local)
        if master is not None:
            os.environ.update(MASTER_ADDR=master[0], MASTER_PORT=str(master[1]), RANK=str(self.rank),
                              WORLD_SIZE=str(self.world), LOCAL_RANK=str(local), LOCAL_WORLD_SIZE=str(local_world))
            if master[0].startswith("127."):  # one machine: gloo's and NCCL's sockets on loopback too
                os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
                os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
            torch.distributed.init_process_group("nccl" if cuda else "gloo", rank=self.rank, world_size=self.world,
                                                 store=self._store(master))
        self.model_path, self.cfg = model_path, cfg
        with collector_paused():  # its imports and the model: actors/startup.py
            self.learner = build_learner(model_path, cfg)

    def _store(self, master: tuple[str, int]) -> Any:
        """The world's rendezvous store: rank 0 serves it on the socket `address` bound, the others join."""
        from datetime import timedelta

        from torch.distributed import TCPStore

        timeout = timedelta(minutes=30)  # init_process_group's default
        if self.rank != 0:
            return TCPStore(master[0], master[1], self.world, is_master=False, timeout=timeout)
        fd = self.listen.detach()  # the store owns it now
        self.listen = None
        return TCPStore(master[0], master[1], self.world, is_master=True, timeout=timeout, wait_for_workers=False,
                        master_listen_fd=fd)

    def train_step(self, groups: list[list[Any]]) -> dict[str, float]:
        return self.learner.train_step(groups)

    def sft_step(self, samples: list[Any]) -> dict[str, float]:
        return self.learner.sft_step(samples)

    def reset_optimizer(self, lr: float) -> None:
        self.learner.reset_optimizer(lr)

    def weights_offer(self, transport: WeightTransportConfig, epoch: int, world_size: int) -> WeightUpdate | None:
        """Every rank gathers the full weights (a collective of the learner's world); rank 0 alone
        offers them (rollout/weights/): the transport sees one full state dict, whatever the layout."""
        version, weights = self.learner.weights()
        if self.rank != 0:
            return None
        return self.outbox.offer(transport, version, weights, epoch, world_size)

    def weights_send(self, update: WeightUpdate) -> None:
        self.outbox.send(update)

    def logprobs(self, samples: list[Any]) -> list[list[float]]:
        return self.learner.logprobs(samples)

    def version(self) -> int:
        return self.learner.version

    def save(self, path: str) -> str:
        return str(self.learner.save(path))

    def load(self, path: str) -> int:
        self.learner.load(path)
        return self.learner.version

    def export_hf(self, path: str) -> str:
        out = self.learner.export_hf(path)
        if self.rank == 0:  # the tokenizer too: what vLLM, transformers and `progagent eval` load
            from transformers import AutoTokenizer

            AutoTokenizer.from_pretrained(self.model_path).save_pretrained(out)
        return str(out)


class _Fanout:
    """What `run_sft` steps: each SFT batch split over the ranks (or whole, for SPMD backends)."""

    def __init__(self, group: LearnerGroup):
        self.group = group

    def sft_step(self, samples: list[Any]) -> dict[str, float]:
        return self.group._all("sft_step", self.group._shards(samples))[0]


@ray.remote
class LearnerGroup:
    """The learner facade over `placement.ranks` rank actors (one or many); see the module docstring."""

    def __init__(self, model_path: str, cfg: LearnerConfig, placement: LearnerPlacement,
                 pg: PlacementGroup | None = None):
        if placement.ranks != cfg.ranks:  # the placement is made from cfg.ranks (launch/fabric.py)
            raise ValueError(f"{placement.ranks} learner ranks placed for a learner of {cfg.ranks} ranks")
        self.cfg, self.placement = cfg, placement
        if not placement.reserved:  # one rank, placed as any actor
            self.own_pg, self.pg = False, None
            self.ranks = [LearnerRank.options(num_cpus=placement.cpus_per_rank, num_gpus=placement.gpus_per_rank)
                          .remote(0, 1, placement.threads)]
            self._all("setup", [(model_path, cfg, None, 1)])
            return
        self.own_pg = pg is None
        self.pg = learner_placement_group(placement) if pg is None else pg
        order, _, per_node = _rank_order(self.pg)
        world = placement.ranks
        self.ranks = [LearnerRank.options(
            num_cpus=placement.cpus_per_rank, num_gpus=placement.gpus_per_rank,
            scheduling_strategy=PlacementGroupSchedulingStrategy(self.pg, placement_group_bundle_index=b),
        ).remote(r, world, placement.threads) for r, b in enumerate(order)]
        master = ray.get(self.ranks[0].address.remote())
        self._all("setup", [(model_path, cfg, master, per_node[r]) for r in range(world)])

    # ------------------------------------------------------------------ fan-out
    def _all(self, method: str, args: list[tuple] | tuple = ()) -> list[Any]:
        """Call `method` on every rank (per-rank arguments when given a list) and return the results
        in rank order; the first failure raises at once (the other ranks may hang in a collective)."""
        per_rank = args if isinstance(args, list) else [args] * len(self.ranks)
        refs = [getattr(r, method).remote(*a) for r, a in zip(self.ranks, per_rank, strict=True)]
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            ray.get(done[0])  # raises the rank's error
        return ray.get(refs)

    def _shards(self, items: list[Any]) -> list[tuple]:
        """Per rank: its round-robin share (data parallel), or all items (SPMD backends, put once)."""
        if self.cfg.backend in SPMD_BACKENDS:
            ref = ray.put(items)
            return [(ref,)] * len(self.ranks)
        return [(items[r::len(self.ranks)],) for r in range(len(self.ranks))]

    # ------------------------------------------------------------------ the learner's API
    def train_step(self, groups: list[list[Any]]) -> dict[str, float]:
        return self._all("train_step", self._shards(groups))[0]

    def sft(self, trajectories: list[Any]) -> list[dict[str, float]]:
        """Cold-start SFT with its own optimizer at the SFT learning rate, then a fresh one at the RL
        learning rate (as separate SFT and RL jobs would); the batches are drawn here, each step runs
        on all ranks."""
        from learner.sft import run_sft, sft_samples

        self._all("reset_optimizer", (self.cfg.sft.lr,))
        try:
            return run_sft(_Fanout(self), sft_samples(trajectories), self.cfg.sft)
        finally:
            self._all("reset_optimizer", (self.cfg.optim.lr,))

    def weights_offer(self, transport: WeightTransportConfig, epoch: int, world_size: int) -> WeightUpdate:
        """The current weights, offered by `transport` (rollout/weights/): rank 0's offer, after every rank
        took part in the gather; the generator pool then has every generator receive while
        `weights_send` sends."""
        return self._all("weights_offer", (transport, epoch, world_size))[0]

    def weights_send(self, update: WeightUpdate) -> None:
        ray.get(self.ranks[0].weights_send.remote(update))

    def logprobs(self, samples: list[Any]) -> list[list[float]]:
        """log πθ of each token of each `learner.batch.Sample` (the train/inference mismatch, checks)."""
        return self._all("logprobs", (samples,))[0]

    def version(self) -> int:
        return self._all("version")[0]

    def save(self, path: str) -> str:
        return self._all("save", (path,))[0]

    def load(self, path: str) -> int:
        return self._all("load", (path,))[0]

    def export_hf(self, path: str) -> str:
        return self._all("export_hf", (path,))[0]

    # ------------------------------------------------------------------ placement
    def placement_group(self) -> PlacementGroup | None:
        return self.pg

    def shutdown(self) -> None:
        """Stop the ranks; remove the placement group if the group created it."""
        for r in self.ranks:
            ray.kill(r)
        if self.own_pg and self.pg is not None:
            remove_placement_group(self.pg)
