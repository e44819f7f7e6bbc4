"""`inspect --tree` of a whole v3 file from one read, in one process or, for a big file with a core to
spare, two.

Each entry leaves only what its line needs: its id and parentId (the tree), its timestamp as written
(siblings are drawn oldest first: only theirs are ever read), its line number (the tree's warnings)
and its line without the lead, "id kind: start of the summary", already `visible`, as UTF-8, with
where a label mark goes in it and whether every character of it takes one column (then cutting the
line to the width is a slice). Labels and the name are gathered in file order. The drawing walks
chains as runs: a run shares one lead, so its lines are made in one comprehension, with no stack
push per entry.

Two processes: a forked worker reads the second half (cut by split.split_point, the parent taking a
little less: SHARE) and sends back its ids, parentIds and line numbers as pickled batches as it reads
them (a thread sends them), then how its half links among itself (tree.links_of). The parent reads the
first half meanwhile, links it the same way, takes the worker's batches as they come (looking for an
id on both sides), joins the two halves' links into the tree's parent positions (tree.join_halves;
Tree.from_columns where an id is there twice), asks the worker for the timestamps of the siblings the
walk sorts (a few) and plans the walk as segments of one half each. The worker draws its segments
(the parent sends it the labels, the leaf and its segments, in groups of consecutive ones) and sends
each group once drawn, while the parent draws its own; the parent prints the worker's groups in their
turn, as they come through the pipe. So the drawing,
sequential in one process, is shared, and neither bodies nor most timestamps cross the pipe. Labels and
the name travel as changes applied after the first half's, the worker's warnings come after the parent's:
stdout and stderr are those of one process byte for byte. A worker that fails costs only time (the
parent reads its half itself, again if it must, and draws what the worker did not send).
"""

from __future__ import annotations

import itertools
import operator
import pickle
import queue
import re
import sys
import threading
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import compress
from typing import TYPE_CHECKING

from harnesskit.session import split
from harnesskit.session.format import session_name
from harnesskit.session.migrate import iso_to_ms
from harnesskit.session.reader import MAX_DEPTH, Diagnostic
from harnesskit.session.stream import Stream
from harnesskit.session.tree import Links, Tree, join_halves, label_change, links_of
from harnesskit.text import visible

from . import render, tree_lane
from .output import Checked
from .render import _stacked
from .table import _NOT_ASCII, ELLIPSIS, char_width, fit, load_widths

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

BATCH = 50_000  # entries per pickled batch of the worker
# The parent's part of a big file (bytes): it joins the halves' links and plans the walk after both are
# read, while the worker waits; so it reads a little less, and takes the worker's batches as they come
SHARE = 0.49
CHUNK = 8192  # lines per encoded chunk of output
_ELLIPSIS = ELLIPSIS.encode()
_REFUSED = (*tree_lane.Refused, ValueError)  # ValueError: a line that is not UTF-8
UNNAMED = ...  # no session_info with a string name was read (a singleton: it stays itself through pickle)


@dataclass
class Columns:
    """What the drawing keeps of a run of entries (see the module doc)."""

    ids: list[str | None] = field(default_factory=list)
    parents: list[str | None] = field(default_factory=list)
    # (from two processes, the worker's numbered from its own first line: `Renumbered` numbers them in the file)
    lines: array = field(default_factory=lambda: array("q"))
    stamps: list[str | None] = field(default_factory=list)  # the timestamps as written (None: not a string)
    bodies: list[bytes] = field(default_factory=list)  # UTF-8: half the memory of a str with one arrow in it
    marks_at: array = field(default_factory=lambda: array("l"))  # where " [label] ← leaf" goes in the body
    slow: bytearray = field(default_factory=bytearray)  # 1: cut with table.fit (not all one-column characters)
    labels: dict[str, str | None] = field(default_factory=dict)  # target -> its last label (None: cleared)
    name: object = UNNAMED
    # id -> its last position, filled by `collect` when given (each id indexed while it is fresh in memory:
    # after the reading, the ids lie scattered among the bodies, and indexing them costs twice as much)
    by_id: dict[str | None, int] | None = None
    remote: Remote | None = None  # the worker that holds the bodies of the later entries (read_columns)

    def extend(self, later: Columns, base: int) -> None:
        """Append the columns of the entries after these, their lines numbered from `base` + 1."""
        self.ids += later.ids
        self.parents += later.parents
        self.lines += later.lines if not base else array("q", map(base.__add__, later.lines))
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


