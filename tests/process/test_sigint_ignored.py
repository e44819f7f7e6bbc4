"""The Ctrl-C tests hold when the test run itself was started with SIGINT ignored (a background
job, `nohup`, some CI runners): an ignored SIGINT is inherited, so the helpers start each chat as a
shell's foreground job would, with SIGINT at its default."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from writeside_helpers import Env, isolate, popen, write_script

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_an_ignored_sigint_is_inherited_and_the_helpers_undo_it(env: Env) -> None:
    """Why the helpers do what they do: started with SIGINT ignored, a chat mid-turn shrugs off
    SIGINT (it finishes its reply and exits 0); started by the helpers, it is aborted (130)."""
    script = write_script(env.cwd / "slow.yaml", [{"text": "Starting.\n" + "slow " * 20, "chunks": 20,
                                                  "delay": 0.05}] * 2)
    codes = {}
    for how, preexec in (("ignored", _ignore_sigint), ("helpers", None)):
        kwargs = {} if preexec is None else {"preexec_fn": preexec}
        chat = popen(env, "chat", "--model", f"script:{script}", "-p", "go", **kwargs)
        try:
            assert chat.stdout is not None
            assert chat.stdout.readline().startswith("Starting.")  # mid-turn now
            chat.send_signal(signal.SIGINT)
            codes[how] = chat.wait(timeout=60)
        finally:
            chat.kill()
            chat.communicate()
    assert codes == {"ignored": 0, "helpers": 130}


def test_sigint_tests_pass_under_a_pytest_started_with_sigint_ignored(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider",
                          "-k", "sigint", str(TESTS / "test_processes.py"), "--basetemp", str(tmp_path / "inner")],
                         cwd=TESTS.parents[1], env=env, capture_output=True, text=True, timeout=300,
                         preexec_fn=_ignore_sigint)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout, run.stdout[-2000:]
