"""The streaming reader (contract §2): line ends, BOM, blank lines, torn and unreadable lines."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from harnesskit.session.loader import SessionError, load_session
from harnesskit.session.reader import Diagnostic, Record, iter_lines, parse_line, read_records

HEADER = {"type": "session", "version": 3, "id": "0190a0a0-0000-7000-8000-000000000000",
          "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp/x"}


def entry(entry_id: str, parent: str | None, text: str = "hi") -> dict:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1767225601000}}


def line(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


def read(data: bytes) -> list[Record | Diagnostic]:
    return list(read_records(iter_lines(io.BytesIO(data))))


def records(items: list[Record | Diagnostic]) -> list[Record]:
    return [i for i in items if isinstance(i, Record)]


def diagnostics(items: list[Record | Diagnostic]) -> list[Diagnostic]:
    return [i for i in items if isinstance(i, Diagnostic)]


def test_lf_lines_with_offsets() -> None:
    a, b = line(HEADER), line(entry("aaaa0001", None))
    items = read(a + b)
    assert diagnostics(items) == []
    assert [(r.line, r.offset) for r in records(items)] == [(1, 0), (2, len(a))]
    assert records(items)[1].obj == entry("aaaa0001", None)


def test_crlf_line_ends() -> None:
    data = (line(HEADER) + line(entry("aaaa0001", None)) + line(entry("aaaa0002", "aaaa0001"))).replace(
        b"\n", b"\r\n"
    )
    items = read(data)
    assert diagnostics(items) == []
    assert [r.obj for r in records(items)] == [HEADER, entry("aaaa0001", None), entry("aaaa0002", "aaaa0001")]
    # the offsets count the \r bytes too
    first = len(line(HEADER)) + 1
    assert records(items)[1].offset == first


def test_utf8_bom_on_first_line() -> None:
    items = read(b"\xef\xbb\xbf" + line(HEADER) + line(entry("aaaa0001", None)))
    assert diagnostics(items) == []
    assert records(items)[0].obj == HEADER
    # a BOM anywhere but the first line is not stripped: that line is not JSON
    items = read(line(HEADER) + b"\xef\xbb\xbf" + line(entry("aaaa0001", None)))
    assert [d.line for d in diagnostics(items)] == [2]


def test_blank_lines_are_skipped_silently() -> None:
    data = b"\n" + line(HEADER) + b"\n   \n\r\n\t\n" + line(entry("aaaa0001", None)) + b"\n"
    items = read(data)
    assert diagnostics(items) == []
    assert [r.line for r in records(items)] == [2, 7]


def test_torn_last_line_is_a_diagnostic_and_costs_only_itself() -> None:
    good = line(HEADER) + line(entry("aaaa0001", None))
    torn = b'{"type":"message","id":"aaaa0002","par'
    items = read(good + torn)
    assert len(records(items)) == 2
    (d,) = diagnostics(items)
    assert (d.line, d.offset, d.code, d.severity) == (3, len(good), "truncated", "error")
    assert "truncated" in d.reason


def test_complete_last_line_without_newline_is_kept_with_a_warning() -> None:
    data = line(HEADER) + line(entry("aaaa0001", None)).rstrip(b"\n")
    items = read(data)
    assert [r.obj["id"] for r in records(items)] == [HEADER["id"], "aaaa0001"]
    (d,) = diagnostics(items)
    assert d.line == 2 and d.severity == "warning"


def test_invalid_utf8_line_is_skipped_with_its_line_and_offset() -> None:
    a, b = line(HEADER), line(entry("aaaa0001", None))
    bad = b'{"type":"message","id":"bad\xff\xfe"}\n'
    items = read(a + b + bad + line(entry("aaaa0003", "aaaa0001")))
    assert [r.obj["id"] for r in records(items)] == [HEADER["id"], "aaaa0001", "aaaa0003"]
    (d,) = diagnostics(items)
    assert (d.line, d.offset, d.code) == (3, len(a) + len(b), "invalid-utf8")
    assert "UTF-8" in d.reason


@pytest.mark.parametrize(
    ("raw", "code", "word"),
    [
        (b"null", "not-object", "null"),
        (b"[1, 2, 3]", "not-object", "array"),
        (b"42", "not-object", "number"),
        (b"-1.5e3", "not-object", "number"),
        (b'"a string"', "not-object", "string"),
        (b"true", "not-object", "boolean"),
        (b'{"id": "x", "parentId": null}', "no-type", "type"),
        (b'{"type": 7, "id": "x"}', "no-type", "type"),
        (b"{not json", "invalid-json", "JSON"),
        (b'{"type":"x","n":NaN}', "invalid-json", "JSON"),
    ],
)
def test_values_that_are_not_entries(raw: bytes, code: str, word: str) -> None:
    items = read(line(HEADER) + raw + b"\n" + line(entry("aaaa0001", None)))
    assert [r.line for r in records(items)] == [1, 3]
    (d,) = diagnostics(items)
    assert (d.line, d.code, d.severity) == (2, code, "error")
    assert word in d.reason


def test_deeply_nested_line_is_a_diagnostic_not_a_crash() -> None:
    deep = b'{"type":"custom","data":' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    items = read(line(HEADER) + deep + b"\n" + line(entry("aaaa0001", None)))
    assert [r.line for r in records(items)] == [1, 3]
    assert [d.line for d in diagnostics(items)] == [2]


def test_fifty_megabyte_line(tmp_path: Path) -> None:
    size = 50 * 1024 * 1024
    big = entry("bbbb0001", None, "x" * size)
    path = tmp_path / "big.jsonl"
    with path.open("wb") as fp:
        fp.write(line(HEADER))
        fp.write(line(big))
        fp.write(line(entry("bbbb0002", "bbbb0001", "after")))
    assert path.stat().st_size > size
    session = load_session(path)
    assert session.diagnostics == []
    assert [e["id"] for e in session.entries] == ["bbbb0001", "bbbb0002"]
    assert len(session.entries[0]["message"]["content"][0]["text"]) == size
    assert session.entries[1]["message"]["content"][0]["text"] == "after"
    assert session.lines == [2, 3]


def test_big_integers() -> None:
    n = 123456789012345678901234567890
    raw = b'{"type":"custom","id":"cccc0001","parentId":null,"data":{"n":%d,"m":-%d}}' % (n, n)
    value, code, _ = parse_line(raw, exact=True)
    assert code is None
    assert value["data"] == {"n": n, "m": -n}
    assert type(value["data"]["n"]) is int
    # the fast path still reads the line (as a float: JSON does not promise more)
    value, code, _ = parse_line(raw)
    assert code is None and value["id"] == "cccc0001"
    assert value["data"]["n"] == pytest.approx(float(n))
    # integers that fit in 64 bits are exact on the fast path too
    value, _, _ = parse_line(b'{"type":"x","a":18446744073709551615,"b":-9223372036854775808}')
    assert value == {"type": "x", "a": 18446744073709551615, "b": -9223372036854775808}


def test_big_integers_survive_exact_load(tmp_path: Path) -> None:
    n = 2**100 + 7
    path = tmp_path / "s.jsonl"
    path.write_bytes(line(HEADER) + b'{"type":"custom","id":"cccc0001","parentId":null,"customType":"t",'
                     b'"data":{"n":%d}}\n' % n)
    assert load_session(path, exact=True).entries[0]["data"]["n"] == n


def test_reader_is_lazy() -> None:
    """A generator over the lines: the first record arrives before the rest is read."""

    class Endless(io.RawIOBase):
        def __init__(self) -> None:
            self.served = 0

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:  # noqa: ANN001
            chunk = line(entry(f"e{self.served:07d}", None))
            self.served += 1
            n = min(len(b), len(chunk))
            b[:n] = chunk[:n]
            return n

    stream = io.BufferedReader(Endless(), buffer_size=1 << 12)
    gen = read_records(iter_lines(stream))
    first = next(gen)
    assert isinstance(first, Record)
    assert stream.raw.served < 1000


def test_load_session_reports_skipped_lines_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        b"not json at all\n"
        + line(HEADER)
        + line(entry("aaaa0001", None))
        + b"null\n"
        + b'{"type":"message","x":"\xc3\x28"}\n'
        + line(entry("aaaa0002", "aaaa0001"))
        + b'{"type":"mess'
    )
    session = load_session(path)
    assert session.header_line == 2
    assert [e["id"] for e in session.entries] == ["aaaa0001", "aaaa0002"]
    assert session.lines == [3, 6]
    assert [d.line for d in session.diagnostics] == [1, 4, 5, 7]
    assert session.ends_with_newline is False


def test_load_session_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(SessionError, match="empty"):
        load_session(empty)
    with pytest.raises(SessionError, match="no such file"):
        load_session(tmp_path / "missing.jsonl")
    with pytest.raises(SessionError, match="directory"):
        load_session(tmp_path)
    headless = tmp_path / "headless.jsonl"
    headless.write_bytes(line(entry("aaaa0001", None)))
    before = headless.read_bytes()
    with pytest.raises(SessionError, match="header"):
        load_session(headless)
    assert headless.read_bytes() == before  # read-only: pi would have overwritten it
