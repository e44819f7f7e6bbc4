"""`list --harness claude|codex|all` reads Claude Code's and Codex's sessions from the index when it
is there (issue 11), and shows exactly what it shows without it: generated stores of both formats
listed both ways, after appends, truncations, same-size rewrites, deletions, replacements and new
files. An index that is absent, damaged, of another version, locked or unwritable is passed over."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from catalog_corpus import WORDS, make_session
from conftest import FIXTURES, SHARED_FIXTURES, requires_shared
from test_list_index import db, outputs
from test_list_index import env as env  # noqa: PLC0414 - the fixture, re-exported
from writeside_helpers import Env, invoke

from harnesskit.session import catalog
from harnesskit.session.formats import stores

CLAUDE = FIXTURES / "claude-code" / "streamed-tools-compaction.jsonl"
CLAUDE_ID, CLAUDE_PROMPT = "11111111-2222-4333-8444-555555555555", "Add a greeting to hello.py"
CODEX = FIXTURES / "codex" / "rollout-2026-03-02T09-00-00-019d0000-1111-7222-8333-444455556666.jsonl"
CODEX_ID, CODEX_PROMPT = "019d0000-1111-7222-8333-444455556666", "How many lines does notes.txt have?"
ELSEWHERE = "/work/elsewhere"
ARGS = [("--harness", "claude", "--json"), ("--harness", "claude"), ("--harness", "claude", "-n", "3"),
        ("--harness", "codex", "--json"), ("--harness", "codex", "-n", "2"), ("--harness", "all", "--json"),
        ("--harness", "all", "-n", "7")]
T0 = 1_770_000_000


def project(env: Env, cwd: str) -> Path:
    return env.tmp / "claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd)


def write(path: Path, text: str, mtime: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def transcript(source: Path, ids: tuple[str, str], prompt: tuple[str, str], cwd: str, fewest: int,
               rng: random.Random) -> str:
    """A fixture's transcript as another session of `cwd`: its own id and prompt, cut after some line."""
    text = source.read_text(encoding="utf-8").replace(ids[0], ids[1]).replace("/home/dev/proj", cwd)
    lines = text.replace(prompt[0], f"{rng.choice(WORDS)} {prompt[1]}").splitlines(keepends=True)
    return "".join(lines[: rng.randint(fewest, len(lines))])


def claude_text(i: int, cwd: str, rng: random.Random) -> str:
    return transcript(CLAUDE, (CLAUDE_ID, f"{i:08x}-2222-4333-8444-555555555555"),
                      (CLAUDE_PROMPT, f"{i}: add a greeting"), cwd, 3, rng)


def codex_text(i: int, cwd: str, rng: random.Random) -> str:
    return transcript(CODEX, (CODEX_ID, f"019d0000-1111-7222-8333-{i:012x}"), (CODEX_PROMPT, f"{i}: how many lines?"),
                      cwd, 1, rng)


def rollout(env: Env, i: int) -> Path:
    day = 1 + i % 28
    return (env.tmp / "codex" / "sessions" / "2026" / "03" / f"{day:02d}"
            / f"rollout-2026-03-{day:02d}T10-00-00-019d0000-1111-7222-8333-{i:012x}.jsonl")


