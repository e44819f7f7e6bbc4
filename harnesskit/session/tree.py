"""The entry tree of one session (contract §3): index, leaf, path, labels, name, context.

The tree holds ids, parents and types as flat lists and reaches an entry's content only through
`entries[pos]`, so the same code serves a fully loaded file and a lazily indexed one.
"""

from __future__ import annotations

import itertools
import operator
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from typing import TYPE_CHECKING

from .format import session_name

if TYPE_CHECKING:
    from .reader import Diagnostic


class EntryNotFound(LookupError):
    """An entry reference (id, prefix or label) that names nothing, or more than one thing."""


def diagnostic(line: int, offset: int, reason: str, code: str, severity: str = "error") -> Diagnostic:
    """The reader's Diagnostic, imported when a tree has something to report: a chat that builds a
    tree of its own never loads the reader (start-up counts)."""
    from .reader import Diagnostic

    return Diagnostic(line, offset, reason, code, severity)


def to_ms(value: object) -> int | None:
    """migrate's iso_to_ms, imported at the first summary or custom message a context holds."""
    from .migrate import iso_to_ms

    return iso_to_ms(value)



def label_change(entry: dict) -> tuple[str, str | None] | None:
    """What one label entry does: (target id, its new label, None to clear it), or None (no target)."""
    target = entry.get("targetId")
    if not isinstance(target, str):
        return None
    label = entry.get("label")
    return target, label if isinstance(label, str) and label else None


def apply_label(labels: dict[str, str], entry: dict) -> None:
    """One label entry onto the labels so far (target id -> label): it replaces, an empty one clears."""
    change = label_change(entry)
    if change is not None:
        target, label = change
        if label is None:
            labels.pop(target, None)
        else:
            labels[target] = label

