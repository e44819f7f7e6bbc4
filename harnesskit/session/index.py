"""Open a big session for `continue` without decoding it: index every line, decode only what the
context needs.

`load_index(path)` returns a `loader.Session` (a `LazySession`) whose tree is a real `tree.Tree`:

* **eager**: the header; per entry its type, id, parentId, line number and byte offset (so the tree
  index, the leaf, the path walk, duplicate/dangling/cycle diagnostics and `build_context`'s
  bookkeeping all work as after `load_session`); every diagnostic of a line the fast path does not
  take (below).
* **lazy**: entry contents. `session.entries[pos]` (and so `tree.entries[pos]`) seeks to the line,
  parses it with the reader's parser and checks it against its index row; decoded entries are cached.
  `build_context(tree)` then decodes only the path entries it reads: after a compaction, a few
  hundred, not the whole history. `tree.labels()` and `tree.name()` decode the label and
  session_info entries.

The fast path parses every line with orjson (the reader's own first parser) and keeps only its
type, id and parentId: a line it takes is one the reader takes, so no damage inside a line (a flipped
byte, a NUL, a write torn after a `}`) can pass for an entry, and every diagnostic is the reader's.
Every other line (what orjson refuses, blank lines, headers, a last line without a newline) is
handed to the reader itself. A big file is indexed in two processes (a forked worker takes the
second half and sends its columns back as joined strings). Legacy dialects (pi v1/v2, tutorial) are
loaded by `load_session` (their migration needs every entry).

A `LazyDecodeError` therefore means the file changed after it was indexed; `load_for_continue`
answers it by loading the file in full.
"""

from __future__ import annotations

import gc
import itertools
import operator
import os
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from .format import is_header
from .formats import sniff
from .loader import Session, SessionError, accept_header, load_session, no_header, open_binary
from .migrate import Dialect
from .reader import (
    Diagnostic,
    Record,
    classify,
    iter_lines,
    open_lines,
    open_range,
    open_reporting,
    parse_line,
    read_records,
)
from .split import fork_worker, reap, split_point
from .tree import Tree, build_context

__all__ = ["LazyDecodeError", "LazyEntries", "LazySession", "load_for_continue", "load_index"]

_CACHE_LIMIT = 100_000  # decoded entries kept per session
#: v3 files with at least this many bytes after the header are indexed in two processes (two cores)
_BUFFER = 1 << 17  # read buffer: the default 8 KiB makes a syscall every few lines


class LazyDecodeError(SessionError):
    """An indexed line that no longer decodes to the entry the index saw: the file changed."""


