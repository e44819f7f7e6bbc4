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

from .format import entry as make_entry
from .format import new_entry_id, session_header
from .loader import Session
from .store import session_filename
from .writer import _fsync_dir, encode, write_all


class ForkError(Exception):
    pass


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
    leaf = at if at is not None else tree.leaf_id
    if leaf is None:
        raise ForkError(f"{source.path}: has no entries to fork")
    path = [pos for pos in tree.path(tree.by_id[leaf]) if tree.types[pos] != "label"]
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
