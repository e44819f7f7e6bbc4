"""Compaction and branch summaries as users meet them: chat (automatic, /compact, /branch),
`harnesskit compact`, `continue --from`, `demo --long`; every file checked on disk.

Tests that stand for one of pi's name it (pi-mono packages/coding-agent/test/:
agent-session-compaction.test.ts, agent-session-tree-navigation.test.ts, compaction.test.ts).
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import V1_LARGE, V3_DIR, requires_shared
from writeside_helpers import (
    Env,
    Interactive,
    assert_one_error,
    assert_strict_valid,
    copy_fixture,
    invoke,
    isolate,
    only_session,
    read_lines,
    write_script,
)

import harnesskit.cli.options as options_module
from harnesskit.agent.messages import text_of
from harnesskit.agent.models import resolve_model
from harnesskit.agent.summarize import BRANCH_PREAMBLE, PROMPT_HEAD, TURN_NOTE
from harnesskit.session.loader import load_session
from harnesskit.session.tokens import estimate_all
from harnesskit.session.tree import build_context


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


class Recorder:
    """A real model (demo or script) that keeps every request it was sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.api, self.provider, self.model_id = inner.api, inner.provider, inner.model_id
        self.requests: list[tuple[list[dict], int, int | None]] = []

    def stream(self, messages: list[dict], tools: list, *, max_tokens: int | None = None) -> Iterator[Any]:
        self.requests.append((list(messages), len(tools), max_tokens))
        yield from self.inner.stream(messages, tools, max_tokens=max_tokens)

    def summary_requests(self) -> list[str]:
        return [text_of(m[0]) for m, _, _ in self.requests if len(m) == 1 and text_of(m[0]).startswith(PROMPT_HEAD)]


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[Recorder]:
    made: list[Recorder] = []

    def resolve(spec: str, **kwargs: Any) -> Recorder:
        made.append(Recorder(resolve_model(spec, **kwargs)))
        return made[-1]

    monkeypatch.setattr(options_module, "resolve_model", resolve)
    return made


def config(*pairs: tuple[str, object]) -> None:
    for key, value in pairs:
        result = invoke("config", "set", key, value)
        assert result.exit_code == 0, result.stderr


def entries_of(path: Path, kind: str) -> list[dict]:
    return [e for e in read_lines(path)[1:] if e["type"] == kind]


def pi_entry(stem: str, kind: str) -> dict:
    """An entry of that type as pi itself wrote it (fixtures/pi/v3)."""
    return next(e for e in read_lines(V3_DIR / f"{stem}.jsonl")[1:] if e["type"] == kind)


def context_roles(path: Path) -> list[str]:
    return [m["role"] for m in build_context(load_session(path).tree).messages]


# ---------------------------------------------------------------- automatic


def test_two_hundred_turns_never_send_more_than_the_window(env: Env, recorded: list[Recorder]) -> None:
    """The issue's 'done when': a small window, 200 turns, every request (summaries included)
    within the window as pi counts tokens, and the file valid for --strict."""
    window = 1200
    config(("context_window", window), ("compaction.keep_recent_tokens", 250))
    prompts = "".join(f"what is {n}*{n + 3}\n" if n % 2 else f"turn {n}: tell me something new\n"
                      for n in range(200))
    result = invoke("chat", input=prompts)
    assert result.exit_code == 0, result.stderr
    model = recorded[0]
    turns = [r for r in model.requests if r[1] > 0]  # requests with tools: the conversation's
    assert sum(1 for m, _, _ in turns if m[-1]["role"] == "user") == 200
    for messages, tools, max_tokens in model.requests:
        sent = estimate_all(messages) + 10 * tools  # the tools' definitions, as the demo counts them
        assert sent + (max_tokens or 0) <= window, (sent, max_tokens)
    path = only_session(env.home)
    compactions = entries_of(path, "compaction")
    assert len(compactions) >= 10
    assert result.stderr.count("[compacting:") == len(compactions)
    assert_strict_valid(path)
    assert context_roles(path)[0] == "compactionSummary"
    for entry in compactions:
        assert entry["summary"] and entry["tokensBefore"] > window - int(window * 0.3)
        assert entry["details"] == {"readFiles": [], "modifiedFiles": []}
    # every compaction after the first summarised from the previous one
    summaries = [s for s in model.summary_requests() if TURN_NOTE not in s]  # a split turn's start: apart
    assert all("<previous-summary>" in s for s in summaries[1:]) and "<previous-summary>" not in summaries[0]


