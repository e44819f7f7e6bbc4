"""inspect at any size: the table and --json stream (bounded memory, the first row before the file is
read, `| head` exits 0), every table fits the terminal in display width, a pager only on a terminal;
and migrate --check of a v3 file reads its header only. Real processes where it matters."""

from __future__ import annotations

import importlib.util
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import TUTORIAL_DIR, V3_DIR, read_objects, write_lines
from wcwidth import wcswidth
from writeside_helpers import Env, isolate

from harnesskit.cli.table import FORMATS

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hk_generate_stream", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

S12 = V3_DIR / "s12_meta_entries.jsonl"
PYTHON = [sys.executable, "-m", "harnesskit"]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Generated pi sessions: 2,000 entries (~2 MB) and 20,000 (~20 MB)."""
    out = tmp_path_factory.mktemp("generated")
    return {"small": generate.generate(out / "small.jsonl", 2_000, seed=5),
            "big": generate.generate(out / "big.jsonl", 20_000, seed=6)}


def peak_rss_kb(env: Env, *argv: object) -> int:
    """The peak RSS of a command, measured from a fresh helper process (its only child)."""
    probe = ("import resource, subprocess, sys\n"
             "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", probe, *map(str, argv)], env=env.environ(), capture_output=True,
                          text=True, timeout=300, check=True)
    return int(done.stdout)


@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["table", "json"])
def test_memory_does_not_grow_with_the_file(env: Env, sessions: dict[str, Path], mode: list[str]) -> None:
    small = peak_rss_kb(env, *PYTHON, "inspect", sessions["small"], *mode)
    big = peak_rss_kb(env, *PYTHON, "inspect", sessions["big"], *mode)
    assert big <= 1.3 * small, (small, big)  # ten times the file, not ten times the memory


def test_the_memory_probe_sees_growth(env: Env, sessions: dict[str, Path]) -> None:
    """The bound above can fail: a process keeping every entry of the big file breaks it."""
    keep = "import json, sys\nkept = [json.loads(line) for line in open(sys.argv[1], 'rb')]"
    small = peak_rss_kb(env, sys.executable, "-c", keep, sessions["small"])
    big = peak_rss_kb(env, sys.executable, "-c", keep, sessions["big"])
    assert big > 1.3 * small, (small, big)


@pytest.mark.parametrize("mode", [[], ["--json"], ["--tree"]], ids=["table", "json", "tree"])
def test_head_exits_0(env: Env, sessions: dict[str, Path], mode: list[str]) -> None:
    """`harnesskit inspect big | head -1`: the reader stops early; that is no error (exit 0, no noise)."""
    script = 'set -o pipefail; "$@" | head -1'
    done = subprocess.run(["bash", "-c", script, "bash", *PYTHON, "inspect", str(sessions["big"]), *mode],
                          env=env.environ(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert len(done.stdout.splitlines()) == 1


@pytest.mark.parametrize("mode", ["--md", "--html"])
def test_export_to_a_pipe_closed_early_exits_0(env: Env, tmp_path: Path, mode: str) -> None:
    """`harnesskit export FILE --md | head -1` ends as inspect does: exit 0, nothing on stderr (it
    said "harnesskit: error: stdout: Broken pipe" and exited 2). The page is far beyond a pipe's
    buffer, so the export is still writing when the reader goes."""
    path = generate.generate(tmp_path / "s.jsonl", 500, seed=7)
    proc = subprocess.Popen([*PYTHON, "export", str(path), mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env.environ())
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader leaves after one line
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, stderr
    assert stderr == ""
    assert first.startswith(b"# " if mode == "--md" else b"<!doctype html>")


def _kill_later(proc: subprocess.Popen, seconds: float) -> threading.Timer:
    """A guard, not a timing assertion: a process that would wait for the end of the file is
    killed, so the test fails instead of hanging."""
    timer = threading.Timer(seconds, proc.kill)
    timer.start()
    return timer


@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["table", "json"])
def test_first_rows_come_before_the_file_ends(env: Env, mode: list[str]) -> None:
    """The file is a FIFO whose writer holds it open: the first rows must show while it does."""
    lines = S12.read_bytes().splitlines(keepends=True)
    fifo = env.tmp / "live.jsonl"
    os.mkfifo(fifo)
    proc = subprocess.Popen([*PYTHON, "inspect", str(fifo), "--width", "200", *mode], env=env.environ(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    guard = _kill_later(proc, 120)
    try:
        with open(fifo, "wb") as writer:
            writer.write(b"".join(lines[:4]))  # the header and three entries; the rest comes later
            writer.flush()
            first = [proc.stdout.readline() for _ in range(2 if mode else 4)]
            assert all(first), first
            if mode:
                assert json.loads(first[0])["kind"] == "header"
                assert json.loads(first[1])["id"] == json.loads(lines[1])["id"]
            else:
                assert first[0].startswith("session pi v3")
                assert first[3].split()[:2] == ["2", json.loads(lines[1])["id"]]
            writer.write(b"".join(lines[4:]))
        rest = proc.stdout.read()
        assert proc.wait() == 0
        assert proc.stderr.read() == ""
    finally:
        guard.cancel()
        proc.kill()
    shown = "".join(first) + rest
    for obj in read_objects(S12)[1:]:
        assert obj["id"] in shown


def test_migrate_check_reads_the_header_only(env: Env) -> None:
    """A v3 file is judged by its header: with the writer still holding the FIFO open after it,
    `migrate --check` answers at once (reading on would wait for the end of the file)."""
    fifo = env.tmp / "v3.jsonl"
    os.mkfifo(fifo)
    proc = subprocess.Popen([*PYTHON, "migrate", "--check", str(fifo)], env=env.environ(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    guard = _kill_later(proc, 120)
    try:
        with open(fifo, "wb") as writer:
            writer.write(S12.read_bytes().splitlines(keepends=True)[0] + b"not json at all\n")
            writer.flush()
            out = proc.stdout.readline()
            assert out.rstrip("\n").endswith("already pi v3"), out
            assert proc.wait() == 0
    finally:
        guard.cancel()
        proc.kill()
    assert proc.stderr.read() == ""


def test_migrate_check_of_v3_with_garbage_after_the_header(run, tmp_path: Path) -> None:
    path = tmp_path / "v3.jsonl"
    data = S12.read_bytes().splitlines(keepends=True)[0] + b"\xff\xfe garbage\n" * 50 + b'{"type":"mess'
    path.write_bytes(data)
    result = run("migrate", "--check", path)
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout == f"{path}: already pi v3\n"
    assert path.read_bytes() == data


# --- widths: display columns, every mode, every format ----------------------------------------------


def wide_session(tmp_path: Path) -> Path:
    """S12 with CJK and emoji in messages, a long label and a long custom id."""
    objects = read_objects(S12)
    for obj in objects[1:]:
        message = obj.get("message")
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "text":
                    block["text"] = "你好世界，这是一个很长的句子。" * 12 + block["text"] + " 🙂" * 30
        if obj["type"] == "label":
            obj["label"] = "检查点-" * 12
    objects.append({"type": "x_future", "id": "an-id-much-longer-than-pi-writes-them", "parentId": objects[-1]["id"],
                    "timestamp": "2026-12-01T08:53:40.000Z", "note": "日本語" * 40})
    return write_lines(tmp_path / "wide.jsonl", objects)


MODES = [[], ["--tree"], ["--context"], ["--stats"], ["--leaf", "checkpoint-1"], ["--leaf", "checkpoint-1", "--tree"]]


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: " ".join(m) or "table")
def test_nothing_wraps(run, tmp_path: Path, mode: list[str], columns: int) -> None:
    path = wide_session(tmp_path)
    leaf = ["--leaf", read_objects(S12)[5]["id"]] if "--leaf" in mode else []
    mode = [m for m in mode if m not in ("--leaf", "checkpoint-1")] + leaf
    for fmt in FORMATS:
        result = run("inspect", path, *mode, "--format", fmt, "--width", columns)
        assert result.exit_code == 0, (fmt, result.output)
        lines = result.stdout.splitlines()
        assert len(lines) > 2
        for line in lines:
            assert wcswidth(line.replace("\t", " ")) <= columns, (fmt, columns, line)


def test_columns_from_the_environment(env: Env, tmp_path: Path) -> None:
    path = wide_session(tmp_path)
    for columns in (80, 200):
        done = subprocess.run([*PYTHON, "inspect", str(path)], env=env.environ(COLUMNS=str(columns)),
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        widths = [wcswidth(line) for line in done.stdout.splitlines()]
        assert max(widths) <= columns and max(widths) > columns - 10  # fills the line, never more


def test_cjk_rows_line_up(run) -> None:
    """In the chapter's demo (CJK text), every row's summary starts in the same display column."""
    demo = TUTORIAL_DIR / "demo.jsonl"
    lines = run("inspect", demo, "--width", "100").stdout.splitlines()[3:-1]
    assert any(not line.isascii() for line in lines)
    starts = {wcswidth(line[: line.index(objs["id"])]) for line, objs in zip(lines, read_objects(demo)[1:],
                                                                             strict=True)}
    assert len(starts) == 1
    cut = run("inspect", demo, "--width", "60").stdout.splitlines()
    assert all(wcswidth(line) <= 60 for line in cut)


# --- --format ----------------------------------------------------------------------------------------


def test_format_is_case_insensitive_and_the_same_everywhere(run) -> None:
    for mode in ([], ["--context"], ["--stats"], ["--leaf", "1444fb6e"]):
        lower = run("inspect", S12, *mode, "--format", "github", "--width", "200")
        upper = run("inspect", S12, *mode, "--format", "GitHub", "--width", "200")
        assert lower.exit_code == upper.exit_code == 0
        assert lower.stdout == upper.stdout
        rows = [line for line in lower.stdout.splitlines() if line.startswith("|")]
        assert len(rows) >= 3
        rules = [line for line in lower.stdout.splitlines() if line and set(line) <= set("|-")]
        assert rules and all(re.fullmatch(r"\|-+(\|-+)*\|", line) for line in rules)  # github's, in every mode


def test_formats_that_cannot_stream_are_refused(run) -> None:
    result = run("inspect", S12, "--format", "fancy_grid")
    assert result.exit_code == 2
    assert "fancy_grid" in result.stderr
    help_text = run("inspect", "--help").stdout
    shown = re.search(r"\[(\w+(?:\|\w+)+)\]", help_text).group(1).split("|")
    assert shown == list(FORMATS) and len(shown) <= 8


# --- the pager ---------------------------------------------------------------------------------------


def run_in_pty(env: Env, argv: list[str], **extra: str) -> str:
    """Run with stdout on a pseudo-terminal; what it printed there."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, env=env.environ(**extra), stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=subprocess.PIPE)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    return out.decode()


