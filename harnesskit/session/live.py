"""A session being written: the tree so far, the leaf, and the recorder that turns agent events
into appended entries. The agent loop never sees this; the chat command subscribes it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harnesskit.agent.events import Event, MessageEnd, TurnEnd

from .format import entry as make_entry
from .format import iso_now, new_entry_id, session_header
from .loader import Session
from .store import session_filename
from .tree import Context, Tree, build_context
from .writer import SessionWriter, check_creatable

_PLAIN = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass
class LiveSession:
    """One session file (or none, with --no-session) that a chat appends to."""

    tree: Tree
    path: Path | None
    writer: SessionWriter | None
    leaf_id: str | None
    header: dict  # its cwd is what the file says, never where tools run (the caller's cwd is)
    _pending: list[dict] = field(default_factory=list)  # entries held until the first message
    saved_messages: int = 0
    _next_line: int = 0
    #: told (old path, new path) when the file was deleted or replaced and the session went on in a copy
    on_move: Callable[[Path, Path], None] | None = None

    def __post_init__(self) -> None:
        if self.writer is not None:
            session_id = self.header.get("id")  # from a file: used in a name only if it is a plain word
            stem = session_id if isinstance(session_id, str) and _PLAIN.fullmatch(session_id) else "session"
            self.writer.fresh_name = lambda: session_filename(iso_now(), stem)
            self.writer.on_move = self._moved

    def _moved(self, old: Path, new: Path) -> None:
        self.path = new
        moved_to = getattr(self.tree.entries, "moved_to", None)
        if moved_to is not None:  # entries read lazily: the copy has the same bytes at the same offsets
            moved_to(new)
        if self.on_move is not None:
            self.on_move(old, new)

    @classmethod
    def new(cls, directory: Path | None, cwd: str, fsync: str, model: dict, *,
            parent_session: str | None = None) -> LiveSession:
        """A new session; the file itself is written at the first reply, but whether it can be is
        checked now (OSError), before any model is asked: a reply must never stream into nowhere."""
        if directory is not None:
            check_creatable(directory)
        header = session_header(cwd, parent_session=parent_session)
        path = None if directory is None else directory / session_filename(header["timestamp"], header["id"])
        writer = None if path is None else SessionWriter(path, header=header, fsync=fsync)
        live = cls(Tree.from_entries([], []), path, writer, None, header, _next_line=2)
        live.append("model_change", provider=model["provider"], modelId=model["modelId"])
        live.append("thinking_level_change", thinkingLevel="off")
        return live

    @classmethod
    def forked(cls, entries: list[dict], directory: Path | None, cwd: str, fsync: str,
               parent_session: str | None) -> LiveSession:
        """A fork whose path has no assistant reply yet: its entries wait in the writer with the
        header, and the file appears with the first reply (pi's lazy creation of a branched session)."""
        if directory is not None:
            check_creatable(directory)
        header = session_header(cwd, parent_session=parent_session)
        path = None if directory is None else directory / session_filename(header["timestamp"], header["id"])
        writer = None if path is None else SessionWriter(path, header=header, fsync=fsync)
        tree = Tree.from_entries(entries, list(range(2, len(entries) + 2)))
        for entry in entries:
            if writer is not None:
                writer.append(entry)
        return cls(tree, path, writer, tree.leaf_id, header, _next_line=len(entries) + 2)

    @classmethod
    def reopen(cls, session: Session, fsync: str, *, write: bool = True, leaf_id: str | None = None) -> LiveSession:
        """Continue an existing file. Takes its lock now (so a second writer is refused at once);
        writes nothing until something is appended."""
        writer = SessionWriter(session.path, header=None, fsync=fsync) if write else None
        last_line = max(session.tree.lines, default=session.header_line)
        leaf = leaf_id if leaf_id is not None else session.tree.leaf_id
        return cls(session.tree, session.path, writer, leaf, session.header, _next_line=last_line + 1)

    @property
    def created(self) -> bool:
        return self.path is not None and self.path.exists()

    def context(self) -> Context:
        return build_context(self.tree, self.leaf_id)

    def defer(self, kind: str, **payload: object) -> None:
        """An entry that goes out only if this run appends anything (a model switch on reopen):
        restoring and leaving at once must leave the file byte-identical."""
        self._pending.append({"kind": kind, "payload": payload})

    def append(self, kind: str, **payload: object) -> dict:
        if self._pending:
            pending, self._pending = self._pending, []
            for item in pending:
                self._append(item["kind"], item["payload"])
        return self._append(kind, payload)

    def _append(self, kind: str, payload: dict) -> dict:
        entry = make_entry(kind, new_entry_id(self.tree.by_id), self.leaf_id, **payload)
        if kind in ("custom", "custom_message"):  # pi's key order for these two
            base = {k: entry.pop(k) for k in ("id", "parentId", "timestamp")}
            entry.update(base)
        if self.writer is not None:
            self.writer.append(entry)
        self.tree.add(entry, self._next_line)
        self._next_line += 1
        self.leaf_id = entry["id"]
        return entry

    def record_message(self, message: dict) -> dict:
        entry = self.append("message", message=message)
        self.saved_messages += 1
        return entry

    def on_event(self, event: Event) -> None:
        """The subscription: a message is appended the moment it is final; a turn end syncs."""
        if isinstance(event, MessageEnd):
            self.record_message(event.message)
        elif isinstance(event, TurnEnd) and self.writer is not None:
            self.writer.end_turn()

    def branch(self, entry_id: str | None) -> None:
        """Move the leaf: the next entry becomes a child of `entry_id` (a new branch; None: a new root)."""
        self.leaf_id = entry_id

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
