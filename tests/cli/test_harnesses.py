"""Claude Code and Codex files of our own (fixtures/claude-code, fixtures/codex: every line type) and
damaged variants made in tmp_path, through the CLI: what is read, what validate says (in the
harness's terms), import, and what is refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import FIXTURES, assert_one_line_error, write_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from writeside_helpers import SESSION_NAME, Env, assert_pi_shape, assert_strict_valid, invoke, isolate

CLAUDE = FIXTURES / "claude-code" / "streamed-tools-compaction.jsonl"
CODEX = FIXTURES / "codex" / "rollout-2026-03-02T09-00-00-019d0000-1111-7222-8333-444455556666.jsonl"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def raw(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def rows(*args: object) -> list[dict]:
    result = invoke(*args)
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def report(*args: object) -> tuple[int, list[dict]]:
    result = invoke("validate", *args, "--format", "json")
    data = json.loads(result.stdout)
    return result.exit_code, data["errors"] + data["warnings"]


def codes(problems: list[dict]) -> list[tuple[int, str, str]]:
    return sorted((p["line"], p["code"], p["severity"]) for p in problems)


# -- Claude Code: what is read ------------------------------------------------------------------------

def test_claude_every_line_is_kept_as_what_it_is() -> None:
    entries = rows("inspect", CLAUDE, "--json")
    assert entries[0]["dialect"] == "claude-code"
    assert entries[0]["header"] == {"type": "session", "version": 3, "id": "11111111-2222-4333-8444-555555555555",
                                    "timestamp": "2026-03-01T10:00:01.000Z", "cwd": "/home/dev/proj"}
    kinds = {e["line"]: e["entry"].get("customType") or e["type"] for e in entries[1:] if e["type"] != "session_info"}
    source = raw(CLAUDE)
    # every line is an entry, except the later lines of a streamed response (merged into its first)
    # and the isCompactSummary prompt (the compaction's summary)
    merged = {5, 6, 8, 18}
    assert set(kinds) == set(range(1, len(source) + 1)) - merged
    assert kinds[1] == "claude-code/summary" and kinds[2] == "claude-code/file-history-snapshot"
    assert kinds[7] == "claude-code/progress" and kinds[11] == "claude-code/queue-operation"
    assert kinds[13] == "claude-code/system/turn_duration" and kinds[16] == "claude-code/custom-title"
    assert kinds[17] == "compaction" and kinds[19] == "claude-code/future-line-type"
    custom = next(e["entry"] for e in entries if e["line"] == 19)
    assert custom["data"] == source[18]  # the line itself, untouched
    stats = rows("inspect", CLAUDE, "--stats", "--json")[0]
    assert stats["roles"] == {"assistant": 4, "user": 3, "toolResult": 2}


def test_claude_streamed_response_is_one_message_counted_once() -> None:
    entries = rows("inspect", CLAUDE, "--json")
    response = next(e["entry"]["message"] for e in entries if e["line"] == 4)
    assert [b["type"] for b in response["content"]] == ["thinking", "text", "toolCall", "toolCall"]
    assert response["content"][0] == {"type": "thinking", "thinking": "I should read the file first.",
                                      "thinkingSignature": "sig-A"}
    assert response["content"][2] == {"type": "toolCall", "id": "toolu_read", "name": "Read",
                                       "arguments": {"file_path": "/home/dev/proj/hello.py"}}
    # the last line's usage snapshot (output grew from 5 to 42), once, not once per line
    assert response["usage"]["output"] == 42 and response["stopReason"] == "toolUse"
    assert response["provider"] == "anthropic" and response["model"] == "claude-sonnet-4-5"
    tokens = rows("inspect", CLAUDE, "--stats", "--json")[0]["tokens"]
    # input_tokens excludes the cache: pi's input is the same number; total = all four
    assert tokens == {"input": 10 + 3 + 4 + 6, "output": 42 + 20 + 8 + 12, "cacheRead": 1000 + 1300 + 1400 + 500,
                      "cacheWrite": 200 + 50 + 0 + 900, "totalTokens": 23 + 82 + 4200 + 1150}


def test_claude_parallel_tool_results_follow_their_response_in_the_context() -> None:
    """Claude hangs the two results off different lines of the response; pi's context needs both
    after the call, so they are chained. The leaf's context is the compaction's, so look at the
    branch before it."""
    entries = rows("inspect", CLAUDE, "--json")
    ids = {e["line"]: e["id"] for e in entries[1:] if e["type"] != "session_info"}
    before = rows("inspect", CLAUDE, "--context", "--json", "--leaf", ids[15])
    assert [m["role"] for m in before] == ["user", "assistant", "toolResult", "toolResult", "assistant", "user",
                                           "assistant"]
    assert [m.get("toolCallId") for m in before[2:4]] == ["toolu_read", "toolu_ls"]
    assert before[2]["toolName"] == "Read" and before[2]["details"]["file"]["numLines"] == 1


def test_claude_compaction_and_title() -> None:
    context = rows("inspect", CLAUDE, "--context", "--json")
    assert [m["role"] for m in context] == ["compactionSummary", "user", "assistant"]
    assert context[0]["summary"].startswith("This session is being continued")
    assert context[0]["tokensBefore"] == 1500
    assert context[1]["content"][0]["text"] == "What did we change?"
    result = invoke("inspect", CLAUDE)
    assert "name='greeting work'" in result.stdout.splitlines()[0]


def test_claude_own_file_validates_clean_and_unknown_types_never_error() -> None:
    assert report(CLAUDE) == (0, [])
    code, problems = report(CLAUDE, "--strict")
    assert code == 0  # --strict shows the unknown line type, and it stays a warning
    assert codes(problems) == [(19, "unknown-line-type", "warning")]


# -- Claude Code: what validate catches, in the harness's terms ----------------------------------------

def _claude_lines() -> list[dict]:
    return raw(CLAUDE)


def test_claude_torn_last_line_says_where_claude_code_stops(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = CLAUDE.read_bytes()
    path.write_bytes(data + data.splitlines(keepends=True)[14][:40])  # a crash mid-write
    code, problems = report(path)
    assert code == 1
    torn = [p for p in problems if p["code"] == "truncated"]
    assert torn and torn[0]["line"] == 22
    assert "Claude Code before 2.1.121 stops resuming" in torn[0]["message"]
    bad = tmp_path / "bad.jsonl"
    lines = data.splitlines(keepends=True)
    bad.write_bytes(b"".join([*lines[:10], b'{"type":"user", oops\n', *lines[10:]]))
    code, problems = report(bad)
    assert code == 1 and [p["line"] for p in problems if p["code"] == "invalid-json"] == [11]


def test_claude_bookkeeping_only_is_no_conversation(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", _claude_lines()[:2])  # a summary and a snapshot
    code, problems = report(path)
    assert code == 1
    [problem] = [p for p in problems if p["code"] == "no-conversation"]
    assert 'No conversation found' in problem["message"] and "#7004" in problem["message"]


def test_claude_parent_naming_nothing_and_tool_use_without_result(tmp_path: Path) -> None:
    lines = _claude_lines()
    lines[13]["parentUuid"] = "ffffffff-0000-4000-8000-000000000000"  # the "Thanks" prompt
    del lines[8]  # the tool_result of toolu_read (its tool_use is on line 6): the next response follows
    path = write_lines(tmp_path / "s.jsonl", lines)
    code, problems = report(path)
    assert code == 1
    assert codes(problems) == [(6, "unanswered-tool-call", "error"), (13, "dangling-parent", "error")]
    dangling = next(p for p in problems if p["code"] == "dangling-parent")
    assert "stops here" in dangling["message"] and dangling["path"] == "$.parentUuid"
    # a transcript that simply ends while a tool runs: a warning (the harness was interrupted)
    path = write_lines(tmp_path / "end.jsonl", _claude_lines()[:7])
    assert codes(report(path)[1]) == [(6, "unanswered-tool-call", "warning")]


def test_claude_summary_of_another_transcript_is_looked_up_beside_it(tmp_path: Path) -> None:
    project = tmp_path / "-home-dev-proj"
    project.mkdir()
    lines = _claude_lines()
    lines[0]["leafUuid"] = "99999999-0000-4000-8000-000000000001"
    main = write_lines(project / "11111111-2222-4333-8444-555555555555.jsonl", lines)
    assert codes(report(main)[1]) == [(1, "dangling-summary", "warning")]
    other = [dict(o) for o in lines[2:4]]
    other[0].update(uuid="99999999-0000-4000-8000-000000000000", sessionId="22222222-2222-4333-8444-555555555555")
    other[1].update(uuid="99999999-0000-4000-8000-000000000001", parentUuid=other[0]["uuid"],
                    sessionId="22222222-2222-4333-8444-555555555555")
    write_lines(project / "22222222-2222-4333-8444-555555555555.jsonl", other)
    assert report(main) == (0, [])  # it titles a transcript of the same project: fine


def test_claude_subagent_hangs_off_its_parent_transcript(tmp_path: Path, env: Env) -> None:
    project = tmp_path / "-home-dev-proj"
    subagents = project / "11111111-2222-4333-8444-555555555555" / "subagents"
    subagents.mkdir(parents=True)
    main = write_lines(project / "11111111-2222-4333-8444-555555555555.jsonl", _claude_lines())
    sub = [dict(o) for o in _claude_lines()[13:15]]  # a prompt and a reply, as the subagent's
    for o in sub:
        o.update(isSidechain=True, agentId="a1b2c3d", uuid=o["uuid"].replace("00000000", "aaaaaaaa"))
    sub[0]["parentUuid"] = "00000000-0000-4000-8000-000000000012"  # a line of the parent transcript
    sub[1]["parentUuid"] = sub[0]["uuid"]
    agent = write_lines(subagents / "agent-a1b2c3d.jsonl", sub)
    code, problems = report(agent)
    assert code == 0 and codes(problems) == [(1, "foreign-parent", "warning")]
    assert main.name in problems[0]["message"]
    # import: the subagent becomes its own session, linked to the imported parent
    out = env.cwd / "main.jsonl"
    result = invoke("import", main, "-o", out)
    assert result.exit_code == 0, result.stderr
    written = [Path(p) for p in result.stdout.splitlines()]
    assert written[0] == out and written[1] == env.cwd / "main.agent-a1b2c3d.jsonl"
    header = raw(written[1])[0]
    assert header["parentSession"] == str(out.resolve())
    assert header["id"] != raw(out)[0]["id"]  # the subagent's lines carry its parent's session id
    for path in written:
        assert_strict_valid(path)
    assert out.stat().st_mtime_ns >= written[1].stat().st_mtime_ns  # `continue` picks the parent


# -- Codex ----------------------------------------------------------------------------------------------

def test_codex_every_line_is_kept_and_paired() -> None:
    entries = rows("inspect", CODEX, "--json")
    assert entries[0]["dialect"] == "codex"
    assert entries[0]["header"]["id"] == "019d0000-1111-7222-8333-444455556666"
    assert entries[0]["header"]["cwd"] == "/home/dev/proj"
    lines = {e["line"] for e in entries[1:]}
    merged = {11, 12}  # the assistant text and function_call of the response that starts with line 10's reasoning
    assert lines == set(range(1, len(raw(CODEX)) + 1)) - merged
    by_line = {e["line"]: e["entry"] for e in entries[1:] if "." not in e["id"]}
    response = by_line[10]["message"]
    assert [b["type"] for b in response["content"]] == ["thinking", "text", "toolCall"]
    assert response["content"][2]["arguments"] == {"cmd": "wc -l notes.txt"}  # the JSON-string arguments
    assert by_line[15]["message"]["toolCallId"] == "call_wc" and by_line[15]["message"]["toolName"] == "exec_command"
    assert by_line[18]["message"]["content"][0]["arguments"]["input"].startswith("*** Begin Patch")
    assert by_line[20]["message"]["toolName"] == "apply_patch"
    assert by_line[21]["customType"] == "codex/response_item/web_search_call"
    assert by_line[13]["customType"] == "codex/event_msg/token_count"
    assert by_line[28]["customType"] == "codex/future_kind"


def test_codex_usage_counted_once_per_response() -> None:
    tokens = rows("inspect", CODEX, "--stats", "--json")[0]["tokens"]
    # four responses; the repeated token_count (line 17, same total) is not a fifth; cached is inside input
    assert tokens == {"input": 800 + 200 + 300 + 200, "output": 50 + 40 + 30 + 20, "cacheRead": 200 + 900 + 900 + 300,
                      "cacheWrite": 0, "totalTokens": 3940}


def test_codex_context_after_compaction_is_the_replacement_history() -> None:
    context = rows("inspect", CODEX, "--context", "--json")
    assert [m["role"] for m in context] == ["compactionSummary", "user", "user", "assistant"]
    assert context[0]["summary"].startswith("The user asked for the line count")
    assert context[0]["tokensBefore"] == 3420
    assert [m["content"][0]["text"] for m in context[1:]] == ["How many lines does notes.txt have?", "And words?",
                                                                "I would need to run wc -w."]
    assert context[3]["model"] == "gpt-5.3-codex" and context[3]["provider"] == "openai"


def test_codex_prompts_only_in_events_become_turns(tmp_path: Path) -> None:
    """Some Codex versions record the prompt only as a user_message event."""
    lines = [o for o in raw(CODEX)[:16] if not (o["type"] == "response_item" and o["payload"].get("role") == "user")]
    path = write_lines(tmp_path / "rollout-x.jsonl", lines)
    context = rows("inspect", path, "--context", "--json")
    assert [m["role"] for m in context] == ["user", "assistant", "toolResult"]
    assert context[0]["content"][0]["text"] == "How many lines does notes.txt have?"


def test_codex_own_file_validates_clean_and_function_call_without_output(tmp_path: Path) -> None:
    assert report(CODEX) == (0, [])
    code, problems = report(CODEX, "--strict")
    assert code == 0 and codes(problems) == [(28, "unknown-line-type", "warning")]
    lines = raw(CODEX)
    del lines[14]  # the function_call_output of call_wc
    path = write_lines(tmp_path / "rollout-y.jsonl", lines)
    code, problems = report(path)
    assert code == 1 and codes(problems) == [(12, "unanswered-tool-call", "error")]
    assert "call_wc" in problems[0]["message"]
    path = write_lines(tmp_path / "rollout-z.jsonl", raw(CODEX)[:13])
    assert codes(report(path)[1]) == [(12, "unanswered-tool-call", "warning")]


# -- choosing the format, refusing what would damage a foreign file -----------------------------------

def test_from_forces_the_format() -> None:
    assert_one_line_error(invoke("inspect", CLAUDE, "--from", "pi"))
    assert rows("inspect", CLAUDE, "--from", "claude", "--json")[0]["dialect"] == "claude-code"
    result = invoke("validate", "--from", "pi", CLAUDE)
    assert result.exit_code == 1 and "session header" in result.stdout


def test_a_foreign_file_is_never_appended_to_or_rewritten(env: Env, tmp_path: Path) -> None:
    copy = tmp_path / "t.jsonl"
    copy.write_bytes(CLAUDE.read_bytes())
    line = assert_one_line_error(invoke("continue", copy, "-p", "hi", "--model", "demo"))
    assert "harnesskit import" in line
    assert invoke("migrate", copy).exit_code == 2
    assert copy.read_bytes() == CLAUDE.read_bytes()


def test_import_own_files(env: Env) -> None:
    for source in (CLAUDE, CODEX):
        out = env.cwd / f"{source.stem}.pi.jsonl"
        result = invoke("import", source, "-o", out)
        assert result.exit_code == 0, result.stderr
        lines = raw(out)
        assert_pi_shape(lines)
        assert_strict_valid(out)
        assert lines[1]["data"]["format"] == ("claude-code" if source == CLAUDE else "codex")
        assert rows("inspect", out, "--context", "--json") == rows("inspect", source, "--context", "--json")
    assert_one_line_error(invoke("import", env.cwd / "missing.jsonl"))
    assert "nothing to import" in assert_one_line_error(invoke("import", FIXTURES / "pi" / "v3" /
                                                                "s02_continue_tool.jsonl"))


def test_import_of_a_time_no_datetime_holds_falls_back_instead_of_failing(env: Env) -> None:
    """Year 1 with an offset east of UTC is year 0 in UTC: JavaScript's Date holds it, Python's
    datetime does not. The entry takes the header's time, the header the epoch, as for no time."""
    source = env.cwd / "year0.jsonl"
    source.write_text(re.sub(r'"timestamp":"[^"]*"', '"timestamp":"0001-01-01T00:00:00+01:00"',
                             CLAUDE.read_text(encoding="utf-8")), encoding="utf-8")
    out = env.cwd / "year0.pi.jsonl"
    result = invoke("import", source, "-o", out)
    assert result.exit_code == 0, result.stderr
    header, *entries = raw(out)
    assert {header["timestamp"], *(e["timestamp"] for e in entries)} == {"1970-01-01T00:00:00.000Z"}
    assert_strict_valid(out)


