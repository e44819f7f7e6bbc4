"""Property tests: random trees round-trip through the writer and the reader; random damage to a
valid file costs only the damaged lines and never raises anything but SessionError."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnesskit.session.check import check_file
from harnesskit.session.loader import SessionError, load_session
from harnesskit.session.tree import build_context
from harnesskit.session.writer import encode

# HARNESSKIT_EXAMPLES=2000 for a longer hunt; the default keeps the file at a few seconds
SETTINGS = settings(max_examples=int(os.environ.get("HARNESSKIT_EXAMPLES", "60")), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
HEADER = {"type": "session", "version": 3, "id": "0190a0a0-0000-7000-8000-000000000000",
          "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp/x"}

texts = st.text(max_size=20)
timestamps = st.integers(min_value=0, max_value=4_000_000_000_000)
json_scalars = st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | texts | st.floats(
    allow_nan=False, allow_infinity=False)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(texts, inner, max_size=3), max_leaves=6)


def iso(ms: int) -> str:
    from harnesskit.session.format import iso_from_ms

    return iso_from_ms(ms)


@st.composite
def payloads(draw: st.DrawFn, earlier: list[str]) -> dict:
    """The type-specific part of an entry; references point at earlier ids or at nothing."""
    ref = st.sampled_from(earlier) if earlier else st.just("00000000")
    kind = draw(st.sampled_from(["user", "assistant", "toolResult", "model_change", "thinking_level_change",
                                 "compaction", "branch_summary", "custom", "custom_message", "label",
                                 "session_info", "x_future"]))
    ts = draw(timestamps)
    if kind == "user":
        return {"type": "message", "message": {"role": "user", "content": draw(texts), "timestamp": ts}}
    if kind == "assistant":
        content = [{"type": "text", "text": draw(texts)}]
        if draw(st.booleans()):
            content.append({"type": "toolCall", "id": draw(texts), "name": "calc",
                            "arguments": draw(st.dictionaries(texts, json_scalars, max_size=2))})
        return {"type": "message", "message": {
            "role": "assistant", "content": content, "api": "x", "provider": draw(st.sampled_from(["p1", "p2"])),
            "model": draw(st.sampled_from(["m1", "m2"])), "usage": {"input": draw(st.integers(0, 10**6))},
            "stopReason": "stop", "timestamp": ts}}
    if kind == "toolResult":
        return {"type": "message", "message": {"role": "toolResult", "toolCallId": draw(texts), "toolName": "calc",
                                               "content": [{"type": "text", "text": draw(texts)}],
                                               "isError": draw(st.booleans()), "timestamp": ts}}
    if kind == "model_change":
        return {"type": kind, "provider": draw(texts), "modelId": draw(texts)}
    if kind == "thinking_level_change":
        return {"type": kind, "thinkingLevel": draw(st.sampled_from(["off", "low", "high"]))}
    if kind == "compaction":
        return {"type": kind, "summary": draw(texts), "firstKeptEntryId": draw(ref | st.just("nowhere!")),
                "tokensBefore": draw(st.integers(0, 10**6))}
    if kind == "branch_summary":
        return {"type": kind, "fromId": draw(ref | st.just("root")), "summary": draw(st.just("") | texts)}
    if kind == "custom":
        return {"type": kind, "customType": draw(texts), "data": draw(json_values)}
    if kind == "custom_message":
        out = {"type": kind, "customType": draw(texts), "content": draw(texts), "display": draw(st.booleans())}
        if draw(st.booleans()):
            out["details"] = draw(json_values)
        return out
    if kind == "label":
        out = {"type": kind, "targetId": draw(ref)}
        if draw(st.booleans()):
            out["label"] = draw(texts)
        return out
    if kind == "session_info":
        return {"type": kind, "name": draw(texts)}
    return {"type": kind, "anything": draw(json_values)}


@st.composite
def trees(draw: st.DrawFn, max_size: int = 25) -> list[dict]:
    n = draw(st.integers(min_value=0, max_value=max_size))
    ids = draw(st.lists(st.text("0123456789abcdef", min_size=8, max_size=8), min_size=n, max_size=n, unique=True))
    entries: list[dict] = []
    for i, entry_id in enumerate(ids):
        parent = None
        if i and draw(st.integers(0, 9)) > 0:
            parent = ids[draw(st.integers(0, i - 1))]
        payload = draw(payloads(ids[:i]))
        kind = payload.pop("type")
        entries.append({"type": kind, "id": entry_id, "parentId": parent, "timestamp": iso(draw(timestamps)),
                        **payload})
    return entries


def write(path: Path, entries: list[dict]) -> bytes:
    data = encode(HEADER) + b"".join(encode(e) for e in entries)
    path.write_bytes(data)
    return data


def reference_context(entries: list[dict], leaf: str) -> tuple[list[dict], dict | None, str]:
    """pi's buildSessionContext (pi-reference §6), written here independently of harnesskit."""
    from harnesskit.session.migrate import iso_to_ms

    by_id = {e["id"]: e for e in entries}
    path: list[dict] = []
    node = by_id.get(leaf)
    while node is not None:
        path.append(node)
        node = by_id.get(node["parentId"]) if node["parentId"] is not None else None
    path.reverse()
    thinking, model, compaction = "off", None, None
    for e in path:
        if e["type"] == "thinking_level_change":
            thinking = e["thinkingLevel"]
        elif e["type"] == "model_change":
            model = {"provider": e["provider"], "modelId": e["modelId"]}
        elif e["type"] == "message" and e["message"]["role"] == "assistant":
            model = {"provider": e["message"]["provider"], "modelId": e["message"]["model"]}
        elif e["type"] == "compaction":
            compaction = e
    out: list[dict] = []

    def append(e: dict) -> None:
        if e["type"] == "message":
            out.append(e["message"])
        elif e["type"] == "custom_message":
            m = {"role": "custom", "customType": e["customType"], "content": e["content"], "display": e["display"]}
            if "details" in e:
                m["details"] = e["details"]
            m["timestamp"] = iso_to_ms(e["timestamp"])
            out.append(m)
        elif e["type"] == "branch_summary" and e["summary"]:
            out.append({"role": "branchSummary", "summary": e["summary"], "fromId": e["fromId"],
                        "timestamp": iso_to_ms(e["timestamp"])})

    if compaction is None:
        for e in path:
            append(e)
    else:
        out.append({"role": "compactionSummary", "summary": compaction["summary"],
                    "tokensBefore": compaction["tokensBefore"], "timestamp": iso_to_ms(compaction["timestamp"])})
        at = path.index(compaction)
        kept = False
        for e in path[:at]:
            kept = kept or e["id"] == compaction["firstKeptEntryId"]
            if kept:
                append(e)
        for e in path[at + 1:]:
            append(e)
    return out, model, thinking


