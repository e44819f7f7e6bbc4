"""A one-call parse-and-proof of a message entry: msgspec decodes the line into Structs that mirror
exactly the rules shapes.py proves, so a line it accepts is valid by the bundled schemas.

Measured by callgrind on a 10 MB session: this decode costs less than orjson.loads alone, and about
half of orjson.loads plus proven_message. A line it refuses (any error) takes validate's old path
(orjson, shapes.py, jsonschema_rs), so every report stays the same.

Every Struct forbids unknown fields although the schemas allow extra keys: msgspec skips an unknown
value without checking its UTF-8 or its numbers, which orjson (and so the reader) would refuse.
Numbers: a JSON Schema "number" is any JSON number and never a bool, as msgspec's float (ints are
accepted, NaN/Infinity are not JSON). Free-form values (`arguments`, `details`) decode as Python
objects, which checks their UTF-8, surrogates and number ranges; their nesting depth is bounded by
the interpreter's recursion limit, which the caller holds below the reader's MAX_DEPTH.
A differential test (tests/test_typed.py) holds it to the schema and to orjson's values.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

_Count = Annotated[float, Meta(ge=0)]  # "type": "number", "minimum": 0
_Id = Annotated[str, Meta(min_length=1)]


class _Block(Struct, tag_field="type", forbid_unknown_fields=True, gc=False):
    pass


class Text(_Block, tag="text"):
    text: str
    textSignature: str = ""


class Thinking(_Block, tag="thinking"):
    thinking: str
    thinkingSignature: str = ""
    redacted: bool = False


class Image(_Block, tag="image"):
    data: str
    mimeType: str


class ToolCall(_Block, tag="toolCall"):
    id: str
    name: str
    arguments: dict
    thoughtSignature: str = ""


_Blocks = list[Text | Thinking | Image | ToolCall]


class _Cost(Struct, forbid_unknown_fields=True, gc=False):
    input: float = 0
    output: float = 0
    cacheRead: float = 0
    cacheWrite: float = 0
    total: float = 0


class _Usage(Struct, forbid_unknown_fields=True, gc=False):
    input: _Count = 0
    output: _Count = 0
    cacheRead: _Count = 0
    cacheWrite: _Count = 0
    totalTokens: _Count = 0
    cost: _Cost | UnsetType = UNSET  # absent is valid; null is not


class _Message(Struct, tag_field="role", forbid_unknown_fields=True, gc=False):
    pass


class User(_Message, tag="user"):
    content: str | _Blocks
    timestamp: float = 0


class Assistant(_Message, tag="assistant"):
    content: _Blocks
    api: str
    provider: str
    model: str
    usage: _Usage
    stopReason: Literal["stop", "length", "toolUse", "error", "aborted"]
    timestamp: float
    errorMessage: str = ""
    responseId: str = ""
    responseModel: str = ""


class ToolResult(_Message, tag="toolResult"):
    toolCallId: str
    toolName: str
    content: _Blocks
    details: Any = None
    isError: bool = False
    timestamp: float = 0


class _Entry(Struct, tag_field="type", forbid_unknown_fields=True, gc=False):
    id: _Id
    parentId: str | None
    timestamp: str


class MessageEntry(_Entry, tag="message"):
    message: User | Assistant | ToolResult


class _NeverEntry(_Entry, tag="\x00"):
    """Makes the decoder's type a union, so a line without "type": "message" is refused."""


decode = msgspec.json.Decoder(MessageEntry | _NeverEntry).decode
Refused = (msgspec.DecodeError, RecursionError)  # msgspec.ValidationError is a DecodeError


# -- inspect --stats: the same Structs, with the usage numbers as orjson reads them ----------------
# validate proves them as floats; --stats sums them. A token count here is an integer within 64 bits
# (what orjson reads as an int: a longer one it reads as a float, and a float token count takes the
# exact lane), so adding it gives what the reader's dict gives; a cost is such an int or a float.
_Int64 = Annotated[int, Meta(ge=-(1 << 63), le=(1 << 63) - 1)]


class CountedCost(Struct, forbid_unknown_fields=True, gc=False):
    input: float = 0
    output: float = 0
    cacheRead: float = 0
    cacheWrite: float = 0
    total: _Int64 | float = 0


class _CountedUsage(Struct, forbid_unknown_fields=True, gc=False):
    input: _Int64 = 0
    output: _Int64 = 0
    cacheRead: _Int64 = 0
    cacheWrite: _Int64 = 0
    totalTokens: _Int64 = 0
    cost: CountedCost | UnsetType = UNSET


class CountedAssistant(Assistant, tag="assistant"):
    usage: _CountedUsage


class CountedEntry(_Entry, tag="message"):
    message: User | CountedAssistant | ToolResult


decode_counted = msgspec.json.Decoder(CountedEntry | _NeverEntry).decode


# -- export --parquet: the Structs again, with what the tables keep as the reader's dicts give it ---
# A message's timestamp is an int within 64 bits or a float as orjson reads it, and absent or null
# alike (the tables take the entry's ISO time then); a cost without a total is no cost of its own
# (CountedCost's default 0 would be one).
_Stamp = _Int64 | float | None


class ExportCost(CountedCost, forbid_unknown_fields=True, gc=False):
    total: _Int64 | float | UnsetType = UNSET


class _ExportUsage(_CountedUsage, forbid_unknown_fields=True, gc=False):
    cost: ExportCost | UnsetType = UNSET


class ExportUser(User, tag="user"):
    timestamp: _Stamp = None


class ExportAssistant(CountedAssistant, tag="assistant"):
    usage: _ExportUsage
    timestamp: _Stamp = None


class ExportToolResult(ToolResult, tag="toolResult"):
    timestamp: _Stamp = None


class ExportEntry(_Entry, tag="message"):
    message: ExportUser | ExportAssistant | ExportToolResult


decode_export = msgspec.json.Decoder(ExportEntry | _NeverEntry).decode
