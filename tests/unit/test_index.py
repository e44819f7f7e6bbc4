"""index.load_for_continue / load_index give what load_session + build_context give.

On every fixture, on generated sessions with branches, labels and compactions, and on damaged
files: the same Context, diagnostics, header, labels and name, while decoding only a fraction of
the entries.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from conftest import ALL_FIXTURES, V3_DIR

from harnesskit.session import index
from harnesskit.session import split as split_module
from harnesskit.session.index import LazyDecodeError, LazySession, load_for_continue, load_index
from harnesskit.session.loader import SessionError, load_session
from harnesskit.session.tree import build_context

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate_index", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


def view(session, leaf=...) -> dict:  # noqa: ANN001
    """Everything continue reads from a session, in comparable form."""
    tree = session.tree
    context = build_context(tree, leaf)
    return {
        "context": context,
        "header": session.header,
        "source_header": session.source_header,
        "header_line": session.header_line,
        "dialect": str(session.dialect),
        "diagnostics": session.diagnostics,
        "tree_diagnostics": list(tree.diagnostics),
        "leaf": tree.leaf_id,
        "labels": tree.labels(),
        "name": tree.name(),
        "ids": list(tree.ids),
        "parents": list(tree.parents),
        "types": list(tree.types),
        "lines": list(tree.lines),
        "by_id": dict(tree.by_id),
        "size": session.size,
        "ends_with_newline": session.ends_with_newline,
    }


@pytest.fixture(params=["one-process", "two-processes"])
def split(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Index in one process, or in two even for a small file (the worker takes the second half)."""
    if request.param == "two-processes":
        monkeypatch.setattr(split_module, "SPLIT_MIN_BYTES", 0)
    return request.param


def assert_same(path: Path, leaves: tuple = (...,)) -> LazySession | None:
    full = load_session(path)
    lazy = load_for_continue(path)
    for leaf in leaves:
        assert view(lazy, leaf) == view(full, leaf), (path, leaf)
    if isinstance(lazy, LazySession):  # no damage found: load_index alone gives the same on first use
        assert view(load_index(path)) == view(load_session(path))
        return lazy
    return None  # damage the index cannot judge: load_index alone may differ (see index's doc)


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_every_fixture(path: Path, split: str) -> None:
    lazy = assert_same(path)
    if "v3" in str(path):
        assert lazy is not None, "v3 files are indexed lazily"
    else:
        assert lazy is None, "legacy dialects are loaded in full"


@pytest.mark.parametrize("path", sorted(V3_DIR.glob("*.jsonl")), ids=lambda p: p.name)
def test_every_entry_as_leaf(path: Path) -> None:
    full = load_session(path)
    assert_same(path, leaves=(..., None, *full.tree.by_id))


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("gen")
    return [generate.generate(out / f"s{seed}.jsonl", 4000, seed=seed) for seed in (1, 2, 3)]


def test_generated_sessions(generated: list[Path], split: str) -> None:
    for path in generated:
        full = load_session(path)
        assert full.tree.positions_of("compaction") and full.tree.positions_of("label")
        assert len(full.tree.children()) > 2, "the generator makes branches"
        lazy = assert_same(path)
        assert lazy is not None
        decoded = len(lazy.entries._cache)
        assert decoded < len(lazy.tree) / 3, "only the context, labels and names are decoded"
        context = build_context(lazy.tree)
        assert any(m["role"] == "compactionSummary" for m in context.messages)