SHORTCUT = True  # False: every body made by _add_body (the tests hold the shortcut to it)
_ASCII_BYTES = bytes(range(128))
_ARROW = "→".encode()  # the commonest character beyond ASCII in a summary (tool calls and results)
_BEYOND_LIMIT = 4096  # non-ASCII contents of printable bodies remembered (a hostile file has many)
_beyond_flags: dict[bytes, int] = {}  # the UTF-8 of a printable body's non-ASCII characters -> `slow`


def _beyond_flag(beyond: bytes) -> int:
    """`slow` of a printable body whose non-ASCII characters are these (UTF-8): 0 when each takes one
    column, as `_narrow` finds (remembered: most lines have the same few, an arrow or a cross)."""
    flag = 0 if all(char_width(c) == 1 for c in set(beyond.decode())) else 1
    if len(_beyond_flags) < _BEYOND_LIMIT:
        _beyond_flags[beyond] = flag
    return flag


def collect(stream: Stream, width: int, into: Columns, on_diagnostic: Callable[[Diagnostic], None],
            batch: Callable[[Columns], Columns] | None = None) -> Columns:
    """The columns of the stream's entries appended to `into` (`batch`, when given, takes them every BATCH
    entries and gives back the columns to go on with). Each line takes the fast lane (tree_lane) when it
    can, else the reader's path (`Stream.exact`): the same columns either way."""
    ids, parents, lines, stamps = into.ids, into.parents, into.lines, into.stamps
    bodies, marks_at, slow, labels = into.bodies, into.marks_at, into.slow, into.labels
    index, position = into.by_id, len(ids)
    summary, fast_summary, decode, refused = render.entry_summary, tree_lane.summary, tree_lane.decode, _REFUSED
    if sys.getrecursionlimit() > MAX_DEPTH:  # msgspec's depth is the recursion limit's: it must stay below orjson's
        decode = tree_lane.refuse
    exact, other_roles = stream.exact, tree_lane._OTHER_ROLES
    shortcut = SHORTCUT
    arrow_narrow: bool | None = None  # → takes one column (found at the first line with one)
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
            if index is not None:
                index[entry_id] = position
            position += 1
            # a child's parentId as the same string object as its parent's id (a chain keeps one string)
            parents.append(previous if parent == previous and parent is not None else parent)
            previous = entry_id
            lines.append(number - 1)
            stamps.append(stamp)  # read (iso_to_ms) only where siblings are sorted
            # a line holds at least "id kind: " before the summary: of the summary, cols + 1 columns less
            # that show whether the line is cut and all it can show (fit reads no further)
            room = width - 2 - len(known) - (len(entry_id) if entry_id is not None else 1)
            shown_id = entry_id or "?"
            body = f"{shown_id} {known}: {text[:room] if room > 0 else ''}"
            if shortcut and body.isprintable():  # the common line, as _add_body makes it: the shown start of the text
                # is printable, so `visible` of the text starts the same; one-column: no wide character
                data = body.encode()
                bodies.append(data)
                marks_at.append(len(shown_id) + 1 + len(known))
                if body.isascii():
                    slow.append(0)
                elif len(data) - len(body) == 2 * data.count(_ARROW) and (
                        arrow_narrow if arrow_narrow is not None else (arrow_narrow := char_width("→") == 1)):
                    slow.append(0)  # its only non-ASCII characters are arrows (three bytes each: any other adds)
                else:
                    beyond = data.translate(None, _ASCII_BYTES)  # the UTF-8 of its non-ASCII characters
                    flag = _beyond_flags.get(beyond)
                    slow.append(_beyond_flag(beyond) if flag is None else flag)
            else:
                _add_body(shown_id, known, text, room, bodies, marks_at, slow)
            count += 1
            if batch is not None and count >= BATCH:
                into = batch(into)
                ids, parents, lines, stamps = into.ids, into.parents, into.lines, into.stamps
                bodies, marks_at, slow, labels = into.bodies, into.marks_at, into.slow, into.labels
                index, position = into.by_id, len(ids)
                count = 0
    return into


