"""The cross-session index (harnesskit/session/catalog.py) and the commands on it: index, search,
usage. Corpora are generated here; expectations are computed from the files' JSON directly."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pytest
from catalog_corpus import START_MS, corpus, iso, make_session, turn
from conftest import SHARED_FIXTURES, TUTORIAL_DIR, assert_one_line_error, requires_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from writeside_helpers import Env, invoke, isolate, wait_for

from harnesskit.session import catalog, pricing
from harnesskit.session.store import encode_cwd
from harnesskit.session.usage import report


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return isolate(tmp_path, monkeypatch)


def dump(conn: sqlite3.Connection) -> dict:
    """Everything the index says, without its row numbers: equal dumps are equal indexes."""
    sessions = {r[0]: r[1:] for r in conn.execute(
        "SELECT rowid, path, harness, id, cwd, name, first_user, created_ms, updated_ms, models, messages, parent,"
        " activity, model, entries FROM sessions")}
    messages = sorted((sessions[r[0]][0], *r[1:]) for r in conn.execute(
        "SELECT m.session, m.entry_id, m.line, m.role, m.time_ms, m.model, m.tools, f.text FROM messages m"
        " JOIN messages_fts f ON f.rowid = m.rowid"))
    usage = sorted((sessions[r[0]][0], *r[1:]) for r in conn.execute("SELECT * FROM usage"))
    files = sorted(r for r in conn.execute("SELECT path, harness, offset, line FROM files"))
    return {"sessions": sorted(sessions.values()), "messages": messages, "usage": usage, "files": files}


def rebuilt(root: Path) -> dict:
    conn, _ = catalog.open_catalog(None)
    catalog.update(conn, catalog.pi_sources(sorted(root.iterdir())))
    return dump(conn)


def incremental(db: Path, root: Path) -> dict:
    conn, _, _ = catalog.refresh(db, catalog.pi_sources(sorted(root.iterdir())))
    try:
        return dump(conn)
    finally:
        conn.close()


# ------------------------------------------------------------------ search


def test_search_finds_each_session_by_what_was_written(env: Env) -> None:
    made = corpus(env.sessions, 300)
    rng = random.Random(1)
    for m in rng.sample(made, 25):
        marker = next(line["message"]["content"][0]["text"].split()[-1] for line in m.lines[1:])
        result = invoke("search", marker, "--all", "--json")
        assert result.exit_code == 0, result.output
        hits = [json.loads(line) for line in result.stdout.splitlines()]
        assert sorted((h["path"], h["entryId"], h["role"]) for h in hits) == [
            (str(m.path), m.lines[1]["id"], "user"), (str(m.path), m.lines[4]["id"], "assistant")]
        hits.sort(key=lambda h: h["role"], reverse=True)
        assert hits[0]["open"] == [f"harnesskit continue {m.path} --from {m.lines[1]['id']}",
                                   f"harnesskit inspect {m.path} --leaf {m.lines[1]['id']}"]
        assert marker in hits[0]["snippet"]


def test_search_text_output_names_the_commands_and_marks_the_match(env: Env) -> None:
    made = corpus(env.sessions, 3)
    result = invoke("search", "zz00001marker", "--all", "--role", "user")
    assert result.exit_code == 0, result.output
    assert "[zz00001marker]" in result.stdout
    assert f"harnesskit continue {made[1].path} --from {made[1].lines[1]['id']}" in result.stdout
    assert "\x1b" not in result.stdout  # not a terminal: brackets, no colour


def test_fts_syntax_passes_through(env: Env) -> None:
    corpus(env.sessions, 40)

    def hit_ids(query: str) -> set[tuple[str, str]]:
        result = invoke("search", query, "--all", "--json", "-n", "1000")
        assert result.exit_code == 0, result.output
        return {(h["path"], h["entryId"]) for h in map(json.loads, result.stdout.splitlines())}

    both = hit_ids("alpha bravo")
    assert both == hit_ids("alpha AND bravo") and both
    assert hit_ids("alpha OR bravo") >= hit_ids("alpha") | hit_ids("bravo")
    assert not hit_ids("alpha NOT bravo") & hit_ids("bravo")
    assert hit_ids("zz0001*") == hit_ids("zz00010marker") | hit_ids("zz00011marker") | hit_ids("zz00012marker") \
        | hit_ids("zz00013marker") | hit_ids("zz00014marker") | hit_ids("zz00015marker") \
        | hit_ids("zz00016marker") | hit_ids("zz00017marker") | hit_ids("zz00018marker") | hit_ids("zz00019marker")
    assert hit_ids('"please alpha"') <= hit_ids("please alpha")


@pytest.mark.parametrize("query", ['"unbalanced', "AND", "alpha NEAR(", "(("])
def test_a_malformed_query_is_one_line(env: Env, query: str) -> None:
    corpus(env.sessions, 2)
    assert_one_line_error(invoke("search", query, "--all"))


def test_chinese_words_of_the_chapter_are_found(env: Env) -> None:
    directory = env.sessions / "--tutorial--"
    directory.mkdir(parents=True)
    shutil.copy(TUTORIAL_DIR / "demo.jsonl", directory)
    texts = {}
    for line in (directory / "demo.jsonl").read_text(encoding="utf-8").splitlines()[1:]:
        entry = json.loads(line)
        texts[entry["id"]] = "".join(b.get("text", "") for b in entry["message"]["content"])
    for word in ("你好", "结果", "算", "刚才算的"):
        result = invoke("search", word, "--all", "--json", "-n", "50")
        assert result.exit_code == 0, result.output
        found = {json.loads(line)["entryId"] for line in result.stdout.splitlines()}
        assert found == {i for i, text in texts.items() if word in text}, word
    # and a snippet shows the text as written: no segmentation marks
    result = invoke("search", "结果", "--all", "--json")
    assert all("\u200b" not in json.loads(line)["snippet"] for line in result.stdout.splitlines())


def test_filters(env: Env) -> None:
    made = corpus(env.sessions, 60)

    def hits(*args: str) -> list[dict]:
        result = invoke("search", "done", "--json", "-n", "1000", *args)
        assert result.exit_code == 0, result.output
        return [json.loads(line) for line in result.stdout.splitlines()]

    everything = hits("--all")
    assert len(everything) == len(made) * 2  # one final answer per turn
    os.chdir(env.cwd)
    assert hits() == []  # this directory has no sessions
    assert {h["cwd"] for h in hits("--cwd", "/work/a")} == {"/work/a"}
    assert len(hits("--cwd", "/work/a")) == sum(1 for m in made if m.cwd == "/work/a") * 2
    assert {h["role"] for h in hits("--all", "--role", "assistant")} == {"assistant"}
    assert hits("--all", "--role", "user") == []
    gpt = [h for h in everything if h["entryId"] and any(
        line["id"] == h["entryId"] and line["message"]["model"] == "gpt-4o"
        for m in made if str(m.path) == h["path"] for line in m.lines[1:])]
    assert {(h["path"], h["entryId"]) for h in hits("--all", "--model", "gpt-4o")} == \
        {(h["path"], h["entryId"]) for h in gpt}
    calls = hits("--all", "--tool", "calc")
    assert calls == []  # "done" is in the answers, which call no tool
    assert len(invoke("search", "6", "--all", "--tool", "calc", "--json", "-n", "1000").stdout.splitlines()) \
        == len(made) * 2
    day = datetime.fromtimestamp(START_MS / 1000, tz=UTC) .strftime("%Y-%m-%d")
    first_day = hits("--all", "--since", day, "--until", day)
    assert first_day and all(START_MS <= h["timestamp"] < START_MS + 86_400_000 for h in first_day)
    assert hits("--all", "--harness", "codex") == []
    assert_one_line_error(invoke("search", "x", "--since", "yesterday-ish"))
    assert_one_line_error(invoke("search", "x", "--all", "--cwd", "/work/a"))


# ------------------------------------------------------------------ incremental == rebuild


def test_incremental_update_equals_a_rebuild_through_changes(env: Env) -> None:
    root = env.sessions
    db = env.home / "index.sqlite"
    made = corpus(root, 30)
    assert incremental(db, root) == rebuilt(root)
    rng = random.Random(3)
    # appends (read on from the offset)
    for m in made[:10]:
        m.append(turn(rng, 200, m.lines[-1]["id"], START_MS + 999, "appendedword"))
    assert incremental(db, root) == rebuilt(root)
    conn = sqlite3.connect(db)
    assert len(conn.execute("SELECT * FROM messages m JOIN messages_fts f ON f.rowid = m.rowid"
                            " WHERE messages_fts MATCH 'appendedword'").fetchall()) == 20
    conn.close()
    # a truncation, a replacement with another session of the same size, a deletion, a new file
    made[10].path.write_text(made[10].path.read_text(encoding="utf-8")[:300] + "\n", encoding="utf-8")
    other = make_session(root, rng, 999, "/work/c")
    same = other.path.read_bytes()
    made[11].path.write_bytes(same[: made[11].path.stat().st_size].ljust(made[11].path.stat().st_size, b"\n"))
    made[12].path.unlink()
    assert incremental(db, root) == rebuilt(root)
    # a torn last line is left until it is complete
    with made[13].path.open("ab") as fp:
        fp.write(b'{"type":"session_info","id":"ffff0000","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",')
    assert incremental(db, root) == rebuilt(root)
    with made[13].path.open("ab") as fp:
        fp.write(b'"name":"finished later"}\n')
    state = incremental(db, root)
    assert state == rebuilt(root)
    assert any(s[4] == "finished later" for s in state["sessions"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["append", "truncate", "delete", "replace", "create", "touch", "tear"]),
                          st.integers(0, 7)), min_size=1, max_size=8))
def test_incremental_equals_rebuild_property(tmp_path_factory: pytest.TempPathFactory, ops: list) -> None:
    base = tmp_path_factory.mktemp("prop")
    root = base / "sessions"
    db = base / "index.sqlite"
    made = corpus(root, 8, seed=11)
    rng = random.Random(5)
    incremental(db, root)
    for op, i in ops:
        m = made[i]
        if op == "create" or not m.path.exists():
            made[i] = make_session(root, rng, 100 + rng.randint(0, 10**6), "/work/a")
        elif op == "append":
            m.append(turn(rng, rng.randint(300, 10**6), None, START_MS, "more"))
        elif op == "truncate":
            data = m.path.read_bytes()
            m.path.write_bytes(data[: rng.randint(0, len(data))])
        elif op == "delete":
            m.path.unlink()
        elif op == "replace":
            m.path.write_bytes(m.path.read_bytes().replace(b"please", b"PLEASE"))
        elif op == "touch":
            os.utime(m.path)
        elif op == "tear":
            with m.path.open("ab") as fp:
                fp.write(b'{"type":"message","id":"torn')
        assert incremental(db, root) == rebuilt(root), (op, i)


# ------------------------------------------------------------------ robustness


def test_a_corrupt_index_is_rebuilt_never_trusted(env: Env) -> None:
    corpus(env.sessions, 5)
    db = env.home / "index.sqlite"
    assert invoke("index").exit_code == 0
    db.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    result = invoke("search", "zz00002marker", "--all", "--json", "--role", "user")
    assert result.exit_code == 0, result.output
    assert "rebuilt" in result.stderr
    assert len(result.stdout.splitlines()) == 1
    conn = sqlite3.connect(db)  # the file is a good index again
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 5


def test_an_index_of_another_schema_is_rebuilt(env: Env) -> None:
    corpus(env.sessions, 3)
    db = env.home / "index.sqlite"
    env.home.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE sessions(x)")
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    result = invoke("usage", "--json")
    assert result.exit_code == 0, result.output
    assert "rebuilt" in result.stderr
    assert json.loads(result.stdout)["totals"]["messages"] == 3 * 2 * 2


def test_search_works_where_no_index_can_be_written(env: Env) -> None:
    corpus(env.sessions, 3)
    (env.home / "index.sqlite").mkdir(parents=True)  # a directory where the database should be
    result = invoke("search", "zz00000marker", "--all", "--json", "--role", "user")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 1
    assert "in memory" in result.stderr


def _environ(env: Env) -> dict[str, str]:
    return {**env.environ(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def test_a_killed_index_leaves_a_usable_database(env: Env) -> None:
    made = corpus(env.sessions, 4000, cwds=tuple(f"/w/{i}" for i in range(40)))
    db = env.home / "index.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "harnesskit", "index", "-q"], env=_environ(env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(lambda: db.exists() and Path(f"{db}-wal").exists() or proc.poll() is not None, what="index started")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    result = invoke("search", "zz03999marker", "--all", "--json", "--role", "user")
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["path"] for line in result.stdout.splitlines()] == [str(made[3999].path)]
    assert incremental(db, env.sessions) == rebuilt(env.sessions)


def test_merging_left_paused_by_a_killed_bulk_run_is_set_back_by_the_next_update(env: Env) -> None:
    """A from-scratch run pauses FTS5's merging and is killed before it sets it back (the state is
    made here as it leaves it): the next update that writes, an appended turn, sets it back."""
    made = corpus(env.sessions, 20)
    assert invoke("index", "-q").exit_code == 0
    db = env.home / "index.sqlite"
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(catalog._AUTOMERGE, (0,))
    conn.close()
    made[7].append(turn(random.Random(7), 91, made[7].lines[-1]["id"], START_MS + 10**7))
    assert invoke("index", "-q").exit_code == 0
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT v FROM messages_fts_config WHERE k = 'automerge'").fetchall() == [(4,)]
    conn.close()
    assert incremental(db, env.sessions) == rebuilt(env.sessions)


def _frames(reader: sqlite3.Connection) -> int:
    """The frames in the WAL (all of them copied into the database by this PASSIVE checkpoint, so
    that the next writer starts the WAL over: then it holds what that writer wrote)."""
    busy, frames, copied = reader.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and frames == copied
    return frames


def test_after_a_bulk_index_each_one_file_update_writes_only_its_own_pages(env: Env,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A from-scratch run of many transactions (paused merging, a segment each) merges its FTS5
    segments itself: none of the one-file updates after it (16 are enough for the 16th level-0
    segment) merges them all at once, so none writes (and then checkpoints) much more than its own
    turn. A connection held open keeps the WAL between the commands, as a concurrent one would."""
    monkeypatch.setattr(catalog, "COMMIT_BYTES", 1 << 20)
    made = corpus(env.sessions, 4000, cwds=tuple(f"/w/{i}" for i in range(20)))
    db = env.home / "index.sqlite"
    catalog.open_catalog(db)[0].close()
    reader = sqlite3.connect(db)
    try:
        assert invoke("index", "-q").exit_code == 0
        _frames(reader)
        # one FTS5 segment left (segment ids are the high bits of the rowids of its data table, from
        # 1 << 37; 0-10 hold its structure), where each commit left one (eight here)
        assert reader.execute("SELECT count(DISTINCT id >> 37) FROM messages_fts_data WHERE id >= 1 << 37"
                              ).fetchone() == (1,)
        written = []
        for i, m in enumerate(made[:20]):
            m.append(turn(random.Random(i), 300, m.lines[-1]["id"], START_MS + 10**7, "appendedturn"))
            assert invoke("index", "-q", m.path).exit_code == 0
            written.append(_frames(reader))
        assert len(reader.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'appendedturn'")
                   .fetchall()) == 40
    finally:
        reader.close()
    assert max(written) <= 40, written  # one turn: 14-20 pages of 16 KiB (68 when one merged them all)


