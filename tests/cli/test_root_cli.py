"""The root command: a bare `harnesskit` is help, typos get a suggestion, completion works."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import assert_one_line_error


def test_bare_harnesskit_shows_help_and_exits_0() -> None:
    result = subprocess.run([sys.executable, "-m", "harnesskit"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("Usage: harnesskit")
    assert "validate" in result.stdout and "Shell completion" in result.stdout


def test_a_typo_gets_did_you_mean(run) -> None:
    line = assert_one_line_error(run("inspet", "x.jsonl"), 2)
    assert "no such command 'inspet'; did you mean 'inspect'?" in line
    assert "did you mean 'continue'" in assert_one_line_error(run("contineu"), 2)
    far = assert_one_line_error(run("frobnicate"), 2)
    assert "did you mean" not in far and "harnesskit --help" in far


def test_bash_completion_script_and_completions() -> None:
    env = {**os.environ, "_HARNESSKIT_COMPLETE": "bash_source"}
    script = subprocess.run([sys.executable, "-m", "harnesskit"], env=env, capture_output=True, text=True, timeout=60)
    assert script.returncode == 0 and "_harnesskit_completion" in script.stdout
    env = {**os.environ, "_HARNESSKIT_COMPLETE": "bash_complete", "COMP_WORDS": "harnesskit va", "COMP_CWORD": "1"}
    done = subprocess.run([sys.executable, "-m", "harnesskit"], env=env, capture_output=True, text=True, timeout=60)
    assert "plain,validate" in done.stdout.splitlines()


@pytest.mark.parametrize(("args", "said"), [
    (["search"], "Missing argument 'QUERY'. (see: harnesskit search --help)"),
    (["inspect", "--bogus", "x.jsonl"], "No such option '--bogus'. (see: harnesskit inspect --help)"),
    (["usage", "yearly"], "'yearly' is not one of 'daily'"),
    (["inspect", "--width", "0", "x.jsonl"], "0 is not in the range 1<=x<=10000"),
    (["list", "-n", "x"], "'x' is not a valid integer"),
    (["--bogus"], "No such option '--bogus'. (see: harnesskit --help)"),
    (["config", "get"], "Missing argument 'KEY'. (see: harnesskit config get --help)"),
])
def test_a_usage_error_is_one_line_naming_the_help(run, args: list[str], said: str) -> None:  # noqa: ANN001
    """Click's own form takes four lines (usage, a hint, a blank line, the error)."""
    assert said in assert_one_line_error(run(*args), 2)


def test_a_usage_error_is_one_line_in_a_real_process() -> None:
    result = subprocess.run([sys.executable, "-m", "harnesskit", "search"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "harnesskit: error: Missing argument 'QUERY'. (see: harnesskit search --help)\n"