def _add_body(shown_id: str, known: str, text: str, room: int, bodies: list[bytes], marks_at: array,
              slow: bytearray) -> None:
    """The body of a line with a character that is not printable (the way of every line before the
    shortcut in `collect`: tests/cli/test_tree_lane.py holds the two to each other)."""
    head = f"{shown_id if shown_id.isprintable() else visible(shown_id)} {known}"
    plain = text.isprintable()
    if not plain:
        text = visible(text)
    body = f"{head}: {text[:room] if room > 0 else ''}"
    bodies.append(body.encode())  # (`visible` left no lone surrogate)
    marks_at.append(len(head))
    # printable ASCII takes one column a character: only the head of such a line is looked at
    slow.append(0 if (plain and text.isascii() and head.isascii() and head.isprintable()) or _narrow(body)
                else 1)


def read_columns(stream: Stream, width: int, on_diagnostic: Callable[[Diagnostic], None]) -> Columns:
    """The columns of the whole stream, read to its end; the reader's diagnostics in file order. From two
    processes, the worker's entries come without their bodies: it keeps them and draws their lines itself
    (`draw`); `release` ends it."""
    cut = split.split_point(stream._fp, stream._offset, SHARE)
    if cut is not None:
        columns = _split(stream, cut, width, on_diagnostic)
        if columns is not None:
            return columns
    return collect(stream, width, Columns(), on_diagnostic)


class Renumbered(Sequence[int]):
    """Line numbers of both halves, the worker's counted from its first line and numbered in the file
    only when read: the tree reads a few (where its diagnostics point), not half a million."""

    def __init__(self, lines: array, offset: int, base: int) -> None:
        self.lines, self.offset, self.base = lines, offset, base

    def __len__(self) -> int:
        return len(self.lines)

    def __getitem__(self, pos: int) -> int:  # type: ignore[override]
        return self.lines[pos] + self.base if pos >= self.offset else self.lines[pos]


@dataclass
class Remote:
    """The worker holding the bodies of the entries from position `offset` on (the file from `cut`)."""

    conn: Connection
    process: BaseProcess
    offset: int
    stream: Stream  # (kept open: a worker lost while drawing has its half read again here)
    cut: int
    first_line: int
    # how each half links among itself: (the parent's by_id, its Links), the worker's Links (see `shape`)
    links: tuple[dict[str, int], Links, Links] | None = None

    def release(self) -> None:
        split.reap(self.conn, self.process)
        self.stream.close()


def release(columns: Columns) -> None:
    """End the worker of a two-process read, if there is one (after `draw`, or instead of it)."""
    if columns.remote is not None:
        columns.remote.release()


