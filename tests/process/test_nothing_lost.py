"""Nothing lost (issue 6, items 10-12): a session file deleted or replaced under a running chat,
`migrate` on a full disk, and a session directory that cannot be written."""

from __future__ import annotations

import errno
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TUTORIAL_FILES
from writeside_helpers import (
    V3_FILES,
    Env,
    Interactive,
    assert_one_error,
    assert_strict_valid,
    copy_fixture,
    hk,
    invoke,
    isolate,
    read_lines,
    roles,
    session_files,
    write_script,
)

from harnesskit.agent.models.demo import GREETING_REPLY


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def moved_notices(chat: Interactive) -> list[tuple[str, str]]:
    """(old, new) from each one-line notice that the session went on in a new file."""
    out = []
    for line in "".join(chat.err).splitlines():
        if "deleted or replaced" in line:
            assert line.startswith("harnesskit: warning: "), line
            old, _, rest = line.removeprefix("harnesskit: warning: ").partition(" was deleted or replaced")
            out.append((old, rest.rpartition(" goes on in ")[2]))
    return out


# ---------------------------------------------------------------- 10: the file goes away under a chat


def greet_then_delete(chat: Interactive, env: Env) -> Path:
    """One turn of a piped chat, then its session file deleted; the deleted path."""
    chat.send("hello")
    chat.expect(GREETING_REPLY)
    (first,) = session_files(env.home)
    first.unlink()
    return first


def test_deleted_then_replaced_file_loses_no_message(env: Env) -> None:
    chat = Interactive(env, "chat")
    try:
        first = greet_then_delete(chat, env)  # deleted between turns
        chat.send("what is 2+2")
        chat.expect("2+2 = 4.")
        (second,) = session_files(env.home)
        assert second != first and second.parent == first.parent
        refused = hk(env, "continue", second, "-p", "me too")  # the copy is locked by the chat
        assert refused.returncode == 2 and f"process {chat.pid}" in refused.stderr, refused.stderr
        replacement = b'{"someone":"else\'s data"}\n'
        temp = second.with_suffix(".tmp")
        temp.write_bytes(replacement)
        os.replace(temp, second)  # replaced by another file between turns

        chat.send("bye")
        chat.expect("You said")
        code = chat.close()
    finally:
        chat.kill()
    assert code == 0, "".join(chat.err)

    notices = moved_notices(chat)
    assert [old for old, _ in notices] == [str(first), str(second)]
    final = Path(notices[-1][1])
    assert final not in (first, second) and final.exists()
    assert not first.exists()
    assert second.read_bytes() == replacement  # someone else's file: never touched
    lines = read_lines(final)
    assert roles(lines) == ["user", "assistant", "user", "assistant", "toolResult", "assistant", "user", "assistant"]
    assert_strict_valid(final)
    assert f"session: {final} (8 messages saved this run)" in "".join(chat.err)
    assert set(session_files(env.home)) == {second, final}


def test_deleted_after_the_last_reply_is_kept_at_exit(env: Env) -> None:
    chat = Interactive(env, "chat")
    try:
        first = greet_then_delete(chat, env)
        code = chat.close()
    finally:
        chat.kill()
    assert code == 0
    ((old, new),) = moved_notices(chat)
    assert old == str(first)
    assert roles(read_lines(Path(new))) == ["user", "assistant"]
    assert_strict_valid(Path(new))


@pytest.mark.parametrize("fate", ["deleted", "replaced"])
def test_continue_of_a_lost_file_copies_it_whole(env: Env, fate: str) -> None:
    """A reopened file is read lazily: the copy keeps its bytes (and offsets), so /tree still reads
    the branch no context needed, and nothing of the old file is lost."""
    source = next(p for p in V3_FILES if p.name == "s10_branch_in_file.jsonl")
    path = copy_fixture(source, env.tmp / "kept")
    original = path.read_bytes()
    chat = Interactive(env, "continue", path, "--model", "demo")
    try:
        chat.expect("Restored")
        replacement = b"not a session at all\n"
        path.unlink()
        if fate == "replaced":
            path.write_bytes(replacement)  # before the first append
        chat.send("hello")
        chat.expect(GREETING_REPLY)
        chat.send("/tree")
        chat.send("/exit")
        code = chat.wait()
    finally:
        chat.kill()
    assert code == 0, "".join(chat.err)
    ((old, new),) = moved_notices(chat)
    assert old == str(path)
    copy = Path(new)
    assert copy.parent == path.parent
    assert path.read_bytes() == replacement if fate == "replaced" else not path.exists()
    data = copy.read_bytes()
    assert data.startswith(original)  # every line of the old file, byte for byte
    appended = read_lines(copy)[len(original.splitlines()):]
    assert [e["message"]["role"] for e in appended if e["type"] == "message"] == ["user", "assistant"]
    assert_strict_valid(copy)
    out = "".join(chat.err)  # /tree is a note: stdout holds only the answers
    for entry in read_lines(copy)[1:]:  # /tree drew every entry, the other branch included
        assert entry["id"] in out
    assert "error" not in "".join(chat.err).lower()


# ---------------------------------------------------------------- 12: a session directory that cannot be written

REPLY = "A reply that must never stream when it cannot be saved."


def assert_refused_before_the_model(env: Env, result: object, directory: Path) -> None:
    line = assert_one_error(result)  # type: ignore[arg-type]
    assert str(directory) in line and "cannot write the session there" in line
    assert REPLY not in result.stdout  # type: ignore[attr-defined]


