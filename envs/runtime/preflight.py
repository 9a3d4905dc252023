"""Can this host run sandboxed episodes? Checked once, before a worker takes work, with the fix named.

    mode = check_host(RuntimeConfig())      # "cgroup2" | "cgroup1" | "rlimit" (asked for), or HostNotReady

A node of another framework's cluster (a verl rollout worker, a verifiers env server) is often a
container built for GPUs, not for sandboxes: bubblewrap missing, user namespaces forbidden, no cgroup
delegated. Finding that out at the first episode means a training step of errors; finding it here means
one clear refusal that says what to install or allow. Without cgroups the runtime can still bound each
sandboxed process by rlimits, but not a sandbox's processes together, so `limits: auto` does not fall
back to that silently on such a node: `limits: rlimit` asks for it.
"""

from __future__ import annotations

import shutil
import subprocess

from envs.runtime.limits import LimitBackend
from schema.config import RuntimeConfig

#: the bubblewrap probe: a sandbox as the runtime makes them (every namespace unshared), running `true`
PROBE_TIMEOUT_S = 20.0


class HostNotReady(RuntimeError):
    """This host cannot run sandboxed episodes; the message names what is missing and the fix."""


def check_host(config: RuntimeConfig, *, where: str = "runtime") -> str:
    """The limits mode this host gives `config` (module docstring), or HostNotReady naming the fix.
    `where`: how the caller's config names the runtime settings (e.g. a verl agent loop's `runtime`)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise HostNotReady("bubblewrap (bwrap) is not installed on this node: programs cannot be sandboxed. "
                           "Install it (Debian/Ubuntu: apt-get install bubblewrap; or scripts/install.sh)")
    argv = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        probe = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise HostNotReady(f"bubblewrap did not start a sandbox within {PROBE_TIMEOUT_S:.0f} s on this node") from None
    if probe.returncode != 0:
        err = probe.stderr.decode(errors="replace").strip()[-400:]
        raise HostNotReady(
            f"bubblewrap cannot make a sandbox on this node ({err or f'exit {probe.returncode}'}). It needs "
            "unprivileged user namespaces: on the host, sysctl kernel.unprivileged_userns_clone=1 and "
            "user.max_user_namespaces > 0; in a container, run it with --security-opt seccomp=unconfined "
            "--security-opt apparmor=unconfined (or a seccomp profile that allows clone/unshare of user namespaces)")
    try:
        backend = LimitBackend(config.memory_bytes, config.max_processes, config.limits, file_bytes=config.disk_bytes)
    except RuntimeError as exc:
        raise HostNotReady(f"{where}.limits={config.limits!r}: {exc}") from None
    try:
        if backend.mode == "rlimit" and config.limits == "auto":
            raise HostNotReady(
                "no cgroup (v2 or v1) with the memory and pids controllers is delegated to this user, so a "
                "sandbox's processes cannot be limited together. Delegate one (systemd: Delegate=yes on the "
                "worker's unit or `systemd-run --user --scope -p Delegate=yes`; a container: "
                "--cgroupns=private with /sys/fs/cgroup writable), or accept per-process limits with "
                f"{where}.limits=rlimit")
        return backend.mode
    finally:
        backend.close()
