"""The fast paths against the full reader, on damaged copies of the fixtures (issue 6, item 3).

`mutate(seed, ops)` damages a file as crashes, disks and people do (flipped bytes, NULs, cuts,
torn tails, duplicated, reordered and glued lines, CRLF, a BOM, bad UTF-8, deep nesting, lone
surrogates); `disagreements(path)` says where `continue`'s lazy index (one process and split in
two) differs from `load_session`, and where `validate`'s split or reader-only pass differs from its
single fast pass. Shared by tests/unit/test_differential.py (bounded, in `make test`) and
tests/fuzz_differential.py (`make fuzz`, 10,000 cases and more).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from harnesskit.session import check, split
from harnesskit.session.index import load_for_continue
from harnesskit.session.loader import Session, SessionError, load_session
from harnesskit.session.reader import MAX_DEPTH
from harnesskit.session.tree import build_context

ROOT = Path(__file__).resolve().parent.parent
SEEDS = [*sorted((ROOT / "fixtures" / "pi" / "v3").glob("*.jsonl")),
         *sorted((ROOT / "fixtures" / "tutorial").glob("*.jsonl"))]

#: one damage: (kind, a, b) with a and b any non-negative integers (taken modulo what they index)
KINDS = ("flip", "nul", "truncate", "torn", "tail", "duplicate", "swap", "glue", "crlf", "crlf-all", "bom",
         "bad-utf8", "deep", "surrogate", "cut-after-brace", "blank", "header-again")
_BAD_UTF8 = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82", b"\xc0\xaf", b"\xf4\x90\x80\x80")
_DEPTHS = (1023, 1024, 1025, 3000)


def mutate(data: bytes, ops: Sequence[tuple[str, int, int]]) -> bytes:
    """`data` with each damage of `ops` applied in turn (an op that does not apply changes nothing)."""
    for kind, a, b in ops:
        data = _apply(data, kind, a, b)
    return data


def _apply(data: bytes, kind: str, a: int, b: int) -> bytes:
    lines = data.splitlines(keepends=True)
    if not data or not lines:
        return data
    pos = a % len(data)
    i = a % len(lines)
    line = lines[i]
    if kind == "flip":
        return data[:pos] + bytes([data[pos] ^ (1 << (b % 8))]) + data[pos + 1:]
    if kind == "nul":
        return data[:pos] + b"\x00" + data[pos + 1:]
    if kind == "truncate":
        return data[:pos]
    if kind == "torn":  # a write torn inside a line, the line then ended with a newline (harnesskit's writer)
        lines[i] = line[: b % len(line)] + b"\n"
    elif kind == "tail":  # the last line torn, no newline
        lines[-1] = lines[-1][: b % len(lines[-1])]
    elif kind == "duplicate":
        lines.insert(b % (len(lines) + 1), line)
    elif kind == "swap":
        j = b % len(lines)
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "glue":  # pi appended after a line without its newline
        lines[i] = line.rstrip(b"\r\n")
    elif kind == "crlf":
        lines[i] = line.rstrip(b"\r\n") + b"\r\n"
    elif kind == "crlf-all":
        lines = [x.rstrip(b"\r\n") + b"\r\n" for x in lines]
    elif kind == "bom":
        return b"\xef\xbb\xbf" + data
    elif kind == "bad-utf8":
        return data[:pos] + _BAD_UTF8[b % len(_BAD_UTF8)] + data[pos:]
    elif kind in ("deep", "surrogate"):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or already too deep for the stdlib
            return data
        if not isinstance(obj, dict):
            return data
        depth = _DEPTHS[b % len(_DEPTHS)] - 1  # the entry's own braces are one level
        value = b"[" * depth + b"]" * depth if kind == "deep" else b'"\\ud800"'  # a lone surrogate: valid JSON
        body = json.dumps(obj, separators=(",", ":")).encode()
        if body == b"{}":
            return data
        lines[i] = body[:-1] + b',"x":' + value + b"}\n"
    elif kind == "cut-after-brace":  # torn right after an inner "}", then ended with a newline
        cut = line.rfind(b"}", 0, max(0, len(line) - 3))
        if cut <= 0:
            return data
        lines[i] = line[: cut + 1] + b"\n"
    elif kind == "blank":
        lines.insert(i, b"  \n" if b % 2 else b"\n")
    elif kind == "header-again":
        lines.insert(i, lines[0])
    else:
        raise ValueError(kind)
    return b"".join(lines)


@contextmanager
def forced_split() -> Iterator[None]:
    """Index and check even a small file in two processes, as tests/test_check_split.py does."""
    with mock.patch.object(split, "SPLIT_MIN_BYTES", 0):
        yield


def continue_view(path: Path, loader) -> object:  # noqa: ANN001 - load_session or load_for_continue
    """Everything `continue` restores, in comparable form (or the one-line error)."""
    try:
        session: Session = loader(path)
    except SessionError as error:
        return ("refused", str(error))
    try:
        tree = session.tree
        diagnostics = [(d.line, d.code, d.reason, d.severity) for d in session.diagnostics]
        context = build_context(tree)
        return {
            "diagnostics": diagnostics,
            "context": context,
            "leaf": tree.leaf_id,
            "labels": tree.labels(),
            "name": tree.name(),
            "header": session.header,
            "lines": list(tree.lines),
            "entries": list(tree.entries),  # what /tree and inspect read: every entry decodes
        }
    finally:
        close = getattr(session, "close", None)
        if close is not None:
            close()


def check_view(path: Path, mode: str) -> tuple:
    with mock.patch.object(check, "_TYPED_MIN_BYTES", 0):  # the msgspec lane even on small files
        return _check_view(path, mode)


def _check_view(path: Path, mode: str) -> tuple:
    if mode == "reader":
        with mock.patch.object(check, "_FAST", False):
            report = check.check_file(path, workers=1)
    elif mode == "orjson":
        with mock.patch.object(check, "_TYPED", False):
            report = check.check_file(path, workers=1)
    elif mode == "split":
        with forced_split():
            report = check.check_file(path, workers=2)
    else:
        report = check.check_file(path, workers=1)
    return report.entries, report.dialect, [p.as_dict() for p in report.problems]


def disagreements(path: Path) -> list[str]:
    """What differs between the fast paths and the full reader on this file (empty: all agree).
    Anything raised other than SessionError is a crash and propagates."""
    with _room_to_compare():
        return _disagreements(path)


@contextmanager
def _room_to_compare() -> Iterator[None]:
    """Comparing entries nested MAX_DEPTH deep recurses that deep (Python's == has no other way)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 3 * MAX_DEPTH))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def _disagreements(path: Path) -> list[str]:
    out = []
    full = continue_view(path, load_session)
    if continue_view(path, load_for_continue) != full:
        out.append("continue (one process) != load_session")
    with forced_split():
        if continue_view(path, load_for_continue) != full:
            out.append("continue (two processes) != load_session")
    single = check_view(path, "fast")
    if check_view(path, "split") != single:
        out.append("validate split != single pass")
    if check_view(path, "reader") != single:
        out.append("validate reader-only != single pass")
    if check_view(path, "orjson") != single:
        out.append("validate without msgspec != single pass")
    return out


def damages():  # noqa: ANN201 (a hypothesis strategy; imported here only by the tests that draw from it)
    """One to three damages of `mutate` (a kind and two offsets), the draw the split and lane tests share."""
    from hypothesis import strategies as st

    return st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 1 << 20), st.integers(0, 1 << 20)),
                    min_size=1, max_size=3)
