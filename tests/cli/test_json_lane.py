"""`inspect --json`'s msgspec lane (cli/typed_rows.py) prints exactly what the orjson path prints,
stdout and stderr, byte for byte: on the fixtures, generated sessions, the raw lines orjson and msgspec
read differently (tests/unit/test_typed.py), entries made to reach every branch of the summary,
entries with random odd values, and damaged fixtures; in one process and in two taking turns by
blocks. inspect._FAST_MIN_BYTES=0 turns the lane on for these small files, a huge one turns it off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ALL_FIXTURES, write_lines
from differential import SEEDS, damages, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_rows_split import HEADER, generate
from test_shapes import replaced
from test_typed import RAW_LINES
from writeside_helpers import isolate

from harnesskit.cli import inspect, typed_rows
from harnesskit.session import interleave


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One item for each line the lane took (in this process)."""
    seen: list[int] = []
    make = typed_rows.json_facts

    def counting(limit: int):  # noqa: ANN202
        facts = make(limit)

        def counted(content: bytes) -> tuple | None:
            row = facts(content)
            if row is not None:
                seen.append(1)
            return row

        return counted

    monkeypatch.setattr(typed_rows, "json_facts", counting)
    return seen


def rows(run, path: Path, monkeypatch: pytest.MonkeyPatch, lane: bool, split_it: bool = False,  # noqa: ANN001
         block: int = 1 << 20) -> tuple:
    with monkeypatch.context() as m:
        m.setattr(inspect, "_FAST_MIN_BYTES", 0 if lane else 1 << 62)
        m.setenv("HARNESSKIT_SPLIT", "1" if split_it else "0")
        m.setenv("HARNESSKIT_SPLIT_MIN_BYTES", "0")
        m.setattr(interleave, "BLOCK", block)
        result = run("inspect", path, "--json")
    return result.exit_code, result.stdout_bytes, result.stderr


