"""split.split_point: where validate, continue's index and inspect --stats cut a big file in two."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesskit.session import split


@pytest.fixture
def cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(split.os, "cpu_count", lambda: 2)
    monkeypatch.setenv("HARNESSKIT_SPLIT_MIN_BYTES", "0")
    monkeypatch.delenv("HARNESSKIT_SPLIT", raising=False)


def test_the_cut_is_the_line_start_after_the_middle_even_past_a_long_line(tmp_path: Path, cores: None) -> None:
    head = b"h\n"
    long_line = b"x" * 300_000 + b"\n"  # spans the middle: the cut is read on past it in blocks
    path = tmp_path / "f.jsonl"
    path.write_bytes(head + long_line + b"tail\n" * 10)
    with path.open("rb") as fp:
        fp.seek(len(head))
        assert split.split_point(fp, len(head)) == len(head) + len(long_line)
        assert fp.tell() == len(head)  # the file object did not move


def test_the_switches(tmp_path: Path, cores: None, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\n" * 1000)
    with path.open("rb") as fp:
        assert split.split_point(fp, 0) == 1002  # the middle, 1000, starts a line: the next one
        monkeypatch.setenv("HARNESSKIT_SPLIT", "0")
        assert split.split_point(fp, 0) is None
        monkeypatch.delenv("HARNESSKIT_SPLIT")
        monkeypatch.setenv("HARNESSKIT_SPLIT_MIN_BYTES", "2001")  # the file is 2000 bytes
        assert split.split_point(fp, 0) is None
        monkeypatch.setenv("HARNESSKIT_SPLIT_MIN_BYTES", "")  # unset or not a number: the default
        monkeypatch.setattr(split, "SPLIT_MIN_BYTES", 2000)
        assert split.split_point(fp, 0) == 1002  # the middle, 1000, starts a line: the next one


def test_no_cut_when_the_last_line_holds_the_middle(tmp_path: Path, cores: None) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\n" + b"y" * 10_000)  # no newline after the middle
    with path.open("rb") as fp:
        assert split.split_point(fp, 0) is None


@pytest.mark.parametrize("lines", [
    [], [b""], [b"x"], [b"", b""], [b"ab"] * 3000, [b"a" * 2000] * 1500, [b"a" * 700_000] * 3,
    [b"s"] * 31, [b"s"] * 32, [b"s"] * 33, [b"a" * 254] * 64, [b"a" * 256] * 64, [b"a" * 300] * 5000,
    [b"s"] * 5000 + [b"l" * 3000] * 1000, [b"l" * 3000] * 1000 + [b"s"] * 5000,
])
def test_count_newlines_counts_what_count_counts(tmp_path: Path, lines: list[bytes]) -> None:
    """Lines found one by one while they are long, counted once they are short (`newlines`' switch,
    on both sides of it): every split of the work agrees with bytes.count, across the 1 MiB blocks,
    with or without a last newline."""
    for tail in (b"", b"end"):
        data = b"\n".join(lines) + (b"\n" if lines else b"") + tail
        path = tmp_path / "f.jsonl"
        path.write_bytes(data)
        with path.open("rb") as fp:
            for start, stop in ((0, len(data)), (1, len(data) - 1), (len(data) // 3, len(data))):
                assert split.count_newlines(fp.fileno(), start, stop) == data[start:stop].count(b"\n")
