"""The progress bar: on a terminal's stderr only, after its delay, erased at the end; never in a pipe,
never with quiet, never on stdout (issue 7)."""

from __future__ import annotations

import importlib.util
import io
import json
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


def run_with_terminal_stderr(env: Env, *args: object, columns: str = "100") -> tuple[int, str, str]:
    """The CLI with stderr on a pseudo-terminal and stdout on a pipe: (exit code, stdout, terminal)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "harnesskit", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=slave, stdin=subprocess.DEVNULL, cwd=env.cwd,
                            env=env.environ(HARNESSKIT_PROGRESS_AFTER="0", COLUMNS=columns))
    os.close(slave)
    seen, out = b"", b""
    out_fd = proc.stdout.fileno()
    open_fds = [master, out_fd]
    while open_fds:  # both at once: a big stdout nobody reads would stop the command
        ready, _, _ = select.select(open_fds, [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("no output from the command for 60 s")
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the child closed the terminal
                chunk = b""
            if not chunk:
                open_fds.remove(fd)
            elif fd == master:
                seen += chunk
            else:
                out += chunk
    os.close(master)
    proc.stdout.close()
    return proc.wait(timeout=60), out.decode(), seen.decode(errors="replace")


def test_validate_shows_a_bar_on_a_terminal(env: Env, big: Path) -> None:
    code, stdout, terminal = run_with_terminal_stderr(env, "validate", big)
    assert code == 0
    assert "big.jsonl [" in terminal and "%" in terminal and "/3 MB" in terminal  # redraws are throttled: 1+
    assert terminal.rstrip().endswith("\r\x1b[K")  # erased when done
    assert stdout.startswith("checked 1 file, 3000 entries") and "\r" not in stdout and "#" not in stdout


def test_a_bar_under_an_absurd_columns_is_at_most_10000_wide(env: Env, big: Path) -> None:
    """COLUMNS=10**20 made the bar's fill an OverflowError (an internal error, exit 2): it is held to
    10,000 columns, as every table is."""
    code, stdout, terminal = run_with_terminal_stderr(env, "validate", big, columns="99999999999999999999")
    assert code == 0, terminal
    assert "big.jsonl [" in terminal and "internal error" not in terminal
    assert max(map(len, terminal.split("\r"))) <= 10_000
    assert stdout.startswith("checked 1 file, 3000 entries")


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


def bar_shown(terminal: str, name: str = "big.jsonl") -> bool:
    """The bar was drawn (file name, brackets, a percentage, the total) and erased at the end."""
    return f"{name} [" in terminal and "%" in terminal and "/3 MB" in terminal and terminal.endswith("\r\x1b[K")


INSPECT_MODES = [[], ["--json"], ["--stats"], ["--tree"], ["--context"], ["--tree", "--json"], ["--leaf", "LEAF"]]


def leaf_id(path: Path) -> str:
    return json.loads(path.read_bytes().splitlines()[-1])["id"]


@pytest.mark.parametrize("mode", INSPECT_MODES, ids=lambda m: " ".join(m) or "table")
def test_inspect_shows_a_bar_while_it_reads(env: Env, big: Path, mode: list[str]) -> None:
    mode = [leaf_id(big) if a == "LEAF" else a for a in mode]
    code, stdout, terminal = run_with_terminal_stderr(env, "inspect", big, *mode)
    assert code == 0 and stdout
    assert bar_shown(terminal), terminal[-300:]
    assert "\r" not in stdout and "MB" not in stdout.splitlines()[-1]  # nothing of the bar on stdout
    assert stdout == plain_stdout(env, "inspect", big, *mode)  # the same rows as without a terminal


def plain_stdout(env: Env, *args: object) -> str:
    """stdout and stderr of the CLI with both on pipes: no bar anywhere."""
    proc = subprocess.run([sys.executable, "-m", "harnesskit", *map(str, args)], capture_output=True, text=True,
                          cwd=env.cwd, env=env.environ(HARNESSKIT_PROGRESS_AFTER="0", COLUMNS="100"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # stderr is a pipe: no bar
    return proc.stdout


@pytest.mark.parametrize("mode", INSPECT_MODES[:4], ids=lambda m: " ".join(m) or "table")
def test_inspect_quiet_shows_no_bar(env: Env, big: Path, mode: list[str]) -> None:
    code, stdout, terminal = run_with_terminal_stderr(env, "inspect", big, *mode, "-q")
    assert code == 0 and stdout and terminal == ""


def test_fork_and_continue_show_a_bar_while_they_load(env: Env, big: Path) -> None:
    code, stdout, terminal = run_with_terminal_stderr(env, "fork", big, "--session-dir", env.tmp / "forks")
    assert code == 0 and bar_shown(terminal.split("\r\x1b[K")[0] + "\r\x1b[K"), terminal[-300:]
    assert "\r" not in stdout and Path(stdout.strip()).is_file()
    plain_stdout(env, "fork", big, "--session-dir", env.tmp / "forks2")  # no bar on a pipe (asserted there)

    own = env.tmp / "mine.jsonl"
    own.write_bytes(big.read_bytes())
    code, stdout, terminal = run_with_terminal_stderr(env, "continue", own, "-p", "hello")
    assert code == 0, terminal
    assert "mine.jsonl [" in terminal and "%" in terminal and "\r\x1b[K" in terminal  # the load, then the turn
    assert "\r" not in stdout and "MB" not in stdout


def test_migrate_shows_a_bar_while_it_reads_a_legacy_file(env: Env, big: Path) -> None:
    lines = big.read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["version"] = 2  # a v2 file: read in full to be migrated
    legacy = env.tmp / "old.jsonl"
    legacy.write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines[1:]))
    code, stdout, terminal = run_with_terminal_stderr(env, "migrate", "--check", legacy)
    assert code == 1 and stdout.startswith(f"would migrate {legacy}")
    assert bar_shown(terminal, "old.jsonl"), terminal[-300:]
    code, stdout, terminal = run_with_terminal_stderr(env, "migrate", "--check", "-q", legacy)
    assert code == 1 and terminal == ""
    proc = subprocess.run([sys.executable, "-m", "harnesskit", "migrate", str(legacy)], capture_output=True,
                          text=True, cwd=env.cwd, env=env.environ(HARNESSKIT_PROGRESS_AFTER="0"), timeout=120)
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout.startswith(f"migrated {legacy}")
