"""A cheap, exact proof that an entry of a common shape is valid, so the hot path can skip the schema.

`proven_valid(entry)` is True only when the entry satisfies the bundled schemas (schemas/*.json);
False means "not proven", and the caller asks jsonschema_rs. It mirrors the schemas rule by rule for
the shapes pi writes every turn (every entry type, and the user, assistant and toolResult messages
with text, thinking, image and toolCall blocks); anything else (other roles, a value that is not
exactly a str/int/float/bool/list/dict) is left to the schema. A differential test
(tests/test_shapes.py) holds it to the schema's verdict on fixtures, systematic mutations and
random replacements: a schema change that is not mirrored here fails that test.

Values are tested by exact class (`v.__class__ is str`): JSON decoders make no subclasses, and a
subclass is simply not proven. A JSON number is an int or a finite float, never a bool.
"""

from __future__ import annotations

from typing import Any

_INF = float("inf")
_NEG_INF = -_INF
_ABSENT: Any = ""  # a default that passes the `str` test: an absent optional key is valid
_NO_BOOL: Any = False


def _number(v: Any) -> bool:
    c = v.__class__
    return c is int or (c is float and _NEG_INF < v < _INF)


def _count(v: Any) -> bool:
    """A number with "minimum": 0."""
    c = v.__class__
    return (c is int and v >= 0) or (c is float and 0 <= v < _INF)


def _calls(content: Any) -> tuple[str, ...] | None:
    """content.json#/$defs/blocks: an array of content blocks; the ids of its toolCall blocks, or None
    when not proven."""
    if content.__class__ is not list:
        return None
    calls: tuple[str, ...] = ()
    for b in content:
        if b.__class__ is not dict:
            return None
        t = b.get("type")
        if t == "text":
            # two keys, "type" and "text": no textSignature to test
            if b.get("text").__class__ is not str or (len(b) > 2 and b.get("textSignature", _ABSENT).__class__
                                                       is not str):
                return None
        elif t == "toolCall":
            call_id = b.get("id")
            if (call_id.__class__ is not str or b.get("name").__class__ is not str
                    or b.get("arguments").__class__ is not dict
                    or b.get("thoughtSignature", _ABSENT).__class__ is not str):
                return None
            calls += (call_id,)
        elif t == "thinking":
            if (b.get("thinking").__class__ is not str or b.get("thinkingSignature", _ABSENT).__class__ is not str
                    or b.get("redacted", _NO_BOOL).__class__ is not bool):
                return None
        elif t == "image":
            if b.get("data").__class__ is not str or b.get("mimeType").__class__ is not str:
                return None
        elif t.__class__ is not str:  # other block types are accepted, as pi accepts them
            return None
    return calls


def _string_or_blocks(content: Any) -> bool:
    return content.__class__ is str or _calls(content) is not None


def _optional_number(obj: dict, key: str) -> bool:
    v = obj.get(key, 0)  # absent: valid
    c = v.__class__
    return c is int or (c is float and _NEG_INF < v < _INF)


_COUNTS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
_COSTS = ("input", "output", "cacheRead", "cacheWrite", "total")
_NO_COST: Any = {}


def _usage(u: Any) -> bool:
    """usage.json. What pi writes (every key there, integer counts) unrolled, which costs a third of a
    loop over the keys; anything else key by key."""
    if u.__class__ is not dict:
        return False
    try:
        n1, n2, n3, n4, n5 = u["input"], u["output"], u["cacheRead"], u["cacheWrite"], u["totalTokens"]
        cost = u["cost"]
        if (n1.__class__ is int and n2.__class__ is int and n3.__class__ is int and n4.__class__ is int
                and n5.__class__ is int and n1 >= 0 and n2 >= 0 and n3 >= 0 and n4 >= 0 and n5 >= 0
                and cost.__class__ is dict):
            c1, c2, c3, c4, c5 = cost["input"], cost["output"], cost["cacheRead"], cost["cacheWrite"], cost["total"]
            if ((c1.__class__ is float and _NEG_INF < c1 < _INF or c1.__class__ is int)
                    and (c2.__class__ is float and _NEG_INF < c2 < _INF or c2.__class__ is int)
                    and (c3.__class__ is float and _NEG_INF < c3 < _INF or c3.__class__ is int)
                    and (c4.__class__ is float and _NEG_INF < c4 < _INF or c4.__class__ is int)
                    and (c5.__class__ is float and _NEG_INF < c5 < _INF or c5.__class__ is int)):
                return True
    except KeyError:
        pass
    return _usage_by_key(u)


