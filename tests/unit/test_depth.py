"""Values nested as deep as the reader reads (1024 levels) go out again: to a file (fork, a chat's
appends) and to a model (lone surrogates made well formed), never as a RecursionError."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import V3_DIR, read_objects, write_lines

from harnesskit.session.reader import MAX_DEPTH, room_for_depth
from harnesskit.text import well_formed


def nested(depth: int, leaf: object) -> object:
    value = leaf
    for i in range(depth - 1):
        value = [value] if i % 2 else {"k": value}
    return value


def test_well_formed_handles_the_deepest_readable_value() -> None:
    deep = nested(MAX_DEPTH - 2, "lone \ud800 surrogate")
    clean = well_formed(deep)
    with room_for_depth():
        text = json.dumps(clean, ensure_ascii=False).encode("utf-8").decode()  # raises on a surrogate left in
    assert "lone \ufffd surrogate" in text
    assert text.count("[") + text.count("{") == MAX_DEPTH - 3  # nested() wraps depth - 1 times
    assert well_formed({"a": ["x", 1, None, {"b": "\udfff"}]}) == {"a": ["x", 1, None, {"b": "\ufffd"}]}


def test_fork_copies_an_entry_nested_past_orjsons_depth(run, tmp_path: Path) -> None:
    objects = read_objects(V3_DIR / "s02_continue_tool.jsonl")
    call = next(o for o in objects[1:] if o.get("type") == "message" and o["message"]["role"] == "assistant"
                and any(b.get("type") == "toolCall" for b in o["message"]["content"]))
    block = next(b for b in call["message"]["content"] if b.get("type") == "toolCall")
    block["arguments"] = {"deep": nested(MAX_DEPTH - 10, 1)}
    with room_for_depth():
        source = write_lines(tmp_path / "deep.jsonl", objects)
    result = run("fork", source, "--session-dir", tmp_path / "out")
    assert result.exit_code == 0, result.output
    forked = next((tmp_path / "out").glob("*.jsonl"))
    with room_for_depth():
        copied = [json.loads(line) for line in forked.read_text(encoding="utf-8").splitlines()]
        assert any(e.get("id") == call["id"] and e == call for e in copied[1:])
