"""Nothing lost (issue 6, items 10-12): a session file deleted or replaced under a running chat,
`migrate` on a full disk, and a session directory that cannot be written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from writeside_helpers import (
    V3_FILES,
    Env,
    Interactive,
    assert_strict_valid,
    copy_fixture,
    isolate,
    read_lines,
    roles,
    session_files,
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


def test_deleted_then_replaced_file_loses_no_message(env: Env) -> None:
    chat = Interactive(env, "chat")
    try:
        chat.send("hello")
        chat.expect(GREETING_REPLY)
        (first,) = session_files(env.home)
        first.unlink()  # deleted between turns

        chat.send("what is 2+2")
        chat.expect("2+2 = 4.")
        (second,) = session_files(env.home)
        assert second != first and second.parent == first.parent
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
    assert f"session: {final} (8 messages saved this run)" in "".join(chat.out)
    assert set(session_files(env.home)) == {second, final}


def test_deleted_after_the_last_reply_is_kept_at_exit(env: Env) -> None:
    chat = Interactive(env, "chat")
    try:
        chat.send("hello")
        chat.expect(GREETING_REPLY)
        (first,) = session_files(env.home)
        first.unlink()
        code = chat.close()
    finally:
        chat.kill()
    assert code == 0
    ((old, new),) = moved_notices(chat)
    assert old == str(first)
    assert roles(read_lines(Path(new))) == ["user", "assistant"]
    assert_strict_valid(Path(new))


def test_continue_of_a_replaced_file_copies_it_whole(env: Env) -> None:
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
        path.write_bytes(replacement)  # replaced before the first append
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
    assert path.read_bytes() == replacement
    data = copy.read_bytes()
    assert data.startswith(original)  # every line of the old file, byte for byte
    appended = read_lines(copy)[len(original.splitlines()):]
    assert [e["message"]["role"] for e in appended if e["type"] == "message"] == ["user", "assistant"]
    assert_strict_valid(copy)
    out = "".join(chat.out)
    for entry in read_lines(copy)[1:]:  # /tree drew every entry, the other branch included
        assert entry["id"] in out
    assert "error" not in "".join(chat.err).lower()