@dataclass
class Tree:
    ids: list[str | None]
    parents: list[str | None]
    types: list[str]
    lines: list[int]
    entries: Sequence[dict]
    by_id: dict[str, int] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # each entry's parent position (-1: none) as found when built from columns; None once `add` ran
    parent_at: array | None = None

    @classmethod
    def from_entries(cls, entries: Sequence[dict], lines: list[int]) -> Tree:
        ids = [e.get("id") if isinstance(e.get("id"), str) else None for e in entries]
        parents = [e.get("parentId") if isinstance(e.get("parentId"), str) else None for e in entries]
        types = [e["type"] for e in entries]
        return cls.from_columns(ids, parents, types, lines, entries)

    @classmethod
    def from_columns(
        cls,
        ids: list[str | None],
        parents: list[str | None],
        types: list[str],
        lines: list[int],
        entries: Sequence[dict],
    ) -> Tree:
        tree = cls(ids, parents, types, lines, entries)
        n = len(ids)
        by_id = dict(zip(ids, range(n), strict=True))  # pi's byId: the later line wins (parentIds link to it)
        by_id.pop(None, None)  # type: ignore[call-overload]
        if len(by_id) + ids.count(None) < n:  # an id twice: say where, in file order
            by_id = {}
            for pos, entry_id in enumerate(ids):
                if entry_id is None:
                    continue
                earlier = by_id.get(entry_id)
                by_id[entry_id] = pos
                if earlier is not None:
                    tree.diagnostics.append(
                        diagnostic(lines[pos], -1, f"duplicate id {entry_id} (first on line {lines[earlier]}; "
                                   "parentIds link to this later one, as in pi)", "duplicate-id")
                    )
        tree.by_id = by_id
        # each parent's position (-1: none), found in C; a miss is a root or a dangling parentId
        targets = tree.parent_at = _parent_positions(ids, parents, by_id, len(by_id) + ids.count(None) == n)
        tree.diagnostics += [_dangling(pos, parents, lines) for pos in compress(range(n), map((-1).__eq__, targets))
                             if parents[pos] is not None]
        # entries whose parent is not earlier: only these can close a cycle
        _cycles(list(compress(range(n), map(operator.ge, targets, range(n)))), targets, ids, lines,
                tree.diagnostics)
        return tree

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, entry: dict, line: int) -> int:
        """Index an entry appended after loading (a live chat); returns its position."""
        if not isinstance(self.entries, list | _Extended):  # wrap a lazy sequence once, not per entry
            self.entries = _Extended(self.entries)
        self.entries.append(entry)  # type: ignore[attr-defined]
        self.parent_at = None
        pos = len(self.ids)
        entry_id = entry.get("id")
        self.ids.append(entry_id)
        self.parents.append(entry.get("parentId"))
        self.types.append(entry["type"])
        self.lines.append(line)
        if isinstance(entry_id, str):
            self.by_id[entry_id] = pos  # the later one wins, as on load
        return pos

    @property
    def leaf_id(self) -> str | None:
        """The last entry in file order, as pi."""
        return self.ids[-1] if self.ids else None

    def parent_pos(self, pos: int) -> int | None:
        parent = self.parents[pos]
        return None if parent is None else self.by_id.get(parent)

    def path(self, leaf_pos: int | None = None) -> list[int]:
        """Positions root -> leaf, walked iteratively; a cycle ends the walk and is reported."""
        if not self.ids:
            return []
        pos: int | None = len(self.ids) - 1 if leaf_pos is None else leaf_pos
        seen: set[int] = set()
        path: list[int] = []
        while pos is not None:
            if pos in seen:
                self.diagnostics.append(
                    diagnostic(self.lines[pos], -1, f"parentId cycle through {self.ids[pos]}", "cycle")
                )
                break
            seen.add(pos)
            path.append(pos)
            pos = self.parent_pos(pos)
        path.reverse()
        return path

    def children(self) -> dict[int | None, list[int]]:
        """Children by parent position (None: the roots, including entries whose parent is missing)."""
        kids: dict[int | None, list[int]] = {}
        for pos in range(len(self.ids)):
            kids.setdefault(self.parent_pos(pos), []).append(pos)
        return kids

    def positions_of(self, kind: str) -> list[int]:
        return [pos for pos, t in enumerate(self.types) if t == kind]

    def labels(self) -> dict[str, str]:
        """Current label per target id: the latest label entry wins, an empty one clears."""
        labels: dict[str, str] = {}
        for pos in self.positions_of("label"):
            apply_label(labels, self.entries[pos])
        return labels

    def name(self) -> str | None:
        """The session name: the latest session_info name."""
        name = None
        for pos in self.positions_of("session_info"):
            name = session_name(self.entries[pos], name)
        return name

    def resolve(self, ref: str) -> str:
        """An entry id from a full id, a label name, or a unique prefix of at least 4 characters."""
        if ref in self.by_id:
            return ref
        labelled = sorted({target for target, label in self.labels().items() if label == ref})
        if len(labelled) == 1:
            return labelled[0]
        if len(labelled) > 1:
            raise EntryNotFound(f"label {ref!r} is on {len(labelled)} entries: {', '.join(labelled)}")
        if len(ref) < 4:
            raise EntryNotFound(f"no entry {ref!r} (an id prefix needs at least 4 characters)")
        matches = sorted({i for i in self.by_id if i.startswith(ref)})
        if len(matches) == 1:
            return matches[0]
        if matches:
            shown = ", ".join(matches[:5]) + (" …" if len(matches) > 5 else "")
            raise EntryNotFound(f"id prefix {ref!r} is ambiguous: {shown}")
        raise EntryNotFound(f"no entry with id, prefix or label {ref!r}")


def _dangling(pos: int, parents: Sequence[str | None], lines: Sequence[int]) -> Diagnostic:
    return diagnostic(lines[pos], -1, f"parentId {parents[pos]} names no entry; treated as a root", "dangling-parent",
                      "warning")


def _cycles(forward: Iterable[int], parent_at: array, ids: Sequence[str | None], lines: Sequence[int],
            diagnostics: list[Diagnostic]) -> None:
    """Report each parentId cycle once, at load, not only when a walk happens to meet one: `forward` holds
    the entries whose parent is not earlier (only these can close one), in file order."""
    done: set[int] = set()
    for start in forward:
        trail: set[int] = set()
        node = start
        while node >= 0 and node not in done:
            if node in trail:
                diagnostics.append(diagnostic(lines[node], -1, f"parentId cycle through {ids[node]}", "cycle"))
                break
            trail.add(node)
            node = parent_at[node]
        done.update(trail)


@dataclass
class Links:
    """How a run of entries (a process's half of a file) links among themselves, found where their ids
    are (`links_of`), so that two processes share the work of `Tree.from_columns`; `join_halves` puts
    two together. Only a run with no id twice is linked: from_columns says where an id repeats. Most
    entries' parent is the entry just before them: only the others (the starts) are listed."""

    unique: bool
    starts: list[int] = field(default_factory=list)  # the first entry, and those whose parent is not the one before
    to: array = field(default_factory=lambda: array("q"))  # their parents' positions among the run (-1: none there)
    misses: list[int] = field(default_factory=list)  # positions whose parentId is a string naming none of them
    forward: list[int] = field(default_factory=list)  # positions whose parent is not earlier among them


