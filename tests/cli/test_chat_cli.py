"""`harnesskit chat`: where the file goes, what is in it, and the in-chat commands."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from writeside_helpers import (
    SESSION_NAME,
    Env,
    Interactive,
    assert_chain,
    assert_one_error,
    assert_pi_shape,
    assert_strict_valid,
    hk,
    invoke,
    isolate,
    messages_of,
    only_session,
    read_lines,
    roles,
    session_files,
    strip_timestamps,
    write_script,
)

from harnesskit.agent.loop import drive, run_agent
from harnesskit.agent.messages import user_message
from harnesskit.agent.models.demo import GREETING_REPLY, DemoModel
from harnesskit.agent.tools import select_tools
from harnesskit.session.loader import load_session
from harnesskit.session.tree import build_context

FIRST_RUN = ("hello", "what is 12*8")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def expected_dir(cwd: str) -> str:
    """pi's encoding, written out independently: drop leading /, every / \\ : becomes -, wrap in --."""
    body = cwd.lstrip("/")
    for ch in "/\\:":
        body = body.replace(ch, "-")
    return f"--{body}--"


# -- the file ------------------------------------------------------------------------------------

def test_chat_writes_a_pi_session_where_pi_would(env: Env) -> None:
    result = invoke("chat", "-p", "hello", "-p", "what is 12*8")
    assert result.exit_code == 0, (result.stdout, result.stderr)

    path = only_session(env.home)
    cwd = os.getcwd()
    assert path.parent == env.home / "sessions" / expected_dir(cwd)
    assert path.parent.name.startswith("--") and path.parent.name.endswith("--") and "/" not in path.parent.name
    match = SESSION_NAME.match(path.name)
    assert match, path.name

    lines = read_lines(path)
    header = lines[0]
    assert header["id"] == match.group("id")
    assert path.name.startswith(header["timestamp"].replace(":", "-").replace(".", "-") + "_")
    assert header["cwd"] == cwd
    assert "parentSession" not in header
    assert_pi_shape(lines)

    entries = lines[1:]
    assert [e["type"] for e in entries[:2]] == ["model_change", "thinking_level_change"]
    assert entries[0]["provider"] == "harnesskit" and entries[0]["modelId"] == "demo"
    assert entries[1]["thinkingLevel"] == "off"
    assert all(e["type"] == "message" for e in entries[2:])
    assert roles(lines) == ["user", "assistant", "user", "assistant", "toolResult", "assistant"]
    assert_chain(entries, None)

    msgs = messages_of(lines)
    assert msgs[0]["content"] == [{"type": "text", "text": "hello"}]
    assert msgs[1]["stopReason"] == "stop"
    calls = [b for b in msgs[3]["content"] if b["type"] == "toolCall"]
    assert [(c["name"], c["arguments"]) for c in calls] == [("calc", {"expression": "12*8"})]
    assert msgs[3]["stopReason"] == "toolUse"
    assert msgs[4]["toolCallId"] == calls[0]["id"] and msgs[4]["toolName"] == "calc"
    assert msgs[4]["isError"] is False
    assert msgs[4]["content"] == [{"type": "text", "text": "96"}]
    assert "96" in msgs[5]["content"][0]["text"]
    for m in msgs:
        if m["role"] == "assistant":
            assert (m["api"], m["provider"], m["model"]) == ("harnesskit-demo", "harnesskit", "demo")

    # stdout is the answer and only the answer (as pi -p); the tools and the session path are notes on stderr
    assert result.stdout.splitlines() == [GREETING_REPLY, *[m["content"][0]["text"] for m in msgs[3::2]]]
    notes = result.stderr.splitlines()
    assert notes[:2] == ['[tool] calc {"expression": "12*8"}', "[result] calc → 96"]
    assert str(path) in notes[-1]

    assert_strict_valid(path)


