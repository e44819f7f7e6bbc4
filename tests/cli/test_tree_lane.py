"""`inspect --tree`'s fast lane (tree_lane: msgspec decodes a message line into a Struct of what its
tree line shows) must print exactly what the reader's path prints, stdout and stderr, on every file:
the fixtures, generated sessions, damaged copies of both, and lines made to meet each way the lane
could read a line differently from the reader (a field of another type, bytes that are not UTF-8
where msgspec skips, a number orjson refuses, an integer beyond 64 bits in a tool call's arguments,
deep nesting, duplicate and escaped keys). "The reader's path" is the lane switched off: every line
then goes through Stream.exact, the code --tree used before the lane. The lane must also be taken:
a test counts the lines it drew."""

from __future__ import annotations

import importlib.util
import itertools
import json
import random
import sys
from pathlib import Path

import pytest
from conftest import ALL_FIXTURES
from differential import KINDS, SEEDS, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from writeside_helpers import isolate

from harnesskit.cli import tree_lane, tree_stream

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate_tree_lane", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'
ops = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 1 << 20), st.integers(0, 1 << 20)), max_size=4)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate(tmp_path, monkeypatch)


def tree(run, path: Path, monkeypatch: pytest.MonkeyPatch, lane: bool, width: int, split_it: bool) -> tuple:  # noqa: ANN001
    with monkeypatch.context() as m:
        if not lane:
            m.setattr(tree_lane, "decode", tree_lane.refuse)  # every line through the reader's path
        m.setenv("HARNESSKIT_SPLIT", "1" if split_it else "0")
        m.setenv("HARNESSKIT_SPLIT_MIN_BYTES", "0")
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(1000)  # the interpreter's default (hypothesis raises it: the lane would close)
        try:
            result = run("inspect", path, "--tree", "--width", str(width))
        finally:
            sys.setrecursionlimit(limit)
    return result.exit_code, result.stdout, result.stderr


def assert_same(run, path: Path, monkeypatch: pytest.MonkeyPatch, width: int, split_it: bool = False) -> tuple:  # noqa: ANN001
    exact = tree(run, path, monkeypatch, False, width, False)
    assert tree(run, path, monkeypatch, True, width, split_it) == exact
    return exact


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_fixtures(run, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    for width in (3, 30, 100):
        assert_same(run, path, monkeypatch, width)


def test_generated_sessions_take_the_lane(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """The same lines, and most of them drawn by the lane (a lane never taken would pass the rest)."""
    drawn: list[int] = []
    summary = tree_lane.summary

    def counted(message: object, limit: int) -> str:
        drawn.append(1)
        return summary(message, limit)  # type: ignore[arg-type]

    path = generate.generate(tmp_path / "s.jsonl", 3000, seed=5)
    for width in (12, 100, 400):
        assert_same(run, path, monkeypatch, width)
    monkeypatch.setattr(tree_lane, "summary", counted)
    tree(run, path, monkeypatch, True, 100, False)
    assert len(drawn) > 2700
    drawn.clear()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:  # msgspec's depth would pass orjson's: the lane closes
        run("inspect", path, "--tree")
    finally:
        sys.setrecursionlimit(limit)
    assert drawn == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from([*SEEDS, "generated"]), damage=ops, width=st.sampled_from([5, 40, 120]),
       split_it=st.booleans())
def test_damaged_files(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: Path | str,  # noqa: ANN001
                       damage: list, width: int, split_it: bool) -> None:
    if seed == "generated":
        data = generate.generate(tmp_path / "g.jsonl", 60, seed=11).read_bytes()
    else:
        data = seed.read_bytes()  # type: ignore[union-attr]
    path = tmp_path / "case.jsonl"
    path.write_bytes(mutate(data, damage))
    assert_same(run, path, monkeypatch, width, split_it)


# ------------------------------------------------------------------ lines made for the lane's edges

#: values a field may hold: of the type the lane reads, of every other JSON type, hostile text
VALUES = [None, True, False, 0, -1, 1.5, 12345678901234567890123, "", "x", " a \t b\n c ", "\x1b]0;t\x07", "漢字→é",
          "x" * 300, [], {}, [1], {"a": None}]
BLOCKS = [{"type": "text", "text": "hi  there"}, {"type": "thinking", "thinking": "hm"},
          {"type": "image", "mimeType": "image/png", "data": "AA=="}, {"type": "image"},
          {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"command": "ls -l", "n": 12.5}},
          {"type": "toolCall", "name": "big", "arguments": {"n": 123456789012345678901234}},
          {"type": "toolCall", "name": "big", "arguments": [1e-7, -0.0, 1e22, "\u00e9"]},
          {"type": "toolCall"}, {"type": "other"}, {"text": "no type"}, "a string block", None]