def test_a_continued_session_goes_on_compacting(env: Env, recorded: list[Recorder]) -> None:
    """`continue` reads the file lazily; the next compactions build on the last one in it."""
    window = 900
    config(("context_window", window), ("compaction.keep_recent_tokens", 200))
    assert invoke("chat", input="".join(f"tell me about part {n} of it\n" for n in range(40))).exit_code == 0
    path = only_session(env.home)
    first = len(entries_of(path, "compaction"))
    assert first >= 1
    result = invoke("continue", input="".join(f"what is {n}*{n}\n" for n in range(40)))
    assert result.exit_code == 0, result.stderr
    assert len(entries_of(path, "compaction")) > first
    assert "<previous-summary>" in recorded[-1].summary_requests()[0]
    for messages, tools, max_tokens in recorded[-1].requests:
        assert estimate_all(messages) + 10 * tools + (max_tokens or 0) <= window
    assert_strict_valid(path)


def test_compaction_off_in_config_never_compacts(env: Env, recorded: list[Recorder]) -> None:
    """pi: shouldCompact 'should return false when disabled', through the config file."""
    config(("context_window", 600), ("compaction.enabled", "false"))
    result = invoke("chat", input="".join(f"tell me about item {n}\n" for n in range(30)))
    assert result.exit_code == 0, result.stderr
    assert entries_of(only_session(env.home), "compaction") == []
    assert "[compacting" not in result.stderr


def test_a_failed_automatic_summary_writes_nothing_and_the_chat_goes_on(env: Env) -> None:
    """A failed summary writes nothing: the script fails the summary request; the turn still runs."""
    replies: list[Any] = [{"text": "one " * 300}, {"error": "summary server down"}, {"text": "still here"}]
    script = write_script(env.tmp / "s.yaml", replies)
    config(("context_window", 400), ("compaction.keep_recent_tokens", 20))
    result = invoke("chat", "--model", f"script:{script}", "-p", "first", "-p", "second")
    assert result.exit_code == 0, result.stderr
    assert "summary server down" in result.stderr and "going on without compacting" in result.stderr
    path = only_session(env.home)
    assert entries_of(path, "compaction") == []
    assert [m["role"] for m in (e["message"] for e in entries_of(path, "message"))] == \
        ["user", "assistant", "user", "assistant"]
    assert_strict_valid(path)


# ---------------------------------------------------------------- manual: /compact


def chat_then_compact(env: Env, *extra: str) -> Path:
    config(("compaction.keep_recent_tokens", 1))  # as pi's e2e tests: something to summarise
    result = invoke("chat", "-p", "What is 2+2?", "-p", "What is 3+3?", "-p", "/compact the numbers", *extra)
    assert result.exit_code == 0, result.stderr
    assert "[compacted:" in result.stderr
    assert "[compacting:" not in result.stderr  # manual, not automatic
    return only_session(env.home)


def test_manual_compact_writes_one_compaction_entry(env: Env, recorded: list[Recorder]) -> None:
    """pi: 'should trigger manual compaction via compact()', 'should persist compaction to
    session file' and 'should emit correct events during auto-compaction' (no automatic one)."""
    path = chat_then_compact(env)
    [entry] = entries_of(path, "compaction")
    assert entry["summary"] and isinstance(entry["firstKeptEntryId"], str) and entry["tokensBefore"] > 0
    assert list(entry) == list(pi_entry("s13_compaction", "compaction"))  # pi's keys, in pi's order
    assert context_roles(path)[0] == "compactionSummary"
    assert "focus on: the numbers" in recorded[0].summary_requests()[0]
    assert_strict_valid(path)
    inspected = invoke("inspect", path, "--context", "--json")
    assert json.loads(inspected.stdout.splitlines()[0])["role"] == "compactionSummary"


def test_the_session_goes_on_after_a_compaction(env: Env) -> None:
    """pi: 'should maintain valid session state after compaction'."""
    path = chat_then_compact(env, "-p", "What is 4+4?")
    lines = read_lines(path)
    compaction = next(i for i, e in enumerate(lines) if e["type"] == "compaction")
    assert lines[compaction + 1]["parentId"] == lines[compaction]["id"]
    roles = context_roles(path)
    assert roles[0] == "compactionSummary" and roles[-1] == "assistant"
    assert "4+4 = 8." in text_of(build_context(load_session(path).tree).messages[-1])
    assert_strict_valid(path)


