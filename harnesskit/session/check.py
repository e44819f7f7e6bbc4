"""Everything `validate` checks in one session file, in one streaming pass.

Memory is kept to what the structural checks need: id -> line, id -> parent, and the tool call
ids of assistant messages. Entries themselves are dropped as soon as they are checked.

Speed (benchmarks/bench.py): lines after the header take a fast path (in a file of 4 MB or more a
message line is first decoded and proven in one msgspec call, typed.py; else orjson straight on the raw
line, no Record objects) and fall back to the reader's own code for anything unusual, so every
diagnostic is the reader's. A large v3 file is split at a line boundary and its second half is
checked in a forked worker process; the worker returns only what the structural checks need (its
problems, ids, forward parents, references and the tool results whose path leaves its half), and
the parent merges them into exactly the problems, in exactly the order, that one pass gives.
"""

from __future__ import annotations

import gc
import os
import sys
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import orjson

from . import schemas
from .format import is_header
from .loader import SessionError, open_binary
from .migrate import Migrator, UnsupportedSession, detect, migrate_header
from .reader import MAX_DEPTH, Diagnostic, iter_lines, open_lines, open_range, open_reporting, read_records
from .shapes import proven_message, proven_valid
from .split import fork_worker, reap, split_point


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    path: str  # JSON path of the failing field ("$" for the whole line)
    message: str
    severity: str  # "error" | "warning"
    code: str

    def as_dict(self) -> dict:
        return {
            "file": self.file,
            "line": self.line,
            "path": self.path,
            "message": self.message,
            "severity": self.severity,
            "code": self.code,
        }


@dataclass
class FileReport:
    file: str
    entries: int = 0
    dialect: str | None = None
    problems: list[Problem] = field(default_factory=list)

    def count(self, severity: str) -> int:
        return sum(1 for p in self.problems if p.severity == severity)


@dataclass
class _State:
    report: FileReport
    line_of: dict[str, int] = field(default_factory=dict)
    parent_of: dict[str, str | None] = field(default_factory=dict)
    calls_of: dict[str, tuple[str, ...]] = field(default_factory=dict)
    forward: list[tuple[int, str, str]] = field(default_factory=list)  # line, id, parentId
    refs: list[tuple[int, str, str, bool]] = field(default_factory=list)  # line, path, id, root ok
    # a worker only: tool results whose path leaves its half (line, node, call id), decided by the parent
    pending: list[tuple[int, str, str]] | None = None
    # a worker only: duplicate-id problems (index, id, first line), reworded once line numbers are known
    duplicates: list[tuple[int, str, int]] | None = None
    # an id's latest duplicate: id -> (its line, its parentId). pi's byId links parentIds to it, so the
    # cycles are those of parent_of with these parents (line_of and parent_of keep the first entry's)
    redefined: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    last_id: str | None = None  # a parentId equal to it shares its string (memory)

    def add(self, line: int, path: str, message: str, code: str, severity: str = "error") -> None:
        self.report.problems.append(Problem(self.report.file, line, path, message, severity, code))

    def orphan(self, line: int, call_id: str) -> None:
        self.report.problems.append(_orphan(self.report.file, line, call_id))

    def duplicate(self, line: int, entry_id: str, first: int, parent: str | None) -> None:
        """An id seen before: reported, and its parent checked as pi and inspect see it (the later
        entry is the one parentIds link to), so a dangling or self parent here is not missed."""
        self.add(line, "$.id", f"duplicate id {entry_id!r} (first on line {first})", "duplicate-id")
        if self.duplicates is not None:
            self.duplicates.append((len(self.report.problems) - 1, entry_id, first))
        self.redefined[entry_id] = (line, parent)
        if parent is not None and (parent == entry_id or parent not in self.line_of):
            self.forward.append((line, entry_id, parent))


def _orphan(file: str, line: int, call_id: str) -> Problem:
    """A toolResult whose call is not on its path (found inline, or after a split's merge)."""
    return Problem(file, line, "$.message.toolCallId",
                   f"toolCallId {call_id!r} matches no toolCall on this entry's path", "error", "orphan-tool-result")


_REFERENCES = {
    "label": ("targetId", False),
    "compaction": ("firstKeptEntryId", False),
    "branch_summary": ("fromId", True),
}


