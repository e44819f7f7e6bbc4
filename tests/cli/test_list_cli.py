"""`harnesskit list`: newest first, name or first message, message count, path; --json, -n, --all."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from writeside_helpers import Env, invoke, isolate, only_session, read_lines, session_files

from harnesskit.session.store import encode_cwd


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def chat(*prompts: str) -> Path:
    before = set(session_files(Path(os.environ["HARNESSKIT_HOME"])))
    args: list[str] = ["chat"]
    for p in prompts:
        args += ["-p", p]
    result = invoke(*args)
    assert result.exit_code == 0, result.stderr
    (new,) = set(session_files(Path(os.environ["HARNESSKIT_HOME"]))) - before
    return new


def json_rows(*args: object) -> list[dict]:
    result = invoke("list", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_list_newest_first_with_name_or_first_message(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # room for whole paths and messages
    a = chat("hello", "what is 12*8")
    b = chat("what is 2+3", "/name  sums  ", "/name arithmetic")
    c = chat("hello there friend")
    for i, path in enumerate((c, b, a)):  # file times the other way round: pi's order ignores them
        os.utime(path, (1_000_000 * (i + 1), 1_000_000 * (i + 1)))

    result = invoke("list", "--full-path")
    assert result.exit_code == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0].split() == ["modified", "name", "msgs", "model", "first", "message", "path"]
    rows = out[1:]
    assert len(rows) == 3
    assert [next(str(p) for p in (a, b, c) if str(p) in row) for row in rows] == [str(c), str(b), str(a)]
    row_c, row_b, row_a = rows
    assert " hello " in row_a and " 6 " in row_a and " demo " in row_a
    assert " arithmetic " in row_b and "sums" not in row_b and " 4 " in row_b  # the latest /name
    assert " hello there friend " in row_c and " 2 " in row_c

    rows_json = json_rows()
    assert [r["path"] for r in rows_json] == [str(c), str(b), str(a)]
    by_path = {r["path"]: r for r in rows_json}
    last_a = max(e["message"]["timestamp"] for e in read_lines(a)[1:] if e["type"] == "message")
    assert by_path[str(a)] == {
        "path": str(a), "id": read_lines(a)[0]["id"], "modified": last_a / 1000, "cwd": os.getcwd(), "name": None,
        "firstMessage": "hello", "messages": 6, "model": "demo"}
    assert by_path[str(b)]["name"] == "arithmetic" and by_path[str(b)]["firstMessage"] == "what is 2+3"
    assert by_path[str(c)]["messages"] == 2

    assert [r["path"] for r in json_rows("-n", "2")] == [str(c), str(b)]
    limited = invoke("list", "-n", "1", "--full-path")
    assert limited.exit_code == 0 and len(limited.stdout.splitlines()) == 2 and str(c) in limited.stdout
    assert invoke("list", "-n", "0").exit_code == 2

    assert invoke("continue", a, "-p", "what is 1+1").exit_code == 0  # a new message: a is the newest now
    assert [r["path"] for r in json_rows()] == [str(a), str(c), str(b)]


def test_list_all_across_directories(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = chat("hello")
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    there = chat("what is 2+3")
    assert here.parent.name == encode_cwd(str(env.cwd.resolve()))
    assert here.parent != there.parent

    assert [r["path"] for r in json_rows()] == [str(there)]
    everything = json_rows("--all")
    assert sorted(r["path"] for r in everything) == sorted([str(here), str(there)])
    assert {r["cwd"] for r in everything} == {str(env.cwd.resolve()), str(other.resolve())}
    result = invoke("list", "--all", "--full-path")
    assert str(here) in result.stdout and str(there) in result.stdout

    monkeypatch.chdir(env.cwd)
    assert [r["path"] for r in json_rows()] == [str(here)]


def test_list_session_dir_and_empty(env: Env) -> None:
    result = invoke("list")
    assert result.exit_code == 0
    assert result.stdout == "" and "no sessions" in result.stderr
    assert invoke("list", "--json").stdout == ""

    flat = env.tmp / "flat"
    assert invoke("chat", "--session-dir", flat, "-p", "hello").exit_code == 0
    path = only_session(flat)
    assert [r["path"] for r in json_rows("--session-dir", flat)] == [str(path)]
    assert json_rows() == []


def test_list_skips_junk_and_reads_pi_files(env: Env) -> None:
    directory = env.sessions / encode_cwd(os.getcwd())
    directory.mkdir(parents=True)
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "pi" / "v3" / "s12_meta_entries.jsonl"
    (directory / "a.jsonl").write_bytes(fixture.read_bytes())
    (directory / "junk.jsonl").write_bytes(b"not json\n")
    (directory / "empty.jsonl").write_bytes(b"")
    (directory / "notes.txt").write_text("ignored")
    rows = json_rows()
    assert len(rows) == 1
    expected_messages = sum(1 for line in fixture.read_text().splitlines() if json.loads(line)["type"] == "message")
    assert rows[0]["messages"] == expected_messages
    name = [json.loads(line) for line in fixture.read_text().splitlines()
            if json.loads(line)["type"] == "session_info"][-1]["name"]
    assert rows[0]["name"] == name.strip()


def test_list_two_thousand_sessions(env: Env) -> None:
    directory = env.sessions / encode_cwd(os.getcwd())
    directory.mkdir(parents=True)
    count = 2000
    for i in range(count):
        sid = f"01a23000-0000-7000-8000-{i:012d}"
        header = {"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z",
                  "cwd": os.getcwd()}
        user = {"type": "message", "id": f"{i:08x}", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": [{"type": "text", "text": f"prompt {i}"}],
                            "timestamp": 1_800_000_000_000 + i}}
        path = directory / f"2026-01-01T00-00-00-000Z_{sid}.jsonl"
        path.write_text(json.dumps(header, separators=(",", ":")) + "\n"
                        + json.dumps(user, separators=(",", ":")) + "\n")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))

    rows = json_rows()
    assert len(rows) == count
    assert rows[0]["firstMessage"] == f"prompt {count - 1}"  # newest first
    assert rows[-1]["firstMessage"] == "prompt 0"
    assert all(r["messages"] == 1 for r in rows)
    assert len({r["id"] for r in rows}) == count

    table = invoke("list")
    assert table.exit_code == 0
    assert len(table.stdout.splitlines()) == count + 1
    assert len(json_rows("-n", "5")) == 5
