"""What a user meets when the fast paths see damage (issue 6, items 3 and 7), through the CLI:
`continue` warns about exactly the lines `inspect` warns about and `/tree` works after it; JSON
nested too deep is reported as such on every path; a header with a bad UTF-8 byte opens, as in pi."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from writeside_helpers import V3_FILES, Env, copy_fixture, invoke, isolate

from harnesskit.session.reader import MAX_DEPTH

S10 = next(p for p in V3_FILES if p.name.startswith("s10_"))  # branches: lines off the leaf's path
WARNED_LINE = re.compile(r"^harnesskit: warning: .*?: line (\d+): ")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def warned_lines(stderr: str) -> list[int]:
    return [int(m.group(1)) for m in map(WARNED_LINE.match, stderr.splitlines()) if m]


def damaged_copy(env: Env, at: int, damage: bytes) -> tuple[Path, int]:
    """S10 with `damage` written over the middle of line `at` (its JSON prefix and closing brace
    intact); returns the file and the line number."""
    path = copy_fixture(S10, env.tmp / "copies")
    lines = path.read_bytes().splitlines(keepends=True)
    line = lines[at]
    middle = len(line) // 2
    lines[at] = line[:middle] + damage + line[middle + len(damage):]
    path.write_bytes(b"".join(lines))
    return path, at + 1


@pytest.mark.parametrize("damage", [b"\x00", b"\x1f", b"\xff"], ids=["nul", "ctrl", "utf8"])  # bad anywhere in JSON
def test_continue_warns_about_the_lines_inspect_warns_about(env: Env, damage: bytes) -> None:
    for at in (3, 6, 9):  # on and off the leaf's path
        path, number = damaged_copy(env, at, damage)
        inspected = invoke("inspect", path)
        assert inspected.exit_code == 0, inspected.stderr
        assert warned_lines(inspected.stderr) and number in warned_lines(inspected.stderr), inspected.stderr

        result = invoke("continue", path, "--no-session", "-p", "/tree", "-p", "hi")
        assert result.exit_code == 0, (result.stdout, result.stderr)
        assert "internal error" not in result.stderr and "LazyDecodeError" not in result.output
        assert warned_lines(result.stderr) == warned_lines(inspected.stderr)
        assert "← leaf" in result.stderr  # /tree drew the tree (a note: stdout is the answers only)


def test_tree_after_continue_decodes_every_entry(env: Env) -> None:
    path, number = damaged_copy(env, 4, b"\x00")
    result = invoke("continue", path, "-p", "/tree", "-p", "hi", "-p", "/tree")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count("← leaf") == 2
    assert warned_lines(result.stderr) == warned_lines(invoke("inspect", path).stderr)
    assert invoke("inspect", path, "--tree").exit_code == 0


def nested(depth: int) -> bytes:
    """A custom entry whose line nests `depth` levels deep (its own braces are the first)."""
    inner = b"[" * (depth - 2) + b"]" * (depth - 2)
    return (b'{"type":"custom","customType":"deep","data":{"x":' + inner
            + b'},"id":"deep0001","parentId":null,"timestamp":"2026-12-01T08:53:34.000Z"}\n')


def with_line(env: Env, line: bytes) -> tuple[Path, int]:
    path = copy_fixture(S10, env.tmp / "copies")
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(3, line)
    path.write_bytes(b"".join(lines))
    return path, 4


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 10_000])
def test_too_deep_is_reported_as_too_deep_everywhere(env: Env, depth: int) -> None:
    path, number = with_line(env, nested(depth))
    reason = f"line {number}: nested deeper than {MAX_DEPTH} levels"
    inspected = invoke("inspect", path)
    assert inspected.exit_code == 0
    assert reason in inspected.stderr and "not JSON" not in inspected.stderr, inspected.stderr

    validated = invoke("validate", path, "--format", "json")
    assert validated.exit_code == 1
    (problem,) = [p for p in json.loads(validated.stdout)["errors"] if p["line"] == number]
    assert problem["code"] == "too-deep" and "nested deeper than" in problem["message"]

    continued = invoke("continue", path, "--no-session", "-p", "/tree")
    assert continued.exit_code == 0, continued.stderr
    assert reason in continued.stderr and "not JSON" not in continued.stderr


@pytest.mark.parametrize("fallback", [False, True], ids=["orjson", "stdlib"])
def test_the_deepest_line_read_is_read_on_every_path(env: Env, fallback: bool) -> None:
    """MAX_DEPTH levels are read by orjson, and by the stdlib fallback (a number beyond a double,
    which orjson refuses) whatever the caller's stack; inspect, validate and continue show it."""
    line = nested(MAX_DEPTH)
    if fallback:
        line = line.replace(b'"customType":"deep"', b'"customType":"deep","big":1e400')
    path, number = with_line(env, line)
    inspected = invoke("inspect", path, "--json")
    assert inspected.exit_code == 0, inspected.stderr
    assert f"line {number}" not in inspected.stderr
    assert "deep0001" in inspected.stdout
    validated = invoke("validate", path, "--format", "json")
    doc = json.loads(validated.stdout)
    problems = [p for p in doc["errors"] + doc["warnings"] if p["line"] == number]
    assert not [p for p in problems if p["code"] in ("too-deep", "invalid-json")], problems
    continued = invoke("continue", path, "--no-session", "-p", "/tree")
    assert continued.exit_code == 0, continued.stderr
    assert "deep0001" in continued.stderr and f"line {number}" not in continued.stderr


