"""The agent loop with the demo and script models: messages, event order, failures, Ctrl-C."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnesskit.agent.events import (
    AgentEnd,
    MessageEnd,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
)
from harnesskit.agent.loop import ABORTED_MESSAGE, drive, run_agent
from harnesskit.agent.messages import (
    assistant_message,
    make_usage,
    text_of,
    to_llm_messages,
    tool_result_message,
    user_message,
)
from harnesskit.agent.models import DoneChunk, TextChunk, ToolCallChunk, resolve_model
from harnesskit.agent.models.demo import GREETING_REPLY, find_expression
from harnesskit.agent.tools import TOOLS, Tool, ToolError

ALL_TOOLS = list(TOOLS.values())
USAGE_KEYS = {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}


def chat(context: list[dict], prompt: str, model: Any, tools: list[Tool] | None = None, **kw: Any) -> list:
    """Run one prompt and return all events (the context is extended in place)."""
    return list(run_agent(context, user_message(prompt), model, ALL_TOOLS if tools is None else tools, **kw))


def persisted(events: list) -> list[dict]:
    """What a session layer would append: the message of every MessageEnd, in order."""
    return [e.message for e in events if isinstance(e, MessageEnd)]


def roles(messages: list[dict]) -> list[str]:
    return [m["role"] for m in messages]


def assert_pi_assistant(message: dict) -> None:
    for key in ("content", "api", "provider", "model", "usage", "stopReason", "timestamp"):
        assert key in message, key
    assert set(message["usage"]) == USAGE_KEYS
    assert set(message["usage"]["cost"]) == {"input", "output", "cacheRead", "cacheWrite", "total"}
    assert isinstance(message["timestamp"], int) and message["timestamp"] > 1_600_000_000_000


# ---------------------------------------------------------------- demo model


def test_demo_greeting(tmp_path: Path) -> None:
    context: list[dict] = []
    events = chat(context, "hello", resolve_model("demo"), cwd=tmp_path)
    assert roles(context) == ["user", "assistant"]
    assert persisted(events) == context
    assistant = context[1]
    assert_pi_assistant(assistant)
    assert assistant["content"] == [{"type": "text", "text": GREETING_REPLY}]
    assert (assistant["api"], assistant["provider"], assistant["model"]) == ("harnesskit-demo", "harnesskit", "demo")
    assert assistant["stopReason"] == "stop"
    assert assistant["usage"]["input"] > 0 and assistant["usage"]["output"] > 0
    assert assistant["usage"]["totalTokens"] == assistant["usage"]["input"] + assistant["usage"]["output"]
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1 and "".join(deltas) == GREETING_REPLY
    assert isinstance(events[-1], AgentEnd) and not events[-1].aborted and events[-1].error is None
    assert events[-1].messages == context


def test_demo_calc_round_trip_and_event_order(tmp_path: Path) -> None:
    context: list[dict] = []
    events = chat(context, "what is 12*8", resolve_model("demo"), cwd=tmp_path)
    assert roles(context) == ["user", "assistant", "toolResult", "assistant"]
    user, call_msg, result, final = context
    assert call_msg["content"] == [
        {"type": "text", "text": "Let me calculate."},
        {"type": "toolCall", "id": "call_1", "name": "calc", "arguments": {"expression": "12*8"}},
    ]
    assert call_msg["stopReason"] == "toolUse"
    assert result == {
        "role": "toolResult",
        "toolCallId": "call_1",
        "toolName": "calc",
        "content": [{"type": "text", "text": "96"}],
        "isError": False,
        "timestamp": result["timestamp"],
    }
    assert text_of(final) == "12*8 = 96." and final["stopReason"] == "stop"

    kinds = [type(e).__name__ for e in events if not isinstance(e, TextDelta)]
    assert kinds == [
        "MessageEnd",  # user
        "TurnStart",
        "MessageEnd",  # assistant with the toolCall
        "ToolCall",
        "ToolResult",
        "MessageEnd",  # toolResult
        "TurnEnd",
        "TurnStart",
        "MessageEnd",  # final assistant
        "TurnEnd",
        "AgentEnd",
    ]
    assert [e.turn for e in events if isinstance(e, TurnStart)] == [1, 2]
    assert [e.message for e in events if isinstance(e, TurnEnd)] == [call_msg, final]
    assert next(e for e in events if isinstance(e, ToolCall)).call == call_msg["content"][1]
    assert next(e for e in events if isinstance(e, ToolResult)).message is result
    assert persisted(events) == context
    # Every message is already in the context when its MessageEnd arrives (the session layer relies on it).
    seen: list[dict] = []
    fresh: list[dict] = []
    for event in run_agent(fresh, user_message("what is 2+2"), resolve_model("demo"), ALL_TOOLS, cwd=tmp_path):
        if isinstance(event, MessageEnd):
            seen.append(event.message)
            assert fresh[: len(seen)] == seen
    assert json.loads(json.dumps(fresh)) == fresh


def test_demo_recalls_from_restored_context(tmp_path: Path) -> None:
    model = resolve_model("demo")
    context: list[dict] = []
    chat(context, "hello", model, cwd=tmp_path)
    chat(context, "what is 12*8", model, cwd=tmp_path)
    # Simulate a restart: a brand-new model instance and a context read back from JSON.
    restored = json.loads(json.dumps(context))
    events = chat(restored, "what did you compute before?", resolve_model("demo"), cwd=tmp_path)
    answer = restored[-1]
    assert roles(persisted(events)) == ["user", "assistant"]
    assert text_of(answer) == "Earlier I computed 12*8, and the result was 96."
    # The answer really comes from the context: change the stored result and the answer follows.
    tampered = copy.deepcopy(context)
    tampered[4]["content"][0]["text"] = "97"
    chat(tampered, "what was the result?", resolve_model("demo"), cwd=tmp_path)
    assert text_of(tampered[-1]) == "Earlier I computed 12*8, and the result was 97."


def test_demo_nothing_computed_yet(tmp_path: Path) -> None:
    context: list[dict] = []
    chat(context, "what did you compute?", resolve_model("demo"), cwd=tmp_path)
    assert text_of(context[-1]) == "I have not computed anything yet."


def test_demo_tool_call_ids_count_calls_in_context(tmp_path: Path) -> None:
    model = resolve_model("demo")
    context: list[dict] = []
    chat(context, "what is 12*8", model, cwd=tmp_path)
    chat(context, "and 7 * 6?", model, cwd=tmp_path)
    calls = [b for m in context if m["role"] == "assistant" for b in m["content"] if b["type"] == "toolCall"]
    assert [c["id"] for c in calls] == ["call_1", "call_2"]
    assert text_of(context[-1]) == "7 * 6 = 42."


def test_demo_other_prompts_and_calc_errors(tmp_path: Path) -> None:
    model = resolve_model("demo")
    context: list[dict] = []
    chat(context, "tell me about sessions", model, cwd=tmp_path)
    assert "tell me about sessions" in text_of(context[-1])
    chat(context, "what is 1/0", model, cwd=tmp_path)
    assert context[-2]["isError"] is True and "division by zero" in text_of(context[-2])
    assert text_of(context[-1]).startswith("I could not calculate 1/0")
    chat(context, "what is 3*3", model, [], cwd=tmp_path)  # no tools enabled
    assert "not enabled" in text_of(context[-1]) and context[-1]["stopReason"] == "stop"


@pytest.mark.parametrize(
    ("prompt", "expression"),
    [("what is 12*8", "12*8"), ("what is 12*8?", "12*8"), ("compute (1+2)*3.", "(1+2)*3"), ("hello 12", None)],
)
def test_find_expression(prompt: str, expression: str | None) -> None:
    assert find_expression(prompt) == expression


# ---------------------------------------------------------------- script model


def write_script(tmp_path: Path, text: str) -> str:
    path = tmp_path / "script.yaml"
    path.write_text(text, encoding="utf-8")
    return f"script:{path}"


def test_script_replies_tool_calls_and_thinking(tmp_path: Path) -> None:
    spec = write_script(
        tmp_path,
        """
