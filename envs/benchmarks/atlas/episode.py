"""An MCP-Atlas task as an episode environment (envs/episode_env.py).

Per episode, as Atlas's agent environment sets it up, but without its container:

- **State**: a copy of the checkout's `services/agent-environment/data/` (its CSVs, the memory graph
  and the repositories under repos/) in the episode's folder, bound as `/data` into each server's
  sandbox (Atlas's server configs name /data), and as the kernel's /workspace. A link in the state is
  refused before anything is copied (it would point the servers outside the copy).
- **Servers**: those of the task's enabled tools that run offline (checkout.OFFLINE), from Atlas's
  own template, mapped to what Atlas's environment has installed (envs/benchmarks/commands.py), each
  in the benchmark sandbox (no network, /data its only writable folder); the model is offered
  exactly the task's enabled tools, under Atlas's names `<server>_<tool>` (the runtime's per-server
  allow-list and rename). desktop-commander's allowed directory is /data, as Atlas sets it at start.
- **Prompt**: the task's PROMPT, unchanged.
- **Judge**: the final answer against the task's claims by Atlas's own scorer (score.py, in
  Atlas's environment, its LLM calls to `judge_base_url`): 1 / 0.5 / 0 per claim, the mean is the
  score, a pass at >= 0.75 (Atlas's pass_rate_0.75). An empty answer, or one starting "ERROR:", is
  scored 0 without the judge, as Atlas's scorer does; one over MAX_ANSWER_CHARS is the policy's zero
  (`answer_too_long`); the answer reaches the judge quoted as one JSON string (score.quoted), so it
  cannot forge a section of the prompt. A judge whose endpoint does not answer (a connection error,
  429, 5xx) is `infra/judge_unreachable`, never a 0; a reply it cannot read is `infra/judge_error`,
  settled by the canary (the claims themselves as the answer): judged there → the answer's doing.
  Only the answer is judged, so the state is not shipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.benchmarks.atlas.checkout import AtlasCheckout, split_tool
from envs.benchmarks.atlas.kind import AtlasRef
from envs.benchmarks.commands import server_command
from envs.benchmarks.process import run_once
from envs.benchmarks.sandbox import interpreter, sandbox_options, sandboxed
from envs.episode_env import EnvLimits, LiveStates, OneStep
from envs.runtime import untrusted_fs
from envs.runtime.episode import Episode, EpisodeState, Runtime
from envs.runtime.sandbox import BWRAP_ENV
from envs.runtime.scratch import folder as scratch_folder
from envs.runtime.upstream import Upstream, UpstreamSpec
from schema.records import Verdict

DATA = "/data"
PASS_AT = 0.75  # Atlas's pass threshold on the claims' mean
JUDGE_TIMEOUT_S = 600.0
#: the most files and folders the /data state may hold (its eight repositories with their histories)
MAX_STATE_ENTRIES = 1_000_000
#: what desktop-commander reads at start (Atlas sets allowedDirectories through its set_config_value tool)
DESKTOP_COMMANDER_CONFIG = {"allowedDirectories": [DATA], "telemetryEnabled": False, "defaultShell": "/bin/sh"}
SCORER = Path(__file__).with_name("score.py")
#: the most the scorer's result (per-claim outcomes and justifications) may hold
MAX_RESULT_BYTES = 4 * 2**20
#: the longest answer the judge is given (characters; about 8,000 tokens, beside the claim and Atlas's
#: prompt within a 16k-token judge): a longer one is the policy's zero (`answer_too_long`), never a judge
#: overflowing its context, which would be a failure to answer
MAX_ANSWER_CHARS = 32_000


class AtlasTaskEnv(OneStep):
    judged_in_place = False

    def __init__(self, ref: AtlasRef, judge_timeout_s: float | None = None):
        self.ref = ref
        self.checkout = AtlasCheckout(ref.checkout)
        self.task = ref.task
        self.instruction = self.task.prompt
        self.interp = interpreter(ref.python)
        self.limits = EnvLimits()
        self.judge_timeout_s = judge_timeout_s or JUDGE_TIMEOUT_S
        self._open: LiveStates[Path] = LiveStates()

    # ---- the episode --------------------------------------------------------------------------
    def prepare(self, work: Path) -> Path:
        copy = work / "data"
        try:  # the checkout is the user's, but a link in it would lead every server out of the copy
            untrusted_fs.check_links_inside(self.checkout.data, "MCP-Atlas's /data state", max_entries=MAX_STATE_ENTRIES)
        except untrusted_fs.PathRefused as exc:
            raise ValueError(f"{self.task.task_id}: {exc}") from None
        shutil.copytree(self.checkout.data, copy, symlinks=True)
        home = work / "home"
        (home / ".claude-server-commander").mkdir(parents=True)
        (home / ".claude-server-commander" / "config.json").write_text(json.dumps(DESKTOP_COMMANDER_CONFIG))
        return copy

    def upstreams(self, work: Path, copy: Path, limits: Any) -> list[Upstream]:
        by_server: dict[str, list[str]] = {}
        for name in self.task.enabled:
            server, tool = split_tool(name, list(self.checkout.servers))
            by_server.setdefault(server, []).append(tool)
        out = []
        for server, tools in by_server.items():
            cfg = self.checkout.servers[server]
            command = server_command(server, cfg, self.interp.python, self.ref.node_dir)
            env = {str(k): str(v) for k, v in (cfg.get("env") or {}).items()}
            writable = [work / "home"] if server == "desktop-commander" else []
            options = sandbox_options(self.interp, read_only=[Path(self.ref.node_dir)] if self.ref.node_dir else [],
                                      writable=writable, cwd=DATA, mounts={DATA: copy},
                                      env={**env, **({"HOME": str(work / "home")} if writable else {})})
            argv = sandboxed(options, command, work / f"scratch-{server}")
            spec = UpstreamSpec(server, command=argv, env=BWRAP_ENV, tools=tools,
                                rename={t: f"{server}_{t}" for t in tools})
            out.append(Upstream(spec, limits=limits, errlog=work / f"upstream-{server}.log"))
        return out

    async def open(self, runtime: Runtime) -> Episode:
        work = runtime.env_folder("atlas").resolve()
        try:
            copy = (await asyncio.to_thread(self.prepare, work)).resolve()
            # desktop-commander's home is writable by its shell: counted against the disk limit with /data
            episode = await runtime.open_episode(self.upstreams(work, copy, runtime.limits), workspace=copy,
                                                 binds=[f"{copy}:rw"], counted=[work / "home"])
        except BaseException:
            await runtime.remove_env_folder(work)
            raise
        self._open.track(episode, work, lambda: runtime.remove_env_folder(work))
        return episode

    # ---- judging ------------------------------------------------------------------------------
    def score(self, answer: str) -> Verdict:
        """The answer against the task's claims (module docstring)."""
        if not answer.strip() or answer.startswith("ERROR:"):
            return Verdict(criteria={"claims_coverage": False}, reward=0.0, score=0.0, metrics={"atlas_coverage": 0.0})
        if len(answer) > MAX_ANSWER_CHARS:
            return Verdict.failed(f"the answer has {len(answer):,} characters; the judge takes at most "
                                  f"{MAX_ANSWER_CHARS:,}", "policy/answer_too_long")
        key = os.environ.get(self.ref.judge_api_key_env, "") if self.ref.judge_api_key_env else ""
        request = {"checkout": str(self.checkout.path), "claims": self.task.claims, "response": answer,
                   "base_url": self.ref.judge_base_url, "model": self.ref.judge_model, "api_key": key,
                   "attempts": self.ref.judge_attempts, "backoff_max_s": 5.0}
        host = scratch_folder("atlas-judge-")
        scratch = host / "io"  # the scorer's only writable folder; its launch options stay outside it
        try:
            scratch.mkdir()
            (scratch / "request.json").write_text(json.dumps(request))
            # the judge reaches the user's endpoint: the host's network, nothing of the episode's state;
            # its output goes to a log and its result to a file, each read back bounded, without following links
            options = sandbox_options(self.interp, read_only=[self.checkout.path / "services" / "scoring", SCORER],
                                      writable=[scratch], cwd=scratch, network=True)
            argv = sandboxed(options, [self.interp.python, str(SCORER), str(scratch / "request.json"),
                                       str(scratch / "result.json")], host / "launch")
            run = run_once(argv, timeout_s=self.judge_timeout_s, log_file=scratch / "scorer.log", name="atlas-judge")
            if run.timed_out:
                return Verdict.failed(f"MCP-Atlas's claims judge did not finish within {self.judge_timeout_s:.0f} s",
                                      "infra/judge_timeout")
            try:
                result = json.loads(untrusted_fs.read_file(scratch, "result.json", max_bytes=MAX_RESULT_BYTES))
            except (OSError, ValueError, RecursionError, untrusted_fs.PathRefused) as exc:
                return Verdict.failed(f"MCP-Atlas's scorer gave no result (exit {run.exit_code}; {exc}): "
                                      f"{run.output_tail[-1500:]}", "infra/judge_error")
        finally:
            shutil.rmtree(host, ignore_errors=True)
        if not isinstance(result, dict):
            return Verdict.failed(f"MCP-Atlas's scorer wrote {type(result).__name__}, not an object", "infra/judge_error")
        if "error" in result:
            if result.get("transport", True):
                return Verdict.failed(f"MCP-Atlas's claims judge could not answer ({self.ref.judge_base_url}): "
                                      f"{result['error']}", "infra/judge_unreachable")
            # it answered what cannot be read: a judge error the answer may have caused (settled by the canary)
            return Verdict.failed(f"MCP-Atlas's claims judge answered what cannot be read: {result['error']}",
                                  "infra/judge_error")
        per_claim = result.get("per_claim") or []
        coverage = float(result.get("coverage_score") or 0.0)
        criteria = {f"claim_{i + 1}": float(c.get("score", 0.0)) >= 1.0 for i, c in enumerate(per_claim)}
        return Verdict(criteria=criteria, reward=float(coverage >= PASS_AT), score=coverage,
                       metrics={"atlas_coverage": coverage,
                                "atlas_claims_partial": float(sum(0 < float(c.get("score", 0)) < 1 for c in per_claim))})

    def judge(self, state: EpisodeState | str | Path, answer: str) -> Verdict:
        return self.score(answer)

    def snapshot(self, state: EpisodeState) -> bytes:
        return b""  # only the answer is judged

    def judge_untouched(self, answer: str) -> Verdict:
        """Only the answer is judged: the claims judge on `answer`."""
        return self.score(answer)

    def cheat_probes(self) -> dict[str, Callable[[], Verdict]]:
        return {}

    def judge_canary(self) -> Verdict:
        """The judge on a known-good answer: the task's claims themselves, stated as the response. Only a
        reply it could not read is settled so (a transport failure is infra without a canary)."""
        return self.score(self.task.claims if isinstance(self.task.claims, str) else json.dumps(self.task.claims))

    def judge_shipped(self, state: bytes, answer: str) -> Verdict:
        try:
            return self.score(answer)
        except Exception as exc:  # noqa: BLE001 - judge_shipped never raises
            return Verdict.failed(f"MCP-Atlas's scorer could not run: {type(exc).__name__}: {exc}", "infra/judge_error")
