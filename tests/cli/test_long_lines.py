"""A line longer than reader.MAX_LINE is refused as it is read, in one line naming the file (exit 2),
by every command that reads lines; memory stays bounded by it. A file with no newline was held
whole, twice: 3 GB of zeros took 6.4 GB of memory (issue 6: no size of input exhausts memory)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from writeside_helpers import Env, invoke, isolate

from harnesskit.session import reader

HEADER = {"type": "session", "version": 3, "id": "01a230cf-2eb1-72c4-b2ff-010f77fef347",
          "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
USER = {"type": "message", "id": "aaaa1111", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "hi", "timestamp": 1767225600000}}
COMMANDS = [["validate"], ["inspect"], ["inspect", "--json"], ["inspect", "--tree"], ["inspect", "--stats"],
            ["inspect", "--context"], ["export", "--md"], ["fork"]]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    monkeypatch.setattr(reader, "MAX_LINE", 64 << 10)  # in this process (and the workers it forks)
    return isolate(tmp_path, monkeypatch)


def session(path: Path, long: int, newline: bool = True) -> Path:
    """A header, a user message, then an assistant message whose line is `long` bytes and more."""
    filler = json.dumps({"type": "message", "id": "bbbb2222", "parentId": "aaaa1111",
                         "timestamp": "2026-01-01T00:00:01.000Z",
                         "message": {"role": "assistant", "content": [{"type": "text", "text": "a" * long}],
                                     "api": "a", "provider": "p", "model": "m", "stopReason": "stop",
                                     "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                               "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                                                          "cacheWrite": 0, "total": 0}},
                                     "timestamp": 1767225601000}})
    path.write_text(json.dumps(HEADER) + "\n" + json.dumps(USER) + "\n" + filler + ("\n" if newline else ""),
                    encoding="utf-8")
    return path


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_line_past_the_limit_is_refused_in_one_line(env: Env, command: list[str]) -> None:
    path = session(env.tmp / "long.jsonl", 1 << 20)
    result = invoke(*command, path)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert lines[-1].startswith(f"harnesskit: error: {path}: a line from about byte ") and "64 KiB" not in lines[-1]
    assert "runs past 0 MiB without a newline" in lines[-1] and "internal error" not in result.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_lines_within_the_limit_are_read(env: Env, command: list[str]) -> None:
    path = session(env.tmp / "fine.jsonl", 40 << 10)
    result = invoke(*command, path)
    assert result.exit_code == 0, result.output


def test_the_index_and_list_pass_over_such_a_file(env: Env) -> None:
    directory = env.sessions / "--w--"
    directory.mkdir(parents=True)
    session(directory / "long.jsonl", 1 << 20)
    session(directory / "fine.jsonl", 10)
    for args in (["index"], ["list", "--all", "--json"], ["search", "hi", "--all", "--json"]):
        result = invoke(*args)
        assert result.exit_code == 0, (args, result.output)
    shown = [json.loads(line)["path"] for line in invoke("search", "hi", "--all", "--json").stdout.splitlines()]
    assert shown == [str(directory / "fine.jsonl")]


@pytest.mark.parametrize("command", [["validate"], ["inspect"], ["inspect", "--json"]], ids=" ".join)
def test_a_file_of_gigabytes_without_a_newline_takes_no_more_memory_than_the_limit(tmp_path: Path,
                                                                               command: list[str]) -> None:
    """The real limit (512 MiB), a real process: 3 GB of zeros (a sparse file: no disk) after a header."""
    path = tmp_path / "zeros.jsonl"
    with path.open("wb") as fp:
        fp.write((json.dumps(HEADER) + "\n" + json.dumps(USER) + "\n").encode())
        fp.truncate(fp.tell() + (3072 << 20))
    probe = ("import resource, subprocess, sys;"
             "done = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
             "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss);"
             "print(done.stderr, end='')")
    proc = subprocess.run([sys.executable, "-c", probe, sys.executable, "-m", "harnesskit", *command, str(path)],
                          capture_output=True, text=True, timeout=600)
    first, *errors = proc.stdout.splitlines()
    code, peak_kib = map(int, first.split())
    assert code == 2 and errors == [f"harnesskit: error: {path}: a line from about byte "
                                    f"{path.stat().st_size - (3072 << 20):,} runs past 512 MiB without a newline:"
                                    " no session file harnesskit reads"], proc.stdout
    assert peak_kib < 3 << 19, f"peak {peak_kib} KiB"  # under 1.5 GiB (the line alone was 3 GB, held twice)
