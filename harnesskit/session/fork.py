"""A new session file from an entry of an old one (pi's createBranchedSession and --fork).

The source is only read. From a lazily indexed source (`index.load_for_continue`, which parsed every
line as it indexed it) each path entry's line is copied as written; only an entry whose parentId
changes (after a dropped label) or is not a string is decoded and encoded again. The new file is written under a hidden
name, fsynced, and linked into place, so it appears whole or not at all.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from harnesskit.agent.messages import text_of

from .format import entry as make_entry
from .format import new_entry_id, session_header
from .loader import Session
from .store import session_filename
from .tree import Tree
from .writer import encode, fsync_dir, write_all


class ForkError(Exception):
    pass


ROOT = "root"  # fork point before the first entry: an empty session linked to its parent


def fork_point(tree: Tree, at: str) -> tuple[str | None, str | None]:
    """Where a fork at `at` ends, and the prompt it gives back: a user message is forked before
    (at its parent, None when it has none), its text offered again, as pi's fork does; any other
    entry is the fork's last entry."""
    pos = tree.by_id[at]
    message = tree.entries[pos].get("message") if tree.types[pos] == "message" else None
    if isinstance(message, dict) and message.get("role") == "user":
        parent = tree.parent_pos(pos)
        return (tree.ids[parent] if parent is not None else None), text_of(message)
    return at, None


def has_reply(entries: list[dict]) -> bool:
    """pi writes a session file only once it holds an assistant message; a file without one it
    damages when continuing it (a second header, every entry again), so none is ever written."""
    return any(e.get("type") == "message" and isinstance(e.get("message"), dict)
               and e["message"].get("role") == "assistant" for e in entries)


def fork_entries(source: Session, at: str | None, everything: bool) -> list[dict]:
    """The entries of the new file: every entry (`everything`), or the path root -> `at` with its
    label entries dropped and the labels of path entries re-created after them, as pi does (each
    keeping the timestamp of the label entry that set it). `at` None: the leaf; ROOT: nothing."""
    if everything:
        return [dict(e) for e in source.entries]
    if at is None and source.tree.leaf_id is None:
        raise ForkError(f"{source.path}: has no entries to fork")
    return path_entries(source.tree, at)


def path_entries(tree: Tree, at: str | None) -> list[dict]:
    """fork_entries for one path, from a tree (a file's, or an in-memory chat's)."""
    if at == ROOT:
        return []
    leaf = at if at is not None else tree.leaf_id
    if leaf is None:
        return []
    path = tree.path(tree.by_id[leaf])
    out: list[dict] = []
    parent: str | None = None
    for pos in path:
        if tree.types[pos] == "label":
            continue
        copied = dict(tree.entries[pos])
        copied["parentId"] = parent  # relinks across a dropped label; unchanged elsewhere
        out.append(copied)
        parent = copied["id"]
    out += path_labels(tree, {e["id"] for e in out}, parent)
    return out


def path_labels(tree: Tree, on_path: set, parent: str | None) -> Iterator[dict]:
    """The labels of path entries, re-created as a chain after `parent` as pi does, each keeping the
    timestamp of the label entry in effect."""
    taken = set(tree.by_id)
    set_at = {}  # target -> timestamp of the label entry in effect (the latest for it)
    for pos in tree.positions_of("label"):
        set_at[tree.entries[pos].get("targetId")] = tree.entries[pos].get("timestamp")
    for target, label in tree.labels().items():
        if target in on_path:
            label_entry = make_entry("label", new_entry_id(taken), parent, targetId=target, label=label)
            if isinstance(set_at.get(target), str):
                label_entry["timestamp"] = set_at[target]
            taken.add(label_entry["id"])
            yield label_entry
            parent = label_entry["id"]


def _fork_path(tree: Tree, at: str | None) -> list[int] | None:
    """The positions a fork at `at` copies (labels dropped); None when there is no entry at all."""
    if at == ROOT:
        return []
    leaf = at if at is not None else tree.leaf_id
    if leaf is None:
        return None
    return [pos for pos in tree.path(tree.by_id[leaf]) if tree.types[pos] != "label"]


