"""Real processes: a crash mid-turn, two writers on one file, Ctrl-C during a turn."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from writeside_helpers import (
    Env,
    Interactive,
    assert_pi_shape,
    assert_strict_valid,
    file_roles,
    hk,
    isolate,
    messages_of,
    problems,
    read_lines,
    session_files,
    wait_for,
    write_script,
)

# the newline early on lets a test see (line by line) that the reply has started streaming
SLOW_TEXT = "Starting.\n" + "This reply streams very slowly, one small piece after another. " * 2


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def the_session(env: Env) -> Path | None:
    files = session_files(env.home)
    assert len(files) <= 1, files
    return files[0] if files else None


def only_torn_tail(path: Path) -> int | None:
    """Assert the file's only errors are one truncated last line; return that line (or None)."""
    errors = problems(path)
    assert len(errors) <= 1, errors
    if not errors:
        return None
    (error,) = errors
    last_line = len(path.read_bytes().split(b"\n"))  # the torn line has no newline after it
    assert error.code == "truncated" and error.line == last_line, error
    return error.line


def test_sigkill_mid_turn_then_continue(env: Env) -> None:
    script = write_script(env.cwd / "slow.yaml", [
        "Hi, first reply.",
        {"text": SLOW_TEXT, "chunks": 60, "delay": 0.05},
    ])
    chat = Interactive(env, "chat", "--model", f"script:{script}", "-p", "hello", "-p", "slow one", feed=False)
    try:
        wait_for(lambda: the_session(env) is not None and file_roles(the_session(env)) == ["user", "assistant",
                                                                                            "user"],
                 what="the first reply and the second prompt on disk")
        chat.expect("Hi, first reply.")
        path = the_session(env)
        assert path is not None
        chat.proc.send_signal(signal.SIGKILL)
        assert chat.wait() == -signal.SIGKILL
    finally:
        chat.kill()

    torn = only_torn_tail(path)
    before = path.read_bytes()
    lines_before = before.split(b"\n")
    last_complete = read_lines_tolerant(path)[-1]
    assert last_complete["message"]["role"] == "user"  # the slow reply never finished: nothing of it saved

    done = hk(env, "continue", path, "-p", "next", "--model", "demo")
    assert done.returncode == 0, done.stderr
    assert "Restored 3 messages: user → assistant → user" in done.stderr
    after = path.read_bytes()
    assert after.startswith(before)
    errors = problems(path)
    assert all(p.line == torn for p in errors), errors
    assert len(errors) == (0 if torn is None else 1)
    new = [json.loads(line) for line in after[len(before):].split(b"\n") if line.strip()]
    assert [e["type"] for e in new] == ["model_change", "message", "message"]
    assert new[0]["parentId"] == last_complete["id"]
    assert new[0]["modelId"] == "demo"
    assert len(lines_before) >= 7


def read_lines_tolerant(path: Path) -> list[dict]:
    out = []
    for line in path.read_bytes().split(b"\n"):
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def test_second_writer_is_refused(env: Env) -> None:
    first = Interactive(env, "chat")
    try:
        first.send("hello")
        first.expect("Hello!")
        path = the_session(env)
        assert path is not None
        before = path.read_bytes()

        refused = hk(env, "continue", path, "-p", "x")
        assert refused.returncode == 2, (refused.stdout, refused.stderr)
        lines = [line for line in refused.stderr.splitlines() if line]
        assert len(lines) == 1 and lines[0].startswith("harnesskit: error: "), refused.stderr
        assert str(first.pid) in lines[0]
        assert "harnesskit fork" in lines[0]
        assert refused.stdout == ""
        assert path.read_bytes() == before

        again = hk(env, "continue", "-p", "x")  # the most recent session is the same file
        assert again.returncode == 2 and str(first.pid) in again.stderr
        assert path.read_bytes() == before

        inspect = hk(env, "inspect", path)
        assert inspect.returncode == 0, inspect.stderr
        assert "hello" in inspect.stdout
        validate = hk(env, "validate", "--strict", path)
        assert validate.returncode == 0, validate.stdout
        listing = hk(env, "list", "--json")
        assert listing.returncode == 0 and str(path) in listing.stdout
        forked = hk(env, "fork", path)  # the suggested way out
        assert forked.returncode == 0, forked.stderr
        assert Path(forked.stdout.strip()).is_file()
        assert path.read_bytes() == before

        first.send("what is 12*8")  # the holder goes on writing
        first.expect("12*8 = 96.")
        assert first.close() == 0
    finally:
        first.kill()

    assert [m["role"] for m in messages_of(read_lines(path))] == ["user", "assistant", "user", "assistant",
                                                                  "toolResult", "assistant"]
    done = hk(env, "continue", path, "-p", "what did you compute before?")  # lock released on exit
    assert done.returncode == 0, done.stderr
    assert "96" in done.stdout
    assert_strict_valid(path)