def test_context_read_back_equals_the_loops_messages(env: Env) -> None:
    result = invoke("chat", "-p", FIRST_RUN[0], "-p", FIRST_RUN[1])
    assert result.exit_code == 0, result.stderr
    session = load_session(only_session(env.home))
    context = build_context(session.tree)

    in_memory: list[dict] = []
    tools = select_tools(["calc", "read", "ls"])  # chat's default tool set
    for prompt in FIRST_RUN:
        end = drive(run_agent(in_memory, user_message(prompt), DemoModel(), tools, cwd=env.cwd), lambda e: None)
        assert not end.error and not end.aborted
    assert len(in_memory) == 6
    assert strip_timestamps(context.messages) == strip_timestamps(in_memory)
    assert context.model == {"provider": "harnesskit", "modelId": "demo"}
    assert context.thinking_level == "off"


def test_session_dir_flag_and_env_are_used_flat(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    flat = env.tmp / "flat"
    result = invoke("chat", "--session-dir", flat, "-p", "hello")
    assert result.exit_code == 0, result.stderr
    path = only_session(flat)
    assert path.parent == flat and SESSION_NAME.match(path.name)
    assert session_files(env.home) == []

    by_env = env.tmp / "by-env"
    monkeypatch.setenv("HARNESSKIT_SESSION_DIR", str(by_env))
    result = invoke("chat", "-p", "hello")
    assert result.exit_code == 0, result.stderr
    assert only_session(by_env).parent == by_env
    assert session_files(env.home) == []

    # the flag wins over the variable
    result = invoke("chat", "--session-dir", flat, "-p", "hello")
    assert result.exit_code == 0
    assert len(session_files(flat)) == 2 and len(session_files(by_env)) == 1


def test_no_session_writes_nothing(env: Env) -> None:
    result = invoke("chat", "--no-session", "-p", "hello", "-p", "what is 12*8")
    assert result.exit_code == 0, result.stderr
    assert "[result] calc → 96" in result.stderr
    assert "not saved" in result.stderr
    assert session_files(env.tmp) == []
    assert not (env.home / "sessions").exists()


@pytest.mark.parametrize("stdin", ["", "/help\n", "\n\n/help\n/exit\n"])
def test_no_reply_no_file(env: Env, stdin: str) -> None:
    result = invoke("chat", input=stdin)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert session_files(env.tmp) == []
    assert "not created" in result.stderr
    if "/help" in stdin:
        assert "/branch ID" in result.stderr


def test_help_only_prompt_creates_no_file(env: Env) -> None:
    result = invoke("chat", "-p", "/help")
    assert result.exit_code == 0
    assert session_files(env.tmp) == []


def test_piped_lines_are_acted_on_as_they_arrive(env: Env) -> None:
    chat = Interactive(env, "chat")
    try:
        chat.send("hello")
        chat.expect(GREETING_REPLY)  # answered while stdin is still open
        path = only_session(env.home)  # and already on disk
        assert roles(read_lines(path)) == ["user", "assistant"]
        chat.send("what is 12*8")
        chat.expect("12*8 = 96.")
        assert chat.close() == 0
    finally:
        chat.kill()
    assert roles(read_lines(path)) == ["user", "assistant", "user", "assistant", "toolResult", "assistant"]
    assert_strict_valid(path)


# -- failures --------------------------------------------------------------------------------------

def test_a_first_turn_failing_before_any_reply_leaves_no_file(env: Env) -> None:
    script = write_script(env.cwd / "boom.yaml", [{"error": "boom"}])
    result = invoke("chat", "--model", f"script:{script}", "-p", "hello", "-p", "never asked")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("harnesskit: error:")]
    assert len(errors) == 1 and "boom" in errors[0], result.stderr
    assert "session: not created" in result.stderr
    assert result.stdout == ""
    assert session_files(env.tmp) == []


