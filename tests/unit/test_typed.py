"""typed.decode (validate's msgspec lane): a line it accepts is schema-valid and gives validate's
bookkeeping exactly what orjson's dict gives (id, parentId, the assistant's toolCall ids, a tool
result's toolCallId). Held on fixtures, generated entries, systematic mutations, random replacements
and raw lines orjson and msgspec read differently (duplicate keys, bad UTF-8, surrogates, depth,
huge numbers); where orjson refuses a line msgspec accepts, the two lanes' reports must be equal.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import ALL_FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_schemas import ENTRIES, _mutations, _one_per_shape
from test_shapes import _calls_by_hand, _generated, _schema_valid, replaced

from harnesskit.session import check, typed


def _accepts(line: bytes) -> typed.MessageEntry | None:
    try:
        entry = typed.decode(line)
    except typed.Refused:
        return None
    return entry if entry.__class__ is typed.MessageEntry else None


def _bookkeeping_typed(e: typed.MessageEntry) -> tuple:
    m = e.message
    calls = tuple(b.id for b in m.content if b.__class__ is typed.ToolCall) if m.__class__ is typed.Assistant else ()
    return e.id, e.parentId, calls, getattr(m, "toolCallId", None)


def _bookkeeping_dict(e: dict) -> tuple:
    return e["id"], e["parentId"], _calls_by_hand(e), e["message"].get("toolCallId")


def _agree_line(line: bytes, what: str) -> bool:
    """Accepted ⇒ schema-valid with the same bookkeeping as orjson's value (which must exist)."""
    entry = _accepts(line)
    if entry is None:
        return False
    value = orjson.loads(line)
    assert _schema_valid(value), f"msgspec accepts what the schema rejects: {what}"
    assert _bookkeeping_typed(entry) == _bookkeeping_dict(value), what
    return True


def _line(obj: Any) -> bytes:
    return orjson.dumps(obj) + b"\n"


def test_it_accepts_what_pi_writes(tmp_path: Path) -> None:
    messages = [e for e in ENTRIES + _generated(tmp_path) if e["type"] == "message"]
    accepted = [e for e in messages if _agree_line(_line(e), repr(e)[:80])]
    assert sum(bool(_calls_by_hand(e)) for e in messages) > 100
    assert len(accepted) > 0.95 * len(messages)


def test_systematic_mutations_never_accept_an_invalid_entry() -> None:
    accepted = rejected = 0
    for entry in _one_per_shape(ENTRIES):
        for what, mutated in _mutations(entry):
            try:
                line = _line(mutated)
            except TypeError:  # not JSON (a NaN-free orjson refuses it): not a line
                continue
            if _agree_line(line, f"{entry['type']} {what}"):
                accepted += 1
            elif not _schema_valid(mutated):
                rejected += 1
    assert accepted > 100 and rejected > 500  # unknown keys are refused (typed.py): fewer accepted


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_replacements_never_accept_an_invalid_entry(data: st.DataObject) -> None:
    entry = replaced(data)
    try:
        line = _line(entry)
    except (TypeError, orjson.JSONEncodeError):
        return
    _agree_line(line, repr(entry)[:120])


_BASE = ('{"type":"message","id":"a","parentId":"p","timestamp":"t","message":{"role":"assistant",'
         '"content":[{"type":"toolCall","id":"c1","name":"n","arguments":ARGS}],"api":"x","provider":"p",'
         '"model":"m","stopReason":"stop","usage":{"input":USAGE}EXTRA,"timestamp":1}}')


def _raw(args: str = "{}", usage: str = "1", extra: str = "") -> bytes:
    return _BASE.replace("ARGS", args).replace("USAGE", usage).replace("EXTRA", extra).encode() + b"\n"


