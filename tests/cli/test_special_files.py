"""A device given as a session file is refused in one line (exit 2) by every command, and so is a pipe
or FIFO by every command that cannot stream one: they take a file's size from its stat, seek in it
or read it twice, so such input looked empty (`validate <(cat f)` reported a valid file as "empty
file"), failed on a seek, blocked for ever (a FIFO with no writer), or grew one line without end
(/dev/zero)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from writeside_helpers import V3_FILES, Env, hk, isolate

GOOD = V3_FILES[0]
# what cannot stream a pipe (the table, --json, --stats, --tree and `migrate --check` do: their tests
# feed a FIFO as it is written, tests/process/test_inspect_stream.py and test_stats_lanes.py)
COMMANDS = [["validate"], ["inspect", "--context"], ["inspect", "--leaf", "abcd"], ["export", "--md"],
            ["export", "--html"], ["fork"], ["migrate"], ["import"], ["compact", "--model", "demo"], ["index"],
            ["continue", "--model", "demo", "-p", "hi"]]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def refused(proc: subprocess.CompletedProcess[str], what: str, kind: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.splitlines() == [f"harnesskit: error: {what}: {kind}, not a regular file: "
                                        "save what it gives to a file first"], proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_fifo_is_refused_at_once(env: Env, command: list[str]) -> None:
    fifo = env.tmp / "session.jsonl"
    os.mkfifo(fifo)
    refused(hk(env, *command, fifo, timeout=60), str(fifo), "a pipe")  # no writer: opening it would block


@pytest.mark.parametrize("command", [["validate"], ["inspect"], ["inspect", "--json"], ["migrate", "--check"],
                                     ["export", "--md"]], ids=" ".join)
def test_dev_zero_is_refused_not_read_for_ever(env: Env, command: list[str]) -> None:
    refused(hk(env, *command, "/dev/zero", timeout=60), "/dev/zero", "a device")


def test_process_substitution_is_refused_not_found_empty(env: Env) -> None:
    """`validate <(cat file)`: a pipe named /dev/fd/N, with a writer. It said "empty file" and exit 1."""
    read, write = os.pipe()
    feeder = subprocess.Popen(["cat", str(GOOD)], stdout=write)
    os.close(write)
    try:
        proc = subprocess.run([sys.executable, "-m", "harnesskit", "validate", f"/dev/fd/{read}"],
                              env=env.environ(), cwd=env.cwd, capture_output=True, text=True, timeout=60,
                              pass_fds=(read,))
    finally:
        os.close(read)
        feeder.wait(timeout=30)
    refused(proc, f"/dev/fd/{read}", "a pipe")


def test_the_same_bytes_as_a_file_or_on_standard_input_are_read(env: Env) -> None:
    copy = env.tmp / "copy.jsonl"
    shutil.copyfile(GOOD, copy)
    assert hk(env, "validate", copy).returncode == 0
    proc = hk(env, "validate", "-", input=GOOD.read_text(encoding="utf-8"))
    assert proc.returncode == 0, proc.stderr


def test_validate_of_a_closed_standard_input_is_one_line(env: Env) -> None:
    proc = subprocess.run([sys.executable, "-m", "harnesskit", "validate", "-"], env=env.environ(), cwd=env.cwd,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          preexec_fn=lambda: os.close(0))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["harnesskit: error: standard input: cannot read it: it is closed"]
