"""A session being written: the tree so far, the leaf, and the recorder that turns agent events
into appended entries. The agent loop never sees this; the chat command subscribes it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harnesskit.agent.events import Event, MessageEnd, TurnEnd

from .format import entry as make_entry
from .format import iso_now, new_entry_id, session_header
from .tree import Context, Tree, build_context

if TYPE_CHECKING:
    from .loader import Session
    from .writer import SessionWriter

_PLAIN = re.compile(r"[A-Za-z0-9_-]{1,128}")


class CannotAppend(Exception):
    """A file harnesskit reads but must never append to (a legacy version, another harness's)."""


class ForkFailed(Exception):
    """A fork could not be made. `session` is the one it came from, open again at the same leaf
    (None when nothing was closed: there was nothing to fork)."""

    def __init__(self, message: str, session: LiveSession | None = None) -> None:
        super().__init__(message)
        self.session = session


def refuse_append(session: Session) -> None:
    """Appending v3 entries to a legacy file would make a mixed file pi cannot read as one (and v1
    ids are re-derived from line order on every read, so appended ids would be lost); another
    harness's file is never ours to write."""
    path, dialect = session.path, session.dialect
    if dialect.foreign:
        raise CannotAppend(f"{path}: a {dialect} file is another harness's and is never appended to; run "
                           f"`harnesskit import {path}` and continue the pi session it writes")
    if dialect.legacy:
        raise CannotAppend(f"{path}: a legacy {dialect} file cannot be appended to; run "
                           f"`harnesskit migrate {path}` first, or `harnesskit fork {path}` to go on in a v3 copy")


def file_name(timestamp: str, session_id: str) -> str:
    """store's name for a session file; store (and what it imports to read files) is loaded only
    when a file is named: not with --no-session (start-up counts)."""
    from .store import session_filename

    return session_filename(timestamp, session_id)


def new_file(directory: Path | None, header: dict, fsync: str) -> tuple[Path | None, SessionWriter | None]:
    """Where a new session goes, and its writer (neither with --no-session). Whether the directory
    takes a file is checked now (OSError), before any model is asked: a reply must never stream
    into nowhere. The writer is loaded only here and on reopen (start-up counts)."""
    if directory is None:
        return None, None
    from .writer import SessionWriter, check_creatable

    check_creatable(directory)
    path = directory / file_name(header["timestamp"], header["id"])
    return path, SessionWriter(path, header=header, fsync=fsync)


@dataclass
class LiveSession:
    """One session file (or none, with --no-session) that a chat appends to."""

    tree: Tree
    path: Path | None
    writer: SessionWriter | None
    leaf_id: str | None
    header: dict  # its cwd is what the file says, never where tools run (the caller's cwd is)
    saved_messages: int = 0
    _next_line: int = 0
    #: told (old path, new path) when the file was deleted or replaced and the session went on in a copy
    on_move: Callable[[Path, Path], None] | None = None
    #: the model this run talks to, recorded before the run's first entry when the path's is another
    _run_model: dict | None = None

    def __post_init__(self) -> None:
        if self.writer is not None:
            session_id = self.header.get("id")  # from a file: used in a name only if it is a plain word
            stem = session_id if isinstance(session_id, str) and _PLAIN.fullmatch(session_id) else "session"
            self.writer.fresh_name = lambda: file_name(iso_now(), stem)
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
        header = session_header(cwd, parent_session=parent_session)
        path, writer = new_file(directory, header, fsync)
        live = cls(Tree.from_entries([], []), path, writer, None, header, _next_line=2)
        live.append_model_change(model["provider"], model["modelId"])
        live.append_thinking_level("off")
        return live

    @classmethod
    def forked(cls, entries: list[dict], directory: Path | None, cwd: str, fsync: str,
               parent_session: str | None) -> LiveSession:
        """A fork whose path has no assistant reply yet: its entries wait in the writer with the
        header, and the file appears with the first reply (pi's lazy creation of a branched session)."""
        header = session_header(cwd, parent_session=parent_session)
        path, writer = new_file(directory, header, fsync)
        tree = Tree.from_entries(entries, list(range(2, len(entries) + 2)))
        for entry in entries:
            if writer is not None:
                writer.append(entry)
        return cls(tree, path, writer, tree.leaf_id, header, _next_line=len(entries) + 2)

    @classmethod
    def reopen(cls, session: Session, fsync: str, *, write: bool = True, leaf_id: str | None = None) -> LiveSession:
        """Continue an existing file. Takes its lock now (so a second writer is refused at once);
        writes nothing until something is appended. A file that must not be appended to is refused
        (CannotAppend) when writing."""
        writer = None
        if write:
            from .writer import SessionWriter

            refuse_append(session)
            writer = SessionWriter(session.path, header=None, fsync=fsync)
        last_line = max(session.tree.lines, default=session.header_line)
        leaf = leaf_id if leaf_id is not None else session.tree.leaf_id
        return cls(session.tree, session.path, writer, leaf, session.header, _next_line=last_line + 1)

    @property
    def created(self) -> bool:
        return self.path is not None and self.path.exists()

    def context(self) -> Context:
        return build_context(self.tree, self.leaf_id)

    def uses_model(self, provider: str, model_id: str) -> None:
        """The model this run talks to. When the path says another, a model_change goes out before
        the run's first entry, and only then: restoring and leaving at once leaves the file
        byte-identical (nothing else defers a write: the writer holds a new file's first lines)."""
        self._run_model = {"provider": provider, "modelId": model_id}

    # -- the typed appends: one per kind of entry a session of harnesskit gets ----------------------
    def append_message(self, message: dict) -> dict:
        entry = self._add("message", message=message)
        self.saved_messages += 1
        return entry

    def append_model_change(self, provider: str, model_id: str) -> dict:
        return self._add("model_change", provider=provider, modelId=model_id)

    def append_thinking_level(self, level: str) -> dict:
        return self._add("thinking_level_change", thinkingLevel=level)

    def append_label(self, target_id: str, label: str) -> dict:
        return self._add("label", targetId=target_id, label=label)

    def append_session_name(self, name: str) -> dict:
        return self._add("session_info", name=name)

    def append_compaction(self, summary: str, first_kept_id: str, tokens_before: int,
                          details: dict | None = None) -> dict:
        """pi's key order: summary, firstKeptEntryId, tokensBefore, details, fromHook."""
        extra = {} if details is None else {"details": details, "fromHook": False}
        return self._add("compaction", summary=summary, firstKeptEntryId=first_kept_id, tokensBefore=tokens_before,
                         **extra)

    def append_branch_summary(self, from_id: str | None, summary: str, details: dict) -> dict:
        """fromId is where the branch starts, "root" before the first entry (pi 0.73.1, observed)."""
        return self._add("branch_summary", fromId=from_id if from_id is not None else "root", summary=summary,
                         details=details, fromHook=False)

    def _add(self, kind: str, **payload: object) -> dict:
        wanted, self._run_model = self._run_model, None
        if wanted is not None and kind != "model_change" and self.context().model != wanted:
            self._append("model_change", wanted)
        return self._append(kind, payload)

    def _append(self, kind: str, payload: dict) -> dict:
        entry = make_entry(kind, new_entry_id(self.tree.by_id), self.leaf_id, **payload)
        if self.writer is not None:
            self.writer.append(entry)
        self.tree.add(entry, self._next_line)
        self._next_line += 1
        self.leaf_id = entry["id"]
        return entry

    def on_event(self, event: Event) -> None:
        """The subscription: a message is appended the moment it is final; a turn end syncs."""
        if isinstance(event, MessageEnd):
            self.append_message(event.message)
        elif isinstance(event, TurnEnd) and self.writer is not None:
            self.writer.end_turn()

    def branch(self, entry_id: str | None) -> None:
        """Move the leaf: the next entry becomes a child of `entry_id` (a new branch; None: a new root)."""
        self.leaf_id = entry_id

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def fork(self, at: str, directory: Path, cwd: str, fsync: str) -> LiveSession:
        """Go on in a new session holding the path to `at` (an entry id, or fork.ROOT: nothing), as
        pi's /fork: in memory when this one is; else this file is closed and the fork written, or,
        with no reply on that path yet, held until the first one (pi's lazy creation). On failure
        ForkFailed says why and carries this session, open again at the same leaf."""
        from .fork import ForkError, fork_entries, has_reply, path_entries, write_fork
        from .loader import SessionError, load_session

        if self.path is None:  # --no-session: the fork stays in memory too, as pi's
            return LiveSession.forked(path_entries(self.tree, at), None, cwd, fsync, None)
        if not self.created:
            raise ForkFailed("nothing to fork yet: the session has no file (no reply so far)")
        source_path, leaf = self.path, self.leaf_id
        self.close()
        try:
            source = load_session(source_path)
            entries = fork_entries(source, at, False)
            if has_reply(entries):
                forked = LiveSession.reopen(load_session(write_fork(source, directory, cwd, at)), fsync)
            else:
                forked = LiveSession.forked(entries, directory, cwd, fsync, str(source_path.resolve()))
        except (SessionError, ForkError, OSError) as error:
            restored = LiveSession.reopen(load_session(source_path), fsync, leaf_id=leaf)
            restored.on_move = self.on_move
            raise ForkFailed(f"fork failed: {error}", restored) from None
        forked.on_move = self.on_move
        return forked