def test_a_failure_after_the_first_reply_is_saved(env: Env) -> None:
    script = write_script(env.cwd / "boom.yaml", ["fine", {"error": "boom"}])
    result = invoke("chat", "--model", f"script:{script}", "-p", "hello", "-p", "again", "-p", "never asked")
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert result.stdout == "fine\n"
    path = only_session(env.home)
    file_lines = read_lines(path)
    assert roles(file_lines) == ["user", "assistant", "user", "assistant"]  # the third prompt was not run
    last = messages_of(file_lines)[-1]
    assert last["stopReason"] == "error" and last["errorMessage"] == "boom"
    assert file_lines[1]["modelId"] == "boom"
    assert_pi_shape(file_lines)
    assert_strict_valid(path)


def test_model_error_in_piped_chat_exits_1(env: Env) -> None:
    script = write_script(env.cwd / "boom.yaml", [{"text": "part", "error": "boom"}])
    result = invoke("chat", "--model", f"script:{script}", input="hello\n")
    assert result.exit_code == 1
    assert "boom" in result.stderr
    last = messages_of(read_lines(only_session(env.home)))[-1]
    assert last["stopReason"] == "error" and last["errorMessage"] == "boom"
    assert last["content"] == [{"type": "text", "text": "part"}]


def test_unknown_tool_exit_2(env: Env) -> None:
    line = assert_one_error(invoke("chat", "--tools", "calc,nope", "-p", "hello"))
    assert "nope" in line
    assert session_files(env.tmp) == []


@pytest.mark.parametrize("spec", ["nope", "script:", "script:missing.yaml", "openai:"])
def test_bad_model_exit_2(env: Env, spec: str) -> None:
    assert_one_error(invoke("chat", "--model", spec, "-p", "hello"))
    assert session_files(env.tmp) == []


def test_unwritable_session_dir_is_one_error(env: Env) -> None:
    blocker = env.tmp / "a-file"
    blocker.write_text("not a directory")
    line = assert_one_error(invoke("chat", "--session-dir", blocker / "sub", "-p", "hello", "-p", "what is 12*8"))
    assert "cannot write the session" in line and "internal error" not in line
    assert blocker.read_text() == "not a directory"


def test_bad_script_yaml_exit_2(env: Env) -> None:
    bad = env.cwd / "bad.yaml"
    bad.write_text("- text: [unclosed\n", encoding="utf-8")
    assert_one_error(invoke("chat", "--model", f"script:{bad}", "-p", "hello"))


def test_tools_calc_only(env: Env) -> None:
    script = write_script(env.cwd / "s.yaml", [
        {"tool_calls": [{"name": "read", "arguments": {"path": "x"}}, {"name": "calc",
                                                                      "arguments": {"expression": "2+2"}}]},
        "done",
    ])
    result = invoke("chat", "--tools", "calc", "--model", f"script:{script}", "-p", "go")
    assert result.exit_code == 0, result.stderr
    msgs = messages_of(read_lines(only_session(env.home)))
    assert [m["role"] for m in msgs] == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    read_result, calc_result = msgs[2], msgs[3]
    assert read_result["toolName"] == "read" and read_result["isError"] is True
    assert "unknown tool" in read_result["content"][0]["text"]
    assert calc_result["isError"] is False and calc_result["content"][0]["text"] == "4"

    # the demo model asked to calculate without calc says so instead of calling it
    result = invoke("chat", "--tools", "ls", "-p", "what is 12*8")
    assert result.exit_code == 0
    assert "not enabled" in result.stdout and "[tool]" not in result.output


# -- in-chat commands ------------------------------------------------------------------------------

def test_unknown_command_reports_and_chat_goes_on(env: Env) -> None:
    result = invoke("chat", "-p", "hello", "-p", "/frobnicate now", "-p", "what is 12*8")
    assert result.exit_code == 0
    assert [line for line in result.stderr.splitlines() if line.startswith("harnesskit:")] == [
        "harnesskit: error: unknown command /frobnicate (try /help)"]
    assert "[result] calc → 96" in result.stderr
    assert len(messages_of(read_lines(only_session(env.home)))) == 6

    result = invoke("chat", input="/frobnicate\nhello\n")
    assert result.exit_code == 0
    assert "unknown command /frobnicate" in result.stderr
    assert GREETING_REPLY in result.stdout