RAW_LINES = {
    "plain": _raw(),
    "duplicate id": _raw().replace(b'"id":"a"', b'"id":"a","id":"b"'),
    "duplicate parent": _raw().replace(b'"parentId":"p"', b'"parentId":"p","parentId":null'),
    "duplicate call id": _raw().replace(b'"id":"c1"', b'"id":"c1","id":"c2"'),
    "duplicate type": _raw().replace(b'"id":"a"', b'"id":"a","type":"label"'),
    "duplicate role": _raw(extra=',"role":"user"'),
    "duplicate block type": _raw().replace(b'"type":"toolCall"', b'"type":"toolCall","type":"text","text":"x"'),
    "duplicate message": _raw()[:-2] + b',"message":5}\n',
    "duplicate argument key": _raw('{"a":1,"a":2}'),
    "bad utf-8 in arguments": _raw('{"a":"\xff"}'.encode("latin-1").decode("latin-1")).replace(b"\xc3\xbf", b"\xff"),
    "bad utf-8 in an extra key": _raw(extra=',"zz":"\xff"').replace(b"\xc3\xbf", b"\xff"),
    "lone surrogate": _raw('{"a":"\\ud800"}'),
    "lone surrogate in an extra key": _raw(extra=',"zz":"\\udc00"'),
    "deep arguments": _raw('{"a":' + "[" * 1030 + "]" * 1030 + "}"),
    "arguments at depth 1000": _raw('{"a":' + "[" * 995 + "]" * 995 + "}"),
    "deep extra key": _raw(extra=',"zz":' + "[" * 1030 + "]" * 1030),
    "huge int in arguments": _raw('{"a":1' + "0" * 400 + "}"),
    "128-bit usage": _raw(usage="123456789012345678901234567890"),
    "huge usage": _raw(usage="1" + "0" * 400),
    "negative usage": _raw(usage="-1"),
    "1e400 usage": _raw(usage="1e400"),
    "1e400 in arguments": _raw('{"a":1e400}'),
    "NaN in arguments": _raw('{"a":NaN}'),
    "bool usage": _raw(usage="true"),
    "null cost": _raw(usage='1,"cost":null'),
    "escaped tag": _raw().replace(b'"type":"message"', b'"type":"mess\\u0061ge"'),
    "escaped key": _raw().replace(b'"id":"a"', b'"\\u0069d":"a"'),
    "nul in a string": _raw('{"a":"\\u0000"}'),
    "a control byte": _raw('{"a":"\x01"}'),
    "bom": b"\xef\xbb\xbf" + _raw(),
    "crlf": _raw()[:-1] + b"\r\n",
    "trailing text": _raw()[:-1] + b"x\n",
    "no type": _raw().replace(b'"type":"message",', b""),
    "the refusing tag": _raw().replace(b'"type":"message"', b'"type":"\\u0000"'),
    "user with a tool call": (b'{"type":"message","id":"a","parentId":"p","timestamp":"t","message":{"role":"user",'
                              b'"content":[{"type":"toolCall","id":"c1","name":"n","arguments":{}}]}}\n'),
}


def _report(path: Path, typed_lane: bool, monkeypatch: pytest.MonkeyPatch) -> tuple:
    with monkeypatch.context() as m:
        m.setattr(check, "_TYPED", typed_lane)
        m.setattr(check, "_TYPED_MIN_BYTES", 0)
        report = check.check_file(path, workers=1)
    return report.entries, [p.as_dict() for p in report.problems]


@pytest.mark.parametrize("what", list(RAW_LINES))
def test_raw_lines_read_as_orjson_reads_them(what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line = RAW_LINES[what]
    entry = _accepts(line)
    if entry is not None:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:  # orjson refuses (a number beyond a double): the reader's stdlib reads it
            value = None
        if value is not None:
            assert _schema_valid(value) and _bookkeeping_typed(entry) == _bookkeeping_dict(value)
    header = b'{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}\n'
    parent = b'{"type":"model_change","id":"p","parentId":null,"timestamp":"t","provider":"x","modelId":"y"}\n'
    path = tmp_path / "s.jsonl"
    path.write_bytes(header + parent + line + line)  # the second copy: a duplicate id, or not
    assert _report(path, True, monkeypatch) == _report(path, False, monkeypatch)


def test_what_only_orjson_reads_is_refused() -> None:
    for what in ("bad utf-8 in an extra key", "lone surrogate", "deep arguments", "deep extra key", "1e400 usage",
                 "null cost", "duplicate type", "duplicate role", "bom", "the refusing tag", "no type",
                 "user with a tool call"):
        assert _accepts(RAW_LINES[what]) is None or what == "user with a tool call", what
    assert _accepts(RAW_LINES["plain"]) is not None
    assert _bookkeeping_typed(_accepts(RAW_LINES["duplicate id"]))[0] == "b"  # the last key wins, as in orjson
    assert _bookkeeping_typed(_accepts(RAW_LINES["user with a tool call"]))[2] == ()  # no call outside an assistant


def test_a_raised_recursion_limit_turns_the_lane_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """msgspec's depth limit is the interpreter's recursion limit: raised past MAX_DEPTH, it would read
    lines the reader calls too deep, so validate keeps to orjson then."""
    header = b'{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}\n'
    path = tmp_path / "deep.jsonl"
    deep = _raw('{"a":' + "[" * 1100 + "]" * 1100 + "}").replace(b'"parentId":"p"', b'"parentId":null')
    path.write_bytes(header + deep)
    assert check._typed_lane(check._TYPED_MIN_BYTES) and not check._typed_lane(0)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        report = _report(path, True, monkeypatch)
    finally:
        sys.setrecursionlimit(limit)
    assert [p["code"] for p in report[1]] == ["too-deep"]


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_fixture_lines(path: Path) -> None:
    for line in path.read_bytes().splitlines(keepends=True):
        _agree_line(line, f"{path.name}: {line[:60]!r}")


def test_a_users_tool_call_answers_no_tool_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only an assistant's toolCall blocks are calls: a result under a user's is an orphan in both lanes."""
    header = b'{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}\n'
    user = RAW_LINES["user with a tool call"].replace(b'"parentId":"p"', b'"parentId":null')
    result = (b'{"type":"message","id":"r","parentId":"a","timestamp":"t","message":{"role":"toolResult",'
              b'"toolCallId":"c1","toolName":"n","content":[{"type":"text","text":"ok"}],"isError":false}}\n')
    path = tmp_path / "s.jsonl"
    path.write_bytes(header + user + result)
    assert _accepts(user) is not None and _accepts(result) is not None
    report = _report(path, True, monkeypatch)
    assert [p["code"] for p in report[1]] == ["orphan-tool-result"]
    assert report == _report(path, False, monkeypatch)
