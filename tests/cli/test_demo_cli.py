"""`harnesskit demo`: both runs, everything under --dir, the first run's bytes kept as a prefix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from writeside_helpers import Env, assert_strict_valid, hk, invoke, isolate, only_session, read_lines, roles

import harnesskit.cli.demo as demo_module

FIRST_ROLES = ["user", "assistant", "user", "assistant", "toolResult", "assistant"]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def all_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_demo_two_runs(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshots: list[tuple[Path, bytes]] = []
    real_show = demo_module._show_file

    def recording_show(path: Path) -> bytes:
        snapshots.append((path, path.read_bytes()))  # the file as it is when the demo prints it
        return real_show(path)

    monkeypatch.setattr(demo_module, "_show_file", recording_show)
    directory = env.tmp / "demo dir"
    result = invoke("demo", "--dir", directory)
    assert result.exit_code == 0, (result.stdout, result.stderr)

    out = result.stdout
    first_part, _, second_part = out.partition("=== Restart")
    assert second_part, out
    assert '[tool] calc {"expression": "12*8"}' in first_part.splitlines()
    assert "[result] calc → 96" in first_part.splitlines()
    assert "12*8 = 96." in first_part
    assert "Restored 6 messages: user → assistant → user → assistant → toolResult → assistant" in second_part
    answer = second_part.split("you> what did you compute before?", 1)[1].strip().splitlines()[0]
    assert "96" in answer
    assert "Every line of the first run is unchanged: yes" in out

    # every file under --dir; nothing in HARNESSKIT_HOME or the working directory
    files = all_files(env.tmp)
    assert files and all(directory in p.parents for p in files), files
    assert not env.home.exists()
    assert all_files(env.cwd) == []

    path = only_session(directory)
    assert [p for p, _ in snapshots] == [path, path]
    first_bytes = snapshots[0][1]
    final = path.read_bytes()
    assert final.startswith(first_bytes) and len(final) > len(first_bytes)
    assert snapshots[1][1] == final
    first_lines = [json.loads(line) for line in first_bytes.decode().splitlines()]
    assert roles(first_lines) == FIRST_ROLES
    lines = read_lines(path)
    assert roles(lines) == [*FIRST_ROLES, "user", "assistant"]
    assert lines[0]["cwd"] == str(directory.resolve())
    assert lines[len(first_lines)]["parentId"] == first_lines[-1]["id"]
    assert_strict_valid(path)


def test_demo_default_dir_as_a_process(env: Env) -> None:
    done = hk(env, "demo", timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Restored 6 messages" in done.stdout
    files = all_files(env.tmp)
    assert files and all((env.cwd / ".demo") in p.parents for p in files), files
    path = only_session(env.cwd / ".demo")
    assert roles(read_lines(path)) == [*FIRST_ROLES, "user", "assistant"]

    again = hk(env, "demo", timeout=60)  # a second demo in the same directory starts a new session
    assert again.returncode == 0, again.stderr
    assert "Restored 6 messages" in again.stdout
    sessions = sorted((env.cwd / ".demo").rglob("*.jsonl"))
    assert len(sessions) == 2
    assert all(roles(read_lines(p)) == [*FIRST_ROLES, "user", "assistant"] for p in sessions)
