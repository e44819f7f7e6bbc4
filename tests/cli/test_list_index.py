"""`list` and the picker read from the index when it is there (issue 11), and show exactly what they
show without it: the same generated sessions listed both ways, after appends, truncations,
deletions, replacements and same-size rewrites. An index that is absent, damaged, of another
version, locked or unwritable is passed over, never trusted."""

from __future__ import annotations

import json
import os
import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from catalog_corpus import START_MS, Made, iso, make_session, turn
from writeside_helpers import Env, invoke, isolate

from harnesskit.session import catalog, listing
from harnesskit.session.store import encode_cwd

ARGS = [("--json",), (), ("-n", "3"), ("--all", "--json"), ("--all", "-n", "5"), ("--all", "--full-path"),
        ("--harness", "all", "--json"), ("--harness", "all")]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    monkeypatch.setenv("COLUMNS", "200")
    return isolate(tmp_path, monkeypatch)


def db(env: Env) -> Path:
    return env.home / "index.sqlite"


@contextmanager
def no_file_reading(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The listing's own readers fail: whatever is shown came from the index."""
    def refuse(*_: object) -> None:
        raise AssertionError("read through the listing, not the index")

    with monkeypatch.context() as m:
        m.setattr(listing, "_choose", refuse)
        m.setattr(listing, "_summary", refuse)
        yield


def outputs(*args: str) -> str:
    result = invoke("list", *args)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def same_both_ways(env: Env, monkeypatch: pytest.MonkeyPatch, from_index: bool = True) -> dict[tuple, str]:
    """Every listing with the index (read from it alone, unless not `from_index`) equals the listing
    without it."""
    if from_index:
        with no_file_reading(monkeypatch):
            indexed = {args: outputs(*args) for args in ARGS}
    else:
        indexed = {args: outputs(*args) for args in ARGS}
    aside = db(env).with_name("index.sqlite.aside")
    db(env).rename(aside)
    try:
        plain = {args: outputs(*args) for args in ARGS}
    finally:
        aside.rename(db(env))
    for args in ARGS:
        assert indexed[args] == plain[args], args
    return indexed


def extra(root: Path, cwd: str, index: int, lines: list[dict]) -> Made:
    session_id = f"00000000-0000-7000-9000-{index:012x}"
    made = Made(root / ("--" + cwd.strip("/").replace("/", "-") + "--") / f"extra-{index}_{session_id}.jsonl",
                session_id, cwd)
    made.lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": iso(START_MS + index), "cwd": cwd},
                  *lines]
    made.write()
    return made


def corpus_here(env: Env) -> tuple[list[Made], Path]:
    rng = random.Random(11)
    root = env.home / "sessions"
    cwds = (os.getcwd(), "/work/elsewhere")
    made = [make_session(root, rng, i, cwds[i % 2], turns=1 + i % 3) for i in range(40)]
    here = os.getcwd()
    made.append(extra(root, here, 1, []))  # no message: the header's time
    made.append(extra(root, here, 2, [  # a name, a model change, a user message with no text
        {"type": "message", "id": "a", "parentId": None, "timestamp": iso(START_MS),
         "message": {"role": "user", "content": [{"type": "image", "data": "", "mimeType": "image/png"}],
                     "timestamp": START_MS}},
        *turn(rng, 2, "a", START_MS + 5, "你好 世界"),
        {"type": "session_info", "id": "n", "parentId": None, "timestamp": iso(START_MS), "name": "  named one "},
        {"type": "model_change", "id": "c", "parentId": None, "timestamp": iso(START_MS), "provider": "p",
         "modelId": "switched-model"}]))
    timeless = extra(root, here, 4, [{"type": "custom", "id": "c", "parentId": None, "customType": "x"}])
    del timeless.lines[0]["timestamp"]  # no message, no header time: ordered by the file's mtime
    timeless.write()
    os.utime(timeless.path, ns=(1_790_000_000_123_456_789, 1_790_000_000_123_456_789))
    made.append(timeless)
    directory = root / encode_cwd(here)
    (directory / "junk.jsonl").write_text("not a session\n")
    (directory / "empty.jsonl").write_text("")
    return made, directory


