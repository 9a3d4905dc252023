"""The bubblewrap command line of one sandboxed kernel: what is bound, what is not.

Inside the sandbox the filesystem is a fresh tmpfs root holding only:
- /usr (read-only; /bin, /lib, /lib64, /sbin as the usual symlinks), a private /proc and /dev,
- the Python installation the kernel runs on and its environment (read-only, at their host paths,
  since Python finds its prefix from its own location), with any task library folder under them
  hidden behind an empty tmpfs,
- /opt/progagent: the tool proxy and the kernel launcher (shim/, read-only),
- /run/progagent: the kernel's connection file and ipc sockets (read-write, this kernel's only),
- /run/tools: the folder with the tool bridge's socket (read-only),
- /workspace: the episode's workspace (read-write, the working directory),
- `RuntimeConfig.binds`: host folders at their own paths (read-only, or read-write when `:rw`),
- a private /tmp.
Every namespace is unshared (no network: only `lo`), all capabilities dropped, the environment
cleared, a new session (no terminal signals), and the sandbox dies with its parent.

Every bubblewrap sandbox of the project is a `Sandbox` (the only builder: isolation, the fresh root
with /usr, /proc, /dev, /tmp, the read-only root and the system call filter are not options) started
through `launch_argv`; `python_binds` (the Python installation with task library folders hidden) is
also used by the task code child (envs/format/code_runner.py), the
sandboxed task MCP server (envs/format/task_env.py) and Harbor's container view (envs/harbor/task.py).
`TASK_CODE` is what a task folder's code imports from the repository (bound file by file).

Every one of them starts through `launch_argv`, with `BWRAP_ENV` as bubblewrap's own environment:
bubblewrap stays in the sandbox as its pid 1 (the reaper), and a sandboxed program can read
/proc/1/environ and /proc/1/cmdline. `--clearenv` clears only the child's environment, so bubblewrap
itself must start with nothing of the host's (API keys, W&B and HF tokens live in a worker's
environment), and its options (host paths, cgroup paths) go through a file read on a descriptor
(`--args 3`), leaving `bwrap --args 3 -- COMMAND` as all that /proc/1/cmdline shows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

SHIM_DIR = Path(__file__).resolve().parent / "shim"
_ENVS = Path(__file__).resolve().parents[1]
#: the repository modules a task folder's code imports (envs/format/TASK_FORMAT.md): path under the code root → file
TASK_CODE = {rel: _ENVS.parent / rel for rel in (
    "envs/__init__.py", "envs/taskkit.py", "envs/runtime/__init__.py", "envs/runtime/untrusted_fs.py",
    "envs/format/__init__.py", "envs/format/library.py", "envs/format/provenance.py",
    "schema/__init__.py", "schema/bounds.py", "schema/records.py", "schema/outcomes.py")}
IN_KERNEL_DIR = "/run/progagent"
IN_TOOLS_DIR = "/run/tools"
IN_SHIM_DIR = "/opt/progagent"
IN_WORKSPACE = "/workspace"


#: bubblewrap's own environment (visible in the sandbox as /proc/1/environ): nothing of the host's
BWRAP_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
# the options arrive on fd 3 from a file the host keeps (the sandbox cannot see it): `--args 3`, and the
# system call filter on fd 4 (envs/runtime/seccomp.py); bwrap starts with BWRAP_ENV whatever its caller's
# environment (an MCP client adds the host's HOME, USER...)
_LAUNCH = ('exec 3<"$1" 4<"$2" && shift 2 && exec /usr/bin/env -i '
           + " ".join(f"{k}={v}" for k, v in BWRAP_ENV.items()) + ' "$@"')
#: descriptors below this are the launcher's (0-2, the options on 3, the filter on 4): a held folder
#: (HeldFolders) is moved above them, or the launcher's own would replace it
FIRST_HELD_FD = 10


def launch_argv(sandbox: Sandbox, command: list[str], scratch: str | Path) -> list[str]:
    """The argv that runs `command` in `sandbox` (its options hidden from the sandbox: module
    docstring) with the system call filter loaded. Only a `Sandbox` is accepted, so no sandbox of the
    project starts without its isolation, its read-only root and the filter. The options are written
    NUL-separated to a 0600 file in `scratch`, a host folder that outlives every start of this argv (a
    restarted server is started with the same argv) and is never bound into a sandbox; start it with
    `env=BWRAP_ENV` (and `pass_fds` = the descriptors of any folder it binds by descriptor: HeldFolders.fds)."""
    from envs.runtime import seccomp

    if not isinstance(sandbox, Sandbox):
        raise TypeError("launch_argv takes a Sandbox: every sandbox is built by envs/runtime/sandbox.Sandbox")
    options = sandbox.options()
    scratch = Path(scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    args_file = scratch / f"bwrap-{secrets.token_hex(6)}.args"
    fd = os.open(args_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(b"".join(a.encode() + b"\0" for a in [*options[1:], "--seccomp", "4"]))
    return ["/bin/sh", "-c", _LAUNCH, "sh", str(args_file), str(seccomp.program()), options[0], "--args", "3", "--",
            *command]


def python_roots() -> list[Path]:
    """The folders the interpreter needs: its base installation and its (virtual) environment."""
    roots = []
    for p in (Path(sys.base_prefix), Path(sys.prefix)):
        p = p.resolve()
        if p not in roots:
            roots.append(p)
    return roots


def python_aliases() -> list[tuple[Path, Path]]:
    """(real folder, the path this process names it by) for an installation reached through a link
    (`.venv -> /data/venvs/pa`): sys.executable and sys.prefix name the link's path, so the sandbox
    binds the real folder there too, and a sandboxed `sys.executable` is the same file as here."""
    out = []
    for p in (Path(sys.base_prefix), Path(sys.prefix)):
        named, real = Path(os.path.abspath(p)), p.resolve()
        if named != real and (real, named) not in out:
            out.append((real, named))
    return out


def hidden_paths(binds: list[Path]) -> list[Path]:
    """Task library folders (verifiers, oracles) that lie under a bound folder, to be masked.

    With an editable install nothing of the repository is under the environment; with a regular
    install `site-packages/envs/tasks` is, and must not be readable from the sandbox.
    """
    import envs

    secret = [Path(p).resolve() / "tasks" for p in envs.__path__]
    return [s for s in secret if any(s.is_relative_to(b) for b in binds) and s.exists()]


#: the private /tmp of a sandbox is a tmpfs (memory) of at most this size
TMP_BYTES = 512 * 2**20


def _isolation_argv(*, uid: int, hostname: str, network: bool, nested_userns: bool, bwrap: str) -> list[str]:
    """The start of every bubblewrap command line here (Sandbox.options): isolation and a fresh root.

    Every namespace unshared (`network`: all but the network's), the sandbox's processes in a new
    session, killed with their parent, without capabilities, in a cleared environment, as `uid`
    (its own user namespace; no nested ones unless `nested_userns`); the root a tmpfs with /usr
    read-only (/bin, /lib, /lib64, /sbin the usual symlinks), a private /proc, /dev and a /tmp of
    TMP_BYTES (sized: where there are no cgroups, nothing else would bound its memory).
    """
    return [
        bwrap,
        "--unshare-all", *(["--share-net"] if network else []), "--unshare-user",
        *([] if nested_userns else ["--disable-userns"]),
        "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
        "--uid", str(uid), "--gid", str(uid), "--hostname", hostname,
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/sbin", "/sbin",
        "--proc", "/proc", "--dev", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
    ]


#: where no mount may go: the sandbox's own layout made by _isolation_argv (a mount over one would
#: replace /usr, /proc, /dev or the capped /tmp with a host folder)
_LAYOUT = ("/", "/usr", "/bin", "/lib", "/lib64", "/sbin", "/proc", "/dev", "/tmp")
#: the size of the read-only tmpfs that holds the folders leading to a bind under /tmp
SKELETON_BYTES = 64 * 2**10


@dataclasses.dataclass
class Sandbox:
    """One bubblewrap sandbox, the only way this project builds one: callers add mounts, environment
    and a working folder; `launch_argv(sandbox, command, scratch)` is its command line.

    What every sandbox has, whatever its caller forgets (the layers are not options):
    - the isolation of `_isolation_argv` (namespaces, no capabilities, cleared environment, private
      /proc, /dev and a /tmp of TMP_BYTES),
    - the root read-only once everything is mounted (`writable_root` only for Harbor's container,
      whose image root is the task's to write, as in Docker),
    - the system call filter of envs/runtime/seccomp.py (launch_argv: inotify and fanotify instances
      and kernel keyrings are the host user's, so they are refused),
    - mounts applied parents first (by the depth of their path in the sandbox, in order otherwise),
      so a folder bound inside another is never hidden by it, whatever order the caller added them,
    - a host path under /tmp appears exactly as bound: bubblewrap makes the folders leading to such a
      mount point in the private /tmp, where the sandbox could write them (a write to
      `<checkout>/x` of a checkout under /tmp succeeded in the sandbox instead of failing); each
      first folder under /tmp that leads to a mount is a small tmpfs made read-only after the mounts.
    """

    uid: int = 1000
    hostname: str = "sandbox"
    network: bool = False
    nested_userns: bool = False
    writable_root: bool = False
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    chdir: str | None = None
    bwrap: str = ""
    #: (target in the sandbox, bubblewrap's tokens, whether it is a named path's alias: bind_named)
    _mounts: list[tuple[str, list[str], bool]] = dataclasses.field(default_factory=list)

    def mount(self, dest: str | Path, *tokens: str, alias: bool = False) -> Sandbox:
        """A raw mount option whose target is `dest` (`--tmpfs D`, `--dir D`, `--ro-bind-fd N D`...)."""
        dest = os.path.normpath(str(dest))
        if not dest.startswith("/") or dest in _LAYOUT or (dest.startswith(("/proc/", "/dev/", "/usr/"))):
            raise ValueError(f"{dest}: not a place for a mount (the sandbox's own layout)")
        self._mounts.append((dest, list(tokens), alias))
        return self

    def bind(self, source: str | Path, dest: str | Path | None = None, *, writable: bool = False) -> Sandbox:
        """`source` (a host folder or file) at `dest` (default: its own path), read-only unless `writable`."""
        dest = source if dest is None else dest
        return self.mount(dest, "--bind" if writable else "--ro-bind", str(source), os.path.normpath(str(dest)))

    def bind_named(self, path: str | Path, *, writable: bool = False) -> Sandbox:
        """`path` bound at its real path and, when a link on the way makes its named path another one
        (`.venv -> /data/venvs/pa`, a checkout reached through a link), at the named path too, so that
        a path means the same inside as on the host. The named path is left out when it lies inside
        another mount: that folder's own link is there, and leads to the real path, bound."""
        named = Path(os.path.abspath(path))
        real = named.resolve()
        self.bind(real, real, writable=writable)
        if named != real:
            self.mount(named, "--bind" if writable else "--ro-bind", str(real), str(named), alias=True)
        return self

    def with_python(self) -> Sandbox:
        """This process's Python installation (python_binds: task library folders hidden)."""
        tokens = python_binds()
        i = 0
        while i < len(tokens):
            if tokens[i] == "--tmpfs":
                self.mount(tokens[i + 1], "--tmpfs", tokens[i + 1])
                i += 2
            else:
                self.mount(tokens[i + 2], *tokens[i:i + 3])
                i += 3
        return self

    def setenv(self, env: dict[str, str]) -> Sandbox:
        self.env.update(env)
        return self

    def dests(self) -> list[str]:
        """The targets of the mounts this sandbox makes (aliases inside another mount left out)."""
        plain = [dest for dest, _, alias in self._mounts if not alias]
        return [dest for dest, _, alias in self._mounts
                if not alias or not any(Path(dest).is_relative_to(p) for p in plain)]

    def options(self) -> list[str]:
        """bubblewrap's options (bwrap's path first), the layers of the class docstring included."""
        dests = set(self.dests())
        kept = [(dest, tokens) for dest, tokens, alias in self._mounts if not alias or dest in dests]
        ordered = sorted(kept, key=lambda m: len(Path(m[0]).parts))  # stable: same depth keeps order
        skeletons = sorted({"/tmp/" + Path(d).parts[2] for d in dests if d.startswith("/tmp/")} - dests)
        argv = _isolation_argv(uid=self.uid, hostname=self.hostname, network=self.network,
                               nested_userns=self.nested_userns, bwrap=self.bwrap or shutil.which("bwrap") or "bwrap")
        for top in skeletons:
            argv += ["--size", str(SKELETON_BYTES), "--tmpfs", top]
        for _, tokens in ordered:
            argv += tokens
        for top in skeletons:
            argv += ["--remount-ro", top]
        if self.chdir is not None:
            argv += ["--chdir", self.chdir]
        if not self.writable_root:
            argv += ["--remount-ro", "/"]
        return argv + setenv_argv(self.env)


def python_binds() -> list[str]:
    """The Python installation read-only at its host paths (and at the path this process names it by,
    python_aliases), task library folders under it hidden."""
    roots = python_roots()
    argv = []
    for root in roots:
        if not root.is_relative_to("/usr"):
            argv += ["--ro-bind", str(root), str(root)]
    aliases = python_aliases()
    for real, named in aliases:
        argv += ["--ro-bind", str(real), str(named)]
    for hidden in hidden_paths(roots):
        argv += ["--tmpfs", str(hidden)]
        argv += [a for real, named in aliases if hidden.is_relative_to(real)
                 for a in ("--tmpfs", str(named / hidden.relative_to(real)))]
    return argv


def setenv_argv(env: dict[str, str]) -> list[str]:
    argv = []
    for k, v in env.items():
        argv += ["--setenv", k, v]
    return argv


#: where a host folder may not be bound: the sandbox's own layout (and the root itself)
RESERVED = ("/usr", "/bin", "/lib", "/lib64", "/sbin", "/proc", "/dev", "/tmp", IN_WORKSPACE)


def parse_bind(entry: str) -> tuple[Path, bool]:
    """`PATH` or `PATH:ro` (read-only), `PATH:rw` (read-write) -> (the path, writable)."""
    path, _, mode = entry.rpartition(":") if entry.endswith((":ro", ":rw")) else (entry, "", "ro")
    return Path(path), mode == "rw"


def project_home() -> Path | None:
    """$PROGAGENT_HOME (default ~/progagent, when it exists): runs, caches and benchmark environments."""
    home = Path(os.environ.get("PROGAGENT_HOME") or Path.home() / "progagent").expanduser()
    return home.resolve() if home.exists() else None


def _overlaps(a: Path, b: Path) -> bool:
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def check_binds(binds: Sequence[str], *, owned: Sequence[str | Path] = (),
                inside: Sequence[str | Path] = ()) -> list[tuple[Path, bool]]:
    """`RuntimeConfig.binds` entries as (folder, writable): host folders at the *same path* inside the
    sandbox (so a path means the same to a tool server on the host and to a program), read-only unless
    written `PATH:rw`. A folder must exist, be named by its real path (no symlink on the way: what is
    bound is what was named), not overlap the sandbox's own layout, and not overlap a folder the
    runtime writes (`owned`: its root, where one episode's kernel connection file would let another
    run code in it; its logs; the project's home), unless it lies inside one of `inside` (a folder the
    runtime made for an environment's own files: Runtime.env_folder)."""
    out = []
    owned_paths = [Path(o).resolve() for o in owned if o]
    inside_paths = [Path(i).resolve() for i in inside]
    for entry in binds:
        p, writable = parse_bind(entry)
        if not p.is_absolute():
            raise ValueError(f"bind {entry!r}: give an absolute path")
        real = p.resolve()
        if real != p or not real.is_dir():
            raise ValueError(f"bind {entry!r}: {'not a folder' if real == p else f'resolves to {real}'}; name the "
                             "real path of an existing folder")
        taken = [r for r in (*RESERVED, IN_SHIM_DIR, IN_KERNEL_DIR, IN_TOOLS_DIR, *map(str, python_roots()))
                 if real == Path(r) or Path(r).is_relative_to(real)
                 or (real.is_relative_to(r) and r != "/tmp")]  # a folder under /tmp: a mount in the sandbox's
        if taken:
            raise ValueError(f"bind {entry!r}: overlaps the sandbox's own {taken[0]}")
        if not any(real.is_relative_to(i) for i in inside_paths):
            clash = next((o for o in owned_paths if _overlaps(real, o)), None)
            if clash is not None:
                raise ValueError(f"bind {entry!r}: overlaps {clash}, a folder the runtime writes (its episodes' "
                                 "kernels, logs and runs); bind a folder of your own")
        out.append((real, writable))
    return out


def host_binds(binds: Sequence[str], *, owned: Sequence[str | Path] = ()) -> list[tuple[Path, bool]]:
    """check_binds of RuntimeConfig.binds, against `owned` and the project's home."""
    return check_binds(binds, owned=[*owned, *filter(None, [project_home()])])


class HeldFolders:
    """Host folders opened once, checked, and held while a sandbox and its restarts may bind them.

    bubblewrap binds the held descriptor (`--bind-fd`), never the path again: a program that swaps a
    bound folder for a link to a host folder (from a process it left behind in a tool server, while
    its kernel restarts) gains nothing, because a restart binds what was checked. `hold` checks that
    the path is the folder's real path as named: the last component opened with O_NOFOLLOW, and the
    descriptor's own path read back from /proc/self/fd (so no link anywhere on the way). Descriptors
    sit at FIRST_HELD_FD or above (the launcher's are below), travel to bubblewrap only (`pass_fds`),
    and bubblewrap closes each once it is mounted: none reaches the sandboxed program, for whom an
    open folder of the host would be a way out (openat(fd, "..")). Host walks of these folders start
    from the descriptors too (untrusted_fs accepts one as a root).
    """

    def __init__(self) -> None:
        self._fds: dict[Path, int] = {}

    def hold(self, path: str | Path) -> int:
        """The held descriptor of the folder `path` (opened and checked on first call; ValueError)."""
        path = Path(path)
        if path in self._fds:
            return self._fds[path]
        try:
            opened = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise ValueError(f"{path}: cannot be bound: {exc.strerror} (a folder named by its real path)") from None
        try:
            fd = fcntl.fcntl(opened, fcntl.F_DUPFD_CLOEXEC, FIRST_HELD_FD)
        finally:
            os.close(opened)
        if os.readlink(f"/proc/self/fd/{fd}") != str(path):
            real = os.readlink(f"/proc/self/fd/{fd}")
            os.close(fd)
            raise ValueError(f"{path}: resolves to {real}; a folder is bound by its real path")
        self._fds[path] = fd
        return fd

    def fd(self, path: str | Path) -> int:
        return self._fds[Path(path)]

    @property
    def fds(self) -> tuple[int, ...]:
        return tuple(self._fds.values())

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


@functools.lru_cache(maxsize=1)
def _bind_fd_supported(bwrap: str) -> bool:
    try:
        return "--bind-fd" in subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False


class FdBinds:
    """The `--bind-fd` options of one bubblewrap start and the descriptors it is passed. bubblewrap
    closes each descriptor once it is mounted, so a folder bound twice (a workspace at /workspace and
    at its own path) gets a copy for its second use; `close()` the copies after the start."""

    def __init__(self) -> None:
        self.argv: list[str] = []
        self.fds: list[int] = []
        self._copies: list[int] = []
        bwrap = shutil.which("bwrap") or "bwrap"
        if not _bind_fd_supported(bwrap):
            raise RuntimeError(f"{bwrap} has no --bind-fd: bubblewrap 0.10 or later is needed (or a distribution's "
                               "backport: Debian 12 ships it in 0.8.0-2+deb12u1)")

    def bind(self, fd: int, dest: str | Path, writable: bool) -> list[str]:
        if fd in self.fds:
            fd = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, FIRST_HELD_FD)
            self._copies.append(fd)
        self.fds.append(fd)
        return ["--bind-fd" if writable else "--ro-bind-fd", str(fd), str(dest)]

    def close(self) -> None:
        for fd in self._copies:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._copies.clear()


def bwrap_argv(kernel_dir: Path, tools_dir: Path, workspace_fd: int, fd_binds: FdBinds,
               extra_env: dict[str, str] | None = None, binds: Sequence[tuple[int, Path, bool]] = ()) -> Sandbox:
    """The kernel's sandbox (module docstring): `workspace_fd` and each bind (held descriptor, path,
    writable) are held folders (HeldFolders), bound by descriptor through `fd_binds`."""
    box = Sandbox(chdir=IN_WORKSPACE).with_python()
    for fd, path, writable in binds:
        box.mount(path, *fd_binds.bind(fd, path, writable))
    box.bind(SHIM_DIR, IN_SHIM_DIR).bind(kernel_dir, IN_KERNEL_DIR, writable=True).bind(tools_dir, IN_TOOLS_DIR)
    box.mount(IN_WORKSPACE, *fd_binds.bind(workspace_fd, IN_WORKSPACE, True))
    return box.setenv({
        "HOME": "/tmp",
        "PATH": f"{Path(sys.prefix) / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONPATH": IN_SHIM_DIR,
        "PYTHONDONTWRITEBYTECODE": "1",
        "IPYTHONDIR": "/tmp/.ipython",
        "JUPYTER_RUNTIME_DIR": "/tmp/.jupyter",
        "MPLBACKEND": "Agg",
        "USER": "sandbox",
        **(extra_env or {}),
    })


def kernel_argv(connection_file: str) -> list[str]:
    """The kernel process inside the sandbox: ipykernel without its debugger (shim/progagent_kernel.py),
    quiet, with the message-mode interrupt."""
    return [sys.executable, "-m", "progagent_kernel", "-f", connection_file,
            "--IPKernelApp.quiet=True", "--HistoryManager.enabled=False"]
