"""Another harness's session -> a new pi v3 session file that pi and `harnesskit continue` open.

Read through the format's reader (the same entries inspect shows), then made into what pi needs
(contract §4, pi-reference §9): 8-hex ids derived from the source's (the same on every import),
one root naming the source (a `custom` entry `harnesskit/import`), every parent resolvable, a cwd
that exists, an assistant message in the file (or pi writes the header twice), and a tool call the
source left unanswered at its end closed by an error result (a model API refuses it otherwise).
Subagent transcripts of a Claude Code session become sessions of their own whose `parentSession`
is the imported parent.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path

import orjson

from . import store
from .format import datetime_at, iso_from_ms
from .formats import reader_for, sniff
from .loader import Session, SessionError, load_foreign, load_session
from .migrate import iso_to_ms
from .reader import open_lines
from .writer import create_synced, encode

NO_RESULT = "[no result recorded: the source transcript ends before this tool returned]"


@dataclass
class Imported:
    source: Path
    path: Path
    header: dict
    entries: int
    messages: int
    notes: list[str] = field(default_factory=list)
    subagents: list[Imported] = field(default_factory=list)


class _Ids:
    """Deterministic 8-hex ids: sha256 of the session id and the source id, redrawn on collision."""

    def __init__(self, seed: str) -> None:
        self.seed = seed
        self.taken: set[str] = set()
        self.of: dict[str, str] = {}

    def __call__(self, source_id: str) -> str:
        found = self.of.get(source_id)
        if found is not None:
            return found
        salt = 0
        while True:
            candidate = hashlib.sha256(f"{self.seed}:{source_id}:{salt}".encode()).hexdigest()[:8]
            if candidate not in self.taken:
                self.taken.add(candidate)
                self.of[source_id] = candidate
                return candidate
            salt += 1


def subagent_files(path: Path, session_id: str) -> list[Path]:
    """A Claude Code session's subagent transcripts: `<session>/subagents/*.jsonl` (2.1.x) and the
    `agent-*.jsonl` beside it that name the same session (2.0.x)."""
    found = sorted((path.parent / path.stem / "subagents").glob("*.jsonl"))
    for candidate in sorted(path.parent.glob("agent-*.jsonl")):
        if candidate != path and _first_session_id(candidate) == session_id:
            found.append(candidate)
    return found


def _first_session_id(path: Path) -> str | None:
    try:
        with open_lines(path) as fp:
            for _, raw in zip(range(50), fp, strict=False):
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(obj, dict) and isinstance(obj.get("sessionId"), str):
                    return obj["sessionId"]
    except OSError:
        return None
    return None


def import_file(source: Path, out: Path | None = None, *, fmt: str | None = None, here: str | None = None,
                parent: Path | None = None, _subagent: bool = False) -> Imported:
    """Write the pi session of `source` (to `out`, or the session directory of its cwd); raises
    SessionError for a file that cannot be imported, or an `out` that exists."""
    fmt = fmt or sniff(source)
    if fmt == "pi":
        session = load_session(source, fmt=fmt)
        raise SessionError(f"{source}: already a {session.dialect} session; nothing to import (fork copies one)")
    reader = reader_for(fmt, source)
    if fmt == "claude":
        reader.sidechains = {}
    session = load_foreign(source, fmt, reader)
    sidechains = getattr(reader, "sidechains", None) or {}
    if getattr(reader, "sidechain_only", False) or _subagent:
        sidechains = {}
    keep = [pos for pos, line in enumerate(session.lines) if line not in sidechains]
    header, entries, notes = convert(session, here or os.getcwd(), parent, subagent=_subagent,
                                     positions=keep if sidechains else None)
    if out is None:
        directory = store.session_dir(header["cwd"])
        directory.mkdir(parents=True, exist_ok=True)
        out = directory / store.session_filename(header["timestamp"], header["id"])
    if out.exists():
        raise SessionError(f"{out}: exists (imported before?); give another -o, or remove it")
    if not out.parent.is_dir():
        raise SessionError(f"{out.parent}: no such directory")
    result = Imported(source, out, header, len(entries),
                      sum(1 for e in entries if e["type"] == "message"), notes)
    if session.dialect.name == "claude-code" and not _subagent:
        for sub in subagent_files(source, session.header["id"]):
            target = out.parent / f"{out.stem}.{sub.stem}.jsonl"
            try:  # before the parent, so the parent stays the newest file (what `continue` picks)
                result.subagents.append(import_file(sub, target, fmt="claude", here=here, parent=out.resolve(),
                                                    _subagent=True))
            except SessionError as error:
                result.notes.append(f"subagent {sub.name} not imported: {error}")
    if sidechains:  # sidechain lines inside the transcript (older Claude Code): a session per subagent
        agents: dict[str, list[int]] = {}
        for pos, line in enumerate(session.lines):
            if line in sidechains:
                agents.setdefault(sidechains[line], []).append(pos)
        for agent, positions in agents.items():
            target = out.parent / f"{out.stem}.agent-{agent}.jsonl"
            try:
                sub_header, sub_entries, sub_notes = convert(session, here or os.getcwd(), out.resolve(),
                                                             subagent=True, positions=positions, agent=agent)
            except SessionError as error:
                result.notes.append(f"sidechain {agent} not imported: {error}")
                continue
            if target.exists():
                raise SessionError(f"{target}: exists (imported before?); give another -o, or remove it")
            create_synced(target, b"".join(encode(e) for e in [sub_header, *sub_entries]))
            result.subagents.append(Imported(source, target, sub_header, len(sub_entries), sum(
                1 for e in sub_entries if e["type"] == "message"), sub_notes))
    create_synced(out, b"".join(encode(e) for e in [header, *entries]))
    return result


def convert(session: Session, here: str, parent: Path | None = None, *, subagent: bool = False,
            positions: list[int] | None = None, agent: str = "") -> tuple[dict, list[dict], list[str]]:
    """The header and entries of the pi file (of `positions` only, when given), and notes on what
    was changed to make it open."""
    chosen = range(len(session.entries)) if positions is None else positions
    notes: list[str] = []
    source_header = session.header
    source_id = str(source_header.get("id"))
    tree = session.tree
    if not any(session.entries[pos].get("type") == "message"
               and (session.entries[pos].get("message") or {}).get("role") == "assistant" for pos in chosen):
        raise SessionError(f"{session.path}: no assistant message, so no conversation to import (pi would write "
                           "the header twice into such a file)")
    canonical = _canonical_uuid(source_id)
    subagent = subagent or "agentId" in source_header  # a subagent carries its parent's session id
    if subagent or canonical is None:
        seed = f"{source_id}:{session.path.name}:{agent}"
        session_id = str(uuid.UUID(hashlib.sha256(seed.encode()).hexdigest()[:32]))
    else:
        session_id = canonical
    cwd = source_header.get("cwd")
    if not isinstance(cwd, str) or not os.path.isdir(cwd):
        notes.append(f"the source's cwd {cwd!r} does not exist here; the session's cwd is {here}")
        cwd = here
    timestamp = _iso(source_header.get("timestamp")) or iso_from_ms(0)
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": timestamp, "cwd": cwd}
    if parent is not None:
        header["parentSession"] = str(parent)
    ids = _Ids(session_id)
    root = ids("harnesskit/import")
    entries = [{
        "type": "custom", "customType": "harnesskit/import", "id": root, "parentId": None, "timestamp": timestamp,
        "data": {"source": str(session.path.resolve()), "format": str(session.dialect), "sessionId": source_id,
                 "cwd": source_header.get("cwd"), "entries": len(session.entries)},
    }]
    orphans = rerooted = 0
    members = set(chosen)
    written = {root}
    by_new: dict[str, dict] = {}
    for pos in chosen:
        entry = session.entries[pos]
        old_id = tree.ids[pos] or f"#{pos}"
        old_parent = tree.parents[pos]
        new = dict(entry)
        new["id"] = ids(old_id) if tree.by_id.get(old_id, pos) == pos else ids(f"{old_id}#{pos}")
        new["parentId"] = ids(old_parent) if old_parent in tree.by_id and (
            positions is None or tree.by_id[old_parent] in members) else root
        if new["parentId"] not in written:  # a parent written later (or a cycle): pi must never walk one
            new["parentId"] = root
            rerooted += 1
        new["timestamp"] = _iso(entry.get("timestamp")) or timestamp
        if new["type"] == "compaction" and isinstance(new.get("firstKeptEntryId"), str):
            new["firstKeptEntryId"] = ids(new["firstKeptEntryId"]) if new["firstKeptEntryId"] in tree.by_id else (
                new["id"])
        if _orphan(by_new, new):  # a model API refuses a tool result without its call: keep it aside
            new = {"type": "custom", "customType": "harnesskit/orphan-tool-result", "id": new["id"],
                   "parentId": new["parentId"], "timestamp": new["timestamp"], "data": entry["message"]}
            orphans += 1
        entries.append(new)
        written.add(new["id"])
        by_new[new["id"]] = new
    if rerooted:
        notes.append(f"{rerooted} entr(y/ies) whose parent comes later in the source (or closes a cycle) now hang "
                     "off the import entry")
    if orphans:
        notes.append(f"{orphans} tool result(s) whose call is not in the source kept as custom entries "
                     "(harnesskit/orphan-tool-result), out of the context")
    added = len(entries)
    entries += _close_calls(entries, ids)
    if len(entries) > added:
        notes.append(f"{len(entries) - added} tool call(s) the source left unanswered at its "
                     "end got an error result")
    return header, entries, notes


def _orphan(by_id: dict[str, dict], entry: dict) -> bool:
    """A toolResult with no toolCall of its id among the ancestors it has in the new file."""
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "toolResult":
        return False
    call_id = message.get("toolCallId")
    node = by_id.get(entry["parentId"])
    while node is not None:  # parents are always written first: no cycle to guard against
        above = node.get("message")
        if isinstance(above, dict) and above.get("role") == "assistant" and isinstance(above.get("content"), list):
            if any(isinstance(b, dict) and b.get("type") == "toolCall" and b.get("id") == call_id
                   for b in above["content"]):
                return False
        node = by_id.get(node["parentId"])
    return True


def _close_calls(entries: list[dict], ids: _Ids) -> list[dict]:
    """Error results for the tool calls of the leaf path's last assistant that have none after it
    (a model API refuses a call without its result, so the session could not go on)."""
    by_id = {e["id"]: e for e in entries}
    path: list[dict] = []
    node: dict | None = entries[-1]
    while node is not None and len(path) <= len(entries):
        path.append(node)
        node = by_id.get(node["parentId"]) if node["parentId"] is not None else None
    path.reverse()
    messages = [e["message"] for e in path if e["type"] == "message" and isinstance(e.get("message"), dict)]
    last = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"), None)
    if last is None:
        return []
    content = messages[last].get("content")
    calls = [b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"] if isinstance(
        content, list) else []
    answered = {m.get("toolCallId") for m in messages[last + 1:] if m.get("role") == "toolResult"}
    added: list[dict] = []
    parent = entries[-1]["id"]
    stamp = entries[-1]["timestamp"]
    for call in calls:
        if call.get("id") in answered:
            continue
        entry_id = ids(f"harnesskit/no-result:{call.get('id')}")
        added.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp, "message": {
            "role": "toolResult", "toolCallId": call.get("id"), "toolName": call.get("name"),
            "content": [{"type": "text", "text": NO_RESULT}], "isError": True, "timestamp": iso_to_ms(stamp) or 0}})
        parent = entry_id
    return added


def _iso(value: object) -> str | None:
    """An ISO timestamp as pi writes them (milliseconds, Z), or None: also for one no datetime
    holds (year 1 with an offset east of UTC falls in year 0)."""
    ms = iso_to_ms(value)
    return None if ms is None or datetime_at(ms, UTC, ms=True) is None else iso_from_ms(ms)


def _canonical_uuid(value: str) -> str | None:
    """`value` as pi writes a session id (lowercase, hyphens), if it is one in that spelling; None for
    any other text. uuid.UUID alone accepts braces, "urn:uuid:", no hyphens and (as int() does)
    surrounding whitespace: an id ending in a newline would name the file and print over two lines."""
    try:
        canonical = str(uuid.UUID(value))
    except ValueError:
        return None
    return canonical if canonical == value.lower() else None