def _usage_by_key(u: dict) -> bool:
    for key in _COUNTS:
        v = u.get(key, 0)  # absent: valid
        c = v.__class__
        if not ((c is int and v >= 0) or (c is float and 0 <= v < _INF)):
            return False
    cost = u.get("cost", _NO_COST)
    if cost.__class__ is not dict:
        return False
    for key in _COSTS:
        v = cost.get(key, 0)
        c = v.__class__
        if not (c is int or (c is float and _NEG_INF < v < _INF)):
            return False
    return True


_STOP_REASONS = frozenset({"stop", "length", "toolUse", "error", "aborted"})


def proven_message(e: dict) -> tuple[str, ...] | None:
    """proven_valid for an entry of type "message", and in the same pass what validate's structural
    checks need of it: the ids of an assistant message's toolCall blocks (() for other roles and for
    an assistant without calls). None when not proven."""
    try:  # required keys: absent is not proven (a subscript in a try costs less than .get)
        entry_id = e["id"]
        parent = e["parentId"]
        m = e["message"]
        if (entry_id.__class__ is not str or entry_id == "" or (parent is not None and parent.__class__ is not str)
                or e["timestamp"].__class__ is not str or m.__class__ is not dict):
            return None
        role = m.get("role")
        if role == "assistant":
            stamp = m["timestamp"]
            if ((stamp.__class__ is int or _number(stamp)) and m["api"].__class__ is str
                    and m["provider"].__class__ is str and m["model"].__class__ is str
                    and m["stopReason"].__class__ is str and m["stopReason"] in _STOP_REASONS
                    and _usage(m["usage"]) and m.get("errorMessage", _ABSENT).__class__ is str
                    and m.get("responseId", _ABSENT).__class__ is str
                    and m.get("responseModel", _ABSENT).__class__ is str):
                return _calls(m["content"])
            return None
        if role == "toolResult":
            if (m["toolCallId"].__class__ is str and m["toolName"].__class__ is str and _calls(m["content"]) is not None
                    and m.get("isError", _NO_BOOL).__class__ is bool and _optional_number(m, "timestamp")):
                return ()
            return None
        if role == "user":
            if _string_or_blocks(m["content"]) and _optional_number(m, "timestamp"):
                return ()
            return None
    except KeyError:
        return None
    return None  # bashExecution, custom and other roles: not proven here


def _model_change(e: dict) -> bool:
    return e.get("provider").__class__ is str and e.get("modelId").__class__ is str


def _thinking_level_change(e: dict) -> bool:
    return e.get("thinkingLevel").__class__ is str


def _compaction(e: dict) -> bool:
    return (e.get("summary").__class__ is str and e.get("firstKeptEntryId").__class__ is str
            and "tokensBefore" in e and _count(e["tokensBefore"]) and e.get("fromHook", _NO_BOOL).__class__ is bool)


def _branch_summary(e: dict) -> bool:
    return (e.get("fromId").__class__ is str and e.get("summary").__class__ is str
            and e.get("fromHook", _NO_BOOL).__class__ is bool)


def _custom(e: dict) -> bool:
    return e.get("customType").__class__ is str


def _custom_message(e: dict) -> bool:
    return (e.get("customType").__class__ is str and "content" in e and _string_or_blocks(e["content"])
            and e.get("display", _NO_BOOL).__class__ is bool)


def _label(e: dict) -> bool:
    if e.get("targetId").__class__ is not str:
        return False
    label = e.get("label")
    return label is None or label.__class__ is str


def _session_info(e: dict) -> bool:
    return e.get("name", _ABSENT).__class__ is str


_BY_TYPE = {
    "model_change": _model_change,
    "thinking_level_change": _thinking_level_change,
    "compaction": _compaction,
    "branch_summary": _branch_summary,
    "custom": _custom,
    "custom_message": _custom_message,
    "label": _label,
    "session_info": _session_info,
}


def proven_valid(e: Any) -> bool:
    """True only when `e` is a valid v3 entry of a known type (entry-base.json and its own schema)."""
    if e.__class__ is not dict:
        return False
    kind = e.get("type")
    if kind.__class__ is str and kind == "message":
        return proven_message(e) is not None
    check = _BY_TYPE.get(kind) if kind.__class__ is str else None
    if check is None:
        return False
    entry_id = e.get("id")
    parent = e.get("parentId", 0)
    return (entry_id.__class__ is str and entry_id != "" and (parent is None or parent.__class__ is str)
            and e.get("timestamp").__class__ is str and check(e))


def proven_header(h: Any) -> bool:
    """True only when `h` is a valid session header (header.json); a float version is left to the schema."""
    if h.__class__ is not dict or h.get("type") != "session":
        return False
    version, session_id = h.get("version"), h.get("id")
    return (version.__class__ is int and version >= 1 and session_id.__class__ is str and session_id != ""
            and h.get("timestamp").__class__ is str and h.get("cwd").__class__ is str
            and h.get("parentSession", _ABSENT).__class__ is str)
