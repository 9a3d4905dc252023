"""MCPMark's filesystem tasks from a local data cache (envs/benchmarks/mcpmark/), on a miniature
checkout in MCPMark's format (tests/fixtures/mcpmark_checkout: ours). The cached category's files get
distinct modification times here (git keeps none): the task is to name the newest file, so the working
copy, the snapshot and the judge's restore must all keep them, as MCPMark's own copy does."""

import asyncio
import os
import shutil
import sys

import pytest

from envs.benchmarks.mcpmark.checkout import MCPMarkCheckout, MCPMarkError
from envs.benchmarks.mcpmark.episode import NOTE, MCPMarkTaskEnv
from envs.benchmarks.mcpmark.kind import MCPMarkRef
from envs.runtime.episode import Runtime
from schema.config import RuntimeConfig
from tests.conftest import NPM_FS, ROOT

CHECKOUT = ROOT / "tests" / "fixtures" / "mcpmark_checkout"
NODE_DIR = ROOT / ".mcp-servers"
needs_npm = pytest.mark.skipif(not NPM_FS.exists(), reason="npm filesystem server not installed (scripts/install.sh)")


@pytest.fixture
def cache(tmp_path):
    data = shutil.copytree(ROOT / "tests" / "fixtures" / "mcpmark_data", tmp_path / "data")
    for i, name in enumerate(("c.txt", "a.txt", "b.txt")):  # b.txt is the newest
        os.utime(data / "notes" / name, (1_700_000_000 + i * 3600,) * 2)
    return data


def test_only_cached_categories_run_and_a_missing_one_says_what_to_fetch(cache):
    co = MCPMarkCheckout(CHECKOUT, cache)
    assert [t.task_id for t in co.tasks()] == ["notes__newest_file"]
    with pytest.raises(MCPMarkError, match=r"papers__find_title: its initial state .*/papers is not in the data cache; "
                                           r"fetch https://storage.mcpmark.ai/filesystem/papers.zip"):
        co.tasks(["papers__find_title"])
    with pytest.raises(MCPMarkError, match="not an MCPMark task name"):
        co.task("newest_file")
    with pytest.raises(MCPMarkError, match="the data cache does not exist"):
        MCPMarkCheckout(CHECKOUT, cache / "nope")


@needs_npm
async def test_an_episode_on_a_working_copy_judged_by_verify_py(cache):
    ref = MCPMarkRef(str(CHECKOUT), str(cache), "notes__newest_file", sys.executable, str(NODE_DIR))
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        env = MCPMarkTaskEnv(ref)
        assert env.instruction.endswith(NOTE) and env.instruction.startswith("Find the most recently modified")
        ep = await env.open(runtime)
        r = await ep.run_program(
            "import glob, os\nd = tools['list_allowed_directories']()['content'].split('\\n')[1]\n"
            "newest = max(glob.glob(f'{d}/*.txt'), key=os.path.getmtime).rsplit('/', 1)[1]\n"
            "tools['write_file'](path=f'{d}/answer.txt', content=newest)\nprint(newest)")
        assert "b.txt" in r.text, r.text
        await ep.stop()
        assert (await asyncio.to_thread(env.judge, ep.final_state(), "")).reward == 1.0
        data = await asyncio.to_thread(env.snapshot, ep.final_state())
        await ep.close()
        shipped = await asyncio.to_thread(MCPMarkTaskEnv(ref).judge_shipped, data, "")
        assert shipped.reward == 1.0 and shipped.error is None, shipped
        assert (cache / "notes" / "answer.txt").exists() is False  # the cache itself is never written

        env = MCPMarkTaskEnv(ref)
        ep = await env.open(runtime)
        await ep.stop()
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "")
        assert verdict.reward == 0.0 and verdict.error is None
        await ep.close()


@needs_npm
async def test_a_link_out_of_the_cached_data_is_refused_and_a_planted_link_is_not_shipped(cache):
    """The cache is the user's, the working copy the model's: neither may make the host read elsewhere."""
    ref = MCPMarkRef(str(CHECKOUT), str(cache), "notes__newest_file", sys.executable, str(NODE_DIR))
    async with Runtime(RuntimeConfig(warm_pool=0)) as runtime:
        (cache / "notes" / "passwd.txt").symlink_to("/etc/passwd")
        with pytest.raises(ValueError, match="passwd.txt in the data cache links outside it"):
            await MCPMarkTaskEnv(ref).open(runtime)
        (cache / "notes" / "passwd.txt").unlink()
        env = MCPMarkTaskEnv(ref)
        ep = await env.open(runtime)
        r = await ep.run_program("import os\nos.symlink('/etc/shadow', 'answer.txt')\nprint('planted')")
        assert "planted" in r.text
        await ep.stop()
        verdict = await asyncio.to_thread(env.judge, ep.final_state(), "")
        assert verdict.reward == 0.0  # verify.py runs in the sandbox: the link leads nowhere readable
        from envs.episode_env import StateRefused

        with pytest.raises(StateRefused):
            env.snapshot(ep.final_state())
        await ep.close()
