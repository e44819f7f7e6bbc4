"""validate as a CI step: nothing found fails, -q/-v, stdin, --max-errors, capped annotations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import V3_DIR, assert_one_line_error, read_objects, write_lines

S03 = V3_DIR / "s03_new_tool.jsonl"
TS = "2026-12-01T08:53:36.302Z"


def broken(tmp_path: Path, dangling: int = 1, name: str = "bad.jsonl") -> Path:
    """S03 with `dangling` entries whose parent does not exist (one error each)."""
    objects = read_objects(S03)
    extra = [{"type": "custom", "id": f"cafe{i:04d}", "parentId": "deadbeef", "timestamp": TS, "customType": "t"}
             for i in range(dangling)]
    return write_lines(tmp_path / name, [*objects, *extra])


def test_no_session_files_is_exit_1(run, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a session")
    result = run("validate", tmp_path)
    line = assert_one_line_error(result, 1)
    assert line == f"harnesskit: error: no session files under {tmp_path}"
    assert result.stdout == ""


def test_quiet_prints_problems_only(run, tmp_path: Path) -> None:
    assert run("validate", "-q", S03).stdout == ""
    result = run("validate", "-q", broken(tmp_path), S03)
    assert result.exit_code == 1
    assert [line.split(": ")[1] for line in result.stdout.splitlines()] == ["error"]


def test_verbose_prints_each_file(run, tmp_path: Path) -> None:
    bad = broken(tmp_path)
    result = run("validate", "-v", bad, S03)
    lines = result.stdout.splitlines()
    assert lines[0] == f"{bad}: 1 error, 0 warnings (pi v3, {len(read_objects(S03))} entries)"
    assert lines[1].startswith(f"  {bad}:")
    assert lines[2] == f"{S03}: ok (pi v3, {len(read_objects(S03)) - 1} entries)"
    assert lines[-1].startswith("checked 2 files")
    assert_one_line_error(run("validate", "-q", "-v", S03), 2)


def test_dash_reads_standard_input(tmp_path: Path) -> None:
    """A real pipe (not a seekable file) into a real process."""
    data = broken(tmp_path).read_bytes()
    proc = subprocess.run([sys.executable, "-m", "harnesskit", "validate", "-", "--format", "json"],
                          input=data, capture_output=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["files"][0]["file"] == "<stdin>"
    assert [e["file"] for e in doc["errors"]] == ["<stdin>"]
    clean = subprocess.run([sys.executable, "-m", "harnesskit", "validate", "-"], input=S03.read_bytes(),
                           capture_output=True, timeout=60)
    assert clean.returncode == 0, clean.stderr
    assert clean.stdout.decode().startswith("checked 1 file,")


def test_format_is_case_insensitive(run) -> None:
    for spelling in ("JSON", "Json", "json"):
        result = run("validate", "--format", spelling, S03)
        assert result.exit_code == 0
        assert json.loads(result.stdout)["status"] == "ok"
    assert run("validate", "--format", "GitHub", S03).stdout.startswith("checked 1 file")


def test_max_errors_limits_the_list_not_the_counts(run, tmp_path: Path) -> None:
    result = run("validate", "--max-errors", "3", broken(tmp_path, 8))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert sum(": error: " in line for line in lines) == 3
    assert "... and 5 more problems not shown (--max-errors 3)" in lines
    assert lines[-1].endswith("8 errors, 0 warnings")


def test_github_annotations_are_capped_with_one_total(run, tmp_path: Path) -> None:
    result = run("validate", "--format", "github", broken(tmp_path, 30))
    lines = result.stdout.splitlines()
    assert sum(line.startswith("::error ") for line in lines) == 10
    notices = [line for line in lines if line.startswith("::notice::")]
    assert len(notices) == 1 and "30 errors" in notices[0]
    many = run("validate", "--format", "github", "--max-errors", "25", broken(tmp_path, 30))
    assert sum(line.startswith("::error ") for line in many.stdout.splitlines()) == 25


def test_json_report_status_and_files_checked(run, tmp_path: Path) -> None:
    doc = json.loads(run("validate", "--format", "json", broken(tmp_path), S03).stdout)
    assert doc["status"] == "fail" and doc["files_checked"] == 2
    doc = json.loads(run("validate", "--format", "json", S03).stdout)
    assert doc["status"] == "ok" and doc["files_checked"] == 1
