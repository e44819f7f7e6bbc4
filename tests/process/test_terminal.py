"""What only a real terminal shows: the session picker, Ctrl-C at the prompt, the banner.
Each test drives harnesskit in a pseudo-terminal with pexpect."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from writeside_helpers import Env, invoke, isolate, messages_of, read_lines, session_files

pexpect = pytest.importorskip("pexpect")

UP, DOWN, ENTER, ESC, CTRL_C, CTRL_D = "\x1b[A", "\x1b[B", "\r", "\x1b", "\x03", "\x04"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def spawn(env: Env, *args: str, **extra: str):  # noqa: ANN201 - pexpect.spawn
    return pexpect.spawn(sys.executable, ["-m", "harnesskit", *args], cwd=str(env.cwd),
                         env=env.environ(TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1", **extra), encoding="utf-8",
                         timeout=30, dimensions=(30, 100))


def named(env: Env, name: str, prompt: str) -> Path:
    before = set(session_files(env.home))
    assert invoke("chat", "-p", prompt, "-p", f"/name {name}").exit_code == 0
    [path] = set(session_files(env.home)) - before
    return path


def finish(child) -> int:  # noqa: ANN001
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def test_pick_filters_and_resumes_the_chosen_session(env: Env) -> None:
    alpha = named(env, "alpha work", "hello")
    beta = named(env, "beta work", "hello")
    gamma = named(env, "gamma", "hello")
    child = spawn(env, "continue", "--pick")
    child.expect("filter>")
    child.expect("gamma")  # newest first
    child.send("work")  # filters out gamma
    child.send(DOWN)  # the second of the matches: alpha (beta is newer)
    child.send(ENTER)
    child.expect("Restored 2 messages")
    child.expect("you>")
    child.sendline("what is 2+2")
    child.expect("2\\+2 = 4")
    child.expect("you>")
    child.send(CTRL_D)
    assert finish(child) == 0
    assert len(messages_of(read_lines(alpha))) == 6  # + user, tool call, result, answer
    assert len(messages_of(read_lines(beta))) == 2 and len(messages_of(read_lines(gamma))) == 2


def test_pick_escape_leaves_without_writing(env: Env) -> None:
    path = named(env, "only", "hello")
    before = path.read_bytes()
    child = spawn(env, "continue", "--pick")
    child.expect("filter>")
    child.send("zzz")
    child.expect("no session matches")
    child.send(ESC)
    assert finish(child) == 130
    assert path.read_bytes() == before


def test_pick_all_shows_other_directories(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    path = named(env, "from elsewhere", "hello")
    other = env.tmp / "other"
    other.mkdir()
    env.cwd = other
    child = spawn(env, "continue", "--pick")
    child.expect("no session to pick")
    assert finish(child) == 1
    child = spawn(env, "continue", "--pick", "--all")
    child.expect("from elsewhere")
    child.send(ENTER)
    child.expect("you>")
    child.send(CTRL_D)
    assert finish(child) == 0
    assert len(messages_of(read_lines(path))) == 2


def test_pick_needs_a_terminal(env: Env) -> None:
    named(env, "x", "hello")
    result = invoke("continue", "--pick")
    assert result.exit_code == 2 and "--pick needs a terminal" in result.stderr


def test_ctrl_c_clears_the_line_then_leaves_on_an_empty_one(env: Env) -> None:
    child = spawn(env, "chat")
    child.expect("you>")
    child.send("what is 12*8")  # typed, not sent
    child.send(CTRL_C)  # clears it: the chat goes on
    child.send("hello" + ENTER)
    child.expect("Hello!")
    child.expect("you>")
    child.send(CTRL_C)  # on an empty line: leaves
    assert finish(child) == 0
    [path] = session_files(env.home)
    assert [m["content"][0]["text"] for m in messages_of(read_lines(path)) if m["role"] == "user"] == ["hello"]


def test_ctrl_d_leaves(env: Env) -> None:
    child = spawn(env, "chat")
    child.expect("you>")
    child.send(CTRL_D)
    assert finish(child) == 0
    assert session_files(env.home) == []


def test_banner_names_model_session_and_help(env: Env) -> None:
    child = spawn(env, "chat", "--color", "never")
    child.expect("harnesskit chat · model harnesskit/demo")
    child.expect("session: new")
    child.expect("/help for commands")
    child.expect("you>")
    child.send("hello" + ENTER)
    child.expect("Hello!")
    child.send(CTRL_D)
    assert finish(child) == 0
    [path] = session_files(env.home)
    child = spawn(env, "continue", "--color", "never")  # a reopened session is named by its path
    child.expect_exact(f"session: {path}")
    child.expect("Restored 2 messages")
    child.expect("you>")
    child.send(CTRL_D)
    assert finish(child) == 0


def test_spinner_until_the_first_token(env: Env) -> None:
    script = env.cwd / "slow.yaml"
    script.write_text("replies:\n  - text: at last\n    delay: 1.5\n", encoding="utf-8")
    child = spawn(env, "chat", "--model", f"script:{script}")
    child.expect("you>")
    child.send("hi" + ENTER)
    child.expect("thinking…")  # while the model says nothing
    child.expect("\x1b\\[Kat last")  # erased before the answer
    child.expect("you>")
    child.send(CTRL_D)
    assert finish(child) == 0


def test_colour_on_a_terminal_and_no_color(env: Env) -> None:
    child = spawn(env, "chat", "-p", "what is 12*8")
    child.expect("\x1b\\[36m\\[tool\\] calc")  # a terminal: the tool line in colour
    assert finish(child) == 0
    child = spawn(env, "chat", "-p", "what is 12*8", NO_COLOR="1")
    child.expect(pexpect.EOF)
    assert "[tool] calc" in child.before and "\x1b[36m" not in child.before


def test_pick_shows_a_time_no_date_holds_as_unknown(env: Env) -> None:
    """A last message timed in microseconds (year 57971 read as ms) is listed, its time as "?"."""
    from catalog_corpus import START_MS, iso

    from harnesskit.session.store import encode_cwd

    path = env.sessions / encode_cwd(str(env.cwd)) / "2026-01-01T00-00-00-000Z_late.jsonl"
    path.parent.mkdir(parents=True)
    lines = [{"type": "session", "version": 3, "id": "late", "timestamp": iso(START_MS), "cwd": str(env.cwd)},
             {"type": "message", "id": "00000001", "parentId": None, "timestamp": iso(START_MS),
              "message": {"role": "user", "content": "late one", "timestamp": START_MS * 1000}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    child = spawn(env, "continue", "--pick")
    child.expect("filter>")
    child.expect(r"> \? {15}  {4}1 msgs  late one")
    child.send(ESC)
    assert finish(child) == 130
