"""A session file is input from outside (issue 6, items 1, 5, 6): what it says widens nothing.

Its header's cwd is a claim, not where tools run; its numbers may be any size; its paths may be
any length. Each through the CLI, as a user who was sent such a file would meet it.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from writeside_helpers import V3_FILES, Env, invoke, isolate, only_session, read_lines, write_script

from harnesskit.session.store import NAME_MAX, encode_cwd

S02 = next(p for p in V3_FILES if p.name == "s02_continue_tool.jsonl")


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def said(result) -> list[str]:  # noqa: ANN001 - a click Result
    """The warning and error lines of stderr (a chat's other notes go there too)."""
    return [line for line in result.stderr.splitlines() if line.startswith("harnesskit:")]


def with_header_cwd(directory: Path, cwd: str) -> Path:
    lines = S02.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0])
    header["cwd"] = cwd
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / S02.name
    path.write_text(json.dumps(header, separators=(",", ":")) + "\n" + "".join(lines[1:]), encoding="utf-8")
    return path


def tool_results(path: Path) -> list[dict]:
    return [e["message"] for e in read_lines(path)[1:]
            if e["type"] == "message" and e["message"]["role"] == "toolResult"]


# -- item 1: the tools' root comes from the process, never from the file -------------------------

def test_a_header_cwd_of_root_does_not_let_the_model_read_etc_passwd(env: Env) -> None:
    path = with_header_cwd(env.tmp / "in", "/")
    script = write_script(env.tmp / "s.yaml", [
        {"tool_calls": [{"name": "read", "arguments": {"path": "/etc/passwd"}},
                        {"name": "read", "arguments": {"path": "etc/passwd"}},
                        {"name": "ls", "arguments": {"path": "/root"}},
                        {"name": "ls", "arguments": {"path": "/"}}]},
        "done",
    ])
    result = invoke("continue", path, "--model", f"script:{script}", "-p", "go")
    assert result.exit_code == 0, result.stderr
    results = tool_results(path)[-4:]
    assert [r["toolName"] for r in results] == ["read", "read", "ls", "ls"]
    assert all(r["isError"] for r in results), results
    saved = path.read_text(encoding="utf-8")
    assert "root:x:0:0" not in saved and "root:x:0:0" not in result.stdout
    assert "bin/" not in json.dumps(results)  # nothing of / was listed
    warnings = said(result)
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("harnesskit: warning: ") and "'/'" in warnings[0]
    assert str(env.cwd) in warnings[0]  # says where tools are confined instead


def test_tools_run_where_harnesskit_runs_and_the_same_header_warns_nothing(env: Env) -> None:
    (env.cwd / "notes.txt").write_text("here", encoding="utf-8")
    path = with_header_cwd(env.tmp / "in", os.getcwd())
    script = write_script(env.tmp / "s.yaml", [
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}, "done"])
    result = invoke("continue", path, "--model", f"script:{script}", "-p", "go")
    assert result.exit_code == 0, result.stderr
    assert said(result) == []  # no warning, no error (the notes on stderr are not either)
    assert tool_results(path)[-1]["content"][0]["text"] == "here"


def test_cwd_option_sets_the_tool_root_for_chat_and_continue(env: Env) -> None:
    project = env.tmp / "project"
    project.mkdir()
    (project / "notes.txt").write_text("in project", encoding="utf-8")
    (env.cwd / "notes.txt").write_text("in cwd", encoding="utf-8")
    script = write_script(env.tmp / "s.yaml", [
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}},
                        {"name": "read", "arguments": {"path": "../work/notes.txt"}}]}, "done"])
    result = invoke("chat", "--cwd", project, "--model", f"script:{script}", "-p", "go")
    assert result.exit_code == 0, result.stderr
    session = only_session(env.home)
    assert session.parent.name == encode_cwd(str(project.resolve()))  # kept for that directory
    assert read_lines(session)[0]["cwd"] == str(project.resolve())
    first, second = tool_results(session)
    assert first["content"][0]["text"] == "in project" and not first["isError"]
    assert second["isError"] and "outside the working directory" in second["content"][0]["text"]
    # continue --cwd: the same root, and no warning (the header says the same)
    script2 = write_script(env.tmp / "s2.yaml", [
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}, "done"])
    result = invoke("continue", "--cwd", project, "--model", f"script:{script2}", "-p", "again")
    assert result.exit_code == 0, result.stderr
    assert said(result) == []  # no warning, no error (the notes on stderr are not either)
    assert tool_results(session)[-1]["content"][0]["text"] == "in project"
    assert invoke("chat", "--cwd", env.tmp / "nope", "-p", "x").exit_code == 2


