"""`list`'s backwards read of a file's last activity (listing._last_activity) against reading it forwards,
whatever the block size: lines shorter and far longer than a block, ends with and without a newline."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harnesskit.session import listing

HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'


def message(ms: int) -> bytes:
    return json.dumps({"type": "message", "id": f"{ms:08x}", "parentId": None,
                       "message": {"role": "user", "content": "x", "timestamp": ms}}).encode()


LINE = st.one_of(st.integers(1, 10**12).map(message),
                 st.integers(0, 300).map(lambda n: json.dumps({"type": "custom", "x": "a" * n}).encode()),
                 st.just(b""), st.just(b"not json"))


def forwards(data: bytes, start: int) -> float | None:
    found = None
    for raw in data[start:].split(b"\n"):
        stamp = listing._line_activity(raw)
        if stamp is not None:
            found = stamp
    return found


@given(st.lists(LINE, max_size=12), st.booleans(), st.sampled_from([1, 2, 7, 16, 64, 1 << 16]))
def test_backwards_equals_forwards(lines: list[bytes], newline_at_end: bool, block: int) -> None:
    data = HEADER + b"\n".join(lines) + (b"\n" if newline_at_end and lines else b"")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(listing, "_BLOCK", block)
        assert listing._last_activity(io.BytesIO(data), len(HEADER)) == forwards(data, len(HEADER))