def _with_session_id(source: Path, session_id: str) -> list[dict]:
    lines = raw(source)
    for line in lines:
        if "sessionId" in line:  # Claude Code: on every line
            line["sessionId"] = session_id
        if line.get("type") == "session_meta":  # Codex: in the first line's payload
            line["payload"]["id"] = session_id
    return lines


@pytest.mark.parametrize("source", [CLAUDE, CODEX], ids=["claude", "codex"])
@pytest.mark.parametrize("source_id", ["0123456789abcdef0123456789abcde\n", " 0123456789abcdef0123456789abcde",
                                       "{019d0000-1111-7222-8333-444455556666}"])
def test_an_id_uuid_reads_only_leniently_is_no_session_id(env: Env, source: Path, source_id: str) -> None:
    """uuid.UUID takes a newline after 31 hex digits (int() strips whitespace), and braces: such an
    id became the session id as it was, a file name with a newline in it printed over two lines.
    It is an id like any other non-UUID one now: the session gets a UUID derived from it."""
    path = write_lines(env.cwd / "source.jsonl", _with_session_id(source, source_id))
    result = invoke("import", path)
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1 and "\n" not in result.stdout.rstrip("\n")
    out = Path(result.stdout.rstrip("\n"))
    named = SESSION_NAME.match(out.name)
    assert named and out.is_file(), out.name
    lines = raw(out)
    assert lines[0]["id"] == named["id"]
    assert lines[1]["data"]["sessionId"] == source_id  # the source's own id, kept as it was
    assert_strict_valid(out)