def test_compact_in_memory_with_no_session(env: Env) -> None:
    """pi: 'should work with --no-session mode (in-memory only)'."""
    config(("compaction.keep_recent_tokens", 1))
    result = invoke("chat", "--no-session", "-p", "What is 2+2?", "-p", "What is 3+3?", "-p", "/compact",
                    "-p", "What is 4+4?")
    assert result.exit_code == 0, result.stderr
    assert "[compacted:" in result.stderr
    assert "4+4 = 8." in result.stdout  # the chat goes on from the compacted context
    assert not (env.home / "sessions").exists()


def test_compact_with_nothing_to_summarise_says_so(env: Env) -> None:
    result = invoke("chat", "-p", "hello", "-p", "/compact")
    assert result.exit_code == 0
    assert "nothing to compact yet" in result.stderr
    assert entries_of(only_session(env.home), "compaction") == []


# ---------------------------------------------------------------- `harnesskit compact FILE`


def test_compact_command_appends_the_entry_through_the_writer(env: Env, recorded: list[Recorder]) -> None:
    assert invoke("chat", "-p", "hello", "-p", "what is 12*8", "-p", "thanks").exit_code == 0
    path = only_session(env.home)
    before = path.read_bytes()
    result = invoke("compact", path, "--keep-recent", "5", "--instructions", "keep the product")
    assert result.exit_code == 0, result.stderr
    assert path.read_bytes().startswith(before)  # append-only
    [entry] = entries_of(path, "compaction")
    assert entry["parentId"] == read_lines(path)[-2]["id"]
    assert "focus on: keep the product" in recorded[-1].summary_requests()[0]
    assert context_roles(path)[0] == "compactionSummary"
    assert_strict_valid(path)
    again = invoke("continue", path, "-p", "what did you compute before?")
    assert again.exit_code == 0, again.stderr


def test_compact_command_scripted_summary(env: Env) -> None:
    """`script:` YAML scripts a summary: the next reply is the summary."""
    script = write_script(env.tmp / "s.yaml", ["first reply " * 20, "second reply", "SCRIPTED SUMMARY"])
    assert invoke("chat", "--model", f"script:{script}", "-p", "one", "-p", "two").exit_code == 0
    path = only_session(env.home)
    result = invoke("compact", path, "--keep-recent", "3", "--model", f"script:{script}")
    # a fresh model instance starts the script again: its first reply becomes the summary
    assert result.exit_code == 0, result.stderr
    [entry] = entries_of(path, "compaction")
    assert entry["summary"].startswith("first reply")


def test_compact_command_failed_summary_writes_nothing(env: Env) -> None:
    assert invoke("chat", "-p", "hello", "-p", "what is 12*8").exit_code == 0
    path = only_session(env.home)
    before = path.read_bytes()
    script = write_script(env.tmp / "bad.yaml", [{"error": "HTTP 500 from the script"}])
    result = invoke("compact", path, "--keep-recent", "1", "--model", f"script:{script}")
    line = assert_one_error(result, 1)
    assert "HTTP 500" in line and "nothing was written" in line
    assert path.read_bytes() == before


def test_compact_command_nothing_to_do_and_bad_input(env: Env) -> None:
    assert invoke("chat", "-p", "hello").exit_code == 0
    path = only_session(env.home)
    before = path.read_bytes()
    result = invoke("compact", path)
    assert result.exit_code == 0 and "nothing to compact" in result.stdout
    assert path.read_bytes() == before
    assert_one_error(invoke("compact", env.tmp / "missing.jsonl"), 2)
    assert "Examples:" in invoke("compact", "--help").stdout


def test_compact_command_refuses_a_session_another_process_writes(env: Env) -> None:
    """It takes the session's lock like chat: a running chat keeps it, compact is refused."""
    chat = Interactive(env, "chat")
    try:
        chat.send("what is 12*8")
        chat.expect("12*8 = 96.")
        path = only_session(env.home)
        before = path.read_bytes()
        line = assert_one_error(invoke("compact", path, "--keep-recent", "1"))
        assert f"pid {chat.pid}" in line
        assert path.read_bytes() == before
        assert chat.close() == 0
    finally:
        chat.kill()
    assert invoke("compact", path, "--keep-recent", "1").exit_code == 0  # free again


