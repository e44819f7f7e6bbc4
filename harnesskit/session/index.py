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

The fast path takes a line when it ends with `}` and a newline and starts in pi's fixed key order
`{"type":"…","id":"…","parentId":"…"|null` with plain ASCII strings; type, id and parentId come from
a bytes regex and the rest of the line is not parsed. Every other line (custom entries, which put
`customType` first; blank, torn, non-JSON lines; CRLF endings; headers; a last line without a
newline) is parsed in full by the reader, with the reader's diagnostics. A big file is indexed in
two processes (a forked worker takes the second half and sends its columns back as joined strings).
Legacy dialects (pi v1/v2, tutorial) are loaded by `load_session` (their migration needs every entry).

What the fast path cannot see is a line that starts and ends like an entry but is not JSON inside:
a torn write that pi glued to the next entry, or one cut just after a `}` and ended by harnesskit's
writer with a newline. Such a line shows when it is decoded (`LazyDecodeError`), or as a dangling
parentId (the glued entry's child); a torn line is also always a leaf (nothing was written under
it). `load_for_continue` decodes the leaf's context, the labels, the names and every leaf, and
answers any of these signs by loading the file in full, so what it returns is what `load_session`
gives. (Only a line damaged in place later, in the middle of a branch off the path, would stay
unseen.)
"""

from __future__ import annotations

import gc
import itertools
import operator
import os
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .format import is_header
from .formats import sniff
from .loader import Session, SessionError, accept_header, load_session, no_header, open_binary
from .migrate import Dialect
from .reader import Diagnostic, Record, classify, iter_lines, open_range, parse_line, read_records
from .split import fork_worker, reap, split_point
from .tree import Tree, build_context

__all__ = ["LazyDecodeError", "LazyEntries", "LazySession", "load_for_continue", "load_index"]

_CHAR = rb"[\x20\x21\x23-\x5b\x5d-\x7e]"  # printable ASCII but '"' and '\': the string is its bytes
_PREFIX = re.compile(
    rb'\{"type":"(' + _CHAR + rb'*)","id":"(' + _CHAR + rb'*)","parentId":(?:"(' + _CHAR + rb'*)"|null)[,}]'
)
_CACHE_LIMIT = 100_000  # decoded entries kept per session
#: v3 files with at least this many bytes after the header are indexed in two processes (two cores)
_BUFFER = 1 << 17  # read buffer: the default 8 KiB makes a syscall every few lines


class LazyDecodeError(SessionError):
    """An indexed line that no longer decodes to the entry the index saw (damage the index missed)."""


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
            if len(self._cache) < _CACHE_LIMIT:
                self._cache[pos] = entry
        return entry

    def _decode(self, pos: int) -> dict:
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
        if content.endswith(b"\r"):
            content = content[:-1]
        value, code, reason = parse_line(content)
        if code is None:
            problem = classify(value)
            if problem is not None:
                code, reason = problem
        where = f"{self.path}: line {self._lines[pos]}"
        if code is not None:
            raise LazyDecodeError(f"{where}: {reason} (the index took it for an entry)")
        assert isinstance(value, dict)
        entry_id = value.get("id")
        parent = value.get("parentId")
        if (value["type"] != self._types[pos] or (entry_id if isinstance(entry_id, str) else None) != self._ids[pos]
                or (parent if isinstance(parent, str) else None) != self._parents[pos]):
            raise LazyDecodeError(f"{where}: the entry differs from its index row")
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

    lazy = True

    def close(self) -> None:
        if isinstance(self.entries, LazyEntries):
            self.entries.close()


def load_for_continue(path: str | os.PathLike[str]) -> Session:
    """What `continue` needs (header, dialect, tree, leaf, labels, name, the context from the leaf,
    diagnostics), as `load_session` would give it, decoding only what that needs.

    The leaf's context, the labels, the name and every leaf entry are decoded (and so checked) here;
    if the index met damage it could not judge (see the module doc) the file is loaded in full.
    """
    session = load_index(path)
    if not isinstance(session, LazySession):
        return session
    tree = session.tree
    entries = session.entries
    assert isinstance(entries, LazyEntries)
    known = len(tree.diagnostics)
    try:
        tree.labels()
        tree.name()
        build_context(tree)
        up = getattr(tree, "_parent_pos", None)
        if up is None:
            up = map(tree.by_id.get, tree.parents)
        for pos in itertools.filterfalse(set(up).__contains__, range(len(tree))):  # the leaves
            entries._decode(pos)  # checked, not kept
    except LazyDecodeError:
        session.close()
        return load_session(path)
    del tree.diagnostics[known:]  # a path walk reports cycles; the caller's own walk will again
    return session


def load_index(path: str | os.PathLike[str]) -> Session:
    """Index a session file (see the module doc). Raises SessionError as `load_session` does."""
    p = Path(path)
    enabled = gc.isenabled()
    gc.disable()  # a million retained strings would make the cyclic GC dominate
    try:
        return _load_index(p)
    finally:
        if enabled:
            gc.enable()


def _load_index(p: Path) -> Session:
    diagnostics: list[Diagnostic] = []
    with open_binary(p) as fp:
        header: Record | None = None
        dialect: Dialect | None = None
        for item in read_records(iter_lines(fp)):  # up to the header, exactly as load_session
            if isinstance(item, Diagnostic):
                diagnostics.append(item)
                continue
            if not is_header(item.obj) and sniff(p) != "pi":  # another harness's file: its reader, in full
                return load_session(p)
            dialect = accept_header(p, item)
            header = item
            break
        if header is None or dialect is None:
            raise no_header(p, os.fstat(fp.fileno()).st_size, diagnostics)
        if dialect.legacy:
            return load_session(p)
        start = fp.tell()
        parts = _index_split(p, fp, header.line, start)
        if parts is None:
            with open(fp.fileno(), "rb", buffering=_BUFFER, closefd=False) as big:
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
    if tree is None:  # a dangling parentId: maybe a glued line the index took for an entry
        entries.close()
        return load_session(p)
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
    plain: bool  # every id is a string, and no id, parentId or type holds "\n", "\x00" or "\x01"
    by_id: dict[str, int] | None = None  # id -> position (the first half, built while the worker works)


def parents_of(part: _Part) -> list[str | None]:
    if not isinstance(part.parents, str):
        return part.parents
    codes = part.parents.split("\n") if part.ids else []
    # "\x00": no parent; "\x01": the previous entry's id (the same string object, as the indexer makes it)
    return [prev if code == "\x01" else None if code == "\x00" else code
            for code, prev in zip(codes, [None, *part.ids[:-1]], strict=True)]


def _index_lines(fp, number: int, offset: int, header_line: int) -> _Part:  # noqa: ANN001
    """Index the lines of `fp` (the next is line `number` + 1, at byte `offset`) to its end."""
    ids: list[str | None] = []
    parents: list[str | None] = []
    types: list[str] = []
    offsets = array("q")
    skipped: list[int] = []
    diagnostics: list[Diagnostic] = []
    part = _Part(ids, parents, types, offsets, skipped, diagnostics, number, True)
    add_id, add_parent, add_type, add_offset = ids.append, parents.append, types.append, offsets.append
    kinds: dict[bytes, str | None] = {b"session": None, b"header": None}  # headers take the slow path
    match = _PREFIX.match
    last_raw: bytes | None = None
    last_id: str | None = None
    fast = number
    raw = b""
    for number, raw in enumerate(fp, number + 1):  # noqa: B020 - number and raw outlive the loop
        m = match(raw)
        if m is not None and raw[-2] == 125:  # ends with "}\n" (a last line without "\n": fixed below)
            kind_b, id_b, parent_b = m.groups()
            kind = kinds.get(kind_b, "")
            if kind == "":
                kind = kinds[kind_b] = kind_b.decode()
            if kind is not None:
                entry_id = id_b.decode()
                if parent_b is None:
                    add_parent(None)
                elif parent_b == last_raw:
                    add_parent(last_id)  # one string object for an id and its child's parentId
                else:
                    add_parent(parent_b.decode())
                add_id(entry_id)
                add_type(kind)
                add_offset(offset)
                last_raw, last_id = id_b, entry_id
                fast = number
                offset += len(raw)
                continue
        _slow_line(part, raw, number, offset, header_line)
        last_raw = last_id = None
        offset += len(raw)
    if fast == number and raw and not raw.endswith(b"\n"):  # the fast path took a last line without "\n"
        for column in (ids, parents, types, offsets):
            column.pop()
        _slow_line(part, raw, number, offset - len(raw), header_line)
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
    entry_id = entry_id if isinstance(entry_id, str) else None
    parent = entry.get("parentId")
    parent = parent if isinstance(parent, str) else None
    kind = entry["type"]
    part.ids.append(entry_id)
    part.parents.append(parent)  # type: ignore[union-attr]
    part.types.append(kind)
    part.offsets.append(offset)
    if part.plain and (entry_id is None or not all(_PLAIN.isdisjoint(x) for x in (entry_id, parent or "", kind))):
        part.plain = False


_PLAIN = frozenset("\n\x00\x01")


# ------------------------------------------------------------------ two processes


def _index_split(p: Path, fp, header_line: int, start: int) -> list[_Part] | None:  # noqa: ANN001
    """Index a big file in two processes: this one takes the first half, a forked worker the rest.
    None when the file is small, or when anything goes wrong (the caller indexes it alone)."""
    cut = split_point(fp, start)
    if cut is None:
        return None
    started = fork_worker(_index_worker, (p, cut, header_line), duplex=False)
    if started is None:
        return None
    here, worker = started
    try:
        with open_range(fp.fileno(), start, cut, _BUFFER) as mine:
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
    with open(p, "rb", buffering=_BUFFER) as fp:
        fp.seek(cut)
        part = _index_lines(fp, 0, cut, header_line)
    if part.plain:
        # One joined string per column pickles and unpickles many times faster than a list of strings.
        ids = part.ids
        part.parents = "\n".join("\x00" if parent is None else "\x01" if parent is prev else parent
                                 for parent, prev in zip(part.parents, [None, *ids[:-1]], strict=True))
        columns = ("\n".join(ids), "\n".join(part.types))  # type: ignore[arg-type]
        part.ids, part.types = [], []
        conn.send((part, columns))
    else:
        conn.send((part, None))
    conn.close()


def _tree(ids: list[str | None], parents: list[str | None], types: list[str], lines: list[int],
          entries: LazyEntries, by_id: dict[str, int] | None = None) -> Tree | None:
    """The Tree that Tree.from_columns builds, found with C-speed checks when nothing is unusual;
    None when a parentId names no entry. `by_id` may come prebuilt (unique ids, first half first)."""
    n = len(ids)
    if by_id is None or len(by_id) != n:
        by_id = dict(zip(ids, range(n), strict=True))
    if len(by_id) != n or None in by_id:  # duplicate ids, or entries without one: the general path
        tree = Tree.from_columns(ids, parents, types, lines, entries)
        if any(d.code == "dangling-parent" for d in tree.diagnostics):
            return None
        return tree
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
        if target is None:
            return None  # a parentId that names no entry
        if target >= pos:  # a parent at or after its child: cycles are possible
            return Tree.from_columns(ids, parents, types, lines, entries)
        up[pos] = target
    tree = _IndexedTree(ids, parents, types, lines, entries, by_id, [])
    tree._parent_pos = up
    return tree