def assert_same(run, path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:  # noqa: ANN001
    exact = rows(run, path, monkeypatch, False)
    assert rows(run, path, monkeypatch, True) == exact
    return exact[1]


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_fixtures(run, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    assert_same(run, path, monkeypatch)


def test_generated_sessions_take_the_lane(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                          taken: list[int]) -> None:
    path = generate.generate(tmp_path / "s.jsonl", 3000, seed=11)
    out = assert_same(run, path, monkeypatch)
    assert len(out.splitlines()) == 3001
    assert len(taken) > 0.9 * 3000  # the messages: nearly every line


def test_two_processes_with_the_lane(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    path = generate.generate(tmp_path / "s.jsonl", 2000, seed=12)
    exact = rows(run, path, monkeypatch, False)
    for block in (1, 1 << 12, 1 << 16):
        assert rows(run, path, monkeypatch, True, True, block) == exact, block


@pytest.mark.parametrize("what", list(RAW_LINES))
def test_raw_lines(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str) -> None:  # noqa: ANN001
    header = b'{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}\n'
    parent = b'{"type":"model_change","id":"p","parentId":null,"timestamp":"t","provider":"x","modelId":"y"}\n'
    path = tmp_path / "s.jsonl"
    line = RAW_LINES[what]
    path.write_bytes(header + parent + line + line)  # the second copy: a duplicate id, and the leaf's row
    assert_same(run, path, monkeypatch)


def _assistant(content: list, stop: str = "toolUse", **extra: object) -> dict:
    return {"role": "assistant", "content": content, "api": "a", "provider": "p", "model": "m",
            "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3},
            "stopReason": stop, "timestamp": 1, **extra}


def _call(arguments: object, name: str = "bash") -> dict:
    return {"type": "toolCall", "id": "c1", "name": name, "arguments": arguments}


LONG = "word " * 80
WIDE = "漢字かな" * 90  # two columns each: the cut is measured
MESSAGES = [
    {"role": "user", "content": "a string, not blocks"},
    {"role": "user", "content": LONG + "\n\n\t end"},
    {"role": "user", "content": []},
    {"role": "user", "content": [{"type": "text", "text": WIDE}]},
    {"role": "user", "content": [{"type": "text", "text": "x" * 246 + "  \n  " + "y" * 300}]},
    {"role": "user", "content": [{"type": "text", "text": "bell\x07 esc\x1b[2J del\x7f c1\x9b crlf\r\n ok"}]},
    {"role": "user", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
    {"role": "user", "content": [{"type": "image", "data": "AAAA", "mimeType": ""},
                                 {"type": "text", "text": "after an image"}]},
    _assistant([{"type": "text", "text": "done"}], "stop"),
    _assistant([{"type": "thinking", "thinking": "hm"}, _call({"command": "ls -la", "n": 1.5e300})]),
    _assistant([_call({"a": 2**63}), _call({"b": 2**64 - 1}), _call({"c": -(2**63)})]),
    _assistant([{"type": "thinking", "thinking": "x"}, _call({"big": 2**64})]),  # orjson: a float
    _assistant([{"type": "thinking", "thinking": "x"}, _call({"neg": -(2**63) - 1})]),
    _assistant([{"type": "text", "text": "t"}, _call({"f": [0.1, -0.0, 5e-324, 1e22, 123456789.123456789]})]),
    _assistant([_call({"s": "é→\x7f\u0085" * 100})]),
    _assistant([{"type": "text", "text": LONG}] * 5 + [_call({})]),
    _assistant([{"type": "text", "text": "partial"}], "error", errorMessage="boom\nover lines"),
    _assistant([{"type": "text", "text": "partial"}], "error", errorMessage=""),
    _assistant([], "error"),
    _assistant([{"type": "text", "text": "cut"}], "aborted"),
    _assistant([{"type": "text", "text": "kept"}], "length", errorMessage="not shown"),
    {"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "content": [{"type": "text", "text": LONG}],
     "isError": True, "timestamp": 1},
    {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "ok"}],
     "details": {"x": [1, 2**70]}, "isError": False, "timestamp": 1},
    {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [], "timestamp": 1},
]


def test_every_branch_of_the_summary(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                     taken: list[int]) -> None:
    entries, parent = [], None
    for i, message in enumerate(MESSAGES):
        entries.append({"type": "message", "id": f"{i:08x}", "parentId": parent, "timestamp": "t", "message": message})
        parent = entries[-1]["id"]
    path = write_lines(tmp_path / "s.jsonl", [HEADER, *entries])
    out = assert_same(run, path, monkeypatch)
    assert len(out.splitlines()) == len(MESSAGES) + 1
    assert len(MESSAGES) - 3 <= len(taken) < len(MESSAGES)  # the integers beyond 64 bits go the exact way
    assert b"\\u007f" in out and b"\x7f" not in out
    for line in MESSAGES[5:6]:  # each one the leaf, too (a row of its own making)
        path = write_lines(tmp_path / "leaf.jsonl", [HEADER, {"type": "message", "id": "a", "parentId": None,
                                                             "timestamp": "t", "message": line}])
        assert json.loads(assert_same(run, path, monkeypatch).splitlines()[-1])["leaf"] is True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_replacements(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                             data: st.DataObject) -> None:
    entries = [replaced(data) for _ in range(3)]
    lines = []
    for entry in entries:
        try:
            lines.append(json.dumps(entry, ensure_ascii=data.draw(st.booleans())).encode() + b"\n")
        except (TypeError, ValueError):
            return
    path = tmp_path / "case.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b"\n" + b"".join(lines))
    assert_same(run, path, monkeypatch)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(SEEDS), damage=damages())
def test_damaged_fixtures(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: Path,  # noqa: ANN001
                          damage: list) -> None:
    path = tmp_path / "case.jsonl"
    path.write_bytes(mutate(seed.read_bytes(), damage))
    assert_same(run, path, monkeypatch)


_SPACES = " \n\t\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u3000"
_TEXT = st.text(st.sampled_from([*_SPACES, "a", "b", "→", "é", "漢", "\x07", "\u0301", "\ud800"]), max_size=40)


@settings(max_examples=2000, deadline=None)
@given(text=_TEXT | st.text(st.sampled_from(" \na→"), max_size=12) | st.text(max_size=40), limit=st.integers(0, 30))
def test_the_squeeze_and_the_cut_measure_nothing_they_would_change(text: str, limit: int) -> None:
    """text.squeezed is the split and join it skips; table.fit's unmeasured half-width is what measuring says."""
    from harnesskit.cli import table
    from harnesskit.text import squeezed

    assert squeezed(text) == " ".join(text.split())
    assert table.fit(text, limit) == table.fit_measured(text, limit)[0]


def test_ids_and_roles_the_lane_writes_into_its_row(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                                    taken: list[int]) -> None:
    """The lane formats its row itself (inspect._LANE_ROW) where the exact path has orjson write a dict: ids
    that need escapes, a null parentId, each role, DEL and C1 in the summary and the leaf's own row."""
    odd_ids = ["a", 'q"uote', "back\\slash", "é漢", "line\u2028sep", "tab\there", "\x7fdel", "c1\u0085"]
    entries, parent = [], None
    for i, entry_id in enumerate(odd_ids):
        message = MESSAGES[(0, 8, 21)[i % 3]]  # a user's, an assistant's and a tool result
        entries.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t", "message": message})
        parent = entry_id
    path = write_lines(tmp_path / "s.jsonl", [HEADER, *entries])
    out = assert_same(run, path, monkeypatch)
    assert len(taken) == len(odd_ids)
    assert [json.loads(row)["id"] for row in out.splitlines()[1:]] == odd_ids


def _result(text: str, name: str = "bash", error: bool = False) -> dict:
    return {"role": "toolResult", "toolCallId": "c1", "toolName": name, "content": [{"type": "text", "text": text}],
            "isError": error, "timestamp": 1}


#: summaries the lane cuts by length once its marks (→ ✗) are measured as one column, next to ones it
#: must measure: wide, combining and zero-width characters before, at and after the cut, in the tool's
#: name, the result's text and the call's arguments
CUTS = [
    _result(LONG), _result(LONG, error=True), _result("x" * 236), _result("x" * 237), _result("x" * 238),
    _result("y" * 500, name="read"), _result("漢" + LONG), _result(LONG + "漢" * 200), _result("a → b " * 60),
    _result("a ✗ b " * 60, error=True), _result("x" * 230 + "漢字かな" * 5), _result("e\u0301" * 200),
    _result(LONG, name="漢字"), _result(LONG, name="t\u200b"), _result("\u200b" * 300), _result("é" * 300),
    _assistant([_call({"command": "ls " * 100})]), _assistant([_call({"c": "x" * 300}), _call({"d": 1})]),
    _assistant([_call({"s": "漢" * 300})]), _assistant([_call({"s": "x" * 200 + "漢" * 60})]),
    _assistant([{"type": "text", "text": "→ " * 200}]), _assistant([{"type": "thinking", "thinking": "x"},
                                                                    _call({"s": "→✗" * 150})]),
    {"role": "user", "content": "→" * 300}, {"role": "user", "content": "✗ " * 200},
]


def test_the_lane_cuts_by_length_only_what_takes_one_column_a_character(run, tmp_path: Path,  # noqa: ANN001
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         taken: list[int]) -> None:
    from harnesskit.cli import table

    entries, parent = [], None
    for i, message in enumerate(CUTS * 2):  # twice: the second time the marks are measured already
        entries.append({"type": "message", "id": f"{i:08x}", "parentId": parent, "timestamp": "t", "message": message})
        parent = entries[-1]["id"]
    path = write_lines(tmp_path / "s.jsonl", [HEADER, *entries])
    out = assert_same(run, path, monkeypatch)
    assert len(taken) == 2 * len(CUTS)
    assert {"→", "✗"} <= table._NARROW
    summaries = [json.loads(row)["summary"] for row in out.splitlines()[1:]]
    assert summaries[:len(CUTS)] == summaries[len(CUTS):]
    assert sum(s.endswith("…") for s in summaries) > len(CUTS)