def test_an_uppercase_uuid_is_the_session_id_as_pi_spells_it(env: Env) -> None:
    path = write_lines(env.cwd / "source.jsonl", _with_session_id(CLAUDE, "0123ABCD-0000-4000-8000-00000000000F"))
    result = invoke("import", path, "-o", env.cwd / "out.jsonl")
    assert result.exit_code == 0, result.stderr
    assert raw(env.cwd / "out.jsonl")[0]["id"] == "0123abcd-0000-4000-8000-00000000000f"


# -- list --harness -----------------------------------------------------------------------------------

def test_list_harness_finds_this_directorys_sessions_in_each_store(env: Env, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import re

    claude_home, codex_home = tmp_path / "claude-config", tmp_path / "codex-home"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_home))
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    project = claude_home / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(env.cwd))
    project.mkdir(parents=True)
    older = write_lines(project / "11111111-2222-4333-8444-555555555555.jsonl", raw(CLAUDE))
    lines = raw(CLAUDE)
    for o in lines:
        if "sessionId" in o:
            o["sessionId"] = "33333333-2222-4333-8444-555555555555"
    newer = write_lines(project / "33333333-2222-4333-8444-555555555555.jsonl", lines[10:])
    write_lines(project / "agent-a1b2c3d.jsonl", raw(CLAUDE)[13:15])  # a subagent: not a session
    day = codex_home / "sessions" / "2026" / "03" / "02"
    day.mkdir(parents=True)
    mine = raw(CODEX)
    mine[0]["payload"]["cwd"] = str(env.cwd)
    rollout = write_lines(day / CODEX.name, mine)
    write_lines(day / "rollout-2026-03-02T10-00-00-019d0000-1111-7222-8333-999999999999.jsonl", raw(CODEX))  # elsewhere
    for n, path in enumerate((older, rollout, newer)):
        os.utime(path, (1_700_000_000 + n * 60, 1_700_000_000 + n * 60))

    claude = rows("list", "--harness", "claude", "--json")
    assert [Path(r["path"]) for r in claude] == [newer, older]  # newest first
    assert claude[1]["firstMessage"] == "Add a greeting to hello.py and show me the file"
    assert claude[0]["firstMessage"] == "Thanks. Keep it short."
    assert claude[1]["id"] == "11111111-2222-4333-8444-555555555555" and claude[1]["harness"] == "claude"
    codex = rows("list", "--harness", "codex", "--json")
    assert [Path(r["path"]) for r in codex] == [rollout]
    assert codex[0]["firstMessage"] == "How many lines does notes.txt have?" and codex[0]["cwd"] == str(env.cwd)

    imported = invoke("import", older)  # pi sessions of this directory (it and its subagent), newest of all
    assert imported.exit_code == 0, imported.stderr
    everything = rows("list", "--harness", "all", "--json")
    assert [r["harness"] for r in everything] == ["pi", "pi", "claude", "codex", "claude"]
    assert everything[0]["path"] == imported.stdout.splitlines()[0]
    table = invoke("list", "--harness", "all", "-n", "2")
    assert table.exit_code == 0 and len(table.stdout.splitlines()) == 4  # header, rule, two rows
    assert invoke("list", "--harness", "claude", "--all").exit_code == 2


