"""`inspect --stats` of a streamed session: the counts and the tree's columns, in one process or, for
a big v3 file on a machine with a core to spare, in two.

The counts are sums and the columns lists, so halves merge: the parent counts the lines before a cut
at a line start while a forked worker counts the rest (lines numbered from its first) and sends back
its counters, columns and diagnostics; the parent renumbers and appends them, and warns of the
worker's diagnostics after its own, so stdout and stderr are those of one process byte for byte.
Where to cut, and the HARNESSKIT_SPLIT / HARNESSKIT_SPLIT_MIN_BYTES switches, are split.split_point's,
as for validate and continue.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from . import split
from .reader import Diagnostic
from .stats import StatsCounter
from .stream import Stream
from .tree import Tree


@dataclass
class Tally:
    """What --stats keeps of a run of entries."""

    counter: StatsCounter = field(default_factory=StatsCounter)
    ids: list[str | None] = field(default_factory=list)
    parents: list[str | None] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    named: bool = False  # a session_info with a string name was seen: the last one's is `name`
    name: str | None = None


def tally(items: Iterable[tuple[int, dict, bytes] | Diagnostic], into: Tally,
          on_diagnostic: Callable[[Diagnostic], None]) -> Tally:
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


def stream_stats(stream: Stream, on_diagnostic: Callable[[Diagnostic], None]) -> tuple[dict, int, str | None]:
    """(the stats, the number of entries, the session's name) of `stream`, read to its end; the reader's
    diagnostics, then the tree's, go to `on_diagnostic` in file order."""
    # a legacy file's migration runs in file order: one process
    cut = None if stream.dialect.legacy else split.split_point(stream._fp, stream._offset)
    counted = _split(stream, cut, on_diagnostic) if cut is not None else None
    if counted is None:
        counted = tally(stream.items(), Tally(), on_diagnostic)
    else:
        stream.close()
    tree = Tree.from_columns(counted.ids, counted.parents, counted.types, counted.lines, [])
    for d in tree.diagnostics:
        on_diagnostic(d)
    return counted.counter.result(tree), len(tree), counted.name


def _split(stream: Stream, cut: int, on_diagnostic: Callable[[Diagnostic], None]) -> Tally | None:
    """The tally of the whole stream from two processes; None when no worker could start (nothing read)."""
    started = split.fork_worker(_worker, (stream, cut), duplex=False)
    if started is None:
        return None
    here, worker = started
    first = stream.first_of_two(cut)
    mine = first.part(stream._offset, cut, stream._next_line, with_before=True)
    counted = tally(mine.items(), Tally(), on_diagnostic)
    base = mine.next_line - 1
    try:
        theirs: Tally
        diagnostics: list[Diagnostic]
        lines: array
        theirs, lines, diagnostics = here.recv()
    except (EOFError, OSError):  # the worker died: read its half here
        theirs = None  # type: ignore[assignment]
    finally:
        split.reap(here, worker)
    if theirs is None or not counted.counter.merge(theirs.counter):
        return tally(stream.part(cut, stream.size, base + 1).items(), counted, on_diagnostic)
    for d in diagnostics:
        on_diagnostic(replace(d, line=d.line + base))
    counted.ids += theirs.ids
    counted.parents += theirs.parents
    counted.types += theirs.types
    counted.lines += [line + base for line in lines]
    if theirs.named:
        counted.named, counted.name = True, theirs.name
    return counted


def _worker(stream: Stream, cut: int, conn) -> None:  # noqa: ANN001 - a multiprocessing Connection
    """The forked half: count [cut, end) with lines numbered from 1 and send it all back."""
    diagnostics: list[Diagnostic] = []
    counted = Tally()
    counted.counter.cost_log = []
    try:
        tally(replace(stream, on_progress=None).part(cut, stream.size, 1).items(), counted, diagnostics.append)
        lines = array("q", counted.lines)
        counted.lines = []
        conn.send((counted, lines, diagnostics))
    except Exception:  # noqa: BLE001 - no traceback on the user's terminal: the parent counts this half itself
        return