@SETTINGS
@given(entries=trees(), data=st.data())
def test_random_trees_round_trip(tmp_path: Path, entries: list[dict], data: st.DataObject) -> None:
    path = tmp_path / "s.jsonl"
    write(path, entries)
    session = load_session(path)
    assert session.diagnostics == []
    assert session.header == HEADER
    assert session.entries == entries
    assert session.lines == list(range(2, len(entries) + 2))
    if not entries:
        return
    leaf_pos = data.draw(st.integers(0, len(entries) - 1), label="leaf")
    leaf = entries[leaf_pos]["id"]
    chain: list[str] = []
    node: str | None = leaf
    by_id = {e["id"]: e for e in entries}
    while node is not None:
        chain.append(node)
        node = by_id[node]["parentId"]
    tree = session.tree
    assert [tree.ids[p] for p in tree.path(leaf_pos)] == chain[::-1]
    context = build_context(tree, leaf)
    messages, model, thinking = reference_context(entries, leaf)
    assert context.leaf_id == leaf
    assert context.messages == messages
    assert context.model == model
    assert context.thinking_level == thinking
    assert [tree.ids[p] for p in context.path] == chain[::-1]
    # the file's leaf is the last line
    assert build_context(tree).leaf_id == entries[-1]["id"]
    # a clean file is clean for validate's structure checks too
    report = check_file(path)
    assert not any(p.code in ("cycle", "duplicate-id", "dangling-parent", "forward-parent", "invalid-json")
                   for p in report.problems), report.problems


@st.composite
def damage(draw: st.DrawFn, segment: bytes) -> bytes:
    """A few flips, insertions (newlines and CRs likely) and deletions inside one line."""
    data = bytearray(segment)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete"]))
        if op == "flip" and data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= draw(st.integers(1, 255))
        elif op == "insert":
            i = draw(st.integers(0, len(data)))
            data[i:i] = draw(st.sampled_from([b"\n", b"\r", b"\x00", b"\xff", b"{", b'"', b"\xef\xbb\xbf"])
                             | st.binary(min_size=1, max_size=3))
        elif data:
            i = draw(st.integers(0, len(data) - 1))
            del data[i]
    return bytes(data)


@SETTINGS
@given(entries=trees(max_size=12), data=st.data())
def test_damage_costs_only_the_damaged_lines(tmp_path: Path, entries: list[dict], data: st.DataObject) -> None:
    segments = [encode(HEADER), *(encode(e) for e in entries)]
    touched = data.draw(st.sets(st.integers(0, len(segments) - 1), min_size=1, max_size=3), label="touched")
    new = [data.draw(damage(s), label=f"line {i}") if i in touched else s for i, s in enumerate(segments)]
    if all(a == b for a, b in zip(new, segments, strict=True)):
        return  # a flip and its undo; nothing to test
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(new))

    report = check_file(path)  # must never raise
    assert report.file == str(path)
    try:
        session = load_session(path)
    except SessionError:
        return  # e.g. the header was the damaged line: refused cleanly, which is allowed
    # every untouched, still newline-delimited entry line is read as an entry, at its new line number
    before = 0
    for i, segment in enumerate(new):
        line_number = before + 1
        before += segment.count(b"\n")
        if i == 0 or i in touched or not new[i - 1].endswith(b"\n"):
            continue
        assert line_number in session.lines, (i, line_number, session.lines, session.diagnostics)
        assert not any(d.line == line_number and d.offset >= 0 for d in session.diagnostics)
        if session.dialect.name == "pi" and session.dialect.version >= 2:
            assert session.entries[session.lines.index(line_number)] == entries[i - 1]
        assert not any(p.line == line_number and p.code in ("invalid-json", "invalid-utf8", "not-object", "no-type",
                                                          "truncated") for p in report.problems)


@SETTINGS
@given(blob=st.binary(max_size=400))
def test_arbitrary_bytes_never_crash(tmp_path: Path, blob: bytes) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(blob)
    check_file(path)
    try:
        load_session(path)
    except SessionError:
        pass
    path.write_bytes(encode(HEADER) + blob)
    check_file(path)
    session = load_session(path)  # a good header: never refused, whatever follows
    assert session.header == HEADER