def test_pager_on_a_terminal_only(env: Env, sessions: dict[str, Path]) -> None:
    paged = env.tmp / "paged.txt"
    pager = f"sh -c 'cat > {paged}'"
    shown = run_in_pty(env, [*PYTHON, "inspect", str(sessions["small"])], PAGER=pager)
    text = paged.read_text()
    assert text.startswith("session pi v3") and text.rstrip().splitlines()[-1].startswith("entries=2000")
    assert "entries=2000" not in shown  # the table went to the pager, not around it
    paged.unlink()
    shown = run_in_pty(env, [*PYTHON, "inspect", str(sessions["small"]), "--no-pager"], PAGER=pager)
    assert not paged.exists() and "entries=2000" in shown
    done = subprocess.run([*PYTHON, "inspect", str(sessions["small"])], env=env.environ(PAGER=pager),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and not paged.exists()  # stdout is a pipe: never a pager
    assert done.stdout.rstrip().splitlines()[-1].startswith("entries=2000")


@pytest.mark.skipif(shutil.which("tmux") is None or shutil.which("less") is None, reason="needs tmux and less")
def test_less_in_a_real_terminal(env: Env, sessions: dict[str, Path]) -> None:
    """In tmux: a long table stops at the first screen in less; q leaves with exit 0. A short one
    is printed and nothing waits (less -F)."""
    socket = f"hk-{os.getpid()}"
    tmux = ["tmux", "-L", socket]
    done = env.tmp / "done"
    environ = env.environ()
    environ.pop("PAGER", None)
    environ.pop("LESS", None)
    environ["TERM"] = "xterm"

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-t", "hk"], capture_output=True, text=True).stdout

    def wait_until(check, what: str) -> None:  # noqa: ANN001
        deadline = time.monotonic() + 60
        while not check():
            assert time.monotonic() < deadline, f"{what}:\n{screen()}"
            time.sleep(0.2)

    command = " ".join(map(str, [*PYTHON, "inspect", sessions["big"], "--width", "100"])) + f"; echo $? > {done}"
    subprocess.run([*tmux, "new-session", "-d", "-s", "hk", "-x", "100", "-y", "20", command], env=environ,
                   check=True)
    try:
        wait_until(lambda: "message:" in screen(), "the first screen")
        time.sleep(0.5)
        lines = screen().splitlines()
        assert lines[0].startswith("session pi v3")
        assert not done.exists()  # less waits for a key
        subprocess.run([*tmux, "send-keys", "-t", "hk", "q"], check=True)
        wait_until(done.exists, "exit after q")
        wait_until(lambda: done.read_text().strip() != "", "the exit status")
        assert done.read_text().strip() == "0"
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    done.unlink()
    short = " ".join(map(str, [*PYTHON, "inspect", S12, "--width", "100"])) + f"; echo $? > {done}; sleep 30"
    subprocess.run([*tmux, "new-session", "-d", "-s", "hk", "-x", "100", "-y", "40", short], env=environ,
                   check=True)
    try:
        wait_until(lambda: done.exists() and done.read_text().strip() == "0", "a short table needs no key")
        assert "entries=19" in screen()
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
