"""Presentation: one-line summaries of entries, tables (tabulate), the branch tree, JSON rows."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator

import orjson

from harnesskit.session.migrate import iso_to_ms
from harnesskit.session.reader import room_for_depth
from harnesskit.session.tree import Tree
from harnesskit.text import escape_json, visible

BASE_KEYS = {"type", "id", "parentId", "timestamp"}


def one_line(text: str) -> str:
    return " ".join(text.split())


def compact(value: object) -> str:
    """One line for a summary: JSON, or repr where orjson cannot write it (integers beyond 64 bits,
    more than 254 levels: the reader reads up to 1024)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        with room_for_depth():
            return repr(value)


def cut(text: str, width: int) -> str:
    if width <= 0 or len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + "…"


def blocks_text(content: object) -> str:
    """The readable part of a content field: a string, or text/thinking/image/toolCall blocks."""
    if isinstance(content, str):
        return one_line(content)
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(one_line(str(block.get("text", ""))))
        elif kind == "thinking":
            parts.append("[thinking]")
        elif kind == "image":
            parts.append(f"[image {block.get('mimeType', '')}]".replace(" ]", "]"))
        elif kind == "toolCall":
            parts.append(f"→ {block.get('name')} {compact(block.get('arguments', {}))}")
        else:
            parts.append(f"[{kind}]")
    return " ".join(p for p in parts if p)


def message_summary(message: object) -> str:
    if not isinstance(message, dict):
        return "(no message)"
    role = message.get("role")
    if role == "toolResult":
        mark = "✗" if message.get("isError") else "→"
        return f"{message.get('toolName')} {mark} {blocks_text(message.get('content'))}"
    if role == "bashExecution":
        return f"$ {one_line(str(message.get('command', '')))} → exit {message.get('exitCode')}"
    if role in ("branchSummary", "compactionSummary"):
        return one_line(str(message.get("summary", "")))
    text = blocks_text(message.get("content"))
    if role == "assistant":
        stop = message.get("stopReason")
        if stop in ("error", "aborted"):
            detail = message.get("errorMessage") or stop
            text = f"[{stop}: {one_line(str(detail))}] {text}".rstrip()
    return text


def entry_kind(entry: dict) -> str:
    if entry.get("type") == "message" and isinstance(entry.get("message"), dict):
        return f"message:{entry['message'].get('role')}"
    return str(entry.get("type"))


def entry_summary(entry: dict) -> str:
    kind = entry.get("type")
    if kind == "message":
        return message_summary(entry.get("message"))
    if kind == "model_change":
        return f"{entry.get('provider')}/{entry.get('modelId')}"
    if kind == "thinking_level_change":
        return str(entry.get("thinkingLevel"))
    if kind == "compaction":
        return (f"kept from {entry.get('firstKeptEntryId')}, {entry.get('tokensBefore')} tokens before: "
                f"{one_line(str(entry.get('summary', '')))}")
    if kind == "branch_summary":
        return f"from {entry.get('fromId')}: {one_line(str(entry.get('summary', '')))}"
    if kind == "custom":
        return f"{entry.get('customType')} {compact(entry.get('data'))}"
    if kind == "custom_message":
        return f"{entry.get('customType')}: {blocks_text(entry.get('content'))}"
    if kind == "label":
        label = entry.get("label")
        return f"{entry.get('targetId')} ← {label}" if label else f"{entry.get('targetId')} label cleared"
    if kind == "session_info":
        return f"name: {entry.get('name')}"
    extra = {k: v for k, v in entry.items() if k not in BASE_KEYS}
    return compact(extra)


def terminal_width() -> int:
    return shutil.get_terminal_size((120, 24)).columns


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


def table(rows: list[list[object]], headers: list[str], fmt: str, width: int | None, cut_col: int) -> str:
    """A tabulate table whose `cut_col` is shortened so each row fits `width` (None: no cutting)."""
    rows = [[visible(str(c)) for c in r] for r in rows]
    if width is not None and rows:
        others = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers)) if i != cut_col]
        room = max(width - sum(others) - 2 * len(headers) - 2, 16)
        rows = [[cut(str(c), room) if i == cut_col else c for i, c in enumerate(r)] for r in rows]
    return tabulate(rows, headers=headers, tablefmt=fmt, disable_numparse=True)


def by_time(tree: Tree, siblings: list[int]) -> list[int]:
    """Siblings oldest first, as pi's getTree sorts them; equal or unreadable times keep file order."""
    def key(pos: int) -> tuple[bool, int]:
        ms = iso_to_ms(tree.entries[pos].get("timestamp"))
        return (ms is None, ms or 0)  # no readable time: after every real one

    return sorted(siblings, key=key)


def draw_tree(tree: Tree, positions: Iterable[int] | None, labels: dict[str, str], leaf: str | None,
              width: int | None) -> Iterator[str]:
    """The branch structure: a chain stays flat, each fork indents its branches. Iterative, so a
    million-deep chain draws without recursion."""
    allowed = None if positions is None else set(positions)
    kids = tree.children()

    def branches(children: list[int], prefix: str) -> list[tuple[int, str, str]]:
        """Stack items (position, lead of its own line, prefix of its descendants), first on top."""
        children = [c for c in children if allowed is None or c in allowed]
        if len(children) == 1:
            return [(children[0], prefix, prefix)]
        children = by_time(tree, children)
        items = []
        for i, child in enumerate(children):
            last = i == len(children) - 1
            items.append((child, prefix + ("└─ " if last else "├─ "), prefix + ("   " if last else "│  ")))
        return items[::-1]

    stack = branches(kids.get(None, []), "")
    drawn: set[int] = set()
    unreached = iter(range(len(tree)))
    while True:
        if not stack:
            # entries no root reaches (a parentId cycle): each starts a tree of its own, drawn once
            start = next((p for p in unreached if p not in drawn and (allowed is None or p in allowed)), None)
            if start is None:
                break
            stack = [(start, "", "")]
        pos, lead, prefix = stack.pop()
        if pos in drawn:
            continue
        drawn.add(pos)
        entry = tree.entries[pos]
        entry_id = tree.ids[pos] or "?"
        marks = f" [{labels[entry_id]}]" if entry_id in labels else ""
        if entry_id == leaf:
            marks += " ← leaf"
        text = visible(f"{lead}{entry_id} {entry_kind(entry)}{marks}: {entry_summary(entry)}")
        yield cut(text, width) if width else text
        stack.extend(branches(kids.get(pos, []), prefix))


def json_line(obj: object) -> str:
    """One exact JSON line that is also safe on a terminal (see `escape_json`). The stdlib writes
    what orjson refuses: integers beyond 64 bits, lone surrogates."""
    try:
        data = orjson.dumps(obj)
    except TypeError:  # also more than orjson's 254 levels (the reader reads up to 1024)
        import json

        with room_for_depth():
            return escape_json(json.dumps(obj, ensure_ascii=False))
    # DEL is 7f and C1 is c2 80..9f in UTF-8 (orjson writes no surrogate): a byte search skips the rest
    return escape_json(data.decode()) if b"\x7f" in data or b"\xc2" in data else data.decode()