def links_of(ids: list[str | None], parents: list[str | None], by_id: dict[str | None, int] | None = None
             ) -> tuple[dict[str, int], Links]:
    """The run's by_id (empty when an id is there twice) and its Links. `by_id`: the ids' last positions
    (None among them or not), when the caller indexed them as they came (it is then taken as the run's)."""
    n = len(ids)
    if by_id is None:
        by_id = dict(zip(ids, range(n), strict=True))
    by_id.pop(None, None)
    if len(by_id) + ids.count(None) < n:
        return {}, Links(False)
    targets = _parent_positions(ids, parents, by_id, True)
    starts = [0] if n else []
    starts += compress(range(1, n), map(operator.ne, itertools.islice(targets, 1, None), range(n - 1)))
    to = array("q", map(targets.__getitem__, starts))
    # (a miss, a root and a forward parent are never the entry before: all are among the starts)
    misses = [pos for pos, target in zip(starts, to, strict=True) if target < 0 and parents[pos] is not None]
    forward = [pos for pos, target in zip(starts, to, strict=True) if target >= pos]
    return by_id, Links(True, starts, to, misses, forward)


def join_halves(ids: list[str | None], parents: list[str | None], lines: Sequence[int], cut: int,
                first_by_id: dict[str, int], first: Links, second: Links, across: bool | None = None
                ) -> tuple[array, list[Diagnostic], list[int]] | None:
    """What `Tree.from_columns` finds of these columns (each entry's parent position, and its diagnostics
    in the same order) from the Links of the entries before `cut` (whose by_id is `first_by_id`) and of
    those from `cut` on (positions counted from `cut`), with the starts of the whole (the first entry
    and those whose parent is not the one before). None when an id is there twice, in a half or across
    the cut: from_columns then says where, and which one parentIds link to. `across`: whether an id of
    the second half is in the first, when the caller looked (as the second half's ids came)."""
    n = len(ids)
    if across is None:
        across = not first_by_id.keys().isdisjoint(itertools.islice(ids, cut, None))
    if across or not (first.unique and second.unique):
        return None
    parent_at = array("q", range(-1, n - 1))  # the entry before, but at the starts
    for pos, target in zip(first.starts, first.to, strict=True):
        parent_at[pos] = target
    forward = list(first.forward)
    dangling: list[int] = []
    if first.misses:  # a parent later in the file, beyond the cut (rare: the second half's ids indexed here)
        later = dict(zip(itertools.islice(ids, cut, None), range(cut, n), strict=True))
        for pos in first.misses:
            target = later.get(parents[pos], -1)  # type: ignore[arg-type]
            if target < 0:
                dangling.append(pos)
            else:
                parent_at[pos] = target
                forward.append(pos)
        forward.sort()
    for pos, target in zip(second.starts, second.to, strict=True):
        parent_at[cut + pos] = target + cut if target >= 0 else -1
    for pos in second.misses:
        target = first_by_id.get(parents[cut + pos], -1)  # type: ignore[arg-type]
        parent_at[cut + pos] = target
        if target < 0:
            dangling.append(cut + pos)
    diagnostics = [_dangling(pos, parents, lines) for pos in dangling]
    _cycles([*forward, *map(cut.__add__, second.forward)], parent_at, ids, lines, diagnostics)
    # the second half's first entry may be the child of the first half's last: then no start
    starts = [*first.starts, *(cut + pos for pos in second.starts
                               if cut + pos == 0 or parent_at[cut + pos] != cut + pos - 1)]
    return parent_at, diagnostics, starts


def _parent_positions(ids: list[str | None], parents: list[str | None], by_id: dict[str, int], unique: bool) -> array:
    """Each entry's parent position (-1: none). A parentId that is the very string object of the id just
    before (a chain, as a streamed read keeps it) is that entry when no id is there twice: only the others
    are looked up (a million lookups cost more than building the index)."""
    n = len(ids)
    if unique:
        links = list(compress(range(1, n), map(operator.is_not, itertools.islice(parents, 1, None), ids)))
        roots = list(compress(range(n), map(operator.is_, parents, repeat(None))))  # (None is None: no chain)
    if not unique or len(links) + len(roots) > n // 4:
        return array("q", map(by_id.get, parents, repeat(-1)))
    targets = array("q", range(-1, n - 1))
    get = by_id.get
    for pos in itertools.chain([0] if n else [], links):
        parent = parents[pos]
        targets[pos] = -1 if parent is None else get(parent, -1)  # type: ignore[arg-type]
    for pos in roots:
        targets[pos] = -1
    return targets