def test_a_bulk_run_onto_an_index_with_rows_leaves_its_segments_to_merging(env: Env,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a run from scratch merges the FTS5 index into one segment at its end (optimize rewrites every
    segment: onto a big index, a bulk add would rewrite all of it); one onto an index with rows leaves
    its segments to FTS5's merging, which it turns back on. Either way every message is found."""
    monkeypatch.setattr(catalog, "COMMIT_BYTES", 1 << 20)
    first = corpus(env.sessions, 300, cwds=("/w/old",))
    assert invoke("index", "-q").exit_code == 0
    rng = random.Random(3)
    later = [make_session(env.sessions, rng, 10_000 + i, f"/w/{i % 20}", marker=f"yy{i:05d}marker")
             for i in range(3000)]
    assert invoke("index", "-q").exit_code == 0
    conn = sqlite3.connect(env.home / "index.sqlite")
    try:
        segments = conn.execute("SELECT count(DISTINCT id >> 37) FROM messages_fts_data WHERE id >= 1 << 37"
                                ).fetchone()[0]
        merging = conn.execute("SELECT v FROM messages_fts_config WHERE k = 'automerge'").fetchone()
        found = {row[0] for row in conn.execute(
            "SELECT s.path FROM messages_fts f JOIN messages m ON m.rowid = f.rowid JOIN sessions s"
            " ON s.rowid = m.session WHERE messages_fts MATCH 'zz* OR yy*'")}
    finally:
        conn.close()
    assert segments > 1  # (one after a run from scratch: test_after_a_bulk_index_...)
    assert merging in (None, (4,))  # back on (None: FTS5's default, never set)
    assert found == {str(m.path) for m in [*first, *later]}


def test_many_small_updates_in_one_connection_keep_the_wal_small(env: Env) -> None:
    """One connection making one-file updates one after another (as `search` after each turn of a
    chat): its commits checkpoint the WAL every CHECKPOINT_PAGES pages, so that no checkpoint,
    whichever update it lands in, copies more than a couple of MB (SQLite's default, 1000 pages,
    let the WAL grow to 16 MB first)."""
    made = corpus(env.sessions, 200)
    db = env.home / "index.sqlite"
    assert invoke("index", "-q").exit_code == 0
    wal = Path(f"{db}-wal")
    conn, _ = catalog.open_catalog(db)
    largest = 0
    try:
        for i, m in enumerate(made):
            m.append(turn(random.Random(i), 300, m.lines[-1]["id"], START_MS + 10**7))
            catalog.update(conn, [catalog.Source(m.path)], partial=True)
            largest = max(largest, wal.stat().st_size)
    finally:
        conn.close()
    listing = catalog.open_existing(db)  # `list`'s connection, which writes too
    assert listing is not None
    assert listing.execute("PRAGMA wal_autocheckpoint").fetchone() == (catalog.CHECKPOINT_PAGES,)
    listing.close()
    assert catalog.CHECKPOINT_PAGES * catalog.PAGE_SIZE <= 4 << 20
    assert largest <= 4 << 20, largest
    assert incremental(db, env.sessions) == rebuilt(env.sessions)


def test_concurrent_updates_do_not_corrupt_the_index(env: Env) -> None:
    corpus(env.sessions, 1500)
    procs = [subprocess.Popen([sys.executable, "-m", "harnesskit", "index", "-q"], env=_environ(env),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    db = env.home / "index.sqlite"
    assert incremental(db, env.sessions) == rebuilt(env.sessions)


def test_another_writer_indexing_the_same_files_meanwhile_is_no_damage(env: Env,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Two commands indexing at once: the other one commits some of the files this one read as new
    (and numbered) before this one's first batch. The index ends right, and is not thrown away."""
    made = corpus(env.sessions, 30)
    db = env.home / "index.sqlite"
    read_new = catalog.read_new
    raced: list[int] = []

    def other_writer_first(items, session, message):  # noqa: ANN001, ANN202
        if not raced:
            raced.append(1)
            conn, _ = catalog.open_catalog(db)
            catalog.update(conn, [catalog.Source(m.path) for m in made[:5]], partial=True)
            conn.close()
        yield from read_new(items, session, message)

    monkeypatch.setattr(catalog, "read_new", other_writer_first)
    result = invoke("index")
    assert result.exit_code == 0, result.output
    assert raced == [1]
    assert "rebuilt" not in result.stderr and "damaged" not in result.stderr
    assert incremental(db, env.sessions) == rebuilt(env.sessions)


def _one_process(root: Path) -> dict:
    """The index built with no worker process: what a worker's build must equal."""
    saved = catalog.WORKER_FILES
    catalog.WORKER_FILES = 1 << 62
    try:
        return rebuilt(root)
    finally:
        catalog.WORKER_FILES = saved


def _with_worker(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every build of new files read by a worker process (in batches of 40), on any machine; the
    list counts the workers started."""
    from harnesskit.session import worker

    started: list[int] = []
    forked = worker.forked

    def counted(items):  # noqa: ANN001, ANN202 - the batches
        started.append(1)
        return forked(items)

    monkeypatch.setattr(catalog, "WORKER_FILES", 1)
    monkeypatch.setattr(catalog, "BATCH_FILES", 40)
    monkeypatch.setattr(worker, "available", lambda: True)
    monkeypatch.setattr(worker, "forked", counted)
    return started


@pytest.mark.parametrize("parameters", [19, 40, 999])
def test_rows_inserted_many_per_statement_are_those_inserted_one_at_a_time(
        env: Env, monkeypatch: pytest.MonkeyPatch, parameters: int) -> None:
    """Each table's rows go in a statement of many rows (as many as `_PARAMETERS` allows, the rest one
    at a time) and the FTS rows at the end of each transaction, FTS5's merging paused over the new
    files: the same index as one row per statement, from scratch and through an update, whatever
    number of rows is left over."""
    made = corpus(env.sessions, 131, cwds=("/w/a", "/w/b", "/w/c"))
    monkeypatch.setattr(catalog, "_PARAMETERS", 1)  # one row per statement
    expected = rebuilt(env.sessions)
    monkeypatch.setattr(catalog, "_PARAMETERS", parameters)
    monkeypatch.setattr(catalog, "COMMIT_BYTES", 20_000)  # a few transactions
    monkeypatch.setattr(catalog, "BATCH_FILES", 17)
    result = invoke("index")
    assert result.exit_code == 0, result.output
    db = env.home / "index.sqlite"
    assert incremental(db, env.sessions) == expected
    conn = sqlite3.connect(db)  # FTS5's merging, paused while the new files went in, is back on
    assert conn.execute("SELECT v FROM messages_fts_config WHERE k = 'automerge'").fetchall() == [(4,)]
    conn.close()
    rng = random.Random(parameters)
    for m in rng.sample(made, 60):  # changed files go through the update's batches
        m.append(turn(rng, 90, m.lines[-1]["id"], START_MS + 10**7))
    monkeypatch.setattr(catalog, "_PARAMETERS", 1)
    expected = rebuilt(env.sessions)
    monkeypatch.setattr(catalog, "_PARAMETERS", parameters)
    assert invoke("index").exit_code == 0
    assert incremental(db, env.sessions) == expected
    hits = invoke("search", "zz00130marker", "--all", "--json", "--role", "user")
    assert [json.loads(line)["path"] for line in hits.stdout.splitlines()] == [str(made[130].path)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker process is forked")
def test_a_worker_process_builds_the_same_index(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    made = corpus(env.sessions, 150, cwds=("/w/a", "/w/b", "/w/c"))
    hostile = env.sessions / "--hostile--"
    hostile.mkdir()
    (hostile / "h.jsonl").write_text(
        '{"type":"session","version":3,"id":"h","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}\n'
        '{"type":"message","id":"1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":'
        '{"role":"user","content":"lone \\ud800 surrogate","timestamp":1}}\n', encoding="utf-8")
    expected = _one_process(env.sessions)
    started = _with_worker(monkeypatch)
    result = invoke("index")
    assert result.exit_code == 0, result.output
    assert "151 session files (151 read" in result.stdout
    assert started == [1]
    conn = sqlite3.connect(env.home / "index.sqlite")
    assert dump(conn) == expected
    conn.close()
    hits = invoke("search", "zz00149marker", "--all", "--json", "--role", "user")
    assert [json.loads(line)["path"] for line in hits.stdout.splitlines()] == [str(made[149].path)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker process is forked")
def test_the_command_reads_batches_itself_while_the_worker_is_behind(env: Env, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker reads from the first batch on, the command from the last one back whenever the
    worker's next is not ready: here the worker starts only once the command has read one, so both
    read some, and the index is the one a single process builds."""
    made = corpus(env.sessions, 200)  # 5 batches of 40
    expected = _one_process(env.sessions)
    started = _with_worker(monkeypatch)
    parent = os.getpid()
    mine: list[int] = []
    theirs = tmp_path / "theirs"
    read_new = catalog.read_new

    def behind(items, session, message):  # noqa: ANN001, ANN202
        if os.getpid() == parent:
            mine.append(len(items))
            (tmp_path / "mine").touch()
        else:
            for _ in range(6000):  # the worker waits for the command's first batch (a minute at most)
                if (tmp_path / "mine").exists():
                    break
                time.sleep(0.01)
        for rows in read_new(items, session, message):
            if os.getpid() != parent:
                with theirs.open("a") as fp:
                    fp.write(f"{rows.count}\n")
            yield rows

    monkeypatch.setattr(catalog, "read_new", behind)
    result = invoke("index")
    assert result.exit_code == 0, result.output
    assert "200 session files (200 read" in result.stdout
    assert started == [1]  # one worker, no second attempt (a batch inserted twice would collide)
    assert 1 <= len(mine) <= 4 and set(mine) == {40}  # the last batch at least, each read on its own
    assert theirs.read_text().split()[:1] == ["40"]  # the first batch always comes from the worker
    conn = sqlite3.connect(env.home / "index.sqlite")
    assert dump(conn) == expected
    conn.close()
    for i in (0, 199):
        hits = invoke("search", f"zz{i:05d}marker", "--all", "--json", "--role", "user")
        assert [json.loads(line)["path"] for line in hits.stdout.splitlines()] == [str(made[i].path)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the worker process is forked")
def test_a_worker_that_dies_leaves_the_rest_to_the_command(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus(env.sessions, 150)
    expected = _one_process(env.sessions)
    _with_worker(monkeypatch)
    parent = os.getpid()
    read_new = catalog.read_new

    def dies_after_one_batch(items, session, message):  # noqa: ANN001, ANN202
        for number, rows in enumerate(read_new(items, session, message)):
            if number == 1 and os.getpid() != parent:
                os._exit(3)  # the worker killed between two batches
            yield rows

    monkeypatch.setattr(catalog, "read_new", dies_after_one_batch)
    result = invoke("index")
    assert result.exit_code == 0, result.output
    assert "150 session files (150 read" in result.stdout
    conn = sqlite3.connect(env.home / "index.sqlite")
    assert dump(conn) == expected
    conn.close()


def test_index_command_reports_what_it_did(env: Env) -> None:
    made = corpus(env.sessions, 12)
    first = invoke("index")
    assert first.exit_code == 0, first.output
    assert "12 session files (12 read, 0 read on, 0 unchanged" in first.stdout
    made[0].append(turn(random.Random(0), 500, made[0].lines[-1]["id"], START_MS))
    made[1].path.unlink()
    second = invoke("index")
    assert "11 session files (0 read, 1 read on, 10 unchanged, 1 dropped; 4 messages added)" in second.stdout
    assert invoke("index", "--rebuild").stdout.count("11 read") == 1


# ------------------------------------------------------------------ usage


def _expected(rows: list[dict], key) -> dict:  # noqa: ANN001 - a function of a row
    totals: dict = defaultdict(lambda: defaultdict(int))
    for row in rows:
        t = totals[key(row)]
        for field in ("input", "output", "cacheRead", "cacheWrite", "totalTokens"):
            t[field] += row[field]
    return {k: dict(v) for k, v in totals.items()}


def test_usage_totals_equal_the_sums_over_the_files(env: Env) -> None:
    from catalog_corpus import assistant_usages

    made = corpus(env.sessions, 80)
    rows = assistant_usages(made)
    keys = {
        "daily": lambda r: datetime.fromtimestamp(r["time"] / 1000, tz=UTC).strftime("%Y-%m-%d"),
        "monthly": lambda r: datetime.fromtimestamp(r["time"] / 1000, tz=UTC).strftime("%Y-%m"),
        "model": lambda r: r["model"],
        "project": lambda r: r["cwd"],
        "session": lambda r: r["path"],
    }
    for kind, key in keys.items():
        result = invoke("usage", kind, "--json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        got = {g["key"]: {f: g[f] for f in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")}
               for g in data["groups"]}
        assert got == _expected(rows, key), kind
        assert data["totals"]["messages"] == len(rows)


def test_usage_cost_is_the_entries_own_else_priced_else_unpriced(env: Env) -> None:
    from catalog_corpus import assistant_usages

    made = corpus(env.sessions, 40)
    rows = assistant_usages(made)
    data = json.loads(invoke("usage", "model", "--json").stdout)
    by_model = {g["key"]: g for g in data["groups"]}
    for model in ("claude-sonnet-4-5-20250929", "gpt-4o"):
        price = pricing.PRICES[pricing.canonical(model)]
        expected = sum(
            r["cost"]["total"] if r["cost"]["total"] else
            (r["input"] * price.input + r["output"] * price.output + r["cacheRead"] * price.cache_read
             + r["cacheWrite"] * price.cache_write) / 1e6
            for r in rows if r["model"] == model)
        assert by_model[model]["cost"] == pytest.approx(expected, abs=1e-6)
    unpriced = by_model["llama-unpriced"]
    own = sum(r["cost"]["total"] for r in rows if r["model"] == "llama-unpriced")
    assert unpriced["knownCost"] == pytest.approx(own, abs=1e-6)
    assert unpriced["unpricedMessages"] == sum(1 for r in rows if r["model"] == "llama-unpriced"
                                               and not r["cost"]["total"])
    assert unpriced["cost"] is None and data["totals"]["cost"] is None  # never shown as free
    table = invoke("usage", "model").stdout
    assert "unpriced" in table
    # a config override prices it
    (env.home / "config.yaml").write_text("pricing:\n  llama-unpriced: {input: 1, output: 2}\n", encoding="utf-8")
    again = {g["key"]: g for g in json.loads(invoke("usage", "model", "--json").stdout)["groups"]}
    assert again["llama-unpriced"]["unpricedMessages"] == 0
    assert again["llama-unpriced"]["cost"] == pytest.approx(abs=1e-6, expected=own + sum(
        (r["input"] * 1 + r["output"] * 2) / 1e6 for r in rows
        if r["model"] == "llama-unpriced" and not r["cost"]["total"]))
    (env.home / "config.yaml").write_text("pricing:\n  llama-unpriced: {input: free}\n", encoding="utf-8")
    assert_one_line_error(invoke("usage"))


def test_usage_filters_and_breakdown(env: Env) -> None:
    made = corpus(env.sessions, 30)
    everything = json.loads(invoke("usage", "daily", "--json").stdout)
    day = everything["groups"][0]["key"]
    one = json.loads(invoke("usage", "daily", "--since", day, "--until", day, "--json").stdout)
    assert [g["key"] for g in one["groups"]] == [day]
    assert one["groups"][0] == everything["groups"][0]
    weekly = json.loads(invoke("usage", "weekly", "--json", "--breakdown").stdout)
    for group in weekly["groups"]:
        assert datetime.strptime(group["key"], "%Y-%m-%d").weekday() == 0  # weeks start on Monday
        assert sum(t["totalTokens"] for t in group["models"].values()) == group["totalTokens"]
    assert sum(g["totalTokens"] for g in weekly["groups"]) == everything["totals"]["totalTokens"]
    table = invoke("usage", "model", "--breakdown")
    assert table.exit_code == 0 and table.stdout.splitlines()[-1].startswith("total")
    assert json.loads(invoke("usage", "--harness", "claude", "--json").stdout)["groups"] == []
    assert len(made) == 30


def test_report_groups_by_utc_day() -> None:
    row = catalog.UsageRow("p", "s", "/w", "pi", "e", START_MS - 1, "openai", "gpt-4o", 1, 2, 3, 4, 10, None)
    groups, grand = report([row], "daily")
    assert [g.key for g in groups] == [iso(START_MS - 1)[:10]] == ["2025-12-31"]
    assert grand.cost == pytest.approx((1 * 2.5 + 2 * 10 + 3 * 1.25) / 1e6)


def test_pricing_matches_names_exactly_after_provider_and_date() -> None:
    assert pricing.price_of("anthropic/claude-sonnet-4-5-20250929") == pricing.PRICES["claude-sonnet-4-5"]
    assert pricing.price_of("claude-opus-4-6") is None  # not claude-opus-4's price by prefix
    assert pricing.price_of(None) is None
    with pytest.raises(ValueError):
        pricing.parse_overrides({"m": {"input": -1}})


# ------------------------------------------------------------------ other harnesses


OWN_CLAUDE = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "claude-code").glob("*.jsonl"))
OWN_CODEX = sorted((Path(__file__).resolve().parents[2] / "fixtures" / "codex").glob("*.jsonl"))


def _place_foreign(env: Env, claude: list[Path], codex: list[Path]) -> dict[str, list[Path]]:
    """Copy transcripts into this test's Claude Code and Codex stores, where each harness keeps them."""
    placed: dict[str, list[Path]] = {"claude": [], "codex": []}
    for i, source in enumerate(claude):
        target = env.tmp / "claude" / "projects" / "-home-dev-proj" / f"{i:02d}-{source.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        placed["claude"].append(target)
    for i, source in enumerate(codex):
        target = env.tmp / "codex" / "sessions" / "2026" / "03" / f"{i + 1:02d}" / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        placed["codex"].append(target)
    return placed


def _stats_tokens(path: Path, fmt: str) -> dict:
    result = invoke("inspect", path, "--stats", "--json", "--from", fmt)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["tokens"]


def _check_foreign(env: Env, placed: dict[str, list[Path]]) -> None:
    for harness, paths in placed.items():
        data = json.loads(invoke("usage", "session", "--harness", harness, "--json").stdout)
        by_file = {g["key"]: g for g in data["groups"]}
        for path in paths:
            tokens = _stats_tokens(path, harness)
            if not tokens["totalTokens"]:
                assert str(path) not in by_file or by_file[str(path)]["totalTokens"] == 0
                continue
            got = by_file[str(path)]
            assert {k: got[k] for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")} == tokens
        # every session is searchable by a word of its first user prompt
        for path in paths:
            context = invoke("inspect", path, "--context", "--json", "--from", harness)
            users = [json.loads(line) for line in context.stdout.splitlines()]
            text = next((" ".join(b.get("text", "") for b in m["content"] if isinstance(b, dict))
                         if isinstance(m["content"], list) else m["content"]
                         for m in users if m.get("role") == "user"), "")
            words = [w for w in re.findall(r"[A-Za-z]{5,}", text)]
            if not words:
                continue
            hits = invoke("search", words[0], "--all", "--harness", harness, "--json", "-n", "1000")
            assert hits.exit_code == 0, hits.output
            assert str(path) in {json.loads(line)["path"] for line in hits.stdout.splitlines()}, (path, words[0])


def test_claude_and_codex_sessions_are_indexed_searched_and_counted(env: Env) -> None:
    _check_foreign(env, _place_foreign(env, OWN_CLAUDE, OWN_CODEX))
    pi_only = json.loads(invoke("usage", "--harness", "pi", "--json").stdout)
    assert pi_only["groups"] == []


@requires_shared
def test_the_real_transcripts_are_indexed_and_counted_once(env: Env) -> None:
    claude = sorted((SHARED_FIXTURES / "claude-code").glob("*.jsonl"))
    codex = sorted((SHARED_FIXTURES / "codex").glob("*.jsonl"))
    assert claude and codex
    _check_foreign(env, _place_foreign(env, claude, codex))


def test_hostile_session_content_never_breaks_the_index(env: Env) -> None:
    """What a session file may hold and SQLite or orjson cannot take: lone surrogates (in text, name,
    cwd, tool arguments), numbers beyond any float, nesting past orjson's depth."""
    directory = env.sessions / "--hostile--"
    directory.mkdir(parents=True)
    deep = "[" * 600 + "]" * 600
    lines = [
        '{"type":"session","version":3,"id":"h\\ud800","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w\\udfff"}',
        '{"type":"session_info","id":"00000001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
        '"name":"bad \\ud800 name"}',
        '{"type":"message","id":"00000002","parentId":"00000001","timestamp":"2026-01-01T00:00:00.000Z",'
        '"message":{"role":"user","content":[{"type":"text","text":"findme \\ud83d alone"}],"timestamp":1}}',
        '{"type":"message","id":"00000003","parentId":"00000002","timestamp":"2026-01-01T00:00:00.000Z",'
        '"message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"calc","arguments":{"x":'
        + deep + ',"y":"\\ud800","z":123456789012345678901234567890}}],"provider":"p","model":"m",'
        '"usage":{"input":1e400,"output":5,"totalTokens":99999999999999999999999},"stopReason":"toolUse",'
        '"timestamp":2}}',
    ]
    (directory / "h.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    corpus(env.sessions, 2)
    assert invoke("index").exit_code == 0
    hits = invoke("search", "findme", "--all", "--json")
    assert hits.exit_code == 0, hits.output
    assert [json.loads(line)["entryId"] for line in hits.stdout.splitlines()] == ["00000002"]
    found = invoke("search", "calc", "--all", "--tool", "calc", "--json").stdout
    calls = [json.loads(line) for line in found.splitlines()]
    assert [h["entryId"] for h in calls if h["path"].endswith("h.jsonl")] == ["00000003"]
    usage = invoke("usage", "model", "--json")
    assert usage.exit_code == 0, usage.output
    assert {g["key"] for g in json.loads(usage.stdout)["groups"]} >= {"m"}


def test_index_shows_progress_on_a_terminal_only(env: Env) -> None:
    from test_progress import run_with_terminal_stderr

    corpus(env.sessions, 200)
    code, stdout, terminal = run_with_terminal_stderr(env, "index")
    assert code == 0
    assert "indexing [" in terminal and "%" in terminal
    assert terminal.rstrip().endswith("\r\x1b[K")  # erased when done
    assert "200 session files" in stdout and "\r" not in stdout
    quiet = run_with_terminal_stderr(env, "index", "--rebuild", "-q")
    assert quiet[0] == 0 and "indexing [" not in quiet[2]


# -- numbers and text a file may hold, through index, search and usage ---------------------------------


def _raw_session(env: Env, cwd: str, messages: list[dict], name: str = "odd") -> Path:
    directory = env.sessions / ("--" + cwd.strip("/").replace("/", "-").replace("\n", "-") + "--")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.jsonl"
    lines = [{"type": "session", "version": 3, "id": f"{name}-id", "timestamp": iso(START_MS), "cwd": cwd}]
    parent = None
    for i, message in enumerate(messages):
        lines.append({"type": "message", "id": f"{i:08x}", "parentId": parent, "timestamp": iso(START_MS + i),
                      "message": {"timestamp": START_MS + i, **message}})
        parent = f"{i:08x}"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _assistant(text: str, **usage: object) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "provider": "p", "model": "m",
            "usage": usage}


def _strict_json(text: str) -> object:
    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is no JSON")

    return json.loads(text, parse_constant=refuse)


def test_token_counts_whose_sum_passes_64_bits_are_indexed(env: Env) -> None:
    """Two counts each within SQLite's integers, with no totalTokens: their sum is not. It raised an
    OverflowError in every later `index`, `search`, `usage` and `list` until the file changed."""
    big = 5_000_000_000_000_000_000
    _raw_session(env, "/w", [{"role": "user", "content": "bignumbers please"},
                             _assistant("done", input=big, output=big)])
    for args in (["index"], ["search", "bignumbers", "--all"], ["usage", "--json"], ["list", "--all"]):
        result = invoke(*args)
        assert result.exit_code == 0, (args, result.output)
    totals = _strict_json(invoke("usage", "--json").stdout)["totals"]
    assert (totals["input"], totals["output"], totals["totalTokens"]) == (big, big, 0)  # a count past 64 bits: none


def test_usage_json_stays_json_when_costs_pass_a_floats_range(env: Env) -> None:
    """Costs a file says are 1e400 and -1e400 summed to NaN, which json_line wrote as NaN: no JSON."""
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    path = _raw_session(env, "/w", [_assistant("a", input=1, output=1, totalTokens=2, cost={**cost, "total": 1}),
                                    _assistant("b", input=1, output=1, totalTokens=2, cost={**cost, "total": 2})])
    path.write_text(path.read_text(encoding="utf-8").replace('"total": 1}', '"total": 1e400}')
                    .replace('"total": 2}', '"total": -1e400}'), encoding="utf-8")
    for kind in ("daily", "model", "session"):
        result = invoke("usage", kind, "--json")
        assert result.exit_code == 0, result.output
        data = _strict_json(result.stdout)
        assert data["totals"]["cost"] is None and data["totals"]["messages"] == 2
    table = invoke("usage")
    assert table.exit_code == 0 and "not a number" in table.stdout and "$nan" not in table.stdout


def test_a_newline_in_a_header_cannot_forge_a_line_of_search_output(env: Env) -> None:
    forged = "/w\n   harnesskit continue /tmp/evil.jsonl --from a1"
    _raw_session(env, forged, [{"role": "user", "content": "forgeneedle here"}])
    result = invoke("search", "forgeneedle", "--all")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert not any(line.lstrip().startswith("harnesskit continue /tmp/evil") for line in lines), lines
    assert "/w\\n   harnesskit continue /tmp/evil.jsonl" in lines[0]


# ------------------------------------------------------------------ times no date holds

MICROSECONDS = START_MS * 1000  # 2026-01-01 written in microseconds: year 57971 when read as ms


def _microsecond_session(env: Env) -> Path:
    """This directory's session whose first answer's time is in microseconds, its second in ms."""
    path = env.sessions / encode_cwd(str(env.cwd)) / "2026-01-01T00-00-00-000Z_odd.jsonl"
    path.parent.mkdir(parents=True)
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.25}}
    lines = [{"type": "session", "version": 3, "id": "odd", "timestamp": iso(START_MS), "cwd": str(env.cwd)}]
    for n, (text, ms) in enumerate([("tsneedle", MICROSECONDS), ("tsnormal", START_MS)]):
        user, answer = f"{2 * n:08x}", f"{2 * n + 1:08x}"
        lines += [
            {"type": "message", "id": user, "parentId": lines[-1].get("id") if n else None, "timestamp": iso(START_MS),
             "message": {"role": "user", "content": f"ask {text}", "timestamp": START_MS}},
            {"type": "message", "id": answer, "parentId": user, "timestamp": iso(START_MS),
             "message": {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "x",
                         "provider": "p", "model": "m", "usage": usage, "stopReason": "stop", "timestamp": ms}},
        ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_time_no_date_holds_shows_as_unknown_in_search(env: Env) -> None:
    _microsecond_session(env)
    text = invoke("search", "tsneedle", "--all")
    assert text.exit_code == 0, text.output
    assert text.stdout.splitlines()[0].startswith("1. ?  assistant  odd")
    hits = invoke("search", "tsneedle", "--all", "--json")
    assert hits.exit_code == 0, hits.output
    found = {(h["role"], h["timestamp"]) for h in map(json.loads, hits.stdout.splitlines())}
    assert found == {("user", START_MS), ("assistant", MICROSECONDS)}


@pytest.mark.parametrize("kind", ["daily", "weekly", "monthly"])
def test_usage_counts_a_time_no_date_holds_under_no_time(env: Env, kind: str) -> None:
    """Left out, its tokens and cost would be missing from the total: they are counted, under no date."""
    _microsecond_session(env)
    result = invoke("usage", kind, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    day = {"daily": "2026-01-01", "weekly": "2025-12-29", "monthly": "2026-01"}[kind]
    assert [(g["key"], g["totalTokens"], g["cost"]) for g in data["groups"]] == [("(no time)", 15, 0.25),
                                                                                  (day, 15, 0.25)]
    assert data["totals"]["totalTokens"] == 30 and data["totals"]["messages"] == 2
    table = invoke("usage", kind)
    assert table.exit_code == 0, table.output
    assert [line.split()[:2] for line in table.stdout.splitlines()[2:]] == [["(no", "time)"], [day, "10"],
                                                                            ["total", "20"]]


def test_list_shows_a_time_no_date_holds_as_unknown_with_and_without_the_index(env: Env) -> None:
    _microsecond_session(env)  # the last message is the ms one: the session's activity is its time
    path = env.sessions / encode_cwd(str(env.cwd)) / "2026-01-01T00-00-00-000Z_late.jsonl"
    lines = [{"type": "session", "version": 3, "id": "late", "timestamp": iso(START_MS), "cwd": str(env.cwd)},
             {"type": "message", "id": "00000001", "parentId": None, "timestamp": iso(START_MS),
              "message": {"role": "user", "content": "late one", "timestamp": MICROSECONDS}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    shown = []
    for _ in ("files", "index"):
        table, rows = invoke("list"), invoke("list", "--json")
        assert table.exit_code == 0 and rows.exit_code == 0, (table.output, rows.output)
        assert [json.loads(line)["id"] for line in rows.stdout.splitlines()] == ["late", "odd"]
        late = table.stdout.splitlines()[1]
        assert late.split()[:3] == ["?", "1", "late"], late
        assert "1970" not in table.stdout
        shown.append((table.stdout, rows.stdout))
        assert invoke("index").exit_code == 0
    assert shown[0] == shown[1]


# ------------------------------------------------------------------ arguments past what the index takes


def test_the_last_day_datetime_holds_is_a_day_like_any_other(env: Env) -> None:
    """The end of 9999-12-31 is 10000-01-01, past datetime's range but not past a time in ms."""
    corpus(env.sessions, 5)
    whole = invoke("usage", "--json")
    assert whole.exit_code == 0, whole.output
    for until in ("9999-12-31", "99991231"):
        result = invoke("usage", "--until", until, "--json")
        assert result.exit_code == 0, result.output
        assert result.stdout == whole.stdout
    everything = invoke("search", "done", "--all", "--json", "-n", "1000").stdout
    assert everything
    for option in ("--until", "--since"):
        result = invoke("search", "done", "--all", "--json", "-n", "1000", option, "9999-12-31")
        assert result.exit_code == 0, result.output
        assert result.stdout == (everything if option == "--until" else "")


@pytest.mark.parametrize("command", [("search", "x"), ("list",)])
def test_a_count_past_64_bits_is_a_usage_error(env: Env, command: tuple[str, ...]) -> None:
    corpus(env.sessions, 2)
    result = invoke(*command, "-n", "99999999999999999999")
    assert result.exit_code == 2, result.output
    assert "Invalid value for '-n'" in result.stderr and "internal error" not in result.stderr
    assert invoke(*command, "-n", "1000000000").exit_code == 0


@pytest.mark.parametrize("args", [("search", "\udcff"), ("search", "x", "--model", "m\udcff"),
                                  ("search", "x", "--tool", "\udcffcalc")])
def test_an_argument_that_is_not_utf8_is_one_line(env: Env, args: tuple[str, ...]) -> None:
    """Bytes that are not UTF-8 reach Python as lone surrogates, which SQLite cannot take."""
    corpus(env.sessions, 2)
    assert "is not UTF-8" in assert_one_line_error(invoke(*args, "--all"))


def test_index_of_a_file_it_cannot_name_or_reach_is_one_line(env: Env) -> None:
    made = corpus(env.sessions, 1)[0]
    odd = env.tmp / "f\udcff.jsonl"
    shutil.copy(made.path, odd)
    assert "is not UTF-8" in assert_one_line_error(invoke("index", odd))
    (env.tmp / "l1.jsonl").symlink_to(env.tmp / "l2.jsonl")
    (env.tmp / "l2.jsonl").symlink_to(env.tmp / "l1.jsonl")
    assert "symbolic links" in assert_one_line_error(invoke("index", env.tmp / "l1.jsonl"))
    assert invoke("index", made.path).exit_code == 0  # a file that is there and named in UTF-8
    assert "no match" in invoke("search", "x", "--cwd", env.tmp / "l1.jsonl").stderr  # a loop is no cwd of any


def test_list_and_search_from_a_directory_whose_name_is_not_utf8(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """list reads its sessions (the index cannot hold their names); search finds those recorded for it
    elsewhere, and says why the others are not searched."""
    here = env.tmp / "d\udcff"
    here.mkdir()
    monkeypatch.chdir(here)
    kept = env.sessions / encode_cwd(str(here)) / "2026-01-01T00-00-00-000Z_kept.jsonl"
    flat = env.sessions / "--flat--" / "2026-01-01T00-00-00-000Z_flat.jsonl"
    for path, word in ((kept, "keptword"), (flat, "flatword")):
        path.parent.mkdir(parents=True)
        lines = [{"type": "session", "version": 3, "id": word, "timestamp": iso(START_MS), "cwd": str(here)},
                 {"type": "message", "id": "00000001", "parentId": None, "timestamp": iso(START_MS),
                  "message": {"role": "user", "content": f"say {word}", "timestamp": START_MS}}]
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")  # cwd as \udcff
    listed = []
    for _ in ("files", "index"):
        table, rows = invoke("list"), invoke("list", "--json")
        assert table.exit_code == 0 and rows.exit_code == 0, (table.output, rows.output)
        assert "say keptword" in table.stdout
        assert [json.loads(line)["path"] for line in rows.stdout.splitlines()] == [str(kept)]
        listed.append((table.stdout, rows.stdout, invoke("list", "--all").stdout))
        assert invoke("index").exit_code == 0
    assert listed[0] == listed[1]
    found = invoke("search", "flatword", "--json")
    assert found.exit_code == 0, found.output
    assert [json.loads(line)["path"] for line in found.stdout.splitlines()] == [str(flat)]
    missed = invoke("search", "keptword")
    assert missed.exit_code == 0 and missed.stdout == ""
    assert "is not UTF-8: the sessions kept under its name are not indexed" in missed.stderr


def test_tool_filter_matches_a_name_exactly(env: Env) -> None:
    """--tool is a name, not a pattern: no wildcard (% _), no other case, no part of a name."""
    made = corpus(env.sessions, 3)
    path = env.sessions / "--two--" / "2026-01-01T00-00-00-000Z_two.jsonl"
    path.parent.mkdir(parents=True)
    call = [{"type": "toolCall", "id": f"c{name}", "name": name, "arguments": {}} for name in ("calc", "read_file")]
    lines = [{"type": "session", "version": 3, "id": "two", "timestamp": iso(START_MS), "cwd": "/two"},
             {"type": "message", "id": "00000001", "parentId": None, "timestamp": iso(START_MS),
              "message": {"role": "user", "content": "twotools please", "timestamp": START_MS}},
             {"type": "message", "id": "00000002", "parentId": "00000001", "timestamp": iso(START_MS),
              "message": {"role": "assistant", "content": [{"type": "text", "text": "twotools"}, *call], "api": "x",
                          "provider": "p", "model": "m", "usage": {}, "stopReason": "toolUse",
                          "timestamp": START_MS}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    def ids(query: str, tool: str) -> set[tuple[str, str]]:
        result = invoke("search", query, "--all", "--json", "-n", "1000", "--tool", tool)
        assert result.exit_code == 0, result.output
        return {(h["path"], h["entryId"]) for h in map(json.loads, result.stdout.splitlines())}

    assert ids("twotools", "calc") == ids("twotools", "read_file") == {(str(path), "00000002")}
    for pattern in ("%", "_", "%calc%", "_alc", "CALC", "read%", "read_fil", "ead_file", "calc,read_file"):
        assert ids("twotools", pattern) == set(), pattern
    assert len(ids("6", "calc")) == len(made) * 2  # each turn's call (6*7)
    assert ids("6", "%") == ids("6", "cal_") == set()


@pytest.mark.parametrize("table", ["sessions", "messages_fts_data", "usage"])
def test_a_damaged_page_that_only_a_query_reaches_is_rebuilt_not_failed_on_for_ever(env: Env, table: str) -> None:
    """An update reads the files' rows only, so it took such an index as sound ("unchanged"), and every
    search and usage after failed with 'database disk image is malformed'."""
    made = corpus(env.sessions, 200)
    assert invoke("index").exit_code == 0
    db = catalog.default_path(env.home)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root, page_size = conn.execute(f"SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_master"
                                       f" WHERE name = '{table}'").fetchone()
    conn.close()
    with db.open("r+b") as fp:  # the table's root page, zeroed
        fp.seek((root - 1) * page_size)
        fp.write(b"\0" * page_size)
    search = invoke("search", "zz00007marker", "--all", "--json")
    assert search.exit_code == 0, search.output
    assert {json.loads(line)["path"] for line in search.stdout.splitlines()} == {str(made[7].path)}
    usage = invoke("usage", "--json")
    assert usage.exit_code == 0, usage.output
    warned = search.stderr + usage.stderr  # by the first to reach the page; rebuilt once, sound since
    assert warned.count("damaged index") == 1 and "rebuilt" in warned
    assert ("damaged" in search.stderr) == (table != "usage")
    assert json.loads(usage.stdout)["totals"]["messages"] == sum(
        1 for m in made for line in m.lines if line.get("message", {}).get("role") == "assistant")
