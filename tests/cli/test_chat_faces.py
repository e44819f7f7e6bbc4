"""What chat shows: --json events on stdout, colour only where asked or on a terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from writeside_helpers import Env, hk, invoke, isolate, messages_of, only_session, read_lines

from harnesskit.cli.screen import event_json, use_color


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def test_json_mode_writes_the_agents_events_as_json_lines(env: Env) -> None:
    result = invoke("chat", "--json", "-p", "what is 12*8")
    assert result.exit_code == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]  # every line parses, nothing else
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_end" and events[0]["message"]["role"] == "user"
    assert kinds[-1] == "agent_end"
    assert kinds.count("turn_start") == 2 and kinds.count("turn_end") == 2
    start = next(e for e in events if e["type"] == "tool_execution_start")
    assert (start["toolName"], start["args"]) == ("calc", {"expression": "12*8"})
    end = next(e for e in events if e["type"] == "tool_execution_end")
    assert end["toolCallId"] == start["toolCallId"] and end["isError"] is False
    text = "".join(e["delta"] for e in events if e["type"] == "text_delta")
    assert text.endswith("12*8 = 96.")
    saved = messages_of(read_lines(only_session(env.home)))  # the events are what was saved
    assert [e["message"] for e in events if e["type"] == "message_end"] == saved
    assert events[-1]["messages"] == saved and events[-1]["error"] is None
    assert "[tool]" not in result.stderr and "session:" in result.stderr  # the tools are events now


def test_json_mode_for_a_failure(env: Env) -> None:
    result = invoke("chat", "--json", "--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1", "-p", "hi")
    assert result.exit_code == 1
    last = json.loads(result.stdout.splitlines()[-1])
    assert last["type"] == "agent_end" and "connection" in last["error"]


def test_event_json_refuses_what_is_not_an_event() -> None:
    with pytest.raises(TypeError):
        event_json("text")  # type: ignore[arg-type]


def test_no_colour_into_a_pipe_unless_always(env: Env) -> None:
    plain = hk(env, "chat", "-p", "what is 12*8")
    assert "\x1b[" not in plain.stdout + plain.stderr  # auto: never colour into a pipe
    forced = hk(env, "chat", "--color", "ALWAYS", "-p", "what is 12*8")
    assert "\x1b[36m[tool] calc" in forced.stderr
    assert "\x1b[" not in forced.stdout  # the answer itself is never styled
    never = hk(env, "chat", "--color", "never", "-p", "what is 12*8")
    assert "\x1b[" not in never.stderr


def test_use_color_honours_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert use_color("auto", Tty()) is True  # type: ignore[arg-type]
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color("auto", Tty()) is False  # type: ignore[arg-type]
    assert use_color("always", Tty()) is True  # type: ignore[arg-type]
