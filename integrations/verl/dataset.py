"""verl's parquet rows from ProgAgent sources: each row one environment for the `progagent` agent loop.

    python -m integrations.verl.dataset --config configs/local.yaml --out data/progagent/train.parquet
    python -m integrations.verl.dataset --config configs/mixture.yaml --source starter --harness ptc \\
        --out data/train.parquet --val-out data/val.parquet
    python -m integrations.verl.dataset --library envs/starter_tasks --scales v0,v1 --out data/train.parquet

The sources are a ProgAgent config's (`envs:`, or its `tasks:` library; envs/sources.py), or one library
folder. A row (verl's RLHFDataset format) is:
    data_source   "progagent/<source>"            (verl's validation groups its metrics by it)
    prompt        [{"role": "user", "content": the task's instruction}]   (for verl's logs and its
                  length filter; the agent loop renders the real prompt: harness system prompt, tools)
    ability       "agent"
    reward_model  {"style": "progagent", "ground_truth": ""}   (the agent loop judges: no ground truth
                  leaves ProgAgent)
    agent_name    "progagent"
    extra_info    {"index": i, "split": ..., "progagent": the EpisodeRow as JSON (integrations/verl/rows.py)}

verl draws rows uniformly, so a source's `weight` and its `scales` weights become repeats: each
(task, scale) appears in proportion to the chance ProgAgent's own sampler gives it (a source by
weight, a task of it uniformly, a scale by weight), at least once (`--no-weights`: each once).
Training rows come only from sources training may use (a positive weight, a kind that keeps the
ground truth out of the episode's reach: envs/sources.check_trainable); `--val-out` rows from every
source, each (task, scale) once.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from envs.sources import Source, check_trainable
from integrations.sources import episode_sources, instruction_of
from integrations.verl.rows import EXTRA_INFO_KEY, EpisodeRow
from schema.load import ConfigError
from schema.records import EnvRef

AGENT_NAME = "progagent"
#: more repeats than this per (task, scale) means the weights are extreme: refused, not written
MAX_REPEATS = 1000


def chances(source: Source) -> dict[EnvRef, float]:
    """Each reference's chance under ProgAgent's sampler, within its source."""
    tasks = source.task_ids
    out: dict[EnvRef, float] = {}
    for task in tasks:
        scales = source.scales_of(task)
        total = sum(source.scale_weights[s] for s in scales)
        for s in scales:
            ref = source.ref(task, s)
            if ref is not None:
                out[ref] = source.scale_weights[s] / total / len(tasks)
    return out


def rows(sources: list[Source], harness: str, split: str, weighted: bool) -> list[dict[str, Any]]:
    from envs.format.task_env import EnvironmentCache

    cache = EnvironmentCache()
    weight_sum = sum(s.weight for s in sources) or 1.0
    weighed = [(source, ref, chance * source.weight / weight_sum)
               for source in sources for ref, chance in chances(source).items()]
    least = min((w for _, _, w in weighed if w > 0), default=1.0)
    picks = [(source, ref, max(1, round(w / least)) if weighted else 1) for source, ref, w in weighed]
    worst = max((count for _, _, count in picks), default=1)
    if worst > MAX_REPEATS:
        raise ConfigError(f"the sources' weights ask for {worst} copies of one (task, scale) row against another's "
                          f"one (at most {MAX_REPEATS}): even out the weights, or use --no-weights")
    out: list[dict[str, Any]] = []
    for source, ref, count in picks:
        row = EpisodeRow.of(ref, harness, source.name).encode()
        text = instruction_of(ref, cache)
        for _ in range(count):
            out.append({"data_source": f"progagent/{source.name}", "prompt": [{"role": "user", "content": text}],
                        "ability": "agent", "reward_model": {"style": "progagent", "ground_truth": ""},
                        "agent_name": AGENT_NAME,
                        "extra_info": {"index": len(out), "split": split, EXTRA_INFO_KEY: row}})
    return out


def write_parquet(table_rows: list[dict[str, Any]], path: str | Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(table_rows), path)
    return path


def build_sources(args: argparse.Namespace) -> list[Source]:
    if args.library:
        return episode_sources(library=args.library, tasks=args.tasks, scales=args.scales.split(",") if args.scales
                               else None)
    return episode_sources(config=args.config, only=args.source, overrides=args.overrides)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m integrations.verl.dataset", description=__doc__.split("\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--config", help="a ProgAgent config: its sources (envs:, or tasks:)")
    where.add_argument("--library", help="one task library folder (e.g. envs/starter_tasks)")
    parser.add_argument("--source", action="append", help="only this source of the config (repeatable)")
    parser.add_argument("--tasks", type=lambda s: s.split(","), help="--library: only these task ids (a,b)")
    parser.add_argument("--scales", default="", help="--library: only these scales (v0,v1)")
    parser.add_argument("--harness", default="", choices=["", "ptc", "dtc", "hybrid"],
                        help="the rows' harness ('' = the agent loop's setting)")
    parser.add_argument("--out", required=True, help="the training rows' parquet file")
    parser.add_argument("--val-out", help="also write validation rows (every source, each row once) here")
    parser.add_argument("--no-weights", action="store_true", help="each (task, scale) once, whatever the weights")
    parser.add_argument("overrides", nargs="*", help="config overrides, dotted.key=value")
    args = parser.parse_args(argv)
    try:
        sources = build_sources(args)
        train = rows(check_trainable(sources), args.harness, "train", not args.no_weights)
        print(f"{write_parquet(train, args.out)}: {len(train)} rows", file=sys.stderr)
        if args.val_out:
            val = rows(sources, args.harness, "val", weighted=False)
            print(f"{write_parquet(val, args.val_out)}: {len(val)} rows", file=sys.stderr)
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
