"""Where harnesskit and pi's own loader disagreed (issue 9): duplicate ids, files pi would
damage, label timestamps in a fork, sibling order, migrated header keys, thinking levels.

The pi behaviour each test stands for is named (pi-reference §, or the pi-mono test).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import V3_FILES, read_objects, write_lines
from test_openai_model import FakeServer, chunk, sse, usage_chunk
from test_openai_model import server as server  # noqa: PLC0414 - the fixture, re-exported
from writeside_helpers import (
    Env,
    assert_one_error,
    assert_strict_valid,
    invoke,
    isolate,
    only_session,
    read_lines,
    roles,
    session_files,
)

from harnesskit.session.index import load_for_continue
from harnesskit.session.loader import load_session
from harnesskit.session.tree import build_context

BY_STEM = {p.stem: p for p in V3_FILES}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


# ---------------------------------------------------------------- duplicate ids (pi-reference §5.3)


def test_a_duplicate_id_links_to_the_last_entry_in_full_and_lazy_loads(tmp_path: Path, run) -> None:  # noqa: ANN001
    """pi's byId keeps the later line: the child of a duplicated id hangs off the second one."""
    objects = read_objects(BY_STEM["s02_continue_tool"])
    header, entries = objects[0], objects[1:]
    user = next(e for e in entries if e["type"] == "message" and e["message"]["role"] == "user")
    twin = {**user, "parentId": None, "message": {**user["message"], "content": [{"type": "text", "text": "TWIN"}]}}
    child = {"type": "message", "id": "c0ffee01", "parentId": user["id"], "timestamp": user["timestamp"],
             "message": {"role": "user", "content": [{"type": "text", "text": "after"}], "timestamp": 1}}
    path = write_lines(tmp_path / "dup.jsonl", [header, *entries, twin, child])
    full = build_context(load_session(path).tree)
    lazy = build_context(load_for_continue(path).tree)
    texts = [m["content"][0]["text"] for m in full.messages if m["role"] == "user"]
    assert texts == ["TWIN", "after"]
    assert full.messages == lazy.messages
    found = run("validate", path, "--format", "json")
    assert found.exit_code == 1 and "duplicate" in found.stdout


# ---------------------------------------------------------------- forks pi would damage (§4, §7)


def chat_three(env: Env) -> tuple[Path, list[dict]]:
    assert invoke("chat", "-p", "Say one", "-p", "Say two", "-p", "Say three").exit_code == 0
    path = only_session(env.home)
    return path, [e for e in read_lines(path)[1:] if e["type"] == "message"]


def test_fork_command_at_a_user_message_forks_before_it(env: Env) -> None:
    """pi: 'should fork from middle of conversation' (agent-session-branching.test.ts): the fork
    at the second user message holds the first exchange, and the message's text is given back."""
    path, messages = chat_three(env)
    result = invoke("fork", path, "--at", messages[2]["id"])
    assert result.exit_code == 0, result.stderr
    assert "is a user message" in result.stderr and "Say two" in result.stderr
    new = Path(result.stdout.strip())
    assert [m["role"] for m in build_context(load_session(new).tree).messages] == ["user", "assistant"]
    assert_strict_valid(new)


def test_fork_command_at_the_first_user_message_writes_nothing(env: Env) -> None:
    """pi would write a second header and every entry again into a file without a reply."""
    path, messages = chat_three(env)
    line = assert_one_error(invoke("fork", path, "--at", messages[0]["id"]))
    assert "no assistant reply" in line and "continue" in line
    assert session_files(env.home) == [path]


def test_slash_fork_at_the_first_user_message_defers_the_file(env: Env) -> None:
    """pi: 'should allow forking from single message': after the fork the conversation is empty
    and the file appears only with the first reply (never a file pi would damage)."""
    assert invoke("chat", "-p", "Say hello").exit_code == 0
    path = only_session(env.home)
    user = next(e for e in read_lines(path)[1:] if e["type"] == "message")
    result = invoke("continue", path, "-p", f"/fork {user['id']}", "-p", "/tree")
    assert result.exit_code == 0, result.stderr
    assert "offered again: Say hello" in result.stderr and "written with the first one" in result.stderr
    assert session_files(env.home) == [path]  # nothing written: no reply on that path
    forked_line = next(line for line in result.stderr.splitlines() if line.startswith("forked to "))
    forked = Path(forked_line.removeprefix("forked to "))
    assert not forked.exists()
    result = invoke("continue", path, "-p", f"/fork {user['id']}", "-p", "Say hello again")
    assert result.exit_code == 0, result.stderr
    [new] = [p for p in session_files(env.home) if p != path]
    lines = read_lines(new)
    assert lines[0]["parentSession"] == str(path.resolve())
    assert roles(lines) == ["user", "assistant"]
    assert [e["type"] for e in lines[1:3]] == ["model_change", "thinking_level_change"]
    assert_strict_valid(new)


def test_a_forked_label_keeps_its_timestamp(env: Env) -> None:
    path, messages = chat_three(env)
    assert invoke("continue", path, "-p", f"/label {messages[1]['id']} first-answer").exit_code == 0
    [label] = [e for e in read_lines(path) if e["type"] == "label"]
    result = invoke("fork", path, "--at", messages[3]["id"])
    assert result.exit_code == 0, result.stderr
    [copied] = [e for e in read_lines(Path(result.stdout.strip())) if e["type"] == "label"]
    assert copied["timestamp"] == label["timestamp"] and copied["id"] != label["id"]


# ---------------------------------------------------------------- /tree order (pi's getTree)