#: v3 files at least this big are checked in two processes (when the machine has two cores)
_BUFFER = 1 << 17  # read buffer for the lines after the header


def check_file(path: str | os.PathLike[str], *, workers: int | None = None, fmt: str | None = None,
               strict: bool = False, on_progress: Callable[[int], None] | None = None) -> FileReport:
    """Check one file; a file that cannot be read at all is one error in its report.

    `workers` is how many processes may check a large file (default: 2 when there are two cores);
    the report is the same whatever it is. `fmt` forces a format (pi, claude, codex; default: the
    first lines tell); `strict` adds the remarks only --strict shows (unknown line types of others).
    `on_progress` hears how far a pi file's check has read (bytes, about every 128 KiB; with a worker,
    this process's share scaled to the whole file).
    """
    report = FileReport(str(path))
    try:
        fp = open_binary(path)
    except SessionError as error:
        report.problems.append(Problem(str(path), 0, "$", str(error).split(": ", 1)[-1], "error", "unreadable"))
        return report
    if workers is None:
        workers = min(2, os.cpu_count() or 1)
    enabled = gc.isenabled()
    gc.disable()  # millions of small retained objects make the cyclic GC dominate the run
    try:
        with fp:
            from .formats import sniff

            fmt = fmt or sniff(path)
            if fmt != "pi":
                from .formats.validate import check_foreign

                check_foreign(fp, _State(report), fmt, strict)
            else:
                _check_stream(fp, _State(report), workers, on_progress)
    finally:
        if enabled:
            gc.enable()
    return report


def _check_stream(fp, state: _State, workers: int = 1,  # noqa: ANN001 - a binary file
                  on_progress: Callable[[int], None] | None = None) -> None:
    header_line = 0
    migrator: Migrator | None = None
    last_line = 0
    for item in read_records(iter_lines(fp), from_start=True):  # up to the header; _scan reads the rest
        if isinstance(item, Diagnostic):
            state.add(item.line, "$", item.reason, item.code, item.severity)
            continue
        last_line = item.line
        obj = item.obj
        if not is_header(obj):
            state.add(item.line, "$.type",
                      f"the first JSON object must be a session header, found a {obj['type']!r} entry",
                      "no-header")
            return
        try:
            dialect = detect(obj)
        except UnsupportedSession as error:
            state.add(item.line, "$", str(error), "unsupported-version")
            return
        state.report.dialect = str(dialect)
        header_line = item.line
        migrator = Migrator(obj, dialect)
        if dialect.legacy:
            state.add(item.line, "$", f"legacy {dialect} file: run `harnesskit migrate` to rewrite it as v3",
                      "legacy-version", "warning")
        for problem in schemas.header_problems(migrate_header(obj, dialect)):
            state.add(item.line, problem.path, problem.message, "schema")
        break
    if migrator is None:
        if last_line == 0 and not state.report.problems:
            state.add(0, "$", "empty file: no session header", "no-header")
        elif not any(p.code == "no-header" for p in state.report.problems):
            state.add(1, "$", "no readable session header", "no-header")
        return
    offset = fp.tell()
    with open_reporting(fp.fileno(), None, _BUFFER) as big:  # fewer syscalls than 8 KiB
        big.seek(offset)
        if workers >= 2 and not migrator.dialect.legacy and _check_split(big, state, migrator, header_line, offset,
                                                                         on_progress):
            return
    with open_reporting(fp.fileno(), on_progress, _BUFFER) as big:
        big.seek(offset)
        _scan(big, state, migrator, header_line, header_line, offset,
              _typed_lane(os.fstat(fp.fileno()).st_size - offset))
    _finish(state)


def _typed_lane(size: int) -> bool:
    """Whether `size` bytes of lines are worth the msgspec lane: importing msgspec and building its
    decoder costs what it saves on about 2.5 MB (callgrind), so a small file keeps to orjson."""
    return _TYPED and size >= _TYPED_MIN_BYTES and sys.getrecursionlimit() <= MAX_DEPTH


