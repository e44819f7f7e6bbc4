"""`harnesskit inspect` driven through Click against real files."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import (
    ALL_FIXTURES,
    TUTORIAL_DIR,
    V1_LARGE,
    V3_DIR,
    V3_FILES,
    assert_one_line_error,
    expected_for,
    read_objects,
    requires_shared,
)

DEMO = TUTORIAL_DIR / "demo.jsonl"
S12 = V3_DIR / "s12_meta_entries.jsonl"
S03 = V3_DIR / "s03_new_tool.jsonl"


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def ids_in(objects: list[dict]) -> list[str]:
    return [o["id"] for o in objects]


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=[p.name for p in ALL_FIXTURES])
@pytest.mark.parametrize("mode", [[], ["--tree"], ["--context"], ["--stats"], ["--json"]])
def test_inspect_every_fixture(run, path: Path, mode: list[str]) -> None:
    result = run("inspect", path, *mode)
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.stderr == ""
    assert result.stdout.strip()


def test_demo_rows_match_the_chapter(run) -> None:
    objects = read_objects(DEMO)[1:]
    result = run("inspect", DEMO, "--format", "tsv", "--width", "400")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("session tutorial v1")
    assert lines[-1] == "entries=8  leaf=e8"  # the table streams: the count comes last
    header = [c.strip() for c in lines[1].split("\t")]
    assert header == ["line", "id", "parent", "type", "summary"]
    rows = [[c.strip() for c in line.split("\t")] for line in lines[2:-1]]
    assert [r[0] for r in rows] == [str(n) for n in range(2, 10)]
    assert [r[1] for r in rows] == [f"e{i}" for i in range(1, 9)]
    assert [r[2] for r in rows] == ["-"] + [f"e{i}" for i in range(1, 8)]
    assert [r[3] for r in rows] == [f"message:{role}" for role in (
        "user", "assistant", "user", "assistant", "toolResult", "assistant", "user", "assistant")]
    for row, obj in zip(rows, objects, strict=True):
        texts = [b["text"] for b in obj["message"]["content"] if b["type"] == "text"]
        assert texts
        for text in texts:
            assert text in row[4]
    assert "calc" in rows[3][4] and "12*8" in rows[3][4]  # the tool call
    assert rows[4][4].startswith("calc")  # the tool result names its tool


def test_demo_default_table(run) -> None:
    result = run("inspect", DEMO, "--width", "400")
    assert result.exit_code == 0
    for obj in read_objects(DEMO)[1:]:
        row = next(line for line in result.stdout.splitlines() if line.split()[1:2] == [obj["id"]])
        assert obj["message"]["content"][0]["text"] in row


@requires_shared
def test_json_is_json_lines(run) -> None:
    for path in (DEMO, S12, V1_LARGE):
        result = run("inspect", path, "--json")
        assert result.exit_code == 0
        rows = json_lines(result.stdout)
        assert rows[0]["kind"] == "header"
        assert rows[0]["header"]["version"] == 3
        entries = rows[1:]
        assert all(r["kind"] == "entry" for r in entries)
        raw = read_objects(path)[1:]
        assert len(entries) == len(raw)
        if path != V1_LARGE:
            assert [r["id"] for r in entries] == ids_in(raw)
            assert [r["parentId"] for r in entries] == [o["parentId"] for o in raw]
        assert [r["type"] for r in entries] == [o["type"] for o in raw]
        assert [r["leaf"] for r in entries] == [False] * (len(raw) - 1) + [True]


def test_demo_json_rows(run) -> None:
    rows = json_lines(run("inspect", DEMO, "--json").stdout)[1:]
    raw = read_objects(DEMO)[1:]
    assert [r["role"] for r in rows] == [o["message"]["role"] for o in raw]
    assert [r["entry"]["message"]["content"] for r in rows] == [o["message"]["content"] for o in raw]


def test_tree_marks_leaf_and_labels(run) -> None:
    result = run("inspect", S12, "--tree", "--width", "1000")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()[1:]
    objects = read_objects(S12)[1:]
    drawn = [re.match(r"^[│├└─ ]*([0-9a-f]{8}) ", line).group(1) for line in lines]
    assert sorted(drawn) == sorted(ids_in(objects))  # every entry drawn exactly once
    leaf_lines = [line for line in lines if "← leaf" in line]
    assert len(leaf_lines) == 1 and objects[-1]["id"] in leaf_lines[0]
    labelled = [line for line in lines if "[checkpoint-1]" in line]
    assert len(labelled) == 1 and "1444fb6e" in labelled[0]
    assert any("├─" in line for line in lines) and any("└─" in line for line in lines)  # the fork


def test_tree_json_children(run) -> None:
    rows = json_lines(run("inspect", S12, "--tree", "--json").stdout)
    objects = read_objects(S12)[1:]
    kids: dict[str, list[str]] = {o["id"]: [] for o in objects}
    for o in objects:
        if o["parentId"]:
            kids[o["parentId"]].append(o["id"])
    assert {r["id"]: r["children"] for r in rows} == kids
    assert [r["id"] for r in rows if r["label"]] == ["1444fb6e"]


@pytest.mark.parametrize("ref", ["1444fb6e", "1444f", "checkpoint-1"])
def test_leaf_restricts_to_the_path(run, ref: str) -> None:
    result = run("inspect", S12, "--leaf", ref, "--json")
    assert result.exit_code == 0, result.output
    rows = json_lines(result.stdout)[1:]
    assert [r["id"] for r in rows] == ["0fcb7cab", "86b08134", "088aa72f", "1444fb6e"]
    assert rows[-1]["leaf"] is True
    table = run("inspect", S12, "--leaf", ref, "--width", "400").stdout.splitlines()
    assert len(table) == 1 + 2 + 4  # header line, table head, four rows
    tree = run("inspect", S12, "--leaf", ref, "--tree", "--width", "400").stdout.splitlines()[1:]
    assert len(tree) == 4 and "← leaf" in tree[-1] and "[checkpoint-1]" in tree[-1]


def test_leaf_on_a_branch_context(run) -> None:
    path = V3_DIR / "s10_branch_in_file.jsonl"
    objects = {o["id"]: o for o in read_objects(path)[1:]}
    result = run("inspect", path, "--leaf", "f2d2", "--context", "--json")
    assert result.exit_code == 0
    chain, node = [], "f2d2b5cc"
    while node:
        chain.append(objects[node])
        node = objects[node]["parentId"]
    expected = [o["message"] for o in reversed(chain) if o["type"] == "message"]
    assert json_lines(result.stdout) == expected


@pytest.mark.parametrize("ref", ["nosuchthing", "14", "zzzzzzzz"])
def test_leaf_that_names_nothing(run, ref: str) -> None:
    assert_one_line_error(run("inspect", S12, "--leaf", ref))


def test_ambiguous_leaf_prefix(run, tmp_path: Path) -> None:
    objects = read_objects(S03)
    objects[-1] = {**objects[-1], "id": "7b26abcd", "parentId": objects[-2]["id"]}
    objects.append({**objects[-1], "id": "7b26ef01"})
    path = tmp_path / "amb.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    line = assert_one_line_error(run("inspect", path, "--leaf", "7b26"))
    assert "ambiguous" in line
    assert run("inspect", path, "--leaf", "7b26e").exit_code == 0


@pytest.mark.parametrize("path", V3_FILES, ids=[p.stem for p in V3_FILES])
def test_context_json_equals_pi(run, path: Path) -> None:
    result = run("inspect", path, "--context", "--json")
    assert result.exit_code == 0
    assert json_lines(result.stdout) == expected_for(path)["messages"]


@pytest.mark.parametrize("path", V3_FILES, ids=[p.stem for p in V3_FILES])
def test_context_text_summary(run, path: Path) -> None:
    expected = expected_for(path)
    result = run("inspect", path, "--context", "--width", "400")
    assert result.exit_code == 0
    second = result.stdout.splitlines()[1]
    model = expected["model"]
    assert second == (f"context from leaf {expected['leaf_id']}: {expected['messages_in_context']} messages, "
                      f"model {model['provider']}/{model['modelId']}, thinking {expected['thinking_level']}")


def own_stats(path: Path) -> dict:
    """inspect --stats computed here from the raw lines (v1 files: a chain, in file order)."""
    objects = read_objects(path)
    entries = objects[1:]
    legacy = objects[0].get("version") != 3
    if legacy:  # migration chains the entries; tutorial files keep their own ids
        if objects[0]["type"] == "session":
            entries = [{**e, "id": str(i), "parentId": str(i - 1) if i else None} for i, e in enumerate(entries)]
    types = Counter(e["type"] for e in entries)
    messages = [e["message"] for e in entries if e["type"] == "message"]
    roles = Counter(m["role"] for m in messages)
    tools: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    for m in messages:
        if m["role"] != "assistant":
            continue
        for block in m["content"]:
            if block.get("type") == "toolCall":
                tools[block["name"]] += 1
        for key in ("input", "output", "cacheRead", "cacheWrite", "totalTokens"):
            tokens[key] += m.get("usage", {}).get(key, 0)
    by_id = {e["id"]: e for e in entries}
    has_child = {e["parentId"] for e in entries if e["parentId"]}

    def depth(e: dict) -> int:
        d = 0
        node = e
        while node is not None:
            d += 1
            node = by_id.get(node["parentId"]) if node["parentId"] else None
        return d

    kids = Counter(e["parentId"] for e in entries if e["parentId"])
    cost = sum(m.get("usage", {}).get("cost", {}).get("total", 0) for m in messages if m["role"] == "assistant")
    return {
        "cost": pytest.approx(cost, abs=1e-6),
        "entries": len(entries),
        "types": dict(types),
        "roles": dict(roles),
        "tool_calls": dict(tools),
        "tokens": {k: tokens[k] for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")},
        "roots": sum(1 for e in entries if e["parentId"] is None),
        "leaves": sum(1 for e in entries if e["id"] not in has_child),
        "branch_points": sum(1 for n in kids.values() if n > 1),
        "depth": max(depth(e) for e in entries),
    }


@pytest.mark.parametrize("path", [*V3_FILES, DEMO, V1_LARGE], ids=lambda p: p.name)
def test_stats_json_numbers(run, path: Path) -> None:
    result = run("inspect", path, "--stats", "--json")
    assert result.exit_code == 0
    (stats,) = json_lines(result.stdout)
    mine = own_stats(path)
    for key, value in mine.items():
        assert stats[key] == value, key


def test_s12_stats_by_hand(run) -> None:
    (stats,) = json_lines(run("inspect", S12, "--stats", "--json").stdout)
    assert stats["entries"] == 19
    assert stats["types"]["message"] == 12
    assert stats["branch_points"] == 1  # 1444fb6e has two children
    assert stats["leaves"] == 2
    assert stats["depth"] == 17


@pytest.mark.parametrize("fmt", ["github", "grid"])
def test_table_formats(run, fmt: str) -> None:
    result = run("inspect", DEMO, "--format", fmt, "--width", "400")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()[1:-1]  # between the header line and the count
    assert result.stdout.splitlines()[-1].startswith("entries=8")
    if fmt == "github":
        assert all(line.startswith("|") and line.endswith("|") for line in lines)
        assert set(lines[1]) <= set("|-: ")
        assert len(lines) == 2 + 8
    else:
        assert lines[0].startswith("+-") and "+=" in result.stdout
        assert len([line for line in lines if line.startswith("|")]) == 1 + 8
    for i in range(1, 9):
        assert any(f" e{i} " in line for line in lines)
    stats = run("inspect", DEMO, "--stats", "--format", fmt)
    assert stats.exit_code == 0
    assert ("| entries" if fmt == "github" else "| entries ") in stats.stdout


def test_one_mode_at_a_time(run) -> None:
    assert_one_line_error(run("inspect", DEMO, "--tree", "--stats"))


def test_unknown_format_is_a_usage_error(run) -> None:
    result = run("inspect", DEMO, "--format", "nope")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


# --- refused input: exit 2, one line ----------------------------------------------------------------


@pytest.mark.parametrize("width", ["99999999999999999999", "1000000000000", "1000000000", "10001", "0", "-5"])
def test_a_width_out_of_range_is_a_usage_error(run, width: str) -> None:
    """--width is 1 to 10,000: beyond, the table overflowed an int, ran out of memory or wrote a
    gigabyte of padding; 0 and below blanked the header."""
    result = run("inspect", S12, "--width", width)
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.stdout == ""
    assert "Invalid value for '--width'" in result.stderr and "1<=x<=10000" in result.stderr


@pytest.mark.parametrize("columns", ["99999999999999999999", "1000000000000", "20000", "abc", "-5", "0"])
@pytest.mark.parametrize("fmt", ["simple", "grid"])
def test_an_absurd_columns_is_held_to_10000(run, monkeypatch: pytest.MonkeyPatch, columns: str, fmt: str) -> None:
    """$COLUMNS is the user's environment, not an option to refuse: too wide, it is taken as 10,000
    columns; not a positive number, it is ignored (shutil's rule)."""
    monkeypatch.setenv("COLUMNS", columns)
    result = run("inspect", S12, "--format", fmt)
    assert result.exit_code == 0, (result.output, result.exception)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("session pi v3") and lines[-1].startswith("entries=")
    assert max(map(len, lines)) <= 10_000
    if columns.isdigit() and int(columns) > 10_000:
        assert max(map(len, lines)) >= 10_000 - 2  # the rule is drawn to the whole width


def test_missing_path(run, tmp_path: Path) -> None:
    assert "no such file" in assert_one_line_error(run("inspect", tmp_path / "missing.jsonl"))


def test_directory(run, tmp_path: Path) -> None:
    assert "directory" in assert_one_line_error(run("inspect", tmp_path))


def test_empty_file(run, tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert "empty" in assert_one_line_error(run("inspect", path))
    assert path.read_bytes() == b""


def test_header_only(run, tmp_path: Path) -> None:
    path = tmp_path / "header.jsonl"
    path.write_bytes(S03.read_bytes().splitlines(keepends=True)[0])
    result = run("inspect", path)
    assert result.exit_code == 0 and result.stderr == ""
    assert "entries=0" in result.stdout
    rows = json_lines(run("inspect", path, "--json").stdout)
    assert [r["kind"] for r in rows] == ["header"]
    (stats,) = json_lines(run("inspect", path, "--stats", "--json").stdout)
    assert stats["entries"] == 0
    assert json_lines(run("inspect", path, "--context", "--json").stdout) == []
    assert run("inspect", path, "--tree").exit_code == 0


def test_binary_garbage(run, tmp_path: Path) -> None:
    rng = random.Random(1234)
    path = tmp_path / "garbage.jsonl"
    data = bytes(rng.randrange(256) for _ in range(20_000))
    path.write_bytes(data)
    assert_one_line_error(run("inspect", path))
    assert path.read_bytes() == data


def test_version_99(run, tmp_path: Path) -> None:
    objects = read_objects(S03)
    objects[0]["version"] = 99
    path = tmp_path / "v99.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    before = path.read_bytes()
    line = assert_one_line_error(run("inspect", path))
    assert "99" in line and "3" in line.replace("99", "")
    assert path.read_bytes() == before


def test_first_object_is_an_entry(run, tmp_path: Path) -> None:
    lines = S03.read_bytes().splitlines(keepends=True)
    path = tmp_path / "headless.jsonl"
    path.write_bytes(b"".join(lines[1:]))
    line = assert_one_line_error(run("inspect", path))
    assert "header" in line
    assert path.read_bytes() == b"".join(lines[1:])


# --- damaged input: warnings on stderr, exit 0, the rest shown --------------------------------------


def damaged(tmp_path: Path, kind: str) -> tuple[Path, list[int]]:
    """S03 with one kind of damage; returns the file and the line numbers a warning must name."""
    lines = S03.read_bytes().splitlines(keepends=True)
    path = tmp_path / f"{kind}.jsonl"
    warn: list[int] = []
    if kind == "utf8":
        data = lines[:3] + [b'{"type":"message","id":"x\xff\xfe"}\n'] + lines[3:]
        warn = [4]
    elif kind == "torn":
        data = [*lines, b'{"type":"message","id":"abcd12']
        warn = [len(lines) + 1]
    elif kind == "crlf":
        data = [line.replace(b"\n", b"\r\n") for line in lines]
    elif kind == "bom":
        data = [b"\xef\xbb\xbf" + lines[0], *lines[1:]]
    elif kind == "null":
        data = lines[:2] + [b"null\n"] + lines[2:]
        warn = [3]
    elif kind == "cycle":
        a = json.loads(lines[1])
        b = json.loads(lines[2])
        a["parentId"] = b["id"]  # model_change <-> thinking_level_change
        data = [lines[0], json.dumps(a).encode() + b"\n", *lines[2:]]
        warn = [2]
    elif kind == "dangling":
        e = json.loads(lines[4])
        e["parentId"] = "deadbeef"
        data = [*lines[:4], json.dumps(e).encode() + b"\n", *lines[5:]]
        warn = [5]
    elif kind == "duplicate":
        data = [*lines, lines[-1]]
        warn = [len(lines) + 1]
    else:
        raise AssertionError(kind)
    path.write_bytes(b"".join(data))
    return path, warn


@pytest.mark.parametrize("kind", ["utf8", "torn", "null", "cycle", "dangling", "duplicate"])
def test_damage_is_reported_with_line_numbers(run, tmp_path: Path, kind: str) -> None:
    path, warn = damaged(tmp_path, kind)
    before = path.read_bytes()
    result = run("inspect", path, "--json")
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    stderr = result.stderr.splitlines()
    assert stderr, f"no diagnostic for {kind}"
    assert all(line.startswith("harnesskit: warning:") for line in stderr), stderr
    for number in warn:
        assert any(f"line {number}" in line for line in stderr), (number, stderr)
    rows = json_lines(result.stdout)  # stdout stays clean JSON
    good = {o["id"] for o in read_objects(S03)[1:]}
    shown = {r["id"] for r in rows[1:]}
    if kind == "utf8" or kind == "null" or kind == "torn":
        assert shown == good  # one bad line costs exactly that line
    assert path.read_bytes() == before  # inspect never writes
    for mode in (["--tree"], ["--context"], ["--stats"], []):
        assert run("inspect", path, *mode).exit_code == 0


def test_cycle_leaf_tree_still_shows_everything(run, tmp_path: Path) -> None:
    path, _ = damaged(tmp_path, "cycle")
    result = run("inspect", path, "--tree", "--width", "400")
    assert result.exit_code == 0
    drawn = [re.match(r"^[│├└─ ]*([0-9a-f]{8}) ", line).group(1) for line in result.stdout.splitlines()[1:]]
    assert sorted(drawn) == sorted(ids_in(read_objects(S03)[1:]))
    assert sum("← leaf" in line for line in result.stdout.splitlines()) == 1


@pytest.mark.parametrize("kind", ["crlf", "bom"])
def test_crlf_and_bom_read_cleanly(run, tmp_path: Path, kind: str) -> None:
    path, _ = damaged(tmp_path, kind)
    clean = run("inspect", S03, "--json")
    result = run("inspect", path, "--json")
    assert result.exit_code == 0
    assert result.stderr == ""
    assert result.stdout == clean.stdout
    assert run("inspect", path, "--context", "--json").stdout == run("inspect", S03, "--context", "--json").stdout


def test_junk_first_line_costs_only_itself(run, tmp_path: Path) -> None:
    path = tmp_path / "junk.jsonl"
    path.write_bytes(b"\x00\x01 garbage {\n" + S03.read_bytes())
    result = run("inspect", path, "--json")
    assert result.exit_code == 0
    assert "line 1" in result.stderr
    rows = json_lines(result.stdout)
    assert rows[0]["line"] == 2
    assert [r["id"] for r in rows[1:]] == ids_in(read_objects(S03)[1:])


def test_context_from_a_last_entry_without_id(run, tmp_path: Path) -> None:
    """pi: the last entry has no id -> leafId undefined -> the context is built from the last entry."""
    objects = read_objects(S03)
    objects.append({"type": "x_future", "parentId": objects[-1]["id"], "timestamp": "2026-12-01T08:53:37.000Z"})
    path = tmp_path / "noid.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    result = run("inspect", path, "--context", "--json")
    assert result.exit_code == 0
    assert json_lines(result.stdout) == expected_for(S03)["messages"]
