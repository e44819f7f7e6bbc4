"""A session read entry by entry, in the memory of one line: what the full reader sees, in order.

`open_stream(path)` reads up to the header (so a refused file fails before anything is shown) and
returns a `Stream` whose `items()` yields the reader's diagnostics and the migrated entries exactly as
`load_session` collects them, without keeping them. `TreeWatch` notices, with one small int or string
per entry, whether the tree has anything to report (a duplicate id, a parentId that is not an earlier
entry's id); only then `tree_diagnostics` reads the file again for the full reader's tree diagnostics.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

import orjson

from .format import is_header
from .loader import accept_header, no_header, open_binary
from .migrate import Dialect, Migrator, migrate_header
from .reader import Diagnostic, Record, line_content, open_range, read_records, reporting
from .tree import Tree

__all__ = ["Stream", "TreeWatch", "open_stream", "read_header", "tree_diagnostics"]


def read_header(fp: BinaryIO, path: Path) -> tuple[Record, Dialect, list[Diagnostic], int]:
    """Read `fp` up to its header line, and no further: (header, dialect, diagnostics before it, the
    offset of the next line). Raises SessionError as `load_session` does (no header, not a header
    first, a version too new)."""
    diagnostics: list[Diagnostic] = []
    offset = 0
    for number, raw in enumerate(iter(fp.readline, b""), 1):  # readline: the file stops after the header
        content, terminated = line_content(raw, number)
        for item in read_records(((number, offset, content, terminated),), from_start=True):  # no object yet
            if isinstance(item, Diagnostic):
                diagnostics.append(item)
            else:
                return item, accept_header(path, item), diagnostics, offset + len(raw)
        offset += len(raw)
    raise no_header(path, os.fstat(fp.fileno()).st_size, diagnostics)


@dataclass
class Stream:
    path: Path
    header: dict  # the v3 form
    header_record: Record
    dialect: Dialect
    size: int  # bytes, when opened
    _fp: BinaryIO
    _before: list[Diagnostic]
    _next_line: int  # the number of the line after the header
    _offset: int  # and its offset (a FIFO cannot tell)

    def items(self, watch: TreeWatch | None = None,
              take: Callable[[bytes, int], bool] | None = None) -> Iterator[tuple[int, dict, bytes] | Diagnostic]:
        """(line number, v3 entry, the line's bytes) or a Diagnostic, in file order; closes the file
        when done. A line that parses into an entry at once is taken here; every other line goes
        through the reader, for exactly its diagnostics. `watch` sees every entry's id and parentId
        (done here, in the loop: a call per entry would cost a tenth of the read). `take(line, number)`
        is offered each whole line first (a caller's faster decoder): a line it counts itself (True)
        is neither parsed nor yielded nor watched."""
        try:
            yield from self._before
            migrator = Migrator(self.header_record.obj, self.dialect) if self.dialect.legacy else None
            loads, decode_error = orjson.loads, orjson.JSONDecodeError
            fp = self._fp
            offset = self._offset
            seen = watch._seen if watch is not None else set()
            remember, last, suspect = seen.add, None, False
            outside = watch.outside if watch is not None else None
            number = self._next_line - 1
            fast = self.fast if migrator is None else None
            lane, later = (fast, None) if take is None else (None, fast)  # (`take` is offered a line first)
            for number, raw in enumerate(fp, self._next_line):
                entry = None
                if lane is not None and raw[-1] == 10:  # the lane first, in few steps: most lines of a v3 file
                    content = raw[:-1]
                    if content[-1:] == b"\r":
                        content = content[:-1]
                    entry = lane(content)
                    if entry is not None:  # (entry_id, parent, ...) of a line `fast` proved an entry
                        entry_id, parent = entry[0], entry[1]
                if entry is None:  # (a line the lane refused, or every line without one)
                    size = len(raw)
                    if take is not None and raw[-1] == 10 and take(raw, number):
                        offset += size
                        continue
                    terminated = raw[-1:] == b"\n"
                    content = raw[:-1] if terminated else raw
                    if content[-1:] == b"\r":
                        content = content[:-1]
                    row = later(content) if later is not None and terminated else None
                    if row is not None:
                        entry, entry_id, parent = row, row[0], row[1]
                    else:
                        try:
                            value = loads(content) if terminated else None  # the reader warns of a missing newline
                        except decode_error:
                            value = None
                        kind = value.get("type") if type(value) is dict else None
                        if type(kind) is str and kind != "session" and kind != "header":  # (else maybe a header)
                            entry = value if migrator is None else migrator.entry(value, number)
                            entry_id, parent = entry.get("id"), entry.get("parentId")
                if entry is not None:
                    offset += len(raw)
                    if watch is not None:  # TreeWatch.add, inline
                        if parent is not None and (parent != last or type(parent) is not str) and \
                                type(parent) is str and _key(parent) not in seen:
                            if outside is None:
                                suspect = watch.suspect = True
                            else:  # maybe an id of an earlier block, which another process read
                                outside.append(_key(parent))
                        if type(entry_id) is str:
                            key = int(entry_id, 16) if len(entry_id) == 8 and not entry_id.strip(_HEX) else entry_id
                            if not suspect and key in seen:
                                suspect = watch.suspect = True
                            remember(key)
                            last = entry_id
                        else:
                            last = None
                    yield number, entry, content
                    continue
                for item in self._reread(number, offset, content, terminated, migrator):
                    if watch is not None and type(item) is not Diagnostic:
                        entry = item[1]  # type: ignore[index]
                        watch._last = last
                        watch.add(entry.get("id"), entry.get("parentId"))
                        last, suspect = watch._last, watch.suspect
                    yield item
                offset += size
            self._next_line = number + 1  # read to the end: the number the next line would have
        finally:
            self.close()

    def _reread(self, number: int, offset: int, content: bytes, terminated: bool,
                migrator: Migrator | None) -> Iterator[tuple[int, dict, bytes] | Diagnostic]:
        """One line (its content without the line end) through the reader: what `items` yields for a line
        it could not take at once, diagnostics included."""
        for item in read_records(((number, offset, content, terminated),)):
            if isinstance(item, Diagnostic):
                yield item
            elif is_header(item.obj):
                yield Diagnostic(item.line, item.offset, f"a second header (first on line {self.header_record.line}); "
                                 "ignored", "extra-header")
            else:
                yield number, item.obj if migrator is None else migrator.entry(item.obj, number), content

    def exact(self, number: int, offset: int, content: bytes, terminated: bool = True
              ) -> Iterator[tuple[int, dict, bytes] | Diagnostic]:
        """What `items` yields for one line of a v3 file (its bytes, with or without the newline that
        `terminated` says it has), for a caller that reads the lines itself (`blocks`) and takes most of
        them its own faster way."""
        if terminated:
            content = content[:-1]
        if content[-1:] == b"\r":
            content = content[:-1]
        return self._reread(number, offset, content, terminated, None)

    def blocks(self, size: int = 1 << 20) -> Iterator[tuple[int, int, list[bytes], bool]]:
        """The lines after the header (`items`' lines, unparsed), about `size` bytes at a time: (the number
        of the first line, its offset, the lines with their newlines, whether they have them). Only the
        last line of the file may lack its newline: it comes alone, last. The diagnostics before the
        header are `before`. Closes the file when done; then `next_line` is set, as after `items`."""
        try:
            read = self._fp.read
            number, offset = self._next_line, self._offset
            rest: list[bytes] = []  # the start of the next line: pieces joined once, however long the line
            while data := read(size):
                lines = list(io.BytesIO(data))  # (found with memchr: bytes.split looks at every byte in a loop)
                if lines[-1][-1:] != b"\n":
                    rest.append(lines.pop())
                    if not lines:  # no line ends in this block
                        continue
                    tail = rest.pop()
                else:
                    tail = None
                if rest:
                    lines[0] = b"".join([*rest, lines[0]])
                    rest.clear()
                if tail is not None:
                    rest.append(tail)
                yield number, offset, lines, True
                number += len(lines)
                offset += sum(map(len, lines))
            if rest:
                yield number, offset, [b"".join(rest)], False
                number += 1
            self._next_line = number
        finally:
            self.close()

    @property
    def before(self) -> list[Diagnostic]:
        """The diagnostics of the lines before the header (yielded first by `items`)."""
        return self._before

    def part(self, start: int, stop: int, first_line: int, with_before: bool = False) -> Stream:
        """The lines in bytes [start, stop) of this stream's file (both at line starts), numbered from
        `first_line`: a process's share of a file it reads in two. Only the first part (`with_before`)
        yields the diagnostics before the header; progress is reported as positions in the file."""
        fp = open_range(self._fp.fileno(), start, stop, 1 << 17, self.on_progress)
        return replace(self, _fp=fp, _before=self._before if with_before else [], _next_line=first_line,
                       _offset=start, _also=None)

    def first_of_two(self, cut: int) -> Stream:
        """This stream for the first of two processes (the other reads from `cut` on, at about the
        same pace): its progress reported as if it read the whole file."""
        if self.on_progress is None:
            return self
        report, start = self.on_progress, self._offset
        scale = (self.size - start) / max(cut - start, 1)
        return replace(self, on_progress=lambda position: report(start + int((position - start) * scale)))

    @property
    def next_line(self) -> int:
        """After `items` ran to the end: the number of the line after the last."""
        return self._next_line

    _also: BinaryIO | None = None  # the file `_fp` reads through, when it reports progress
    on_progress: Callable[[int], None] | None = None  # hears the position in the file
    #: a cheaper reading of a v3 line, or None for the exact one: a tuple (id, parentId, ...) that `items`
    #: yields in place of the entry, only for a line the exact reading takes as an entry with that id
    #: and parentId and no diagnostic (a caller's lane, held to the exact path by its own tests)
    fast: Callable[[bytes], tuple | None] | None = None

    def close(self) -> None:
        self._fp.close()
        if self._also is not None:
            self._also.close()


def open_stream(path: str | os.PathLike[str], on_progress: Callable[[int], None] | None = None) -> Stream:
    """Open a session to read entry by entry (see the module doc). Raises SessionError. `on_progress`
    hears how many bytes have been read (about every 128 KiB)."""
    p = Path(path)
    fp = open_binary(p)
    try:
        header, dialect, before, offset = read_header(fp, p)
        size = os.fstat(fp.fileno()).st_size
        rest = reporting(fp, on_progress)
    except BaseException:
        fp.close()
        raise
    stream = Stream(p, migrate_header(header.obj, dialect), header, dialect, size, rest, before, header.line + 1,
                    offset)
    if rest is not fp:
        stream._also = fp
    stream.on_progress = on_progress
    return stream


class TreeWatch:
    """Whether the tree of a streamed session has a diagnostic, decided without keeping the entries:
    with every parentId naming an earlier entry and no id twice, there is no duplicate, no dangling
    parentId and no cycle (every link points back). `absorb` adds a later block's watch."""

    def __init__(self, block: bool = False) -> None:
        self._seen: set[int | str] = set()
        self._last: object = None
        self.suspect = False
        # a block of a file read by two processes: a parentId not seen in it is kept here for the
        # merge to look up among the earlier blocks' ids (`suspect` then means a duplicate id)
        self.outside: list[int | str] | None = [] if block else None

    def add(self, entry_id: object, parent: object) -> None:
        seen = self._seen
        if parent is not None and (parent != self._last or type(parent) is not str):
            if type(parent) is str and _key(parent) not in seen:  # (a non-string parentId is a root's)
                if self.outside is None:
                    self.suspect = True
                else:
                    self.outside.append(_key(parent))
        if type(entry_id) is str:
            key = _key(entry_id)
            if key in seen:
                self.suspect = True
            seen.add(key)
            self._last = entry_id
        else:
            self._last = None


    def absorb(self, block: TreeWatch) -> None:
        """The block that follows everything seen so far (watched with `TreeWatch(block=True)`)."""
        seen = self._seen
        if block.suspect or not seen.isdisjoint(block._seen) or any(k not in seen for k in block.outside or ()):
            self.suspect = True
        seen |= block._seen


_HEX = "0123456789abcdef"


def _key(entry_id: str) -> int | str:
    """pi's 8-hex ids as ints: a set of a million of them takes half the memory of the strings."""
    if len(entry_id) == 8 and not entry_id.strip(_HEX):
        return int(entry_id, 16)  # one-to-one on these ids; every other id stays a string
    return entry_id


def tree_diagnostics(path: str | os.PathLike[str]) -> list[Diagnostic]:
    """The tree diagnostics `load_session` reports (duplicates, dangling parentIds, cycles), from a
    second pass that keeps only the id, parent and type columns."""
    stream = open_stream(path)
    ids: list[str | None] = []
    parents: list[str | None] = []
    types: list[str] = []
    lines: list[int] = []
    for item in stream.items():
        if isinstance(item, Diagnostic):
            continue
        line, entry, _ = item
        entry_id, parent = entry.get("id"), entry.get("parentId")
        ids.append(entry_id if isinstance(entry_id, str) else None)
        parents.append(parent if isinstance(parent, str) else None)
        types.append(entry["type"])
        lines.append(line)
    return Tree.from_columns(ids, parents, types, lines, []).diagnostics

