"""LOCA's pretty-printed memory graph rewritten as the JSON Lines the memory server reads
(envs/benchmarks/loca/memory_file.py), and the real npm server reading it after: before, read_graph
failed on the file's first line."""

import asyncio
import json
import os
import shutil

import pytest

from envs.benchmarks.loca.memory_file import as_json_lines, json_values
from tests.conftest import ROOT

MEMORY = ROOT / ".mcp-servers" / "node_modules" / ".bin" / "mcp-server-memory"
PRETTY = json.dumps({"type": "entity", "entityType": "Person", "name": "Ronald Kelly",
                     "observations": ["Student ID: 2201210606", "Major: Computer Science"]}, indent=4) + "\n"


def test_a_pretty_printed_graph_becomes_json_lines_and_other_files_stay(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "memory.json").write_text(PRETTY + PRETTY.replace("Ronald Kelly", "Ada"))
    assert as_json_lines(tmp_path, "m/memory.json")
    lines = (tmp_path / "m" / "memory.json").read_text().splitlines()
    assert [json.loads(line)["name"] for line in lines] == ["Ronald Kelly", "Ada"]
    assert not as_json_lines(tmp_path, "m/memory.json")  # already JSON Lines: untouched
    (tmp_path / "bad.json").write_text("{not json")
    assert not as_json_lines(tmp_path, "bad.json") and (tmp_path / "bad.json").read_text() == "{not json"
    assert json_values("[1] [2]") == [[1], [2]] and json_values("{") is None
    secret = tmp_path / "secret.json"
    secret.write_text(PRETTY)
    os.symlink(secret, tmp_path / "link.json")  # a link is not followed: the file it names stays as it is
    assert not as_json_lines(tmp_path, "link.json") and secret.read_text() == PRETTY



HOSTILE = {
    "deep_array": "[" * 100_000 + "]" * 100_000,  # one line, valid JSON, deeper than any recursion limit
    "deep_unclosed": "[" * 100_000,
    "deep_in_a_pretty_graph": PRETTY.replace('"Major: Computer Science"', "[" * 50_000 + "1" + "]" * 50_000),
    "deep_objects": '{"a":\n' * 50_000 + "1" + "}" * 50_000,
    "lone_surrogate": PRETTY.replace("Major: Computer Science", "\\ud800"),  # valid JSON, not encodable as UTF-8
    "lone_surrogate_key": PRETTY.replace('"name"', '"\\udfff"'),
    "huge_number": PRETTY.replace('"Person"', "1" + "0" * 100_000),
    "too_large": PRETTY + " " * (2 << 20) + PRETTY,  # 2 MiB: left unread
    "million_keys": "{\n" + ",\n".join(f'"k{i}": {i}' for i in range(10**6)) + "\n}\n",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_memory_file_is_left_as_it_is_and_never_raises(tmp_path, name):
    """The memory file is written by the task's generator or the model: whatever it holds, the rewrite
    either makes the same values JSON Lines or leaves the file exactly as it was (the server then says
    what it says about it), never an exception in the host (RecursionError, UnicodeEncodeError, a
    memory-sized parse)."""
    text = HOSTILE[name]
    (tmp_path / "memory.json").write_text(text, encoding="utf-8", errors="surrogatepass")
    before = (tmp_path / "memory.json").read_bytes()
    assert as_json_lines(tmp_path, "memory.json") is False
    assert (tmp_path / "memory.json").read_bytes() == before


@pytest.mark.skipif(not MEMORY.exists(), reason="the npm memory server is not installed (scripts/install.sh)")
async def test_the_memory_server_reads_the_rewritten_graph(tmp_path):
    if not shutil.which("node"):
        pytest.skip("node is not installed")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    path = tmp_path / "memory.json"

    async def read_graph() -> tuple[bool, str]:
        params = StdioServerParameters(command=str(MEMORY), env={"MEMORY_FILE_PATH": str(path), "PATH": os.environ["PATH"]})
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            res = await s.call_tool("read_graph", {})
            return bool(res.is_error), res.content[0].text

    path.write_text(PRETTY)
    failed, text = await asyncio.wait_for(read_graph(), 60)
    assert failed or "Ronald Kelly" not in text  # LOCA's file as shipped: the server cannot read it
    as_json_lines(tmp_path, "memory.json")
    failed, text = await asyncio.wait_for(read_graph(), 60)
    assert not failed and "Ronald Kelly" in text and "2201210606" in text, text


def test_brackets_inside_strings_and_moderate_nesting_are_still_rewritten(tmp_path):
    """The depth bound counts structure, not text: an observation quoting brackets (escaped quotes
    and backslashes too), or a value nested 30 deep, is rewritten like any graph."""
    quoted = PRETTY.replace("Major: Computer Science", '[[[[{{{{ \\\\\\" ' * 1000)
    nested = PRETTY.replace('"Major: Computer Science"', "[" * 30 + "1" + "]" * 30)
    (tmp_path / "memory.json").write_text(quoted + nested)
    assert as_json_lines(tmp_path, "memory.json")
    values = [json.loads(line) for line in (tmp_path / "memory.json").read_text().splitlines()]
    assert values == json_values(quoted + nested) and values[0]["observations"][1].startswith('[[[[{{{{ \\" ')
