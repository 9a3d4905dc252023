"""Attacks through what a kernel sends back: huge exceptions, forged and oversized messages.

A program owns its kernel: it can raise anything, print anything, and send any frames on the
kernel's own sockets (it can even read the connection key). The host must return bounded text and
hold bounded memory, and every such trick is the program's error, never an exception out of the
runtime.
"""

import asyncio
from pathlib import Path

import pytest

from envs.runtime.episode import Runtime
from schema.config import RuntimeConfig

LIMIT = 50_000  # RuntimeConfig.max_output_chars


@pytest.fixture
async def ep():
    rt = Runtime(RuntimeConfig(warm_pool=0, program_timeout_s=30))
    await rt.start()
    episode = await rt.open_episode()
    yield episode
    await episode.close()
    await rt.close()


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def peak_rss_during(coro) -> tuple[object, float]:
    """(the result, the host process's peak RSS growth in MB while `coro` ran)."""
    start, peak, done = rss_mb(), rss_mb(), asyncio.Event()

    async def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_mb())
            await asyncio.sleep(0.005)

    sampler = asyncio.create_task(sample())
    try:
        return await coro, peak - start
    finally:
        done.set()
        await sampler


@pytest.mark.parametrize("code", [
    "raise ValueError('E' * 20_000_000)",
    "class Loud(Exception):\n    def __str__(self):\n        return 'S' * 20_000_000\nraise Loud()",
    "class Noisy:\n    def __repr__(self):\n        return 'R' * 20_000_000\nraise TypeError(Noisy())",
    "import sys\nsys.stderr.write('W' * 20_000_000)\nraise KeyError('K' * 5_000_000)",
])
async def test_exceptions_cannot_carry_more_than_the_output_limit(ep, code):
    r, grew = await peak_rss_during(ep.run_program(code))
    assert r.is_error and len(r.text) <= LIMIT + 300, len(r.text)
    assert "traceback cut" in r.text or "output cut" in r.text, r.text[:300]
    assert grew < 150, f"the host grew by {grew:.0f} MB"
    assert (await ep.run_program("print('next')")).text == "next"


async def test_printed_output_is_cut_with_its_exact_size(ep):
    r = await ep.run_program("x = 'P' * 20_000_000\nprint(len(x))\nprint(x)")
    assert len(r.text) <= LIMIT + 200
    assert "output cut: 19,950,010 of 20,000,010 characters not shown" in r.text, r.text[-200:]


FORGE = r'''
k = get_ipython().kernel
def raw(frames):
    k.iopub_thread.schedule(lambda: k.iopub_thread.socket.send_multipart(frames))
raw([b"stream", b"<IDS|MSG>", b"not-a-signature", b"{}", b"{}", b"{}", b'{"name": "stdout", "text": "FORGED"}'])
raw([b"garbage"])
raw([b"<IDS|MSG>"] + [b"x"] * 100)
parent = k.get_parent()
# signed with the real key (the program can read it) but of the wrong shapes
k.session.send(k.iopub_socket, "stream", {"name": "stdout", "text": 12345}, parent=parent)
k.session.send(k.iopub_socket, "error", {"ename": ["x"], "evalue": {"a": 1}, "traceback": "not-a-list"}, parent=parent)
k.session.send(k.iopub_socket, "status", "not-a-dict", parent=parent)
import time; time.sleep(0.3)
print("after forging")
'''


async def test_forged_kernel_messages_are_the_programs_error(ep):
    r = await ep.run_program(FORGE)
    assert r.is_error and "after forging" in r.text and "FORGED" not in r.text, r.text
    assert "not valid kernel messages" in r.text and "they were ignored" in r.text, r.text
    assert (await ep.run_program("print(1 + 1)")).text == "2"


OVERSIZED = r'''
k = get_ipython().kernel
big = [b"stream", b"<IDS|MSG>", b"x", b"{}", b"{}", b"{}", b"y" * (9 << 20)]
many = [b"stream", b"<IDS|MSG>", b"x", b"{}", b"{}", b"{}"] + [b"z" * (4 << 20)] * 150
for frames in (big, many):
    k.iopub_thread.schedule(lambda frames=frames: k.iopub_thread.socket.send_multipart(frames))
import time; time.sleep(2)
print("after oversized")
'''


async def test_oversized_and_many_frame_messages_cost_the_host_nothing(ep):
    """ZeroMQ hands over a multipart message only whole: 150 frames of 4 MiB took a jupyter_client
    host to 1.7 GB. The runtime's own reader drops them frame by frame."""
    r, grew = await peak_rss_during(ep.run_program(OVERSIZED))
    assert "after oversized" in r.text and "they were ignored" in r.text, r.text
    assert grew < 150, f"the host grew by {grew:.0f} MB"
    assert (await ep.run_program("print('still here')")).text == "still here"


async def test_a_flood_between_cells_is_bounded(ep):
    """A thread left running floods iopub while no program runs (nothing reads): the host queues a
    bounded number of messages and drops the rest."""
    await ep.run_program(
        "import threading\n"
        "k = get_ipython().kernel\n"
        "def flood():\n"
        "    for _ in range(1000):\n"
        "        k.session.send(k.iopub_socket, 'stream', {'name': 'stdout', 'text': 'f' * 100_000})\n"
        "threading.Thread(target=flood, daemon=True).start()\n")
    _, grew = await peak_rss_during(asyncio.sleep(2))
    assert grew < 150, f"the host grew by {grew:.0f} MB"
    channels = ep.slot.kernel.client
    assert channels.messages.qsize() <= 64 and channels.lost > 0
    r = await ep.run_program("print('ok')")
    assert r.text.endswith("ok"), r.text[-200:]


def test_text_a_program_chose_is_one_bounded_line_in_the_hosts_log():
    """An error message is often the model's text coming back (a tool server echoing the argument it
    refuses, a verifier quoting the answer). In the host's log lines it is shown escaped and cut
    (envs/runtime/untrusted_text.py): it can neither clear the operator's screen, hide or forge a line,
    nor reorder what is read."""
    from envs.runtime.untrusted_text import loggable

    hostile = ("bad value\x1b[2J\x1b]0;title\x07\r\nINFO run finished: all passed\x00\x7f\x85\u202egnp.exe\u2066"
               "\u2028WARNING forged\u200b\ud800")
    line = loggable(hostile)
    assert line == (r"bad value\x1b[2J\x1b]0;title\x07\r\nINFO run finished: all passed\x00\x7f\x85\u202egnp.exe\u2066"
                    r"\u2028WARNING forged\u200b\ud800")
    assert all(ch.isprintable() for ch in line)
    # a backslash the text holds is shown doubled: an escape it spells out is not read as one it had
    assert loggable("a\\nb") == r"a\\nb" and loggable("a\nb") == r"a\nb"
    assert loggable("é日本\tx") == r"é日本\tx"  # printable text of any script is kept as it is
    cut = loggable("\n" * 1_000_000, limit=100)
    assert cut == r"\n" * 100 + " [... 999,900 more characters not shown]"
    assert loggable(ValueError("x\ny")) == r"x\ny"  # exceptions too
