"""validate's reporters, one outcome in, the printed lines out (no files, no command)."""

from __future__ import annotations

import json

from harnesskit.cli import reporters
from harnesskit.cli.reporters import Options, Outcome
from harnesskit.session.check import FileReport, Problem


def problem(file: str, line: int, severity: str = "error", message: str = "bad") -> Problem:
    return Problem(file, line, "$.parentId", message, severity, "code")


def outcome(errors: int = 0, warnings: int = 0) -> Outcome:
    bad = FileReport("bad.jsonl", entries=5, dialect="pi v3",
                     problems=[problem("bad.jsonl", i + 2) for i in range(errors)]
                     + [problem("bad.jsonl", 100 + i, "warning") for i in range(warnings)])
    good = FileReport("good.jsonl", entries=3, dialect="pi v3")
    return Outcome([bad, good])


def test_text_default_lists_problems_then_the_summary() -> None:
    lines = reporters.text(outcome(2, 1), Options())
    assert lines == ["bad.jsonl:2: error: $.parentId: bad", "bad.jsonl:3: error: $.parentId: bad",
                     "bad.jsonl:100: warning: $.parentId: bad",
                     "checked 2 files, 8 entries: 2 errors, 1 warning"]


def test_text_quiet_is_problems_only_and_nothing_when_clean() -> None:
    assert reporters.text(outcome(1), Options(verbosity=0)) == ["bad.jsonl:2: error: $.parentId: bad"]
    assert reporters.text(outcome(), Options(verbosity=0)) == []


def test_text_verbose_names_each_file() -> None:
    lines = reporters.text(outcome(1), Options(verbosity=2))
    assert lines[0] == "bad.jsonl: 1 error, 0 warnings (pi v3, 5 entries)"
    assert lines[1] == "  bad.jsonl:2: error: $.parentId: bad"
    assert lines[2] == "good.jsonl: ok (pi v3, 3 entries)"
    assert lines[3].startswith("checked 2 files")


def test_text_max_errors_says_how_many_were_left_out() -> None:
    lines = reporters.text(outcome(5), Options(max_errors=2))
    assert lines[:2] == ["bad.jsonl:2: error: $.parentId: bad", "bad.jsonl:3: error: $.parentId: bad"]
    assert lines[2] == "... and 3 more problems not shown (--max-errors 2)"
    assert lines[3] == "checked 2 files, 8 entries: 5 errors, 0 warnings"  # totals, not the shown ones


def test_github_caps_annotations_at_ten_with_one_total_line() -> None:
    lines = reporters.github(outcome(25, 3), Options())
    annotations = [line for line in lines if line.startswith(("::error", "::warning"))]
    assert len(annotations) == reporters.GITHUB_CAP
    notices = [line for line in lines if line.startswith("::notice::")]
    assert notices == ["::notice::checked 2 files, 8 entries: 25 errors, 3 warnings (first 10 shown)"]


def test_github_max_errors_overrides_the_cap_and_no_notice_when_all_fit() -> None:
    assert len([x for x in reporters.github(outcome(25), Options(max_errors=30)) if x.startswith("::error")]) == 25
    lines = reporters.github(outcome(2), Options(verbosity=0))
    assert lines == ["::error file=bad.jsonl,line=2::$.parentId: bad", "::error file=bad.jsonl,line=3::$.parentId: bad"]


def test_github_escapes_newlines_and_properties() -> None:
    line = reporters.annotation(Problem("a,b:c.jsonl", 0, "$", "two\nlines 100%", "warning", "x"))
    assert line == "::warning file=a%2Cb%3Ac.jsonl::$: two%0Alines 100%25"


def test_json_report_has_status_files_checked_and_totals() -> None:
    [text] = reporters.json_report(outcome(3, 1), Options(max_errors=2))
    doc = json.loads(text)
    assert doc["status"] == "fail"
    assert doc["files_checked"] == 2
    assert len(doc["errors"]) == 2 and doc["warnings"] == [] and doc["truncated"] is True
    assert doc["summary"] == {"files": 2, "entries": 8, "errors": 3, "warnings": 1, "missing": []}
    clean = json.loads(reporters.json_report(outcome(0, 2), Options())[0])
    assert clean["status"] == "ok" and clean["truncated"] is False and len(clean["warnings"]) == 2


def test_missing_paths_make_the_status_fail() -> None:
    assert not Outcome([FileReport("x")], ["gone.jsonl"]).ok
    assert Outcome([FileReport("x")]).ok