class LazyEntries(Sequence):
    """The entries of an indexed session, read from the file when asked for (see the module doc)."""

    def __init__(self, path: Path, offsets: Sequence[int], ids: list[str | None], parents: list[str | None],
                 types: list[str], lines: list[int]) -> None:
        self.path = path
        self._offsets = offsets
        self._ids, self._parents, self._types, self._lines = ids, parents, types, lines
        self._n = len(offsets)  # entries appended later (a live chat) live in tree.py's _Extended
        self._cache: dict[int, dict] = {}
        self._fp = None
        self.cache_limit = _CACHE_LIMIT  # 0: decode every time (a scan of every entry keeps none)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, pos):  # noqa: ANN001, ANN204 - Sequence protocol
        if isinstance(pos, slice):
            return [self[i] for i in range(*pos.indices(self._n))]
        if pos < 0:
            pos += self._n
        if not 0 <= pos < self._n:
            raise IndexError("entry index out of range")
        entry = self._cache.get(pos)
        if entry is None:
            entry = self._decode(pos)
            if len(self._cache) < self.cache_limit:
                self._cache[pos] = entry
        return entry

    def decode_line(self, pos: int) -> tuple[dict, bytes]:
        """Entry `pos`, checked against its index row as `_decode` checks it, and its raw line."""
        raw = self._read(pos)
        return self._check(pos, raw), raw

    def decode_lines(self, positions: Sequence[int]) -> Iterator[tuple[dict, bytes]]:
        """`decode_line` for many positions in file order (a path), read in runs (see `raw_lines`)."""
        for pos, content in zip(positions, self.raw_lines(positions), strict=True):
            yield self._quick_check(pos, content), content

    def raw_lines(self, positions: Sequence[int], chunk: int = 1 << 22) -> Iterator[bytes]:
        """The lines of many entries (without line ends), not parsed: runs of adjacent entries are
        read in one pread of up to `chunk` bytes instead of one per entry."""
        offsets, n, fd = self._offsets, self._n, None
        i = 0
        while i < len(positions):
            start = positions[i]
            j = i
            while (j + 1 < len(positions) and positions[j + 1] == positions[j] + 1 and positions[j + 1] + 1 < n
                   and offsets[positions[j + 1] + 1] - offsets[start] <= chunk):
                j += 1
            last = positions[j]
            if last + 1 >= n or j == i:
                yield self._read(start)
                i += 1
                continue
            if fd is None:
                if self._fp is None:
                    self._fp = open_binary(self.path)
                fd = self._fp.fileno()
            base = offsets[start]
            block = os.pread(fd, offsets[last + 1] - base, base)
            for pos in positions[i: j + 1]:
                raw = block[offsets[pos] - base: offsets[pos + 1] - base]
                raw = raw[: raw.find(b"\n") + 1] or raw
                content = raw[:-1] if raw.endswith(b"\n") else raw
                yield content[:-1] if content.endswith(b"\r") else content
            i = j + 1

    def _quick_check(self, pos: int, content: bytes) -> dict:
        """`_check`, with the common case (orjson parses an entry that matches its row) inline."""
        try:
            value = orjson.loads(content)
        except orjson.JSONDecodeError:
            return self._check(pos, content)
        if (type(value) is dict and type(value.get("type")) is str and value["type"] == self._types[pos]
                and value.get("id") == self._ids[pos] and value.get("parentId") == self._parents[pos]
                and self._ids[pos] is not None):
            return value
        return self._check(pos, content)

    def _decode(self, pos: int) -> dict:
        return self._check(pos, self._read(pos))

    def _read(self, pos: int) -> bytes:
        if self._fp is None:
            self._fp = open_binary(self.path)
        fp = self._fp
        start = self._offsets[pos]
        if pos + 1 < self._n:  # the line, perhaps with skipped lines after it: one read, cut at "\n"
            raw = os.pread(fp.fileno(), self._offsets[pos + 1] - start, start)
            raw = raw[: raw.find(b"\n") + 1] or raw
        else:
            fp.seek(start)
            raw = fp.readline()
        content = raw[:-1] if raw.endswith(b"\n") else raw
        return content[:-1] if content.endswith(b"\r") else content

    def _check(self, pos: int, content: bytes) -> dict:
        value, code, reason = parse_line(content)
        if code is None:
            problem = classify(value)
            if problem is not None:
                code, reason = problem
        where = f"{self.path}: line {self._lines[pos]}"
        if code is not None:
            raise LazyDecodeError(f"{where}: {reason} (the file changed since it was read)")
        assert isinstance(value, dict)
        entry_id = value.get("id")
        parent = value.get("parentId")
        if (value["type"] != self._types[pos] or (entry_id if isinstance(entry_id, str) else None) != self._ids[pos]
                or (parent if isinstance(parent, str) else None) != self._parents[pos]):
            raise LazyDecodeError(f"{where}: the entry changed since the file was read")
        return value

    def moved_to(self, path: Path) -> None:
        """Read from now on from `path`, a byte-identical copy of the file (see SessionWriter)."""
        self.close()
        self.path = path

    def close(self) -> None:
        if self._fp is not None:
            self._fp.close()
            self._fp = None

    def __del__(self) -> None:
        self.close()


class _IndexedTree(Tree):
    """A Tree proved at load to have no duplicate id, no dangling and no forward parentId (so no
    cycle): a path walk needs no cycle check, and positions_of runs at C speed."""

    _parent_pos: list[int] | None  # per entry: its parent's position, -1 for a root (None: use Tree's)

    def add(self, entry: dict, line: int) -> int:
        pos = super().add(entry, line)
        up = self._parent_pos
        if up is not None:
            parent = self.parents[pos]
            target = self.by_id.get(parent, -1) if isinstance(parent, str) else -1
            if len(up) != pos or target >= pos:  # a cycle of one: the general walk from now on
                self._parent_pos = None
            else:
                up.append(target)
        return pos

    def path(self, leaf_pos: int | None = None) -> list[int]:
        up = self._parent_pos
        if up is None or len(up) != len(self.ids):
            return super().path(leaf_pos)
        n = len(up)
        if not n:
            return []
        pos = n - 1 if leaf_pos is None else leaf_pos
        path: list[int] = []
        append = path.append
        while pos >= 0:
            append(pos)
            pos = up[pos]
        path.reverse()
        return path

    def positions_of(self, kind: str) -> list[int]:
        return list(itertools.compress(itertools.count(), map(kind.__eq__, self.types)))


