"""The weight transport's rendezvous store, hosted in a process of its own with a memory cap
(rollout/weights/collective.py `StoreHost` starts it; run as a script, not imported).

argv: the listening socket's fd (inherited), the group's size, the deadline in seconds, the cap in
bytes. It serves torch's TCPStore on that socket, then caps the process's data (RLIMIT_DATA: what it
holds now, plus the cap), says "ready" and lives until its parent closes stdin (or dies). A client
that writes past the cap makes an allocation fail here, and the store drops that client's
connection (were an allocation to fail elsewhere, this process would end instead): the store's
memory is bounded, and none of it is the learner's.
"""

import os
import resource
import socket
import sys
from datetime import timedelta


def data_bytes() -> int:
    """This process's private writable memory now (what RLIMIT_DATA counts)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmData in /proc/self/status")


def main() -> None:
    fd, world, timeout_s, cap = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    from torch.distributed import TCPStore

    sock = socket.socket(fileno=fd)
    host, port = sock.getsockname()[:2]
    sock.detach()  # the store owns the fd now
    store = TCPStore(host_name=host, port=port, world_size=world, is_master=True, wait_for_workers=False,
                     timeout=timedelta(seconds=timeout_s), master_listen_fd=fd)
    limit = data_bytes() + cap
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    print("ready", flush=True)
    sys.stdin.read()  # until the learner closes the group (or is gone)
    del store
    os._exit(0)


if __name__ == "__main__":
    main()
