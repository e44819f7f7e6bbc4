"""A new session file from an entry of an old one (pi's createBranchedSession and --fork).

The source is only read. From a lazily indexed source (`index.load_for_continue`) each copied entry
is decoded (and so checked against its index row) and its line copied as written; only an entry whose
parentId changes (after a dropped label) is encoded again. The new file is written under a hidden
name, fsynced, and linked into place, so it appears whole or not at all.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from .format import entry as make_entry
from .format import new_entry_id, session_header
from .loader import Session
from .store import session_filename
from .writer import _fsync_dir, encode, write_all


class ForkError(Exception):
    pass


def _read(source: Session, positions: list[int]) -> Iterator[tuple[dict, bytes | None]]:
    """(entry, its line as written, or None when the entries are in memory) for each position."""
    decode_lines = getattr(source.entries, "decode_lines", None)
    if decode_lines is not None:
        return decode_lines(positions)
    return ((source.entries[pos], None) for pos in positions)


def fork_lines(source: Session, at: str | None, everything: bool) -> Iterator[bytes]:
    """The entry lines of the new file: every entry (`everything`), or the path root -> `at` with its
    label entries dropped and the labels of path entries re-created after them, as pi does."""
    tree = source.tree
    if everything:
        for entry, raw in _read(source, list(range(len(tree)))):
            yield encode(dict(entry)) if raw is None else raw + b"\n"
        return
    leaf = at if at is not None else tree.leaf_id
    if leaf is None:
        raise ForkError(f"{source.path}: has no entries to fork")
    path = [pos for pos in tree.path(tree.by_id[leaf]) if tree.types[pos] != "label"]
    parent: str | None = None
    on_path: set[str | None] = set()
    for entry, raw in _read(source, path):
        if raw is not None and "parentId" in entry and entry["parentId"] == parent:
            yield raw + b"\n"  # the line as written
        else:
            copied = dict(entry)
            copied["parentId"] = parent  # relinks across a dropped label; unchanged elsewhere
            yield encode(copied)
        parent = entry.get("id")
        on_path.add(parent)
    taken = set(tree.by_id)
    for target, label in tree.labels().items():
        if target in on_path:
            label_entry = make_entry("label", new_entry_id(taken), parent, targetId=target, label=label)
            taken.add(label_entry["id"])
            yield encode(label_entry)
            parent = label_entry["id"]


def write_fork(source: Session, directory: Path, cwd: str, at: str | None = None, everything: bool = False) -> Path:
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
    _fsync_dir(directory)
    return path
