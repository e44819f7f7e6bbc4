"""`harnesskit config`: round trips that keep comments and order, precedence, and chat honouring it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from writeside_helpers import (
    Env,
    assert_one_error,
    invoke,
    isolate,
    messages_of,
    only_session,
    read_lines,
    session_files,
    write_script,
)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def user_file(env: Env) -> Path:
    return env.home / "config.yaml"


def get(key: str) -> str:
    result = invoke("config", "get", key)
    assert result.exit_code == 0, result.stderr
    return result.stdout.rstrip("\n")


def test_set_get_round_trip(env: Env) -> None:
    assert get("model") == "demo"  # the default
    assert get("base_url") == ""
    result = invoke("config", "set", "model", "openai:llama3")
    assert result.exit_code == 0, result.stderr
    assert str(user_file(env)) in result.stdout
    assert get("model") == "openai:llama3"
    assert invoke("config", "set", "session_dir", "8080").exit_code == 0  # a string that looks like a number
    assert get("session_dir") == "8080"
    assert invoke("config", "set", "tools", "calc,ls").exit_code == 0
    assert get("tools") == "calc,ls"
    assert user_file(env).read_text() == "model: openai:llama3\nsession_dir: '8080'\ntools: calc,ls\n"
    listing = invoke("config", "list").stdout.splitlines()
    assert f"model = openai:llama3  ({user_file(env)})" in listing
    assert "fsync = turn  (default)" in listing


def test_comments_and_order_kept(env: Env) -> None:
    original = (
        "# harnesskit settings, written by hand\n"
        "tools: calc   # only the calculator\n"
        "\n"
        "# durability\n"
        "fsync: never\n"
        "model: demo\n"
    )
    user_file(env).parent.mkdir(parents=True)
    user_file(env).write_text(original)
    assert invoke("config", "set", "fsync", "always").exit_code == 0
    assert invoke("config", "set", "session_dir", "~/kept").exit_code == 0
    text = user_file(env).read_text()
    assert text == original.replace("fsync: never", "fsync: always") + "session_dir: ~/kept\n"
    assert get("fsync") == "always"


def test_comment_only_file_keeps_its_comments(env: Env) -> None:
    original = "# my settings\n# model: openai:llama3\n"
    user_file(env).parent.mkdir(parents=True)
    user_file(env).write_text(original)
    assert invoke("config", "set", "model", "demo").exit_code == 0
    assert user_file(env).read_text() == original + "model: demo\n"
    assert get("model") == "demo"


def test_project_file_wins(env: Env) -> None:
    assert invoke("config", "set", "tools", "calc").exit_code == 0
    assert invoke("config", "set", "fsync", "never").exit_code == 0
    result = invoke("config", "set", "--project", "tools", "ls")
    assert result.exit_code == 0, result.stderr
    project = env.cwd / ".harnesskit.yaml"
    assert project.read_text() == "tools: ls\n"
    assert get("tools") == "ls"
    assert get("fsync") == "never"  # not set in the project: the user's value
    listing = invoke("config", "list").stdout
    assert f"tools = ls  ({project})" in listing and f"fsync = never  ({user_file(env)})" in listing

    sub = env.cwd / "deep" / "er"
    sub.mkdir(parents=True)
    os.chdir(sub)  # found from a subdirectory too
    try:
        assert get("tools") == "ls"
    finally:
        os.chdir(env.cwd)


def test_chat_honours_model_tools_and_session_dir(env: Env) -> None:
    script = write_script(env.cwd / "cfg.yaml", [{"tool_calls": [{"name": "calc", "arguments": {"expression": "1+1"}}]},
                                                 "configured"])
    flat = env.tmp / "configured-sessions"
    user_file(env).parent.mkdir(parents=True)
    user_file(env).write_text(f"model: script:{script}\nsession_dir: {flat}\ntools: ls\n")
    result = invoke("chat", "-p", "go")
    assert result.exit_code == 0, result.stderr
    path = only_session(flat)
    assert session_files(env.home) == []
    msgs = messages_of(read_lines(path))
    assert msgs[1]["model"] == "cfg"
    assert msgs[2]["isError"] is True  # tools: ls, so calc is not offered
    assert "available: ls" in msgs[2]["content"][0]["text"]

    # flags win over the config
    result = invoke("chat", "--model", "demo", "--tools", "calc", "--session-dir", env.tmp / "flag", "-p",
                    "what is 12*8")
    assert result.exit_code == 0, result.stderr
    assert "[result] calc → 96" in result.stderr
    assert only_session(env.tmp / "flag")


@pytest.mark.parametrize("policy", ["always", "turn", "never"])
def test_chat_honours_fsync(env: Env, monkeypatch: pytest.MonkeyPatch, policy: str) -> None:
    (env.cwd / ".harnesskit.yaml").write_text(f"fsync: {policy}\n")
    synced: list[str] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    result = invoke("chat", "-p", "hello", "-p", "what is 12*8")
    assert result.exit_code == 0, result.stderr
    path = only_session(env.home)
    on_file = synced.count(str(path))
    entries = len(read_lines(path)) - 1
    if policy == "never":
        assert synced == []
    elif policy == "always":
        # every write: the first one carries the header and the 3 entries held before the first reply
        assert on_file == entries - 3
    else:
        assert on_file == 3  # once per model turn (greeting, calc call, answer), not per entry


def test_unknown_key(env: Env) -> None:
    assert "unknown config key 'colour'" in assert_one_error(invoke("config", "set", "colour", "blue"))
    assert_one_error(invoke("config", "get", "colour"))
    assert not user_file(env).exists()
    user_file(env).parent.mkdir(parents=True)
    user_file(env).write_text("colour: blue\n")
    assert "colour" in assert_one_error(invoke("chat", "-p", "hello"))
    assert session_files(env.home) == []


def test_bad_fsync(env: Env) -> None:
    assert "fsync" in assert_one_error(invoke("config", "set", "fsync", "sometimes"))
    assert not user_file(env).exists()
    (env.cwd / ".harnesskit.yaml").write_text("fsync: sometimes\n")
    assert "fsync" in assert_one_error(invoke("chat", "-p", "hello"))
    assert "fsync" in assert_one_error(invoke("config", "get", "model"))
    assert invoke("chat", "--fsync", "sometimes", "-p", "hello").exit_code == 2
    assert session_files(env.home) == []


@pytest.mark.parametrize("text", ["model: [unclosed\n", "- just\n- a list\n", "model: demo\n\tbad: tab\n"])
def test_broken_yaml_is_one_line(env: Env, text: str) -> None:
    user_file(env).parent.mkdir(parents=True)
    user_file(env).write_text(text)
    line = assert_one_error(invoke("config", "get", "model"))
    assert str(user_file(env)) in line
    assert_one_error(invoke("chat", "-p", "hello"))
    assert_one_error(invoke("config", "list"))
    assert_one_error(invoke("config", "set", "model", "demo"))
    assert user_file(env).read_text() == text  # never rewritten over a file it cannot read
    assert session_files(env.home) == []


def test_set_project_writes_the_project_file_in_effect(env: Env) -> None:
    project = env.cwd / ".harnesskit.yaml"
    project.write_text("# project settings\nmodel: demo\ntools: calc\n")
    sub = env.cwd / "src" / "pkg"
    sub.mkdir(parents=True)
    os.chdir(sub)
    try:
        result = invoke("config", "set", "--project", "fsync", "always")
        assert result.exit_code == 0, result.stderr
        assert str(project) in result.stdout
        assert not (sub / ".harnesskit.yaml").exists()  # a new file here would shadow the project's
        assert get("tools") == "calc" and get("fsync") == "always"
    finally:
        os.chdir(env.cwd)
    assert project.read_text() == "# project settings\nmodel: demo\ntools: calc\nfsync: always\n"
