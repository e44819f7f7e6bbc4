"""Nothing from a session file or a model reaches the terminal raw (issue 6, items 2 and 4).

A hostile file carries ESC/OSC (which retitles the window), CSI, a one-byte C1 CSI (0x9b), DEL,
CR and BS in its ids, cwd, message text, tool names, labels, model and session names; every
command and mode must show them spelled out (``\\x1b``), and `--json` must give back exactly the
file's values. A lone surrogate (valid JSON, opened by pi) must neither crash an output nor stop a
session from being continued.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from writeside_helpers import V3_FILES, Env, hk, invoke, isolate, read_lines, write_script

from harnesskit.cli.output import _unsafe
from harnesskit.cli.render import json_line
from harnesskit.session.store import encode_cwd
from harnesskit.text import escape_json, raw_in_json, visible

# What a terminal acts on: C0 but tab and newline, DEL, C1; and what no encoder writes. JSON escapes these.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# Text for people also spells out the invisible characters that reorder or hide what is around them
# (bidi overrides and isolates, BOM, separators); JSON keeps them, exact (its readers decode them).
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff"
                 "\u061c\u200b\u200e\u200f\u2028-\u202e\u2066-\u206f\ufeff\ufff9-\ufffb]")
EVIL = "\x1b]0;pwned\x07\x1b[31m\x9b\x7f\u202e\r\x08"
EVIL_SHOWN = r"\x1b]0;pwned\x07\x1b[31m\x9b\x7f\u202e\x0d\x08"
EVIL_TEXT_SHOWN = r"\x1b]0;pwned\x07\x1b[31m\x9b\x7f\u202e"  # in summaries, where CR is whitespace made one space
S12 = next(p for p in V3_FILES if p.name == "s12_meta_entries.jsonl")  # labels, name, custom, tools


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def poison(value: object, ids: set[str]) -> object:
    """Every id, reference, name and text of an entry with EVIL appended (references kept consistent)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if isinstance(item, str) and (item in ids or key in ("cwd", "text", "name", "label", "provider",
                                                                  "modelId", "toolName", "customType", "summary",
                                                                  "content")):
                out[key] = item + EVIL
            else:
                out[key] = poison(item, ids)
        return out
    if isinstance(value, list):
        return [poison(v, ids) for v in value]
    return value


def hostile_file(directory: Path) -> tuple[Path, list[dict]]:
    objects = [json.loads(line) for line in S12.read_text(encoding="utf-8").splitlines()]
    ids = {o["id"] for o in objects}
    objects = [poison(o, ids) for o in objects]
    objects.append({"type": "mystery" + EVIL, "id": "feedface", "parentId": objects[-1]["id"],
                    "timestamp": "2026-12-01T08:53:47.000Z"})
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "2026-12-01T08-53-34-001Z_01a230cf-2eb1-72c4-b2ff-010f77fef347.jsonl"
    path.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in objects), encoding="utf-8")
    return path, objects


def assert_clean(result: object, json_out: bool = False) -> None:
    for stream in ("stdout", "stderr"):
        text = getattr(result, stream)
        match = (CONTROL if json_out and stream == "stdout" else RAW).search(text)
        around = "" if match is None else text[max(match.start() - 60, 0):match.end() + 20]
        assert match is None, f"raw {match.group()!r} on {stream}: {around!r}"


TEXT_MODES = [[], ["--tree"], ["--context"], ["--stats"], ["--format", "github"], ["--tree", "--width", "60"],
              ["--context", "--format", "grid"], ["--stats", "--format", "plain"]]


@pytest.mark.parametrize("mode", TEXT_MODES, ids=" ".join)
def test_inspect_text_modes_show_control_characters_visibly(env: Env, mode: list[str]) -> None:
    path, _ = hostile_file(env.tmp / "in")
    result = invoke("inspect", path, *mode)
    assert result.exit_code == 0, result.stderr
    assert_clean(result)
    assert EVIL_SHOWN in result.stdout  # shown, not dropped


@pytest.mark.parametrize("mode", [[], ["--tree"], ["--context"], ["--stats"]], ids=" ".join)
def test_inspect_json_is_exact_and_clean(env: Env, mode: list[str]) -> None:
    path, objects = hostile_file(env.tmp / "in")
    result = invoke("inspect", path, "--json", *mode)
    assert result.exit_code == 0, result.stderr
    assert_clean(result, json_out=True)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    if not mode:
        assert rows[0]["header"] == objects[0]
        assert [r["entry"] for r in rows[1:]] == objects[1:]
    elif mode == ["--tree"]:
        assert [r["entry"] for r in rows] == objects[1:]
    elif mode == ["--context"]:
        assert any(EVIL in json.dumps(m) or any(EVIL in str(v) for v in m.values()) for m in rows)
        assert any(m.get("toolName") == "bash" + EVIL for m in rows)
    else:
        assert rows[0]["tool_calls"] == {"bash" + EVIL: 1}