def test_a_symlink_swapped_in_while_the_model_reads_never_leaks(env: Env) -> None:
    """A writer of the tree flips a file between a regular file and a symlink to a secret outside
    as fast as it can while the model reads it 200 times: every read gives the file or a refusal."""
    (env.tmp / "secret.txt").write_text("TOP-SECRET", encoding="utf-8")
    target = env.cwd / "file.txt"
    target.write_text("public", encoding="utf-8")
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            link, plain = env.cwd / ".link", env.cwd / ".plain"
            link.unlink(missing_ok=True)
            link.symlink_to(env.tmp / "secret.txt")
            os.replace(link, target)
            plain.write_text("public", encoding="utf-8")
            os.replace(plain, target)

    calls = [{"name": "read", "arguments": {"path": "file.txt"}} for _ in range(200)]
    script = write_script(env.tmp / "s.yaml", [{"tool_calls": calls}, "done"])
    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    try:
        result = invoke("chat", "--model", f"script:{script}", "-p", "go")
    finally:
        stop.set()
        flipper.join()
    assert result.exit_code == 0, result.stderr
    results = tool_results(only_session(env.home))
    assert len(results) == 200
    assert "TOP-SECRET" not in result.stdout
    for r in results:
        text = r["content"][0]["text"]
        assert "TOP-SECRET" not in text
        assert text == "public" or r["isError"], text


# -- item 5: integers beyond any float in usage ----------------------------------------------------

def test_stats_sums_usage_integers_too_big_for_a_float(env: Env) -> None:
    huge = 10**400
    src = S02.read_text(encoding="utf-8")
    src = (src.replace('"input":582', '"input":1.5', 1).replace('"input":588', f'"input":{huge}', 1)
              .replace('"total":0}', f'"total":{huge}}}', 1))
    path = env.tmp / "huge.jsonl"
    path.write_text(src, encoding="utf-8")
    result = invoke("inspect", path, "--stats")
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert str(huge + 1 + 589)[:30] in result.stdout  # 1.5 + huge + 589 (the third turn), exact
    result = invoke("inspect", path, "--stats", "--json")
    assert result.exit_code == 0, (result.stderr, result.exception)
    stats = json.loads(result.stdout)
    assert stats["tokens"]["input"] == huge + 1 + 589
    assert stats["cost"] == huge
    assert stats["tokens"]["output"] == 2 + 7 + 10


def test_stats_with_floats_summing_past_the_float_range(env: Env) -> None:
    src = S02.read_text(encoding="utf-8")
    src = src.replace('"input":582', '"input":1e308', 1).replace('"input":588', '"input":1.7e308', 1)
    path = env.tmp / "big.jsonl"
    path.write_text(src, encoding="utf-8")
    result = invoke("inspect", path, "--stats", "--json")
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert json.loads(result.stdout)["tokens"]["input"] == int(1e308) + int(1.7e308) + 589


# -- item 6: a cwd too long for one directory name -------------------------------------------------

def test_continue_a_file_whose_header_cwd_is_longer_than_a_file_name(env: Env) -> None:
    path = with_header_cwd(env.tmp / "in", "/home/" + "a" * 300 + "/proj")
    result = invoke("continue", path, "-p", "hello")
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert read_lines(path)[-1]["message"]["role"] == "assistant"
    warnings = said(result)  # the model's and the cwd's, nothing else
    assert len(warnings) == 2 and all(w.startswith("harnesskit: warning: ") for w in warnings), warnings


def test_chat_and_continue_in_a_directory_deeper_than_a_file_name(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = env.cwd
    for part in ("d" * 100, "é" * 60, "e" * 100):
        deep = deep / part
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert len(os.fsencode(os.getcwd())) > NAME_MAX  # pi's own name (as long) would not fit
    result = invoke("chat", "-p", "hello")
    assert result.exit_code == 0, (result.stderr, result.exception)
    session = only_session(env.home)
    name = session.parent.name
    assert len(os.fsencode(name)) <= NAME_MAX and name.startswith("--") and name.endswith("--")
    result = invoke("continue", "-p", "what is 12*8")
    assert result.exit_code == 0, (result.stderr, result.exception)
    assert "Restored 2 messages" in result.stderr  # found this directory's session again
    assert only_session(env.home) == session
    listed = invoke("list", "--json")
    assert json.loads(listed.stdout)["path"] == str(session)


def test_encode_cwd_is_pis_name_whenever_it_fits() -> None:
    assert encode_cwd("/home/dev/proj") == "--home-dev-proj--"
    assert encode_cwd("C:\\Users\\me") == "--C--Users-me--"
    fits = "/" + "x" * (NAME_MAX - 4)
    assert encode_cwd(fits) == f"--{'x' * (NAME_MAX - 4)}--"
    a, b = encode_cwd("/" + "x" * 300 + "/a"), encode_cwd("/" + "x" * 300 + "/b")
    assert a != b and len(a) == len(b) == NAME_MAX
    assert encode_cwd("/" + "x" * 300 + "/a") == a  # the same on every run
