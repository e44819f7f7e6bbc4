"""bytes -> lines -> records (+ diagnostics): the streaming reader of contract §2.

One bad line costs exactly that line. Memory is what the caller keeps: this module holds one line at
a time and never the whole file.
"""

from __future__ import annotations

import errno
import gc
import io
import itertools
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

import orjson

from .format import is_header

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


def line_content(raw: bytes, number: int) -> tuple[bytes, bool]:
    """A raw line's content without its line end (\n or \r\n; a BOM dropped on line 1), and
    whether it ended with a newline: how every reader here cuts a line."""
    terminated = raw.endswith(b"\n")
    content = raw[:-1] if terminated else raw
    if content.endswith(b"\r"):
        content = content[:-1]
    if number == 1 and content.startswith(BOM):
        content = content[3:]
    return content, terminated


def iter_lines(fp: BinaryIO) -> Iterator[tuple[int, int, bytes, bool]]:
    """Yield (line number, byte offset, content without line end, ended with newline)."""
    offset = 0
    for number, raw in enumerate(fp, start=1):
        content, terminated = line_content(raw, number)
        yield number, offset, content, terminated
        offset += len(raw)


_PREADV = hasattr(os, "preadv")

#: the longest line read. A file with a longer one is refused (LineTooLong): a line is held whole,
#: twice while it is cut, so a file with no newline (3 GB of zeros) took 6.4 GB. The limit is pi's
#: own: it reads a whole file into one string, which V8 caps at 512 MiB, so no longer line is a
#: session pi reads (a real one, a tool result or an image, is far shorter).
MAX_LINE = 512 << 20
_NEWLINE = re.compile(b"\n")


class LineTooLong(OSError):
    """A line longer than MAX_LINE: no session file harnesskit reads."""

    def __init__(self, name: object, start: int) -> None:
        super().__init__(errno.EFBIG, f"a line from about byte {max(start, 0):,} runs past "
                                      f"{MAX_LINE >> 20} MiB without a newline: no session file harnesskit reads",
                         name)


def _since_newline(since: int, view: memoryview, n: int, position: int, name: Callable[[], object]) -> int:
    """Bytes since the last newline after `n` more were read into `view` (at most the chunk over: the
    first newline of a chunk is searched for, a pattern search on the buffer itself, no copy); raises
    LineTooLong past MAX_LINE. `position` is where the chunk ends in the file."""
    found = _NEWLINE.search(view, 0, n)
    since = n - found.start() - 1 if found is not None else since + n
    if since > MAX_LINE:
        raise LineTooLong(name(), position - since)
    return since


class _Range(io.RawIOBase):
    """Bytes [start, stop) of a file descriptor, read with pread (the descriptor's offset is untouched);
    a line longer than MAX_LINE is refused as it is read."""

    def __init__(self, fd: int, start: int, stop: int, report: Callable[[int], None] | None = None) -> None:
        self._fd, self._pos, self._stop, self._report = fd, start, stop, report
        self._since = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 - a writable buffer
        n = min(len(buffer), self._stop - self._pos)
        if n <= 0:
            return 0
        if _PREADV:  # straight into the buffer: pread's bytes (a fresh mmap per 128 KiB read) cost a scan 3%
            got = os.preadv(self._fd, (memoryview(buffer)[:n],), self._pos)
        else:
            data = os.pread(self._fd, n, self._pos)
            got = len(data)
            buffer[:got] = data
        self._pos += got
        self._since = _since_newline(self._since, buffer, got, self._pos, self._name)
        if self._report is not None:
            self._report(self._pos)
        return got

    def _name(self) -> object:
        return _name_of(self._fd)


