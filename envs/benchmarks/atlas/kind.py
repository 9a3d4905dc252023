"""The environment kind of MCP-Atlas (envs/benchmarks/atlas/): `kind: mcp_atlas`.

    envs:
      atlas:
        kind: mcp_atlas
        args: {checkout: ~/mcp-atlas, tasks_file: ~/mcp-atlas.parquet,
               judge_base_url: http://127.0.0.1:4000, judge_model: gemini/gemini-3.1-pro-preview}

At the one scale `mcp_atlas`. Every task of the file whose reference trajectory calls only servers
that run offline here; the others are left out and counted, each with the server that needs a key,
the network or a package that is gone (named tasks that cannot run are refused with it). The claims
judge is Atlas's own scorer, its calls sent to `judge_base_url` (an OpenAI-compatible endpoint: a
LiteLLM proxy, vLLM, …) with the key in the environment variable `judge_api_key_env`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

# AtlasTask is a field's type, so it is imported at run time: msgspec resolves the annotations when a
# reference is decoded from plain data (a dataset row), and a name only a type checker sees is a NameError
# there. checkout.py is light (the standard library and msgspec), unlike the episode code.
from envs.benchmarks.atlas.checkout import AtlasTask
from envs.kinds import ListContext, LoadContext, register
from schema.bounds import Count
from schema.load import ConfigError
from schema.records import EnvRef

if TYPE_CHECKING:
    from envs.benchmarks.atlas.episode import AtlasTaskEnv

ATLAS_SCALE = "mcp_atlas"


class AtlasRef(EnvRef, frozen=True, tag="mcp_atlas"):
    """An MCP-Atlas task (read from the user's file when listed: the workers need no copy of it)."""

    checkout: str
    task: AtlasTask
    python: str
    node_dir: str
    judge_base_url: str
    judge_model: str
    judge_api_key_env: str = "EVAL_LLM_API_KEY"
    judge_attempts: int = 3

    @property
    def task_id(self) -> str:
        return self.task.task_id

    @property
    def scale(self) -> str:
        return ATLAS_SCALE


class AtlasArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    checkout: str
    tasks_file: str  # the user's parquet (Hugging Face ScaleAI/MCP-Atlas) or a CSV with its columns
    judge_base_url: str  # OpenAI-compatible: Atlas's scorer posts to <judge_base_url>/v1/chat/completions
    judge_model: str = "gemini/gemini-3.1-pro-preview"  # Atlas's default judge
    judge_api_key_env: str = "EVAL_LLM_API_KEY"  # the variable holding the key (Atlas's own name)
    judge_attempts: Count = 3  # per claim, before the answer's judging is a verifier error
    tasks: list[str] = []  # TASK ids; [] = every task that runs offline
    python: str = ""  # Atlas's environment; "" = the one ProgAgent makes (Python 3.12 + its npm servers)
    node_dir: str = ""


class AtlasKind:
    name = "mcp_atlas"
    ref_type = AtlasRef
    args_type = AtlasArgs
    ground_truth_hidden = True  # the claims and reference trajectory never reach the episode
    has_oracle = False

    def refs(self, args: AtlasArgs, ctx: ListContext) -> list[AtlasRef]:
        from envs.benchmarks import atlas
        from envs.benchmarks.atlas.checkout import AtlasCheckout, AtlasError, read_tasks
        from envs.benchmarks.environment import benchmark_python

        where = f"envs.{ctx.source}.args"
        if not args.judge_base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}.judge_base_url: {args.judge_base_url!r} is not an http(s) URL "
                              "(an OpenAI-compatible endpoint for Atlas's claims judge)")
        if args.judge_attempts < 1:
            raise ConfigError(f"{where}.judge_attempts must be at least 1")
        python, node_dir = benchmark_python(atlas.ENVIRONMENT, args.python, args.node_dir, where, ctx.say)
        try:
            co = AtlasCheckout(args.checkout)
            tasks = [co.task(row) for row in read_tasks(python, args.tasks_file)]
        except AtlasError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if args.tasks:
            known = {t.task_id: t for t in tasks}
            unknown = [t for t in args.tasks if t not in known]
            if unknown:
                raise ConfigError(f"{where}.tasks: not in {args.tasks_file}: {', '.join(unknown[:5])}")
            tasks = [known[t] for t in args.tasks]
            for t in tasks:
                need = co.needs(t)
                if need:
                    raise ConfigError(f"{where}: MCP-Atlas task {t.task_id} cannot run here: {need}")
        runnable = [t for t in tasks if not co.needs(t)]
        ctx.say(offline_report(co, tasks, runnable))
        missing = co.missing_repos()
        if missing:
            ctx.say(f"MCP-Atlas: {len(missing)} of the state's repositories are not checked out ({', '.join(missing)}): "
                    "`git submodule update --init` in the checkout; tasks that read them will fail")
        if not runnable:
            raise ConfigError(f"{where}: no task of {args.tasks_file} runs offline here")
        return [AtlasRef(str(co.path), t, python, node_dir, args.judge_base_url, args.judge_model,
                         args.judge_api_key_env, args.judge_attempts) for t in runnable]

    def load(self, ref: AtlasRef, ctx: LoadContext) -> AtlasTaskEnv:
        from envs.benchmarks.atlas.episode import AtlasTaskEnv

        return AtlasTaskEnv(ref, judge_timeout_s=ctx.judge_timeout_s)


def offline_report(co, tasks: list[AtlasTask], runnable: list[AtlasTask]) -> str:
    """"k of n tasks run offline here; the others need: <server> (<why>) × count …"."""
    from collections import Counter

    blockers = Counter(co.needs(t) for t in tasks if co.needs(t))
    said = "; ".join(f"{why} ({n})" for why, n in blockers.most_common(6))
    return (f"MCP-Atlas: {len(runnable)} of {len(tasks)} tasks run offline here"
            + (f"; the others need — {said}" if said else ""))


KIND = register(AtlasKind())
