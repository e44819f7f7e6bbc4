"""Helpers shared by the write-side CLI tests (chat, continue, fork, list, config, demo, processes).

Every test gets its own HARNESSKIT_HOME and working directory under tmp_path (see `isolate`), so
nothing ever touches ~/.harnesskit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from harnesskit.cli import cli
from harnesskit.session.check import Problem, check_file

FIXTURES = Path(__file__).parent.parent / "fixtures"
V3_FILES = sorted((FIXTURES / "pi" / "v3").glob("*.jsonl"))

SESSION_NAME = re.compile(
    r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z_"
    r"(?P<id>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$"
)
ENTRY_ID = re.compile(r"^[0-9a-f]{8}$")
ISO_MS_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
USAGE_KEYS = {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}

# Variables that would change where sessions go or what a model does: never inherited by a test.
_SCRUB = ("HARNESSKIT_SESSION_DIR", "HARNESSKIT_DEBUG", "OPENAI_BASE_URL", "OPENAI_API_KEY")


@dataclass
class Env:
    home: Path  # $HARNESSKIT_HOME
    cwd: Path  # the test's working directory (already chdir'ed into)
    tmp: Path

    @property
    def sessions(self) -> Path:
        return self.home / "sessions"

    def environ(self, **extra: str) -> dict[str, str]:
        """The environment for a subprocess: this test's home, nothing from the developer's."""
        env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
        env["HARNESSKIT_HOME"] = str(self.home)
        env["CLAUDE_CONFIG_DIR"] = str(self.tmp / "claude")  # other harnesses' stores: this test's too
        env["CODEX_HOME"] = str(self.tmp / "codex")
        env["PYTHONUNBUFFERED"] = "1"
        env.update(extra)
        return env


def isolate(tmp_path: Path, monkeypatch: Any) -> Env:
    home = tmp_path / "hkhome"
    cwd = tmp_path / "work"
    cwd.mkdir()
    for name in _SCRUB:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HARNESSKIT_HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))  # never the developer's own stores
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.chdir(cwd)
    return Env(home=home, cwd=cwd, tmp=tmp_path)


def invoke(*args: object, input: str | None = None) -> Result:
    """The CLI in-process (stdout and stderr kept apart)."""
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=True)


def as_from_a_shell() -> None:
    """Start a child as a shell's foreground job would: SIGINT at its default. An ignored SIGINT is
    inherited across exec (a test run started in the background, `nohup`, some CI runners), and a
    Python started with SIGINT ignored never raises KeyboardInterrupt: Ctrl-C tests would hang."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def hk(env: Env, *args: object, timeout: float = 30, input: str | None = None,
       cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as a real process."""
    return subprocess.run([sys.executable, "-m", "harnesskit", *map(str, args)], env=env.environ(),
                          cwd=cwd or env.cwd, capture_output=True, text=True, timeout=timeout, input=input,
                          preexec_fn=as_from_a_shell)


def popen(env: Env, *args: object, stdin: int | None = subprocess.DEVNULL,
          preexec_fn: Callable[[], None] | None = as_from_a_shell, module: str = "harnesskit") -> subprocess.Popen[str]:
    """`python -m harnesskit ARGS` (or `-m module`: a driver in env.cwd, which -m puts on sys.path)."""
    return subprocess.Popen([sys.executable, "-m", module, *map(str, args)], env=env.environ(), cwd=env.cwd,
                            stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                            preexec_fn=preexec_fn)


def session_files(root: Path) -> list[Path]:
    """Every *.jsonl below root."""
    return sorted(root.rglob("*.jsonl")) if root.exists() else []


def only_session(root: Path) -> Path:
    files = session_files(root)
    assert len(files) == 1, files
    return files[0]


def read_lines(path: Path) -> list[dict]:
    """[header, *entries], parsed with json (not harnesskit)."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), "a file harnesskit wrote must end with a newline"
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def messages_of(lines: list[dict]) -> list[dict]:
    return [e["message"] for e in lines[1:] if e["type"] == "message"]


def roles(lines: list[dict]) -> list[str]:
    return [m["role"] for m in messages_of(lines)]


def problems(path: Path, severity: str | None = "error") -> list[Problem]:
    report = check_file(path)
    return [p for p in report.problems if severity is None or p.severity == severity]


def assert_strict_valid(path: Path) -> None:
    """`validate --strict` passes (exit 0, 0 problems of any kind)."""
    result = invoke("validate", "--strict", path)
    assert result.exit_code == 0, result.output
    assert problems(path, None) == []


