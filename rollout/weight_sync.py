"""Moving new policy weights from the learner to the generators, with a version on every transfer.

Two transports behind one small interface (`publish(version, weights)` on the learner side):

- `ObjectStoreWeights` (CPU, and any cluster): the state dict goes into the Ray object store once;
  generators fetch it by reference (`GeneratorPool.load_weights(version, ref)`).
- `NCCLWeightSender` (GPU): the learner's rank 0 and every vLLM worker form one NCCL group
  (vLLM's `StatelessProcessGroup` + `PyNcclCommunicator`, the pattern of vLLM's RLHF example);
  each tensor is broadcast from the learner and loaded in place by the workers
  (`WeightSyncExtension.progagent_receive_weights` in rollout/generators/vllm_backend.py).

A hung transfer must fail loudly, never deadlock: every NCCL collective is followed by a
CUDA-event wait with a deadline (`WeightSyncTimeout`), and the receiving side is awaited with the
same deadline. NOTE: the NCCL path needs GPUs and has not been run on this project's CPU machines.
"""

from __future__ import annotations

import time
from typing import Any

import torch


class WeightSyncTimeout(RuntimeError):
    """A weight transfer did not complete within its deadline."""


class ObjectStoreWeights:
    """Put the weights in the Ray object store once; every generator reads the same object."""

    def publish(self, version: int, weights: dict[str, torch.Tensor]) -> tuple[int, Any]:
        import ray

        return version, ray.put(weights)


def wait_for_stream(stream: Any, timeout_s: float, what: str) -> None:
    """Wait for the work queued on `stream` to finish, or raise after `timeout_s`."""
    event = torch.cuda.Event()
    event.record(stream)
    deadline = time.monotonic() + timeout_s
    while not event.query():
        if time.monotonic() > deadline:
            raise WeightSyncTimeout(f"{what} did not finish within {timeout_s:.0f} s (NCCL peer missing or hung)")
        time.sleep(0.001)


def stateless_nccl_group(host: str, port: int, rank: int, world_size: int, device: Any) -> Any:
    from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator
    from vllm.distributed.utils import StatelessProcessGroup

    group = StatelessProcessGroup.create(host=host, port=port, rank=rank, world_size=world_size)
    return PyNcclCommunicator(group, device=device)


class NCCLWeightSender:
    """Learner side (rank 0) of the learner + vLLM-workers NCCL group."""

    def __init__(self, host: str, port: int, world_size: int, timeout_s: float = 300.0):
        self.host, self.port, self.world_size, self.timeout_s = host, port, world_size, timeout_s
        self.comm: Any = None

    def connect(self) -> None:
        """Call while the generators call `progagent_init_weight_group` (both sides block until all join)."""
        self.comm = stateless_nccl_group(self.host, self.port, 0, self.world_size, torch.device("cuda"))

    def broadcast(self, weights: dict[str, torch.Tensor]) -> None:
        if self.comm is None:
            raise RuntimeError("NCCLWeightSender.connect() was not called")
        stream = torch.cuda.current_stream()
        for name, tensor in weights.items():
            t = tensor.detach().to("cuda", non_blocking=True).contiguous()
            self.comm.broadcast(t, src=0, stream=stream)
            wait_for_stream(stream, self.timeout_s, f"broadcast of {name}")

    @staticmethod
    def manifest(weights: dict[str, torch.Tensor]) -> list[tuple[str, str, list[int]]]:
        """What the receivers allocate before each broadcast: (name, dtype, shape) in order."""
        return [(n, str(t.dtype).removeprefix("torch."), list(t.shape)) for n, t in weights.items()]
