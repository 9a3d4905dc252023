"""Cheat probes: a task whose judge a trivial policy passes is evaluated, never trained on.

    verdicts = probe(env)                    # {"do_nothing": Verdict, "claim_done": ..., <kind's own>: ...}
    cheats = passed(verdicts)                # the probes that earned reward 1: the task is refused for training
    kept, refused = probe_sources(sources)   # before training: each training source's (task, scale) probed

An RL policy is an optimiser of the reward, not of the task: a verifier that passes a state the policy
did not solve (a benchmark's `verify.py` that checks only that an unauthorised write fails, satisfied
by a database that takes no writes at all) is found and reinforced. So before training, each task of a
training source is judged against cheats that solve nothing:

- **generic**, on the environment's untouched state (`EpisodeEnv.judge_untouched`): do nothing and
  answer nothing (`do_nothing`), claim that it is done (`claim_done`), answer a trivial value
  (`trivial_answer`);
- **the kind's own** cheap cheats (`EpisodeEnv.cheat_probes`): MCPMark postgres's database that
  refuses every write (`writes_disabled`).

A probe that earns reward 1 names the cheat; the task is left out of training with that name (its
evaluation runs it as before: a benchmark's score is its own). A kind that cannot judge an untouched
state outside an episode (LOCA-bench: its evaluator belongs to the process that generated the state)
has no generic probes; the table says so.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from envs.episode_env import EpisodeEnv
from schema.records import EnvRef, Verdict

#: the generic cheats: name -> the answer given on the untouched environment
GENERIC: dict[str, str] = {
    "do_nothing": "",
    "claim_done": "Done. I have completed every step of the task as asked.",
    "trivial_answer": "ANSWER: 0",
}


def probe(env: EpisodeEnv) -> dict[str, Verdict]:
    """Each probe's verdict on `env`: the generic ones on its untouched state (none when the kind cannot
    judge one), then its kind's own. A probe that raises is recorded as a verdict error, never a pass."""
    runs: dict[str, Callable[[], Verdict | None]] = {
        name: (lambda a=answer: env.judge_untouched(a)) for name, answer in GENERIC.items()}
    runs |= env.cheat_probes()
    out: dict[str, Verdict] = {}
    for name, run in runs.items():
        try:
            verdict = run()
        except Exception as exc:  # noqa: BLE001 - a probe that cannot run refuses nothing, and says why
            verdict = Verdict.failed(f"the probe raised {type(exc).__name__}: {exc}", "infra/judge_error")
        if verdict is not None:
            out[name] = verdict
    return out


def passed(verdicts: dict[str, Verdict]) -> list[str]:
    """The probes whose cheat earned reward 1 (a judge that failed refuses nothing)."""
    return [name for name, v in verdicts.items() if v.error is None and v.reward >= 1.0]


@dataclass(frozen=True)
class ProbeRow:
    """One (task, scale) of a source, probed."""

    source: str
    task_id: str
    scale: str
    verdicts: dict[str, Verdict]

    @property
    def cheats(self) -> list[str]:
        return passed(self.verdicts)


def probe_refs(source: str, refs: list[EnvRef], load: Callable[[EnvRef], EpisodeEnv],
               workers: int = 2) -> list[ProbeRow]:
    """Every ref of `source` probed (`load` makes its environment), `workers` at once, in order."""
    def one(ref: EnvRef) -> ProbeRow:
        return ProbeRow(source, ref.task_id, ref.scale, probe(load(ref)))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, refs))


def probe_sources(sources: list[Any], load: Callable[[EnvRef], EpisodeEnv], say: Callable[[str], None] = print,
                  workers: int = 2) -> tuple[list[Any], list[ProbeRow]]:
    """The training sources without the (task, scale) pairs a probe passed, each refusal said with its
    probes, and every row. A source left with nothing to train on is dropped and said so too."""
    kept, rows = [], []
    for src in sources:
        got = probe_refs(src.name, src.refs, load, workers)
        rows += got
        refused = {(r.task_id, r.scale): r.cheats for r in got if r.cheats}
        for (task, scale), cheats in refused.items():
            say(f"{src.name}: {task} at {scale} is not trained on: its judge passes the cheat probe(s) "
                f"{', '.join(cheats)} (envs/probes.py); evaluation still runs it")
        refs = [r for r in src.refs if (r.task_id, r.scale) not in refused]
        if not refs:
            say(f"{src.name}: every task passes a cheat probe: nothing of this source is trained on")
            continue
        kept.append(replace(src, refs=refs, scale_weights={s: w for s, w in src.scale_weights.items()
                                                           if any(r.scale == s for r in refs)}))
    return kept, rows
