"""The tree and pi's buildSessionContext (contract §3), checked against pi's own output."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import (
    TUTORIAL_DIR,
    V1_LARGE,
    V1_LARGE_EXPECTED,
    V3_DIR,
    V3_FILES,
    expected_for,
    read_objects,
    requires_shared,
    write_lines,
)

from harnesskit.session.loader import load_session
from harnesskit.session.tree import EntryNotFound, Tree, build_context

TS = "2026-01-01T00:00:00.000Z"
HEADER = {"type": "session", "version": 3, "id": "0190a0a0-0000-7000-8000-000000000000", "timestamp": TS,
          "cwd": "/tmp/x"}


def user(entry_id: str, parent: str | None, text: str = "q") -> dict:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": TS,
            "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}}


def assistant(entry_id: str, parent: str | None, text: str = "a", provider: str = "p", model: str = "m") -> dict:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": TS,
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "x",
                        "provider": provider, "model": model, "usage": {}, "stopReason": "stop", "timestamp": 2}}


def meta(kind: str, entry_id: str, parent: str | None, **payload: object) -> dict:
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": TS, **payload}


def tree_of(entries: list[dict]) -> Tree:
    return Tree.from_entries(entries, list(range(2, len(entries) + 2)))


# --- pi's own contexts -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", V3_FILES, ids=[p.stem for p in V3_FILES])
def test_v3_fixture_context_equals_pi(path: Path) -> None:
    expected = expected_for(path)
    session = load_session(path)
    assert session.diagnostics == []
    assert str(session.dialect) == "pi v3"
    assert session.header["id"] == expected["session_id"]
    assert len(session.entries) == expected["entries"]
    context = build_context(session.tree)
    assert context.messages == expected["messages"]
    assert [m["role"] for m in context.messages] == expected["roles"]
    assert len(context.messages) == expected["messages_in_context"]
    assert context.leaf_id == expected["leaf_id"]
    assert context.model == expected["model"]
    assert context.thinking_level == expected["thinking_level"]


@pytest.mark.parametrize("path", V3_FILES, ids=[p.stem for p in V3_FILES])
def test_v3_entries_are_the_file_lines_untouched(path: Path) -> None:
    objects = read_objects(path)
    session = load_session(path)
    assert session.header == objects[0]
    assert session.entries == objects[1:]
    assert session.tree.leaf_id == objects[-1]["id"]


@requires_shared
def test_v1_large_session_roles_and_counts() -> None:
    expected = json.loads(V1_LARGE_EXPECTED.read_text(encoding="utf-8"))
    session = load_session(V1_LARGE)
    assert str(session.dialect) == "pi v1"
    assert session.header["id"] == expected["session_id"]
    assert len(session.entries) == expected["entries"]
    context = build_context(session.tree)
    assert len(context.messages) == expected["messages_in_context"]
    assert [m["role"] for m in context.messages] == expected["roles"]
    assert context.model == expected["model"]
    assert context.thinking_level == expected["thinking_level"]


@requires_shared
def test_v1_migration_gives_a_chain_of_ids() -> None:
    session = load_session(V1_LARGE)
    ids = [e["id"] for e in session.entries]
    assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert [e["parentId"] for e in session.entries] == [None, *ids[:-1]]
    assert session.header["version"] == 3
    assert list(session.header)[-1] == "version"  # pi appends it
    # the original lines' content survives next to the new id/parentId
    raw = read_objects(V1_LARGE)[1:]
    for original, migrated in zip(raw, session.entries, strict=True):
        assert {k: v for k, v in migrated.items() if k not in ("id", "parentId")} == original


@requires_shared
def test_v1_ids_are_deterministic() -> None:
    first = [(e["id"], e["parentId"]) for e in load_session(V1_LARGE).entries]
    second = [(e["id"], e["parentId"]) for e in load_session(V1_LARGE).entries]
    assert first == second


@requires_shared
def test_v1_ids_depend_on_the_session_id(tmp_path: Path) -> None:
    objects = read_objects(V1_LARGE)[:5]
    a = write_lines(tmp_path / "a.jsonl", objects)
    objects[0] = {**objects[0], "id": "another-session"}
    b = write_lines(tmp_path / "b.jsonl", objects)
    assert [e["id"] for e in load_session(a).entries] != [e["id"] for e in load_session(b).entries]


def test_v1_compaction_index_becomes_an_id(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "v1.jsonl", [
        {"type": "session", "id": "s1", "timestamp": TS, "cwd": "/"},
        {"type": "message", "timestamp": TS, "message": {"role": "user", "content": "one", "timestamp": 1}},
        {"type": "message", "timestamp": TS, "message": {"role": "user", "content": "two", "timestamp": 2}},
        {"type": "compaction", "timestamp": TS, "summary": "S", "firstKeptEntryIndex": 2, "tokensBefore": 5},
        {"type": "message", "timestamp": TS, "message": {"role": "user", "content": "three", "timestamp": 3}},
    ])
    session = load_session(path)
    compaction = session.entries[2]
    assert "firstKeptEntryIndex" not in compaction
    assert compaction["firstKeptEntryId"] == session.entries[1]["id"]  # index 2 counts the header as 0
    context = build_context(session.tree)
    assert [m["role"] for m in context.messages] == ["compactionSummary", "user", "user"]
    assert [m.get("content") for m in context.messages[1:]] == ["two", "three"]


def test_v2_hook_message_becomes_custom(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "v2.jsonl", [
        {**HEADER, "version": 2},
        meta("message", "aaaa0001", None, message={"role": "hookMessage", "content": "x", "timestamp": 1}),
    ])
    session = load_session(path)
    assert session.entries[0]["message"]["role"] == "custom"
    assert session.entries[0]["id"] == "aaaa0001"  # v2 keeps its ids


@pytest.mark.parametrize("name", ["demo.jsonl", "demo-first-run.jsonl"])
def test_tutorial_files(name: str) -> None:
    path = TUTORIAL_DIR / name
    objects = read_objects(path)
    session = load_session(path)
    assert str(session.dialect) == "tutorial v1"
    assert session.diagnostics == []
    assert session.header["type"] == "session" and session.header["version"] == 3
    assert session.header["timestamp"] == objects[0]["createdAt"]
    assert session.header["id"] == objects[0]["id"]
    assert [e["id"] for e in session.entries] == [o["id"] for o in objects[1:]]
    assert [e["parentId"] for e in session.entries] == [o["parentId"] for o in objects[1:]]
    context = build_context(session.tree)
    assert context.leaf_id == objects[-1]["id"]
    assert [m["role"] for m in context.messages] == [o["message"]["role"] for o in objects[1:]]
    for message, original in zip(context.messages, objects[1:], strict=True):
        assert message["content"] == original["message"]["content"]
        assert isinstance(message["timestamp"], int)
        if message["role"] == "assistant":
            assert message["stopReason"] == original["message"]["stopReason"]
            assert isinstance(message["usage"], dict)
    assert context.thinking_level == "off"


def test_demo_roles_are_the_chapters() -> None:
    context = build_context(load_session(TUTORIAL_DIR / "demo.jsonl").tree)
    assert [m["role"] for m in context.messages] == [
        "user", "assistant", "user", "assistant", "toolResult", "assistant", "user", "assistant"]
    assert context.messages[4]["toolCallId"] == "call_1"


# --- leaves and branches ---------------------------------------------------------------------------


def test_branch_leaf_choice_follows_the_path() -> None:
    session = load_session(V3_DIR / "s10_branch_in_file.jsonl")
    objects = {o["id"]: o for o in read_objects(V3_DIR / "s10_branch_in_file.jsonl")[1:]}

    def chain(leaf: str) -> list[str]:
        out = []
        node: str | None = leaf
        while node is not None:
            out.append(node)
            node = objects[node]["parentId"]
        return out[::-1]

    for leaf in ("f2d2b5cc", "94d16dbd", "1444fb6e"):
        context = build_context(session.tree, leaf)
        assert [session.tree.ids[p] for p in context.path] == chain(leaf)
        assert context.leaf_id == leaf
        expected = [objects[i]["message"] for i in chain(leaf) if objects[i]["type"] == "message"]
        assert context.messages == expected


def test_leaf_none_is_empty_and_unknown_leaf_is_the_last_entry() -> None:
    session = load_session(V3_DIR / "s01_new.jsonl")
    empty = build_context(session.tree, None)
    assert (empty.messages, empty.leaf_id, empty.thinking_level) == ([], None, "off")
    assert build_context(session.tree, "nosuchid").messages == build_context(session.tree).messages


def test_empty_tree() -> None:
    context = build_context(Tree.from_entries([], []))
    assert (context.messages, context.model, context.thinking_level, context.leaf_id) == ([], None, "off", None)


def test_million_deep_chain_does_not_recurse() -> None:
    n = 1_000_000
    ids = [f"{i:08x}" for i in range(n)]
    parents: list[str | None] = [None, *ids[:-1]]
    shared = user("x", None)
    tree = Tree.from_columns(ids, parents, ["message"] * n, list(range(2, n + 2)), [shared] * n)
    assert tree.diagnostics == []
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        path = tree.path()
        context = build_context(tree, ids[n // 2])
    finally:
        sys.setrecursionlimit(limit)
    assert len(path) == n
    assert path[0] == 0 and path[-1] == n - 1
    assert len(context.messages) == n // 2 + 1
    assert context.leaf_id == ids[n // 2]


def test_cycle_is_reported_not_looped_on() -> None:
    ids = ["aaaa", "bbbb", "cccc"]
    parents = ["cccc", "aaaa", "bbbb"]  # a -> c -> b -> a
    shared = user("x", None)
    tree = Tree.from_columns(ids, parents, ["message"] * 3, [2, 3, 4], [shared] * 3)
    assert any(d.code == "cycle" for d in tree.diagnostics)
    path = tree.path()
    assert sorted(path) == [0, 1, 2]  # each entry once, then the walk stops
    assert any(d.code == "cycle" for d in tree.diagnostics)
    assert len(build_context(tree).messages) == 3


def test_self_parent_is_a_cycle() -> None:
    tree = tree_of([user("aaaa", "aaaa")])
    assert [d.code for d in tree.diagnostics] == ["cycle"]
    assert tree.path() == [0]


def test_cycle_off_the_leaf_path_is_still_reported() -> None:
    tree = tree_of([user("cyc1", "cyc2"), user("cyc2", "cyc1"), user("root", None), assistant("leaf", "root")])
    assert [d.code for d in tree.diagnostics] == ["cycle"]
    assert [tree.ids[p] for p in tree.path()] == ["root", "leaf"]


def test_dangling_parent_makes_a_root() -> None:
    tree = tree_of([user("aaaa0001", None), user("aaaa0002", "deadbeef"), assistant("aaaa0003", "aaaa0002")])
    assert [(d.code, d.line) for d in tree.diagnostics] == [("dangling-parent", 3)]
    assert [tree.ids[p] for p in tree.path()] == ["aaaa0002", "aaaa0003"]
    assert sorted(tree.children()[None]) == [0, 1]


def test_duplicate_ids_last_wins_as_in_pi() -> None:
    """pi's _buildIndex fills byId line by line, so a parentId links to the LAST entry with that
    id; harnesskit builds the same context, and reports the duplicate."""
    tree = tree_of([user("aaaa0001", None, "first"), user("aaaa0001", None, "second"), assistant("b", "aaaa0001")])
    assert [d.code for d in tree.diagnostics] == ["duplicate-id"]
    assert "first on line 2" in tree.diagnostics[0].reason
    assert tree.by_id["aaaa0001"] == 1
    assert [tree.entries[p]["message"]["content"][0].get("text") for p in tree.path()] == ["second", "a"]


# --- labels, names, resolve -------------------------------------------------------------------------


def test_labels_latest_wins_and_empty_clears() -> None:
    tree = tree_of([
        user("aaaa0001", None),
        meta("label", "l0000001", "aaaa0001", targetId="aaaa0001", label="one"),
        meta("label", "l0000002", "l0000001", targetId="aaaa0001", label="two"),
        user("aaaa0002", "l0000002"),
        meta("label", "l0000003", "aaaa0002", targetId="aaaa0002", label="gone"),
        meta("label", "l0000004", "l0000003", targetId="aaaa0002"),  # absent label: clear
        meta("label", "l0000005", "l0000004", targetId="l0000001", label="x"),
        meta("label", "l0000006", "l0000005", targetId="l0000001", label=""),  # empty label: clear
    ])
    assert tree.labels() == {"aaaa0001": "two"}


def test_fixture_labels_and_name() -> None:
    s12 = load_session(V3_DIR / "s12_meta_entries.jsonl").tree
    assert s12.labels() == {"1444fb6e": "checkpoint-1"}
    assert s12.name() == "Peer demo session"
    s14 = load_session(V3_DIR / "s14_fork_before_user.jsonl").tree
    assert s14.labels() == {"1444fb6e": "checkpoint-1"}
    assert s14.name() is None


def test_session_name_latest_wins() -> None:
    tree = tree_of([
        meta("session_info", "n0000001", None, name="first"),
        meta("session_info", "n0000002", "n0000001", name="  second  "),
    ])
    assert tree.name() == "second"
    assert tree_of([meta("session_info", "n0000001", None, name="x"),
                    meta("session_info", "n0000002", "n0000001", name="")]).name() is None


def test_resolve() -> None:
    tree = load_session(V3_DIR / "s12_meta_entries.jsonl").tree
    assert tree.resolve("1444fb6e") == "1444fb6e"
    assert tree.resolve("1444") == "1444fb6e"
    assert tree.resolve("1444fb") == "1444fb6e"
    assert tree.resolve("checkpoint-1") == "1444fb6e"
    with pytest.raises(EntryNotFound, match="at least 4"):
        tree.resolve("144")
    with pytest.raises(EntryNotFound):
        tree.resolve("zzzzzzzz")
    with pytest.raises(EntryNotFound):
        tree.resolve("")


def test_resolve_ambiguous_prefix_and_label() -> None:
    tree = tree_of([
        user("abcd0001", None), user("abcd0002", "abcd0001"), user("abce0003", "abcd0002"),
        meta("label", "l0000001", "abce0003", targetId="abcd0001", label="same"),
        meta("label", "l0000002", "l0000001", targetId="abcd0002", label="same"),
    ])
    with pytest.raises(EntryNotFound, match="ambiguous") as error:
        tree.resolve("abcd")
    assert "abcd0001" in str(error.value) and "abcd0002" in str(error.value)
    assert tree.resolve("abce") == "abce0003"
    assert tree.resolve("abcd0002") == "abcd0002"  # a full id is never ambiguous
    with pytest.raises(EntryNotFound, match="same"):
        tree.resolve("same")


# --- pi's context rules beyond the fixtures -----------------------------------------------------


def test_context_rules() -> None:
    tree = tree_of([
        meta("model_change", "m0000001", None, provider="prov1", modelId="mod1"),
        meta("thinking_level_change", "t0000001", "m0000001", thinkingLevel="high"),
        user("u0000001", "t0000001"),
        assistant("a0000001", "u0000001", provider="prov2", model="mod2"),
        meta("custom", "c0000001", "a0000001", customType="state", data={"k": 1}),
        meta("custom_message", "cm000001", "c0000001", customType="note", content="hello", display=True,
             details={"d": 1}),
        meta("branch_summary", "b0000001", "cm000001", fromId="a0000001", summary=""),
        meta("branch_summary", "b0000002", "b0000001", fromId="a0000001", summary="went elsewhere"),
        meta("label", "l0000001", "b0000002", targetId="u0000001", label="x"),
        meta("session_info", "s0000001", "l0000001", name="n"),
        meta("frobnicate", "f0000001", "s0000001", whatever=1),
        meta("thinking_level_change", "t0000002", "f0000001", thinkingLevel="low"),
    ])
    context = build_context(tree)
    assert context.model == {"provider": "prov2", "modelId": "mod2"}  # the assistant came after model_change
    assert context.thinking_level == "low"
    assert context.leaf_id == "t0000002"
    ms = 1767225600000  # 2026-01-01T00:00:00.000Z
    assert context.messages == [
        tree.entries[2]["message"],
        tree.entries[3]["message"],
        {"role": "custom", "customType": "note", "content": "hello", "display": True, "details": {"d": 1},
         "timestamp": ms},
        {"role": "branchSummary", "summary": "went elsewhere", "fromId": "a0000001", "timestamp": ms},
    ]


def test_model_change_after_assistant_wins() -> None:
    tree = tree_of([assistant("a0000001", None, provider="p1", model="m1"),
                    meta("model_change", "m0000001", "a0000001", provider="p2", modelId="m2")])
    assert build_context(tree).model == {"provider": "p2", "modelId": "m2"}


def test_only_latest_compaction_counts_and_missing_first_kept() -> None:
    entries = [
        user("u0000001", None, "1"), assistant("a0000001", "u0000001", "2"),
        meta("compaction", "c0000001", "a0000001", summary="first", firstKeptEntryId="u0000001", tokensBefore=1),
        user("u0000002", "c0000001", "3"), assistant("a0000002", "u0000002", "4"),
        meta("compaction", "c0000002", "a0000002", summary="second", firstKeptEntryId="u0000002", tokensBefore=2),
        user("u0000003", "c0000002", "5"),
    ]
    context = build_context(tree_of(entries))
    assert context.messages[0] == {"role": "compactionSummary", "summary": "second", "tokensBefore": 2,
                                   "timestamp": 1767225600000}
    texts = [m["content"][0]["text"] for m in context.messages[1:]]
    assert texts == ["3", "4", "5"]  # kept from u0000002, the first summary is superseded
    entries[5] = {**entries[5], "firstKeptEntryId": "not-on-path"}
    context = build_context(tree_of(entries))
    assert [m["role"] for m in context.messages] == ["compactionSummary", "user"]


def test_last_entry_without_id_is_still_the_leaf() -> None:
    """pi: an id-less last entry gives leafId undefined, and buildSessionContext then uses the last entry."""
    entries = [user("u0000001", None), assistant("a0000001", "u0000001"),
               {"type": "x_future", "parentId": "a0000001", "timestamp": TS}]
    tree = tree_of(entries)
    context = build_context(tree)
    assert [tree.ids[p] for p in context.path] == ["u0000001", "a0000001", None]
    assert context.messages == [entries[0]["message"], entries[1]["message"]]
