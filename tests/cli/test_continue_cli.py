"""`harnesskit continue`: which session, what is restored, and what is appended (nothing else)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import V1_LARGE, requires_shared
from writeside_helpers import (
    V3_FILES,
    Env,
    assert_chain,
    assert_one_error,
    assert_pi_shape,
    assert_strict_valid,
    copy_fixture,
    hk,
    invoke,
    isolate,
    messages_of,
    only_session,
    problems,
    read_lines,
    roles,
    session_files,
)

from harnesskit.agent.models.demo import GREETING_REPLY
from harnesskit.session.loader import load_session
from harnesskit.session.store import encode_cwd
from harnesskit.session.tree import build_context

RESTORED_6 = "Restored 6 messages: user → assistant → user → assistant → toolResult → assistant"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def first_chat() -> Path:
    result = invoke("chat", "-p", "hello", "-p", "what is 12*8")
    assert result.exit_code == 0, result.stderr
    files = [p for p in (Path(os.environ["HARNESSKIT_HOME"]) / "sessions").rglob("*.jsonl")]
    assert len(files) == 1
    return files[0]


def restored_line(notes: str) -> str:
    return next(line for line in notes.splitlines() if line.startswith("Restored "))


def stat_key(path: Path) -> tuple[bytes, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_mtime_ns, st.st_size


def leaf_of(path: Path) -> str:
    return read_lines(path)[-1]["id"]


# -- nothing to continue ---------------------------------------------------------------------------

def test_no_session_says_so_and_starts_a_new_one(env: Env) -> None:
    result = invoke("continue", "-p", "hello")
    assert result.exit_code == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if line.startswith("harnesskit:")]
    assert len(warning) == 1 and warning[0].startswith("harnesskit: warning: no session found in ")
    assert "starting a new one" in warning[0]
    assert "Restored" not in result.output
    assert result.stdout == GREETING_REPLY + "\n"
    path = only_session(env.home)
    assert path.parent.name == encode_cwd(os.getcwd())
    assert roles(read_lines(path)) == ["user", "assistant"]
    assert_strict_valid(path)


def test_no_session_and_nothing_said_creates_nothing(env: Env) -> None:
    result = invoke("continue", input="")
    assert result.exit_code == 0
    assert "no session found" in result.stderr
    assert session_files(env.tmp) == []


# -- restoring ---------------------------------------------------------------------------------------

def test_continue_restores_and_answers_from_context(env: Env) -> None:
    path = first_chat()
    before = path.read_bytes()
    old_leaf = leaf_of(path)

    result = invoke("continue", "-p", "what did you compute before?")
    assert result.exit_code == 0, result.stderr
    notes = result.stderr.splitlines()
    assert notes[0] == RESTORED_6
    assert notes[1] == "Last message: 12*8 = 96."
    [answer] = result.stdout.splitlines()  # stdout: the answer, nothing else
    assert "96" in answer and "12*8" in answer

    after = path.read_bytes()
    assert after.startswith(before)
    lines = read_lines(path)
    new = lines[len(before.splitlines()):]
    # same model as before: nothing but the two messages is appended
    assert [e["type"] for e in new] == ["message", "message"]
    assert [e["message"]["role"] for e in new] == ["user", "assistant"]
    assert_chain(new, old_leaf)
    assert "96" in new[1]["message"]["content"][0]["text"]
    assert_pi_shape(lines)
    assert_strict_valid(path)
    assert len(build_context(load_session(path).tree).messages) == 8


def test_continue_by_path_and_by_id_prefix(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = first_chat()
    session_id = read_lines(path)[0]["id"]

    result = invoke("continue", path, "-p", "hello")
    assert result.exit_code == 0, result.stderr
    assert RESTORED_6 in result.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a prefix is looked up here first, then in every directory
    result = invoke("continue", session_id[:13], "-p", "what did you compute before?")
    assert result.exit_code == 0, result.stderr
    assert "Restored 8 messages" in result.stderr
    assert len(messages_of(read_lines(path))) == 10
    assert session_files(env.sessions / encode_cwd(str(elsewhere))) == []

    assert_one_error(invoke("continue", "ffffffff-none", "-p", "x"))
    assert_one_error(invoke("continue", str(tmp_path / "missing.jsonl"), "-p", "x"))


def test_ambiguous_id_prefix_is_refused(env: Env) -> None:
    here = env.sessions / encode_cwd(os.getcwd())
    a = copy_fixture(V3_FILES[0], here)  # s01 and s02 share a header id
    b = copy_fixture(V3_FILES[1], here)
    assert read_lines(a)[0]["id"] == read_lines(b)[0]["id"]
    before = (a.read_bytes(), b.read_bytes())
    line = assert_one_error(invoke("continue", read_lines(a)[0]["id"][:8], "-p", "x"))
    assert "ambiguous" in line
    assert (a.read_bytes(), b.read_bytes()) == before


@pytest.mark.parametrize("how", ["eof", "exit", "help", "tree", "subprocess"])
def test_restore_and_leave_leaves_file_byte_identical(env: Env, how: str) -> None:
    path = first_chat()
    # a fixture too: its model is not runnable, so a model_change is pending and must not be written
    fixture = copy_fixture(V3_FILES[-1], env.tmp / "fx")
    for target in (path, fixture):
        before = stat_key(target)
        if how == "subprocess":
            done = hk(env, "continue", target, input="")
            assert done.returncode == 0, done.stderr
            stdout = done.stderr
        else:
            args = {"eof": (), "exit": ("-p", "/exit"), "help": ("-p", "/help"), "tree": ("-p", "/tree")}[how]
            result = invoke("continue", target, *args, input="")
            assert result.exit_code == 0, result.stderr
            stdout = result.stderr
        assert "Restored " in stdout
        assert stat_key(target) == before, how


def test_continue_with_empty_prompt_list_via_no_arguments(env: Env) -> None:
    path = first_chat()
    before = stat_key(path)
    result = invoke("continue", input="\n   \n")  # blank lines are no prompts
    assert result.exit_code == 0
    assert RESTORED_6 in result.stderr
    assert stat_key(path) == before


def test_continue_no_session_writes_nothing(env: Env) -> None:
    path = first_chat()
    before = stat_key(path)
    result = invoke("continue", "--no-session", "-p", "what did you compute before?")
    assert result.exit_code == 0, result.stderr
    assert RESTORED_6 in result.stderr
    assert "96" in result.stdout
    assert "not saved" in result.stderr
    assert stat_key(path) == before


def test_fork_command_in_a_continued_fixture(env: Env) -> None:
    """/fork before anything was appended: the source stays byte-identical, and the model switch
    still pending (fake -> demo) goes into the new file before its first message."""
    path = copy_fixture(V3_FILES[1], env.tmp / "fx")  # s02
    before = stat_key(path)
    result = invoke("continue", path, "-p", "/fork", "-p", "what did you compute before?")
    assert result.exit_code == 0, result.stderr
    assert stat_key(path) == before
    forked = only_session(env.home)
    lines = read_lines(forked)
    assert lines[0]["parentSession"] == str(path.resolve())
    old = read_lines(path)
    new = lines[len(old):]
    assert [e["type"] for e in new] == ["model_change", "message", "message"]
    assert (new[0]["provider"], new[0]["modelId"]) == ("harnesskit", "demo")
    assert_chain(new, old[-1]["id"])
    assert len(build_context(load_session(forked).tree).messages) == 8  # the whole path came along
    assert problems(forked) == []


# -- every pi fixture --------------------------------------------------------------------------------

@pytest.mark.parametrize("fixture", V3_FILES, ids=[p.stem for p in V3_FILES])
def test_continue_each_pi_fixture(env: Env, fixture: Path) -> None:
    path = copy_fixture(fixture, env.tmp / "copies")
    before = path.read_bytes()
    old = read_lines(path)
    old_leaf = old[-1]["id"]
    old_context = build_context(load_session(path).tree)

    result = invoke("continue", path, "-p", "hello there")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert f"Restored {len(old_context.messages)} messages" in result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("harnesskit:")]
    assert sum("fake" in w and "harnesskit runs" in w for w in warnings) == 1  # the unrunnable model, said once
    assert all(line.startswith("harnesskit: warning:") for line in warnings)

    after = path.read_bytes()
    assert after.startswith(before)
    lines = read_lines(path)
    new = lines[len(old):]
    assert [e["type"] for e in new] == ["model_change", "message", "message"]
    assert (new[0]["provider"], new[0]["modelId"]) == ("harnesskit", "demo")
    assert new[0]["parentId"] == old_leaf
    assert_chain(new, old_leaf)
    assert [e["message"]["role"] for e in new[1:]] == ["user", "assistant"]
    assert new[2]["message"]["model"] == "demo"
    assert_pi_shape([lines[0], *new])
    assert problems(path) == []
    result = invoke("validate", path)
    assert result.exit_code == 0, result.stdout

    context = build_context(load_session(path).tree)
    assert context.model == {"provider": "harnesskit", "modelId": "demo"}
    assert context.messages[: len(old_context.messages)] == old_context.messages


def test_no_model_change_when_model_given_matches(env: Env) -> None:
    path = first_chat()
    n = len(read_lines(path))
    result = invoke("continue", path, "--model", "demo", "-p", "hello")
    assert result.exit_code == 0
    assert [e["type"] for e in read_lines(path)[n:]] == ["message", "message"]


# -- --from ------------------------------------------------------------------------------------------

# 5e03ac9e is a user message: as pi's tree navigation, the branch starts at its parent (1444fb6e)
# and the message's text is offered again, so a branch never starts with a dangling user message.
@pytest.mark.parametrize("ref,target", [("checkpoint-1", "1444fb6e"), ("5e03ac9e", "1444fb6e"), ("47ba3", "47ba3f09")])
def test_from_branches_in_place(env: Env, ref: str, target: str) -> None:
    path = copy_fixture(V3_FILES[[p.stem for p in V3_FILES].index("s12_meta_entries")], env.tmp / "fx")
    before = path.read_bytes()
    n = len(read_lines(path))
    expected_context = build_context(load_session(path).tree, target)

    result = invoke("continue", path, "--from", ref, "-p", "hello")
    assert result.exit_code == 0, result.stderr
    roles_line = " → ".join(m["role"] for m in expected_context.messages)
    assert restored_line(result.stderr) == f"Restored {len(expected_context.messages)} messages: {roles_line}"

    assert path.read_bytes().startswith(before)
    new = read_lines(path)[n:]
    assert new[0]["parentId"] == target  # a branch hanging off the entry, in the same file
    assert_chain(new, target)
    session = load_session(path)
    context = build_context(session.tree)  # the leaf is now the new reply
    assert context.messages[: len(expected_context.messages)] == expected_context.messages
    assert [m["role"] for m in context.messages[len(expected_context.messages):]] == ["user", "assistant"]
    assert problems(path) == []


def test_from_unknown_entry_is_refused(env: Env) -> None:
    path = copy_fixture(V3_FILES[0], env.tmp / "fx")
    before = stat_key(path)
    line = assert_one_error(invoke("continue", path, "--from", "nothere", "-p", "hello"))
    assert "nothere" in line
    assert stat_key(path) == before


# -- most recent -------------------------------------------------------------------------------------

def test_most_recent_is_newest_valid_by_mtime(env: Env) -> None:
    older = first_chat()
    result = invoke("chat", "-p", "what is 2+3")
    assert result.exit_code == 0
    newer = next(p for p in session_files(env.home) if p != older)
    # make the file with the later name the OLDER one: mtime decides, not the name
    os.utime(newer, (1_000_000, 1_000_000))
    os.utime(older, (2_000_000, 2_000_000))
    junk = older.parent / "9999-junk.jsonl"
    junk.write_bytes(b"this is not a session\n")
    torn = older.parent / "9999-torn-header.jsonl"
    torn.write_bytes(b'{"type":"session","version":3,"id":"abc')
    for p in (junk, torn):
        os.utime(p, (3_000_000, 3_000_000))
    junk_before = (junk.read_bytes(), torn.read_bytes())

    result = invoke("continue", "-p", "what did you compute before?")
    assert result.exit_code == 0, result.stderr
    assert RESTORED_6 in result.stderr
    assert "12*8" in result.stdout
    assert len(messages_of(read_lines(older))) == 8
    assert len(messages_of(read_lines(newer))) == 4  # untouched
    assert (junk.read_bytes(), torn.read_bytes()) == junk_before


def test_most_recent_reads_a_long_header(env: Env) -> None:
    path = first_chat()
    lines = path.read_text().splitlines(keepends=True)
    import json

    header = json.loads(lines[0])
    header["note"] = "x" * 200_000  # a header line far longer than any read buffer
    path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    result = invoke("continue", "-p", "what did you compute before?")
    assert result.exit_code == 0, result.stderr
    assert RESTORED_6 in result.stderr


# -- a torn tail --------------------------------------------------------------------------------------

def test_torn_last_line_is_never_glued(env: Env) -> None:
    path = copy_fixture(V3_FILES[1], env.tmp / "fx")  # s02
    old = read_lines(path)
    torn = b'{"type":"message","id":"deadbeef","parentId":"49a38a76","timestamp":"2026-'
    with path.open("ab") as fp:
        fp.write(torn)
    before = path.read_bytes()
    torn_line = len(old) + 1

    result = invoke("continue", path, "-p", "what did you compute before?")
    assert result.exit_code == 0, result.stderr
    assert "truncated" in result.stderr
    data = path.read_bytes()
    assert data.startswith(before + b"\n")
    tail = data[len(before) + 1:].decode().splitlines()
    import json

    new = [json.loads(line) for line in tail]
    assert [e["type"] for e in new] == ["model_change", "message", "message"]
    assert_chain(new, old[-1]["id"])

    errors = problems(path)
    assert errors, "the torn line is still there and must be reported"
    assert all(p.code != "truncated" for p in errors)  # no longer the last line
    assert {p.line for p in errors} == {torn_line}
    assert_pi_shape([old[0], *new])


def test_torn_tail_untouched_when_nothing_is_appended(env: Env) -> None:
    path = copy_fixture(V3_FILES[1], env.tmp / "fx")
    with path.open("ab") as fp:
        fp.write(b'{"type":"mess')
    before = stat_key(path)
    result = invoke("continue", path, input="")
    assert result.exit_code == 0, result.stderr
    assert stat_key(path) == before  # the repair newline goes out only with a first entry


def test_missing_final_newline_keeps_the_last_entry(env: Env) -> None:
    path = copy_fixture(V3_FILES[0], env.tmp / "fx")
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    old = [line for line in path.read_bytes().split(b"\n")]
    result = invoke("continue", path, "-p", "hello")
    assert result.exit_code == 0, result.stderr
    data = path.read_bytes()
    assert data.startswith(b"\n".join(old) + b"\n")
    lines = read_lines(path)
    assert lines[len(old)]["parentId"] == lines[len(old) - 1]["id"]  # the unterminated entry was kept
    assert_strict_valid(path)


@requires_shared
def test_legacy_pi_v1_file_is_refused_for_writing(env: Env) -> None:
    """v1 entries get their ids from line order on every read, so appended entries would lose
    their own ids and parents (a --from branch would silently read back as a continuation)."""
    v1 = V1_LARGE
    path = copy_fixture(v1, env.tmp / "legacy")
    before = stat_key(path)
    for args in (("-p", "hello"), ("--from", read_ids_via_inspect(path)[4], "-p", "hello")):
        line = assert_one_error(invoke("continue", path, *args))
        assert "migrate" in line and "fork" in line
        assert stat_key(path) == before

    result = invoke("continue", path, "--no-session", "-p", "hello")  # reading it is fine
    assert result.exit_code == 0, result.stderr
    assert stat_key(path) == before

    migrated = invoke("migrate", path)
    assert migrated.exit_code == 0, migrated.stderr
    ids_on_read = read_ids_via_inspect(path)
    result = invoke("continue", path, "--from", ids_on_read[4], "-p", "hello")
    assert result.exit_code == 0, result.stderr
    lines = read_lines(path)
    assert [e["id"] for e in lines[1:len(ids_on_read) + 1]] == ids_on_read
    assert read_ids_via_inspect(path) == [e["id"] for e in lines[1:]]  # what is written is what is read
    assert lines[len(ids_on_read) + 1]["parentId"] == ids_on_read[4]
    assert problems(path) == []


def read_ids_via_inspect(path: Path) -> list[str]:
    return [e["id"] for e in load_session(path).entries]


@pytest.mark.parametrize("name", ["demo.jsonl", "demo-first-run.jsonl"])
def test_legacy_tutorial_file_is_refused_for_writing(env: Env, name: str) -> None:
    """A tutorial header with v3 entries under it would be a mixed file pi cannot open."""
    path = copy_fixture(Path(__file__).resolve().parents[2] / "fixtures" / "tutorial" / name, env.tmp / "legacy")
    before = stat_key(path)
    line = assert_one_error(invoke("continue", path, "-p", "hello"))
    assert "tutorial v1" in line and "migrate" in line
    assert stat_key(path) == before


def test_most_recent_skips_a_newer_version_it_cannot_read(env: Env) -> None:
    older = first_chat()
    future = older.parent / "9999-future.jsonl"
    future.write_bytes(b'{"type":"session","version":4,"id":"f","timestamp":"2030-01-01T00:00:00.000Z","cwd":"/"}\n')
    os.utime(future, (4_000_000_000, 4_000_000_000))
    result = invoke("continue", "-p", "what did you compute before?")
    assert result.exit_code == 0, result.stderr
    assert RESTORED_6 in result.stderr
    assert future.read_bytes().count(b"\n") == 1  # untouched