def test_sigint_during_first_turn(env: Env) -> None:
    script = write_script(env.cwd / "slow.yaml", [{"text": SLOW_TEXT, "chunks": 60, "delay": 0.05}])
    chat = Interactive(env, "chat", "--model", f"script:{script}", "-p", "slow one", feed=False)
    try:
        chat.expect("Starting.")  # mid-turn: the reply has begun streaming
        assert the_session(env) is None  # lazily created: still nothing on disk mid-turn
        chat.proc.send_signal(signal.SIGINT)
        code = chat.wait()
    finally:
        chat.kill()
    assert code == 130, ("".join(chat.out), "".join(chat.err))
    assert "Traceback" not in "".join(chat.err)

    path = the_session(env)
    assert path is not None, "an aborted first reply still creates the file"
    lines = read_lines(path)
    assert_pi_shape(lines)
    msgs = messages_of(lines)
    assert [m["role"] for m in msgs] == ["user", "assistant"]
    assert msgs[-1]["stopReason"] == "aborted"
    assert msgs[-1]["errorMessage"]
    partial = msgs[-1]["content"]
    assert partial == [] or (partial[0]["type"] == "text" and SLOW_TEXT.startswith(partial[0]["text"])
                             and partial[0]["text"] != SLOW_TEXT)
    assert_strict_valid(path)

    done = hk(env, "continue", path, "-p", "again", "--model", "demo")
    assert done.returncode == 0, done.stderr
    assert "Restored 2 messages: user → assistant" in done.stderr
    assert_strict_valid(path)
    assert [m["role"] for m in messages_of(read_lines(path))] == ["user", "assistant", "user", "assistant"]


def test_sigint_at_the_piped_prompt_ends_the_chat(env: Env) -> None:
    chat = Interactive(env, "chat")
    try:
        chat.send("hello")
        chat.expect("Hello!")
        chat.send("/model")  # once this is answered the chat is back waiting for a line
        chat.expect("model: harnesskit/demo")
        time.sleep(0.3)
        chat.proc.send_signal(signal.SIGINT)
        code = chat.wait()
    finally:
        chat.kill()
    assert code == 0, "".join(chat.err)
    assert not any(line.startswith(("harnesskit:", "Traceback")) for line in chat.err), chat.err
    path = the_session(env)
    assert path is not None
    assert [m["role"] for m in messages_of(read_lines(path))] == ["user", "assistant"]
    assert_strict_valid(path)


def test_sigint_during_a_piped_turn(env: Env) -> None:
    script = write_script(env.cwd / "slow.yaml", ["quick one", {"text": SLOW_TEXT, "chunks": 60, "delay": 0.05}])
    chat = Interactive(env, "chat", "--model", f"script:{script}")
    try:
        chat.send("hello")
        chat.expect("quick one")
        chat.send("slow please")
        chat.expect("Starting.")
        chat.proc.send_signal(signal.SIGINT)
        code = chat.wait()
    finally:
        chat.kill()
    assert code == 130, "".join(chat.err)
    assert "Traceback" not in "".join(chat.err)
    path = the_session(env)
    assert path is not None
    msgs = messages_of(read_lines(path))
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant"]
    assert msgs[-1]["stopReason"] == "aborted"
    assert_strict_valid(path)