ROLES = ["user", "assistant", "toolResult", "bashExecution", "branchSummary", "compactionSummary", "custom",
         "tool\x07Result", 7, None]
MESSAGE_FIELDS = ["role", "content", "toolName", "isError", "stopReason", "errorMessage", "command", "exitCode",
                  "summary"]
ENTRY_FIELDS = ["id", "parentId", "timestamp", "message", "type"]
#: raw JSON spliced into a line where the lane skips (msgspec does not check it as orjson does)
SKIPPED = [b'"\xff"', b'"\xc0\xaf"', b'"\xed\xa0\x80"', b'"\\ud800"', b"1e400", b"-1e400", b"1" * 400, b"1e-400",
           b"[" * 990 + b"]" * 990, b"[" * 1030 + b"]" * 1030, b'"\x7f\xc2\x9b"', b"NaN", b"01", b'"a\tb"']


def hostile_entries(rng: random.Random, n: int) -> list[bytes]:
    lines, previous = [], None
    for i in range(n):
        message: dict = {"role": rng.choice(ROLES[:3]), "content": rng.sample(BLOCKS, rng.randint(1, 3))}
        entry: dict = {"type": "message", "id": f"{i:08x}", "parentId": previous,
                       "timestamp": f"2026-01-01T00:00:{i % 60:02d}.000Z", "message": message}
        for _ in range(rng.randint(0, 2)):  # a field of another type, or missing
            where, fields = rng.choice([(entry, ENTRY_FIELDS), (message, MESSAGE_FIELDS)])
            field = rng.choice(fields)
            if rng.random() < 0.2:
                where.pop(field, None)
            else:
                where[field] = rng.choice(VALUES + ROLES + BLOCKS)
        if rng.random() < 0.3:
            message["stopReason"] = rng.choice(["error", "aborted", "stop"])
            message["errorMessage"] = rng.choice(VALUES)
        if rng.random() < 0.2:
            message["isError"] = rng.choice([True, False, 1, "yes", None])
        line = json.dumps(entry, ensure_ascii=rng.random() < 0.5).encode()
        if rng.random() < 0.25:  # something the lane skips, at the entry's or the message's level
            at = line.rfind(b"}") if rng.random() < 0.5 else len(line) - 1
            line = line[:at] + b',"zz":' + rng.choice(SKIPPED) + line[at:]
        if rng.random() < 0.1:  # a duplicate key (the last wins) or an escaped one
            line = line[:-1] + rng.choice([b',"type":"label"', b',"\\u0074ype":"custom"', b',"id":"dup"',
                                           b',"message":{"role":"user","content":"later"}']) + b"}"
        lines.append(line + rng.choice([b"\n", b"\n", b"\r\n", b" \n"]))
        previous = entry.get("id") if rng.random() < 0.9 else rng.choice([None, "missing", f"{i // 2:08x}"])
    return lines


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 1 << 30), width=st.sampled_from([4, 30, 100, 300]))
def test_lines_at_the_edges(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, width: int) -> None:  # noqa: ANN001
    rng = random.Random(seed)
    path = tmp_path / "edges.jsonl"
    path.write_bytes(HEADER + b"".join(hostile_entries(rng, 40)))
    code, out, err = assert_same(run, path, monkeypatch, width, split_it=rng.random() < 0.3)
    assert code == 0 and "\x1b" not in out


