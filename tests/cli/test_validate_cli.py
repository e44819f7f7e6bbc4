"""`harnesskit validate`: every problem named with file, line and JSON path; exit codes for CI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import TUTORIAL_FILES, V1_LARGE, V3_DIR, V3_FILES, read_objects, write_lines

from harnesskit.session.check import check_file

S03 = V3_DIR / "s03_new_tool.jsonl"
TS = "2026-12-01T08:53:36.302Z"


def problems(run, path: Path, *extra: str) -> tuple[int, list[dict]]:
    """Exit code and the errors + warnings of --format json."""
    result = run("validate", "--format", "json", path, *extra)
    doc = json.loads(result.stdout)
    return result.exit_code, doc["errors"] + doc["warnings"]


def base() -> list[dict]:
    return read_objects(S03)


def with_extra(tmp_path: Path, name: str, *entries: dict) -> tuple[Path, int]:
    """S03 plus entries appended; returns the path and the line number of the first extra entry."""
    objects = base()
    path = write_lines(tmp_path / name, [*objects, *entries])
    return path, len(objects) + 1


def meta(kind: str, entry_id: str, parent: str | None, **payload: object) -> dict:
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": TS, **payload}


LAST = base()[-1]["id"]


def assert_problem(found: list[dict], path: Path, line: int, json_path: str, word: str = "",
                   severity: str = "error") -> dict:
    matches = [p for p in found if p["line"] == line and p["path"] == json_path and p["severity"] == severity]
    assert matches, (line, json_path, found)
    p = matches[0]
    assert p["file"] == str(path)
    assert word.lower() in p["message"].lower(), p
    return p


def test_every_v3_fixture_is_clean(run) -> None:
    for strict in ([], ["--strict"]):
        result = run("validate", *strict, *V3_FILES)
        assert result.exit_code == 0, result.output
        total = sum(len(read_objects(p)) - 1 for p in V3_FILES)
        assert result.stdout.splitlines() == [f"checked {len(V3_FILES)} files, {total} entries: 0 errors, 0 warnings"]


@pytest.mark.parametrize("path", V3_FILES, ids=[p.stem for p in V3_FILES])
def test_each_v3_fixture_check_file(path: Path) -> None:
    report = check_file(path)
    assert report.problems == []
    assert report.entries == len(read_objects(path)) - 1
    assert report.dialect == "pi v3"


def test_directory_is_recursed(run, tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    shutil.copy(V3_FILES[0], tmp_path / "one.jsonl")
    shutil.copy(V3_FILES[1], nested / "two.jsonl")
    (nested / "notes.txt").write_text("not a session")
    (tmp_path / "skip.json").write_text("{}")
    result = run("validate", "--format", "json", tmp_path)
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert sorted(f["file"] for f in doc["files"]) == sorted([str(tmp_path / "one.jsonl"), str(nested / "two.jsonl")])
    text = run("validate", tmp_path)
    assert "checked 2 files" in text.stdout.splitlines()[-1]


@pytest.mark.parametrize("path", [V1_LARGE, *TUTORIAL_FILES], ids=lambda p: p.name)
def test_legacy_files_warn_and_fail_strict(run, path: Path) -> None:
    result = run("validate", path)
    assert result.exit_code == 0, result.output
    code, found = problems(run, path)
    assert code == 0
    assert [p["severity"] for p in found] == ["warning"]
    assert found[0]["line"] == 1 and "legacy" in found[0]["message"] and "migrate" in found[0]["message"]
    strict = run("validate", "--strict", path)
    assert strict.exit_code == 1
    assert "1 error" in strict.stdout.splitlines()[-1]


def test_schema_error_names_the_field(run, tmp_path: Path) -> None:
    objects = base()
    index = next(i for i, o in enumerate(objects) if o.get("message", {}).get("role") == "assistant")
    del objects[index]["message"]["usage"]
    path = write_lines(tmp_path / "nousage.jsonl", objects)
    code, found = problems(run, path)
    assert code == 1
    assert_problem(found, path, index + 1, "$.message.usage", "usage")
    text = run("validate", path)
    assert f"{path}:{index + 1}: error: $.message.usage:" in text.stdout


def test_not_json_not_utf8_not_object(run, tmp_path: Path) -> None:
    lines = S03.read_bytes().splitlines(keepends=True)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join([lines[0], lines[1], b"{nope\n", b'{"type":"x","s":"\xff"}\n', b"[1,2]\n",
                               b"null\n", b'{"no":"type"}\n', *lines[2:]]))
    code, found = problems(run, path)
    assert code == 1
    for line, word in ((3, "JSON"), (4, "UTF-8"), (5, "object"), (6, "object"), (7, "type")):
        assert_problem(found, path, line, "$", word)
    assert sum(p["severity"] == "error" for p in found) == 5


def test_missing_header(run, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "headless.jsonl", base()[1:])
    code, found = problems(run, path)
    assert code == 1
    assert_problem(found, path, 1, "$.type", "header")


def test_empty_file(run, tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    code, found = problems(run, path)
    assert code == 1 and len(found) == 1 and "header" in found[0]["message"]


def test_misplaced_header(run, tmp_path: Path) -> None:
    objects = base()
    path, line = with_extra(tmp_path, "hdr2.jsonl", objects[0])
    code, found = problems(run, path)
    assert code == 1
    assert_problem(found, path, line, "$.type", "header")


def test_duplicate_id(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "dup.jsonl", base()[-1])
    code, found = problems(run, path)
    assert code == 1
    assert_problem(found, path, line, "$.id", "duplicate")


def test_parent_names_no_entry(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "dangling.jsonl", meta("custom", "cafe0001", "deadbeef", customType="t"))
    code, found = problems(run, path)
    assert code == 1
    assert_problem(found, path, line, "$.parentId", "deadbeef")


def test_parent_names_a_later_entry(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "forward.jsonl", meta("custom", "cafe0001", "cafe0002", customType="t"),
                            meta("custom", "cafe0002", LAST, customType="t"))
    code, found = problems(run, path)
    assert code == 1
    p = assert_problem(found, path, line, "$.parentId", "later")
    assert str(line + 1) in p["message"]
    assert not any(q["code"] == "cycle" for q in found)


def test_cycle(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "cycle.jsonl", meta("custom", "cafe0001", "cafe0002", customType="t"),
                            meta("custom", "cafe0002", "cafe0001", customType="t"))
    code, found = problems(run, path)
    assert code == 1
    cycles = [p for p in found if "cycle" in p["message"]]
    assert {p["line"] for p in cycles} == {line, line + 1}
    assert all(p["path"] == "$.parentId" and p["file"] == str(path) for p in cycles)


def test_self_parent_is_a_cycle(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "self.jsonl", meta("custom", "cafe0001", "cafe0001", customType="t"))
    code, found = problems(run, path)
    assert code == 1
    assert_problem(found, path, line, "$.parentId", "cycle")


@pytest.mark.parametrize(
    ("entry", "json_path"),
    [
        (meta("label", "cafe0001", LAST, targetId="nothere", label="x"), "$.targetId"),
        (meta("compaction", "cafe0001", LAST, summary="s", firstKeptEntryId="nothere", tokensBefore=1),
         "$.firstKeptEntryId"),
        (meta("branch_summary", "cafe0001", LAST, fromId="nothere", summary="s"), "$.fromId"),
    ],
)
def test_references_naming_no_entry(run, tmp_path: Path, entry: dict, json_path: str) -> None:
    path, line = with_extra(tmp_path, "ref.jsonl", entry)
    code, found = problems(run, path)
    assert code == 1
    assert_problem(found, path, line, json_path, "nothere")
    assert len(found) == 1


def test_references_that_resolve_are_fine(run, tmp_path: Path) -> None:
    path, _ = with_extra(
        tmp_path, "ok.jsonl",
        meta("label", "cafe0001", LAST, targetId=LAST, label="x"),
        meta("branch_summary", "cafe0002", "cafe0001", fromId="root", summary="s"),
        meta("compaction", "cafe0003", "cafe0002", summary="s", firstKeptEntryId=LAST, tokensBefore=1),
    )
    code, found = problems(run, path, "--strict")
    assert (code, found) == (0, [])


def test_tool_result_without_its_call(run, tmp_path: Path) -> None:
    result = {"role": "toolResult", "toolCallId": "call_nowhere", "toolName": "bash",
              "content": [{"type": "text", "text": "x"}], "isError": False, "timestamp": 1}
    path, line = with_extra(tmp_path, "orphan.jsonl", meta("message", "cafe0001", LAST, message=result))
    code, found = problems(run, path)
    assert code == 1
    assert_problem(found, path, line, "$.message.toolCallId", "call_nowhere")


def test_tool_result_whose_call_is_on_another_branch(run, tmp_path: Path) -> None:
    objects = base()
    call = next(o for o in objects if o["type"] == "message" and o["message"]["role"] == "toolResult")
    call_id = call["message"]["toolCallId"]
    first_user = next(o for o in objects if o["type"] == "message" and o["message"]["role"] == "user")
    # a toolResult answering the same call, but on a branch that starts before the call
    result = {**call["message"]}
    path, line = with_extra(tmp_path, "branch.jsonl", meta("message", "cafe0001", first_user["id"], message=result))
    code, found = problems(run, path)
    assert code == 1
    assert_problem(found, path, line, "$.message.toolCallId", call_id)
    assert len(found) == 1  # the original pair is fine


def test_truncated_last_line(run, tmp_path: Path) -> None:
    data = S03.read_bytes()
    path = tmp_path / "torn.jsonl"
    path.write_bytes(data + b'{"type":"message","id":"ab')
    code, found = problems(run, path)
    assert code == 1
    assert_problem(found, path, len(data.splitlines()) + 1, "$", "truncated")


def test_unknown_entry_type_is_a_warning(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "unknown.jsonl", meta("frobnicate", "cafe0001", LAST, x=1))
    code, found = problems(run, path)
    assert code == 0
    assert_problem(found, path, line, "$.type", "frobnicate", severity="warning")
    assert run("validate", "--strict", path).exit_code == 1


def test_version_99_is_an_error_and_the_others_go_on(run, tmp_path: Path) -> None:
    objects = base()
    objects[0]["version"] = 99
    v99 = write_lines(tmp_path / "a-v99.jsonl", objects)
    good = tmp_path / "b-good.jsonl"
    shutil.copy(S03, good)
    bad = tmp_path / "c-bad.jsonl"
    write_lines(bad, [*base(), meta("custom", "cafe0001", "deadbeef", customType="t")])
    result = run("validate", "--format", "json", tmp_path)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    files = {f["file"]: f for f in doc["files"]}
    assert set(files) == {str(v99), str(good), str(bad)}
    assert files[str(v99)]["errors"] == 1
    assert files[str(good)]["errors"] == 0 and files[str(good)]["entries"] == len(base()) - 1
    assert files[str(bad)]["errors"] == 1
    (version_error,) = [e for e in doc["errors"] if e["file"] == str(v99)]
    assert version_error["line"] == 1
    assert "99" in version_error["message"] and "3" in version_error["message"].replace("99", "")


def test_json_format_document(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "mixed.jsonl", meta("frobnicate", "cafe0001", LAST),
                            meta("custom", "cafe0002", "deadbeef", customType="t"))
    result = run("validate", "--format", "json", path, S03)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)  # one JSON document, nothing else on stdout
    assert {"files", "entries", "errors", "warnings"} <= set(doc)
    assert doc["entries"] == 2 * (len(base()) - 1) + 2
    assert len(doc["files"]) == 2
    for problem in doc["errors"] + doc["warnings"]:
        assert {"file", "line", "path", "message"} <= set(problem)
    assert [(e["line"], e["path"]) for e in doc["errors"]] == [(line + 1, "$.parentId")]
    assert [(w["line"], w["path"]) for w in doc["warnings"]] == [(line, "$.type")]


def test_github_format(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "gh.jsonl", meta("custom", "cafe0001", "deadbeef", customType="t"),
                            meta("frobnicate", "cafe0002", "cafe0001"))
    result = run("validate", "--format", "github", path)
    assert result.exit_code == 1
    out = result.stdout.splitlines()
    assert out[0].startswith(f"::error file={path},line={line}::")
    assert "deadbeef" in out[0]
    assert out[1].startswith(f"::warning file={path},line={line + 1}::")


def test_github_escapes_properties(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "a,b:c.jsonl", meta("custom", "cafe0001", "deadbeef", customType="t"))
    out = run("validate", "--format", "github", path).stdout.splitlines()
    assert out[0].startswith(f"::error file={str(path).replace(':', '%3A').replace(',', '%2C')},line={line}::")


def test_text_summary(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "t.jsonl", meta("custom", "cafe0001", "deadbeef", customType="t"))
    result = run("validate", path, S03, V3_FILES[0])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{path}:{line}: error: $.parentId:")
    assert lines[-1].startswith("checked 3 files,")
    assert "1 error" in lines[-1]


def test_text_shows_a_name_with_a_newline_on_one_line(run, tmp_path: Path) -> None:
    """A file name may hold a newline: raw, it split each `file:line:` record (and -v's file line)
    in two. It is spelled \\n, as an error line spells one."""
    path, line = with_extra(tmp_path, "a\nb.jsonl", meta("custom", "cafe0001", "deadbeef", customType="t"))
    shown = str(path).replace("\n", "\\n")
    result = run("validate", path)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{shown}:{line}: error: $.parentId:"), lines
    verbose = run("validate", "-v", path).stdout.splitlines()
    assert len(verbose) == 3, verbose
    assert verbose[0].startswith(f"{shown}: 1 error") and verbose[1].startswith(f"  {shown}:{line}: error:")


def test_missing_path_exits_2(run, tmp_path: Path) -> None:
    result = run("validate", tmp_path / "missing.jsonl", S03)
    assert result.exit_code == 2
    assert "missing.jsonl" in result.stderr
    assert result.stderr.startswith("harnesskit: error:")
    assert "Traceback" not in result.output


def test_validate_never_writes(run, tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    data = S03.read_bytes() + b'{"type":"mess'
    path.write_bytes(data)
    run("validate", path)
    assert path.read_bytes() == data


def _structure(run, path: Path) -> tuple[list[tuple[int, str]], str]:
    """validate's (line, code) problems, and what inspect warns about the same file."""
    _, found = problems(run, path)
    return sorted((p["line"], p["code"]) for p in found), run("inspect", "--no-pager", path).stderr


def test_a_duplicate_ids_own_dangling_parent_is_reported(run, tmp_path: Path) -> None:
    """pi and inspect link parentIds to the later entry of an id: its parent is the one they see."""
    path, line = with_extra(tmp_path, "dup-dangling.jsonl", {**base()[-1], "parentId": "deadbeef"})
    found, warned = _structure(run, path)
    assert found == [(line, "dangling-parent"), (line, "duplicate-id")]
    assert f"line {line}: parentId deadbeef names no entry" in warned


def test_a_duplicate_ids_own_self_parent_is_a_cycle(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "dup-self.jsonl", {**base()[-1], "parentId": LAST})
    found, warned = _structure(run, path)
    assert found == [(line, "cycle"), (line, "duplicate-id")]  # once, at the duplicate
    assert f"line {line}: parentId cycle through {LAST}" in warned


def test_a_duplicate_id_closes_a_cycle_through_its_descendant(run, tmp_path: Path) -> None:
    path, line = with_extra(tmp_path, "dup-cycle.jsonl", meta("custom", "cafe0001", LAST, customType="t"),
                            meta("custom", "cafe0002", "cafe0001", customType="t"),
                            meta("custom", "cafe0001", "cafe0002", customType="t"))
    found, warned = _structure(run, path)
    assert found == [(line + 1, "cycle"), (line + 2, "cycle"), (line + 2, "duplicate-id")]
    assert "parentId cycle through" in warned


def test_a_self_parent_undone_by_a_later_duplicate_is_no_cycle(run, tmp_path: Path) -> None:
    """The first entry's self-parent links to the later entry of its id, a child of LAST: no cycle."""
    path, line = with_extra(tmp_path, "dup-undone.jsonl", meta("custom", "cafe0001", "cafe0001", customType="t"),
                            meta("custom", "cafe0001", LAST, customType="t"))
    found, warned = _structure(run, path)
    assert found == [(line + 1, "duplicate-id")]
    assert "cycle" not in warned
