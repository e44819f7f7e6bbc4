"""The shortcuts that skip work on the common text are exact on every text: `text.squeezed`'s ASCII
test (a memchr per whitespace character instead of isprintable) against the split and join it skips
and against the isprintable test it replaced, on text with every ASCII character, control and
whitespace characters of both planes, wide characters, combining marks and lone surrogates; and
`split.newlines` (memchr from line to line, then count) against bytes.count, on lines short and long
and the switch between them, through count_newlines on a real file."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harnesskit.session import split
from harnesskit.text import one_line, squeezed

ASCII = [chr(c) for c in range(128)]
OTHERS = ["\x85", "\xa0", "\x9b", "\u1680", "\u2000", "\u200a", "\u200b", "\u2028", "\u2029", "\u202f", "\u205f",
          "\u3000", "\ufeff", "é", "→", "…", "漢", "字", "\U0001f600", "\u0301", "\u20dd", "\ud800", "\udfff"]
TEXTS = (st.text(st.sampled_from(ASCII), max_size=60) | st.text(st.sampled_from([*ASCII, *OTHERS]), max_size=60)
         | st.text(st.sampled_from([" ", "\n", "a", "\t", "\x1f", "\x1b"]), max_size=16) | st.text(max_size=60))


def before(text: str) -> str:
    """squeezed as it was (isprintable for every text): the shortcut must give what it gave."""
    flat = (text.replace("\n", " ") if "\n" in text else text).strip(" ")
    if flat.isprintable() and "  " not in flat:
        return flat
    return " ".join(text.split())


def test_every_ascii_character_between_words() -> None:
    for ch in ASCII + OTHERS:
        for text in (f"a{ch}b", f"{ch}a b", f"a b{ch}", f"a {ch} b", f"a{ch}{ch}b", ch):
            assert squeezed(text) == " ".join(text.split()) == before(text), repr(text)


@settings(max_examples=3000, deadline=None)
@given(text=TEXTS, limit=st.integers(0, 40))
def test_squeezed_is_the_split_and_join(text: str, limit: int) -> None:
    assert squeezed(text) == " ".join(text.split()) == before(text)
    long = text * 8
    assert one_line(long, limit) == " ".join(long.split())[: len(one_line(long, limit))]


LINES = st.lists(st.integers(0, 3000), max_size=120).map(lambda sizes: b"".join(b"x" * n + b"\n" for n in sizes))


@settings(max_examples=500, deadline=None)
@given(head=LINES, tail=st.binary(max_size=600) | LINES, end=st.binary(max_size=20))
def test_newlines_is_count(head: bytes, tail: bytes, end: bytes) -> None:
    block = head + tail + end
    assert split.newlines(block) == block.count(b"\n")


def test_newlines_switches_to_count_on_short_lines() -> None:
    for block in (b"\n" * 10_000, b"ab\n" * 31 + b"y" * 9000 + b"\n" * 50, b"z" * 300 * 32 + b"\n" + b"a\n" * 999,
                  (b"x" * 5000 + b"\n") * 40 + b"\n" * 777 + b"tail", b"", b"no newline"):
        assert split.newlines(block) == block.count(b"\n")


def test_count_newlines_of_a_file(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    data = b"".join(b"y" * (i * 37 % 4000) + b"\n" for i in range(3000)) + b"\n" * 5000 + b"end"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        for start, stop in ((0, len(data)), (1, len(data) - 1), (12345, 2_000_000), (0, 0), (len(data) - 9, len(data))):
            assert split.count_newlines(fd, start, stop) == data[start:stop].count(b"\n"), (start, stop)
    finally:
        os.close(fd)