def _split(stream: Stream, cut: int, width: int, on_diagnostic: Callable[[Diagnostic], None]) -> Columns | None:
    """The columns from two processes; None when no worker could start (nothing read yet)."""
    load_widths()
    started = split.fork_worker(_worker, (stream, cut, width), duplex=True)
    if started is None:
        return None
    here, worker = started
    first = stream.first_of_two(cut)
    last = Columns()  # the worker's last batch: its labels and name (its ids, parentIds and lines go on the parent's)
    diagnostics: list[Diagnostic] | None = None
    kept = False
    try:  # (Ctrl-C reaches both processes: each stops, and the worker is reaped here)
        mine = first.part(stream._offset, cut, stream._next_line, with_before=True)
        columns = collect(mine, width, Columns(by_id={}), on_diagnostic)
        base = mine.next_line - 1
        by_id, links = links_of(columns.ids, columns.parents, columns.by_id)  # while the worker reads on
        columns.by_id = None
        offset = len(columns.ids)
        across = False  # an id of the worker's half is in this one (then Tree.from_columns says where)
        try:
            while diagnostics is None:  # (the worker's batches come as it reads: most are here already)
                message = pickle.loads(here.recv_bytes())
                if type(message) is tuple:  # the last: the worker's diagnostics and links
                    diagnostics, their_links = message
                else:
                    columns.ids += message.ids
                    columns.parents += message.parents
                    columns.lines += message.lines  # (numbered from the worker's first: see `Renumbered`)
                    last = message
                    across = across or not by_id.keys().isdisjoint(message.ids)
        except (EOFError, OSError, pickle.UnpicklingError):  # the worker died: read its half here
            del columns.ids[offset:], columns.parents[offset:], columns.lines[offset:]
        if diagnostics is not None:
            columns.extend(Columns(labels=last.labels, name=last.name), base)
            columns.remote = Remote(here, worker, offset, stream, cut, base + 1,
                                    None if across else (by_id, links, their_links))
            kept = True
        del by_id
    finally:
        if not kept:
            split.reap(here, worker)
    if diagnostics is None:
        columns = collect(stream.part(cut, stream.size, base + 1), width, columns, on_diagnostic)
        stream.close()
        return columns
    for d in diagnostics:
        on_diagnostic(replace(d, line=d.line + base))
    return columns


