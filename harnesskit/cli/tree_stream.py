"""`inspect --tree` of a whole v3 file from one read, in one process or, for a big file with a core to
spare, two.

Each entry leaves only what its line needs: its id and parentId (the tree), its timestamp as written
(siblings are drawn oldest first: only theirs are ever read), its line number (the tree's warnings)
and its line without the lead, "id kind: start of the summary", already `visible`, as UTF-8, with
where a label mark goes in it and whether every character of it takes one column (then cutting the
line to the width is a slice). Labels and the name are gathered in file order. The drawing walks
chains as runs: a run shares one lead, so its lines are made in one comprehension, with no stack
push per entry.

Two processes: a forked worker reads the second half (cut by split.split_point) and keeps its columns
as pickled batches (bytes take a fraction of the memory of the objects); the parent reads the first
half meanwhile, then takes the batches one at a time, renumbers the lines and draws. Labels and the
name travel as changes applied after the first half's, the worker's warnings come after the parent's:
stdout and stderr are those of one process byte for byte. A worker that fails costs only time (the
parent reads its half itself).
"""

from __future__ import annotations

import itertools
import operator
import pickle
import re
import sys
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from itertools import compress, repeat

from harnesskit.session import split
from harnesskit.session.format import session_name
from harnesskit.session.migrate import iso_to_ms
from harnesskit.session.reader import MAX_DEPTH, Diagnostic
from harnesskit.session.stream import Stream
from harnesskit.session.tree import Tree, label_change
from harnesskit.text import visible

from . import render, tree_lane
from .render import _stacked
from .table import _NOT_ASCII, ELLIPSIS, char_width, fit

BATCH = 50_000  # entries per pickled batch of the worker
CHUNK = 8192  # lines per encoded chunk of output
_ELLIPSIS = ELLIPSIS.encode()
_REFUSED = (*tree_lane.Refused, ValueError)  # ValueError: a line that is not UTF-8
UNNAMED = ...  # no session_info with a string name was read (a singleton: it stays itself through pickle)


@dataclass
class Columns:
    """What the drawing keeps of a run of entries (see the module doc)."""

    ids: list[str | None] = field(default_factory=list)
    parents: list[str | None] = field(default_factory=list)
    lines: array = field(default_factory=lambda: array("q"))
    stamps: list[str | None] = field(default_factory=list)  # the timestamps as written (None: not a string)
    bodies: list[bytes] = field(default_factory=list)  # UTF-8: half the memory of a str with one arrow in it
    marks_at: array = field(default_factory=lambda: array("l"))  # where " [label] ← leaf" goes in the body
    slow: bytearray = field(default_factory=bytearray)  # 1: cut with table.fit (not all one-column characters)
    labels: dict[str, str | None] = field(default_factory=dict)  # target -> its last label (None: cleared)
    name: object = UNNAMED

    def extend(self, later: Columns, base: int) -> None:
        """Append the columns of the entries after these, their lines numbered from `base` + 1."""
        self.ids += later.ids
        self.parents += later.parents
        self.lines += later.lines if not base else array("q", [line + base for line in later.lines])
        self.stamps += later.stamps
        self.bodies += later.bodies
        self.marks_at += later.marks_at
        self.slow += later.slow
        for target, label in later.labels.items():
            self.labels.pop(target, None)  # keep the file order of the last changes
            self.labels[target] = label
        if later.name is not UNNAMED:
            self.name = later.name


_KNOWN_LIMIT = 512  # one-column characters let into _one_column's pattern (a hostile file has many)
_known: list[str] = []  # the non-ASCII characters known to take one column (→, …, ✗, é: the common ones)
_one_column = re.compile("[\\x20-\\x7e]*")  # printable ASCII and _known, in C


def _narrow(text: str) -> bool:
    """Every character is printable and takes one column (as table.fit measures): a cut is a slice."""
    global _one_column
    while True:
        end = _one_column.match(text).end()  # type: ignore[union-attr]
        if end == len(text):
            return True
        c = text[end]
        if c.isascii() or not c.isprintable() or char_width(c) != 1:  # a tab or newline, wide, zero-width
            return False
        if len(_known) >= _KNOWN_LIMIT:
            return _narrow_slowly(text)
        _known.append(c)
        _one_column = re.compile("[\\x20-\\x7e" + "".join(map(re.escape, _known)) + "]*")