def test_inspect_on_a_real_pipe_sends_no_escape_byte(env: Env) -> None:
    path, _ = hostile_file(env.tmp / "in")
    for mode in ([], ["--tree"], ["--json"]):
        proc = hk(env, "inspect", path, *mode)
        mode = [m for m in mode if m == "--json"]
        assert proc.returncode == 0, proc.stderr
        assert (CONTROL if mode else RAW).search(proc.stdout) is None and RAW.search(proc.stderr) is None
        assert "\x1b" not in proc.stdout + proc.stderr


def test_list_shows_names_and_ids_visibly(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the name column grows with the terminal
    hostile_file(env.sessions / encode_cwd(os.getcwd()))
    for args in (["list"], ["list", "--all"]):
        result = invoke(*args)
        assert result.exit_code == 0, result.stderr
        assert_clean(result)
        assert "Peer demo session" + EVIL_TEXT_SHOWN[:20] in result.stdout  # cut to the name column
    result = invoke("list", "--json")
    assert_clean(result, json_out=True)
    row = json.loads(result.stdout)
    assert row["name"] == "Peer demo session" + EVIL and row["cwd"] == "/home/dev/proj" + EVIL


def test_validate_and_fork_quote_content_visibly(env: Env) -> None:
    path, _ = hostile_file(env.tmp / "in")
    for args in ([], ["--format", "github"], ["--format", "json"]):
        result = invoke("validate", path, *args)
        assert result.exit_code in (0, 1), result.stderr
        assert_clean(result)
    result = invoke("fork", path, "--session-dir", env.tmp / "forks")
    assert result.exit_code == 0, result.stderr
    assert_clean(result)


def test_continue_and_chat_show_file_and_model_text_visibly(env: Env) -> None:
    path, _ = hostile_file(env.tmp / "in")
    script = write_script(env.tmp / "evil.yaml", [
        {"text": "reply " + EVIL, "chunks": 3,
         "tool_calls": [{"name": "calc" + EVIL, "arguments": {"expression": "1+1" + EVIL}},
                        {"name": "calc", "arguments": {"expression": "2" + EVIL}}]},
        {"text": "done " + EVIL},
    ])
    result = invoke("continue", path, "--no-session", "--model", f"script:{script}",
                    "-p", "go", "-p", "/tree", "-p", "/model")
    assert result.exit_code == 0, result.stderr
    assert_clean(result)
    out, notes = result.stdout, result.stderr  # the answers; the chat's notes
    assert "Last message: " in notes and EVIL_TEXT_SHOWN in notes.split("Last message: ")[1].splitlines()[0]
    assert "reply " + EVIL_SHOWN in out and "done " + EVIL_SHOWN in out  # the streamed replies, exactly
    assert any(line.startswith("[tool] calc" + EVIL_SHOWN) for line in notes.splitlines())
    assert any(line.startswith("[result] calc" + EVIL_SHOWN) for line in notes.splitlines())
    assert "← leaf" in notes  # /tree ran
    # the warnings quote the file (its cwd; without --model, its model) and stay one line each
    warnings = [line for line in notes.splitlines() if line.startswith("harnesskit:")]
    assert len(warnings) == 1 and "pwned" in warnings[0]
    result = invoke("continue", path, "--no-session", "-p", "hello")
    assert result.exit_code == 0, result.stderr
    assert_clean(result)
    warnings = [line for line in result.stderr.splitlines() if line.startswith("harnesskit:")]
    assert len(warnings) == 2 and all(w.startswith("harnesskit: warning: ") and "pwned" in w for w in warnings)


def test_an_error_quoting_the_file_is_one_visible_line(env: Env) -> None:
    path, _ = hostile_file(env.tmp / "in")
    result = invoke("inspect", path, "--leaf", "nothere")
    assert result.exit_code == 2
    assert_clean(result)
    assert [line for line in result.stderr.splitlines() if "error" in line][0].startswith("harnesskit: error: ")
    bad = env.tmp / "bad.jsonl"
    bad.write_text(json.dumps({"type": "session", "version": "3\n" + EVIL, "id": "x", "cwd": "/"}) + "\n")
    result = invoke("inspect", bad)
    assert result.exit_code == 2
    assert_clean(result)
    assert len(result.stderr.splitlines()) == 1


# -- lone surrogates (item 4) ------------------------------------------------------------------

def surrogate_file(directory: Path) -> Path:
    """s02 with a lone surrogate escape in its last message and in a tool's name: valid JSON."""
    src = next(p for p in V3_FILES if p.name == "s02_continue_tool.jsonl").read_text(encoding="utf-8")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "sur.jsonl"
    path.write_text(src.replace("(tool said: 96)", "(tool said: \\ud800 96)").replace('"name":"bash"',
                                                                                        '"name":"ba\\udfffsh"'))
    return path


@pytest.mark.parametrize("mode", [[], ["--tree"], ["--context"], ["--stats"]], ids=" ".join)
def test_lone_surrogate_is_shown_escaped_in_every_mode(env: Env, mode: list[str]) -> None:
    path = surrogate_file(env.tmp / "in")
    result = invoke("inspect", path, *mode)
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert_clean(result)
    assert r"\ud800" in result.stdout or r"\udfff" in result.stdout
    result = invoke("inspect", path, "--json", *mode)
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert_clean(result)
    dumped = json.dumps([json.loads(line) for line in result.stdout.splitlines()])
    assert "\\ud800" in dumped or "\\udfff" in dumped  # the same lone surrogate, decoded back exactly
    if not mode:
        last = json.loads(result.stdout.splitlines()[-1])
        assert last["entry"]["message"]["content"][0]["text"].endswith("(tool said: \ud800 96)")


def test_a_session_with_a_lone_surrogate_can_be_continued(env: Env) -> None:
    path = surrogate_file(env.tmp / "in")
    before = path.read_bytes()
    result = invoke("continue", path, "-p", "hello", "-p", "odd \udcff prompt", "-p", "what is 12*8")
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert_clean(result)
    assert r"Last message: The result of 12*8 is 96. (tool said: \ud800 96)" in result.stderr
    assert path.read_bytes().startswith(before)
    lines = read_lines(path)  # every line decodes (strict UTF-8, JSON)
    prompts = [e["message"]["content"][0]["text"] for e in lines[1:]
               if e["type"] == "message" and e["message"]["role"] == "user"]
    assert "odd \udcff prompt" in prompts  # written as the escape JSON.stringify writes: exact
    assert b"odd \\udcff prompt" in path.read_bytes()
    assert invoke("validate", path).exit_code == 0
    again = invoke("continue", path, "-p", "once more")  # and reopened again
    assert again.exit_code == 0, again.stderr


def test_a_session_whose_header_holds_a_lone_surrogate_is_listed_and_found(env: Env,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # room for the whole name
    src = next(p for p in V3_FILES if p.name == "s12_meta_entries.jsonl").read_text(encoding="utf-8")
    src = src.replace('"cwd":"/home/dev/proj"', '"cwd":"/home/dev/pr\\ud800oj"', 1)
    src = src.replace('"name":"Peer demo session"', '"name":"Peer \\udfff session"', 1)
    directory = env.sessions / encode_cwd(os.getcwd())
    directory.mkdir(parents=True)
    path = directory / "2026-12-01T08-53-34-001Z_01a230cf-2eb1-72c4-b2ff-010f77fef347.jsonl"
    path.write_text(src, encoding="utf-8")
    result = invoke("list")
    assert result.exit_code == 0, result.stderr
    assert_clean(result)
    assert r"Peer \udfff session" in result.stdout
    row = json.loads(invoke("list", "--json").stdout)
    assert (row["cwd"], row["name"]) == ("/home/dev/pr\ud800oj", "Peer \udfff session")
    result = invoke("continue", "-p", "hello")  # the most recent session here: this one
    assert result.exit_code == 0, result.stderr
    assert_clean(result)
    assert "\nRestored " in result.stderr
    assert read_lines(path)[-1]["message"]["role"] == "assistant"


# -- the two functions, for any text -----------------------------------------------------------

ANY_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF))  # surrogates too