def test_files_read_are_tracked_across_compactions(env: Env) -> None:
    """pi's details {readFiles, modifiedFiles}: the read tool's paths, carried into the next
    compaction, and listed after the summary text; harnesskit has no write tool: modifiedFiles []."""
    (env.cwd / "notes.txt").write_text("alpha\n")
    (env.cwd / "todo.txt").write_text("beta\n")

    def reading(name: str) -> list[Any]:
        return [{"text": "Let me read.", "tool_calls": [{"name": "read", "arguments": {"path": name}}]},
                f"{name} read."]

    script = write_script(env.tmp / "s.yaml", [*reading("notes.txt"), "ok", "SUMMARY ONE", "SUMMARY TURN",
                                               *reading("todo.txt"), "fine", "SUMMARY TWO", "SUMMARY TURN"])
    model = f"script:{script}"
    config(("compaction.keep_recent_tokens", 1))
    result = invoke("chat", "--model", model, "-p", "read notes", "-p", "thanks", "-p", "/compact",
                    "-p", "read todo", "-p", "thanks", "-p", "/compact")
    assert result.exit_code == 0, result.stderr
    first, second = entries_of(only_session(env.home), "compaction")
    assert first["details"] == {"readFiles": ["notes.txt"], "modifiedFiles": []}
    assert second["details"] == {"readFiles": ["notes.txt", "todo.txt"], "modifiedFiles": []}
    assert first["summary"].startswith("SUMMARY ONE") and "<read-files>\nnotes.txt\n</read-files>" in first["summary"]
    assert_strict_valid(only_session(env.home))


@requires_shared
def test_compacting_pis_large_session(env: Env) -> None:
    """pi: 'should generate a compaction result for the large session' and 'should produce
    valid session after compaction' (the demo model writes the summary, offline)."""
    path = copy_fixture(V1_LARGE, env.tmp / "large")
    assert invoke("migrate", path).exit_code == 0
    before = build_context(load_session(path).tree).messages
    result = invoke("compact", path, "--model", "demo")
    assert result.exit_code == 0, result.stderr
    [entry] = entries_of(path, "compaction")
    assert len(entry["summary"]) > 100 and entry["firstKeptEntryId"] and entry["tokensBefore"] > 0
    after = build_context(load_session(path).tree).messages
    assert len(after) < len(before)
    assert after[0]["role"] == "compactionSummary" and after[0]["summary"] == entry["summary"]
    assert after[1:] == before[len(before) - len(after) + 1:]  # the kept tail, unchanged
    assert invoke("validate", path).exit_code == 0


# ---------------------------------------------------------------- demo --long


def test_demo_long_shows_an_automatic_compaction(env: Env) -> None:
    result = invoke("demo", "--long", "--dir", env.tmp / "demo")
    assert result.exit_code == 0, result.stderr
    assert "[compacting:" in result.stdout and "[compacted:" in result.stdout
    [path] = (env.tmp / "demo" / "sessions").glob("*.jsonl")
    assert entries_of(path, "compaction")
    context_part = result.stdout.split("=== harnesskit inspect --context", 1)[1].splitlines()
    first_row = next(line for line in context_part if line.startswith("1 "))
    assert first_row.split()[:2] == ["1", "compactionSummary"]
    assert_strict_valid(path)
    inspected = invoke("inspect", path, "--context", "--json")
    assert json.loads(inspected.stdout.splitlines()[0])["role"] == "compactionSummary"


# ---------------------------------------------------------------- branch summaries (tree navigation)


def three_turns(env: Env) -> tuple[Path, list[dict]]:
    assert invoke("chat", "-p", "u1", "-p", "u2", "-p", "u3").exit_code == 0
    path = only_session(env.home)
    return path, [e for e in read_lines(path)[1:] if e["type"] == "message"]


