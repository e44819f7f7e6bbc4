"""One way to name a session everywhere: a path, an id prefix or a /name, for continue, fork,
inspect and validate, with a list of the candidates when a name or prefix is ambiguous."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from writeside_helpers import Env, assert_one_error, invoke, isolate, messages_of, read_lines, session_files

from harnesskit.session import store


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def named_chat(env: Env, name: str, prompt: str = "hello") -> Path:
    before = set(session_files(env.home))
    result = invoke("chat", "-p", prompt, "-p", f"/name {name}")
    assert result.exit_code == 0, result.stderr
    [path] = set(session_files(env.home)) - before
    return path


@pytest.mark.parametrize("how", ["name", "name-other-case", "id-prefix", "path"])
def test_every_command_takes_each_kind_of_reference(env: Env, how: str) -> None:
    path = named_chat(env, "Refactor Parser")
    named_chat(env, "something else")
    ref = {"name": "Refactor Parser", "name-other-case": "refactor parser",
           "id-prefix": read_lines(path)[0]["id"][:-4], "path": str(path)}[how]

    shown = invoke("inspect", ref, "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout.splitlines()[0])["header"]["id"] == read_lines(path)[0]["id"]

    checked = invoke("validate", "--format", "json", ref)
    assert checked.exit_code == 0, checked.stderr
    assert [f["file"] for f in json.loads(checked.stdout)["files"]] == [str(path)]

    went_on = invoke("continue", ref, "-p", "what is 2+2")
    assert went_on.exit_code == 0, went_on.stderr
    assert messages_of(read_lines(path))[-1]["content"][0]["text"] == "2+2 = 4."

    forked = invoke("fork", ref)  # last: the fork has the same name (and so makes the name ambiguous)
    assert forked.exit_code == 0, forked.stderr
    assert read_lines(Path(forked.stdout.strip()))[0]["parentSession"] == str(path.resolve())


def test_a_name_is_found_from_another_directory(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    path = named_chat(env, "far away")
    elsewhere = env.tmp / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert invoke("inspect", "far away").exit_code == 0
    assert invoke("continue", "far away", "-p", "hello").exit_code == 0
    assert len(messages_of(read_lines(path))) == 4


def test_an_ambiguous_name_lists_the_candidates(env: Env) -> None:
    a = named_chat(env, "dup", "first prompt")
    b = named_chat(env, "dup", "second prompt")
    before = (a.read_bytes(), b.read_bytes())
    for command in (["continue", "dup", "-p", "x"], ["fork", "dup"], ["inspect", "dup"], ["validate", "dup"]):
        line = assert_one_error(invoke(*command))
        assert "'dup' matches 2 sessions" in line
        for path in (a, b):
            assert read_lines(path)[0]["id"] in line and str(path) in line
    assert (a.read_bytes(), b.read_bytes()) == before
    assert len(session_files(env.home)) == 2  # fork wrote nothing


def test_nothing_matches(env: Env) -> None:
    named_chat(env, "real")
    for command in (["continue", "unreal", "-p", "x"], ["fork", "unreal"], ["inspect", "unreal"]):
        assert "no session file, session id or session name matches 'unreal'" in assert_one_error(invoke(*command))
    assert "no such file or directory" in assert_one_error(invoke("validate", "unreal"))
    assert "gone.jsonl: no such file" in assert_one_error(invoke("inspect", "gone.jsonl"))


def test_find_session_looks_here_first(env: Env) -> None:
    here = store.session_dir(os.getcwd())
    mine = named_chat(env, "shared name")
    other = env.sessions / "--elsewhere--"
    other.mkdir(parents=True)
    (other / mine.name.replace(".jsonl", "-copy.jsonl")).write_bytes(mine.read_bytes())
    assert store.find_session("shared name", here) == mine  # found here: the other directory is not asked
    with pytest.raises(store.SessionRefError) as raised:
        store.find_session("shared name", env.tmp / "empty")
    assert len(raised.value.matches) == 2
