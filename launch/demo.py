"""`progagent demo`: one sandboxed PTC episode over real MCP servers, shown as the model sees it.

It starts the PyPI servers `mcp-server-time` and `mcp-server-git` (on a small git repository made
for the demo), runs a multi-turn program in the persistent kernel, and prints each program, the
text that returns to the model, the tool calls made, and what the same calls would have put into
the context under direct tool calling.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table

from envs.runtime.episode import Runtime
from envs.runtime.upstream import UpstreamSpec
from schema.config import RuntimeConfig

PROGRAMS = [
    # turn 1: inspect one result before processing many
    'log = tools["git_log"](repo_path=REPO, max_count=3)\nprint(type(log).__name__, str(log)[:300])',
    # turn 2: loop, branch, keep results in variables, print a summary only
    "import re\n"
    "entries = tools['git_log'](repo_path=REPO, max_count=50)\n"
    "text = entries if isinstance(entries, str) else '\\n'.join(map(str, entries))\n"
    "subjects = re.findall(r'Message: (.*)', text)\n"
    "fixes = [s for s in subjects if s.lower().startswith('fix')]\n"
    "zones = {}\n"
    "for tz in ['UTC', 'Asia/Tokyo', 'America/New_York', 'Mars/Olympus']:\n"
    "    try:\n"
    "        zones[tz] = tools['get_current_time'](timezone=tz)['datetime'][11:16]\n"
    "    except ToolError as e:\n"
    "        zones[tz] = f'error: {str(e)[:60]}'\n"
    "print(f'{len(subjects)} commits, {len(fixes)} fixes; latest fix: {fixes[0] if fixes else None}')\n"
    "print(zones)",
    # turn 3: variables persisted from the previous program
    "print('still have', len(subjects), 'subjects; files in workspace:', __import__('os').listdir('.'))",
]


def make_repo(root: Path, commits: int = 30) -> Path:
    repo = root / "repo"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "Demo", "GIT_AUTHOR_EMAIL": "demo@example.org", "GIT_COMMITTER_NAME": "Demo",
           "GIT_COMMITTER_EMAIL": "demo@example.org", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    for i in range(commits):
        (repo / "notes.txt").write_text(f"revision {i}\n")
        kind = "fix" if i % 4 == 0 else "feat"
        subprocess.run(["git", "-C", str(repo), "add", "."], check=True, env=env)
        subprocess.run(["git", "-C", str(repo), "commit", "-qm", f"{kind}: change number {i}"], check=True, env=env)
    return repo


async def demo(console: Console) -> None:
    bindir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="progagent-demo-") as tmp:
        repo = make_repo(Path(tmp))
        async with Runtime(RuntimeConfig(warm_pool=1, program_timeout_s=30)) as runtime:
            console.print(f"[bold]sandbox limits in effect:[/] {runtime.limits_mode}")
            episode = await runtime.open_episode([
                UpstreamSpec("time", [str(bindir / "mcp-server-time")]),
                UpstreamSpec("git", [str(bindir / "mcp-server-git")]),
            ])
            async with episode:
                console.print(f"episode opened in {episode.open_s * 1000:.0f} ms with "
                              f"{len(episode.tools())} tools: {', '.join(t['name'] for t in episode.tools())}")
                await episode.run_program(f"REPO = {str(repo)!r}")  # setup, not shown
                for turn, code in enumerate(PROGRAMS, 1):
                    first = len(episode.call_log)
                    result = await episode.run_program(code)
                    console.print(Panel(Syntax(code, "python", theme="ansi_dark"), title=f"turn {turn}: program"))
                    style = "red" if result.is_error else "green"
                    console.print(Panel(result.text, title="what the model sees", border_style=style))
                    calls = episode.call_log[first:]
                    console.print(f"  {len(calls)} tool calls in {result.duration_s * 1000:.0f} ms; raw results "
                                  f"{sum(c.result_chars for c in calls):,} chars (DTC context) vs "
                                  f"{len(code) + len(result.text):,} chars program + output (PTC context)")
                table = Table(title="call log")
                for col in ("tool", "arguments", "ok", "result chars", "ms"):
                    table.add_column(col)
                for c in episode.call_log:
                    table.add_row(c.tool, str(c.arguments)[:50], "yes" if c.ok else f"no: {c.error[:40]}",
                                  str(c.result_chars), f"{c.duration_s * 1000:.1f}")
                console.print(table)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options yet


def run(args: argparse.Namespace) -> int:
    del args
    if shutil.which("bwrap") is None:
        print("error: bubblewrap (bwrap) is not installed; run scripts/install.sh", file=sys.stderr)
        return 2
    import uvloop

    uvloop.run(demo(Console()))
    return 0