def _narrow_slowly(text: str) -> bool:
    return text.isprintable() and all(char_width(c) == 1 for c in set(_NOT_ASCII.findall(text)))


def collect(stream: Stream, width: int, into: Columns, on_diagnostic: Callable[[Diagnostic], None],
            batch: Callable[[Columns], Columns] | None = None) -> Columns:
    """The columns of the stream's entries appended to `into` (`batch`, when given, takes them every BATCH
    entries and gives back the columns to go on with). Each line takes the fast lane (tree_lane) when it
    can, else the reader's path (`Stream.exact`): the same columns either way."""
    ids, parents, lines, stamps = into.ids, into.parents, into.lines, into.stamps
    bodies, marks_at, slow, labels = into.bodies, into.marks_at, into.slow, into.labels
    summary, fast_summary, decode, refused = render.entry_summary, tree_lane.summary, tree_lane.decode, _REFUSED
    if sys.getrecursionlimit() > MAX_DEPTH:  # msgspec's depth is the recursion limit's: it must stay below orjson's
        decode = tree_lane.refuse
    exact, other_roles = stream.exact, tree_lane._OTHER_ROLES
    by_type: dict[str, str] = {}  # the kind shown, `visible`, once per type and per role
    by_role: dict[str, str] = {}
    previous = None
    count = len(ids)
    for d in stream.before:
        on_diagnostic(d)
    for number, offset, block, terminated in stream.blocks():
        for content in block:
            try:
                if not terminated:
                    raise tree_lane.Slow
                fast = decode(content)
                message = fast.message
                if fast.type != "message" or message is None or message.role in other_roles:
                    raise tree_lane.Slow
                if not content.isascii():
                    content.decode()  # (UnicodeDecodeError is a ValueError: the reader reports the byte)
                text = fast_summary(message, width)
                entry_id, parent, stamp, role = fast.id, fast.parentId, fast.timestamp, message.role
                kind = "message"
                known = by_role.get(role)
                if known is None:
                    known = by_role[role] = visible(f"message:{role}")
            except refused:
                entry = None
                for item in exact(number, offset, content, terminated):
                    if type(item) is Diagnostic:
                        on_diagnostic(item)
                    else:
                        entry = item[1]  # type: ignore[index]
                number += 1
                offset += len(content)
                if entry is None:
                    continue
                entry_id, parent, kind = entry.get("id"), entry.get("parentId"), entry["type"]
                if type(entry_id) is not str:
                    entry_id = None
                if type(parent) is not str:
                    parent = None
                stamp = entry.get("timestamp")
                if type(stamp) is not str:
                    stamp = None
                message = entry.get("message") if kind == "message" else None
                if type(message) is dict:  # render.entry_kind, once per role
                    role = message.get("role")
                    known = by_role.get(role) if type(role) is str else None
                    if known is None:
                        known = visible(f"message:{role}")
                        if type(role) is str:
                            by_role[role] = known
                else:
                    known = by_type.get(kind)
                    if known is None:
                        known = by_type[kind] = visible(kind)
                text = summary(entry, width)
                if kind == "label":
                    change = label_change(entry)
                    if change is not None:
                        labels.pop(change[0], None)
                        labels[change[0]] = change[1]
                elif kind == "session_info":
                    into.name = session_name(entry, into.name)  # type: ignore[arg-type]
            else:
                number += 1
                offset += len(content)
            ids.append(entry_id)
            # a child's parentId as the same string object as its parent's id (a chain keeps one string)
            parents.append(previous if parent == previous and parent is not None else parent)
            previous = entry_id
            lines.append(number - 1)
            stamps.append(stamp)  # read (iso_to_ms) only where siblings are sorted
            # a line holds at least "id kind: " before the summary: of the summary, cols + 1 columns less
            # that show whether the line is cut and all it can show (fit reads no further)
            room = width - 2 - len(known) - (len(entry_id) if entry_id is not None else 1)
            shown_id = entry_id or "?"
            head = f"{shown_id if shown_id.isprintable() else visible(shown_id)} {known}"
            if not text.isprintable():
                text = visible(text)
            body = f"{head}: {text[:room] if room > 0 else ''}"
            bodies.append(body.encode())  # (`visible` left no lone surrogate)
            marks_at.append(len(head))
            slow.append(0 if _narrow(body) else 1)
            count += 1
            if batch is not None and count >= BATCH:
                into = batch(into)
                ids, parents, lines, stamps = into.ids, into.parents, into.lines, into.stamps
                bodies, marks_at, slow, labels = into.bodies, into.marks_at, into.slow, into.labels
                count = 0
    return into