def _scan(fp, state: _State, migrator: Migrator, header_line: int, number: int, offset: int,  # noqa: ANN001
          typed_lane: bool = False) -> int:
    """Check the lines of `fp` after the header (the next is line `number` + 1, at byte `offset`);
    returns the number of the last line. `typed_lane`: try typed.py's msgspec decode first (_typed_lane).

    The fast path parses the raw line with orjson (trailing whitespace is JSON whitespace, so this is
    the reader's value) and runs _check_entry's steps inline; anything else (not JSON, not an object,
    no type, a header, no newline, a legacy dialect) goes through the reader's own code and
    _check_entry, so every diagnostic is exactly the reader's.
    """
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    fast = _FAST and not migrator.dialect.legacy
    typed_decode = refused = typed_entry = tool_result = tool_call = assistant = None
    if fast and typed_lane and sys.getrecursionlimit() <= MAX_DEPTH:  # msgspec's depth is the recursion limit's
        from . import typed

        typed_decode, refused, typed_entry = typed.decode, typed.Refused, typed.MessageEntry
        tool_result, tool_call, assistant = typed.ToolResult, typed.ToolCall, typed.Assistant
    report = state.report
    add = state.add
    is_valid = schemas.entry_is_valid
    proven = proven_valid
    message_calls = proven_message
    known = _KNOWN_ENTRY_TYPES
    references = _REFERENCES
    line_of = state.line_of
    parent_of = state.parent_of
    calls_of = state.calls_of
    forward = state.forward
    refs = state.refs
    last_id = state.last_id
    entries = 0
    for raw in fp:
        number += 1
        if typed_decode is not None and raw[-1] == 10:  # parse and prove in one call (typed.py)
            try:
                entry = typed_decode(raw)
            except refused:
                entry = None
            if entry.__class__ is typed_entry:
                entries += 1
                entry_id = entry.id
                parent = entry.parentId
                if parent == last_id:
                    parent = last_id
                first = line_of.setdefault(entry_id, number)
                if first != number:
                    state.duplicate(number, entry_id, first, parent)
                else:
                    parent_of[entry_id] = parent
                    if parent is not last_id and parent is not None and (parent == entry_id or parent not in line_of):
                        forward.append((number, entry_id, parent))
                    last_id = entry_id
                    message = entry.message
                    if message.__class__ is tool_result:
                        call_id = message.toolCallId
                        calls = calls_of.get(parent)
                        if (calls is None or call_id not in calls) and not _call_on_path(state, parent, call_id,
                                                                                         number):
                            state.orphan(number, call_id)
                    elif message.__class__ is assistant:  # a user's toolCall block is no call (shapes.py)
                        calls = tuple([b.id for b in message.content if b.__class__ is tool_call])
                        if calls:
                            calls_of[entry_id] = calls
                offset += len(raw)
                continue
        if fast:
            try:
                entry = loads(raw)
            except decode_error:
                entry = None
            if entry.__class__ is dict and raw[-1] == 10:  # a whole line holding an object
                kind = entry.get("type")
                if kind == "message":  # nine lines in ten: proven valid, then the structure, in one pass
                    calls = message_calls(entry)
                    if calls is not None:
                        entries += 1
                        entry_id = entry["id"]
                        parent = entry["parentId"]
                        if parent == last_id:
                            parent = last_id  # one string for the id and its child's parentId (memory)
                        first = line_of.setdefault(entry_id, number)
                        if first != number:
                            state.duplicate(number, entry_id, first, parent)
                        else:
                            parent_of[entry_id] = parent
                            # the entry just before is no forward parent (and is not this entry: no duplicate)
                            if parent is not last_id and parent is not None and (
                                    parent == entry_id or parent not in line_of):
                                forward.append((number, entry_id, parent))
                            last_id = entry_id
                            if calls:
                                calls_of[entry_id] = calls
                            else:
                                message = entry["message"]
                                if message["role"] == "toolResult":
                                    call_id = message["toolCallId"]
                                    calls = calls_of.get(parent)
                                    if (calls is None or call_id not in calls) and not _call_on_path(
                                            state, parent, call_id, number):
                                        state.orphan(number, call_id)
                        offset += len(raw)
                        continue
                if kind.__class__ is str and kind != "session" and kind != "header":
                    # _check_entry, inline (a test runs every file both ways)
                    entries += 1
                    if kind not in known:
                        add(number, "$.type", f"unknown entry type {kind!r} (kept, but pi ignores it)",
                            "unknown-type", "warning")
                    elif not proven(entry) and not is_valid(entry):
                        for problem in schemas.entry_problems(entry):
                            add(number, problem.path, problem.message, "schema")
                    entry_id = entry.get("id")
                    if entry_id.__class__ is str:
                        parent = entry.get("parentId")
                        if parent.__class__ is not str:
                            parent = None
                        elif parent == last_id:
                            parent = last_id
                        first = line_of.get(entry_id)
                        if first is not None:
                            state.duplicate(number, entry_id, first, parent)
                        else:
                            line_of[entry_id] = number
                            parent_of[entry_id] = parent
                            last_id = entry_id
                            if parent is not None and (parent == entry_id or parent not in line_of):
                                forward.append((number, entry_id, parent))
                            if kind == "message":
                                message = entry.get("message")
                                if message.__class__ is dict:
                                    role = message.get("role")
                                    if role == "assistant":
                                        content = message.get("content")
                                        if content.__class__ is list:
                                            calls = [
                                                b["id"] for b in content
                                                if b.__class__ is dict and b.get("type") == "toolCall"
                                                and b.get("id").__class__ is str
                                            ]
                                            if calls:
                                                calls_of[entry_id] = tuple(calls)
                                    elif role == "toolResult":
                                        call_id = message.get("toolCallId")
                                        if call_id.__class__ is str:
                                            calls = calls_of.get(parent)
                                            if (calls is None or call_id not in calls) and not _call_on_path(
                                                    state, parent, call_id, number):
                                                state.orphan(number, call_id)
                            else:
                                reference = references.get(kind)
                                if reference is not None:
                                    target = entry.get(reference[0])
                                    if target.__class__ is str:
                                        refs.append((number, f"$.{reference[0]}", target, reference[1]))
                    offset += len(raw)
                    continue
        state.last_id = last_id
        _slow_line(state, migrator, header_line, number, offset, raw)
        last_id = state.last_id
        offset += len(raw)
    state.last_id = last_id
    report.entries += entries
    return number