def test_generated_other_leaves(generated: list[Path]) -> None:
    full = load_session(generated[0])
    ids = list(full.tree.by_id)
    assert_same(generated[0], leaves=tuple(ids[:: max(1, len(ids) // 40)]))


# ------------------------------------------------------------------ damaged files


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def write(tmp_path: Path, name: str, lines: list[bytes]) -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    return path


def test_torn_line_in_the_middle(generated: list[Path], tmp_path: Path, split: str) -> None:
    lines = lines_of(generated[0])
    for at in (5, len(lines) // 2, len(lines) - 3):
        damaged = list(lines)
        damaged[at] = damaged[at][: len(damaged[at]) // 2] + b"\n"  # a torn write, repaired with a newline
        path = write(tmp_path, f"torn-{at}.jsonl", damaged)
        assert_same(path)
        assert any(d.code == "invalid-json" for d in load_for_continue(path).diagnostics)


def test_torn_last_line(generated: list[Path], tmp_path: Path, split: str) -> None:
    lines = lines_of(generated[0])
    for cut in (1, 2, 40, len(lines[-1]) // 2):
        path = write(tmp_path, f"tail-{cut}.jsonl", [*lines[:-1], lines[-1][:-cut]])
        assert_same(path)
    path = write(tmp_path, "no-newline.jsonl", [*lines[:-1], lines[-1][:-1]])  # whole, but no "\n"
    assert_same(path)
    assert any(d.code == "no-final-newline" for d in load_for_continue(path).diagnostics)


def test_glued_lines(generated: list[Path], tmp_path: Path, split: str) -> None:
    """pi appends after a torn write without a newline: two entries on one line (not JSON)."""
    lines = lines_of(generated[1])
    for at in (10, len(lines) // 2, len(lines) - 2):
        damaged = list(lines)
        damaged[at] = damaged[at][: len(damaged[at]) // 2] + damaged[at + 1]
        del damaged[at + 1]
        assert_same(write(tmp_path, f"glued-{at}.jsonl", damaged))


def test_other_damage(generated: list[Path], tmp_path: Path, split: str) -> None:
    lines = lines_of(generated[2])
    n = len(lines)
    cases = {
        "not-utf8": lambda ls: ls.__setitem__(n // 3, b'{"type":"message","id":"\xff"}\n'),
        "blank": lambda ls: ls.insert(n // 3, b"  \n"),
        "array": lambda ls: ls.insert(n // 3, b"[1,2]\n"),
        "no-type": lambda ls: ls.insert(n // 3, b'{"id":"x","parentId":null}\n'),
        "extra-header": lambda ls: ls.insert(n // 3, ls[0]),
        "junk-first": lambda ls: ls.insert(0, b"garbage\n"),
        "crlf": lambda ls: ls.__setitem__(slice(None), [x[:-1] + b"\r\n" for x in ls]),
        "bom": lambda ls: ls.__setitem__(0, b"\xef\xbb\xbf" + ls[0]),
        "escaped-id": lambda ls: ls.append(
            b'{"type":"message","id":"a\\"b","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}\n'),
        "dangling": lambda ls: ls.append(
            b'{"type":"message","id":"dang0001","parentId":"nothere","timestamp":"t",'
            b'"message":{"role":"user","content":"x"}}\n'),
        "duplicate": lambda ls: ls.append(ls[n // 2]),
        "key-order": lambda ls: ls.append(
            b'{"id":"k0000001","type":"message","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}\n'),
        "custom-last": lambda ls: ls.append(
            b'{"type":"custom","customType":"x","data":{},"id":"cu000001","parentId":null,"timestamp":"t"}\n'),
        "unknown-type": lambda ls: ls.append(
            b'{"type":"future","id":"fu000001","parentId":null,"timestamp":"t"}\n'),
    }
    for name, mutate in cases.items():
        damaged = list(lines)
        mutate(damaged)
        assert_same(write(tmp_path, f"{name}.jsonl", damaged))


def test_cycles_and_forward_parents(tmp_path: Path, split: str) -> None:
    entries = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"},
        {"type": "message", "id": "a", "parentId": "c", "timestamp": "t", "message": {"role": "user", "content": "1"}},
        {"type": "message", "id": "b", "parentId": "a", "timestamp": "t", "message": {"role": "user", "content": "2"}},
        {"type": "message", "id": "c", "parentId": "b", "timestamp": "t", "message": {"role": "user", "content": "3"}},
        {"type": "message", "id": "d", "parentId": "d", "timestamp": "t", "message": {"role": "user", "content": "4"}},
    ]
    path = tmp_path / "cycle.jsonl"
    path.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries))
    assert_same(path, leaves=(..., "a", "b", "c"))


def test_unreadable_files_fail_the_same(tmp_path: Path) -> None:
    cases = {
        "empty": b"",
        "junk": b"not json\n",
        "entry-first": b'{"type":"message","id":"a","parentId":null}\n',
        "too-new": b'{"type":"session","version":9,"id":"x","timestamp":"t","cwd":"/"}\n',
    }
    for name, data in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(data)
        with pytest.raises(SessionError) as full:
            load_session(path)
        with pytest.raises(SessionError) as lazy:
            load_for_continue(path)
        assert str(lazy.value) == str(full.value)
    with pytest.raises(SessionError):
        load_for_continue(tmp_path / "missing.jsonl")


def test_a_line_changed_after_indexing_is_reported(generated: list[Path], tmp_path: Path) -> None:
    lines = lines_of(generated[0])
    path = write(tmp_path, "changed.jsonl", lines)
    session = load_index(path)
    leaf = len(session.tree) - 1
    damaged = list(lines)
    damaged[-1] = b"x" * (len(damaged[-1]) - 1) + b"\n"  # same length, not JSON any more
    path.write_bytes(b"".join(damaged))
    with pytest.raises(LazyDecodeError):
        session.entries[leaf]


def test_decode_failure_on_the_path_falls_back(generated: list[Path], tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    path = write(tmp_path, "fallback.jsonl", lines_of(generated[0]))
    calls = []
    original = index.LazyEntries._decode

    def failing(self, pos):  # noqa: ANN001, ANN202
        calls.append(pos)
        if len(calls) == 3:
            raise LazyDecodeError("simulated")
        return original(self, pos)

    monkeypatch.setattr(index.LazyEntries, "_decode", failing)
    session = load_for_continue(path)
    assert not isinstance(session, LazySession)
    assert view(session) == view(load_session(path))


def test_entries_appended_after_loading(generated: list[Path], tmp_path: Path, split: str) -> None:
    """A live chat adds entries to the loaded tree; the tree then equals a fresh load of the file."""
    lines = lines_of(generated[0])
    path = write(tmp_path, "live.jsonl", lines)
    session = load_for_continue(path)
    tree = session.tree
    new = {"type": "message", "id": "11ve0001", "parentId": tree.leaf_id, "timestamp": "2026-12-01T09:00:00.000Z",
           "message": {"role": "user", "content": [{"type": "text", "text": "more"}], "timestamp": 1}}
    tree.add(new, max(tree.lines) + 1)
    with path.open("ab") as fp:
        fp.write(json.dumps(new, separators=(",", ":")).encode() + b"\n")
    fresh = load_session(path)
    assert build_context(tree) == build_context(fresh.tree)
    assert tree.entries[len(tree) - 1] == new
    assert list(tree.lines) == fresh.lines


def test_torn_line_ending_in_a_brace(generated: list[Path], tmp_path: Path, split: str) -> None:
    """A write torn just after a `}` and ended with a newline by harnesskit's writer, with new entries
    after it hanging from the entry before it (the reload skipped the torn line): a leaf that is
    not JSON, which a prefix-only index would take for an entry. The index itself reports it."""
    lines = lines_of(generated[2])
    at = len(lines) // 2
    torn = lines[at]
    cut = torn.rindex(b"}", 0, len(torn) - 3) + 1  # inside the entry, right after an inner "}"
    before = json.loads(lines[at - 1])
    child = json.loads(lines[at + 1])
    child["parentId"] = before["id"]
    damaged = [*lines[:at], torn[:cut] + b"\n", json.dumps(child, separators=(",", ":")).encode() + b"\n",
               *lines[at + 2:]]
    path = write(tmp_path, "torn-brace.jsonl", damaged)
    assert_same(path)
    lazy = load_for_continue(path)
    assert isinstance(lazy, LazySession), "judged by the index, not by a fallback to a full load"
    assert [(d.line, d.code) for d in lazy.diagnostics] == [(at + 1, "invalid-json")]
