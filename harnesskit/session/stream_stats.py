"""`inspect --stats` of a streamed session: the counts and the tree's shape, in one process or, for
a big v3 file on a machine with a core to spare, in two.

No entry and no column is kept. The entries of a file run in chains (each the child of the one
before) broken by a few others (a root, or the child of an earlier entry: a branch); a run of
entries is told by its ids' positions (a dict: the later one wins, as in Tree.by_id), where each
break is and its depth, and how many children an earlier entry gets from breaks. That is the tree's
own shape when every parentId names an earlier entry and no id is there twice: then the tree has no
diagnostic and no link forward. Otherwise (a damaged tree, rare) the file is read a second time for
the tree's columns, and the tree built from them as `load_session` builds it. A file that cannot be
read twice (a pipe) is counted as `Columns` from the start, which is also the exact reference the
tests hold the rest to.

A big v3 file's message lines are first decoded by msgspec into typed.py's counted Structs (cheaper
than orjson's dicts, and read by attribute); a line they refuse takes the stream's own path, so each
count and diagnostic is the reader's.

Two processes: the parent counts the lines before a cut at a line start while a forked worker counts
the rest (lines numbered from its first) and sends back its counters, a summary of its shape and its
diagnostics; the parent renumbers and warns of the worker's diagnostics after its own, so stdout and
stderr are those of one process byte for byte. Where to cut, and the HARNESSKIT_SPLIT /
HARNESSKIT_SPLIT_MIN_BYTES switches, are split.split_point's, as for validate and continue.
"""

from __future__ import annotations

import os
import stat
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from itertools import chain
from operator import attrgetter

from . import split
from .reader import MAX_DEPTH, Diagnostic
from .stats import TOKEN_KEYS, Shape, StatsCounter
from .stream import Stream, open_stream
from .tree import Tree

_TYPED = True  # the msgspec lane; tests turn it off to prove the two lanes agree
_TYPED_MIN_BYTES = 4 << 20  # importing msgspec costs what its lane saves on a few MB (tests set 0)
_SHAPED = True  # the shape without columns; tests turn it off (then every file is counted as Columns)

_ANCHOR = 32  # an entry below the k-th outside parent has the depth ((k + 1) << _ANCHOR) + its depth below it
_BELOW = (1 << _ANCHOR) - 1


@dataclass
class Tally:
    """What --stats keeps of a run of entries: the counts and the shape (see the module doc)."""

    counter: StatsCounter = field(default_factory=StatsCounter)
    index: dict[str, int] = field(default_factory=dict)  # id -> position in the run (the later one wins)
    entries: int = 0
    breaks: list[int] = field(default_factory=list)  # the positions of the entries that follow no entry before
    starts: list[int] = field(default_factory=list)  # and their depths, anchored (_ANCHOR)
    far: dict[int, int] = field(default_factory=dict)  # position -> its children that are breaks
    outside: list[str] = field(default_factory=list)  # parentIds that name no earlier entry of the run
    roots: int = 0
    unnamed: int = 0  # entries without a string id
    last: str | None = None  # the last entry's id
    named: bool = False  # a session_info with a string name was seen: the last one's is `name`
    name: str | None = None

    def whole(self) -> bool:
        """Whether the shape is the tree's: no id twice, no parentId that names no earlier entry."""
        return not self.outside and len(self.index) + self.unnamed == self.entries

    def children(self) -> tuple[int, int]:
        """(leaves, entries with one child): an entry has a child in its chain unless the entry after
        it is a break, and one more for each break below it."""
        n, far = self.entries, self.far
        broken = set(self.breaks)
        chained = n - 1 - len(broken) + (0 in broken) if n else 0  # entries whose next entry is their child
        leaves, ones = n - chained, chained
        for pos, count in far.items():
            if pos + 1 < n and pos + 1 not in broken:
                ones -= 1  # one in its chain, and more
            else:
                leaves -= 1
                ones += count == 1
        return leaves, ones

    def segments(self) -> Iterable[int]:
        """The depth of each chain's last entry (anchored as its start)."""
        ends = [*self.breaks[1:], self.entries]
        return map(int.__add__, self.starts, map(int.__sub__, ends, map((1).__add__, self.breaks)))

    def depth_at(self, pos: int) -> int:
        i = bisect_right(self.breaks, pos) - 1
        return self.starts[i] + pos - self.breaks[i]