def test_a_file_where_the_session_directory_should_be(env: Env) -> None:
    """Holds for root too: no permission bit is involved."""
    script = write_script(env.cwd / "r.yaml", [REPLY])
    blocker = env.tmp / "blocker"
    blocker.write_text("a file, not a directory\n")
    for directory in (blocker, blocker / "sessions"):
        result = invoke("chat", "--model", f"script:{script}", "--session-dir", directory, "-p", "hello")
        assert_refused_before_the_model(env, result, directory)
    assert blocker.read_text() == "a file, not a directory\n"


def test_a_read_only_directory(env: Env) -> None:
    directory = env.tmp / "readonly"
    directory.mkdir()
    directory.chmod(0o555)
    try:
        if os.access(directory, os.W_OK):
            pytest.skip("this user (root) writes through mode bits; see the read-only mount variant")
        script = write_script(env.cwd / "r.yaml", [REPLY])
        result = invoke("chat", "--model", f"script:{script}", "--session-dir", directory, "-p", "hello")
        assert_refused_before_the_model(env, result, directory)
        assert list(directory.iterdir()) == []
    finally:
        directory.chmod(0o755)


def _can_mount_read_only(probe: Path) -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe.mkdir()
    script = f"mount --bind {probe} {probe} && mount -o remount,bind,ro {probe} && ! touch {probe}/x"
    try:
        done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and not (probe / "x").exists()


def test_a_read_only_mount_stops_root_too(env: Env) -> None:
    """A read-only bind mount in a private mount namespace: writes fail whoever runs the chat."""
    if not _can_mount_read_only(env.tmp / "probe"):
        pytest.skip("cannot make a read-only bind mount here (needs unshare -m and mount)")
    directory = env.tmp / "rofs"
    directory.mkdir()
    script = write_script(env.cwd / "r.yaml", [REPLY])
    command = " ".join(shlex.quote(part) for part in [
        sys.executable, "-m", "harnesskit", "chat", "--model", f"script:{script}", "--session-dir", str(directory),
        "-p", "hello"])
    shell = f"mount --bind {directory} {directory} && mount -o remount,bind,ro {directory} && exec {command}"
    result = subprocess.run(["unshare", "-m", "sh", "-c", shell], env=env.environ(), cwd=env.cwd,
                            capture_output=True, text=True, timeout=60)
    assert_refused_before_the_model(env, result, directory)
    assert "Read-only file system" in result.stderr
    assert list(directory.iterdir()) == []


def test_the_check_leaves_nothing_behind(env: Env) -> None:
    """Lazy creation stays: a writable directory is checked, but no file appears until a reply."""
    directory = env.tmp / "fresh" / "sessions"
    result = invoke("chat", "--session-dir", directory, input="/help\n")
    assert result.exit_code == 0, result.stderr
    assert "not created" in result.stderr
    assert not directory.exists() or list(directory.iterdir()) == []  # no session file, no probe left


# ---------------------------------------------------------------- 11: migrate on a full disk


class FullDisk:
    """Regular files take only `room` more bytes, then every write fails with ENOSPC (part of the
    write that crosses the line goes out, as on a real disk). Pipes and terminals are untouched."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, room: int) -> None:
        self.room = room
        self.real_write, self.real_sendfile = os.write, os.sendfile
        monkeypatch.setattr(os, "write", self.write)
        monkeypatch.setattr(os, "sendfile", self.sendfile)  # what shutil.copyfile uses on Linux

    def _allow(self, fd: int, wanted: int) -> int:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return wanted
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return min(wanted, self.room)

    def write(self, fd: int, data: bytes) -> int:
        allowed = self._allow(fd, len(data))
        written = self.real_write(fd, bytes(memoryview(data)[:allowed]))
        if stat.S_ISREG(os.fstat(fd).st_mode):
            self.room -= written
        return written

    def sendfile(self, out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        allowed = self._allow(out_fd, count)
        sent = self.real_sendfile(out_fd, in_fd, offset, allowed)
        self.room -= sent
        return sent


def migrated_size(path: Path) -> int:
    from harnesskit.session.loader import load_session
    from harnesskit.session.writer import encode

    session = load_session(path)
    return len(encode(session.header)) + sum(len(encode(e)) for e in session.entries)


@pytest.mark.parametrize("where", ["backup", "new-file"])
def test_migrate_on_a_full_disk_changes_nothing_and_a_retry_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   where: str) -> None:
    path = tmp_path / "old.jsonl"
    shutil.copyfile(TUTORIAL_FILES[0], path)
    original = path.read_bytes()
    room = migrated_size(path) + len(original) // 2 if where == "backup" else migrated_size(path) // 2
    with monkeypatch.context() as patch:
        FullDisk(patch, room)
        failed = invoke("migrate", path)
    line = assert_one_error(failed)
    assert "No space left on device" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl"]  # no torn .bak, no temp file
    assert path.read_bytes() == original

    inode = path.stat().st_ino
    retried = invoke("migrate", path)
    assert retried.exit_code == 0, retried.stderr
    assert path.stat().st_ino != inode  # the new file was renamed into place, not written over the old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl", "old.jsonl.bak"]
    assert (tmp_path / "old.jsonl.bak").read_bytes() == original  # the backup is whole
    assert read_lines(path)[0]["version"] == 3
    assert_strict_valid(path)