class LazySession(Session):
    """A `Session` from `load_index`: `entries` is a `LazyEntries`."""

    def close(self) -> None:
        if isinstance(self.entries, LazyEntries):
            self.entries.close()


def load_for_continue(path: str | os.PathLike[str], on_progress: Callable[[int], None] | None = None) -> Session:
    """What `continue` needs (header, dialect, tree, leaf, labels, name, the context from the leaf,
    diagnostics), as `load_session` would give it, decoding only what that needs.

    The leaf's context, the labels and the name are decoded here, so a file changed since it was
    indexed shows now (and is then loaded in full), not in the middle of a chat. `on_progress` hears
    how many bytes the indexing has read.
    """
    session = load_index(path, on_progress)
    if not isinstance(session, LazySession):
        return session
    tree = session.tree
    known = len(tree.diagnostics)
    try:
        tree.labels()
        tree.name()
        build_context(tree)
    except LazyDecodeError:
        session.close()
        return load_session(path, on_progress=on_progress)
    del tree.diagnostics[known:]  # a path walk reports cycles; the caller's own walk will again
    return session


def load_index(path: str | os.PathLike[str], on_progress: Callable[[int], None] | None = None) -> Session:
    """Index a session file (see the module doc). Raises SessionError as `load_session` does."""
    p = Path(path)
    enabled = gc.isenabled()
    gc.disable()  # a million retained strings would make the cyclic GC dominate
    try:
        return _load_index(p, on_progress)
    finally:
        if enabled:
            gc.enable()


def _load_index(p: Path, on_progress: Callable[[int], None] | None) -> Session:
    diagnostics: list[Diagnostic] = []
    with open_binary(p) as fp:
        header: Record | None = None
        dialect: Dialect | None = None
        for item in read_records(iter_lines(fp), from_start=True):  # up to the header, exactly as load_session
            if isinstance(item, Diagnostic):
                diagnostics.append(item)
                continue
            if not is_header(item.obj) and sniff(p) != "pi":  # another harness's file: its reader, in full
                return load_session(p, on_progress=on_progress)
            dialect = accept_header(p, item)
            header = item
            break
        if header is None or dialect is None:
            raise no_header(p, os.fstat(fp.fileno()).st_size, diagnostics)
        if dialect.legacy:
            return load_session(p, on_progress=on_progress)
        start = fp.tell()
        parts = _index_split(p, fp, header.line, start, on_progress)
        if parts is None:
            with open_reporting(fp.fileno(), on_progress, _BUFFER) as big:
                big.seek(start)
                parts = [_index_lines(big, header.line, start, header.line)]
        size = os.fstat(fp.fileno()).st_size  # as loader._tail
        terminated = size == 0 or os.pread(fp.fileno(), 1, size - 1) == b"\n"
    ids, parents, types, offsets = parts[0].ids, parents_of(parts[0]), parts[0].types, parts[0].offsets
    skipped = parts[0].skipped
    last = parts[0].last
    diagnostics += parts[0].diagnostics
    by_id = parts[0].by_id
    for part in parts[1:]:  # a worker's half, numbered from 0: renumber after the first half
        base = last
        if by_id is not None:  # any duplicate shows as a short dict; _tree then starts over
            by_id.update(zip(part.ids, range(len(ids), len(ids) + len(part.ids)), strict=True))
        ids += part.ids
        parents += parents_of(part)
        types += part.types
        offsets += part.offsets
        skipped += [line + base for line in part.skipped]
        diagnostics += [replace(d, line=d.line + base) for d in part.diagnostics]
        last = part.last + base
    first = header.line + 1
    if skipped:
        lines = list(itertools.filterfalse(set(skipped).__contains__, range(first, last + 1)))
    else:
        lines = list(range(first, last + 1))
    entries = LazyEntries(p, offsets, ids, parents, types, lines)
    tree = _tree(ids, parents, types, lines, entries, by_id)
    return LazySession.assemble(p, header, dialect, tree, diagnostics, terminated, size)