def _name_of(fd: int) -> object:
    """What an error names for a descriptor: its path where the system tells (Linux), else its number."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return f"file descriptor {fd}"


def open_range(fd: int, start: int, stop: int, buffer_size: int = 1 << 17,
               report: Callable[[int], None] | None = None) -> io.BufferedReader:
    """Bytes [start, stop) of an open file as a binary file to iterate (a worker's share of a file).
    The default buffer is larger than io's 8 KiB, which costs a syscall every few lines. `report`
    hears the file position after each read (a progress bar: once per buffer, not per line)."""
    return io.BufferedReader(_Range(fd, start, stop, report), buffer_size)


class _Guarded(io.RawIOBase):
    """A raw file that refuses a line longer than MAX_LINE as it reads, and tells `report` (when given)
    its position after each read; it seeks like the file."""

    def __init__(self, raw: io.RawIOBase, report: Callable[[int], None] | None) -> None:
        self._raw, self._report = raw, report
        # a buffered file (a pipe's, its header read): what it holds first, and no read past what has
        # come (its readinto, and readinto1 with a buffer larger than its own, wait for more: inspect
        # following a FIFO would hold back the lines already written)
        self._read = self._read1 if hasattr(raw, "read1") else raw.readinto
        self._since = 0
        try:
            self._pos = raw.tell()
        except OSError:  # a pipe: positions count from where it was opened
            self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._raw.seekable()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self._pos = self._raw.seek(offset, whence)
        self._since = 0
        return self._pos

    def tell(self) -> int:
        return self._raw.tell()

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        self._raw.close()
        super().close()

    def _read1(self, buffer) -> int:  # noqa: ANN001 - a writable buffer
        data = self._raw.read1(len(buffer))  # type: ignore[attr-defined]
        buffer[:len(data)] = data
        return len(data)

    def _name(self) -> object:
        name = getattr(self._raw, "name", None)
        return name if isinstance(name, str) else _name_of(self._raw.fileno())

    def readinto(self, buffer) -> int | None:  # noqa: ANN001 - a writable buffer
        n = self._read(buffer)
        if n:
            self._pos += n
            self._since = _since_newline(self._since, buffer, n, self._pos, self._name)
            if self._report is not None:
                self._report(self._pos)
        return n


def open_reporting(fd: int, report: Callable[[int], None] | None, buffer_size: int = 1 << 17) -> io.BufferedReader:
    """The open file `fd` (not closed with the result) as a buffered binary file that refuses a line
    longer than MAX_LINE; `report`, when given, hears the position after each buffer read."""
    raw = open(fd, "rb", buffering=0, closefd=False)  # noqa: SIM115 - returned, closed by the caller
    return io.BufferedReader(_Guarded(raw, report), buffer_size)


def open_lines(path: str | os.PathLike[str], buffer_size: int | None = None) -> io.BufferedReader:
    """A session file opened to read its lines: buffered, a line longer than MAX_LINE refused. The
    buffer is `open`'s (the file system's block, 4 KiB here) unless told: most opens read a header or
    a few lines (`list` reads one of every file), and the whole-file readers take a larger one."""
    raw = open(path, "rb", buffering=0)  # noqa: SIM115 - returned, closed by the caller
    if buffer_size is None:  # the block size open() takes, from the stat FileIO made (no second one)
        buffer_size = getattr(raw, "_blksize", 0) or io.DEFAULT_BUFFER_SIZE
    return io.BufferedReader(_Guarded(raw, None), max(buffer_size, 1))


def reporting(fp: BinaryIO, report: Callable[[int], None] | None, buffer_size: int = 1 << 17) -> BinaryIO:
    """`fp` read on from where it stands, a line longer than MAX_LINE refused, `report` hearing the
    position after each buffer read (a progress bar; not for a FIFO, which has no total). Use the
    result, not `fp`, from then on: it reads the same descriptor."""
    if not stat.S_ISREG(os.fstat(fp.fileno()).st_mode):  # a pipe: what `fp` holds read ahead comes first
        return io.BufferedReader(_Guarded(fp, None), buffer_size)  # type: ignore[arg-type]
    wrapped = open_reporting(fp.fileno(), report, buffer_size)
    wrapped.seek(fp.tell())
    return wrapped


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


#: the longest integer read exactly: Python's default int<->str limit, which msgspec (the fast lanes)
#: keeps too. Decimal text to int takes time quadratic in its length, so a longer integer is read as
#: pi's JSON.parse reads every number, as a float (an infinity past 309 digits), in linear time.
MAX_INT_DIGITS = 4300


class NumberTooLong(ValueError):
    """An integer longer than MAX_INT_DIGITS where it must be kept exactly (a rewrite)."""


def read_int(text: str) -> int | float:
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        return float(text)
    return int(text)


def _exact_int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise NumberTooLong(f"an integer of {digits:,} digits (harnesskit keeps up to {MAX_INT_DIGITS:,} exactly)")
    return int(text)


#: the deepest nesting read: orjson's own limit, and the stdlib fallback is held to the same (pi's
#: JSON.parse reads deeper; a deeper line is reported as such, never as "not JSON")
MAX_DEPTH = 1024
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def _deeper_than(text: str, limit: int) -> bool:
    """Whether brackets outside strings nest deeper than `limit` (only asked of a rare line)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return any(map(limit.__lt__, itertools.accumulate(map(_STEP.__getitem__, map(ord, brackets)))))