def _slow_line(state: _State, migrator: Migrator, header_line: int, number: int, offset: int, raw: bytes) -> None:
    """One line through the reader, exactly as the streaming pass sees it."""
    terminated = raw.endswith(b"\n")
    content = raw[:-1] if terminated else raw
    if content.endswith(b"\r"):
        content = content[:-1]
    for item in read_records(((number, offset, content, terminated),)):
        if isinstance(item, Diagnostic):
            state.add(item.line, "$", item.reason, item.code, item.severity)
            continue
        obj = item.obj
        if is_header(obj):
            state.add(item.line, "$.type", f"misplaced header (the header is on line {header_line})",
                      "misplaced-header")
            continue
        entry = migrator.entry(obj, item.line)
        state.report.entries += 1
        _check_entry(state, entry, item.line)


_KNOWN_ENTRY_TYPES = schemas.KNOWN_ENTRY_TYPES
_FAST = True  # the inline fast path of _scan; tests turn it off to prove both paths agree
_TYPED = True  # its msgspec lane (typed.py); tests turn it off to prove it agrees with the orjson lane
_TYPED_MIN_BYTES = 4 << 20  # the lane for this many bytes of lines or more (tests set 0)


def _check_entry(state: _State, entry: dict, line: int) -> None:
    kind = entry["type"]
    if kind not in _KNOWN_ENTRY_TYPES:
        state.add(line, "$.type", f"unknown entry type {kind!r} (kept, but pi ignores it)", "unknown-type",
                  "warning")
    elif not schemas.entry_is_valid(entry):
        for problem in schemas.entry_problems(entry):
            state.add(line, problem.path, problem.message, "schema")

    entry_id = entry.get("id")
    if not isinstance(entry_id, str):
        return  # the schema reported it; nothing structural can hang on it
    parent = entry.get("parentId")
    if not isinstance(parent, str):
        parent = None
    elif parent == state.last_id:
        parent = state.last_id  # one string object for the id and its child's parentId
    line_of = state.line_of
    first = line_of.get(entry_id)
    if first is not None:
        state.duplicate(line, entry_id, first, parent)
        return
    line_of[entry_id] = line
    state.parent_of[entry_id] = parent
    state.last_id = entry_id
    if parent is not None and (parent == entry_id or parent not in line_of):
        state.forward.append((line, entry_id, parent))  # a self-parent is a cycle of one

    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict):
            role = message.get("role")
            if role == "assistant":
                content = message.get("content")
                if isinstance(content, list):
                    calls = [
                        b["id"] for b in content
                        if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str)
                    ]
                    if calls:
                        state.calls_of[entry_id] = tuple(calls)
            elif role == "toolResult":
                call_id = message.get("toolCallId")
                if isinstance(call_id, str):
                    calls = state.calls_of.get(parent)  # nearly always: the call is in the parent
                    if (calls is None or call_id not in calls) and not _call_on_path(state, parent, call_id, line):
                        state.orphan(line, call_id)
        return

    reference = _REFERENCES.get(kind)
    if reference is not None:
        key, root_ok = reference
        target = entry.get(key)
        if isinstance(target, str):
            state.refs.append((line, f"$.{key}", target, root_ok))


