"""envs/runtime/stdio_transport.py's streams on their own, over real pipes or chunks: what a server's
stdout brings becomes the same messages in any chunking, an overlong line is that request's error
without being held (ServerOutput); sends to a server that reads nothing leave one message behind,
not one per call (ServerInput)."""

import json

import anyio
import mcp_types as types
import pytest

from envs.runtime.stdio_transport import ServerOutput


def _response(i: int, text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": text}]}}).encode()


async def _read_all(data: bytes, chunk: int, max_line_bytes: int) -> list:
    send, receive = anyio.create_memory_object_stream[bytes](len(data) // chunk + 2)
    for start in range(0, len(data), chunk):
        send.send_nowait(data[start:start + chunk])
    send.close()

    class Pipe:  # a process's stdout as anyio gives it: chunks, then EndOfStream
        async def receive(self) -> bytes:
            return await receive.receive()

    out = ServerOutput(Pipe(), max_line_bytes)
    return [item async for item in out]


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
async def test_messages_come_out_whole_and_in_order_whatever_the_chunking(chunk):
    lines = [_response(1, "a"), b"", b"   ", _response(2, "b" * 3000), b"not json", _response(3, "c\\u00e9")]
    data = b"\n".join(lines) + b"\n" + b'{"jsonrpc": "2.0", "id": 4, "res'  # a last line never ended: not a message
    items = await _read_all(data, chunk, max_line_bytes=2000)
    assert len(items) == 4, items
    first, overlong, garbage, last = items
    assert first.message.id == 1 and last.message.id == 3
    assert isinstance(overlong.message, types.JSONRPCError) and overlong.message.id == 2  # its request learns why
    assert "replies up to 2,000 bytes reach the host" in overlong.message.error.message
    assert isinstance(garbage, Exception)  # reported to the session, which logs and drops it


CHILD_THAT_READS_LATE = "import sys, time; time.sleep(2); print(len(sys.stdin.buffer.read()))"


@pytest.mark.parametrize("senders", [1, 4])
async def test_sends_that_end_while_the_server_reads_nothing_leave_at_most_one_message_behind(senders):
    """A hung server reads nothing from its stdin; each call to it ends at its deadline. What a call
    wrote must not stay behind for the next call to add to: the host held every message written
    meanwhile (40 x 1 MB here; at 4 MiB a call, ~5 MB a second per call slot, for as long as the
    server hangs). At most one message waits in the pipe's buffer; the other sends wait their turn and
    end holding nothing. The child reads what reached it once it wakes: that is what the host held."""
    import sys

    from mcp.shared.message import SessionMessage

    from envs.runtime.stdio_transport import ServerInput

    process = await anyio.open_process([sys.executable, "-c", CHILD_THAT_READS_LATE])
    pipe = ServerInput(process.stdin)
    message = SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/message",
                                                       params={"level": "info", "data": "x" * 1_000_000}))
    ended = 0

    async def sender() -> None:
        nonlocal ended
        for _ in range(40 // senders):
            with anyio.move_on_after(0.02) as scope:
                await pipe.send(message)
            ended += scope.cancelled_caught

    async with anyio.create_task_group() as tg:
        for _ in range(senders):
            tg.start_soon(sender)
    await process.stdin.aclose()
    got = int((await process.stdout.receive()).decode())
    await process.wait()
    assert ended >= 39
    assert got < 2 * 1_000_100, f"{got:,} bytes were held for a server that read nothing"
