"""Presentation: one-line summaries of entries, the branch tree, JSON rows (tables: table.py)."""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable, Iterable, Iterator

import orjson

from harnesskit.session.tree import Tree
from harnesskit.text import escape_json, one_line, raw_in_json, squeezed, visible

from . import table
from .table import fit

BASE_KEYS = {"type", "id", "parentId", "timestamp"}


def compact(value: object) -> str:
    """One line for a summary: JSON, or repr where orjson cannot write it (integers beyond 64 bits,
    more than 254 levels: the reader reads up to 1024)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        from harnesskit.session.reader import room_for_depth

        with room_for_depth():
            return repr(value)


def cut(text: str, width: int) -> str:
    """At most `width` display columns (no cut for width <= 0)."""
    return text if width <= 0 else fit(text, width)


def blocks_text(content: object, limit: int | None = None) -> str:
    """The readable part of a content field: a string, or text/thinking/image/toolCall blocks.
    With a `limit`, the blocks after the first `limit` characters are not read."""
    if content.__class__ is list and len(content) == 1:  # one text block: most messages (the loop's result)
        block = content[0]
        if block.__class__ is dict and block.get("type") == "text":
            text = block.get("text", "")
            if text.__class__ is str:
                if limit is None or len(text) <= limit + 8:
                    return squeezed(text)
                head = squeezed(text[: limit + 8])  # one_line's first try, without the call
                if len(head) > limit:
                    return head
            return one_line(str(text), limit)
    if isinstance(content, str):
        return one_line(content, limit)
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    size = 0
    for block in content:
        if limit is not None and size > limit:
            break
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            part = one_line(str(block.get("text", "")), limit)
        elif kind == "thinking":
            part = "[thinking]"
        elif kind == "image":
            part = f"[image {block.get('mimeType', '')}]".replace(" ]", "]")
        elif kind == "toolCall":
            arguments = compact(block.get("arguments", {}))
            part = f"→ {block.get('name')} {arguments if limit is None else arguments[: limit + 1]}"
        else:
            part = f"[{kind}]"
        if part:
            parts.append(part)
            size += len(part) + 1
    return " ".join(parts)


def message_summary(message: object, limit: int | None = None) -> str:
    """One line; with a `limit`, at least its first `limit` characters (more may follow: cut it)."""
    if not isinstance(message, dict):
        return "(no message)"
    role = message.get("role")
    if role == "toolResult":
        mark = "✗" if message.get("isError") else "→"
        return f"{message.get('toolName')} {mark} {blocks_text(message.get('content'), limit)}"
    if role == "bashExecution":
        return f"$ {one_line(str(message.get('command', '')), limit)} → exit {message.get('exitCode')}"
    if role in ("branchSummary", "compactionSummary"):
        return one_line(str(message.get("summary", "")), limit)
    text = blocks_text(message.get("content"), limit)
    if role == "assistant":
        stop = message.get("stopReason")
        if stop in ("error", "aborted"):
            detail = message.get("errorMessage") or stop
            text = f"[{stop}: {one_line(str(detail), limit)}] {text}".rstrip()
    return text


def entry_kind(entry: dict) -> str:
    if entry.get("type") == "message" and isinstance(entry.get("message"), dict):
        return f"message:{entry['message'].get('role')}"
    return str(entry.get("type"))


def entry_summary(entry: dict, limit: int | None = None) -> str:
    """One line; with a `limit`, at least its first `limit` characters (more may follow: cut it)."""
    kind = entry.get("type")
    if kind == "message":
        return message_summary(entry.get("message"), limit)
    if kind == "model_change":
        return f"{entry.get('provider')}/{entry.get('modelId')}"
    if kind == "thinking_level_change":
        return str(entry.get("thinkingLevel"))
    if kind == "compaction":
        return (f"kept from {entry.get('firstKeptEntryId')}, {entry.get('tokensBefore')} tokens before: "
                f"{one_line(str(entry.get('summary', '')), limit)}")
    if kind == "branch_summary":
        return f"from {entry.get('fromId')}: {one_line(str(entry.get('summary', '')), limit)}"
    if kind == "custom":
        return f"{entry.get('customType')} {compact(entry.get('data'))[: None if limit is None else limit + 1]}"
    if kind == "custom_message":
        return f"{entry.get('customType')}: {blocks_text(entry.get('content'), limit)}"
    if kind == "label":
        label = entry.get("label")
        return f"{entry.get('targetId')} ← {label}" if label else f"{entry.get('targetId')} label cleared"
    if kind == "session_info":
        return f"name: {entry.get('name')}"
    extra = {k: v for k, v in entry.items() if k not in BASE_KEYS}
    return compact(extra)[: None if limit is None else limit + 1]


def terminal_width() -> int:
    return table.terminal_width(120)


def tabulate(rows: Iterable[Iterable[object]], headers: list[str], tablefmt: str = "simple", **options: object) -> str:
    """tabulate, with every text cell made `visible` first: escapes widen a cell, so they must be in
    place before columns are measured. Numbers stay numbers, for alignment, except integers beyond
    any float, which tabulate cannot measure."""
    from tabulate import tabulate as _tabulate  # only the commands that print a table pay for it (start-up)

    shown = [[_cell(c) for c in row] for row in rows]
    return _tabulate(shown, headers=headers, tablefmt=tablefmt, **options)


def _cell(value: object) -> object:
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, int) and value.bit_length() > 1000:
        return str(value)
    return value


def by_time(tree: Tree | None, siblings: list[int], stamp: Callable[[int], int | None] | None = None) -> list[int]:
    """Siblings oldest first, as pi's getTree sorts them; equal or unreadable times keep file order.
    `stamp(pos)` gives an entry's time as iso_to_ms reads it (default: read from tree.entries)."""
    from harnesskit.session.migrate import iso_to_ms

    def key(pos: int) -> tuple[bool, int]:
        ms = iso_to_ms(tree.entries[pos].get("timestamp")) if stamp is None else stamp(pos)  # type: ignore[union-attr]
        return (ms is None, ms or 0)  # no readable time: after every real one

    return sorted(siblings, key=key)


