"""The `progagent` command line imports only the module of the command it runs: the modules behind
all of them (the MCP SDK, Ray, the task library) cost ~1.2 s of CPU per invocation, which `--help`
and `tasks list` paid for nothing."""

import subprocess
import sys

import pytest

from launch.cli import COMMANDS

PROBE = """
import sys
from launch.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted(m for m in ("ray", "mcp", "torch", "transformers", "envs.format.library") if m in sys.modules)
print("IMPORTED", ",".join(heavy))
"""


def _imported(*argv: str) -> tuple[str, set[str]]:
    r = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("IMPORTED"), r.stdout + r.stderr
    return r.stdout, set(filter(None, last.removeprefix("IMPORTED").strip().split(",")))


@pytest.mark.parametrize("argv,allowed", [
    (("--help",), set()),
    (("tasks", "list"), {"envs.format.library"}),
    (("harbor", "--help"), set()),
    (("train", "--help"), set()),
])
def test_a_command_imports_only_what_it_runs(argv, allowed):
    out, imported = _imported(*argv)
    assert imported <= allowed, (argv, imported)
    if argv == ("--help",):  # and the help still lists every command with its line
        assert all(command in out and help_line[:30] in out for command, (help_line, _, _) in COMMANDS.items())


def test_every_command_gets_its_arguments_and_a_run():
    import argparse

    from launch.cli import _add

    for command in COMMANDS:
        parser = argparse.ArgumentParser()
        _add(command, parser)
        has_run = parser.get_default("run") is not None
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # harbor check|run, tasks …
        assert has_run or all(p.get_default("run") is not None for s in subs for p in s.choices.values()), command