def test_branch_to_a_nested_user_message_with_summary(env: Env, recorded: list[Recorder]) -> None:
    """pi: 'selects the correct parent and abandoned-branch context when navigating to a nested
    user message': the summary sits at the user message's parent, which gets two children, and
    the summariser saw only the branch left (a2, u3, a3), never the kept prefix."""
    path, messages = three_turns(env)
    u1, a1, u2 = messages[0], messages[1], messages[2]
    result = invoke("continue", path, "--from", u2["id"], "--summary", "-p", "/tree")
    assert result.exit_code == 0, result.stderr
    assert "offered again: u2" in result.stderr
    [entry] = entries_of(path, "branch_summary")
    assert entry["parentId"] == a1["id"] and entry["fromId"] == a1["id"]  # pi 0.73.1: fromId = its parent
    assert entry["summary"].startswith(BRANCH_PREAMBLE)
    assert entry["details"] == {"readFiles": [], "modifiedFiles": []}
    assert list(entry) == list(pi_entry("s11_branch_summary", "branch_summary"))  # pi's keys, in pi's order
    children = [e for e in read_lines(path)[1:] if e.get("parentId") == a1["id"]]
    assert sorted(e["type"] for e in children) == ["branch_summary", "message"]
    [request] = recorded[-1].summary_requests()
    conversation = request.split("<conversation>", 1)[1]
    assert "[User]: u3" in conversation and "[User]: u2" not in conversation
    assert "[User]: u1" not in conversation and u1["id"] not in conversation
    assert context_roles(path) == ["user", "assistant", "branchSummary"]
    assert_strict_valid(path)


def test_branch_to_the_root_user_message_with_summary(env: Env) -> None:
    """pi: 'navigates to the root user message, generating a branch summary attached to the tree
    root' (here the root's parent is the thinking_level_change harnesskit writes first, as pi)."""
    path, messages = three_turns(env)
    result = invoke("continue", path, "--from", messages[0]["id"], "--summary", "-p", "hello again")
    assert result.exit_code == 0, result.stderr
    [entry] = entries_of(path, "branch_summary")
    assert entry["parentId"] == messages[0]["parentId"]
    roles = context_roles(path)
    assert roles == ["branchSummary", "user", "assistant"]


def test_slash_branch_asks_nothing_without_a_terminal_and_no_summary_skips(env: Env) -> None:
    path, messages = three_turns(env)
    a1 = messages[1]["id"]
    result = invoke("continue", path, "-p", f"/branch {a1}", "-p", "/tree")
    assert result.exit_code == 0, result.stderr
    assert entries_of(path, "branch_summary") == []
    result = invoke("continue", path, "-p", f"/branch {a1} --no-summary")
    assert entries_of(path, "branch_summary") == []
    result = invoke("continue", path, "-p", f"/branch {messages[2]['id']} --summary", "-p", "again")
    assert result.exit_code == 0, result.stderr
    assert "branch of 3 messages summarised" in result.stderr
    assert "offered again: u2" in result.stderr
    assert len(entries_of(path, "branch_summary")) == 1
    assert_strict_valid(path)


def test_an_offered_prompt_reaches_the_terminal_without_control_bytes(env: Env) -> None:
    assert invoke("chat", "-p", "red \x1b[31malert\x07 text", "-p", "next").exit_code == 0
    path = only_session(env.home)
    user = next(e for e in read_lines(path)[1:] if e["type"] == "message")
    result = invoke("continue", path, "--from", user["id"], "--no-summary", "-p", "/exit")
    assert result.exit_code == 0, result.stderr
    line = next(line for line in result.stderr.splitlines() if line.startswith("offered again:"))
    assert "\x1b" not in line and "\x07" not in line and "alert" in line


def test_branch_to_the_current_leaf_is_a_no_op_and_unknown_targets_are_refused(env: Env) -> None:
    """pi: 'treats navigation to the current leaf as a no-op and rejects unknown targets'."""
    path, messages = three_turns(env)
    before = path.read_bytes()
    result = invoke("continue", path, "-p", f"/branch {messages[-1]['id']} --summary")
    assert result.exit_code == 0, result.stderr
    assert path.read_bytes() == before
    result = invoke("continue", path, "-p", "/branch nothere --summary")
    assert "harnesskit: error:" in result.stderr and "nothere" in result.stderr
    assert path.read_bytes() == before


def test_a_failed_branch_summary_leaves_the_file_and_the_leaf(env: Env) -> None:
    """pi: 'aborting an in-progress branch summary returns cancelled and leaves entries unchanged'."""
    path, messages = three_turns(env)
    before = path.read_bytes()
    script = write_script(env.tmp / "bad.yaml", [{"error": "summary refused"}])
    result = invoke("continue", path, "--model", f"script:{script}", "--from", messages[2]["id"], "--summary")
    line = assert_one_error(result, 1)
    assert "summary refused" in line
    assert path.read_bytes() == before


