"""Harbor tasks from outside, without Docker: read a task folder and lay out its container.

A Harbor task (https://harborframework.com) is a folder:

    task.toml        Harbor's schema 1.4 (`TaskConfig`: the fields used; every other field present is
                     named in the notes): [task] [metadata] [verifier] timeout_sec/env/environment_mode
                     [agent] timeout_sec [solution] env [environment] network_mode/env/workdir +
                     [[environment.mcp_servers]] name/transport/command/args (stdio) or url/headers
                     (sse, streamable-http, "http"); [[steps]] (multi-step: a blocker)
    instruction.md   what the agent is asked
    environment/     the agent container's build context (Dockerfile + files)
    tests/test.sh    the verifier; writes /logs/verifier/reward.json (flat numbers) or reward.txt
    solution/solve.sh  the oracle (optional)

We have no Docker, so a task's container is *emulated* with bubblewrap (`container_argv`): the
host's /usr and this project's Python stand in for the image (Dockerfile `RUN` steps are not
executed; their packages must be importable here; `python3` on the PATH is this project's
interpreter), and the files the Dockerfile puts in the image are copied into a per-episode folder,
the *container tree*. What cannot be emulated is said when the task loads: notes (`Layout.notes`:
the image, RUN steps, unused fields) and blockers (`HarborTask.blockers`, `blockers_of`: what makes a
faithful run impossible here, which `load_harbor_task` refuses unless asked not to).

Path mapping, the one rule: container path `/X` lives at `TREE/X` on the host, and every mount
point `M` of the tree is bound at `M` inside bubblewrap. The mount points are the Dockerfile's
`COPY`/`ADD` destination folders (a copied file's parent folder), its final `WORKDIR`, the answer
file's folder and the destinations of an optional `[progagent] copy` table. So processes see the
paths the task was written for (`/app/data/x.json`, `/opt/server/main.py`, even when they are
hard-coded inside a server's source) with no rewriting of commands, arguments or files. Dockerfile
`ENV` lines (with `$VAR` expansion) and `[environment] env` become the processes' environment.
Destinations under /usr, /bin, /lib*, /sbin, /proc, /dev or /sys are refused: those come from the host.

A task folder is third-party input, and its container's processes are the model's: the host never
follows a link of either. Symbolic links in environment/ must stay inside it (an absolute target or
one that climbs out is refused when the task loads), files are copied into the tree without
following any link on the way (envs/runtime/untrusted_fs.py: a COPY through a link already in the tree is
refused), and the answer file is written the same way. Harbor resolves `${VAR}` / `${VAR:-default}`
in env tables from the host's environment; here only the variables named in
PROGAGENT_HARBOR_PASS_ENV (comma-separated) are, the rest take their default or nothing (a task
would otherwise read the worker's API keys with one line of task.toml).

Optional, ignored by Harbor itself (the legacy top-level [progagent] table is read too, with a note):

    [metadata.progagent]
    answer_path = "/app/answer.txt"   # where the model's final reply is written before the tests
    workdir = "/app"                  # overrides the Dockerfile's WORKDIR
    copy = { "/srv/data" = "seed" }   # extra container path = environment/-relative source

`envs/harbor/episode.py` runs the MCP servers, the verifier and the oracle in this layout.
"""

from __future__ import annotations

import glob
import json
import os
import posixpath
import re
import shlex
import shutil
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from envs.runtime import untrusted_fs

if TYPE_CHECKING:
    from envs.runtime.sandbox import Sandbox

DEFAULT_ANSWER_PATH = "/app/answer.txt"
DEFAULT_MEMORY_MB = 2048
TRANSPORTS = ("stdio", "sse", "streamable-http")
_CANARY = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)
#: lines of tests/test.sh or solution/solve.sh that install software at run time (an image would have it)
_INSTALLS = re.compile(r"\b(apt-get|apt|apk|yum|dnf)\s+(-\S+\s+)*install\b|\bcurl\b[^|\n]*\|\s*(ba)?sh\b|"
                       r"\bwget\b[^|\n]*\|\s*(ba)?sh\b|\bpip3?\s+install\b|\buv\s+(pip|tool)\s+install\b|\buvx\b|"
                       r"\bnpm\s+(i|install)\b|\bnpx\b")


