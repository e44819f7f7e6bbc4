"""inspect --json's msgspec lane: a message line decoded by typed.py (validate's one-call parse and
proof) into Structs, and its row's facts taken from them instead of from orjson's dict of the line.

A row of --json needs the entry's id, parentId, role and summary; the entry itself is its line as
written. typed.decode builds fewer and smaller objects than orjson does, and a Struct's attributes cost
less to read than a dict's keys. `message_summary` here is render.message_summary over those Structs:
the two must agree on every line the decoder accepts (tests/cli/test_json_lane.py holds them to one
another through the whole command). Anything the lane cannot take exactly is None, and read as before:
a line typed.decode refuses (not a message, not schema-valid, not UTF-8, a duplicate tag...), and a
toolCall whose arguments hold an integer beyond 64 bits (orjson reads it as a float, msgspec as an int).
"""

from __future__ import annotations

import orjson

from harnesskit.session import typed
from harnesskit.session.typed import Assistant, Image, Text, ToolCall, ToolResult, User
from harnesskit.text import one_line, squeezed

from .table import _NARROW, ELLIPSIS, fit_measured

_ROLES = {User: b'"user"', Assistant: b'"assistant"', ToolResult: b'"toolResult"'}  # as JSON: inspect._LANE_ROW


def blocks_text(content: str | list, limit: int) -> str:
    """render.blocks_text of a message's content as typed.py decodes it (a string or blocks)."""
    if content.__class__ is str:
        return one_line(content, limit)  # type: ignore[arg-type]
    if len(content) == 1 and content[0].__class__ is Text:  # one text block: most messages
        text = content[0].text
        if len(text) <= limit + 8:
            return squeezed(text)
        return one_line(text, limit)
    parts: list[str] = []
    size = 0
    for block in content:
        if size > limit:
            break
        kind = block.__class__
        if kind is Text:
            part = one_line(block.text, limit)
        elif kind is ToolCall:  # a TypeError for an integer orjson cannot write: the caller's fallback
            part = f"→ {block.name} {orjson.dumps(block.arguments).decode()[: limit + 1]}"
        elif kind is Image:
            part = f"[image {block.mimeType}]".replace(" ]", "]")
        else:
            part = "[thinking]"
        if part:
            parts.append(part)
            size += len(part) + 1
    return " ".join(parts)


def json_facts(limit: int):  # noqa: ANN201 - the lane's reader, for Stream.fast
    """Stream.fast for --json: a line -> (id, parentId, role as JSON bytes, summary cut to `limit`), or None.

    render.message_summary and fit(summary, limit), the common cases inline (a call costs as much as their
    work): one text block, and a cut by length where every character takes one column. A summary's
    marks (→ ✗) are the only characters beyond ASCII of most rows; they take one column once
    table.char_width has measured them (in `_NARROW`): then only ASCII around them needs no measure."""
    decode, refused, entry_class, roles = typed.decode, typed.Refused, typed.MessageEntry, _ROLES
    text_class, result_class, assistant_class = Text, ToolResult, Assistant
    narrow, measured, room, keep = _NARROW, fit_measured, limit + 8, limit - 1

    def facts(content: bytes) -> tuple[str, str | None, bytes, str] | None:
        try:
            entry = decode(content)
        except refused:
            return None
        if entry.__class__ is not entry_class:
            return None
        message = entry.message
        kind = message.__class__
        blocks = message.content
        if blocks.__class__ is list and len(blocks) == 1 and blocks[0].__class__ is text_class:  # (blocks_text)
            text = blocks[0].text
            body = squeezed(text) if len(text) <= room else one_line(text, limit)
        else:
            try:
                body = blocks_text(blocks, limit)
            except TypeError:  # (see blocks_text)
                return None
        if kind is result_class:  # (render.message_summary)
            mark = "✗" if message.isError else "→"
            summary = f"{message.toolName} {mark} {body}"
            plain = mark in narrow and body.isascii() and message.toolName.isascii()  # one column each
        else:
            if kind is assistant_class:
                stop = message.stopReason
                if stop == "error" or stop == "aborted":
                    body = f"[{stop}: {one_line(message.errorMessage or stop, limit)}] {body}".rstrip()
            summary = body
            plain = None
        if len(summary) * 2 > limit:  # (fit: it may take more than `limit` columns)
            if plain or summary.isascii() or ("→" in narrow and summary.replace("→", "").isascii()):
                if len(summary) > limit:
                    summary = summary[:keep] + ELLIPSIS
            else:
                summary = measured(summary, limit)[0]
        return entry.id, entry.parentId, roles[kind], summary

    return facts
