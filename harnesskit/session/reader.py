"""bytes -> lines -> records (+ diagnostics): the streaming reader of contract §2.

One bad line costs exactly that line. Memory is what the caller keeps: this module holds one line at
a time and never the whole file.
"""

from __future__ import annotations

import gc
import io
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import orjson

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A line we could not use (or a remark about one), with where it is."""

    line: int
    offset: int
    reason: str
    code: str
    severity: str = "error"  # "error" or "warning"


@dataclass(slots=True)
class Record:
    """One parsed JSON object and where it came from."""

    line: int
    offset: int
    obj: dict


def iter_lines(fp: BinaryIO) -> Iterator[tuple[int, int, bytes, bool]]:
    """Yield (line number, byte offset, content without line end, ended with newline)."""
    offset = 0
    for number, raw in enumerate(fp, start=1):
        size = len(raw)
        terminated = raw.endswith(b"\n")
        content = raw[:-1] if terminated else raw
        if content.endswith(b"\r"):
            content = content[:-1]
        if number == 1 and content.startswith(BOM):
            content = content[3:]
        yield number, offset, content, terminated
        offset += size


class _Range(io.RawIOBase):
    """Bytes [start, stop) of a file descriptor, read with pread (the descriptor's offset is untouched)."""

    def __init__(self, fd: int, start: int, stop: int) -> None:
        self._fd, self._pos, self._stop = fd, start, stop

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 - a writable buffer
        n = min(len(buffer), self._stop - self._pos)
        if n <= 0:
            return 0
        data = os.pread(self._fd, n, self._pos)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


def open_range(fd: int, start: int, stop: int, buffer_size: int = 1 << 17) -> io.BufferedReader:
    """Bytes [start, stop) of an open file as a binary file to iterate (a worker's share of a file).
    The default buffer is larger than io's 8 KiB, which costs a syscall every few lines."""
    return io.BufferedReader(_Range(fd, start, stop), buffer_size)


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def parse_line(content: bytes, exact: bool = False) -> tuple[object, str | None, str | None]:
    """Parse one line: (value, error code, error reason).

    orjson is the fast path; the stdlib parses what orjson refuses but JSON allows, and `exact`
    (used by migrate, which rewrites files) keeps integers beyond 64 bits that orjson turns to floats.
    """
    if not exact:
        try:
            return orjson.loads(content), None, None
        except orjson.JSONDecodeError:
            pass
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, "invalid-utf8", f"not UTF-8 (byte {error.start})"
    try:
        return json.loads(text, parse_constant=_reject_constant), None, None
    except RecursionError:
        return None, "invalid-json", "not JSON (nested too deeply)"
    except ValueError as error:
        return None, "invalid-json", f"not JSON ({error})"


def classify(value: object) -> tuple[str, str] | None:
    """Why a parsed value is not an entry, or None when it is a usable object."""
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        kind = {"str": "string", "int": "number", "float": "number", "list": "array", "bool": "boolean"}.get(
            kind, kind
        )
        return "not-object", f"a JSON {kind}, not an object"
    if not isinstance(value.get("type"), str):
        return "no-type", "object without a string 'type'"
    return None


def read_records(
    lines: Iterable[tuple[int, int, bytes, bool]], exact: bool = False
) -> Iterator[Record | Diagnostic]:
    """Turn lines into records and diagnostics; blank lines are skipped silently.

    The cyclic GC is paused while this runs (and restored when it ends or is closed): a caller that
    keeps a million records would otherwise spend most of its time in collections that find nothing,
    since parsed JSON holds no reference cycles.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        for number, offset, content, terminated in lines:
            if not content or content.isspace():  # blank (what `not content.strip()` says, without a copy)
                if not terminated and content:
                    yield Diagnostic(number, offset, "truncated last line (no newline)", "truncated")
                continue
            value, code, reason = parse_line(content, exact)
            if code is None:
                problem = classify(value)
                if problem is not None:
                    code, reason = problem
            if code is not None:
                if not terminated:
                    yield Diagnostic(number, offset, f"truncated last line ({reason})", "truncated")
                else:
                    yield Diagnostic(number, offset, reason or code, code)
                continue
            if not terminated:
                yield Diagnostic(number, offset, "last line has no newline", "no-final-newline", "warning")
            assert isinstance(value, dict)
            yield Record(number, offset, value)
    finally:
        if enabled:
            gc.enable()
