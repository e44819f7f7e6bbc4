"""A new session file from an entry of an old one (pi's createBranchedSession and --fork).

The source is only read. The new file is written at once, in one write, and fsynced.
"""

from __future__ import annotations

from pathlib import Path

from harnesskit.agent.messages import text_of

from .format import entry as make_entry
from .format import new_entry_id, session_header
from .loader import Session
from .store import session_filename
from .tree import Tree
from .writer import create_synced, encode


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
    on_path = {e["id"] for e in out}
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
            out.append(label_entry)
            parent = label_entry["id"]
    return out


def write_fork(source: Session, directory: Path, cwd: str, at: str | None = None, everything: bool = False) -> Path:
    entries = fork_entries(source, at, everything)
    if not everything and not has_reply(entries):
        where = "the start" if at == ROOT else (at or "the leaf")
        raise ForkError(f"{source.path}: the path to {where} has no assistant reply, and pi writes every entry of "
                        "such a file twice when it continues it, so no file is written; branch in place "
                        "instead: harnesskit continue FILE --from ENTRY")
    header = session_header(cwd, parent_session=str(source.path.resolve()))
    path = directory / session_filename(header["timestamp"], header["id"])
    directory.mkdir(parents=True, exist_ok=True)
    data = encode(header) + b"".join(encode(e) for e in entries)
    create_synced(path, data)
    return path