model: scripted
replies:
  - thinking: "I should add."
    text: "Adding."
    tool_calls: [{name: calc, arguments: {expression: "2+2"}}]
  - text: "2+2 = 4, done."
    chunks: 4
    usage: {input: 7, output: 5}
""",
    )
    model = resolve_model(spec)
    context: list[dict] = []
    events = chat(context, "add", model, cwd=tmp_path)
    assert roles(context) == ["user", "assistant", "toolResult", "assistant"]
    first = context[1]
    assert [b["type"] for b in first["content"]] == ["thinking", "text", "toolCall"]
    assert first["content"][2]["id"] == "call_1" and first["model"] == "scripted"
    assert text_of(context[2]) == "4"
    assert [e.text for e in events if isinstance(e, ThinkingDelta)] == ["I should add."]
    after_tool = events[next(i for i, e in enumerate(events) if isinstance(e, ToolResult)) :]
    second_deltas = [e.text for e in after_tool if isinstance(e, TextDelta)]
    assert len(second_deltas) == 4 and "".join(second_deltas) == "2+2 = 4, done."
    assert context[3]["usage"]["input"] == 7 and context[3]["usage"]["totalTokens"] == 12


def test_script_error_becomes_error_assistant(tmp_path: Path) -> None:
    spec = write_script(tmp_path, '- text: "partial answer"\n  error: "HTTP 500 from the script"\n')
    context: list[dict] = []
    events = chat(context, "hi", resolve_model(spec), cwd=tmp_path)
    assistant = context[-1]
    assert_pi_assistant(assistant)
    assert assistant["stopReason"] == "error"
    assert assistant["errorMessage"] == "HTTP 500 from the script"
    assert assistant["content"] == [{"type": "text", "text": "partial answer"}]
    assert assistant["usage"] == make_usage()
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.error == "HTTP 500 from the script" and not end.aborted
    assert [type(e).__name__ for e in events[-3:]] == ["MessageEnd", "TurnEnd", "AgentEnd"]


def test_script_error_without_text_has_empty_content(tmp_path: Path) -> None:
    spec = write_script(tmp_path, '- error: "Connection error."\n')
    context: list[dict] = []
    chat(context, "hi", resolve_model(spec), cwd=tmp_path)
    assert context[-1]["content"] == [] and context[-1]["errorMessage"] == "Connection error."


def test_script_exhausted(tmp_path: Path) -> None:
    model = resolve_model(write_script(tmp_path, "- one\n"))
    context: list[dict] = []
    chat(context, "a", model, cwd=tmp_path)
    assert text_of(context[-1]) == "one"
    events = chat(context, "b", model, cwd=tmp_path)
    assert events[-1].error == "script exhausted after 1 replies"
    assert context[-1]["stopReason"] == "error"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- text: [unclosed\n", "not valid YAML"),
        ("just a string\n", "expected a list of replies"),
        ("- {text: hi, colour: red}\n", "unknown key"),
        ("- {tool_calls: [{arguments: {}}]}\n", "needs a 'name'"),
        ("- {chunks: 0}\n", "'chunks' must be an integer"),
        ("- {stop_reason: done}\n", "'stop_reason' must be one of"),
        ("- {text: a, text: b}\n", "not valid YAML"),
    ],
)
def test_script_bad_files(tmp_path: Path, text: str, message: str) -> None:
    spec = write_script(tmp_path, text)
    with pytest.raises(ValueError, match=message):
        resolve_model(spec)


def test_resolve_model_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="script file not found"):
        resolve_model(f"script:{tmp_path / 'missing.yaml'}")
    with pytest.raises(ValueError, match="unknown model spec 'gpt'"):
        resolve_model("gpt")
    with pytest.raises(ValueError, match="missing its MODEL"):
        resolve_model("openai:")


# ---------------------------------------------------------------- tool failures


class OneCall:
    """A model that calls one tool, then answers with the text of what came back."""

    api, provider, model_id = "test-api", "test", "one-call"

    def __init__(self, name: str, arguments: dict | None = None, calls: int = 1) -> None:
        self.name, self.arguments, self.calls = name, arguments or {}, calls

    def stream(self, messages: list[dict], tools: list[Tool]) -> Iterator:
        if messages[-1]["role"] == "toolResult":
            yield TextChunk("saw: " + text_of(messages[-1]))
            yield DoneChunk("stop")
            return
        for n in range(self.calls):
            yield ToolCallChunk(f"c{n}", self.name, dict(self.arguments))
        yield DoneChunk("toolUse", {"input": 3, "output": 2}, "resp-1")


def _raising_tool(exc: BaseException) -> Tool:
    def run(arguments: dict, cwd: Path) -> str:
        raise exc

    return Tool("boom", "always fails", {"type": "object"}, run)


def test_tool_raising_becomes_error_result(tmp_path: Path) -> None:
    context: list[dict] = []
    events = chat(context, "go", OneCall("boom"), [_raising_tool(RuntimeError("disk on fire"))], cwd=tmp_path)
    result = context[2]
    assert result["role"] == "toolResult" and result["isError"] is True
    assert text_of(result) == "boom failed: RuntimeError: disk on fire"
    assert text_of(context[-1]) == "saw: boom failed: RuntimeError: disk on fire"
    assert context[1]["responseId"] == "resp-1" and context[1]["usage"]["totalTokens"] == 5
    assert events[-1].error is None


def test_tool_error_message_is_passed_on(tmp_path: Path) -> None:
    context: list[dict] = []
    chat(context, "go", OneCall("boom"), [_raising_tool(ToolError("nope, refused"))], cwd=tmp_path)
    assert text_of(context[2]) == "nope, refused" and context[2]["isError"] is True


def test_unknown_tool_becomes_error_result(tmp_path: Path) -> None:
    context: list[dict] = []
    chat(context, "go", OneCall("bash", {"command": "rm -rf /"}), [TOOLS["calc"]], cwd=tmp_path)
    assert context[2]["isError"] is True
    assert text_of(context[2]) == "unknown tool 'bash' (available: calc)"
    assert context[2]["toolCallId"] == "c0" and context[2]["toolName"] == "bash"


def test_tools_run_in_the_given_cwd(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk", encoding="utf-8")
    context: list[dict] = []
    chat(context, "go", OneCall("read", {"path": "notes.txt"}), ALL_TOOLS, cwd=tmp_path)
    assert text_of(context[2]) == "remember the milk"


def test_max_turns(tmp_path: Path) -> None:
    class Forever(OneCall):
        def stream(self, messages: list[dict], tools: list[Tool]) -> Iterator:
            yield ToolCallChunk(f"c{len(messages)}", "calc", {"expression": "1+1"})
            yield DoneChunk("toolUse")

    context: list[dict] = []
    events = chat(context, "loop", Forever("calc"), ALL_TOOLS, cwd=tmp_path, max_turns=3)
    assert roles(context) == ["user"] + ["assistant", "toolResult"] * 3
    assert "stopped after 3 turns" in events[-1].error


# ---------------------------------------------------------------- Ctrl-C


class InterruptedStream:
    api, provider, model_id = "test-api", "test", "interrupted"

    def stream(self, messages: list[dict], tools: list[Tool]) -> Iterator:
        yield TextChunk("partial ")
        yield TextChunk("text")
        raise KeyboardInterrupt


def test_interrupt_while_streaming_keeps_partial_text(tmp_path: Path) -> None:
    context: list[dict] = []
    events = chat(context, "go", InterruptedStream(), cwd=tmp_path)
    assistant = context[-1]
    assert roles(context) == ["user", "assistant"]
    assert assistant["stopReason"] == "aborted"
    assert assistant["errorMessage"] == ABORTED_MESSAGE == "Request was aborted"
    assert assistant["content"] == [{"type": "text", "text": "partial text"}]
    assert assistant["usage"] == make_usage()
    assert persisted(events) == context
    assert isinstance(events[-1], AgentEnd) and events[-1].aborted and events[-1].error is None


def test_interrupt_during_tool_execution_closes_every_call(tmp_path: Path) -> None:
    context: list[dict] = []
    tool = _raising_tool(KeyboardInterrupt())
    events = chat(context, "go", OneCall("boom", calls=2), [tool], cwd=tmp_path)
    assert roles(context) == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    call_ids = [b["id"] for b in context[1]["content"] if b["type"] == "toolCall"]
    assert [r["toolCallId"] for r in context[2:4]] == call_ids
    assert all(r["isError"] and text_of(r) == "aborted" for r in context[2:4])
    assert context[-1]["stopReason"] == "aborted" and context[-1]["content"] == []
    assert persisted(events) == context
    assert events[-1].aborted


def test_interrupt_in_consumer_is_thrown_back_by_drive(tmp_path: Path) -> None:
    """Ctrl-C while the CLI prints a delta: drive() throws it in and the run still ends cleanly."""
    spec = write_script(tmp_path, '- text: "one two three four"\n  chunks: 4\n')
    context: list[dict] = []
    seen: list = []

    def handle(event: Any) -> None:
        seen.append(event)
        if isinstance(event, TextDelta) and len([e for e in seen if isinstance(e, TextDelta)]) == 2:
            raise KeyboardInterrupt

    end = drive(run_agent(context, user_message("go"), resolve_model(spec), ALL_TOOLS, cwd=tmp_path), handle)
    assert end.aborted
    assert context[-1]["stopReason"] == "aborted"
    shown = [e.text for e in seen if isinstance(e, TextDelta)]
    assert len(shown) == 2 and text_of(context[-1]) == "".join(shown) == "one two th"
    assert [e.message for e in seen if isinstance(e, MessageEnd)] == context


def test_interrupt_in_consumer_after_tool_call_message(tmp_path: Path) -> None:
    context: list[dict] = []

    def handle(event: Any) -> None:
        if isinstance(event, ToolCall):
            raise KeyboardInterrupt

    end = drive(
        run_agent(context, user_message("what is 12*8"), resolve_model("demo"), ALL_TOOLS, cwd=tmp_path), handle
    )
    assert end.aborted
    assert roles(context) == ["user", "assistant", "toolResult", "assistant"]
    assert context[2]["isError"] and text_of(context[2]) == "aborted"
    assert context[3]["stopReason"] == "aborted"


# ---------------------------------------------------------------- messages


def test_message_constructors() -> None:
    user = user_message("hi")
    assert user["content"] == [{"type": "text", "text": "hi"}] and isinstance(user["timestamp"], int)
    msg = assistant_message(
        [], api="a", provider="p", model="m", usage={"input": 2}, stop_reason="error", error_message="bad"
    )
    assert list(msg) == [
        "role",
        "content",
        "api",
        "provider",
        "model",
        "usage",
        "stopReason",
        "timestamp",
        "errorMessage",
    ]
    assert msg["usage"]["input"] == 2 and msg["usage"]["totalTokens"] == 2 and msg["usage"]["cost"]["total"] == 0
    with pytest.raises(ValueError):
        assistant_message([], api="a", provider="p", model="m", stop_reason="done")
    result = tool_result_message("c1", "calc", "96", False)
    assert list(result) == ["role", "toolCallId", "toolName", "content", "isError", "timestamp"]


def test_to_llm_messages_matches_pi() -> None:
    context = [
        {"role": "compactionSummary", "summary": "S1", "tokensBefore": 10, "timestamp": 1},
        {"role": "branchSummary", "summary": "S2", "fromId": "abc", "timestamp": 2},
        {"role": "custom", "customType": "x", "content": "custom text", "display": True, "timestamp": 3},
        {
            "role": "bashExecution",
            "command": "ls",
            "output": "a\nb",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": 4,
        },
        {
            "role": "bashExecution",
            "command": "secret",
            "output": "x",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "excludeFromContext": True,
            "timestamp": 5,
        },
        {
            "role": "bashExecution",
            "command": "false",
            "output": "",
            "exitCode": 1,
            "cancelled": False,
            "truncated": False,
            "timestamp": 6,
        },
        user_message("hi"),
        {"role": "weird", "timestamp": 7},
    ]
    out = to_llm_messages(context)
    assert roles(out) == ["user"] * 6
    assert text_of(out[0]) == (
        "The conversation history before this point was compacted into the following summary:\n\n"
        "<summary>\nS1\n</summary>"
    )
    assert text_of(out[1]) == (
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nS2</summary>"
    )
    assert out[2]["content"] == [{"type": "text", "text": "custom text"}] and out[2]["timestamp"] == 3
    assert text_of(out[3]) == "Ran `ls`\n```\na\nb\n```"
    assert text_of(out[4]) == "Ran `false`\n(no output)\n\nCommand exited with code 1"
    assert out[-1] is context[6]
