"""The OpenAI-compatible model against a real local HTTP server speaking Chat Completions SSE.

No mocks: the official ``openai`` client talks HTTP to a tiny server on 127.0.0.1 that records
each request and answers with scripted SSE (or errors), so the tests see exactly what a llama.cpp
or vLLM server would produce.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harnesskit.agent.events import AgentEnd, MessageEnd, TextDelta
from harnesskit.agent.loop import run_agent
from harnesskit.agent.messages import assistant_message, text_of, tool_result_message, user_message
from harnesskit.agent.models import ModelError, resolve_model
from harnesskit.agent.models.openai import OpenAIModel, to_chat_messages
from harnesskit.agent.tools import TOOLS

Responder = Callable[[BaseHTTPRequestHandler], None]


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.responders: list[Responder] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def reply(self, *responders: Responder) -> None:
        self.responders.extend(responders)


class Handler(BaseHTTPRequestHandler):
    server: FakeServer

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.requests.append({"path": self.path, **json.loads(body)})
        self.server.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
        responder = self.server.responders.pop(0) if self.server.responders else status(404, "no reply scripted")
        responder(self)

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass


def sse(*events: dict[str, Any] | str, done: bool = True) -> Responder:
    """A streaming 200 response: each event is a chunk dict (JSON-encoded) or a raw data string."""

    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        for event in events:
            data = event if isinstance(event, str) else json.dumps(event)
            handler.wfile.write(f"data: {data}\n\n".encode())
            handler.wfile.flush()
        if done:
            handler.wfile.write(b"data: [DONE]\n\n")

    return respond


def status(code: int, message: str) -> Responder:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        body = json.dumps({"error": {"message": message, "type": "server_error"}}).encode()
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    return respond


def slow(seconds: float) -> Responder:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)

    return respond


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": choices,
        **extra,
    }


def usage_chunk(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return chunk(usage=usage)


def tool_delta(index: int, arguments: str, call_id: str | None = None, name: str | None = None) -> dict:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        call["id"], call["type"] = call_id, "function"
    if name:
        call["function"]["name"] = name
    return {"tool_calls": [call]}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    srv = FakeServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


def make_model(base_url: str, **kw: Any) -> OpenAIModel:
    return OpenAIModel("test-model", base_url=base_url, timeout=kw.pop("timeout", 5.0), **kw)


def run(model: Any, prompt: str, context: list[dict] | None = None, tmp_path: Path | None = None) -> tuple:
    context = [] if context is None else context
    events = list(run_agent(context, user_message(prompt), model, list(TOOLS.values()), cwd=tmp_path))
    return context, events


# ---------------------------------------------------------------- success


def test_streaming_text_with_usage(server: FakeServer) -> None:
    server.reply(
        sse(
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo!"}),
            chunk({}, finish="stop"),
            usage_chunk(11, 2, cached=4),
        )
    )
    context, events = run(make_model(server.base_url), "hi")
    assistant = context[-1]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo!"]
    assert assistant["content"] == [{"type": "text", "text": "Hello!"}]
    assert (assistant["api"], assistant["provider"], assistant["model"]) == (
        "openai-completions",
        "openai",
        "test-model",
    )
    assert assistant["stopReason"] == "stop" and assistant["responseId"] == "chatcmpl-1"
    assert assistant["usage"] == {
        "input": 7,
        "output": 2,
        "cacheRead": 4,
        "cacheWrite": 0,
        "totalTokens": 13,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["model"] == "test-model" and request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    assert request["messages"] == [{"role": "user", "content": "hi"}]
    assert sorted(t["function"]["name"] for t in request["tools"]) == ["calc", "ls", "read"]
    assert server.headers_seen[0]["authorization"] == "Bearer not-needed"


def test_a_lone_surrogate_in_the_context_is_sent_as_a_replacement_character(server: FakeServer) -> None:
    """A session may hold one (valid JSON); a UTF-8 request body cannot: the turn must still go out."""
    server.reply(sse(chunk({"content": "ok"}), chunk({}, finish="stop")))
    seen = assistant_message([{"type": "text", "text": "seen \udfff"}], api="a", provider="p", model="m",
                             stop_reason="stop")
    context = [user_message("odd \ud800 text"), seen]
    context, events = run(make_model(server.base_url), "again \udcff", context)
    assert context[-1]["stopReason"] == "stop", context[-1]
    assert [m["content"] for m in server.requests[0]["messages"]] == [
        "odd \ufffd text", "seen \ufffd", "again \ufffd"]


def test_reasoning_and_length(server: FakeServer) -> None:
    server.reply(sse(chunk({"reasoning_content": "think"}), chunk({"content": "cut"}, finish="length")))
    context, _ = run(make_model(server.base_url), "hi")
    assert context[-1]["content"] == [{"type": "thinking", "thinking": "think"}, {"type": "text", "text": "cut"}]
    assert context[-1]["stopReason"] == "length"


def test_tool_call_round_trip(server: FakeServer, tmp_path: Path) -> None:
    server.reply(
        sse(
            chunk({"role": "assistant", "content": None, **tool_delta(0, "", "call_abc", "calc")}),
            chunk(tool_delta(0, '{"expre')),
            chunk(tool_delta(0, 'ssion": "12*8"}')),
            chunk({}, finish="tool_calls"),
            usage_chunk(20, 9),
        ),
        sse(chunk({"content": "12*8 = 96."}), chunk({}, finish="stop"), usage_chunk(40, 6)),
    )
    context, events = run(make_model(server.base_url), "what is 12*8", tmp_path=tmp_path)
    assert [m["role"] for m in context] == ["user", "assistant", "toolResult", "assistant"]
    call = context[1]["content"][0]
    assert call == {"type": "toolCall", "id": "call_abc", "name": "calc", "arguments": {"expression": "12*8"}}
    assert context[1]["stopReason"] == "toolUse"
    assert text_of(context[2]) == "96" and context[2]["toolCallId"] == "call_abc"
    assert text_of(context[3]) == "12*8 = 96." and context[3]["usage"]["input"] == 40
    assert [e.message for e in events if isinstance(e, MessageEnd)] == context

    second = server.requests[1]["messages"]
    assert second == [
        {"role": "user", "content": "what is 12*8"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_abc",
                    "type": "function",
                    "function": {"name": "calc", "arguments": '{"expression": "12*8"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_abc", "content": "96"},
    ]


def test_parallel_tool_calls_keep_index_order(server: FakeServer, tmp_path: Path) -> None:
    server.reply(
        sse(
            chunk(tool_delta(1, '{"expression": "2+2"}', "call_b", "calc")),
            chunk(tool_delta(0, '{"expression": "1+1"}', "call_a", "calc")),
            chunk({}, finish="tool_calls"),
        ),
        sse(chunk({"content": "done"}, finish="stop")),
    )
    context, _ = run(make_model(server.base_url), "two sums", tmp_path=tmp_path)
    assert [b["id"] for b in context[1]["content"]] == ["call_a", "call_b"]
    assert [text_of(m) for m in context[2:4]] == ["2", "4"]


# ---------------------------------------------------------------- failures


def assert_error_assistant(context: list[dict], events: list, *starts: str) -> str:
    assistant = context[-1]
    assert assistant["role"] == "assistant" and assistant["stopReason"] == "error"
    assert assistant["usage"]["totalTokens"] == 0
    message = assistant["errorMessage"]
    assert "\n" not in message and any(message.startswith(s) for s in starts), message
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.error == message and not end.aborted
    return message


def test_http_500(server: FakeServer) -> None:
    server.reply(status(500, "the GPU caught fire"))
    context, events = run(make_model(server.base_url), "hi")
    message = assert_error_assistant(context, events, f"HTTP 500 from {server.base_url}: ")
    assert message == f"HTTP 500 from {server.base_url}: the GPU caught fire"
    assert context[-1]["content"] == []
    assert len(server.requests) == 1  # max_retries=0: no hidden retries


def test_http_401_plain_text_body(server: FakeServer) -> None:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(401)
        handler.send_header("Content-Length", "12")
        handler.end_headers()
        handler.wfile.write(b"unauthorized")

    server.reply(respond)
    context, events = run(make_model(server.base_url), "hi")
    assert assert_error_assistant(context, events, "HTTP 401").endswith("unauthorized")


def test_malformed_stream(server: FakeServer) -> None:
    server.reply(sse("{this is not json", done=False))
    context, events = run(make_model(server.base_url), "hi")
    assert_error_assistant(context, events, f"malformed stream from {server.base_url}")


def test_garbage_after_text_keeps_partial_text(server: FakeServer) -> None:
    server.reply(sse(chunk({"content": "partial"}), "<<<garbage>>>", done=False))
    context, events = run(make_model(server.base_url), "hi")
    assert_error_assistant(context, events, "malformed stream")
    assert context[-1]["content"] == [{"type": "text", "text": "partial"}]


def test_non_sse_body(server: FakeServer) -> None:
    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.end_headers()
        handler.wfile.write(b"<html>hello</html>\n")

    server.reply(respond)
    context, events = run(make_model(server.base_url), "hi")
    assert_error_assistant(context, events, "malformed stream")


def test_malformed_tool_call_arguments(server: FakeServer) -> None:
    server.reply(sse(chunk(tool_delta(0, '{"expression": ', "call_1", "calc"), finish="tool_calls")))
    context, events = run(make_model(server.base_url), "hi")
    message = assert_error_assistant(context, events, "malformed tool call arguments for calc")
    assert "toolCall" not in json.dumps(context[-1]["content"])  # no dangling call is persisted
    assert message


def test_connection_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    start = time.perf_counter()
    context, events = run(make_model(base_url), "hi")
    assert_error_assistant(context, events, f"connection refused: {base_url}")
    assert time.perf_counter() - start < 3


def test_timeout(server: FakeServer) -> None:
    server.reply(slow(2.0))
    context, events = run(make_model(server.base_url, timeout=0.3), "hi")
    assert_error_assistant(context, events, "timed out after 0.3s")


def test_stream_raises_model_error_directly(server: FakeServer) -> None:
    server.reply(status(503, "loading model"))
    with pytest.raises(ModelError, match="HTTP 503 .*loading model"):
        list(make_model(server.base_url).stream([user_message("hi")], []))
    assert "tools" not in server.requests[0]


# ---------------------------------------------------------------- set-up and conversion


def test_env_base_url_and_key(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = resolve_model("openai:env-model")
    assert isinstance(model, OpenAIModel) and model.base_url == server.base_url
    server.reply(sse(chunk({"content": "ok"}, finish="stop")))
    context, _ = run(model, "hi")
    assert text_of(context[-1]) == "ok" and context[-1]["model"] == "env-model"
    assert server.headers_seen[0]["authorization"] == "Bearer sk-test"
    explicit = resolve_model("openai:m", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert explicit.base_url == "http://127.0.0.1:9/v1"


def test_failed_turns_are_not_replayed() -> None:
    ids = {"api": "a", "provider": "p", "model": "m"}
    context = [
        user_message("first"),
        assistant_message([], **ids, stop_reason="error", error_message="boom"),
        user_message("again"),
        assistant_message(
            [{"type": "toolCall", "id": "c1", "name": "calc", "arguments": {"expression": "1"}}],
            **ids,
            stop_reason="toolUse",
        ),
        {"role": "compactionSummary", "summary": "S", "tokensBefore": 1, "timestamp": 1},
        tool_result_message("zz", "calc", "orphan result", False),
    ]
    assert to_chat_messages(context) == [
        {"role": "user", "content": "first"},
        {"role": "user", "content": "again"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": '{"expression": "1"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "No result provided"},
        {
            "role": "user",
            "content": "The conversation history before this point was compacted into the following summary:"
            "\n\n<summary>\nS\n</summary>",
        },
    ]


def test_openai_is_imported_only_when_asked_for() -> None:
    code = (
        "import sys\n"
        "from harnesskit.agent import loop, messages, tools, events\n"
        "from harnesskit.agent.models import resolve_model\n"
        "resolve_model('demo')\n"
        "assert 'openai' not in sys.modules, 'openai imported too early'\n"
        "m = resolve_model('openai:m', base_url='http://127.0.0.1:9/v1')\n"
        "assert 'openai' not in sys.modules, 'a model that has sent nothing needs no SDK'\n"
        "from harnesskit.agent.models import ModelError\n"
        "try:\n"
        "    list(m.stream([{'role': 'user', 'content': 'hi', 'timestamp': 0}], []))\n"
        "except ModelError:\n"
        "    pass\n"
        "assert 'openai' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
