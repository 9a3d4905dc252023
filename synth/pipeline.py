"""The synthesis pipeline: intents → construction → verifier/oracle → execute & repair → audit → validate.

    summary = await Pipeline(load_synth_config("configs/synth.yaml"), "runs/synth").run()

Per domain, one intent request; each intent becomes a candidate task that moves through revisions:

    r0: construct (task.toml, instruction.md, data.py, tools.py), verifier (verify.py, oracle.py, wrong/)
    rN: execute at v0 → audit at v3 (+ diagnose when the solver fails) → validate at v0–v3
        the first failing check's problems go to the repair stage, which writes r(N+1);
        after `max_repair_rounds` repairs a failing candidate is discarded with the reason
    accepted: the task folder is copied into the output library (load_library() reads it)

Every finished stage leaves a record (synth/records.py) and is skipped on a re-run, so a run can be
stopped at any point and continued, and an accepted or discarded candidate costs nothing again.
An endpoint or runtime error leaves no record for its stage: the candidate is reported under
`errors` and the next run retries from that stage. A candidate's data.py and verify.py run in a
sandboxed child with a deadline (`code_timeout_s`, envs/format/code_runner.py): a hang is repair feedback.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec

from envs.format.code_runner import CodeRunner
from envs.format.library import load_library, load_task
from envs.runtime.untrusted_text import loggable
from schema.synth import SynthConfig
from synth import prompts
from synth.checker import Checker, LocalChecker
from synth.llm import LLM, StageFailed, total_usage
from synth.parse import ResponseFormatError, parse_files, parse_json
from synth.prompts import Diagnosis, Intent, IntentList
from synth.records import Outcome, StageRecord, Store, Usage, now

log = logging.getLogger("progagent.synth")

TASK_FILES = ("task.toml", "instruction.md", "data.py", "tools.py", "verify.py", "oracle.py")


def _is_wrong(path: str) -> bool:
    return bool(re.fullmatch(r"wrong/[A-Za-z0-9_]+\.py", path))


def _verifier_files(text: str) -> dict[str, str]:
    files = parse_files(text, lambda p: p in prompts.VERIFIER_FILES or _is_wrong(p), prompts.VERIFIER_FILES)
    if sum(map(_is_wrong, files)) < 2:
        raise ResponseFormatError("at least two wrong/<name>.py files are required")
    return files


def _task_id(raw: str, domain: str) -> str:
    cid = re.sub(r"[^a-z0-9]+", "_", raw.lower()).strip("_") or "task"
    slug = re.sub(r"[^a-z0-9]+", "_", domain.lower()).strip("_")
    return cid if cid.startswith(slug) else f"{slug}_{cid}"


class RunSummary(msgspec.Struct):
    out_dir: str
    library_dir: str
    outcomes: list[Outcome]
    errors: dict[str, str]  # candidate or domain → error that stopped it (a re-run retries it)
    usage_by_stage: dict[str, Usage]
    stages_run: dict[str, int]
    stages_skipped: dict[str, int]
    seconds: float

    @property
    def accepted(self) -> list[str]:
        return [o.candidate for o in self.outcomes if o.status == "accepted"]


class Pipeline:
    def __init__(self, cfg: SynthConfig, out: str | Path, http_client: Any = None, checker: Checker | None = None):
        """`checker`: where the candidates' checks run (synth/checker.py; default: in this process)."""
        self.cfg = cfg
        self.store = Store(out)
        self.llm = LLM(http_client)
        self.library = Path(cfg.library_dir) if cfg.library_dir else self.store.out / "library"
        self.system = prompts.system_prompt(cfg.example_task)
        self.ran: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.checker: Checker = checker or LocalChecker(cfg, self.llm)
        self._runner: CodeRunner | None = None  # loads an accepted task once more, as written

    # ---- the run ----------------------------------------------------------------------------------
    async def run(self) -> RunSummary:
        t0 = time.perf_counter()
        self.store.write_json("run.json", {"started_at": now(), "config": self.cfg})
        errors: dict[str, str] = {}
        outcomes: list[Outcome] = []
        try:
            candidates = await self.intents(errors)
            sem = asyncio.Semaphore(self.cfg.concurrency)

            async def one(cid: str, intent: Intent) -> Outcome:
                async with sem:
                    return await self.candidate(cid, intent)

            results = await asyncio.gather(*(one(c, i) for c, i in candidates), return_exceptions=True)
            for (cid, _), res in zip(candidates, results, strict=True):
                if isinstance(res, BaseException):
                    log.error("candidate %s stopped: %s: %s", cid, type(res).__name__, loggable(res))
                    errors[cid] = f"{type(res).__name__}: {res}"
                else:
                    outcomes.append(res)
        finally:
            await self.close()
        usage: dict[str, Usage] = {}
        for rec in self._all_records():
            usage[rec.stage] = usage.get(rec.stage, Usage()).add(rec.usage)
        summary = RunSummary(out_dir=str(self.store.out), library_dir=str(self.library), outcomes=outcomes,
                             errors=errors, usage_by_stage=usage, stages_run=dict(self.ran),
                             stages_skipped=dict(self.skipped), seconds=round(time.perf_counter() - t0, 2))
        self.store.write_json("summary.json", summary)
        return summary

    async def close(self) -> None:
        await self.checker.close()
        self._runner = None
        await self.llm.close()

    def _all_records(self) -> list[StageRecord]:
        recs = [self.store.load(p) for p in sorted((self.store.out / "intents").glob("*.json"))]
        for folder in sorted((self.store.out / "candidates").glob("*")):
            recs += self.store.records(folder.name)
        return [r for r in recs if r]

    async def _stage(self, path: Path, make: Callable[[], Awaitable[StageRecord]]) -> StageRecord:
        """A finished stage's record, or run the stage now and record it."""
        rec = self.store.load(path)
        if rec is not None:
            self.skipped[rec.stage] += 1
            return rec
        t0 = time.perf_counter()
        rec = await make()
        rec.seconds, rec.finished_at = round(time.perf_counter() - t0, 2), now()
        self.store.save(path, rec)
        self.ran[rec.stage] += 1
        log.info("%s %s r%d: %s (%.1f s)", rec.candidate or "-", rec.stage, rec.revision,
                 "ok" if rec.ok else "failed", rec.seconds)
        return rec

    async def _llm_stage(self, stage: str, cid: str, rev: int, messages: list[dict[str, Any]],
                         parse: Callable[[str], Any]) -> StageRecord:
        spec = self.cfg.models.for_stage(stage)
        try:
            result, replies = await self.llm.ask(spec, messages, parse, self.cfg.format_retries)
            error = None
        except StageFailed as exc:
            result, replies, error = None, exc.replies, str(exc)
        return StageRecord(
            stage=stage, candidate=cid, revision=rev, ok=error is None, model=spec.model, error=error,
            inputs={"messages": messages},
            outputs={"replies": [r.text for r in replies], "finish_reasons": [r.finish_reason for r in replies],
                     "served_by": sorted({r.model for r in replies}), "result": msgspec.to_builtins(result)},
            usage=total_usage(replies))

    # ---- stage 1: intents -------------------------------------------------------------------------
    async def intents(self, errors: dict[str, str]) -> list[tuple[str, Intent]]:
        shipped = sorted(load_library()[0])
        spec = self.cfg.models.for_stage("intents")

        async def one(domain: str) -> StageRecord | None:
            try:
                return await self._stage(self.store.intents_path(domain), lambda: self._llm_stage(
                    "intents", "", 0, prompts.intents_messages(domain, self.cfg.intents_per_domain, shipped),
                    lambda t: parse_json(t, IntentList)))
            except Exception as exc:  # noqa: BLE001 - an endpoint failure: that domain is retried next run
                errors[f"intents:{domain}"] = f"{type(exc).__name__}: {exc}"
                return None

        recs = await asyncio.gather(*(one(d) for d in self.cfg.domains))
        out: list[tuple[str, Intent]] = []
        taken = set(shipped)
        for domain, rec in zip(self.cfg.domains, recs, strict=True):
            if rec is None or not rec.ok:
                if rec is not None:
                    errors[f"intents:{domain}"] = rec.error or "failed"
                continue
            for raw in rec.outputs["result"]["intents"][: self.cfg.intents_per_domain]:
                intent = msgspec.convert({**raw, "domain": domain}, Intent)
                cid = base = _task_id(intent.task_id, domain)
                n = 1
                while cid in taken:
                    n += 1
                    cid = f"{base}_{n}"
                taken.add(cid)
                out.append((cid, intent))
        log.info("%d candidates from %d domains (intent model %s)", len(out), len(self.cfg.domains), spec.model)
        return out[: self.cfg.max_candidates] if self.cfg.max_candidates else out

    # ---- one candidate ----------------------------------------------------------------------------
    async def candidate(self, cid: str, intent: Intent) -> Outcome:
        done = self.store.load_outcome(cid)
        if done is not None:
            self.skipped["outcome"] += 1
            return done
        path = self.store.stage_path
        rec = await self._stage(path(cid, 0, "construct"), lambda: self._llm_stage(
            "construct", cid, 0, prompts.construct_messages(self.system, cid, intent),
            lambda t: parse_files(t, lambda p: p in prompts.CONSTRUCT_FILES, prompts.CONSTRUCT_FILES)))
        if rec.ok:
            rec = await self._stage(path(cid, 0, "verifier"), lambda: self._llm_stage(
                "verifier", cid, 0, prompts.verifier_messages(self.system, cid, intent, self._files(cid, 0)),
                _verifier_files))
        if not rec.ok:
            return self._finish(cid, intent, 0, "discarded", f"{rec.stage}: {rec.error}")
        rev, history = 0, []
        while True:
            folder = self._materialize(cid, rev)
            failed = await self._checks(cid, rev, folder)
            if failed is None:
                return self._accept(cid, intent, rev, folder)
            stage, feedback = failed
            if rev >= self.cfg.max_repair_rounds:
                return self._finish(cid, intent, rev, "discarded",
                                    f"{stage} check failed after {rev} repair round(s):\n{feedback}")
            rec = await self._repair(cid, rev + 1, stage, feedback, history)
            history.append(f"r{rev} {stage}: {feedback.splitlines()[0][:300] if feedback else ''}")
            rev += 1
            if not rec.ok:
                return self._finish(cid, intent, rev, "discarded", f"repair: {rec.error}")

    async def _repair(self, cid: str, rev: int, stage: str, feedback: str, history: list[str]) -> StageRecord:
        """Revision `rev` from the previous one and the failed check's feedback (earlier rounds summarised)."""
        messages = prompts.repair_messages(self.system, cid, self._files(cid, rev - 1), stage, feedback, history)
        return await self._stage(self.store.stage_path(cid, rev, "repair"), lambda: self._llm_stage(
            "repair", cid, rev, messages, lambda t: parse_files(t, lambda p: p in TASK_FILES or _is_wrong(p))))

    def _files(self, cid: str, rev: int) -> dict[str, str]:
        """The task's files at revision `rev`: r0's construct + verifier output, then each repair's."""
        files: dict[str, str] = {}
        names = [(0, "construct"), (0, "verifier")] + [(r, "repair") for r in range(1, rev + 1)]
        for r, stage in names:
            rec = self.store.load(self.store.stage_path(cid, r, stage))
            if rec is not None and rec.ok:
                files.update(rec.outputs["result"])
        return files

    def _materialize(self, cid: str, rev: int) -> Path:
        """Write revision `rev` as a task folder (same records ⇒ same bytes); task.toml's id is the folder's."""
        folder = self.store.task_dir(cid, rev)
        shutil.rmtree(folder, ignore_errors=True)
        for rel, content in self._files(cid, rev).items():
            if rel == "task.toml":
                content = re.sub(r'(?m)^id\s*=\s*"[^"\n]*"', f'id = "{cid}"', content, count=1)
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(content)
        return folder

    async def _checks(self, cid: str, rev: int, folder: Path) -> tuple[str, str] | None:
        """Execute, audit (+ diagnose), validate: the first failure as (stage, feedback), else None."""
        path = self.store.stage_path
        rec = await self._stage(path(cid, rev, "execute"), lambda: self._execute(cid, rev, folder))
        if not rec.ok:
            return "execute", rec.error or ""
        rec = await self._stage(path(cid, rev, "audit"), lambda: self._audit(cid, rev, folder))
        if not rec.ok:
            if rec.outputs.get("problems"):  # the oracle itself fails at the audit scale
                return "audit", rec.error or ""
            audit_rec = rec
            rec = await self._stage(path(cid, rev, "diagnose"), lambda: self._diagnose(cid, rev, folder, audit_rec))
            if not rec.ok:
                return "audit", rec.error or ""
        rec = await self._stage(path(cid, rev, "validate"), lambda: self._validate(cid, rev, folder))
        if not rec.ok:
            return "validate", rec.error or ""
        return None

    # ---- stages 4-6: execute, audit, diagnose, validate ---------------------------------------------
    async def _execute(self, cid: str, rev: int, folder: Path) -> StageRecord:
        res = await self.checker.execute(folder, self.cfg.execute_scale)
        return StageRecord(stage="execute", candidate=cid, revision=rev, ok=res["ok"], outputs=res,
                           inputs={"task_dir": str(folder), "scale": self.cfg.execute_scale},
                           error="\n".join(f"- {p}" for p in res["problems"]) or None)

    async def _audit(self, cid: str, rev: int, folder: Path) -> StageRecord:
        spec = self.cfg.models.for_stage("audit")
        res, usage = await self.checker.audit(folder)
        if res["solver"]["termination"] == "generator_error":
            raise RuntimeError(f"the audit model's endpoint failed ({spec.model})")
        solver = res["solver"]
        error = None
        if res["problems"]:
            error = "\n".join(f"- {p}" for p in res["problems"])
        elif not res["ok"]:
            failed = [k for k, v in solver["criteria"].items() if not v]
            error = (f"- an independent solver (seeing only the instruction and the tools) failed at "
                     f"{self.cfg.audit.scale}: criteria {failed or solver['verifier_error']}, its answer "
                     f"{solver['final_answer'][-300:]!r}, the oracle's answer {res['oracle']['answer'][-300:]!r}")
        return StageRecord(stage="audit", candidate=cid, revision=rev, ok=res["ok"], model=spec.model, outputs=res,
                           inputs={"task_dir": str(folder), "scale": self.cfg.audit.scale,
                                   "harness": self.cfg.audit.harness}, usage=usage, error=error)

    async def _diagnose(self, cid: str, rev: int, folder: Path, audit: StageRecord) -> StageRecord:
        files = {p: (folder / p).read_text() for p in TASK_FILES if (folder / p).is_file()}
        seen = {"scale": audit.outputs["scale"], "solver": audit.outputs["solver"],
                "oracle_answer": audit.outputs["oracle"]["answer"]}
        rec = await self._llm_stage("diagnose", cid, rev, prompts.diagnose_messages(files, seen),
                                    lambda t: parse_json(t, Diagnosis))
        if not rec.ok:  # no usable diagnosis: the failed audit itself is the feedback
            rec.error = f"{audit.error}\n- (no diagnosis: {rec.error})"
            return rec
        d = msgspec.convert(rec.outputs["result"], Diagnosis)
        rec.ok = d.verdict == "solver_error" and self.cfg.audit.accept_solver_errors
        if not rec.ok:
            rec.error = (f"{audit.error}\n- diagnosis ({d.verdict}): {d.summary}\n"
                         + "\n".join(f"  - {i}" for i in d.issues))
        return rec

    async def _validate(self, cid: str, rev: int, folder: Path) -> StageRecord:
        report = await self.checker.validate(folder)
        return StageRecord(stage="validate", candidate=cid, revision=rev, ok=report["ok"], outputs=report,
                           inputs={"task_dir": str(folder)},
                           error="\n".join(f"- {p}" for p in report["problems"]) or None)

    # ---- outcomes ---------------------------------------------------------------------------------
    def _usage(self, cid: str) -> dict[str, Usage]:
        usage: dict[str, Usage] = {}
        for rec in self.store.records(cid):
            usage[rec.stage] = usage.get(rec.stage, Usage()).add(rec.usage)
        return usage

    def _accept(self, cid: str, intent: Intent, rev: int, folder: Path) -> Outcome:
        dst = self.library / cid
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(folder, dst, ignore=shutil.ignore_patterns("__pycache__"))
        if self._runner is None:
            self._runner = CodeRunner(self.cfg.code_timeout_s, self.cfg.code_sandbox)
        load_task(dst, runner=self._runner)  # the library folder loads as written
        return self._finish(cid, intent, rev, "accepted", "", str(dst))

    def _finish(self, cid: str, intent: Intent, rev: int, status: str, reason: str, task_dir: str = "") -> Outcome:
        outcome = Outcome(candidate=cid, domain=intent.domain, status=status, reason=reason, revision=rev,
                          repair_rounds=rev, task_dir=task_dir, usage_by_stage=self._usage(cid))
        self.store.save_outcome(outcome)
        log.info("%s %s%s", cid, status, f": {loggable(reason.splitlines()[0])}" if reason else "")
        return outcome
