"""How much a JSON text that a program chose would become once parsed, told before parsing it.

A tool server's reply is what the program asked for, and its bytes are bounded (16 MiB), but not
what they parse to: 16 MB of small values (`[{"i": 0}, ...]`) became ~500 MB of the host's memory
and ~5 s of its event loop while the MCP client parsed and converted it. `json_values` counts the
values of a text without parsing it (a few vectorized passes over the bytes), so a reader can refuse
a reply of too many values before it costs anything (`too_many_values`), and the tool bridge a
request of too many (`values_over`).

The count is an upper estimate that is exact for valid JSON up to a constant: every element and
object entry but the first of a container follows a comma, and every container opens with `[` or
`{`, so commas + openers + 1 bounds the values; what lies inside strings (whose commas and
brackets are not structure) is not counted, after dropping escaped backslashes and quotes. Invalid JSON can only
make the count wrong where the parser refuses the text anyway.
"""

from __future__ import annotations

#: the values one reply may hold (as counted by `json_values`): ~500 bytes of the host's memory a
#: value while the MCP client parses, checks and converts it (960,000 values: ~500 MB), so ~50 MB at
#: the limit. Big results are text (a string is one value) or pages.
MAX_REPLY_VALUES = 100_000
#: texts this short are not counted: they cannot hold enough values to matter (and the count would
#: cost every ordinary call its passes over the bytes)
COUNT_FROM_BYTES = 64 * 2**10

#: bytes counted at a time: the count's own memory is a few times this, whatever the text's size
_CHUNK = 1 << 20
_QUOTE, _COMMA, _BRACKET, _BRACE = (ord(c) for c in '",[{')


def json_values(data: bytes | bytearray) -> int:
    """An upper estimate of how many values the JSON text `data` holds (module docstring).

    Vectorized (numpy) a chunk at a time: a character is inside a string after an odd number of
    quotes. No object per string or per value is made (a regex substitution made one per string:
    ~130 MB for 16 MB of short strings)."""
    import numpy as np

    plain = data.replace(b"\\\\", b"").replace(b'\\"', b"") if b"\\" in data else data  # no quote left in a string
    view = np.frombuffer(plain, dtype=np.uint8)
    values, odd = 1, 0  # odd: the chunks so far hold an odd number of quotes
    for start in range(0, len(view), _CHUNK):
        chunk = view[start:start + _CHUNK]
        quotes = chunk == _QUOTE
        outside = (np.cumsum(quotes, dtype=np.uint8) & 1) == odd  # uint8 wraps at 256: the parity holds
        structure = (chunk == _COMMA) | (chunk == _BRACKET) | (chunk == _BRACE)
        values += int(np.count_nonzero(structure & outside))
        odd ^= int(np.count_nonzero(quotes)) & 1
    return values


def values_over(data: bytes | bytearray, limit: int) -> int | None:
    """How many values the JSON text `data` holds (json_values) when that is more than `limit`, else
    None. Cheap where it cannot be more: short texts, and texts with few commas and brackets at all."""
    if len(data) < COUNT_FROM_BYTES:
        return None
    if data.count(b",") + data.count(b"[") + data.count(b"{") + 1 <= limit:  # strings' commas too: small
        return None
    n = json_values(data)
    return n if n > limit else None


def too_many_values(data: bytes | bytearray, limit: int = MAX_REPLY_VALUES) -> str | None:
    """Why the reply `data` (JSON text) is refused unparsed, or None: it holds more than `limit` values."""
    n = values_over(data, limit)
    if n is None:
        return None
    return (f"the reply holds about {n:,} values; replies of up to {limit:,} values reach the host "
            "(ask for less: a page, a range; or for text)")
