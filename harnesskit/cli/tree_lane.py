"""The fast lane of `inspect --tree`: most lines of a session are messages whose tree line needs a few
fields, so msgspec decodes each line into a Struct of only those (skipping the rest in C, about five
times faster than orjson.loads building the whole dict) and `summary` makes render.entry_summary's
text from it.

Exact by construction, not by luck: a line takes this lane only when what it shows cannot differ from
what the reader's dict shows. Every field is typed as narrowly as the summary reads it (a null, a
number or an object where a string is read is refused), so a refusal (any msgspec error, or `Slow`
raised here) sends the line to the reader's own path, which handles everything. What msgspec skips it
does not check as orjson would, so:
- UTF-8: a line with any byte beyond ASCII is decoded as UTF-8 first (a bad byte: the reader's path,
  which reports it);
- numbers: orjson refuses a number beyond a double (1e400), the reader then reads the line with the
  stdlib, whose values differ from orjson's only for integers beyond 64 bits; no number is shown here
  but a tool call's arguments, which are read with orjson and refused when they hold such an integer;
- depth: msgspec's limit is the interpreter's recursion limit, below orjson's 1024 levels (the lane
  is closed where it is not);
- keys: msgspec unescapes keys and keeps the last of a duplicate, as orjson does.
The differential tests (tests/cli/test_tree_lane.py) hold it to the reader's path on damaged files.
"""

from __future__ import annotations

import re

import msgspec
import orjson
from msgspec import UNSET, Raw, Struct, UnsetType

from harnesskit.text import one_line, squeezed

from .render import compact


class Slow(Exception):
    """This line is for the reader's path (something the lane does not show the same way)."""


class _Block(Struct, gc=False):
    type: str
    text: str = ""
    mimeType: str = ""
    name: str | None = None
    arguments: Raw | UnsetType = UNSET


class _Message(Struct, gc=False):
    role: str
    content: str | list[_Block] | None = None
    toolName: str | None = None
    isError: bool = False
    stopReason: str | None = None
    errorMessage: str | None = None


class Line(Struct, gc=False):
    type: str
    id: str | None = None
    parentId: str | None = None
    timestamp: str | None = None
    message: _Message | None = None


decode = msgspec.json.Decoder(Line).decode


def refuse(line: bytes) -> Line:
    """`decode` for when the lane is closed: every line to the reader's path."""
    raise Slow
Refused = (msgspec.DecodeError, RecursionError, Slow)  # msgspec.ValidationError is a DecodeError
_OTHER_ROLES = frozenset(("bashExecution", "branchSummary", "compactionSummary"))  # left to the reader's path
_LONG_INTEGER = re.compile(rb"[0-9]{20}")  # 2**64 has 20 digits: orjson and the stdlib may read it differently


def summary(message: _Message, limit: int) -> str:
    """render.message_summary of the message the reader would have read (raises Slow where the lane
    does not cover it)."""
    role = message.role
    if role == "toolResult":
        mark = "✗" if message.isError else "→"
        return f"{message.toolName} {mark} {_blocks_text(message.content, limit)}"
    if role in _OTHER_ROLES:
        raise Slow
    text = _blocks_text(message.content, limit)
    if role == "assistant":
        stop = message.stopReason
        if stop in ("error", "aborted"):
            detail = message.errorMessage or stop
            text = f"[{stop}: {one_line(detail, limit)}] {text}".rstrip()
    return text


def _blocks_text(content: str | list[_Block] | None, limit: int) -> str:
    """render.blocks_text of these blocks, with a limit."""
    if content.__class__ is list and len(content) == 1:  # type: ignore[arg-type]
        block = content[0]  # type: ignore[index]
        if block.type == "text":
            text = block.text
            if len(text) <= limit + 8:  # (squeezed: " ".join(text.split()) without the list of words)
                return squeezed(text)
            head = squeezed(text[: limit + 8])
            if len(head) > limit:
                return head
            return one_line(text, limit)
    if content.__class__ is str:
        return one_line(content, limit)  # type: ignore[arg-type]
    if content is None:
        return ""
    parts: list[str] = []
    size = 0
    for block in content:  # type: ignore[union-attr]
        if size > limit:
            break
        kind = block.type
        if kind == "text":
            part = one_line(block.text, limit)
        elif kind == "thinking":
            part = "[thinking]"
        elif kind == "image":
            part = f"[image {block.mimeType}]".replace(" ]", "]")
        elif kind == "toolCall":
            raw = block.arguments
            if raw is UNSET:
                arguments = "{}"
            else:
                data = bytes(raw)  # type: ignore[arg-type]
                if _LONG_INTEGER.search(data):
                    raise Slow
                try:
                    arguments = compact(orjson.loads(data))
                except orjson.JSONDecodeError:
                    raise Slow from None
            part = f"→ {block.name} {arguments[: limit + 1]}"
        else:
            part = f"[{kind}]"
        if part:
            parts.append(part)
            size += len(part) + 1
    return " ".join(parts)