def test_name_label_and_model_switch_via_prompts(env: Env) -> None:
    script = write_script(env.cwd / "other.yaml", ["from the script"])
    result = invoke("chat", "-p", "hello", "-p", "/name  my  session ", "-p", "/label nothing-here x",
                    "-p", f"/model script:{script}", "-p", "hi", "-p", "/model demo", "-p", "/model demo")
    assert result.exit_code == 0, result.stderr
    assert "no entry" in result.stderr  # the /label of an unknown entry
    lines = read_lines(only_session(env.home))
    types = [e["type"] if e["type"] != "message" else e["message"]["role"] for e in lines[1:]]
    assert types == ["model_change", "thinking_level_change", "user", "assistant", "session_info",
                     "model_change", "user", "assistant", "model_change"]
    assert lines[5]["name"] == "my  session"
    assert (lines[6]["provider"], lines[6]["modelId"]) == ("harnesskit", "other")
    assert lines[8]["message"]["model"] == "other"
    assert lines[8]["message"]["content"][0]["text"] == "from the script"
    assert lines[9]["modelId"] == "demo"  # one model_change: switching to the same model adds none
    assert_chain(lines[1:], None)
    assert_strict_valid(only_session(env.home))


def test_commands_in_a_piped_chat(env: Env) -> None:
    chat = Interactive(env, "chat")
    try:
        chat.send("hello")
        chat.expect(GREETING_REPLY)
        path = only_session(env.home)
        first = read_lines(path)
        user1, assistant1 = first[3]["id"], first[4]["id"]
        chat.send("what is 12*8")
        chat.expect("12*8 = 96.")

        chat.send(f"/label {assistant1} greeted")
        chat.expect(f"labelled {assistant1} 'greeted'")
        chat.send("/name demo talk")
        chat.expect("session named 'demo talk'")
        chat.send("/branch greeted")  # by label
        chat.expect(f"leaf moved to {assistant1}; 2 messages in context")
        chat.send("/tree")
        chat.send("/model")
        tree = chat.expect("model: harnesskit/demo")
        chat.send("/nonsense")
        chat.send("/model demo")
        chat.expect("model: harnesskit/demo")
        chat.send("hello again")
        chat.expect(GREETING_REPLY)
        chat.send("/tree")
        chat.send("/model")
        branched = chat.expect("model: harnesskit/demo")
        before_fork = path.read_bytes()

        chat.send(f"/fork {user1[:5]}")  # fork at a prefix
        forked_line = chat.expect("forked to ")[-1]
        chat.send("what did you compute before?")
        chat.expect("I have not computed anything yet.")
        assert chat.close() == 0
    finally:
        chat.kill()
    errors = [line for line in "".join(chat.err).splitlines() if line.startswith("harnesskit:")]
    assert errors == ["harnesskit: error: unknown command /nonsense (try /help)"]
    assert "".join(chat.out).splitlines() == [GREETING_REPLY, "Let me calculate.", "12*8 = 96.", GREETING_REPLY,
                                              "I have not computed anything yet."]  # only the answers

    tree_text = "".join(tree)
    assert f"{assistant1} message:assistant [greeted]" in tree_text
    assert "├─ " not in tree_text  # one chain so far
    assert tree_text.count("← leaf") == 1
    leaf_row = next(row for row in tree if "← leaf" in row)
    assert leaf_row.startswith(assistant1)  # /branch moved the leaf before /tree drew it
    branched_text = "".join(branched)
    assert "├─ " in branched_text and "└─ " in branched_text  # the new branch at assistant1 is drawn
    assert branched_text.count("← leaf") == 1

    lines = read_lines(path)
    assert path.read_bytes() == before_fork  # after /fork, the old file gets nothing more
    by_id = {e["id"]: e for e in lines[1:]}
    label = next(e for e in lines[1:] if e["type"] == "label")
    assert label["targetId"] == assistant1 and label["label"] == "greeted"
    info = next(e for e in lines[1:] if e["type"] == "session_info")
    assert info["name"] == "demo talk" and info["parentId"] == label["id"]
    new_user = lines[-2]
    assert new_user["message"]["role"] == "user" and new_user["message"]["content"][0]["text"] == "hello again"
    assert new_user["parentId"] == assistant1  # /branch: the next message hangs off the target
    assert by_id[lines[-1]["parentId"]] is new_user
    branched_leaf = next(row for row in branched if "← leaf" in row)
    assert f"{lines[-1]['id']} message:assistant" in branched_leaf
    assert_strict_valid(path)

    forked = Path(forked_line.split("forked to ", 1)[1].strip())
    assert forked != path and forked.parent == path.parent and SESSION_NAME.match(forked.name)
    fork_lines = read_lines(forked)
    assert fork_lines[0]["parentSession"] == str(path.resolve())
    # /fork at user1 forks before it, as pi does: the path root -> user1's parent (no label:
    # "greeted" is not on it), then the new prompt and its reply; no dangling user message
    assert [e["type"] for e in fork_lines[1:3]] == ["model_change", "thinking_level_change"]
    assert [e["id"] for e in fork_lines[1:3]] == [e["id"] for e in first[1:3]]
    assert roles(fork_lines) == ["user", "assistant"]
    assert fork_lines[3]["parentId"] == first[2]["id"]
    assert fork_lines[3]["message"]["content"][0]["text"] == "what did you compute before?"
    assert_chain(fork_lines[1:], None)
    assert_strict_valid(forked)