@dataclass
class _Part:
    """The index of a run of lines (line numbers counted from `number` given to _index_lines)."""

    ids: list[str | None]
    parents: list[str | None] | str  # a worker sends them as one string (see _index_worker)
    types: list[str]
    offsets: array
    skipped: list[int]  # line numbers that hold no entry
    diagnostics: list[Diagnostic]
    last: int  # the number of the last line read
    by_id: dict[str, int] | None = None  # id -> position (the first half, built while the worker works)


def parents_of(part: _Part) -> list[str | None]:
    if not isinstance(part.parents, str):
        return part.parents
    codes = part.parents.split("\n") if part.ids else []
    # "\x00": no parent; "\x01": the previous entry's id (the same string object, as the indexer makes it)
    return [prev if code == "\x01" else None if code == "\x00" else code
            for code, prev in zip(codes, [None, *part.ids[:-1]], strict=True)]


def _index_lines(fp, number: int, offset: int, header_line: int) -> _Part:  # noqa: ANN001
    """Index the lines of `fp` (the next is line `number` + 1, at byte `offset`) to its end.

    Every line is parsed with orjson, the reader's own first parser, so a line the fast path takes
    is exactly a line the reader takes (and with the same type, id and parentId); the parsed value
    is dropped at once. Anything orjson refuses or that is no newline-ended entry goes to the reader.
    """
    ids: list[str | None] = []
    parents: list[str | None] = []
    types: list[str] = []
    offsets = array("q")
    skipped: list[int] = []
    diagnostics: list[Diagnostic] = []
    part = _Part(ids, parents, types, offsets, skipped, diagnostics, number)
    add_id, add_parent, add_type, add_offset = ids.append, parents.append, types.append, offsets.append
    kinds: dict[str, str] = {}  # one string object per type (memory)
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    last_id: str | None = None
    for number, raw in enumerate(fp, number + 1):  # noqa: B020 - number outlives the loop
        try:
            entry = loads(raw)  # trailing "\r\n" is JSON whitespace: the reader's value
        except decode_error:
            entry = None
        if entry.__class__ is dict and raw[-1] == 10:
            kind = entry.get("type")
            if kind.__class__ is str and kind != "session" and kind != "header":
                entry_id = entry.get("id")
                if entry_id.__class__ is not str:
                    entry_id = None
                parent = entry.get("parentId")
                if parent.__class__ is not str:
                    parent = None
                elif parent == last_id:
                    parent = last_id  # one string object for an id and its child's parentId
                add_id(entry_id)
                add_parent(parent)
                add_type(kinds.setdefault(kind, kind))
                add_offset(offset)
                last_id = entry_id
                offset += len(raw)
                continue
        _slow_line(part, raw, number, offset, header_line)
        last_id = None
        offset += len(raw)
    part.last = number
    return part


def _slow_line(part: _Part, raw: bytes, number: int, offset: int, header_line: int) -> None:
    """One line the reader's way, as load_session sees it."""
    terminated = raw.endswith(b"\n")
    content = raw[:-1] if terminated else raw
    if content.endswith(b"\r"):
        content = content[:-1]
    entry = None
    for item in read_records(((number, offset, content, terminated),)):
        if isinstance(item, Diagnostic):
            part.diagnostics.append(item)
        elif is_header(item.obj):
            part.diagnostics.append(Diagnostic(item.line, item.offset,
                                               f"a second header (first on line {header_line}); ignored",
                                               "extra-header"))
        else:
            entry = item.obj
    if entry is None:
        part.skipped.append(number)
        return
    entry_id = entry.get("id")
    parent = entry.get("parentId")
    part.ids.append(entry_id if isinstance(entry_id, str) else None)
    part.parents.append(parent if isinstance(parent, str) else None)  # type: ignore[union-attr]
    part.types.append(entry["type"])
    part.offsets.append(offset)


# ------------------------------------------------------------------ two processes