def draw_tree(tree: Tree, positions: Iterable[int] | None, labels: dict[str, str], leaf: str | None,
              width: int | None, entries_at: Callable[[list[int]], Iterable[dict]] | None = None) -> Iterator[str]:
    """The branch structure: a chain stays flat, each fork indents its branches. Iterative, so a
    million-deep chain draws without recursion. `entries_at` reads the entries at some positions
    (default tree.entries[pos]; a big lazily indexed file passes a reader that keeps none)."""
    read = entries_at or (lambda batch: map(tree.entries.__getitem__, batch))
    walk = _walk(tree, positions)
    while batch := list(itertools.islice(walk, 4096)):  # read in drawing order, a batch at a time
        for (pos, lead), entry in zip(batch, read([pos for pos, _ in batch]), strict=True):
            if width and len(lead) > width // 2:  # nested deeper than half the line: its last levels only
                lead = "…" + lead[len(lead) - width // 2 + 1:]
            entry_id = tree.ids[pos] or "?"
            marks = f" [{labels[entry_id]}]" if entry_id in labels else ""
            if entry_id == leaf:
                marks += " ← leaf"
            text = visible(f"{lead}{entry_id} {entry_kind(entry)}{marks}: {entry_summary(entry, width)}")
            yield cut(text, width) if width else text


def _walk(tree: Tree, positions: Iterable[int] | None,
          stamp: Callable[[int], int | None] | None = None) -> Iterator[tuple[int, str]]:
    """(position, lead of its line) in drawing order, each entry once. The children lists are three
    arrays of positions (first child, next sibling, last child), not a dict of a million lists."""
    allowed = None if positions is None else set(positions)
    n = len(tree)
    first, after, last = array("l", [-1]) * n, array("l", [-1]) * n, array("l", [-1]) * n
    roots: list[int] = []
    for pos in range(n):  # file order: each parent's children in file order, as Tree.children()
        parent = tree.parent_pos(pos)
        if parent is None:
            roots.append(pos)
        elif first[parent] < 0:
            first[parent] = last[parent] = pos
        else:
            after[last[parent]] = pos
            last[parent] = pos

    def branches(pos: int, prefix: str) -> list[tuple[int, str, str]]:
        """Stack items (position, lead of its own line, prefix of its descendants), first on top."""
        children = []
        child = first[pos]
        while child >= 0:
            if allowed is None or child in allowed:
                children.append(child)
            child = after[child]
        return _stacked(tree, children, prefix, stamp)

    stack = _stacked(tree, [c for c in roots if allowed is None or c in allowed], "", stamp)
    drawn = bytearray(n)
    unreached = iter(range(n))
    while True:
        if not stack:
            # entries no root reaches (a parentId cycle): each starts a tree of its own, drawn once
            start = next((p for p in unreached if not drawn[p] and (allowed is None or p in allowed)), None)
            if start is None:
                break
            stack = [(start, "", "")]
        pos, lead, prefix = stack.pop()
        if drawn[pos]:
            continue
        drawn[pos] = 1
        yield pos, lead
        stack.extend(branches(pos, prefix))


def _stacked(tree: Tree | None, children: list[int], prefix: str,
             stamp: Callable[[int], int | None] | None = None) -> list[tuple[int, str, str]]:
    if len(children) == 1:
        return [(children[0], prefix, prefix)]
    children = by_time(tree, children, stamp)
    items = []
    for i, child in enumerate(children):
        end = i == len(children) - 1
        items.append((child, prefix + ("└─ " if end else "├─ "), prefix + ("   " if end else "│  ")))
    return items[::-1]


def json_line(obj: object) -> str:
    """One exact JSON line that is also safe on a terminal (see `escape_json`). The stdlib writes
    what orjson refuses: integers beyond 64 bits, lone surrogates."""
    try:
        data = orjson.dumps(obj)
    except TypeError:  # also more than orjson's 254 levels (the reader reads up to 1024)
        import json

        from harnesskit.session.reader import room_for_depth

        with room_for_depth():
            # orjson's compact separators: the same value prints the same bytes whichever wrote it
            return escape_json(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))
    return escape_json(data.decode()) if raw_in_json(data) else data.decode()
