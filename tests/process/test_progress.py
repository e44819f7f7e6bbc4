"""The progress bar: on a terminal's stderr only, after its delay, erased at the end; never in a pipe,
never with quiet, never on stdout (issue 7)."""

from __future__ import annotations

import importlib.util
import io
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
from writeside_helpers import Env, isolate

from harnesskit.cli.progress import progress
from harnesskit.session.check import check_file

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate_progress", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate.generate(tmp_path_factory.mktemp("progress") / "big.jsonl", 3000, seed=5)  # ~3 MB


def run_with_terminal_stderr(env: Env, *args: object) -> tuple[int, str, str]:
    """The CLI with stderr on a pseudo-terminal and stdout on a pipe: (exit code, stdout, terminal)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "harnesskit", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=slave, stdin=subprocess.DEVNULL, cwd=env.cwd,
                            env=env.environ(HARNESSKIT_PROGRESS_AFTER="0", COLUMNS="100"))
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("no output from the terminal for 60 s")
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    stdout = proc.stdout.read().decode()
    return proc.wait(timeout=60), stdout, seen.decode(errors="replace")


def test_validate_shows_a_bar_on_a_terminal(env: Env, big: Path) -> None:
    code, stdout, terminal = run_with_terminal_stderr(env, "validate", big)
    assert code == 0
    assert "big.jsonl [" in terminal and "%" in terminal and "/3 MB" in terminal  # redraws are throttled: 1+
    assert terminal.rstrip().endswith("\r\x1b[K")  # erased when done
    assert stdout.startswith("checked 1 file, 3000 entries") and "\r" not in stdout and "#" not in stdout


def test_validate_shows_no_bar_in_a_pipe(env: Env, big: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "harnesskit", "validate", str(big)], capture_output=True, text=True,
                          cwd=env.cwd, env=env.environ(HARNESSKIT_PROGRESS_AFTER="0"), timeout=120)
    assert proc.returncode == 0
    assert proc.stderr == "" and "\r" not in proc.stdout


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_waits_its_delay_and_hears_quiet(big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    size = big.stat().st_size
    heard: list[int] = []
    terminal = FakeTerminal()
    monkeypatch.setenv("HARNESSKIT_PROGRESS_AFTER", "0")
    with progress(size, "big", stream=terminal) as bar:
        assert bar is not None

        def spy(done: int) -> None:
            heard.append(done)
            bar(done)

        assert check_file(big, workers=1, on_progress=spy).entries == 3000
    assert heard == sorted(heard) and heard[-1] == size  # bytes read, up to the whole file
    assert terminal.getvalue().startswith("\rbig [") and terminal.getvalue().endswith("\r\x1b[K")

    with progress(size, "big", quiet=True, stream=FakeTerminal()) as bar:
        assert bar is None  # -q: no bar, and the core reads without a callback
    monkeypatch.setenv("HARNESSKIT_PROGRESS_AFTER", "3600")
    quick = FakeTerminal()
    with progress(size, "big", stream=quick) as bar:
        check_file(big, workers=1, on_progress=bar)
    assert quick.getvalue() == ""  # a read shorter than the delay shows nothing


def test_list_shows_a_bar_while_it_reads_a_big_session(env: Env, big: Path) -> None:
    directory = env.tmp / "sessions-here"
    directory.mkdir()
    (directory / big.name).write_bytes(big.read_bytes())
    code, stdout, terminal = run_with_terminal_stderr(env, "list", "--session-dir", directory)
    assert code == 0 and "big.jsonl" in stdout
    assert "reading sessions [" in terminal and terminal.rstrip().endswith("\r\x1b[K")
    code, stdout, terminal = run_with_terminal_stderr(env, "list", "--session-dir", directory)
    assert code == 0 and terminal == ""  # the cache answers: nothing read, no bar