def _index_split(p: Path, fp, header_line: int, start: int,  # noqa: ANN001
                 on_progress: Callable[[int], None] | None = None) -> list[_Part] | None:
    """Index a big file in two processes: this one takes the first half, a forked worker the rest.
    None when the file is small, or when anything goes wrong (the caller indexes it alone).
    `on_progress` hears this half's position scaled to the whole (the worker keeps about the pace)."""
    cut = split_point(fp, start)
    if cut is None:
        return None
    started = fork_worker(_index_worker, (p, cut, header_line), duplex=False)
    if started is None:
        return None
    here, worker = started
    try:
        report = None
        if on_progress is not None:
            scale = (os.fstat(fp.fileno()).st_size - start) / max(cut - start, 1)

            def report(position: int) -> None:
                on_progress(start + int((position - start) * scale))
        with open_range(fp.fileno(), start, cut, _BUFFER, report) as mine:
            first = _index_lines(mine, header_line, start, header_line)
        first.by_id = dict(zip(first.ids, range(len(first.ids)), strict=True))  # while the worker works
        second, columns = here.recv()
        if columns is not None:
            ids, kinds = columns
            second.ids = ids.split("\n") if second.offsets else []
            canonical = {kind: kind for kind in set(first.types)}  # one string object per type
            kinds = kinds.split("\n") if second.offsets else []
            second.types = list(map(canonical.setdefault, kinds, kinds))
        return [first, second]
    except (EOFError, OSError):
        fp.seek(start)
        return None
    finally:
        reap(here, worker)


def _index_worker(p: Path, cut: int, header_line: int, conn) -> None:  # noqa: ANN001
    try:
        _index_second_half(p, cut, header_line, conn)
    except Exception:  # noqa: BLE001 - the parent sees the closed pipe and indexes the file alone
        conn.close()


def _index_second_half(p: Path, cut: int, header_line: int, conn) -> None:  # noqa: ANN001
    with open_lines(p, _BUFFER) as fp:
        fp.seek(cut)
        part = _index_lines(fp, 0, cut, header_line)
    columns = _joined(part)
    if columns is not None:
        part.parents, ids, kinds = columns
        part.ids, part.types = [], []
        conn.send((part, (ids, kinds)))
    else:
        conn.send((part, None))
    conn.close()


def _joined(part: _Part) -> tuple[str, str, str] | None:
    """The parents, ids and types as one string each (they pickle and unpickle many times faster
    than lists of strings), or None when that cannot be undone exactly: an id that is not a string,
    or an id, parentId or type that holds "\n", or a parentId that is one of the codes "\x00"/"\x01"."""
    ids, types = part.ids, part.types
    n = len(ids)
    if not n or None in ids:
        return None
    parents = part.parents
    assert not isinstance(parents, str)
    if "\x00" in parents or "\x01" in parents:
        return None
    # "\x00": no parent; "\x01": the previous entry's id (the same string object, as the indexer makes it)
    coded = "\n".join("\x00" if parent is None else "\x01" if parent is prev else parent
                      for parent, prev in zip(parents, [None, *ids[:-1]], strict=True))
    joined_ids = "\n".join(ids)  # type: ignore[arg-type]
    joined_types = "\n".join(types)
    if not coded.count("\n") == joined_ids.count("\n") == joined_types.count("\n") == n - 1:
        return None
    return coded, joined_ids, joined_types


def _tree(ids: list[str | None], parents: list[str | None], types: list[str], lines: list[int],
          entries: LazyEntries, by_id: dict[str, int] | None = None) -> Tree:
    """The Tree that Tree.from_columns builds, found with C-speed checks when nothing is unusual.
    `by_id` may come prebuilt (unique ids, first half first)."""
    n = len(ids)
    if by_id is None or len(by_id) != n:
        by_id = dict(zip(ids, range(n), strict=True))
    if len(by_id) != n or None in by_id:  # duplicate ids, or entries without one: the general path
        return Tree.from_columns(ids, parents, types, lines, entries)
    # Parent positions. A parentId that is the previous entry's id object points there by construction
    # (the indexer shares the object); the others are looked up.
    up = list(range(-1, n - 1))
    previous = [None, *ids[:-1]]
    for pos in itertools.compress(itertools.count(), map(operator.is_not, parents, previous)):
        parent = parents[pos]
        if parent is None:
            up[pos] = -1
            continue
        target = by_id.get(parent)
        if target is None or target >= pos:  # dangling, or a parent at or after its child (cycles)
            return Tree.from_columns(ids, parents, types, lines, entries)
        up[pos] = target
    tree = _IndexedTree(ids, parents, types, lines, entries, by_id, [])
    tree._parent_pos = up
    return tree