def assert_pi_shape(lines: list[dict]) -> None:
    """What contract §4 promises for files we write: pi can open them."""
    header = lines[0]
    assert header["type"] == "session" and header["version"] == 3
    assert isinstance(header["id"], str) and header["id"]
    assert ISO_MS_Z.match(header["timestamp"]), header["timestamp"]
    assert isinstance(header["cwd"], str)
    ids = set()
    for entry in lines[1:]:
        for key in ("type", "id", "parentId", "timestamp"):
            assert key in entry, (key, entry)
        assert ISO_MS_Z.match(entry["timestamp"]), entry
        assert entry["id"] not in ids
        ids.add(entry["id"])
        message = entry.get("message")
        if entry["type"] == "message" and message["role"] == "assistant":
            for key in ("api", "provider", "model", "usage", "stopReason", "timestamp"):
                assert key in message, (key, message)
            assert USAGE_KEYS <= set(message["usage"]), message["usage"]
            assert isinstance(message["timestamp"], int)


def assert_chain(entries: list[dict], first_parent: str | None) -> None:
    """Each entry's parentId is the previous entry's id (the first: `first_parent`)."""
    parent = first_parent
    for entry in entries:
        assert entry["parentId"] == parent, (entry, parent)
        parent = entry["id"]


def strip_timestamps(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_timestamps(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [strip_timestamps(v) for v in value]
    return value


def copy_fixture(src: Path, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / src.name
    shutil.copyfile(src, target)
    return target


def write_script(path: Path, replies: list[Any]) -> Path:
    """A script model file (JSON is YAML)."""
    path.write_text(json.dumps(replies), encoding="utf-8")
    return path


def stderr_lines(result: Result | subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def assert_one_error(result: Result | subprocess.CompletedProcess[str], code: int = 2) -> str:
    returncode = result.exit_code if isinstance(result, Result) else result.returncode
    assert returncode == code, (returncode, result.stdout, result.stderr)
    lines = stderr_lines(result)
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("harnesskit: error: "), lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    return lines[0]


class Interactive:
    """A chat process fed through a pipe; stdout/stderr read by threads so `expect` can time out.
    `expect` sees the lines of both (the answer is on stdout, the chat's notes on stderr)."""

    def __init__(self, env: Env, *args: object, feed: bool = True, module: str = "harnesskit") -> None:
        import queue
        import threading

        self.proc = popen(env, *args, stdin=subprocess.PIPE if feed else subprocess.DEVNULL, module=module)
        self.out: list[str] = []
        self.err: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()

        def pump(stream: Any, sink: list[str], q: queue.Queue[str | None]) -> None:
            for line in stream:
                sink.append(line)
                q.put(line)
            q.put(None)

        self._closed = 0
        self._threads = [
            threading.Thread(target=pump, args=(self.proc.stdout, self.out, self._lines), daemon=True),
            threading.Thread(target=pump, args=(self.proc.stderr, self.err, self._lines), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, text: str, timeout: float = 15) -> list[str]:
        """Read lines until one contains `text`; the lines read. Fails on timeout or EOF.
        (Streamed text without a newline yet is not seen: wait on the file for mid-turn states.)"""
        import queue
        import time

        deadline = time.monotonic() + timeout
        seen: list[str] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {text!r}; got {seen!r}, stderr {''.join(self.err)!r}")
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                self._closed += 1
                if self._closed == 2:
                    raise AssertionError(f"output closed before {text!r}; got {seen!r}, stderr {''.join(self.err)!r}")
                continue
            seen.append(line)
            if text in line:
                return seen

    def close(self, timeout: float = 15) -> int:
        """Close stdin (EOF) and wait for the exit code."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        code = self.proc.wait(timeout=timeout)
        for thread in self._threads:
            thread.join(timeout=5)
        return code

    def wait(self, timeout: float = 15) -> int:
        code = self.proc.wait(timeout=timeout)
        for thread in self._threads:
            thread.join(timeout=5)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def wait_for(predicate: Any, timeout: float = 15, what: str = "condition") -> None:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def file_roles(path: Path) -> list[str]:
    """Roles of the complete message lines of a file being written (a torn line is ignored)."""
    out = []
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    for line in data.split(b"\n")[1:]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("type") == "message":
            out.append(entry["message"]["role"])
    return out