def test_list_with_and_without_the_index_agree_through_every_change(env: Env,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    made, directory = corpus_here(env)
    assert invoke("index", "-q").exit_code == 0
    first = same_both_ways(env, monkeypatch)
    assert len(first[("--all", "--json")].splitlines()) == len(made)  # junk and empty files are no sessions

    rng = random.Random(5)
    mine = [m for m in made if m.cwd == os.getcwd() and m.lines[1:]]
    target = mine[3]
    target.append(turn(rng, 900, target.lines[-1]["id"], START_MS + 400 * 86_400_000))  # appended: now newest
    same = same_both_ways(env, monkeypatch)
    assert json.loads(same[("--json",)].splitlines()[0])["path"] == str(target.path)

    target.append([{"type": "session_info", "id": "x1", "parentId": None, "timestamp": iso(START_MS),
                    "name": "renamed by an append"}])
    assert "renamed by an append" in same_both_ways(env, monkeypatch)[()]

    data = mine[5].path.read_bytes()  # truncated at a line boundary, then in the middle of a line
    mine[5].path.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 1])
    same_both_ways(env, monkeypatch)
    data = mine[6].path.read_bytes()
    mine[6].path.write_bytes(data[: len(data) - 40])
    same_both_ways(env, monkeypatch)

    mine[7].path.unlink()  # deleted
    gone = same_both_ways(env, monkeypatch)
    assert str(mine[7].path) not in gone[("--all", "--json")]

    replacement = mine[8].path.with_suffix(".new")  # replaced: another session under the same name
    replacement.write_text(mine[9].path.read_text().replace(mine[9].session_id, "replaced-session-id"))
    os.replace(replacement, mine[8].path)
    assert "replaced-session-id" in same_both_ways(env, monkeypatch)[("--json",)]

    st = mine[10].path.stat()  # the same size and mtime, other bytes: only the ctime tells
    text = mine[10].path.read_bytes()
    word = json.loads(text.splitlines()[1])["message"]["content"][0]["text"].split()[1].encode()
    mine[10].path.write_bytes(text.replace(word, word.upper(), 1))
    os.utime(mine[10].path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert word.upper().decode() in same_both_ways(env, monkeypatch)[("--json",)]

    new = extra(env.home / "sessions", os.getcwd(), 3, turn(rng, 1, None, START_MS + 500 * 86_400_000, "fresh"))
    listed = same_both_ways(env, monkeypatch)
    assert json.loads(listed[("--json",)].splitlines()[0])["path"] == str(new.path)
    conn = sqlite3.connect(db(env))  # list kept the index up to date: it holds the new file, not the deleted one
    paths = {row[0] for row in conn.execute("SELECT path FROM files")}
    conn.close()
    assert str(new.path) in paths and str(mine[7].path) not in paths


def read_bytes() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


def test_list_n_with_an_index_reads_only_what_changed(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    root = env.home / "sessions"
    made = []
    for i in range(20):  # 1.2 MB each: past the size read whole, so an append is read on from its offset
        m = make_session(root, rng, i, os.getcwd())
        m.append([{"type": "custom", "id": f"pad{i}", "parentId": None, "timestamp": iso(START_MS),
                   "customType": "pad", "data": "p" * 1_200_000}])
        made.append(m)
    assert invoke("index", "-q").exit_code == 0
    total = sum(m.path.stat().st_size for m in made)
    with no_file_reading(monkeypatch):
        before = read_bytes()
        shown = outputs("--json", "-n", "3")
        warm = read_bytes() - before
        assert len(shown.splitlines()) == 3
        assert warm < 0.02 * total, warm  # the index answers: no session file is read

        made[4].append(turn(rng, 99, None, START_MS + 900 * 86_400_000, "latest"))
        before = read_bytes()
        shown = outputs("--json", "-n", "3")
        appended = read_bytes() - before
    assert json.loads(shown.splitlines()[0])["path"] == str(made[4].path)
    assert appended < 0.02 * total, appended  # the one file's head and its new lines, nothing else


def test_a_damaged_or_old_index_is_passed_over_and_left_alone(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus_here(env)
    expected = outputs("--all", "--json")
    for junk in (b"not a database at all", b""):
        db(env).write_bytes(junk)
        assert outputs("--all", "--json") == expected
        assert db(env).read_bytes() == junk  # list never rebuilds it: `index` does
    db(env).unlink()
    conn = sqlite3.connect(db(env))
    conn.execute("CREATE TABLE files(path TEXT)")
    conn.execute(f"PRAGMA user_version = {catalog.SCHEMA_VERSION - 1}")
    conn.close()
    assert outputs("--all", "--json") == expected
    assert sqlite3.connect(db(env)).execute("PRAGMA user_version").fetchone()[0] == catalog.SCHEMA_VERSION - 1


def test_a_locked_index_is_never_waited_on_nor_trusted_stale(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    made, _ = corpus_here(env)
    assert invoke("index", "-q").exit_code == 0
    mine = [m for m in made if m.cwd == os.getcwd() and m.lines[1:]]
    mine[0].append(turn(random.Random(1), 500, None, START_MS + 700 * 86_400_000, "after the index"))
    writer = sqlite3.connect(db(env), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process is writing: this list cannot update the index
    try:
        with_lock = outputs("--json")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert json.loads(with_lock.splitlines()[0])["path"] == str(mine[0].path)  # read from the file itself
    db(env).rename(db(env).with_name("aside"))
    assert outputs("--json") == with_lock


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through any file mode")
def test_a_read_only_home_still_lists(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    made, _ = corpus_here(env)
    assert invoke("index", "-q").exit_code == 0
    expected = same_both_ways(env, monkeypatch)
    mine = [m for m in made if m.cwd == os.getcwd() and m.lines[1:]]
    mine[0].append(turn(random.Random(1), 500, None, START_MS + 700 * 86_400_000, "after the index"))
    db(env).chmod(0o444)
    env.home.chmod(0o555)
    try:
        shown = outputs("--json")
    finally:
        env.home.chmod(0o755)
        db(env).chmod(0o644)
    assert shown != expected[("--json",)]
    assert json.loads(shown.splitlines()[0])["path"] == str(mine[0].path)


def test_the_picker_reads_from_the_index(env: Env) -> None:
    pexpect = pytest.importorskip("pexpect")
    import sys

    made, _ = corpus_here(env)
    assert invoke("index", "-q").exit_code == 0
    mine = [m for m in made if m.cwd == os.getcwd() and m.lines[1:]]
    newest = max(mine, key=lambda m: m.lines[-1]["message"]["timestamp"] if m.lines[-1]["type"] == "message" else 0)
    conn = sqlite3.connect(db(env))  # a name only the index says (the file is unchanged, so it is believed)
    conn.execute("UPDATE sessions SET name = 'told by the index' WHERE path = ?", (str(newest.path),))
    conn.commit()
    conn.close()
    child = pexpect.spawn(sys.executable, ["-m", "harnesskit", "continue", "--pick"], cwd=str(env.cwd),
                          env=env.environ(TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1"), encoding="utf-8", timeout=30,
                          dimensions=(30, 100))
    child.expect("filter>")
    child.expect("told by the index")
    child.send("\x1b")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130


def test_the_fixtures_list_the_same_both_ways(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """pi's own files (branches, summaries, compactions, meta entries) from the index; with the
    tutorial's legacy ones among them, from the files (the index holds those migrated)."""
    from conftest import TUTORIAL_FILES, V3_FILES

    directory = env.home / "sessions" / encode_cwd(os.getcwd())
    directory.mkdir(parents=True)
    for i, path in enumerate(V3_FILES):
        (directory / f"{i:02d}_{path.name}").write_bytes(path.read_bytes())
    assert invoke("index", "-q").exit_code == 0
    listed = same_both_ways(env, monkeypatch)
    assert len(listed[("--json",)].splitlines()) == len(V3_FILES) > 10
    for i, path in enumerate(TUTORIAL_FILES):
        (directory / f"legacy{i:02d}_{path.name}").write_bytes(path.read_bytes())
    listed = same_both_ways(env, monkeypatch, from_index=False)
    assert len(listed[("--json",)].splitlines()) == len(V3_FILES) + len(TUTORIAL_FILES)


def test_a_name_the_index_cannot_hold_is_still_listed(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    made, directory = corpus_here(env)
    assert invoke("index", "-q").exit_code == 0
    bad = os.path.join(os.fsencode(directory), b"not-utf8-\xff.jsonl")
    with open(bad, "wb") as fp:
        fp.write(made[0].path.read_bytes().replace(made[0].session_id.encode(), b"the-undecodable-one"))
    listed = same_both_ways(env, monkeypatch, from_index=False)
    assert "the-undecodable-one" in listed[("--json",)]


def test_index_of_a_named_file_that_is_gone_drops_it(env: Env) -> None:
    made, _ = corpus_here(env)
    assert invoke("index", "-q").exit_code == 0
    gone, kept = made[0].path, made[1].path
    gone.unlink()
    assert invoke("index", "-q", gone, kept).exit_code == 0
    conn = sqlite3.connect(db(env))
    paths = {row[0] for row in conn.execute("SELECT path FROM files")}
    names = {row[0] for row in conn.execute("SELECT path FROM sessions")}
    conn.close()
    assert str(gone) not in paths and str(gone) not in names
    assert str(kept) in paths and str(made[2].path) in paths  # the others stay: a partial update


def test_what_is_no_plain_session_file_is_seen_alike_with_and_without_the_index(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The no-change check takes a directory whole only when every `*.jsonl` in it is a regular file
    its row describes: a directory named like a session, a dangling link, a link to a session, and
    one made or removed later all list as they do without the index."""
    made, directory = corpus_here(env)
    (directory / "folder.jsonl").mkdir()
    (directory / "dangling.jsonl").symlink_to(directory / "nowhere")
    assert invoke("index", "-q").exit_code == 0
    same_both_ways(env, monkeypatch)
    same_both_ways(env, monkeypatch)  # nothing changed: the directory is taken whole
    mine = [m for m in made if m.cwd == os.getcwd() and m.lines[1:]]
    (directory / "linked.jsonl").symlink_to(mine[0].path)
    assert str(directory / "linked.jsonl") in same_both_ways(env, monkeypatch, from_index=False)[("--json",)]
    same_both_ways(env, monkeypatch)
    (directory / "dangling.jsonl").unlink()
    (directory / "dangling.jsonl").symlink_to(mine[1].path)  # the dangling link now leads to a session
    assert str(directory / "dangling.jsonl") in same_both_ways(env, monkeypatch, from_index=False)[("--json",)]
    (directory / "folder.jsonl").rmdir()
    (directory / "linked.jsonl").unlink()
    listed = same_both_ways(env, monkeypatch)
    assert str(directory / "linked.jsonl") not in listed[("--json",)]


def test_listing_compiles_no_search_pattern(env: Env) -> None:
    """The CJK patterns of search are compiled when a search needs them, not by a listing."""
    corpus_here(env)
    assert invoke("index", "-q").exit_code == 0
    catalog._cjk.cache_clear()
    assert invoke("list", "--all").exit_code == 0
    assert catalog._cjk.cache_info().currsize == 0
    assert catalog.segment("你好") == "你\u200b好"
    assert catalog._cjk.cache_info().currsize == 1


def test_lone_surrogates_list_the_same_with_and_without_the_index(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index stores U+FFFD for a lone surrogate (SQLite holds UTF-8 only), and the stdlib wrote
    JSON with ", " where orjson refuses one: both ways must print the file's values, byte for byte."""
    here = os.getcwd()
    root = env.home / "sessions"
    rng = random.Random(3)
    for i in range(3):
        make_session(root, rng, i, here)
    odd = [extra(root, here, 1, []), extra(root, here, 2, [])]
    odd[0].lines += [
        {"type": "message", "id": "a", "parentId": None, "timestamp": iso(START_MS),
         "message": {"role": "user", "content": "x\ud800y", "timestamp": START_MS + 9}},
        {"type": "session_info", "id": "n", "parentId": "a", "timestamp": iso(START_MS), "name": "n\udfff"},
        {"type": "model_change", "id": "c", "parentId": "n", "timestamp": iso(START_MS), "provider": "p",
         "modelId": "m\ud83d"}]
    odd[1].lines += [  # a real U+FFFD: read from the files too, and shown as it is
        {"type": "message", "id": "a", "parentId": None, "timestamp": iso(START_MS),
         "message": {"role": "user", "content": "real \ufffd", "timestamp": START_MS + 8}}]
    for made in odd:  # lone surrogates as JSON escapes (Made.write writes UTF-8, which has none)
        made.path.write_text("".join(json.dumps(line) + "\n" for line in made.lines), encoding="utf-8")
    assert invoke("index", "-q").exit_code == 0
    shown = same_both_ways(env, monkeypatch, from_index=False)
    rows = {r["id"]: r for r in map(json.loads, shown[("--json",)].splitlines())}
    assert [(rows[m.session_id]["firstMessage"], rows[m.session_id]["name"], rows[m.session_id]["model"])
            for m in odd] == [("x\ud800y", "n\udfff", "m\ud83d"), ("real \ufffd", None, None)]
    assert '"firstMessage":"x\\ud800y"' in shown[("--json",)]  # compact, as orjson writes every other line
    assert "x\\ud800y" in shown[()]