def test_an_interrupted_branch_summary_writes_nothing(tmp_path: Path) -> None:
    """A Ctrl-C during the summary call: the leaf stays and nothing is appended."""
    from harnesskit.cli import compacting
    from harnesskit.session.live import LiveSession
    from harnesskit.session.tokens import CompactionSettings

    class Interrupting:
        api, provider, model_id = "x", "harnesskit", "demo"

        def stream(self, messages: list, tools: list, *, max_tokens: int | None = None) -> Iterator[Any]:
            raise KeyboardInterrupt
            yield  # pragma: no cover

    live = LiveSession.new(tmp_path, str(tmp_path), "never", {"provider": "harnesskit", "modelId": "demo"})
    from harnesskit.agent.messages import assistant_message, user_message

    u1 = live.append_message(user_message("u1"))
    for text in ("a1", "u2", "a2"):
        live.append_message(user_message(text) if text.startswith("u") else assistant_message(
            [{"type": "text", "text": text}], api="x", provider="harnesskit", model="demo", stop_reason="stop"))
    live.close()
    size, leaf = live.path.stat().st_size, live.leaf_id
    with pytest.raises(KeyboardInterrupt):
        compacting.branch(live, u1["id"], model=Interrupting(), limits=compacting.Limits(CompactionSettings()))
    assert live.leaf_id == leaf and live.path.stat().st_size == size
    assert "branch_summary" not in live.tree.types


# ---------------------------------------------------------------- /thinking


def test_thinking_level_is_written_and_restored(env: Env) -> None:
    result = invoke("chat", "-p", "hello", "-p", "/thinking high", "-p", "what is 2*21")
    assert result.exit_code == 0, result.stderr
    path = only_session(env.home)
    levels = [e["thinkingLevel"] for e in entries_of(path, "thinking_level_change")]
    assert levels == ["off", "high"]
    assert build_context(load_session(path).tree).thinking_level == "high"
    again = invoke("continue", path, "-p", "/thinking")
    assert "thinking: high" in again.stderr
    bad = invoke("continue", path, "-p", "/thinking extreme")
    assert "thinking level must be one of" in bad.stderr
    assert [e["thinkingLevel"] for e in entries_of(path, "thinking_level_change")] == ["off", "high"]
    assert_strict_valid(path)


# ---------------------------------------------------------------- at a terminal (a real pty)


def test_branch_at_a_terminal_asks_then_prefills_the_prompt(env: Env) -> None:
    """At a terminal /branch asks y/N whether to summarise; the user message's text is then the
    next prompt, pre-filled: Enter sends it again from the new position."""
    import os
    import pty
    import re
    import select
    import subprocess
    import sys
    import time

    path, messages = three_turns(env)
    u2 = messages[2]["id"]
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "harnesskit", "continue", str(path)],
                            env=env.environ(TERM="xterm"), cwd=env.cwd, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    seen = b""

    def plain(data: bytes) -> bytes:  # the screen's text: prompt_toolkit moves the cursor for spaces
        return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", data).replace(b" ", b"")

    def wait_for(needle: bytes, timeout: float = 60) -> None:
        nonlocal seen
        start = len(seen)
        deadline = time.monotonic() + timeout
        while needle.replace(b" ", b"") not in plain(seen[start:]):
            assert time.monotonic() < deadline, f"no {needle!r} in {seen[-400:]!r}"
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break

    try:
        wait_for(b"you>")
        os.write(master, f"/branch {u2}\r".encode())
        wait_for(b"[y/N]")
        os.write(master, b"y\r")
        wait_for(b"you> u2")  # pre-filled
        os.write(master, b"\r")
        wait_for(b'You said: "u2"')
        wait_for(b"you>")
        os.write(master, b"\x04")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(master)
    lines = read_lines(path)
    [summary] = [e for e in lines if e["type"] == "branch_summary"]
    again = next(e for e in lines if e.get("parentId") == summary["id"])
    assert again["message"]["content"][0]["text"] == "u2"
    assert summary["parentId"] == messages[1]["id"]
    assert_strict_valid(path)


def _ctrl_c_at(run: Interactive, marker: str) -> tuple[int, str]:
    """SIGINT once `marker` is printed: the exit code and stderr (checked: no traceback)."""
    try:
        run.expect(marker)
        run.proc.send_signal(signal.SIGINT)
        code = run.wait()
    finally:
        run.kill()
    err = "".join(run.err)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    return code, err