def test_the_readers_are_core_modules() -> None:
    """No Click, no network in the readers, their checks, their stores or the importer."""
    from test_layering import modules_after

    loaded = modules_after("import harnesskit.session.formats.claude, harnesskit.session.formats.codex, "
                           "harnesskit.session.formats.validate, harnesskit.session.formats.stores, "
                           "harnesskit.session.importer")
    assert "click" not in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("openai", "httpx", "prompt_toolkit")}


def test_import_splits_sidechain_lines_of_a_transcript_into_subagent_sessions(env: Env) -> None:
    """Older Claude Code wrote a subagent's lines into the main transcript, marked isSidechain."""
    lines = raw(CLAUDE)[:15]  # up to the "Done" reply
    side = [dict(o) for o in raw(CLAUDE)[13:15]]
    for n, o in enumerate(side):
        o.update(isSidechain=True, agentId="x1", uuid=o["uuid"].replace("00000000", "bbbbbbbb"),
                 parentUuid=None if n == 0 else side[0]["uuid"].replace("00000000", "bbbbbbbb"))
    source = write_lines(env.cwd / "s.jsonl", [*lines[:12], *side, *lines[12:]])
    out = env.cwd / "out.jsonl"
    result = invoke("import", source, "-o", out)
    assert result.exit_code == 0, result.stderr
    main, agent = (Path(p) for p in result.stdout.splitlines())
    assert agent == env.cwd / "out.agent-x1.jsonl"
    main_context = rows("inspect", main, "--context", "--json")
    agent_context = rows("inspect", agent, "--context", "--json")
    assert [m["content"][0]["text"] for m in agent_context] == ["Thanks. Keep it short.", "Done: one line added."]
    assert len(main_context) == 7 and main_context[-1]["content"][0]["text"] == "Done: one line added."
    assert raw(agent)[0]["parentSession"] == str(main.resolve())
    assert len(raw(main)) == len(raw(invoke_import_plain(env, lines)))  # nothing of the sidechain in the main
    for path in (main, agent):
        assert_strict_valid(path)