def parse_line(content: bytes, exact: bool = False, replace: bool = False) -> tuple[object, str | None, str | None]:
    """Parse one line: (value, error code, error reason).

    orjson is the fast path; the stdlib parses what orjson refuses but JSON allows, and `exact`
    (used by migrate, which rewrites files) keeps integers beyond 64 bits that orjson turns to floats
    and refuses one longer than MAX_INT_DIGITS (which it would otherwise rewrite as an infinity).
    `replace` reads bytes that are not UTF-8 as U+FFFD, as pi does (used for the header only).
    Nesting deeper than MAX_DEPTH is refused with that reason on every path.
    """
    if not exact:
        try:
            return orjson.loads(content), None, None
        except orjson.JSONDecodeError:
            pass
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        if not replace:
            return None, "invalid-utf8", f"not UTF-8 (byte {error.start})"
        text = content.decode("utf-8", "replace")
    try:
        value = stdlib_loads(text, _exact_int if exact else read_int)
    except RecursionError:  # deeper than MAX_DEPTH + 100 levels: the limit below leaves that many
        return None, "too-deep", _TOO_DEEP
    except NumberTooLong as error:
        return None, "number-too-long", str(error)
    except ValueError as error:
        return None, "invalid-json", f"not JSON ({error})"
    if text.count("[") + text.count("{") > MAX_DEPTH and _deeper_than(text, MAX_DEPTH):
        return None, "too-deep", _TOO_DEEP  # orjson's rule, whatever the stdlib's own limit is
    return value, None, None


_TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels (harnesskit reads up to {MAX_DEPTH})"


@contextmanager
def room_for_depth() -> Iterator[None]:
    """Recursion room for MAX_DEPTH levels above the caller's stack: the stdlib's C JSON parser and
    encoder (and repr) take one level per nesting, so their limit would otherwise depend on who calls."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + MAX_DEPTH + 100)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def stdlib_loads(text: str | bytes, parse_int: Callable[[str], object] = read_int) -> object:
    """The stdlib's json.loads as the reader uses it: no NaN or Infinity (not JSON), an integer longer
    than MAX_INT_DIGITS as a float (what pi reads), MAX_DEPTH levels of room whoever calls."""
    with room_for_depth():
        return json.loads(text, parse_constant=_reject_constant, parse_int=parse_int)


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
    lines: Iterable[tuple[int, int, bytes, bool]], exact: bool = False, from_start: bool = False
) -> Iterator[Record | Diagnostic]:
    """Turn lines into records and diagnostics; blank lines are skipped silently.

    `from_start`: the lines begin at the file's start, so the first object read is the header. A
    line that is not UTF-8 but is a header when read as pi reads it (each bad byte as U+FFFD) is
    then taken as the header, with a warning: a bad byte costs that line, and the header's line is
    the whole file. Any other line that is not UTF-8 is skipped and reported.

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
            if code == "invalid-utf8" and from_start:
                header, _, _ = parse_line(content, exact, replace=True)
                if isinstance(header, dict) and is_header(header):
                    yield Diagnostic(number, offset, f"header {reason}: read with U+FFFD for the bad bytes, as pi does",
                                     code, "warning")
                    value, code, reason = header, None, None
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
            if from_start and not exact and value.get("version").__class__ is float:
                # orjson reads an integer beyond 64 bits as a float: the header is read again exactly,
                # so a refusal names the version in the file (2**70, not 1.1805916207174113e+21)
                value = parse_line(content, True, replace=True)[0]
                assert isinstance(value, dict)
            from_start = False  # the first object: the header, or no header at all
            yield Record(number, offset, value)
    finally:
        if enabled:
            gc.enable()