def test_tree_orders_siblings_oldest_first(tmp_path: Path, run) -> None:  # noqa: ANN001
    objects = read_objects(BY_STEM["s10_branch_in_file"])
    kids: dict[str | None, list[dict]] = {}
    for entry in objects[1:]:
        kids.setdefault(entry.get("parentId"), []).append(entry)
    parent, siblings = next((p, k) for p, k in kids.items() if len(k) > 1)
    first, second = siblings[0], siblings[1]
    first["timestamp"], second["timestamp"] = "2030-01-01T00:00:00.000Z", "2020-01-01T00:00:00.000Z"
    path = write_lines(tmp_path / "order.jsonl", objects)
    rows = run("inspect", path, "--tree").stdout.splitlines()
    row_of = {entry_id: i for i, row in enumerate(rows) for entry_id in (first["id"], second["id"])
              if f"{entry_id} " in row}
    assert row_of[second["id"]] < row_of[first["id"]]  # the later line, but the older entry: drawn first
    assert parent is not None


# ---------------------------------------------------------------- migrate (§2.1, §4)


def test_migrated_header_keeps_its_key_order(tmp_path: Path, run) -> None:  # noqa: ANN001
    """pi assigns header.version: a v2 header keeps `version` where it was; a v1 header (none)
    gets it last."""
    objects = read_objects(BY_STEM["s02_continue_tool"])
    header = objects[0]
    v2 = {"type": "session", "version": 2, **{k: v for k, v in header.items() if k not in ("type", "version")}}
    path = write_lines(tmp_path / "v2.jsonl", [v2, *objects[1:]])
    assert run("migrate", path).exit_code == 0
    assert list(read_objects(path)[0]) == list(v2)
    v1 = {k: v for k, v in header.items() if k != "version"}
    path1 = write_lines(tmp_path / "v1.jsonl", [v1, *[{k: v for k, v in e.items() if k not in ("id", "parentId")}
                                                     for e in objects[1:]]])
    assert run("migrate", path1).exit_code == 0
    assert list(read_objects(path1)[0]) == [*v1, "version"]


def test_migrating_a_file_without_a_reply_says_what_pi_will_do(tmp_path: Path, run) -> None:  # noqa: ANN001
    objects = read_objects(BY_STEM["s02_continue_tool"])
    header = {**objects[0], "version": 2}
    kept = [e for e in objects[1:] if not (e["type"] == "message" and e["message"]["role"] != "user")]
    path = write_lines(tmp_path / "v2.jsonl", [header, *kept[:3]])
    result = run("migrate", path)
    assert result.exit_code == 0
    assert "no assistant reply" in result.stderr and "second header" in result.stderr


# ---------------------------------------------------------------- thinking levels


def reply(server: FakeServer, n: int = 1) -> None:
    for _ in range(n):
        server.reply(sse(chunk({"role": "assistant", "content": "ok"}), chunk({}, finish="stop"), usage_chunk(5, 1)))


def test_thinking_level_reaches_a_reasoning_model_and_is_restored(env: Env, server: FakeServer) -> None:  # noqa: F811
    reply(server, 3)
    spec = ("--model", "openai:o3-mini", "--base-url", server.base_url)
    result = invoke("chat", *spec, "-p", "hi", "-p", "/thinking high", "-p", "again")
    assert result.exit_code == 0, result.stderr
    assert "reasoning_effort" not in server.requests[0]
    assert server.requests[1]["reasoning_effort"] == "high"
    path = only_session(env.home)
    assert [e["thinkingLevel"] for e in read_lines(path) if e["type"] == "thinking_level_change"] == ["off", "high"]
    result = invoke("continue", path, *spec, "-p", "and again")  # continue restores the level
    assert result.exit_code == 0, result.stderr
    assert server.requests[2]["reasoning_effort"] == "high"


def test_thinking_level_is_not_sent_where_the_model_does_not_take_it(env: Env, server: FakeServer) -> None:  # noqa: F811
    reply(server, 2)
    spec = ("--model", "openai:llama3", "--base-url", server.base_url)
    assert invoke("chat", *spec, "-p", "/thinking medium", "-p", "hi").exit_code == 0
    assert "reasoning_effort" not in server.requests[0]
    assert invoke("config", "set", "reasoning_effort", "always").exit_code == 0
    assert invoke("continue", only_session(env.home), *spec, "-p", "hi").exit_code == 0
    assert server.requests[1]["reasoning_effort"] == "medium"


def test_a_summary_request_is_capped_at_four_fifths_of_the_reserve(env: Env, server: FakeServer) -> None:  # noqa: F811
    """pi: maxTokens = 0.8 x reserveTokens for the summary, reasoning off (the cut splits the
    last turn: a history summary and a turn-prefix summary, two requests)."""
    reply(server, 4)
    spec = ("--model", "openai:o3-mini", "--base-url", server.base_url)
    assert invoke("chat", *spec, "-p", "one", "-p", "/thinking high", "-p", "two").exit_code == 0
    path = only_session(env.home)
    result = invoke("compact", path, "--keep-recent", "1", *spec)
    assert result.exit_code == 0, result.stderr
    summary_request = server.requests[-2]
    assert summary_request["max_tokens"] == int(0.8 * 16384)
    assert server.requests[-1]["max_tokens"] == int(0.8 * 16384) // 2  # the turn prefix: half
    assert "reasoning_effort" not in summary_request and "tools" not in summary_request
    assert json.dumps(summary_request["messages"]).count("one") >= 1
