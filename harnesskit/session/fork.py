"""A new session file from an entry of an old one (pi's createBranchedSession and --fork).

The source is only read. The new file is written at once, in one write, and fsynced.
"""

from __future__ import annotations

from pathlib import Path

from .format import entry as make_entry
from .format import new_entry_id, session_header
from .loader import Session
from .store import session_filename
from .writer import create_synced, encode


class ForkError(Exception):
    pass


def fork_entries(source: Session, at: str | None, everything: bool) -> list[dict]:
    """The entries of the new file: every entry (`everything`), or the path root -> `at` with its
    label entries dropped and the labels of path entries re-created after them, as pi does."""
    tree = source.tree
    if everything:
        return [dict(e) for e in source.entries]
    leaf = at if at is not None else tree.leaf_id
    if leaf is None:
        raise ForkError(f"{source.path}: has no entries to fork")
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
    on_path = {e["id"] for e in out}
    taken = set(tree.by_id)
    for target, label in tree.labels().items():
        if target in on_path:
            label_entry = make_entry("label", new_entry_id(taken), parent, targetId=target, label=label)
            taken.add(label_entry["id"])
            out.append(label_entry)
            parent = label_entry["id"]
    return out


def write_fork(source: Session, directory: Path, cwd: str, at: str | None = None, everything: bool = False) -> Path:
    entries = fork_entries(source, at, everything)
    header = session_header(cwd, parent_session=str(source.path.resolve()))
    path = directory / session_filename(header["timestamp"], header["id"])
    directory.mkdir(parents=True, exist_ok=True)
    data = encode(header) + b"".join(encode(e) for e in entries)
    create_synced(path, data)
    return path