def tally(stream: Stream, into: Tally, on_diagnostic: Callable[[Diagnostic], None], typed_lane: bool = False) -> Tally:
    """Count the entries of `stream` into `into` (after those it holds); `typed_lane`: msgspec first.
    (One function of closures, as the counting is most of --stats' own time: callgrind counts a call
    per line and each attribute of an object as a tenth of it.)"""
    counter, index, far, outside, breaks, starts = into.counter, into.index, into.far, into.outside, into.breaks, \
        into.starts
    entries, roots, unnamed, last = into.entries, into.roots, into.unnamed, into.last

    def branch(parent: object) -> None:
        """The entry at `entries` follows no entry before: a root, or a child of an earlier one."""
        nonlocal roots
        if parent.__class__ is not str:  # None, or not a string: a root (Tree.from_entries)
            roots += 1
            depth = 1
        else:
            up = index.get(parent)  # type: ignore[call-overload]
            if up is None:  # a parent in an earlier run, or none (then the tree is read again)
                outside.append(parent)  # type: ignore[arg-type]
                depth = (len(outside) << _ANCHOR) + 1
            else:
                far[up] = far.get(up, 0) + 1
                depth = into.depth_at(up) + 1
        breaks.append(entries)
        starts.append(depth)

    def place(entry_id: object, parent: object) -> None:
        """The entry after the last one."""
        nonlocal entries, unnamed, last
        if parent.__class__ is not str or parent != last:
            branch(parent)
        if entry_id.__class__ is str:
            index[entry_id] = entries  # type: ignore[index]
            last = entry_id  # type: ignore[assignment]
        else:
            unnamed += 1
            last = None
        entries += 1

    take = None
    batch: list = []  # the messages taken and not yet counted
    if typed_lane:
        from . import typed

        decode, refused, counted = typed.decode_counted, typed.Refused, typed.CountedEntry
        keep = batch.append
        flush = _counting(counter, batch)

        def take(raw: bytes, number: int) -> bool:
            """A message line that typed.decode_counted reads: kept to be counted (`_counting`) and
            placed as `place` places it (its id is a string, its parentId one or null)."""
            nonlocal entries, last
            try:
                entry = decode(raw)
            except refused:
                return False
            if entry.__class__ is not counted:
                return False
            keep(entry.message)
            if len(batch) >= _BATCH:
                flush()
            parent = entry.parentId
            if parent is None or parent != last:
                branch(parent)
            last = entry.id
            index[last] = entries
            entries += 1
            return True

    add = counter.add
    try:
        for item in stream.items(take=take):
            if item.__class__ is Diagnostic:
                on_diagnostic(item)  # type: ignore[arg-type]
                continue
            entry = item[1]  # type: ignore[index]
            if batch:  # the messages before this entry are counted first (the order of first sightings, and of sums)
                flush()
            add(entry)
            place(entry.get("id"), entry.get("parentId"))
            if entry["type"] == "session_info" and isinstance(entry.get("name"), str):
                into.named, into.name = True, entry["name"].strip() or None
    finally:
        into.entries, into.roots, into.unnamed, into.last = entries, roots, unnamed, last
    if batch:
        flush()
    return into


_BATCH = 1024  # messages counted at a time: each count is then a C loop over them, not Python per message


def _counting(counter: StatsCounter, batch: list) -> Callable[[], None]:
    """What counts a batch of typed.py's counted messages into `counter` as StatsCounter.add counts
    their dicts (roles, tool calls, tokens, costs), in C loops; the batch is emptied. Each count keeps
    the order of first sightings (most_common's order of ties), and costs are logged in file order."""
    import msgspec

    from . import typed

    types, roles, tools, tokens = counter.types, counter.roles, counter.tools, counter.tokens
    if counter.cost_log is None:
        counter.cost_log = []  # summed in order by StatsCounter.settle, in C
    logged = counter.cost_log.extend
    role_of = ((typed.User, "user"), (typed.CountedAssistant, "assistant"), (typed.ToolResult, "toolResult"))
    said, call, priced = (typed.CountedAssistant.__instancecheck__, typed.ToolCall.__instancecheck__,
                          typed.CountedCost.__instancecheck__)  # (no class has a subclass)
    content, name, usage, total = attrgetter("content"), attrgetter("name"), attrgetter("usage"), attrgetter("total")
    row = msgspec.structs.astuple  # a usage's five counts and its cost, in typed.py's order (TOKEN_KEYS)

    def flush() -> None:
        types["message"] += len(batch)
        kinds = list(map(type, batch))
        for _, kind, role in sorted((kinds.index(kind), kind, role) for kind, role in role_of if kind in kinds):
            roles[role] += kinds.count(kind)  # in the order of first sightings
        assistants = list(filter(said, batch))
        batch.clear()
        if not assistants:
            return
        names = list(map(name, filter(call, chain.from_iterable(map(content, assistants)))))
        distinct = dict.fromkeys(names)
        if len(distinct) <= 64:  # a count per name, in C (a count for each is quadratic in the names)
            for tool in distinct:
                tools[tool] += names.count(tool)
        else:
            tools.update(names)
        *counts, costs = zip(*map(row, map(usage, assistants)), strict=True)
        for key, values in zip(TOKEN_KEYS, counts, strict=True):  # ints within 64 bits (typed.py)
            if tokens[key].__class__ is int:
                tokens[key] += sum(values)  # an int sum: in any order
            else:  # a float count came first (the exact lane's): then each in turn, as _add does
                for value in values:
                    tokens[key] += value
        logged(map(total, filter(priced, costs)))

    return flush