def test_fork_command_without_a_file_is_refused(env: Env) -> None:
    result = invoke("chat", "-p", "/fork", "-p", "hello")
    assert result.exit_code == 0
    assert "nothing to fork yet" in result.stderr
    assert GREETING_REPLY in result.stdout
    result = invoke("chat", "--no-session", "-p", "/fork")  # in memory there is always something
    assert "forked in memory: 0 messages in context" in result.stderr


def test_fork_in_memory_with_no_session(env: Env) -> None:
    """pi: 'should support in-memory forking in --no-session mode': the fork before the only
    user message leaves an empty conversation, its text offered again, and no file anywhere."""
    chat = Interactive(env, "chat", "--no-session")
    try:
        chat.send("Say hi")
        chat.send("/tree")
        rows = chat.expect("message:user")
        user = next(row for row in rows if "message:user" in row).split()[0]
        chat.send(f"/fork {user}")
        chat.expect("forked in memory: 0 messages in context")
        chat.expect("offered again: Say hi")
        assert chat.close() == 0
    finally:
        chat.kill()
    result = invoke("chat", "--no-session", "-p", "hello", "-p", "/fork", "-p", "what is 2*3")
    assert result.exit_code == 0, result.stderr
    assert "forked in memory: 2 messages in context" in result.stderr
    assert "2*3 = 6." in result.stdout
    assert not (env.home / "sessions").exists()


def test_exit_command_stops_the_prompts(env: Env) -> None:
    result = invoke("chat", "-p", "hello", "-p", "/exit", "-p", "what is 12*8")
    assert result.exit_code == 0
    assert "[tool]" not in result.stdout
    assert roles(read_lines(only_session(env.home))) == ["user", "assistant"]


def test_real_process_chat_stdin_at_eof(env: Env) -> None:
    done = hk(env, "chat", input="")
    assert done.returncode == 0, done.stderr
    assert session_files(env.tmp) == []
    done = hk(env, "chat", "-p", "hello", "-p", "what is 12*8")
    assert done.returncode == 0, done.stderr
    assert "[result] calc → 96" in done.stderr.splitlines()
    assert done.stdout.splitlines()[-1] == "12*8 = 96."
    path = only_session(env.home)
    assert json.loads(path.read_text().splitlines()[0])["cwd"] == str(env.cwd.resolve())