def test_header_with_a_bad_utf8_byte_opens_as_in_pi(env: Env) -> None:
    path = copy_fixture(S10, env.sessions / "--somewhere--")
    data = path.read_bytes()
    header, rest = data.split(b"\n", 1)
    bad = header.replace(b'"cwd":"', b'"cwd":"\xff', 1)
    assert bad != header
    path.write_bytes(bad + b"\n" + rest)

    inspected = invoke("inspect", path, "--json")
    assert inspected.exit_code == 0, inspected.stderr
    assert warned_lines(inspected.stderr) == [1] and "U+FFFD" in inspected.stderr
    assert json.loads(inspected.stdout.splitlines()[0])["header"]["cwd"].startswith("\ufffd")

    validated = invoke("validate", path, "--format", "json")
    assert validated.exit_code == 0, validated.stdout  # a warning: pi reads the file
    doc = json.loads(validated.stdout)
    codes = [(p["line"], p["code"], p["severity"]) for p in doc["errors"] + doc["warnings"]]
    assert codes == [(1, "invalid-utf8", "warning")]

    continued = invoke("continue", path, "--no-session", "-p", "/tree")
    assert continued.exit_code == 0, continued.stderr
    assert "\nRestored " in continued.stderr and warned_lines(continued.stderr) == [1]

    listed = invoke("list", "--all", "--json")
    assert listed.exit_code == 0, listed.stderr
    assert str(path) in listed.stdout  # list reads the header by the same rule
    assert invoke("index", "-q", path).exit_code == 0
    found = invoke("search", "branch", "--all", "--json")  # so does the catalog
    assert found.exit_code == 0 and str(path) in found.stdout, (found.stdout, found.stderr)


def test_a_line_that_is_not_a_header_with_a_bad_byte_is_still_skipped(env: Env) -> None:
    path, number = with_line(env, b'{"type":"message","id":"bad\xff0001","parentId":null}\n')
    inspected = invoke("inspect", path)
    assert inspected.exit_code == 0
    assert f"line {number}: not UTF-8" in inspected.stderr
    assert warned_lines(invoke("continue", path, "--no-session", "-p", "/tree").stderr) == \
        warned_lines(inspected.stderr)


def test_tree_in_a_chat_whose_file_changed_under_it_is_one_error_line(env: Env) -> None:
    """Entries off the path are read only when /tree needs them; if the file changed in place since
    (another program rewrote a line), /tree says so in one line and the chat goes on."""
    path = copy_fixture(S10, env.tmp / "copies")
    lines = path.read_bytes().splitlines(keepends=True)
    chat = subprocess.Popen([sys.executable, "-m", "harnesskit", "continue", str(path), "--no-session"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env.environ(), cwd=env.cwd)
    try:
        assert chat.stderr is not None and chat.stdin is not None
        seen = [chat.stderr.readline()]  # the notes: warnings, "Restored ...", "Last message: ..."
        while seen[-1] and not seen[-1].startswith("Last message: "):
            seen.append(chat.stderr.readline())
        assert any(line.startswith("Restored ") for line in seen), seen
        at = 6  # off the leaf's path, not decoded yet: same length, not JSON any more
        lines[at] = b"x" * (len(lines[at]) - 1) + b"\n"
        path.write_bytes(b"".join(lines))
        out, err = chat.communicate("/tree\nhello\n", timeout=60)
    finally:
        chat.kill()
    assert chat.returncode == 0, err
    errors = [line for line in err.splitlines() if line.startswith("harnesskit: error:")]
    assert len(errors) == 1 and f"line {at + 1}" in errors[0] and "changed since" in errors[0], err
    assert "internal error" not in err and "Traceback" not in err
    assert "Hello!" in out  # the chat went on (the answer to "hello")
