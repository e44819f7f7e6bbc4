"""reader.open_range: a worker's share [start, stop) of a file, read by preadv into the buffer (or pread)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnesskit.session import reader


@pytest.mark.parametrize("preadv", [True, False])
@pytest.mark.parametrize("buffer_size", [7, 1 << 17])
def test_the_range_reads_exactly_its_lines_and_reports_positions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preadv: bool, buffer_size: int) -> None:
    if preadv and not hasattr(reader.os, "preadv"):
        pytest.skip("no os.preadv on this platform")
    monkeypatch.setattr(reader, "_PREADV", preadv)
    lines = [b'{"n":%d,"pad":"%s"}\n' % (i, b"x" * (i * 37 % 300)) for i in range(2000)]
    data = b"".join(lines)
    path = tmp_path / "f.jsonl"
    path.write_bytes(data)
    start = len(lines[0]) + len(lines[1])
    stop = len(data) - len(lines[-1]) - 5  # ends inside the last line but one
    heard: list[int] = []
    with path.open("rb") as fp:
        fp.seek(3)
        with reader.open_range(fp.fileno(), start, stop, buffer_size, heard.append) as part:
            got = list(part)
        assert fp.tell() == 3  # the descriptor's own offset did not move
    assert b"".join(got) == data[start:stop]
    assert got[:-1] == lines[2:-2] and got[-1] == lines[-2][:-5]
    assert heard == sorted(heard) and heard[-1] == stop