def corpus(env: Env, count: int = 40) -> tuple[list[Path], list[Path]]:
    """Claude Code transcripts of this directory and another, Codex rollouts of both, subagents,
    files that are no session, and pi sessions for `--harness all`; mtimes apart, some equal."""
    rng = random.Random(11)
    here = str(env.cwd)
    claude, codex = [], []
    for i in range(count):
        cwd = here if i % 3 else ELSEWHERE
        mtime = T0 + rng.randint(0, 30) * 60  # equal times too: the name breaks the tie
        claude.append(write(project(env, cwd) / f"{i:08x}-2222-4333-8444-555555555555.jsonl",
                            claude_text(i, cwd, rng), mtime))
        codex.append(write(rollout(env, i), codex_text(i, here if i % 2 else ELSEWHERE, rng), mtime + 7))
    mine = project(env, here)
    lines = CLAUDE.read_text(encoding="utf-8").splitlines(keepends=True)
    write(mine / "agent-a1b2c3d.jsonl", "".join(lines[12:15]), T0)  # a subagent: not a session of its own
    write(mine / "00000000-dead-4000-8000-000000000000" / "subagents" / "agent-e.jsonl", "".join(lines[12:15]), T0)
    write(mine / "bookkeeping.jsonl", "".join(lines[:2]), T0 + 1)  # no message: listed, by its name as id
    write(mine / "empty.jsonl", "", T0 + 2)
    write(mine / "junk.jsonl", "not json\n{\n", T0 + 3)
    write(mine / "meta-first.jsonl", lines[2].replace('"type":"user"', '"type":"user","isMeta":true')
          + lines[2].replace("Add a greeting", "<command-name>/clear</command-name>") + "".join(lines[3:8]), T0 + 4)
    write(rollout(env, 900), "".join(CODEX.read_text(encoding="utf-8").splitlines(keepends=True)[1:]), T0 + 5)
    write(rollout(env, 901).with_name("notes.jsonl"), CODEX.read_text(encoding="utf-8"), T0 + 6)  # not a rollout
    pi = random.Random(3)
    for i in range(4):
        make_session(env.home / "sessions", pi, i, here)
    return claude, codex


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The files `list --harness`'s own reader reads, whoever asks (the listing or the index)."""
    read: list[str] = []
    summarize = stores.summarize

    def counting(path: Path, harness: str) -> stores.Found | None:
        read.append(str(path))
        return summarize(path, harness)

    with monkeypatch.context() as m:
        m.setattr(stores, "summarize", counting)
        yield read


def same_both_ways(env: Env, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[tuple, str], list[str]]:
    """Every listing with the index equals the listing without it; with the files read for it."""
    with counted(monkeypatch) as read:
        indexed = {args: outputs(*args) for args in ARGS}
    aside = db(env).with_name("index.sqlite.aside")
    db(env).rename(aside)
    try:
        with counted(monkeypatch) as without:
            plain = {args: outputs(*args) for args in ARGS}
    finally:
        aside.rename(db(env))
    for args in ARGS:
        assert indexed[args] == plain[args], args
    assert len(without) > len(read)  # the index answered: the files were not all read again
    return indexed, read


def listed(shown: str) -> list[dict]:
    return [json.loads(line) for line in shown.splitlines()]


