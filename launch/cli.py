"""The `progagent` command line. Each subcommand lives in the module that owns it.

Only the module of the command being run is imported: the modules behind all of them import the MCP
SDK, Ray and the task library, ~1.2 s of CPU that `progagent --help` or `progagent tasks list` paid
for nothing (and every test that runs the command line, many times over). The list of commands and
their one-line help are here, so `progagent --help` imports none of them.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

#: command -> (its help line, "module:function" that adds its arguments, and the module's function
#: that runs it, or None where the adder sets `run` itself)
COMMANDS: dict[str, tuple[str, str, str | None]] = {
    "mcp": ("serve the PTC runtime over MCP (stdio or streamable HTTP)", "envs.runtime.mcp_server:add_arguments",
            "run"),
    "demo": ("open a sandboxed episode over real MCP servers and show what a model sees", "launch.demo:add_arguments",
             "run"),
    "tasks": ("the task library: list, show, build, validate, export, context report", "launch.tasks_cli:add_arguments",
              "run"),
    "synth": ("synthesize tasks: intents, construction, repair, audit, validation", "launch.synth_cli:add_arguments",
              "run"),
    "model": ("build the tiny self-made model, or import a GGUF model", "launch.rollout_cli:add_model_arguments",
              None),
    "collect": ("collect teacher trajectories (SFT data) from the oracle or an API model",
                "launch.rollout_cli:add_collect_arguments", None),
    "train": ("SFT, then asynchronous GSPO on the actor fabric, with evaluation", "launch.cli:add_train", None),
    "sft": ("the cold-start stage alone: SFT on teacher trajectories, evaluate, export", "launch.cli:add_sft", None),
    "filter": ("difficulty filtering: keep tasks solved sometimes, at every scale", "launch.filter:add_arguments",
               "run"),
    "eval": ("evaluation sweeps: models × harnesses × scales × tasks; pass@k, tables, plots",
             "launch.eval:add_arguments", "run"),
    "harbor": ("Harbor tasks (exported or a public benchmark): oracle check, model runs",
               "launch.harbor_cli:add_arguments", None),
}


def add_train(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/local.yaml")
    p.add_argument("--resume", default=None, help="a checkpoint folder of an earlier run")
    p.add_argument("overrides", nargs="*", help="key.path=value")
    p.set_defaults(run=lambda a: importlib.import_module("launch.train").run(a))


def add_sft(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default="configs/local.yaml")
    p.add_argument("overrides", nargs="*", help="key.path=value")
    p.set_defaults(run=lambda a: importlib.import_module("launch.train").run(a, sft_only=True))


def _add(command: str, parser: argparse.ArgumentParser) -> None:
    """Import the module of `command` and give `parser` its arguments and its `run`."""
    _, adder, runner = COMMANDS[command]
    module_name, _, function = adder.partition(":")
    module = importlib.import_module(module_name)
    getattr(module, function)(parser)
    if runner is not None:
        parser.set_defaults(run=getattr(module, runner))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="progagent", description="ProgAgent: programmatic tool calling, trained.")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    chosen = next((a for a in argv if not a.startswith("-")), None)  # -v is the only option before it
    for command, (help_line, _, _) in COMMANDS.items():
        p = sub.add_parser(command, help=help_line)
        if command == chosen:
            _add(command, p)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
