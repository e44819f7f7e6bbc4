"""Everything `validate` checks in one session file, in one streaming pass.

Memory is kept to what the structural checks need: id -> line, id -> parent, and the tool call
ids of assistant messages. Entries themselves are dropped as soon as they are checked.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import schemas
from .format import is_header
from .loader import SessionError, open_binary
from .migrate import Migrator, UnsupportedSession, detect, migrate_header
from .reader import Diagnostic, iter_lines, read_records


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
    calls_of: dict[str, frozenset[str]] = field(default_factory=dict)
    forward: list[tuple[int, str, str]] = field(default_factory=list)  # line, id, parentId
    refs: list[tuple[int, str, str, bool]] = field(default_factory=list)  # line, path, id, root ok

    def add(self, line: int, path: str, message: str, code: str, severity: str = "error") -> None:
        self.report.problems.append(Problem(self.report.file, line, path, message, severity, code))


_REFERENCES = {
    "label": ("targetId", False),
    "compaction": ("firstKeptEntryId", False),
    "branch_summary": ("fromId", True),
}


def check_file(path: str | os.PathLike[str]) -> FileReport:
    """Check one file; a file that cannot be read at all is one error in its report."""
    report = FileReport(str(path))
    try:
        fp = open_binary(path)
    except SessionError as error:
        report.problems.append(Problem(str(path), 0, "$", str(error).split(": ", 1)[-1], "error", "unreadable"))
        return report
    enabled = gc.isenabled()
    gc.disable()  # millions of small retained objects make the cyclic GC dominate the run
    try:
        with fp:
            _check_stream(fp, _State(report))
    finally:
        if enabled:
            gc.enable()
    return report


def _check_stream(fp, state: _State) -> None:  # noqa: ANN001 - a binary file
    header_line = 0
    migrator: Migrator | None = None
    last_line = 0
    for item in read_records(iter_lines(fp)):
        if isinstance(item, Diagnostic):
            state.add(item.line, "$", item.reason, item.code, item.severity)
            continue
        last_line = item.line
        obj = item.obj
        if migrator is None:
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
            continue
        if is_header(obj):
            state.add(item.line, "$.type", f"misplaced header (the header is on line {header_line})",
                      "misplaced-header")
            continue
        entry = migrator.entry(obj, item.line)
        state.report.entries += 1
        _check_entry(state, entry, item.line)
    if migrator is None:
        if last_line == 0 and not state.report.problems:
            state.add(0, "$", "empty file: no session header", "no-header")
        elif not any(p.code == "no-header" for p in state.report.problems):
            state.add(1, "$", "no readable session header", "no-header")
        return
    _finish(state)


def _check_entry(state: _State, entry: dict, line: int) -> None:
    kind = entry["type"]
    if kind not in schemas.KNOWN_ENTRY_TYPES:
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
    first = state.line_of.get(entry_id)
    if first is not None:
        state.add(line, "$.id", f"duplicate id {entry_id!r} (first on line {first})", "duplicate-id")
        return
    state.line_of[entry_id] = line
    state.parent_of[entry_id] = parent
    if parent is not None and (parent == entry_id or parent not in state.line_of):
        state.forward.append((line, entry_id, parent))  # a self-parent is a cycle of one

    reference = _REFERENCES.get(kind)
    if reference is not None:
        key, root_ok = reference
        target = entry.get(key)
        if isinstance(target, str):
            state.refs.append((line, f"$.{key}", target, root_ok))

    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict):
            role = message.get("role")
            if role == "assistant":
                content = message.get("content")
                if isinstance(content, list):
                    calls = frozenset(
                        b["id"] for b in content
                        if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str)
                    )
                    if calls:
                        state.calls_of[entry_id] = calls
            elif role == "toolResult":
                call_id = message.get("toolCallId")
                if isinstance(call_id, str) and not _call_on_path(state, parent, call_id):
                    state.add(line, "$.message.toolCallId",
                              f"toolCallId {call_id!r} matches no toolCall on this entry's path",
                              "orphan-tool-result")


def _call_on_path(state: _State, start: str | None, call_id: str) -> bool:
    seen: set[str] = set()
    node = start
    while node is not None and node not in seen:
        seen.add(node)
        calls = state.calls_of.get(node)
        if calls is not None and call_id in calls:
            return True
        node = state.parent_of.get(node)
    return False


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
    """Entries on a parentId cycle. Only forward references can close one, so walk from those."""
    found: list[tuple[int, str]] = []
    done: set[str] = set()
    for _line, entry_id, _parent in state.forward:
        trail: list[str] = []
        on_trail: set[str] = set()
        node: str | None = entry_id
        while node is not None and node not in done and node in state.parent_of:
            if node in on_trail:
                cycle_start = trail.index(node)
                for member in trail[cycle_start:]:
                    found.append((state.line_of[member], member))
                break
            trail.append(node)
            on_trail.add(node)
            node = state.parent_of[node]
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