def _call_on_path(state: _State, start: str | None, call_id: str, line: int = 0) -> bool:
    """Whether a toolCall `call_id` is on the path from `start`, among the entries seen so far.

    A worker cannot see the first half of the file: a walk that leaves its half is left `pending`
    (and counts as found here) for the parent to finish.
    """
    seen: set[str] = set()
    node = start
    calls_of = state.calls_of
    parent_of = state.parent_of
    while node is not None and node not in seen:
        seen.add(node)
        calls = calls_of.get(node)
        if calls is not None and call_id in calls:
            return True
        if node not in parent_of:
            if state.pending is not None:
                state.pending.append((line, node, call_id))
                return True
            return False
        node = parent_of[node]
    return False


def _check_split(fp, state: _State, migrator: Migrator, header_line: int, offset: int,  # noqa: ANN001
                 on_progress: Callable[[int], None] | None = None) -> bool:
    """Check the lines after the header in two processes; False when the file is not worth it (or
    the halves cannot be merged exactly: ids shared across the halves), and the caller checks it in
    one pass instead.

    The parent checks [offset, cut), a forked worker [cut, end) with line numbers counted from its
    start. When the parent is done it sends its line count; the worker answers with its problems
    (renumbered), its ids, forward parents, references, pending tool-result walks and duplicates'
    parents; only when a forward parentId or a duplicate id exists anywhere (a damaged file) does the
    parent ask for the worker's maps too.
    """
    cut = split_point(fp, offset)
    if cut is None:
        return False
    schemas.entry_is_valid({"type": "label"})  # compile the validators once, before the fork
    started = fork_worker(_worker, (state.report.file, cut, migrator, header_line), duplex=True)
    if started is None:
        return False
    here, worker = started
    try:
        mine = _State(FileReport(state.report.file))
        report = None
        if on_progress is not None:  # the worker reads the other half meanwhile, at about the same pace
            scale = (os.fstat(fp.fileno()).st_size - offset) / max(cut - offset, 1)

            def report(position: int) -> None:
                on_progress(offset + int((position - offset) * scale))
        with open_range(fp.fileno(), offset, cut, _BUFFER, report) as first_half:
            base = _scan(first_half, mine, migrator, header_line, header_line, offset, _typed_lane(cut - offset))
        here.send(base)
        problems, entries, ids, forward, refs, pending, redefined = here.recv()
        line_of = mine.line_of
        if not line_of.keys().isdisjoint(ids):
            here.send("stop")
            fp.seek(offset)
            return False
        refs = mine.refs + refs
        # the worker's ids matter to _finish only as reference targets (while no parentId points forward)
        theirs = dict.fromkeys({target for _, _, target, _ in refs if target not in line_of}.intersection(ids))
        del ids
        forward = mine.forward + [f for f in forward if f[2] not in line_of]
        redefined = mine.redefined | redefined  # (an id in both halves sent us to one pass above)
        calls_of, parent_of = mine.calls_of, mine.parent_of
        if forward or redefined:  # a damaged file: finish with both halves' maps
            here.send("maps")
            their_lines, their_parents, their_calls = here.recv()
            line_of.update(their_lines)
            parent_of.update(their_parents)
            calls_of.update(their_calls)
            theirs = {}
        else:
            here.send("done")
        orphans = [
            _orphan(state.report.file, line, call_id)
            for line, node, call_id in pending
            if not _call_before(line_of, parent_of, calls_of, node, call_id, line)
        ]
    except (EOFError, OSError):  # the worker died: check the file in one pass
        fp.seek(offset)
        return False
    finally:
        reap(here, worker)
    state.report.entries += mine.report.entries + entries
    state.report.problems += mine.report.problems + problems + orphans
    _finish(_State(state.report, line_of=ChainMap(line_of, theirs) if theirs else line_of, parent_of=parent_of,
                   calls_of=calls_of, forward=forward, refs=refs, redefined=redefined))
    return True


