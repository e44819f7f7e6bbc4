"""Every model request has an overall deadline and a reply size cap (issue 6, item 13): a server
that trickles keep-alive bytes, one that goes silent, and one that never stops sending all end the
turn as an error that is saved, with one line on stderr. Limits come from the config."""

from __future__ import annotations

import json
import select
import socket
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from test_openai_model import FakeServer, chunk, server  # noqa: F401 - fixture
from writeside_helpers import Env, assert_strict_valid, invoke, isolate, read_lines

from harnesskit.agent.models import DEFAULT_MAX_REPLY_BYTES, DEFAULT_REQUEST_TIMEOUT

GIVE_UP = 60.0  # a server below stops on its own after this long (a test that failed must still end)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def client_gone(handler: BaseHTTPRequestHandler, wait: float) -> bool:
    """True once the client has closed its end (waits up to `wait` seconds)."""
    readable, _, _ = select.select([handler.connection], [], [], wait)
    if not readable:
        return False
    try:
        return handler.connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def start_stream(handler: BaseHTTPRequestHandler, text: str) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()
    handler.wfile.write(f"data: {json.dumps(chunk({'role': 'assistant', 'content': text}))}\n\n".encode())
    handler.wfile.flush()


def trickling(handler: BaseHTTPRequestHandler) -> None:
    """Starts a reply, then sends an SSE keep-alive comment every 50 ms and never finishes."""
    start_stream(handler, "Thinking")
    end = time.monotonic() + GIVE_UP
    try:
        while time.monotonic() < end and not client_gone(handler, 0.05):
            handler.wfile.write(b": keep-alive\n\n")
            handler.wfile.flush()
    except OSError:
        pass


def silent(handler: BaseHTTPRequestHandler) -> None:
    """Starts a reply, then sends nothing more."""
    start_stream(handler, "Thinking")
    end = time.monotonic() + GIVE_UP
    while time.monotonic() < end and not client_gone(handler, 0.05):
        pass


def write_config(env: Env, **values: object) -> None:
    (env.cwd / ".harnesskit.yaml").write_text("".join(f"{k}: {v}\n" for k, v in values.items()), encoding="utf-8")


def last_assistant(path: Path) -> dict:
    messages = [e["message"] for e in read_lines(path)[1:] if e["type"] == "message"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    return messages[-1]


def the_session(env: Env) -> Path:
    files = sorted(env.sessions.rglob("*.jsonl"))
    assert len(files) == 1, files
    return files[0]


@pytest.mark.parametrize("responder", [trickling, silent], ids=["trickling-keep-alive", "silent"])
def test_a_request_ends_at_its_deadline(env: Env, server: FakeServer, responder) -> None:  # noqa: F811
    write_config(env, request_timeout=1)
    server.reply(responder)
    started = time.monotonic()
    result = invoke("chat", "--model", "openai:m", "--base-url", server.base_url, "-p", "hi")
    assert time.monotonic() - started < GIVE_UP / 2  # it ended: not when the server gave up
    assert result.exit_code == 1, (result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("harnesskit:")]
    assert len(errors) == 1 and errors[0].startswith("harnesskit: error: timed out after 1s (request_timeout)"), errors
    path = the_session(env)
    assistant = last_assistant(path)
    assert assistant["stopReason"] == "error" and "request_timeout" in assistant["errorMessage"]
    assert assistant["content"] == [{"type": "text", "text": "Thinking"}]  # what came before the cut is kept
    assert_strict_valid(path)


def endless(sent: list[int], piece: int = 1 << 16, total: int = 300 << 20) -> object:
    """A reply of `total` bytes of text in `piece`-sized events; `sent` gets the bytes it got out."""

    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        event = f"data: {json.dumps(chunk({'content': 'x' * piece}))}\n\n".encode()
        count = 0
        try:
            while count < total:
                handler.wfile.write(event)
                count += len(event)
            handler.wfile.write(f"data: {json.dumps(chunk({}, finish='stop'))}\n\ndata: [DONE]\n\n".encode())
        except OSError:
            pass
        sent.append(count)

    return respond


# The chat's own peak RSS, written at exit: VmHWM belongs to the process image after exec (a child's
# ru_maxrss would include the high-water mark of the test process it was forked from).
PEAK_WRAPPER = """
import atexit, runpy, sys
report = sys.argv.pop(1)
def peak():
    with open("/proc/self/status") as status, open(report, "w") as out:
        out.write(next(line for line in status if line.startswith("VmHWM:")))
atexit.register(peak)
sys.argv[0] = "harnesskit"
runpy.run_module("harnesskit", run_name="__main__", alter_sys=True)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc to read the peak memory")
def test_an_endless_reply_is_cut_at_the_cap_in_bounded_memory(env: Env, server: FakeServer) -> None:  # noqa: F811
    cap = 1 << 20
    write_config(env, max_reply_bytes=cap)
    sent: list[int] = []
    server.reply(endless(sent))
    report = env.tmp / "peak.txt"
    with (env.tmp / "stdout.txt").open("w") as stdout:
        done = subprocess.run([sys.executable, "-c", PEAK_WRAPPER, str(report), "chat", "--model", "openai:m",
                               "--base-url", server.base_url, "-p", "hi"], env=env.environ(), cwd=env.cwd,
                              stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("harnesskit:")]
    assert len(errors) == 1 and "max_reply_bytes (1048576 bytes)" in errors[0], errors
    peak_mb = int(report.read_text().split()[1]) / 1024  # "VmHWM:  123456 kB"
    assert peak_mb < 200, f"peak RSS {peak_mb:.0f} MB for a reply cut at 1 MB (the server offered 300 MB)"
    path = the_session(env)
    assistant = last_assistant(path)
    assert assistant["stopReason"] == "error" and "max_reply_bytes" in assistant["errorMessage"]
    assert 0 < len(assistant["content"][0]["text"]) <= cap
    assert server.headers_seen[0]["accept-encoding"] == "identity"  # the cap counts uncompressed bytes
    assert_strict_valid(path)
    server_sent = sent[0] if sent else 0
    assert server_sent < 64 << 20, server_sent  # the connection was dropped, not drained


def test_limits_are_config_keys_with_defaults(env: Env) -> None:
    listed = invoke("config", "list")
    assert listed.exit_code == 0
    assert f"request_timeout = {DEFAULT_REQUEST_TIMEOUT:g}" in listed.stdout
    assert f"max_reply_bytes = {DEFAULT_MAX_REPLY_BYTES}" in listed.stdout
    for key, bad in [("request_timeout", "soon"), ("request_timeout", "0"), ("request_timeout", "inf"),
                     ("max_reply_bytes", "1.5"), ("max_reply_bytes", "0")]:
        result = invoke("config", "set", key, bad)
        assert result.exit_code == 2, (key, bad, result.stdout)
        assert result.stderr.startswith("harnesskit: error: ") and key in result.stderr
    assert invoke("config", "set", "request_timeout", "2.5").exit_code == 0
    assert "request_timeout = 2.5" in invoke("config", "list").stdout
    write_config(env, max_reply_bytes="lots")
    result = invoke("chat", "-p", "hi")
    assert result.exit_code == 2 and "max_reply_bytes" in result.stderr
