"""The `progagent` command line. Each subcommand lives in the module that owns it."""

from __future__ import annotations

import argparse
import logging
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="progagent", description="ProgAgent: programmatic tool calling, trained.")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    from envs.runtime import mcp_server
    from launch import demo, rollout_cli, synth_cli, tasks_cli

    p = sub.add_parser("mcp", help="serve the PTC runtime over MCP (stdio or streamable HTTP)")
    mcp_server.add_arguments(p)
    p.set_defaults(run=mcp_server.run)

    p = sub.add_parser("demo", help="open a sandboxed episode over real MCP servers and show what a model sees")
    demo.add_arguments(p)
    p.set_defaults(run=demo.run)

    p = sub.add_parser("tasks", help="the task library: list, show, build, validate, export, context report")
    tasks_cli.add_arguments(p)
    p.set_defaults(run=tasks_cli.run)

    p = sub.add_parser("synth", help="synthesize tasks: intents, construction, repair, audit, validation")
    synth_cli.add_arguments(p)
    p.set_defaults(run=synth_cli.run)

    p = sub.add_parser("model", help="build the tiny self-made model, or import a GGUF model")
    rollout_cli.add_model_arguments(p)

    p = sub.add_parser("collect", help="collect teacher trajectories (SFT data) from the oracle or an API model")
    rollout_cli.add_collect_arguments(p)

    p = sub.add_parser("train", help="SFT, then asynchronous GSPO on the actor fabric, with evaluation")
    p.add_argument("--config", default="configs/local.yaml")
    p.add_argument("--resume", default=None, help="a checkpoint folder of an earlier run")
    p.add_argument("overrides", nargs="*", help="key.path=value")
    p.set_defaults(run=lambda a: __import__("launch.train", fromlist=["run"]).run(a))

    p = sub.add_parser("sft", help="the cold-start stage alone: SFT on teacher trajectories, evaluate, export")
    p.add_argument("--config", default="configs/local.yaml")
    p.add_argument("overrides", nargs="*", help="key.path=value")
    p.set_defaults(run=lambda a: __import__("launch.train", fromlist=["run"]).run(a, sft_only=True))

    from launch import eval as eval_cmd
    from launch import filter as filter_cmd

    p = sub.add_parser("filter", help="difficulty filtering: keep tasks solved sometimes, at every scale")
    filter_cmd.add_arguments(p)
    p.set_defaults(run=filter_cmd.run)

    p = sub.add_parser("eval", help="evaluation sweeps: models × harnesses × scales × tasks; pass@k, tables, plots")
    eval_cmd.add_arguments(p)
    p.set_defaults(run=eval_cmd.run)

    __import__("launch.harbor_cli", fromlist=["register"]).register(sub)  # progagent harbor check|run

    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