def _assert_aborted_and_saved(env: Env) -> None:
    """The session of a turn aborted in its automatic summary: no compaction, the turn saved as aborted."""
    path = only_session(env.home)
    assert entries_of(path, "compaction") == []
    last = entries_of(path, "message")[-1]["message"]
    assert last["role"] == "assistant" and last["stopReason"] == "aborted"
    assert_strict_valid(path)


def test_ctrl_c_during_an_automatic_summary_writes_no_compaction(env: Env) -> None:
    """An aborted summary writes nothing: Ctrl-C while the summary streams ends the turn as
    aborted (like Ctrl-C in any request) and the file has no compaction entry."""
    replies = [{"text": "one " * 300}, {"text": "a summary that never ends " * 20, "chunks": 200, "delay": 0.1}]
    script = write_script(env.tmp / "s.yaml", replies)
    config(("context_window", 400), ("compaction.keep_recent_tokens", 20))
    chat = Interactive(env, "chat", "--model", f"script:{script}", "-p", "first", "-p", "second", feed=False)
    code, err = _ctrl_c_at(chat, "[compacting:")
    assert code == 130, ("".join(chat.out), err)
    _assert_aborted_and_saved(env)


# A driver run as `python -m` like `python -m harnesskit` (the interpreter ends a `-m` run by its own
# rules): the real CLI, with only the summary request replaced by one that Ctrl-Cs itself from inside
# a string exec (as when the signal lands in a dataclass a lazy import builds: the flaky -2 of the
# test above), and with SLOW_EXIT a shutdown that waits for a second Ctrl-C.
_DRIVER = '''
import atexit, os, sys, time

import harnesskit.agent.models.script as script
from harnesskit.cli import main

played = script.ScriptModel.stream


def stream(self, messages, tools, *, max_tokens=None):
    if max_tokens is not None:  # the summary request: Ctrl-C inside a string exec
        exec("import signal, time\\nsignal.raise_signal(signal.SIGINT)\\ntime.sleep(60)", {})
    yield from played(self, messages, tools, max_tokens=max_tokens)


def slow_exit():
    print("[shutting down]", file=sys.stderr, flush=True)
    time.sleep(60)
    print("[shut down]", file=sys.stderr, flush=True)


script.ScriptModel.stream = stream
if os.environ.get("SLOW_EXIT"):
    atexit.register(slow_exit)
main()
'''


def _driven(env: Env, *args: object) -> Interactive:
    (env.cwd / "hk_driver.py").write_text(_DRIVER, encoding="utf-8")
    return Interactive(env, *args, feed=False, module="hk_driver")


def _summary_script(env: Env) -> Path:
    config(("context_window", 400), ("compaction.keep_recent_tokens", 20))
    return write_script(env.tmp / "s.yaml", [{"text": "one " * 300}, {"text": "never used"}])


def test_ctrl_c_caught_inside_a_string_exec_still_exits_130(env: Env) -> None:
    """The window of the flaky test, made certain: a Ctrl-C that leaves a string exec (CPython 3.11-3.13
    then marks the run as ended by an unhandled Ctrl-C, even though the turn handled it) exits 130, not
    killed by SIGINT (-2) at the interpreter's end."""
    chat = _driven(env, "chat", "--model", f"script:{_summary_script(env)}", "-p", "first", "-p", "second")
    try:
        code = chat.wait()
    finally:
        chat.kill()
    err = "".join(chat.err)
    assert code == 130, err
    assert "[aborted]" in err and "Traceback" not in err
    _assert_aborted_and_saved(env)


def test_a_second_ctrl_c_during_shutdown_ends_at_once_with_130(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the aborted turn is saved, a second Ctrl-C while the interpreter shuts down (here an exit
    handler that would wait a minute) ends the process at once, still with 130 and no traceback."""
    monkeypatch.setenv("SLOW_EXIT", "1")
    code, err = _ctrl_c_at(
        _driven(env, "chat", "--model", f"script:{_summary_script(env)}", "-p", "first", "-p", "second"),
        "[shutting down]")
    assert code == 130, err
    assert "[shut down]" not in err  # it did not wait the shutdown out
    _assert_aborted_and_saved(env)


def test_a_ctrl_c_during_the_shutdown_of_a_finished_command_keeps_its_code(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C that comes once the command's work is done interrupts nothing: validate's 0 stands."""
    monkeypatch.setenv("SLOW_EXIT", "1")
    code, err = _ctrl_c_at(_driven(env, "validate", V3_DIR / "s01_new.jsonl"), "[shutting down]")
    assert code == 0, err
    assert "[shut down]" not in err