def read_columns(stream: Stream, width: int, on_diagnostic: Callable[[Diagnostic], None]) -> Columns:
    """The columns of the whole stream, read to its end; the reader's diagnostics in file order."""
    cut = split.split_point(stream._fp, stream._offset)
    if cut is not None:
        columns = _split(stream, cut, width, on_diagnostic)
        if columns is not None:
            stream.close()
            return columns
    return collect(stream, width, Columns(), on_diagnostic)


def _split(stream: Stream, cut: int, width: int, on_diagnostic: Callable[[Diagnostic], None]) -> Columns | None:
    """The columns from two processes; None when no worker could start (nothing read yet)."""
    started = split.fork_worker(_worker, (stream, cut, width), duplex=False)
    if started is None:
        return None
    here, worker = started
    first = stream.first_of_two(cut)
    theirs = Columns()
    diagnostics: list[Diagnostic] | None = None
    try:  # (Ctrl-C reaches both processes: each stops, and the worker is reaped here)
        mine = first.part(stream._offset, cut, stream._next_line, with_before=True)
        columns = collect(mine, width, Columns(), on_diagnostic)
        base = mine.next_line - 1
        try:
            while diagnostics is None:
                message = pickle.loads(here.recv_bytes())
                if type(message) is list:  # the last: the worker's diagnostics
                    diagnostics = message
                else:
                    theirs.extend(message, 0)
        except (EOFError, OSError, pickle.UnpicklingError):  # the worker died: read its half here
            pass
    finally:
        split.reap(here, worker)
    if diagnostics is None:
        return collect(stream.part(cut, stream.size, base + 1), width, columns, on_diagnostic)
    columns.extend(theirs, base)
    for d in diagnostics:
        on_diagnostic(replace(d, line=d.line + base))
    return columns


def _worker(stream: Stream, cut: int, width: int, conn) -> None:  # noqa: ANN001 - a multiprocessing Connection
    """The forked half: collect [cut, end) with lines numbered from 1, in pickled batches, and send them."""
    try:
        diagnostics: list[Diagnostic] = []
        blobs: list[bytes] = []

        def batch(columns: Columns) -> Columns:
            blobs.append(pickle.dumps(columns, protocol=pickle.HIGHEST_PROTOCOL))
            return Columns()

        last = collect(replace(stream, on_progress=None).part(cut, stream.size, 1), width, Columns(),
                       diagnostics.append, batch)
        blobs.append(pickle.dumps(last, protocol=pickle.HIGHEST_PROTOCOL))
        for blob in blobs:
            conn.send_bytes(blob)
        blobs.clear()
        conn.send_bytes(pickle.dumps(diagnostics, protocol=pickle.HIGHEST_PROTOCOL))
    except BaseException:  # noqa: BLE001 - no traceback on the user's terminal (Ctrl-C: the parent reports it)
        return