class _Sender:
    """Pickled messages sent on a thread of their own, in order: the worker reads on while the parent,
    still reading its own half, leaves the pipe full."""

    def __init__(self, conn: Connection) -> None:
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._failed = False
        self._thread = threading.Thread(target=self._send, args=(conn,), daemon=True)
        self._thread.start()

    def put(self, message: object) -> None:
        self._queue.put(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def put_bytes(self, data: bytes) -> None:
        self._queue.put(data)

    def _send(self, conn: Connection) -> None:
        try:
            while (data := self._queue.get()) is not None:
                conn.send_bytes(data)
        except OSError:  # the parent is gone
            self._failed = True

    def close(self) -> None:
        """Once everything put is sent (BrokenPipeError: it could not be)."""
        self._queue.put(None)
        self._thread.join()
        if self._failed:
            raise BrokenPipeError("the parent is gone")


def _worker(stream: Stream, cut: int, width: int, conn: Connection) -> None:
    """The forked half: collect [cut, end) with lines numbered from 1 and send all but the bodies as it
    reads (pickled, BATCH entries a message, then the diagnostics and its half's links), then draw the
    groups of runs the parent asks for and send their lines, a message a group."""
    try:
        diagnostics: list[Diagnostic] = []
        sender = _Sender(conn)
        sent = 0

        def batch(columns: Columns) -> Columns:  # the ids, parentIds and lines of the entries read since the last
            nonlocal sent
            n = len(columns.ids)
            sender.put(Columns(columns.ids[sent:n], columns.parents[sent:n], columns.lines[sent:n]))
            sent = n
            return columns  # (kept whole: the worker draws its half)

        columns = collect(replace(stream, on_progress=None).part(cut, stream.size, 1), width, Columns(by_id={}),
                          diagnostics.append, batch)
        sender.put(Columns(columns.ids[sent:], columns.parents[sent:], columns.lines[sent:], labels=columns.labels,
                           name=columns.name))
        sender.put((diagnostics, links_of(columns.ids, columns.parents, columns.by_id)[1]))
        columns.by_id = None
        sender.close()
        stamps = columns.stamps
        asked = pickle.loads(conn.recv_bytes())  # the timestamps of the siblings the walk sorts
        if asked is None:
            return
        conn.send_bytes(pickle.dumps(list(map(stamps.__getitem__, asked)), protocol=pickle.HIGHEST_PROTOCOL))
        del stamps
        columns.parents, columns.stamps, columns.lines = [], [], array("q")  # (their memory takes lines drawn)
        request = pickle.loads(conn.recv_bytes())
        if request is None:
            return
        labels, leaf, groups = request
        render = _renderer(columns, width, labels, leaf, joined=False)
        sender = _Sender(conn)  # each group on its way once drawn: the parent takes it in its turn
        for group in groups:
            sender.put_bytes(b"".join([b"\n".join(lines) for lines in render(group)]))
        del columns, render
        sender.close()
    except BaseException:  # noqa: BLE001 - no traceback on the user's terminal (Ctrl-C: the parent reports it)
        return


def shape(columns: Columns) -> tuple[array, list[Diagnostic], list[int] | None]:
    """Each entry's parent position (-1: none) and the tree's diagnostics, as `Tree.from_columns` finds them:
    from two processes, joined from the links each found in its own half (`links_of`, the worker's while
    the parent collected its own), so neither the index of a million ids nor most lookups are made after
    the reading; from_columns itself for one process, or when an id is there twice. Third: the starts
    of the runs (`_breaks`), when known (from the halves)."""
    remote = columns.remote
    lines: Sequence[int] = columns.lines
    if remote is not None:
        lines = Renumbered(columns.lines, remote.offset, remote.first_line - 1)
        if remote.links is not None:
            by_id, mine, theirs = remote.links
            remote.links = None  # (the parent's half's by_id goes with it)
            joined = join_halves(columns.ids, columns.parents, lines, remote.offset, by_id, mine, theirs,
                                 across=False)  # (_split looked at each batch of the worker's ids as it came)
            if joined is not None:
                return joined
    tree = Tree.from_columns(columns.ids, columns.parents, [], lines, [])
    assert tree.parent_at is not None
    return tree.parent_at, tree.diagnostics, None


def draw(columns: Columns, width: int, parent_of: array, labels: dict[str, str], starts: list[int] | None = None
         ) -> Iterator[Checked]:
    """render.draw_columns of every entry (the same lines), as chunks of encoded lines: `Checked`, as every
    text in them went through `visible` or is printable (emit's guard would change no byte). `parent_of`
    is each entry's parent position, `starts` where it is not the entry before (`shape`; None: found
    here). The walk is cut into segments of at most CHUNK lines of one half; the worker's are drawn by
    the worker meanwhile (groups of consecutive ones, a message each) and printed here in their turn."""
    stamps = columns.stamps  # (from two processes, those of the parent's half: the worker's are asked for)
    leaf = columns.ids[-1] if columns.ids else None  # the last entry in file order, as pi
    remote = columns.remote
    mine = _renderer(columns, width, labels, leaf)
    if remote is None:
        yield from map(Checked, mine(_segments(_runs(parent_of, lambda pos: iso_to_ms(stamps[pos]),
                                                     _breaks(parent_of, starts)), width, len(parent_of))))
        return
    offset = remote.offset
    conn = remote.conn
    here = None  # draws the worker's half read here, once the worker is lost
    breaks = _breaks(parent_of, starts)
    asked = [pos - offset for pos in _sorted_siblings(parent_of, breaks) if pos >= offset]
    try:
        conn.send_bytes(pickle.dumps(asked, protocol=pickle.HIGHEST_PROTOCOL))
        told = pickle.loads(conn.recv_bytes())
    except (EOFError, OSError, pickle.UnpicklingError):  # the worker died: its half is read again here
        read = _read_theirs(remote, width)
        told = list(map(read.stamps.__getitem__, asked))
        here = _renderer(read, width, labels, leaf)
    theirs_at = dict(zip([pos + offset for pos in asked], told, strict=True))

    def stamp(pos: int) -> int | None:
        return iso_to_ms(stamps[pos] if pos < offset else theirs_at[pos])

    runs = _runs(parent_of, stamp, breaks)
    plan: list[tuple[bool, list]] = []  # (theirs, segments), in drawing order
    size = 0  # the lines of the last group
    for segment in _segments(runs, width, offset):
        theirs = segment[0] >= offset
        if plan and plan[-1][0] == theirs and (not theirs or size < CHUNK):
            plan[-1][1].append(segment)
            size += segment[1] - segment[0]
        else:
            plan.append((theirs, [segment]))
            size = segment[1] - segment[0]
    groups = [[(start - offset, stop - offset, lead, prefix) for start, stop, lead, prefix in segments]
              for theirs, segments in plan if theirs]
    if here is None:
        try:
            conn.send_bytes(pickle.dumps((labels, leaf, groups), protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            here = _renderer(_read_theirs(remote, width), width, labels, leaf)
    at = 0
    for theirs, segments in plan:
        if not theirs:
            yield from map(Checked, mine(segments))
            continue
        group = groups[at]
        at += 1
        if here is None:
            try:
                yield Checked(conn.recv_bytes())
                continue
            except (EOFError, OSError):  # the worker died: its half is read again here
                here = _renderer(_read_theirs(remote, width), width, labels, leaf)
        yield from map(Checked, here(group))


def _sorted_siblings(parent_of: array, breaks: tuple[list[int], dict[int, list[int]]]) -> list[int]:
    """The entries whose timestamps `_runs` may read (it sorts siblings by them): the roots, when there
    are more than one, and the children of each entry with more than one (its jumps, and the entry after
    it when that is its child)."""
    n = len(parent_of)
    roots, jumps = breaks
    return [*(roots if len(roots) > 1 else []), *itertools.chain.from_iterable(jumps.values()),
            *(pos + 1 for pos in jumps if pos + 1 < n and parent_of[pos + 1] == pos)]


def _read_theirs(remote: Remote, width: int) -> Columns:
    """The worker's half collected here (its diagnostics were reported already)."""
    stream = replace(remote.stream, on_progress=None)
    return collect(stream.part(remote.cut, stream.size, remote.first_line), width, Columns(), lambda d: None)


def _segments(runs: Iterator[tuple[int, int, str, str]], width: int, cut: int) -> Iterator[tuple[int, int, str, str]]:
    """The runs as segments (start, stop, lead, prefix) of at most CHUNK lines that do not cross `cut`, the
    leads cut to half the line; a run's later segments are led by its prefix (the same lines)."""
    half = width // 2
    for start, stop, lead, prefix in runs:
        if len(lead) > half:  # nested deeper than half the line: its last levels only
            lead = ELLIPSIS + lead[len(lead) - half + 1:]
        if len(prefix) > half:
            prefix = ELLIPSIS + prefix[len(prefix) - half + 1:]
        while start < stop:
            end = min(stop, start + CHUNK)
            if start < cut < end:
                end = cut
            yield start, end, lead, prefix
            start, lead = end, prefix


def _renderer(columns: Columns, width: int, labels: dict[str, str], leaf: str | None, joined: bool = True
              ) -> Callable[[Iterable[tuple[int, int, str, str]]], Iterator[bytes]]:
    """What draws segments of `columns`' entries: their lines, encoded, in chunks of about CHUNK lines.
    Not `joined` (the worker, which holds its drawn groups until the parent takes them in their turn),
    each body is dropped once drawn, and the lines stay apart until the group is drawn: they take the
    memory the bodies leave (objects of a size; a joined chunk would be new memory)."""
    ids, bodies, marks_at = columns.ids, columns.bodies, columns.marks_at
    n = len(bodies)  # (from two processes, the parent's ids go on beyond its bodies)
    slow = columns.slow if width >= 4 else bytearray(b"\x01") * n  # (a lead of "…" leaves no room to slice)
    marked = set(labels)
    if leaf:
        marked.add(leaf)
    for pos in compress(range(n), map(marked.__contains__, ids)):  # lines with marks: cut by table.fit
        slow[pos] = 1
    if "?" in marked:  # the id shown for an entry without one
        for pos in compress(range(n), map(operator.not_, ids)):
            slow[pos] = 1

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

    def render(segments: Iterable[tuple[int, int, str, str]]) -> Iterator[bytes]:
        out: list[bytes] = []
        for first, stop, lead, prefix in segments:
            start = first
            out.append(line(start, lead).encode())
            start += 1
            if start < stop:  # the rest of a chain: one lead, every line a slice when it can be
                room = width - len(prefix)
                keep = room - 1
                encoded = prefix.encode()
                while start < stop:  # slices up to the next line that needs table.fit, then that line
                    end = slow.find(1, start, stop)
                    cut = stop if end < 0 else end
                    # in bytes: an ASCII body's length and slices are its characters'
                    out += [(encoded + body if len(body) <= room else encoded + body[:keep] + _ELLIPSIS)
                            if body.isascii() else _sliced(prefix, body.decode(), room).encode()
                            for body in bodies[start:cut]]
                    if end >= 0:
                        out.append(line(end, prefix).encode())
                    start = cut + 1
            if not joined:
                bodies[first:stop] = itertools.repeat(None, stop - first)
            if len(out) >= CHUNK:
                out.append(b"")
                yield b"\n".join(out) if joined else out  # type: ignore[misc]
                out = []
        if out:
            out.append(b"")
            yield b"\n".join(out) if joined else out  # type: ignore[misc]

    return render


def _sliced(lead: str, body: str, room: int) -> str:
    """The line of a body of one-column characters after `lead`, cut to `room` columns."""
    return lead + body if len(body) <= room else lead + body[:room - 1] + ELLIPSIS


def _breaks(parent_of: array, starts: Iterable[int] | None = None) -> tuple[list[int], dict[int, list[int]]]:
    """The roots, and the `jumps` (each entry's children but the entry after it), in file order, from the
    `starts` (the first entry and those whose parent is not the one before: found here when not given)."""
    n = len(parent_of)
    roots: list[int] = []
    jumps: dict[int, list[int]] = {}
    if starts is None:
        starts = itertools.chain([0] if n else [], compress(range(1, n), map(
            operator.ne, itertools.islice(parent_of, 1, None), range(n - 1))))
    for pos in starts:  # file order: children in file order, as Tree.children
        parent = parent_of[pos]
        if parent < 0:
            roots.append(pos)
        else:
            jumps.setdefault(parent, []).append(pos)
    return roots, jumps


def _runs(parent_of: array, stamp: Callable[[int], int | None],
          breaks: tuple[list[int], dict[int, list[int]]] | None = None) -> Iterator[tuple[int, int, str, str]]:
    """render._walk in runs: (start, stop, lead, prefix) for the entries start..stop-1 in drawing order, the
    first drawn with `lead`, the others (each the only child of the one before) with `prefix`. Children
    are the next entry when it is one (a chain) and the `jumps` (any other child: a branch, a parent
    later in the file), so only the jumps are indexed (`breaks`, found here when not given)."""
    n = len(parent_of)
    roots, jumps = _breaks(parent_of) if breaks is None else breaks
    # where a run ends: before an entry whose parent is not the one before it (a root or a jump), and
    # after an entry with more children than the next one; found by bisection, not entry by entry
    stops = sorted({*roots, *itertools.chain.from_iterable(jumps.values()), *(pos + 1 for pos in jumps)})
    stack = _stacked(None, roots, "", stamp)
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
        at = bisect_right(stops, start)  # the run: each entry the only child of the one before
        after = stops[at] if at < len(stops) and stops[at] < n else n
        pos = after - 1
        drawn[start:after] = b"\x01" * (after - start)
        yield start, after, lead, prefix
        chained = after < n and parent_of[after] == pos
        others = jumps.get(pos)
        if others is not None:
            stack.extend(_stacked(None, sorted([*others, after]) if chained else others, prefix, stamp))
        elif chained:
            stack.append((after, prefix, prefix))