def invoke_import_plain(env: Env, lines: list[dict]) -> Path:
    source = write_lines(env.cwd / "plain-source.jsonl", lines)
    out = env.cwd / "plain.jsonl"
    assert invoke("import", source, "-o", out).exit_code == 0
    return out


def test_names_from_a_file_reach_the_terminal_escaped(tmp_path: Path) -> None:
    lines = raw(CLAUDE)[:7]
    lines[5]["message"]["content"][0]["name"] = "Read\x1b[2J\x07"  # a tool name with terminal controls
    path = write_lines(tmp_path / "s.jsonl", lines)
    result = invoke("validate", path)
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "unanswered" not in result.stdout and "no tool_result" in result.stdout


def test_codex_failed_command_and_aborted_turn(tmp_path: Path) -> None:
    lines = raw(CODEX)[:16]
    lines[13]["payload"]["exit_code"] = 2  # exec_command_end of call_wc
    lines.append({"timestamp": "2026-03-02T09:00:02.000Z", "type": "response_item",
                  "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                                   "text": "Trying again"}]}})
    lines.append({"timestamp": "2026-03-02T09:00:02.100Z", "type": "event_msg",
                  "payload": {"type": "turn_aborted", "reason": "interrupted"}})
    path = write_lines(tmp_path / "rollout-a.jsonl", lines)
    context = rows("inspect", path, "--context", "--json")
    assert [m["role"] for m in context] == ["user", "user", "assistant", "toolResult", "assistant"]
    assert context[3]["isError"] is True
    assert context[4]["stopReason"] == "aborted"


# -- hostile input ------------------------------------------------------------------------------------

_ODD = [None, 1, -5, True, "x", [], {}, [1, "a", None], {"type": 1}, [{"type": "tool_use"}],
        [{"type": "tool_result", "content": 5}], "00000000-0000-4000-8000-000000000012"]


def _fields(o: object) -> list[tuple[dict | list, object]]:
    """Every (container, key) below `o`, in walk order."""
    out: list[tuple[dict | list, object]] = []
    items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
    for key, value in items:
        out.append((o, key))  # type: ignore[arg-type]
        out += _fields(value)
    return out


def _mutated(lines: list[dict], choices: list[tuple[int, int, int]]) -> list[dict]:
    """Replace the k-th field (in walk order) of line n with an odd value."""
    lines = json.loads(json.dumps(lines))
    for n, k, v in choices:
        fields = _fields(lines[n % len(lines)])
        if fields:
            holder, key = fields[k % len(fields)]
            holder[key] = json.loads(json.dumps(_ODD[v % len(_ODD)]))  # type: ignore[index]
    return lines


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=st.sampled_from([CLAUDE, CODEX]),
       choices=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 400), st.integers(0, 20)), min_size=1,
                        max_size=6))
def test_odd_values_never_crash_and_import_stays_openable(tmp_path: Path, source: Path,
                                                          choices: list[tuple[int, int, int]]) -> None:
    path = write_lines(tmp_path / "odd.jsonl", _mutated(raw(source), choices))
    for mode in ([], ["--tree"], ["--context"], ["--stats"], ["--json"]):
        result = invoke("inspect", path, *mode)
        assert result.exit_code in (0, 2) and "internal error" not in result.stderr, (mode, result.stderr)
    result = invoke("validate", path)
    assert result.exit_code in (0, 1) and "internal error" not in result.stderr, result.stderr
    out = tmp_path / "odd.pi.jsonl"
    out.unlink(missing_ok=True)
    result = invoke("import", path, "-o", out)
    assert result.exit_code in (0, 2) and "internal error" not in result.stderr, result.stderr
    if result.exit_code == 0:
        assert invoke("validate", "--strict", out).exit_code == 0, invoke("validate", out).stdout