def _typed_lane(stream: Stream, start: int) -> bool:
    """Whether to read with msgspec first: a v3 file (a legacy one's lines are migrated), big enough,
    and a recursion limit that keeps msgspec's depth within the reader's (typed.py)."""
    return (_TYPED and not stream.dialect.legacy and stream.size - start >= _TYPED_MIN_BYTES
            and sys.getrecursionlimit() <= MAX_DEPTH)


def stream_stats(stream: Stream, on_diagnostic: Callable[[Diagnostic], None]) -> tuple[dict, int, str | None]:
    """(the stats, the number of entries, the session's name) of `stream`, read to its end; the reader's
    diagnostics, then the tree's, go to `on_diagnostic` in file order."""
    if not _SHAPED or not stat.S_ISREG(os.fstat(stream._fp.fileno()).st_mode):  # no second read: columns
        columns = _columns(stream.items(), Columns(), on_diagnostic)
        tree = columns.tree()
        for d in tree.diagnostics:
            on_diagnostic(d)
        return columns.counter.result(tree), len(tree), columns.name
    typed_lane = _typed_lane(stream, stream._offset)
    if typed_lane:
        from . import typed  # noqa: F401 - before the fork, so the worker has it too
    # a legacy file's migration runs in file order: one process
    cut = None if stream.dialect.legacy else split.split_point(stream._fp, stream._offset)
    done = _split(stream, cut, typed_lane, on_diagnostic) if cut is not None else None
    if done is None:
        counted = tally(stream, Tally(), on_diagnostic, typed_lane)
        done = counted, _shape_of(counted) if counted.whole() else None
    else:
        stream.close()
    counted, shape = done
    if shape is not None:
        return counted.counter.shaped(shape), shape.entries, counted.name
    tree = _columns(open_stream(stream.path).items(), Columns(), lambda d: None).tree()  # the reader's said
    for d in tree.diagnostics:
        on_diagnostic(d)
    return counted.counter.result(tree), len(tree), counted.name


def _shape_of(counted: Tally) -> Shape:
    """The shape of a whole run (Tally.whole)."""
    leaves, ones = counted.children()
    n = counted.entries
    return Shape(n, counted.roots, leaves, n - leaves - ones, max(counted.segments(), default=0))


@dataclass
class _Half:
    """What the worker sends back of the second half: its counts, its diagnostics and its shape's summary."""

    counter: StatsCounter
    diagnostics: list[Diagnostic]
    entries: int
    roots: int
    leaves: int  # of its own entries (the first half's get children only from the outside links)
    ones: int  # its entries with one child
    depth: int  # the deepest of its entries below one of its own roots
    outside: list[str]  # parentIds that name no earlier entry of the second half
    below: list[int]  # and the deepest depth below each
    whole: bool  # no id twice within the half
    ids: str  # its ids joined by NUL (or "", and `id_list`: none, or one holds a NUL)
    id_list: list[str] | None
    named: bool
    name: str | None


def _half(counted: Tally, diagnostics: list[Diagnostic]) -> _Half:
    below = [0] * len(counted.outside)
    depth = 0
    for d in counted.segments():  # one per chain
        anchor = d >> _ANCHOR
        if anchor:
            below[anchor - 1] = max(below[anchor - 1], d & _BELOW)
        elif d > depth:
            depth = d
    ids = "\0".join(counted.index)
    joined = len(counted.index) > 0 and ids.count("\0") == len(counted.index) - 1
    return _Half(counted.counter, diagnostics, counted.entries, counted.roots, *counted.children(), depth,
                 counted.outside, below, len(counted.index) + counted.unnamed == counted.entries,
                 ids if joined else "", None if joined else list(counted.index), counted.named, counted.name)