def test_list_harness_with_and_without_the_index_agree_through_every_change(env: Env,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    claude, codex = corpus(env)
    assert invoke("index", "-q").exit_code == 0
    first, read = same_both_ways(env, monkeypatch)
    assert read == []  # nothing changed since `index`: every row came from it
    claude_rows = listed(first[("--harness", "claude", "--json")])
    codex_rows = listed(first[("--harness", "codex", "--json")])
    mine = [p for p in claude if p.parent == project(env, str(env.cwd))]
    assert len(claude_rows) == len(mine) + 4  # and the bookkeeping, empty, junk and meta-first files
    assert {r["harness"] for r in listed(first[("--harness", "all", "--json")])} == {"pi", "claude", "codex"}
    assert len(codex_rows) == 20 and {r["cwd"] for r in codex_rows} == {str(env.cwd)}
    assert not any(Path(r["path"]).name.startswith("agent-") for r in claude_rows)
    assert "bookkeeping" in {r["id"] for r in claude_rows}

    line = CLAUDE.read_text(encoding="utf-8").splitlines(keepends=True)[12]  # appended: now newest, more messages
    with mine[0].open("a", encoding="utf-8") as fp:
        fp.write(line)
    os.utime(mine[0], (T0 + 9999, T0 + 9999))
    same, read = same_both_ways(env, monkeypatch)
    assert read == [str(mine[0])]
    assert listed(same[("--harness", "claude", "--json")])[0]["path"] == str(mine[0])

    data = mine[1].read_bytes()  # truncated at a line boundary, then in the middle of a line
    mine[1].write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 1])
    data = codex[1].read_bytes()
    codex[1].write_bytes(data[: len(data) - 40])
    _, read = same_both_ways(env, monkeypatch)
    assert sorted(read) == sorted([str(mine[1]), str(codex[1])])

    st = mine[2].stat()  # the same size and mtime, other bytes: only the ctime tells
    text = mine[2].read_bytes()
    mine[2].write_bytes(text.replace(b"add a greeting", b"ADD A GREETING", 1))
    os.utime(mine[2], ns=(st.st_atime_ns, st.st_mtime_ns))
    st = codex[3].stat()  # a rollout rewritten into another directory's: it leaves this listing
    codex[3].write_bytes(codex[3].read_bytes().replace(str(env.cwd).encode(), b"/" + b"y" * (len(str(env.cwd)) - 1)))
    os.utime(codex[3], ns=(st.st_atime_ns, st.st_mtime_ns))
    same, _ = same_both_ways(env, monkeypatch)
    assert "ADD A GREETING" in same[("--harness", "claude", "--json")]
    assert str(codex[3]) not in same[("--harness", "codex", "--json")]

    mine[3].unlink()  # deleted (and a subagent beside the others)
    codex[5].unlink()
    (project(env, str(env.cwd)) / "agent-a1b2c3d.jsonl").unlink()
    gone, read = same_both_ways(env, monkeypatch)
    assert read == []
    assert str(mine[3]) not in gone[("--harness", "all", "--json")]
    assert str(codex[5]) not in gone[("--harness", "all", "--json")]

    replacement = mine[4].with_suffix(".new")  # replaced: another session under the same name
    replacement.write_text(mine[5].read_text().replace(mine[5].stem, "99999999-2222-4333-8444-555555555555"))
    os.utime(replacement, (T0 + 50, T0 + 50))
    os.replace(replacement, mine[4])
    replaced, _ = same_both_ways(env, monkeypatch)
    assert "99999999-2222-4333-8444-555555555555" in replaced[("--harness", "claude", "--json")]

    later = T0 + 10**8  # past every write above
    new_claude = write(project(env, str(env.cwd)) / "77777777-2222-4333-8444-555555555555.jsonl",
                       claude_text(0x77777777, str(env.cwd), random.Random(1)), later)
    new_codex = write(rollout(env, 777), codex_text(777, str(env.cwd), random.Random(1)), later)
    fresh, read = same_both_ways(env, monkeypatch)
    assert sorted(read) == sorted([str(new_claude), str(new_codex)])
    assert listed(fresh[("--harness", "claude", "--json")])[0]["path"] == str(new_claude)
    assert listed(fresh[("--harness", "codex", "--json")])[0]["path"] == str(new_codex)
    conn = sqlite3.connect(db(env))  # list kept the index up to date: the new files in, the deleted ones out
    paths = {row[0] for row in conn.execute("SELECT path FROM files")}
    conn.close()
    assert {str(new_claude), str(new_codex)} <= paths
    assert not {str(mine[3]), str(codex[5]), str(project(env, str(env.cwd)) / "agent-a1b2c3d.jsonl")} & paths


def test_the_index_holds_what_list_harness_shows(env: Env) -> None:
    corpus(env, 12)
    assert invoke("index", "-q").exit_code == 0
    conn = sqlite3.connect(db(env))
    rows = {r[0]: r[1:] for r in conn.execute("SELECT path, harness, list_id, list_cwd, list_first, list_messages"
                                              " FROM sessions WHERE harness != 'pi'")}
    conn.close()
    for harness in ("claude", "codex"):
        for shown in listed(outputs("--harness", harness, "--json")):
            assert rows[shown["path"]] == (harness, shown["id"], shown["cwd"], shown["firstMessage"],
                                           shown["messages"])