class _Extended(Sequence):
    """A lazily loaded entry sequence with entries appended in memory after it."""

    def __init__(self, base: Sequence[dict]) -> None:
        self._base = base
        self._extra: list[dict] = []

    def append(self, entry: dict) -> None:
        self._extra.append(entry)

    def moved_to(self, path: object) -> None:
        moved_to = getattr(self._base, "moved_to", None)
        if moved_to is not None:
            moved_to(path)

    def __len__(self) -> int:
        return len(self._base) + len(self._extra)

    def __getitem__(self, pos):  # noqa: ANN001, ANN204 - Sequence protocol
        n = len(self._base)
        return self._base[pos] if pos < n else self._extra[pos - n]


@dataclass
class Context:
    """What a model sees from one leaf, exactly as pi's buildSessionContext builds it."""

    messages: list[dict]
    model: dict | None
    thinking_level: str
    leaf_id: str | None
    path: list[int]


def _message_of(entry: dict) -> dict | None:
    message = entry.get("message")
    return message if isinstance(message, dict) else None


def context_message(entry: dict) -> dict | None:
    """The message one path entry contributes, or None (model/thinking/label/custom/unknown...)."""
    kind = entry.get("type")
    if kind == "message":
        return _message_of(entry)
    if kind == "custom_message":
        message = {
            "role": "custom",
            "customType": entry.get("customType"),
            "content": entry.get("content"),
            "display": entry.get("display"),
        }
        if "details" in entry:
            message["details"] = entry["details"]
        message["timestamp"] = to_ms(entry.get("timestamp"))
        return message
    if kind == "branch_summary" and entry.get("summary"):
        return {
            "role": "branchSummary",
            "summary": entry["summary"],
            "fromId": entry.get("fromId"),
            "timestamp": to_ms(entry.get("timestamp")),
        }
    return None


def build_context(tree: Tree, leaf_id: str | None | type[Ellipsis] = ...) -> Context:
    """pi's buildSessionContext. `...` (default) means the file's leaf; None means an empty context.

    It walks the path backwards and decodes only what it must: after a compaction that is the
    kept entries and those after it, not the whole history.
    """
    if leaf_id is None or not tree.ids:
        return Context([], None, "off", None, [])
    leaf_pos = tree.by_id.get(leaf_id) if isinstance(leaf_id, str) else None
    path = tree.path(leaf_pos)
    types = tree.types
    entries = tree.entries

    compaction_at = next((i for i in range(len(path) - 1, -1, -1) if types[path[i]] == "compaction"), None)
    thinking_at = next(
        (i for i in range(len(path) - 1, -1, -1) if types[path[i]] == "thinking_level_change"), None
    )
    thinking = "off"
    if thinking_at is not None:
        thinking = entries[path[thinking_at]].get("thinkingLevel")

    model = None
    for i in range(len(path) - 1, -1, -1):
        kind = types[path[i]]
        if kind == "model_change":
            entry = entries[path[i]]
            model = {"provider": entry.get("provider"), "modelId": entry.get("modelId")}
            break
        if kind == "message":
            message = _message_of(entries[path[i]])
            if message is not None and message.get("role") == "assistant":
                model = {"provider": message.get("provider"), "modelId": message.get("model")}
                break

    messages: list[dict] = []

    def add(pos: int) -> None:
        if types[pos] in ("message", "custom_message", "branch_summary"):
            message = context_message(entries[pos])
            if message is not None:
                messages.append(message)

    if compaction_at is None:
        for pos in path:
            add(pos)
    else:
        compaction = entries[path[compaction_at]]
        messages.append(
            {
                "role": "compactionSummary",
                "summary": compaction.get("summary"),
                "tokensBefore": compaction.get("tokensBefore"),
                "timestamp": to_ms(compaction.get("timestamp")),
            }
        )
        first_kept = compaction.get("firstKeptEntryId")
        start = next((i for i in range(compaction_at) if tree.ids[path[i]] == first_kept), compaction_at)
        for i in range(start, compaction_at):
            add(path[i])
        for i in range(compaction_at + 1, len(path)):
            add(path[i])
    return Context(messages, model, thinking, tree.ids[path[-1]] if path else None, path)