def _split(stream: Stream, cut: int, typed_lane: bool,
           on_diagnostic: Callable[[Diagnostic], None]) -> tuple[Tally, Shape | None] | None:
    """The tally of the whole stream from two processes and its shape (None: read the tree again); None
    when no worker could start (nothing read)."""
    started = split.fork_worker(_worker, (stream, cut, typed_lane), duplex=False)
    if started is None:
        return None
    here, worker = started
    first = stream.first_of_two(cut)
    mine = first.part(stream._offset, cut, stream._next_line, with_before=True)
    counted = tally(mine, Tally(), on_diagnostic, typed_lane)
    base = mine.next_line - 1
    try:
        theirs: _Half | None = here.recv()
    except (EOFError, OSError):  # the worker died: read its half here
        theirs = None
    finally:
        split.reap(here, worker)
    if theirs is None or not counted.counter.merge(theirs.counter):
        tally(stream.part(cut, stream.size, base + 1), counted, on_diagnostic, typed_lane)
        return counted, _shape_of(counted) if counted.whole() else None
    for d in theirs.diagnostics:
        on_diagnostic(replace(d, line=d.line + base))
    if theirs.named:
        counted.named, counted.name = True, theirs.name
    return counted, _joined(counted, theirs)


def _joined(counted: Tally, theirs: _Half) -> Shape | None:
    """The shape of the first half and the second together, or None when it is not the tree's."""
    index = counted.index
    if not (counted.whole() and theirs.whole) or not index.keys().isdisjoint(
            theirs.ids.split("\0") if theirs.id_list is None else theirs.id_list):
        return None
    depth = max(max(counted.segments(), default=0), theirs.depth)
    far = counted.far
    for parent, below in zip(theirs.outside, theirs.below, strict=True):
        up = index.get(parent)
        if up is None:
            return None
        far[up] = far.get(up, 0) + 1
        depth = max(depth, counted.depth_at(up) + below)
    leaves, ones = counted.children()
    entries = counted.entries + theirs.entries
    return Shape(entries, counted.roots + theirs.roots, leaves + theirs.leaves,
                 entries - leaves - theirs.leaves - ones - theirs.ones, depth)


def _worker(stream: Stream, cut: int, typed_lane: bool, conn) -> None:  # noqa: ANN001 - a multiprocessing Connection
    """The forked half: count [cut, end) with lines numbered from 1 and send it all back."""
    diagnostics: list[Diagnostic] = []
    counted = Tally()
    counted.counter.cost_log = []
    try:
        part = replace(stream, on_progress=None).part(cut, stream.size, 1)
        tally(part, counted, diagnostics.append, typed_lane)
        conn.send(_half(counted, diagnostics))
    except Exception:  # noqa: BLE001 - no traceback on the user's terminal: the parent counts this half itself
        return


@dataclass
class Columns:
    """What the exact path keeps of a run of entries: the counts and the tree's columns."""

    counter: StatsCounter = field(default_factory=StatsCounter)
    ids: list[str | None] = field(default_factory=list)
    parents: list[str | None] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    named: bool = False  # a session_info with a string name was seen: the last one's is `name`
    name: str | None = None

    def tree(self) -> Tree:
        return Tree.from_columns(self.ids, self.parents, self.types, self.lines, [])


def _columns(items: Iterable[tuple[int, dict, bytes] | Diagnostic], into: Columns,
             on_diagnostic: Callable[[Diagnostic], None]) -> Columns:
    counter, ids, parents, types, lines = into.counter, into.ids, into.parents, into.types, into.lines
    add = counter.add
    kinds: dict[str, str] = {}  # one string per type, not one per entry
    previous: str | None = None
    for item in items:
        if isinstance(item, Diagnostic):
            on_diagnostic(item)
            continue
        line, entry, _ = item
        add(entry)
        entry_id, parent = entry.get("id"), entry.get("parentId")
        entry_id = entry_id if isinstance(entry_id, str) else None
        ids.append(entry_id)
        parents.append(previous if parent == previous else parent if isinstance(parent, str) else None)
        kind = entry["type"]
        types.append(kinds.setdefault(kind, kind))
        lines.append(line)
        previous = entry_id
        if kind == "session_info" and isinstance(entry.get("name"), str):
            into.named, into.name = True, entry["name"].strip() or None
    return into