def _call_before(line_of, parent_of, calls_of, node, call_id, line) -> bool:  # noqa: ANN001
    """_call_on_path as it was when line `line` was checked: only entries up to that line count."""
    seen: set[str] = set()
    while node is not None and node not in seen:
        seen.add(node)
        first = line_of.get(node)
        if first is None or first > line:
            return False
        calls = calls_of.get(node)
        if calls is not None and call_id in calls:
            return True
        node = parent_of.get(node)
    return False


def _worker(file: str, start: int, migrator: Migrator, header_line: int, conn) -> None:  # noqa: ANN001
    """The forked half: check [start, end) and answer the parent (see _check_split)."""
    state = _State(FileReport(file), pending=[], duplicates=[])
    with open_lines(file, _BUFFER) as fp:
        fp.seek(start)
        _scan(fp, state, migrator, header_line, 0, start, _typed_lane(os.fstat(fp.fileno()).st_size - start))
    base = conn.recv()
    problems = state.report.problems
    for index, entry_id, first in state.duplicates:
        problems[index] = replace(problems[index],
                                  message=f"duplicate id {entry_id!r} (first on line {first + base})")
    line_of = state.line_of
    conn.send((
        [replace(p, line=p.line + base) for p in problems],
        state.report.entries,
        list(line_of),
        [(line + base, entry_id, parent) for line, entry_id, parent in state.forward],
        [(line + base, path, target, root_ok) for line, path, target, root_ok in state.refs],
        [(line + base, node, call_id) for line, node, call_id in state.pending],
        {entry_id: (line + base, parent) for entry_id, (line, parent) in state.redefined.items()},
    ))
    if conn.recv() == "maps":
        conn.send(({k: v + base for k, v in line_of.items()}, state.parent_of, state.calls_of))


def _finish(state: _State) -> None:
    line_of = state.line_of
    for line, entry_id, parent in state.forward:
        later = line_of.get(parent)
        if later is None:
            state.add(line, "$.parentId", f"parentId {parent!r} names no entry", "dangling-parent")
        elif parent != entry_id:  # a self-parent is reported as a cycle below
            state.add(line, "$.parentId", f"parentId {parent!r} names an entry that comes later (line {later})",
                      "forward-parent")
    for line, entry_id in _cycles(state):
        state.add(line, "$.parentId", f"parentId cycle: entry {entry_id!r} is its own ancestor", "cycle")
    for line, path, target, root_ok in state.refs:
        if target not in line_of and not (root_ok and target == "root"):
            state.add(line, path, f"{path[2:]} {target!r} names no entry", "dangling-reference")
    state.report.problems.sort(key=lambda p: (p.line, p.severity != "error"))


def _cycles(state: _State) -> list[tuple[int, str]]:
    """Entries on a parentId cycle, as pi links them (a duplicated id: its latest entry, at its line).
    Only a forward reference or a redefined id can close one, so walk from those."""
    found: list[tuple[int, str]] = []
    done: set[str] = set()
    redefined = state.redefined
    parent_of: Mapping[str, str | None] = state.parent_of
    line_of: Mapping[str, int] = state.line_of
    if redefined:
        parent_of = ChainMap({k: parent for k, (_, parent) in redefined.items()}, state.parent_of)
        line_of = ChainMap({k: line for k, (line, _) in redefined.items()}, state.line_of)
    for entry_id in [*(entry_id for _line, entry_id, _parent in state.forward), *redefined]:
        trail: list[str] = []
        on_trail: set[str] = set()
        node: str | None = entry_id
        while node is not None and node not in done and node in parent_of:
            if node in on_trail:
                cycle_start = trail.index(node)
                for member in trail[cycle_start:]:
                    found.append((line_of[member], member))
                break
            trail.append(node)
            on_trail.add(node)
            node = parent_of[node]
        done.update(trail)
    return sorted(found)


def expand_paths(paths: list[str]) -> list[Path]:
    """Files as given; directories recursed for *.jsonl (sorted, so reports are stable)."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*.jsonl") if f.is_file()))
        else:
            out.append(p)
    return out