def test_each_skipped_value_and_the_big_integer(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """Every skipped value beside a tool call holding an integer beyond 64 bits (orjson reads it as a float,
    the stdlib as an int: which one the reader used depends on the rest of the line)."""
    lines = [HEADER]
    for i, (skipped, spaced) in enumerate(itertools.product(SKIPPED, (False, True))):
        entry = {"type": "message", "id": f"{i:08x}", "parentId": f"{i - 1:08x}" if i else None,
                 "timestamp": "2026-01-01T00:00:00Z",
                 "message": {"role": "assistant", "content": [
                     {"type": "toolCall", "name": "n", "arguments": {"n": 123456789012345678901234, "f": 0.1}}]}}
        line = json.dumps(entry, indent=1 if spaced else None).replace("\n", "").encode()
        lines.append(line[:-1] + b',"zz":' + skipped + b"}\n")
    path = tmp_path / "skipped.jsonl"
    path.write_bytes(b"".join(lines))
    code, out, err = assert_same(run, path, monkeypatch, 200)
    assert "not UTF-8" in err and "deeper than 1024" in err  # the reader's reports, in the lane too
    assert "1.2345678901234568e+23" in out or "123456789012345678901234" in out


def test_long_lines_across_blocks(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """Lines longer than Stream.blocks' block, lines that end right at a block's end, and no newline at
    the end of the file: the same lines, numbered and placed the same (the warnings name them)."""
    text = "word " * 70_000
    entries = [{"type": "message", "id": f"{i:08x}", "parentId": f"{i - 1:08x}" if i else None,
                "message": {"role": "user", "content": text[: (i * 97_001) % 350_000]}} for i in range(12)]
    body = b"".join(json.dumps(e).encode() + b"\n" for e in entries)
    path = tmp_path / "long.jsonl"
    path.write_bytes(HEADER + body + b"{not json\n" + body[:-1])
    monkeypatch.setattr(tree_stream, "BATCH", 5)
    for width in (20, 200):
        code, out, err = assert_same(run, path, monkeypatch, width, split_it=True)
        assert "not JSON" in err and "no newline" in err


# ------------------------------------------------------------------ the body shortcut of tree_stream.collect

#: characters a summary may hold around the shortcut's tests: the marks, one-column and wide ones,
#: combining and zero-width ones, controls (C0, DEL, C1), separators, an ellipsis, a lone surrogate
SUMMARY_CHARS = st.sampled_from(["a", " ", "→", "✗", "…", "é", "ü", "漢", "\u0301", "\u200b", "\t", "\n", "\x1b",
                                 "\x7f", "\x9b", "\u2028", "\u00a0", "\u3000", "\ud800", "→→", "\U0001f600", "←", "│"])
summary_text = st.lists(st.one_of(SUMMARY_CHARS, st.text(min_size=1, max_size=40)), max_size=30).map("".join)


def shortcut_columns(run, path: Path, width: int, monkeypatch: pytest.MonkeyPatch, shortcut: bool) -> tuple:  # noqa: ANN001
    """(stdout, the bodies, mark places and `slow` flags collect made) with the shortcut on or off."""
    made: list[tree_stream.Columns] = []
    collect = tree_stream.collect

    def kept(*args: object, **kwargs: object) -> tree_stream.Columns:
        made.append(collect(*args, **kwargs))  # type: ignore[arg-type]
        return made[-1]

    with monkeypatch.context() as m:
        m.setattr(tree_stream, "SHORTCUT", shortcut)
        m.setattr(tree_stream, "collect", kept)
        m.setenv("HARNESSKIT_SPLIT", "0")
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(1000)  # (as `tree` does: the lane open)
        try:
            result = run("inspect", path, "--tree", "--width", str(width))
        finally:
            sys.setrecursionlimit(limit)
    assert result.exit_code == 0, result.output
    (columns,) = made
    return result.stdout, columns.bodies, list(columns.marks_at), bytes(columns.slow)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.tuples(summary_text, st.sampled_from(["user", "assistant", "toolResult"]),
                                st.sampled_from(["", "a1", "id\x1bx", "漢字", "é", "a\u2028"]), st.booleans()),
                      min_size=1, max_size=12),
       width=st.sampled_from([4, 12, 30, 80, 200]))
def test_body_shortcut_against_the_old_way(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
                                           texts: list, width: int) -> None:
    """collect's shortcut for a printable body (one f-string, the arrow count, the remembered non-ASCII
    bytes) makes the bodies, mark places and slow flags _add_body makes, and the same lines."""
    lines, previous = [], None
    for i, (text, role, id_part, as_text_block) in enumerate(texts):
        entry_id = f"{i:04x}{id_part}"
        content: object = [{"type": "text", "text": text}] if as_text_block else text
        message = {"role": role, "content": content, "toolName": "t→", "isError": i % 2 == 0}
        lines.append(json.dumps({"type": "message", "id": entry_id, "parentId": previous, "message": message},
                                ensure_ascii=i % 3 == 0 or "\ud800" in text).encode() + b"\n")
        previous = entry_id if i % 4 else None
    path = tmp_path / "summaries.jsonl"
    path.write_bytes(HEADER + b"".join(lines))
    tree_stream._beyond_flags.clear()  # (remembered from an earlier example: both ways are tried)
    fast = shortcut_columns(run, path, width, monkeypatch, True)
    assert fast == shortcut_columns(run, path, width, monkeypatch, False)
    assert fast == shortcut_columns(run, path, width, monkeypatch, True)  # the flags remembered


def test_body_shortcut_is_taken(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """The shortcut makes most bodies of a generated session (a shortcut never taken would pass the rest)."""
    made: list[tuple] = []
    add_body = tree_stream._add_body
    monkeypatch.setattr(tree_stream, "_add_body", lambda *args: made.append(args) or add_body(*args))
    path = generate.generate(tmp_path / "s.jsonl", 500, seed=3)
    _, bodies, _, _ = shortcut_columns(run, path, 100, monkeypatch, True)
    assert len(made) < len(bodies) // 10
