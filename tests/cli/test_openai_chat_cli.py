"""`harnesskit chat --model openai:...` end to end against a local Chat Completions server:
each case ends in a session file that validates or, when the first turn failed before any reply,
in no file at all; a failure is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from test_openai_model import chunk, server, sse, status, tool_delta, usage_chunk  # noqa: F401 - fixture

from harnesskit.cli import cli
from harnesskit.session.check import check_file
from harnesskit.session.loader import load_session
from harnesskit.session.tree import build_context


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARNESSKIT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HARNESSKIT_SESSION_DIR", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path / "home"


def chat(base_url: str, *prompts: str):  # noqa: ANN201
    args = ["chat", "--model", "openai:test-model", "--base-url", base_url]
    for p in prompts:
        args += ["-p", p]
    return CliRunner().invoke(cli, args)


def only_session(home: Path) -> Path:
    files = list((home / "sessions").rglob("*.jsonl"))
    assert len(files) == 1, files
    return files[0]


def assert_strictly_valid(path: Path) -> None:
    report = check_file(path)
    assert report.problems == [], report.problems


def test_streaming_text_is_saved(server, home: Path) -> None:  # noqa: F811
    server.reply(sse(chunk({"role": "assistant", "content": "Hel"}), chunk({"content": "lo there"}),
                     chunk({}, finish="stop"), usage_chunk(12, 3)))
    result = chat(server.base_url, "hi")
    assert result.exit_code == 0, result.output
    assert "Hello there" in result.stdout
    path = only_session(home)
    assert_strictly_valid(path)
    messages = build_context(load_session(path).tree).messages
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assistant = messages[1]
    assert assistant["content"] == [{"type": "text", "text": "Hello there"}]
    assert (assistant["provider"], assistant["model"], assistant["api"]) == ("openai", "test-model",
                                                                            "openai-completions")
    assert assistant["usage"]["input"] == 12 and assistant["usage"]["output"] == 3


def test_tool_call_round_trip(server, home: Path) -> None:  # noqa: F811
    server.reply(
        sse(chunk({"role": "assistant", "content": None, **tool_delta(0, "", "call_x", "calc")}),
            chunk(tool_delta(0, '{"expression": "7*6"}')), chunk({}, finish="tool_calls")),
        sse(chunk({"content": "7*6 = 42."}), chunk({}, finish="stop")),
    )
    result = chat(server.base_url, "what is 7*6")
    assert result.exit_code == 0, result.output
    assert '[tool] calc {"expression": "7*6"}' in result.stderr
    assert "[result] calc → 42" in result.stderr
    assert result.stdout == "7*6 = 42.\n"
    path = only_session(home)
    assert_strictly_valid(path)
    roles = [m["role"] for m in build_context(load_session(path).tree).messages]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    assert server.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_x", "content": "42"}


@pytest.mark.parametrize(
    "responder, expected",
    [
        (status(500, "the server fell over"), "HTTP 500"),
        (sse("{this is not json", done=False), "malformed stream"),
    ],
    ids=["http-500", "malformed-stream"],
)
def test_failures_exit_1_with_one_line_and_a_valid_file(server, home: Path, responder, expected: str) -> None:  # noqa: F811
    server.reply(sse(chunk({"role": "assistant", "content": "first"}), chunk({}, finish="stop")), responder)
    result = chat(server.base_url, "hi", "again")
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("harnesskit:")]
    assert len(errors) == 1 and errors[0].startswith("harnesskit: error: ") and expected in errors[0]
    assert "Traceback" not in result.output
    path = only_session(home)  # the session existed: the failure is saved in it
    assert_strictly_valid(path)
    last = build_context(load_session(path).tree).messages[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "error"
    assert expected in last["errorMessage"]


@pytest.mark.parametrize("responder", [status(401, "invalid api key"), status(500, "down")], ids=["401", "500"])
def test_a_first_turn_failing_before_any_reply_leaves_no_file(server, home: Path, responder) -> None:  # noqa: F811
    server.reply(responder)
    result = chat(server.base_url, "hi")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "session: not created" in result.stderr
    assert list(home.rglob("*.jsonl")) == []


def test_refused_connection(home: Path) -> None:
    result = chat("http://127.0.0.1:9/v1", "hi")
    assert result.exit_code == 1
    assert "connection" in result.stderr and "Traceback" not in result.output
    assert list(home.rglob("*.jsonl")) == []  # no reply ever came: no file