def strip_canary(text: str) -> str:
    """`text` without its leading canary lines and the blank lines right after them."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and _CANARY.match(lines[i].strip()):
        i += 1
    if i:
        while i < len(lines) and not lines[i].strip():
            i += 1
    return "".join(lines[i:])
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/proc", "/dev", "/sys")
ETC_FILES = ("passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "localtime", "ssl", "ca-certificates",
             "alternatives", "mime.types")
BASE_PATH = f"{Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: the operator's consent to the network for tasks that ask for it (TaskConfig.network): "1"
ALLOW_NETWORK = "PROGAGENT_HARBOR_ALLOW_NETWORK"
#: the host variables a task's `${VAR}` may read (module docstring)
PASS_ENV = "PROGAGENT_HARBOR_PASS_ENV"
#: what one task's environment/ may hold, copied into each episode's container tree
MAX_CONTEXT_BYTES = 2 * 2**30


class HarborTaskError(Exception):
    """A Harbor task that cannot be used; the message starts with the offending file."""


# ---- task.toml (Harbor's task model, schema 1.4; fields not emulated are listed in the notes) ----

class McpServerConfig(msgspec.Struct):
    name: str
    transport: str = "sse"  # Harbor's default; "http" is Harbor's alias of "streamable-http"
    url: str | None = None
    command: str | None = None
    args: list[str] = []
    headers: dict[str, str] = {}


class VerifierConfig(msgspec.Struct):
    timeout_sec: float = 600.0
    env: dict[str, str] = {}
    environment_mode: str | None = None  # "shared" | "separate" (default: separate when `environment` is set)
    environment: dict[str, Any] | None = None


class AgentConfig(msgspec.Struct):
    timeout_sec: float | None = None


class SolutionConfig(msgspec.Struct):
    env: dict[str, str] = {}


class EnvironmentConfig(msgspec.Struct):
    allow_internet: bool | None = None  # deprecated in Harbor: network_mode
    network_mode: str | None = None  # "public" (Harbor's default) | "no-network" | "allowlist"
    cpus: float | None = None
    memory_mb: int | None = None
    workdir: str | None = None
    env: dict[str, str] = {}
    mcp_servers: list[McpServerConfig] = []
    os: str | None = None
    gpus: int | None = None
    docker_image: str | None = None


class StepVerifierConfig(msgspec.Struct):
    timeout_sec: float | None = None
    env: dict[str, str] = {}


class StepConfig(msgspec.Struct):
    """One step of a multi-step task ([[steps]]): its files are under steps/<name>/."""

    name: str
    min_reward: float | dict[str, float] | None = None
    verifier: StepVerifierConfig = msgspec.field(default_factory=StepVerifierConfig)


class ProgagentConfig(msgspec.Struct, forbid_unknown_fields=True):
    """[metadata.progagent]: what only ProgAgent reads (Harbor keeps extensions under [metadata])."""

    answer_path: str = DEFAULT_ANSWER_PATH
    task: str | None = None  # an export's source task and scale (informational)
    scale: str | None = None
    workdir: str | None = None
    copy: dict[str, str] = {}


class TaskConfig(msgspec.Struct):
    schema_version: str | None = None
    version: str | None = None  # Harbor's older name of schema_version
    task: dict[str, Any] | None = None  # [task] name, description, authors, keywords
    metadata: dict[str, Any] = {}
    verifier: VerifierConfig = msgspec.field(default_factory=VerifierConfig)
    agent: AgentConfig = msgspec.field(default_factory=AgentConfig)
    solution: SolutionConfig = msgspec.field(default_factory=SolutionConfig)
    environment: EnvironmentConfig = msgspec.field(default_factory=EnvironmentConfig)
    progagent: ProgagentConfig = msgspec.field(default_factory=ProgagentConfig)  # [metadata.progagent], or legacy [progagent]
    steps: list[StepConfig] | None = None
    multi_step_reward_strategy: str | None = None  # "mean" (Harbor's default) | "final"
    artifacts: list[Any] = []

    @property
    def asks_network(self) -> bool:
        """Whether the task asks for the network: network_mode "public", else the deprecated
        allow_internet = true (Harbor's default when neither is set is public; here it is none)."""
        mode = self.environment.network_mode
        if mode is not None:
            return mode == "public"
        return bool(self.environment.allow_internet)

    @property
    def network(self) -> bool:
        """Whether the container view has the network: only when the task asks for it AND the operator
        allows it ($PROGAGENT_HARBOR_ALLOW_NETWORK=1). Its processes are the model's: with the host's
        network they reach its loopback listeners (on a Ray node: the dashboard, the GCS, the weight
        broadcast), so a task that says nothing, or asks without the operator's consent, has none."""
        return self.asks_network and os.environ.get(ALLOW_NETWORK) == "1"


#: task.toml fields this emulation uses; every other field present is named in the notes
USED_FIELDS = {
    "schema_version", "version", "task", "metadata", "progagent", "steps", "artifacts", "multi_step_reward_strategy",
    "verifier.timeout_sec", "verifier.env", "verifier.environment_mode", "verifier.environment",
    "agent.timeout_sec", "solution.env",
    "environment.allow_internet", "environment.network_mode", "environment.memory_mb", "environment.workdir",
    "environment.env", "environment.mcp_servers", "environment.os", "environment.gpus", "environment.docker_image",
    "environment.cpus",
}


def unused_fields(raw: dict[str, Any]) -> list[str]:
    """The dotted names of task.toml fields present in `raw` that the emulation does not use."""
    out = []
    for key, value in raw.items():
        if key in USED_FIELDS:
            continue
        if isinstance(value, dict) and key in ("verifier", "agent", "solution", "environment"):
            out += [f"{key}.{k}" for k in value if f"{key}.{k}" not in USED_FIELDS]
        else:
            out.append(key)
    return out


# ---- the container layout, from the Dockerfile ----

class CopyOp(msgspec.Struct, frozen=True):
    src: str  # host path inside environment/
    dst: str  # absolute container path (the folder itself for a folder source)
    is_dir: bool


class Layout(msgspec.Struct):
    workdir: str = "/"
    env: dict[str, str] = {}
    copies: list[CopyOp] = []
    notes: list[str] = []  # what could not be emulated (RUN, USER, ...), shown by `harbor check`


_VAR = re.compile(r"\$(?:\{(\w+)(?::-([^}]*))?\}|(\w+))")


def expand(text: str, env: dict[str, str]) -> str:
    """`$VAR`, `${VAR}` and `${VAR:-default}` from env (unknown variables become empty)."""
    return _VAR.sub(lambda m: env.get(m[1] or m[3]) or (m[2] or ""), text)


def _instructions(text: str) -> list[tuple[int, str, str]]:
    """(line number, INSTRUCTION, arguments) with comments dropped and `\\` continuations joined."""
    out, buf, start = [], "", 0
    for no, line in enumerate(text.splitlines(), 1):
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not buf:
            start = no
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        buf += line
        word, _, rest = buf.strip().partition(" ")
        out.append((start, word.upper(), rest.strip()))
        buf = ""
    return out


def _copy_args(rest: str) -> tuple[dict[str, str], list[str]]:
    """Flags (`--chown=…`, `--from=…`) and the sources + destination, in shell or JSON form."""
    flags: dict[str, str] = {}
    while rest.startswith("--"):
        flag, _, rest = rest.partition(" ")
        key, _, value = flag[2:].partition("=")
        flags[key] = value
        rest = rest.lstrip()
    return flags, json.loads(rest) if rest.startswith("[") else shlex.split(rest)


def parse_dockerfile(path: Path, context: Path) -> Layout:
    """Where the Dockerfile puts the context's files, its final WORKDIR and its ENV."""
    layout = Layout(workdir="/", env={}, copies=[], notes=[])
    args: dict[str, str] = {}
    for no, word, rest in _instructions(read_text(path)):
        where = f"{path}:{no}"
        try:
            if word == "WORKDIR":
                layout.workdir = posixpath.normpath(posixpath.join(layout.workdir, expand(rest, layout.env | args)))
            elif word in ("ENV", "ARG"):
                words = shlex.split(rest)
                pairs = [w.partition("=") for w in words] if "=" in words[0] else [(words[0], "=", " ".join(words[1:]))]
                target = layout.env if word == "ENV" else args
                for key, sep, value in pairs:
                    if word == "ARG" and not sep:
                        continue  # an ARG without a default has no value here
                    target[key] = expand(value, {"PATH": BASE_PATH} | args | layout.env)
            elif word in ("COPY", "ADD"):
                flags, words = _copy_args(rest)
                if "from" in flags:
                    layout.notes.append(f"{where}: COPY --from (another build stage) is skipped")
                    continue
                if len(words) < 2:
                    raise HarborTaskError(f"{where}: {word} needs a source and a destination")
                layout.copies += _copy_ops(words[:-1], expand(words[-1], layout.env | args), layout.workdir,
                                           context, where, word)
            elif word in ("RUN", "USER", "ENTRYPOINT", "CMD", "VOLUME", "SHELL"):
                layout.notes.append(f"{where}: {word} is not executed ({rest[:80]})")
            elif word == "FROM":
                layout.notes.append(f"{where}: FROM {rest[:60]}: the image is not pulled; the host's /usr and "
                                    "ProgAgent's Python stand in for it")
                if layout.copies:
                    layout.notes.append(f"{where}: multi-stage build; files of all stages are laid out together")
        except (ValueError, IndexError) as exc:
            raise HarborTaskError(f"{where}: cannot parse {word} {rest[:80]!r}: {exc}") from exc
    return layout


def _copy_ops(sources: list[str], dst: str, workdir: str, context: Path, where: str, word: str) -> list[CopyOp]:
    dst_dir_form = dst.endswith("/") or len(sources) > 1
    dst = posixpath.normpath(posixpath.join(workdir, dst))
    ops = []
    root = context.resolve()
    for src in sources:
        if word == "ADD" and re.match(r"^\w+://", src):
            raise HarborTaskError(f"{where}: ADD from a URL ({src}) needs the network at build time; not supported")
        matches = sorted(glob.glob(str(root / src))) if any(c in src for c in "*?[") else [str(root / src)]
        if not matches or not Path(matches[0]).exists():
            raise HarborTaskError(f"{where}: {word} source {src!r} does not exist in {context}")
        for m in matches:
            path = Path(m).resolve()
            if not path.is_relative_to(root):
                raise HarborTaskError(f"{where}: {word} source {src!r} is outside the build context {context}")
            if path.is_dir():
                ops.append(CopyOp(str(path), dst, True))
            else:
                target = posixpath.join(dst, path.name) if dst_dir_form or len(matches) > 1 else dst
                ops.append(CopyOp(str(path), target, False))
    return ops


# ---- the task ----

class HarborTask:
    """A decoded Harbor task folder and its emulated container layout."""

    def __init__(self, folder: Path, config: TaskConfig, layout: Layout, blockers: list[str] | None = None):
        self.dir = folder
        self.id = folder.name
        self.config = config
        self.layout = layout
        #: why this task cannot run faithfully here ([] = it can); `harbor check` reports them, episodes refuse
        self.blockers = blockers or []
        self.answer_path = config.progagent.answer_path
        self.mounts = _mount_points(layout, self.answer_path, config)

    def __repr__(self) -> str:
        return f"HarborTask({self.id!r})"

    @property
    def instruction(self) -> str:
        """instruction.md without its leading canary lines (`<!-- … canary … -->`, `# … canary …`), as
        Harbor gives it to the agent."""
        return strip_canary(read_text(self.dir / "instruction.md"))

    @property
    def prompt(self) -> str:
        """The instruction (a multi-step task's: its first step's), plus the one thing our harnesses do
        differently from a shell agent."""
        return self.step_prompt(0) if self.steps else self._with_answer_note(self.instruction)

    def step_prompt(self, index: int) -> str:
        text = strip_canary(read_text(self.step_dir(self.steps[index].name) / "instruction.md"))
        return self._with_answer_note(text)

    def _with_answer_note(self, text: str) -> str:
        return (text.rstrip() + f"\n\n(Your final reply, the message without a tool call, is saved "
                f"to {self.answer_path} for you before the task is checked.)")

    @property
    def workdir(self) -> str:
        return self.config.progagent.workdir or self.config.environment.workdir or self.layout.workdir

    @property
    def tests_dir(self) -> Path:
        return self.dir / "tests"

    @property
    def steps(self) -> list[StepConfig]:
        return self.config.steps or []

    def step_dir(self, name: str) -> Path:
        return self.dir / "steps" / name

    @property
    def solve_script(self) -> Path | None:
        path = self.dir / "solution" / "solve.sh"
        return path if path.is_file() else None

    @property
    def verifier_timeout_s(self) -> float:
        return self.config.verifier.timeout_sec

    @property
    def agent_timeout_s(self) -> float:
        return self.config.agent.timeout_sec or 1800.0

    @property
    def memory_bytes(self) -> int:
        """[environment] memory_mb: the memory of each process tree in the container view (its MCP
        servers, tests/test.sh, solution/solve.sh), as Docker gives the container."""
        return (self.config.environment.memory_mb or DEFAULT_MEMORY_MB) * 2**20

    def host_path(self, tree: Path, container_path: str) -> Path:
        """Where a container path lives in a container tree (the mapping rule)."""
        return Path(tree) / posixpath.normpath(container_path).lstrip("/")

    def materialize(self, tree: str | Path) -> Path:
        """Lay out a fresh container tree: every mount point and the WORKDIR, then the copied files in
        order, nothing followed on either side (a copy through a link is a HarborTaskError)."""
        tree = Path(tree)
        tree.mkdir(parents=True, exist_ok=True)
        try:
            for m in [*self.mounts, self.workdir]:
                untrusted_fs.make_dirs(tree, posixpath.normpath(m).lstrip("/"))
            for op in self.layout.copies:
                rel = posixpath.normpath(op.dst).lstrip("/")
                if op.is_dir:
                    untrusted_fs.copy_tree(op.src, tree, rel, links=True, max_bytes=MAX_CONTEXT_BYTES)
                else:
                    untrusted_fs.copy_file(op.src, tree, rel, max_bytes=MAX_CONTEXT_BYTES)
        except untrusted_fs.PathRefused as exc:
            raise HarborTaskError(f"{self.dir / 'environment'}: cannot lay out the container: {exc}") from None
        return tree

    def base_env(self) -> dict[str, str]:
        """Environment of every process in the container: Dockerfile ENV, then [environment] env."""
        env = {"PATH": BASE_PATH, "HOME": "/root", "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
        env.update(self.layout.env)
        env.update(resolve_host_env(self.config.environment.env))
        return env

    def container_argv(self, tree: Path, *, binds: Sequence[tuple[Path, str]] = (), env: dict[str, str] | None = None,
                       network: bool | None = None) -> Sandbox:
        """bubblewrap options that give a process this task's container view of `tree` (to start with
        envs/runtime/sandbox.launch_argv and a command).

        As root of its own user namespace with no capabilities; network only if the task allows
        internet; host /usr, a few /etc files and this project's Python read-only; the tree's mount
        points and `binds` (host folder, container path) read-write; a private /tmp; cwd = WORKDIR.
        """
        from envs.runtime.sandbox import Sandbox

        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise RuntimeError("bubblewrap (bwrap) is not installed: run scripts/install.sh")
        network = self.config.network if network is None else network
        # the container's root is the task's to write (as a Docker image's is): writable_root
        box = Sandbox(uid=0, hostname="harbor", network=network, nested_userns=True, writable_root=True, bwrap=bwrap,
                      chdir=self.workdir)
        box.mount("/root", "--dir", "/root")
        for name in ETC_FILES:
            if os.path.exists(f"/etc/{name}"):
                box.bind(f"/etc/{name}")
        box.with_python()
        for m in self.mounts:
            box.bind(self.host_path(tree, m), m, writable=True)
        for host, inside in binds:
            box.bind(host, inside, writable=True)
        return box.setenv(env if env is not None else self.base_env())


def url_host(url: str) -> str:
    """The `host:port` an HTTP MCP server's url reaches, as the MCP client's HTTP library (httpx) parses
    it (so `http://a.com@127.0.0.1:9/` is 127.0.0.1:9, never a.com); the scheme's port when none is
    given. ValueError when it is not an http(s) url."""
    import httpx2

    try:
        parsed = httpx2.URL(url)
    except Exception as exc:  # noqa: BLE001 - httpx2's InvalidURL and friends
        raise ValueError(f"{url!r} is not a valid url: {exc}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"{url!r} is not an http(s) url with a host")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return f"{host.lower()}:{port}"


def host_allowed(hostport: str, allowed: Sequence[str]) -> bool:
    """Whether `hostport` (url_host's form) is among `allowed`: "*" (any), "host" (any port) or
    "host:port" (IPv6 in brackets), compared as written, case aside (no DNS: "localhost" is not
    "127.0.0.1")."""
    host = hostport.rsplit(":", 1)[0]
    return any(a == "*" or a.lower() in (hostport, host) for a in allowed)


def url_server_refusals(task: HarborTask, allowed: Sequence[str], setting: str) -> list[str]:
    """A line per URL MCP server (transport sse/streamable-http) of `task` whose host the operator has
    not allowed (`allowed`: HarborArgs.url_server_hosts), naming the server, its url and `setting`
    (where the operator allows it). The host's env worker makes those requests: a task must not
    choose where they go (its loopback listeners, a cloud metadata address, an intranet service)."""
    out = []
    for server in task.config.environment.mcp_servers:
        if server.transport == "stdio":
            continue
        try:
            where = url_host(server.url or "")
        except ValueError as exc:
            out.append(f"{task.dir / 'task.toml'}: MCP server {server.name!r}: {exc}")
            continue
        if not host_allowed(where, allowed):
            out.append(f"{task.dir / 'task.toml'}: MCP server {server.name!r} is a URL server ({server.url}): the env "
                       f"worker would send requests to {where}, which the operator has not allowed; allow it with "
                       f"{setting}: [{where!r}] (or \"*\" for any host)")
    return out


def passed_env() -> dict[str, str]:
    """The host variables a task may read: those named in PROGAGENT_HARBOR_PASS_ENV."""
    names = {n.strip() for n in os.environ.get(PASS_ENV, "").split(",") if n.strip()}
    return {k: v for k, v in os.environ.items() if k in names}


def resolve_host_env(env: dict[str, str]) -> dict[str, str]:
    """Harbor's `${VAR}` / `${VAR:-default}` templates in env tables, resolved from the host variables
    named in PROGAGENT_HARBOR_PASS_ENV only (module docstring): any other is its default, or empty."""
    allowed = passed_env()
    return {k: expand(v, allowed) for k, v in env.items()}


def unpassed_vars(config: TaskConfig) -> list[str]:
    """The host variables the task's env tables ask for that are not passed (for `harbor check`'s notes)."""
    allowed = passed_env()
    wanted = []
    for table in (config.environment.env, config.verifier.env, config.solution.env):
        for value in table.values():
            wanted += [m[1] or m[3] for m in _VAR.finditer(value)]
    return sorted({w for w in wanted if w not in allowed})


#: the most a task's text file (task.toml, instruction.md, a script, the Dockerfile) may hold
MAX_TEXT_BYTES = 4 * 2**20
#: the parts of a task folder (and of each steps/<name>/) that the host reads or copies: none may be a
#: link, and tests/, solution/ and steps/ may hold no link at all (environment/'s links stay inside it)
NO_LINKS = ("task.toml", "instruction.md", "tests", "solution", "steps", "environment")


def read_text(path: Path) -> str:
    """A task file as text: its last component never followed (its folders were checked at load:
    check_task_links), never a pipe, at most MAX_TEXT_BYTES."""
    try:
        return untrusted_fs.read_file(path.parent, path.name, MAX_TEXT_BYTES).decode("utf-8", "replace")
    except untrusted_fs.PathRefused as exc:
        raise HarborTaskError(f"{path}: {exc}") from None


def check_task_links(folder: Path) -> None:
    """Refuse a task folder that would make the host follow a link: the folder itself, any of NO_LINKS,
    or anything under tests/, solution/ or steps/ (each step's instruction, tests, solution and
    workdir) that is a link or a special file. A task folder is third-party input: a `tests/` linked to
    a host folder was copied into /tests and its files came back as reward keys; an `instruction.md`
    linked to a host file became the model's prompt."""
    if folder.is_symlink():
        raise HarborTaskError(f"{folder}: a task folder may not be a symbolic link")
    for name in NO_LINKS:
        path = folder / name
        if path.is_symlink():
            raise HarborTaskError(f"{path}: a symbolic link; links in a task folder are never followed")
    for name in ("tests", "solution", "steps"):
        if (folder / name).is_dir():
            try:
                untrusted_fs.refuse_links(folder / name, f"{name}/", max_entries=100_000)
            except untrusted_fs.PathRefused as exc:
                raise HarborTaskError(f"{folder / name}: {exc}") from None


def check_context_links(context: Path) -> None:
    """Refuse a build context whose symbolic links leave it, or that holds what is not a folder, file
    or link (untrusted_fs.check_links_inside: checked as text, nothing is resolved)."""
    if not context.is_dir():
        return
    try:
        untrusted_fs.check_links_inside(context, "the build context")
    except untrusted_fs.PathRefused as exc:
        raise HarborTaskError(f"{context}/{exc}; links must point inside environment/") from None


def _is_under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _mount_points(layout: Layout, answer_path: str, config: TaskConfig) -> list[str]:
    wanted = [config.progagent.workdir or config.environment.workdir or layout.workdir, posixpath.dirname(answer_path)]
    for op in layout.copies:
        wanted.append(op.dst if op.is_dir else posixpath.dirname(op.dst))
    wanted += list(config.progagent.copy)
    points: list[str] = []
    for p in sorted({posixpath.normpath(w) for w in wanted}, key=lambda p: (p.count("/"), p)):
        if p in ("/", "/etc", "/tmp", "/root"):
            continue  # the view's own tmpfs root and private folders; nothing is bound over them
        if any(_is_under(p, s) for s in SYSTEM_DIRS):
            raise HarborTaskError(f"{p}: a container path under {', '.join(SYSTEM_DIRS)} cannot be emulated "
                                  f"without Docker (the host's system folders are used)")
        if not any(_is_under(p, q) for q in points):
            points.append(p)
    for op in layout.copies:
        if not any(_is_under(op.dst, q) for q in points):
            raise HarborTaskError(f"{op.dst}: files copied to /, /etc, /tmp or /root are not supported; "
                                  f"copy them into a folder of their own")
    return points


def _decode_config(toml_path: Path) -> tuple[TaskConfig, list[str]]:
    """The task's config and notes on it (fields not emulated, deprecated forms)."""
    try:
        raw = tomllib.loads(read_text(toml_path))
    except tomllib.TOMLDecodeError as exc:
        raise HarborTaskError(f"{toml_path}: invalid TOML: {exc}") from exc
    notes = []
    ours = (raw.get("metadata") or {}).get("progagent")
    if "progagent" in raw:
        if ours is not None:
            raise HarborTaskError(f"{toml_path}: both [progagent] and [metadata.progagent]; keep [metadata.progagent]")
        notes.append(f"{toml_path}: [progagent] is read as [metadata.progagent] (Harbor's place for extensions); "
                     "Harbor itself rejects an unknown top-level table")
    elif ours is not None:
        raw = {**raw, "progagent": ours}
    servers = (raw.get("environment") or {}).get("mcp_servers") or []
    for server in servers:
        if isinstance(server, dict) and server.get("transport") == "http":
            server["transport"] = "streamable-http"  # Harbor's alias
    try:
        config = msgspec.convert(raw, TaskConfig)
    except msgspec.ValidationError as exc:
        raise HarborTaskError(f"{toml_path}: {exc}") from exc
    names = [s.name for s in config.environment.mcp_servers]
    for i, s in enumerate(config.environment.mcp_servers):
        where = f"{toml_path}: environment.mcp_servers[{i}] ({s.name!r})"
        if not s.name or names.count(s.name) > 1:
            raise HarborTaskError(f"{where}: every MCP server needs a unique, non-empty name")
        if untrusted_fs.server_name_problem(s.name):  # it names the server's log file on the host
            raise HarborTaskError(f"{where}: {untrusted_fs.server_name_problem(s.name)}")
        if s.transport not in TRANSPORTS:
            raise HarborTaskError(f"{where}: unknown transport {s.transport!r}; expected one of {', '.join(TRANSPORTS)}")
        if s.transport == "stdio" and not s.command:
            raise HarborTaskError(f"{where}: transport 'stdio' needs a command")
        if s.transport != "stdio" and not s.url:
            raise HarborTaskError(f"{where}: transport {s.transport!r} needs a url")
        if s.transport == "stdio" and s.headers:
            raise HarborTaskError(f"{where}: headers are for HTTP transports only")
    if not config.progagent.answer_path.startswith("/"):
        raise HarborTaskError(f"{toml_path}: metadata.progagent.answer_path must be an absolute container path")
    if config.environment.network_mode not in (None, "public", "no-network", "allowlist"):
        raise HarborTaskError(f"{toml_path}: environment.network_mode {config.environment.network_mode!r}: expected "
                              "public, no-network or allowlist")
    if config.environment.network_mode == "allowlist":
        notes.append(f"{toml_path}: network_mode = allowlist is emulated as no network (no per-host filter here)")
    if config.asks_network and not config.network:
        notes.append(f"{toml_path}: the task asks for the network and runs without it ({ALLOW_NETWORK}=1 allows it: "
                     "its processes would then reach the host's loopback listeners)")
    if config.environment.network_mode is None and config.environment.allow_internet is None:
        notes.append(f"{toml_path}: no network_mode: Harbor's default is public, here it is no network")
    if config.environment.allow_internet is not None and config.environment.network_mode is None:
        notes.append(f"{toml_path}: allow_internet is deprecated in Harbor; network_mode is read first")
    if config.environment.cpus is not None:
        notes.append(f"{toml_path}: cpus = {config.environment.cpus:g} is not enforced (processes share the host's)")
    if config.verifier.environment is not None or config.verifier.environment_mode == "separate":
        notes.append(f"{toml_path}: verifier.environment_mode = separate: tests/test.sh runs in a fresh process over "
                     "the final container tree (never where the agent's processes ran)"
                     + ("; [verifier.environment] (its own image) is not built" if config.verifier.environment else ""))
    unused = unused_fields(raw)
    if unused:
        notes.append(f"{toml_path}: not emulated: {', '.join(unused)}")
    return config, notes


def blockers_of(folder: Path, config: TaskConfig, layout: Layout) -> list[str]:
    """Why the task cannot run faithfully here, each naming what: compose sidecars,
    a non-Linux container, GPUs, an MCP server on a sidecar host, scripts that install software at
    run time."""
    out = []
    compose = folder / "environment" / "docker-compose.yaml"
    if compose.is_file():
        import yaml

        try:
            services = sorted((yaml.safe_load(read_text(compose)) or {}).get("services") or {})
        except yaml.YAMLError:
            services = ["?"]
        out.append(f"{compose}: its services ({', '.join(services)}) are sidecar containers, never started here")
    if (config.environment.os or "linux").lower() != "linux":
        out.append(f"{folder / 'task.toml'}: environment.os = {config.environment.os}: only Linux containers are emulated")
    if config.environment.gpus:
        out.append(f"{folder / 'task.toml'}: environment.gpus = {config.environment.gpus}: no GPU in the emulated container")
    scripts = ["tests/test.sh", "solution/solve.sh"]
    for step in config.steps or []:
        scripts += [f"steps/{step.name}/tests/test.sh", f"steps/{step.name}/solution/solve.sh",
                    f"steps/{step.name}/workdir/setup.sh"]
    for script in scripts:
        path = folder / script
        if not path.is_file():
            continue
        for no, line in enumerate(read_text(path).splitlines(), 1):
            if not line.lstrip().startswith("#") and _INSTALLS.search(line):
                out.append(f"{path}:{no}: `{line.strip()[:100]}` installs software at run time; the emulated "
                           "container has no image to install into (the host's /usr is read-only) and no package "
                           "index: what it installs must already be on the host")
    return out


def load_harbor_task(folder: str | Path, *, strict: bool = True) -> HarborTask:
    """Decode a Harbor task folder; a broken one raises HarborTaskError naming the file, and so does
    one that cannot run faithfully here (its `blockers`) unless `strict` is False (`harbor check`
    reports them instead)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise HarborTaskError(f"{folder}: not a folder")
    check_task_links(folder)
    folder = folder.resolve()
    if not (folder / "task.toml").is_file():
        raise HarborTaskError(f"{folder / 'task.toml'}: required file is missing")
    config, config_notes = _decode_config(folder / "task.toml")
    for name in ("instruction.md", "tests/test.sh"):  # a multi-step task has them per step (a blocker below)
        if not config.steps and not (folder / name).is_file():
            raise HarborTaskError(f"{folder / name}: required file is missing")
    context = folder / "environment"
    check_context_links(context)
    dockerfile = context / "Dockerfile"
    if dockerfile.is_file():
        layout = parse_dockerfile(dockerfile, context)
    else:
        layout = Layout(workdir="/app", env={}, copies=[],
                        notes=[f"{dockerfile}: missing (a prebuilt image?); the container starts with an empty /app"])
    if config.environment.docker_image:
        layout.notes.append(f"{folder / 'task.toml'}: docker_image {config.environment.docker_image} is not pulled; "
                            "the host's /usr and ProgAgent's Python stand in for it")
    layout.notes += config_notes
    for dst, src in config.progagent.copy.items():
        source = (context / src).resolve()
        if not dst.startswith("/") or not source.exists() or not source.is_relative_to(context.resolve()):
            raise HarborTaskError(f"{folder / 'task.toml'}: progagent.copy[{dst!r}] = {src!r} needs an absolute "
                                  f"container path and an existing path inside {context}")
        layout.copies.append(CopyOp(str(source), posixpath.normpath(dst), source.is_dir()))
    for name in unpassed_vars(config):
        layout.notes.append(f"{folder / 'task.toml'}: ${{{name}}} is not passed from the host "
                            f"(add it to {PASS_ENV} to pass it)")
    blockers = blockers_of(folder, config, layout)
    if blockers and strict:
        raise HarborTaskError(f"{folder}: cannot run faithfully here: " + "; ".join(blockers))
    for st in config.steps or []:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", st.name) or not (folder / "steps" / st.name).is_dir():
            raise HarborTaskError(f"{folder / 'task.toml'}: step {st.name!r} has no folder steps/{st.name}/")
        if not (folder / "steps" / st.name / "instruction.md").is_file():
            raise HarborTaskError(f"{folder / 'steps' / st.name / 'instruction.md'}: required file is missing")
        layout.notes.append(f"{folder / 'task.toml'}: step {st.name}: healthcheck and artifacts are not emulated")
    try:
        return HarborTask(folder, config, layout, blockers)
    except HarborTaskError as exc:
        raise HarborTaskError(f"{dockerfile if dockerfile.is_file() else folder / 'task.toml'}: {exc}") from exc


def find_harbor_tasks(root: str | Path) -> list[Path]:
    """A task folder itself, or the task folders (those with a task.toml) directly under a dataset folder."""
    root = Path(root)
    if (root / "task.toml").is_file():
        return [root]
    found = sorted(p for p in root.iterdir() if p.is_dir() and (p / "task.toml").is_file()) if root.is_dir() else []
    if not found:
        raise HarborTaskError(f"{root}: neither a Harbor task (no task.toml) nor a folder of Harbor tasks")
    return found