def test_a_damaged_old_or_locked_index_is_passed_over(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    claude, _ = corpus(env, 12)
    expected = {args: outputs(*args) for args in ARGS}
    for junk in (b"not a database at all", b""):
        db(env).write_bytes(junk)
        assert {args: outputs(*args) for args in ARGS} == expected
        assert db(env).read_bytes() == junk  # list never rebuilds it: `index` does
    db(env).unlink()
    conn = sqlite3.connect(db(env))
    conn.execute("CREATE TABLE files(path TEXT)")
    conn.execute(f"PRAGMA user_version = {catalog.SCHEMA_VERSION - 1}")  # an index made before these columns
    conn.close()
    assert {args: outputs(*args) for args in ARGS} == expected
    assert invoke("index", "-q").exit_code == 0  # rebuilt, with what list --harness shows
    conn = sqlite3.connect(db(env))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == catalog.SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM sessions WHERE list_messages IS NOT NULL").fetchone()[0] > 12
    conn.close()
    same_both_ways(env, monkeypatch)

    mine = [p for p in claude if p.parent == project(env, str(env.cwd))]
    with mine[0].open("a", encoding="utf-8") as fp:  # changed after the index, while another process writes it
        fp.write(CLAUDE.read_text(encoding="utf-8").splitlines(keepends=True)[12])
    os.utime(mine[0], (T0 + 9999, T0 + 9999))
    writer = sqlite3.connect(db(env), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with counted(monkeypatch) as read:
            with_lock = outputs("--harness", "claude", "--json")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert len(read) > 1  # read from the files themselves, not from a stale index
    assert listed(with_lock)[0]["path"] == str(mine[0])
    db(env).rename(db(env).with_name("aside"))
    assert outputs("--harness", "claude", "--json") == with_lock


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through any file mode")
def test_a_read_only_index_still_lists_what_changed(env: Env) -> None:
    claude, _ = corpus(env, 12)
    assert invoke("index", "-q").exit_code == 0
    before = outputs("--harness", "claude", "--json")
    mine = [p for p in claude if p.parent == project(env, str(env.cwd))]
    mine[0].unlink()
    db(env).chmod(0o444)
    env.home.chmod(0o555)
    try:
        shown = outputs("--harness", "claude", "--json")
    finally:
        env.home.chmod(0o755)
        db(env).chmod(0o644)
    assert str(mine[0]) in before and str(mine[0]) not in shown


def test_a_missing_store_says_where_it_was_looked_for(env: Env) -> None:
    for harness, variable in (("claude", "CLAUDE_CONFIG_DIR"), ("codex", "CODEX_HOME")):
        for args in ((), ("--json",)):
            result = invoke("list", "--harness", harness, *args)
            assert result.exit_code == 0 and result.stdout == ""
            assert f"store at {env.tmp / harness}" in result.stderr and variable in result.stderr, result.stderr
    project(env, "/somewhere/else").mkdir(parents=True)  # the store is there, this directory has none
    result = invoke("list", "--harness", "claude")
    assert result.exit_code == 0 and result.stderr.strip() == f"no claude sessions of {env.cwd}"


@requires_shared
def test_the_real_transcripts_list_the_same_both_ways(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code's and Codex's own files (read at ../shared/fixtures, never copied into the repo),
    placed in this test's stores as if they were this directory's."""
    here = str(env.cwd)
    for i, source in enumerate(sorted((SHARED_FIXTURES / "claude-code").glob("*.jsonl"))):
        target = project(env, here) / f"{i:02d}-{source.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    for i, source in enumerate(sorted((SHARED_FIXTURES / "codex").glob("*.jsonl"))):
        text = source.read_text(encoding="utf-8")
        first = json.loads(text.split("\n", 1)[0])
        first["payload"]["cwd"] = here
        write(rollout(env, i), json.dumps(first) + "\n" + text.split("\n", 1)[1], T0 + i)
    assert invoke("index", "-q").exit_code == 0
    shown, read = same_both_ways(env, monkeypatch)
    assert read == []
    assert len(listed(shown[("--harness", "codex", "--json")])) == 3
    assert len(listed(shown[("--harness", "claude", "--json")])) >= 5


def test_a_name_the_index_cannot_hold_is_still_listed(env: Env) -> None:
    corpus(env, 6)
    assert invoke("index", "-q").exit_code == 0
    bad = os.path.join(os.fsencode(project(env, str(env.cwd))), b"not-utf8-\xff.jsonl")
    with open(bad, "wb") as fp:
        fp.write(claude_text(0xBAD, str(env.cwd), random.Random(2)).encode())
    shown = {args: outputs(*args) for args in ARGS}
    db(env).rename(db(env).with_name("aside"))
    assert {args: outputs(*args) for args in ARGS} == shown
    assert "00000bad-2222-4333-8444-555555555555" in shown[("--harness", "claude", "--json")]