@given(ANY_TEXT)
def test_visible_leaves_nothing_raw_and_changes_nothing_safe(text: str) -> None:
    shown = visible(text)
    assert RAW.search(shown) is None
    shown.encode("utf-8")  # always encodable (raises otherwise)
    if RAW.search(text) is None:
        assert shown == text
    assert visible(shown) == shown


# the byte checks that let a chunk skip the patterns, on text rich in their lead bytes (c2, d8, e2, ef)
NEAR_MISSES = "\x85\x9f\xa0\u061b\u061c\u200a\u200b\u200c\u200d\u200e\u2014\u201c\u2027\u2028\u202e\u202f" \
    "\u2065\u2066\u206f\u2070\ufeff\ufefe\ufff8\ufff9\ufffb\ufffc\uff0c\x7f\x1b\t\n"
NO_SURROGATE = (st.lists(st.sampled_from(NEAR_MISSES + "a é漢"), max_size=8).map("".join)
                | st.text(alphabet=st.characters(exclude_categories=("Cs",))))


@given(NO_SURROGATE)
def test_byte_checks_agree_with_what_the_patterns_change(text: str) -> None:
    data = text.encode()
    assert raw_in_json(data) >= (escape_json(text) != text)  # it may say yes to a 0xc2 that is no C1
    assert _unsafe(data) == (visible(text) != text)


@given(st.recursive(st.none() | st.booleans() | st.integers() | ANY_TEXT,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
                    max_leaves=12))
def test_json_line_is_exact_and_safe(value: object) -> None:
    line = json_line({"v": value})
    assert CONTROL.search(line) is None and "\n" not in line
    assert json.loads(line) == {"v": value}


def test_a_newline_in_a_file_name_cannot_forge_a_row_of_list(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    directory = env.sessions / encode_cwd(os.getcwd())
    directory.mkdir(parents=True)
    source = S12.read_text(encoding="utf-8")
    (directory / "a\n2026-01-01 00:00  1  forged row.jsonl").write_text(source, encoding="utf-8")
    for args in (["list"], ["list", "--full-path"], ["list", "--all"]):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert len(lines) == 2 and "forged row" not in lines[0], lines  # the heading, and the one session
        assert "a\\n2026-01-01 00:00  1  forged row.jsonl" in lines[1] or args == ["list"], lines
