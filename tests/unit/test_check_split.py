"""check_file's fast paths give exactly the problems (and order) of the plain one-pass check.

Four ways to check a file must agree on every file here: the inline fast path, the same without its
msgspec lane (`_TYPED = False`), the reader path for every line (`_FAST = False`), and the two-process
split (forced on small files). The damaged files
put each kind of damage on both sides of the split, and across it.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from conftest import ALL_FIXTURES, requires_shared

from harnesskit.session import check, split

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


def report_of(path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> tuple:
    with monkeypatch.context() as m:
        m.setattr(check, "_TYPED_MIN_BYTES", 0)  # the msgspec lane even on small files
        if mode == "reader":
            m.setattr(check, "_FAST", False)
            report = check.check_file(path, workers=1)
        elif mode == "orjson":  # the fast path without its msgspec lane
            m.setattr(check, "_TYPED", False)
            report = check.check_file(path, workers=1)
        elif mode == "split":
            m.setattr(split, "SPLIT_MIN_BYTES", 0)
            report = check.check_file(path, workers=2)
        else:
            report = check.check_file(path, workers=1)
    return report.entries, report.dialect, [p.as_dict() for p in report.problems]


def assert_same(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple:
    one = report_of(path, monkeypatch, "fast")
    assert report_of(path, monkeypatch, "reader") == one
    assert report_of(path, monkeypatch, "orjson") == one
    assert report_of(path, monkeypatch, "split") == one
    return one


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    path = generate.generate(tmp_path_factory.mktemp("gen") / "clean.jsonl", 3000, seed=7)
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=lambda p: p.name)
def test_fixtures(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_same(path, monkeypatch)


def test_generated_files_are_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for seed in (1, 2):
        path = generate.generate(tmp_path / f"s{seed}.jsonl", 5000, seed=seed)
        entries, dialect, problems = assert_same(path, monkeypatch)
        assert (entries, dialect, problems) == (5000, "pi v3", [])


def _entry(line: bytes) -> dict:
    return json.loads(line)


def _dump(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def damage(lines: list[bytes], kind: str, at: int) -> list[bytes]:
    """One kind of damage at line index `at` (0 is the header)."""
    out = list(lines)
    e = _entry(out[at])
    prev = _entry(out[at - 1])  # inserted entries hang under the entry before them
    if kind == "not-json":
        out[at] = out[at][: len(out[at]) // 2] + b"\n"
    elif kind == "glued":
        out[at] = out[at][: len(out[at]) // 2] + out[at + 1]
        del out[at + 1]
    elif kind == "not-utf8":
        out[at] = out[at][:-2] + b"\xff}\n"
    elif kind == "not-object":
        out[at] = b"[1, 2]\n"
    elif kind == "no-type":
        e.pop("type")
        out[at] = _dump(e)
    elif kind == "blank":
        out.insert(at, b"   \n")
    elif kind == "crlf":
        out[at] = out[at][:-1] + b"\r\n"
    elif kind == "header":
        out.insert(at, lines[0])
    elif kind == "unknown-type":
        e["type"] = "future_thing"
        out[at] = _dump(e)
    elif kind == "schema":
        e.pop("timestamp")
        out[at] = _dump(e)
    elif kind == "no-id":
        e.pop("id")
        out[at] = _dump(e)
    elif kind == "duplicate-early":  # an id from the first half again in the second half
        e["id"] = _entry(lines[2])["id"]
        out[at] = _dump(e)
    elif kind == "duplicate-near":
        e["id"] = _entry(out[at - 3])["id"]
        out[at] = _dump(e)
    elif kind == "duplicate-dangling":  # a duplicate's own parent counts (pi links to the later entry)
        e["id"], e["parentId"] = _entry(out[at - 3])["id"], "deadbeef"
        out[at] = _dump(e)
    elif kind == "duplicate-self":
        e["id"] = e["parentId"] = _entry(out[at - 3])["id"]
        out[at] = _dump(e)
    elif kind == "duplicate-cycle":  # an id again, under an entry that descends from its first
        e["id"], e["parentId"] = _entry(out[at - 3])["id"], prev["id"]
        out[at] = _dump(e)
    elif kind == "dangling":
        e["parentId"] = "deadbeef"
        out[at] = _dump(e)
    elif kind == "forward":  # parent from the far end of the file
        e["parentId"] = _entry(lines[-2])["id"]
        out[at] = _dump(e)
    elif kind == "self-parent":
        e["parentId"] = e["id"]
        out[at] = _dump(e)
    elif kind == "cycle":  # an early entry's parent becomes a later descendant
        e["parentId"] = _entry(lines[at + 5])["id"]
        out[at] = _dump(e)
    elif kind == "orphan":
        out.insert(at, _dump({"type": "message", "id": "0rphan00", "parentId": prev["id"], "timestamp": e["timestamp"],
                              "message": {"role": "toolResult", "toolCallId": "call_nowhere", "toolName": "bash",
                                          "content": [], "isError": False, "timestamp": 1}}))
    elif kind == "far-result":  # a tool result whose call is in the first half
        call = next((_entry(x) for x in lines[1:] if b'"toolCall"' in x), None)
        assert call is not None
        call_id = next(b["id"] for b in call["message"]["content"] if b["type"] == "toolCall")
        out.insert(at, _dump({"type": "message", "id": "farres00", "parentId": call["id"],
                              "timestamp": e["timestamp"],
                              "message": {"role": "toolResult", "toolCallId": call_id, "toolName": "bash",
                                          "content": [], "isError": False, "timestamp": 1}}))
    elif kind == "label-later":  # a reference to an entry that only comes later
        out.insert(at, _dump({"type": "label", "id": "labe1000", "parentId": prev["id"], "timestamp": e["timestamp"],
                              "targetId": _entry(lines[-2])["id"], "label": "x"}))
    elif kind == "dangling-ref":
        out.insert(at, _dump({"type": "label", "id": "labe1001", "parentId": prev["id"], "timestamp": e["timestamp"],
                              "targetId": "nothere0", "label": "x"}))
    elif kind == "truncated-end":
        out[-1] = out[-1][:-20]
    elif kind == "no-final-newline":
        out[-1] = out[-1][:-1]
    else:
        raise AssertionError(kind)
    return out


KINDS = ["not-json", "glued", "not-utf8", "not-object", "no-type", "blank", "crlf", "header", "unknown-type",
         "schema", "no-id", "duplicate-early", "duplicate-near", "duplicate-dangling", "duplicate-self",
         "duplicate-cycle", "dangling", "forward", "self-parent", "cycle",
         "orphan", "far-result", "label-later", "dangling-ref", "truncated-end", "no-final-newline"]


QUIET = {"blank", "crlf", "far-result", "label-later"}  # harmless: no problem, but a different path
# what a duplicate's own parent makes of it, on the duplicate's line (as pi and inspect see it)
ON_DUPLICATE = {"duplicate-dangling": "dangling-parent", "duplicate-self": "cycle", "duplicate-cycle": "cycle"}


@pytest.mark.parametrize("kind", KINDS)
def test_damage_on_both_sides(kind: str, clean: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = len(clean)
    for fraction in (0.2, 0.49, 0.51, 0.8):
        lines = damage(clean, kind, int(n * fraction))
        path = tmp_path / f"{kind}-{fraction}.jsonl"
        path.write_bytes(b"".join(lines))
        _, _, problems = assert_same(path, monkeypatch)
        assert bool(problems) == (kind not in QUIET), (kind, fraction, problems)
        if kind in ON_DUPLICATE:
            (line,) = [p["line"] for p in problems if p["code"] == "duplicate-id"]
            assert [p["code"] for p in problems if p["line"] == line] == ["duplicate-id", ON_DUPLICATE[kind]]


def test_many_kinds_at_once(clean: list[bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = clean
    for i, kind in enumerate(k for k in KINDS if not k.endswith("-end") and k != "no-final-newline"):
        lines = damage(lines, kind, 10 + i * (len(clean) - 40) // len(KINDS))
    path = tmp_path / "many.jsonl"
    path.write_bytes(b"".join(lines))
    _, _, problems = assert_same(path, monkeypatch)
    assert len({p["code"] for p in problems}) > 10


@requires_shared
def test_legacy_and_small_files_stay_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    legacy = next(p for p in ALL_FIXTURES if "v1" in p.name)
    assert_same(legacy, monkeypatch)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert_same(empty, monkeypatch)
    only_header = tmp_path / "header.jsonl"
    only_header.write_bytes(b'{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}\n')
    assert_same(only_header, monkeypatch)