def draw(columns: Columns, width: int, tree: Tree, labels: dict[str, str]) -> Iterator[bytes]:
    """render.draw_columns of every entry (the same lines), as chunks of encoded lines."""
    ids, bodies, marks_at = columns.ids, columns.bodies, columns.marks_at
    n = len(ids)
    slow = columns.slow if width >= 4 else bytearray(b"\x01") * n  # (a lead of "…" leaves no room to slice)
    leaf = tree.leaf_id
    marked = set(labels)
    if leaf:
        marked.add(leaf)
    for pos in compress(range(n), map(marked.__contains__, ids)):  # lines with marks: cut by table.fit
        slow[pos] = 1
    if "?" in marked:  # the id shown for an entry without one
        for pos in compress(range(n), map(operator.not_, ids)):
            slow[pos] = 1
    half = width // 2
    stamps = columns.stamps

    def stamp(pos: int) -> int | None:
        return iso_to_ms(stamps[pos])

    def line(pos: int, lead: str) -> str:
        body = bodies[pos].decode()
        if not slow[pos]:
            return _sliced(lead, body, width - len(lead))
        entry_id = ids[pos] or "?"
        marks = f" [{labels[entry_id]}]" if entry_id in labels else ""
        if entry_id == leaf:
            marks += " ← leaf"
        if marks:
            at = marks_at[pos]
            body = body[:at] + visible(marks) + body[at:]
        return fit(lead + body, width)

    out: list[bytes] = []
    parent_of = tree.parent_at if tree.parent_at is not None else array("q", map(tree.by_id.get, tree.parents,
                                                                              repeat(-1)))
    for start, stop, lead, prefix in _runs(tree, parent_of, stamp):
        if len(lead) > half:  # nested deeper than half the line: its last levels only
            lead = ELLIPSIS + lead[len(lead) - half + 1:]
        out.append(line(start, lead).encode())
        start += 1
        if start < stop:  # the rest of a chain: one lead, every line a slice when it can be
            if len(prefix) > half:
                prefix = ELLIPSIS + prefix[len(prefix) - half + 1:]
            room = width - len(prefix)
            keep = room - 1
            encoded = prefix.encode()
            while start < stop:  # slices up to the next line that needs table.fit, then that line
                end = slow.find(1, start, stop)
                cut = stop if end < 0 else end
                # in bytes: an ASCII body's length and slices are its characters'
                out += [(encoded + body if len(body) <= room else encoded + body[:keep] + _ELLIPSIS) if body.isascii()
                        else _sliced(prefix, body.decode(), room).encode() for body in bodies[start:cut]]
                if end >= 0:
                    out.append(line(end, prefix).encode())
                start = cut + 1
        if len(out) >= CHUNK:
            out.append(b"")
            yield b"\n".join(out)
            out = []
    if out:
        out.append(b"")
        yield b"\n".join(out)


def _sliced(lead: str, body: str, room: int) -> str:
    """The line of a body of one-column characters after `lead`, cut to `room` columns."""
    return lead + body if len(body) <= room else lead + body[:room - 1] + ELLIPSIS


def _runs(tree: Tree, parent_of: array, stamp: Callable[[int], int | None]) -> Iterator[tuple[int, int, str, str]]:
    """render._walk in runs: (start, stop, lead, prefix) for the entries start..stop-1 in drawing order, the
    first drawn with `lead`, the others (each the only child of the one before) with `prefix`. Children
    are the next entry when it is one (a chain) and the `jumps` (any other child: a branch, a parent
    later in the file), so only the jumps are indexed."""
    n = len(parent_of)
    roots: list[int] = []
    jumps: dict[int, list[int]] = {}
    starts = compress(range(1, n), map(operator.ne, itertools.islice(parent_of, 1, None), range(n - 1)))
    for pos in itertools.chain([0] if n else [], starts):  # file order: children in file order, as Tree.children
        parent = parent_of[pos]
        if parent < 0:
            roots.append(pos)
        else:
            jumps.setdefault(parent, []).append(pos)
    stack = _stacked(tree, roots, "", stamp)
    drawn = bytearray(n)
    scan = 0
    while True:
        if not stack:
            # entries no root reaches (a parentId cycle): each starts a tree of its own, drawn once
            scan = drawn.find(0, scan)
            if scan < 0:
                break
            stack = [(scan, "", "")]
        pos, lead, prefix = stack.pop()
        if drawn[pos]:
            continue
        start = pos
        after = pos + 1
        while after < n and parent_of[after] == pos and pos not in jumps:  # its only child: the next entry
            pos = after
            after += 1
        drawn[start:after] = b"\x01" * (after - start)
        yield start, after, lead, prefix
        chained = after < n and parent_of[after] == pos
        others = jumps.get(pos)
        if others is not None:
            stack.extend(_stacked(tree, sorted([*others, after]) if chained else others, prefix, stamp))
        elif chained:
            stack.append((after, prefix, prefix))
