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


@pytest.mark.parametrize("argv,message", [
    (("collect", "--samples", "0", "--out", "x.jsonl"), "argument --samples: '0': Expected `int` >= 1"),
    # a score above 1 once ran every oracle episode, then kept none of them
    (("collect", "--min-score", "5", "--out", "x.jsonl"), "argument --min-score: '5': Expected `float` <= 1.0"),
    # a concurrency of 0 once hung for good
    (("tasks", "context-report", "--concurrency", "0"), "argument --concurrency: '0': Expected `int` >= 1"),
    (("tasks", "validate", "--processes", "-1"), "argument --processes: '-1': Expected `int` >= 1"),
    (("harbor", "run", "t", "--temperature", "-1"), "argument --temperature: '-1': Expected `float` >= 0.0"),
    # a port past 65535 once ended in a pydantic traceback from the MCP SDK
    (("mcp", "--http", "70000"), "argument --http: '70000': Expected `int` <= 65535"),
    (("mcp", "--http", "0"), "argument --http: '0': Expected `int` >= 1"),  # "serving 127.0.0.1:0" named no port
    (("mcp", "--timeout", "0"), "argument --timeout: '0': Expected `float` > 0.0"),
    (("model", "build-tiny", "--layers", "0"), "argument --layers: '0': Expected `int` >= 1"),
])
def test_a_flag_out_of_its_bounds_is_a_usage_error_before_anything_runs(argv, message, capsys):
    from launch.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_a_task_library_that_is_not_there_is_an_error_not_a_traceback(tmp_path, capsys):
    from launch.cli import main

    assert main(["tasks", "--root", str(tmp_path / "none"), "list"]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert f"error: {tmp_path / 'none'}: not a task library (No such file or directory)" in out


def test_sweep_and_filter_settings_that_cannot_work_are_config_errors(capsys):
    from launch.cli import main

    # a k above the samples was left out of the report without a word
    assert main(["eval", "sweep.ks=[1,64]", "sweep.samples=2"]) == 2
    assert "sweep.ks: pass@k needs k samples, and sweep.samples is 2: [64] cannot be estimated" in capsys.readouterr().out
    # an unknown source was a ConfigError traceback from inside the filter
    assert main(["filter", "filter.envs=[nope]"]) == 2
    assert "config error: filter.envs: no source named ['nope']" in capsys.readouterr().out


def test_an_output_path_that_cannot_be_written_is_refused_before_the_work(tmp_path, capsys):
    from launch.cli import main

    a_file = tmp_path / "a-file"
    a_file.write_text("kept")
    for argv, message in [
            # each was a traceback (synth, build) or came after the whole validation (validate --json)
            (["synth", "run", "--config", "configs/synth.yaml", "--out", str(a_file)], f"{a_file} exists and is not a folder"),
            (["tasks", "build", "retail_loyalty_backfill", "--scale", "v0", str(a_file)],
             f"{a_file} exists and is not an empty folder"),
            (["tasks", "validate", "retail_loyalty_backfill", "--json", str(tmp_path)], f"{tmp_path} is a folder"),
            (["tasks", "validate", "retail_loyalty_backfill", "--json", str(a_file / "r.json")],
             f"{a_file / 'r.json'}: {a_file} is not a folder"),
            (["eval", "--out", str(a_file)], f"sweep.out_dir: {a_file} exists and is not a folder"),
            (["filter", "--out", str(a_file)], f"filter.out_dir: {a_file} exists and is not a folder"),
            (["train", f"run.out_dir={a_file}"], f"run.out_dir: {a_file}/local-")]:
        assert main(argv) == 2, argv
        out = capsys.readouterr().out
        assert f"error: {message}" in out and " valid in " not in out and "Ray" not in out, (argv, out)
    assert a_file.read_text() == "kept"


def test_an_output_file_replaces_the_earlier_one_whole_or_not_at_all(tmp_path):
    from launch.paths import output_file

    path = tmp_path / "report.json"
    path.write_text("earlier")
    with pytest.raises(RuntimeError), output_file(path) as fh:
        fh.write(b"half")
        raise RuntimeError("the work failed")
    assert path.read_text() == "earlier" and [p.name for p in tmp_path.iterdir()] == ["report.json"]
    with output_file(path) as fh:
        fh.write(b"new")
    assert path.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["report.json"]