def _path_has_reply(source: Session, path: list[int]) -> bool:
    """has_reply for a path, decoding its message entries only until the first assistant."""
    entries, tree = source.entries, source.tree
    decode_line = getattr(entries, "decode_line", None)
    for pos in path:
        if tree.types[pos] == "message":
            entry = decode_line(pos)[0] if decode_line is not None else entries[pos]
            if has_reply([entry]):
                return True
    return False


def _lines(source: Session, positions: list[int], parents: list[str | None]) -> Iterator[tuple[dict | None, bytes]]:
    """For each position: (None, its line as written) when the line can be copied as it is (its
    parentId is the string `parents` gives it), else (the entry, b""). From a lazy index the lines
    are read in runs and only the others are decoded: every line was parsed when it was indexed."""
    entries = source.entries
    raw_lines = getattr(entries, "raw_lines", None)
    if raw_lines is None:
        for pos in positions:
            yield entries[pos], b""
        return
    tree = source.tree
    for pos, content, parent in zip(positions, raw_lines(positions), parents, strict=True):
        entry_id = tree.ids[pos]
        if (parent is not None and tree.parents[pos] == parent and entry_id is not None
                and f'"id":"{entry_id}"'.encode() in content):  # (the id: a guard against a changed file)
            yield None, content
        else:
            yield entries.decode_line(pos)[0], b""


def fork_lines(source: Session, at: str | None, everything: bool) -> Iterator[bytes]:
    """The entry lines of the new file: every entry (`everything`), or the path root -> `at` with its
    label entries dropped and the labels of path entries re-created after them, as pi does."""
    tree = source.tree
    if everything:
        positions = list(range(len(tree)))
        for entry, raw in _lines(source, positions, [tree.parents[pos] for pos in positions]):
            yield raw + b"\n" if entry is None else encode(dict(entry))
        return
    path = _fork_path(tree, at)
    if path is None:
        raise ForkError(f"{source.path}: has no entries to fork")
    new_parents = [None, *(tree.ids[pos] for pos in path[:-1])]  # relinked across dropped labels
    parent: str | None = None
    on_path: set[str | None] = set()
    for pos, (entry, raw) in zip(path, _lines(source, path, new_parents), strict=True):
        if entry is None:
            yield raw + b"\n"  # the line as written
        else:
            copied = dict(entry)
            copied["parentId"] = parent  # relinks across a dropped label; unchanged elsewhere
            yield encode(copied)
        parent = tree.ids[pos] if entry is None else entry.get("id")
        on_path.add(parent)
    for label_entry in path_labels(tree, on_path, parent):
        yield encode(label_entry)


def write_fork(source: Session, directory: Path, cwd: str, at: str | None = None, everything: bool = False) -> Path:
    if not everything:
        positions = _fork_path(source.tree, at)
        if positions is None:
            raise ForkError(f"{source.path}: has no entries to fork")
        if not _path_has_reply(source, positions):
            where = "the start" if at == ROOT else (at or "the leaf")
            raise ForkError(f"{source.path}: the path to {where} has no assistant reply, and pi writes every entry "
                            "of such a file twice when it continues it, so no file is written; branch in place "
                            "instead: harnesskit continue FILE --from ENTRY")
    header = session_header(cwd, parent_session=str(source.path.resolve()))
    path = directory / session_filename(header["timestamp"], header["id"])
    lines = fork_lines(source, at, everything)
    first = next(lines, None)  # a ForkError before anything is created
    directory.mkdir(parents=True, exist_ok=True)
    temp = directory / f".{path.name}.part-{os.getpid()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        try:
            batch = [encode(header)] + ([first] if first is not None else [])
            size = 0
            for line in lines:
                batch.append(line)
                size += len(line)
                if size > 1 << 20:  # about a megabyte per write
                    write_all(fd, b"".join(batch))
                    batch, size = [], 0
            write_all(fd, b"".join(batch))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(temp, path)  # never over an existing file
    finally:
        temp.unlink(missing_ok=True)
    fsync_dir(directory)  # the new name too, as for a chat's new file
    return path
