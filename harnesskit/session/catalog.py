"""The cross-session index: one SQLite database (stdlib `sqlite3`, FTS5) over every session file.

The database is a cache; the session files stay the truth. It is kept never stale by what the
files promise: a session file is append-only, so a file whose size grew and whose first bytes are
unchanged is read on from the byte offset indexed last time, anything else that changed is read
again in full, and a file that disappeared is dropped. A database that cannot be opened, is not
ours, or has an older schema is rebuilt, never trusted; where none can be written at all, the
same code runs on an in-memory database. One writer at a time (WAL, `BEGIN IMMEDIATE`): readers
never wait, and a killed update leaves the last committed state.

Text is matched as users wrote it, CJK included: FTS5's `unicode61` tokenizer sees a run of
Chinese characters as one token, and `trigram` cannot match a two-character word (你好, 结果:
most Chinese words), so every CJK character is indexed as a token of its own (a zero-width space
between them, removed again from snippets) and a CJK run in a query becomes a phrase. The
tokenizer is then unicode61 for everything else, so FTS5's query syntax (phrases, prefix*,
AND/OR/NOT, NEAR) passes through unchanged.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from .format import is_header
from .migrate import UnsupportedSession, detect, iso_to_ms

SCHEMA_VERSION = 1
HEAD_BYTES = 4096  # "the first bytes": a replaced file differs here (its header has another id)
BATCH_FILES = 500  # files per transaction: a killed update loses at most one batch of work

_SCHEMA = f"""
CREATE TABLE files(
  path TEXT PRIMARY KEY, harness TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
  inode INTEGER NOT NULL, head BLOB NOT NULL, offset INTEGER NOT NULL, line INTEGER NOT NULL,
  session INTEGER NOT NULL);
CREATE TABLE sessions(
  rowid INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, harness TEXT NOT NULL, id TEXT, cwd TEXT,
  name TEXT, first_user TEXT, created_ms INTEGER, updated_ms INTEGER, models TEXT NOT NULL DEFAULT '[]',
  messages INTEGER NOT NULL DEFAULT 0, parent TEXT);
CREATE TABLE messages(
  rowid INTEGER PRIMARY KEY, session INTEGER NOT NULL, entry_id TEXT, line INTEGER, role TEXT,
  time_ms INTEGER, model TEXT, tools TEXT NOT NULL DEFAULT '');
CREATE INDEX messages_session ON messages(session);
CREATE VIRTUAL TABLE messages_fts USING fts5(text, tokenize = 'unicode61');
CREATE TABLE usage(
  session INTEGER NOT NULL, entry_id TEXT, time_ms INTEGER, provider TEXT, model TEXT,
  input INTEGER NOT NULL, output INTEGER NOT NULL, cache_read INTEGER NOT NULL,
  cache_write INTEGER NOT NULL, total INTEGER NOT NULL, cost REAL);
CREATE INDEX usage_session ON usage(session);
PRAGMA user_version = {SCHEMA_VERSION};
"""


class QueryError(ValueError):
    """A search query FTS5 cannot parse (said in one line, never a traceback)."""


# ------------------------------------------------------------------ opening


def default_path(home: Path) -> Path:
    return home / "index.sqlite"


def open_catalog(path: Path | None) -> tuple[sqlite3.Connection, str | None]:
    """The database at `path`, created or rebuilt as needed; with a note when it had to be rebuilt
    or could not be written (then an in-memory database stands in). `None` means in memory."""
    if path is None:
        return _create(sqlite3.connect(":memory:")), None
    note = None
    for _ in range(2):
        try:
            conn = _connect(path)
            if _usable(conn):
                return conn, note
            conn.close()
            note = f"{path}: an index of another version or shape; rebuilt"
        except sqlite3.DatabaseError as error:
            note = f"{path}: unreadable index ({error}); rebuilt"
        except OSError as error:
            return _create(sqlite3.connect(":memory:")), f"{path}: cannot write the index ({error.strerror}); " \
                                                          "using one in memory"
        remove(path)
    return _create(sqlite3.connect(":memory:")), f"{path}: cannot create the index; using one in memory"


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 30000")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
    except sqlite3.OperationalError as error:
        if "unable to open" in str(error) or "readonly" in str(error):
            raise OSError(13, "permission denied") from None
        raise
    if mode is None or str(mode[0]).lower() != "wal":
        raise sqlite3.DatabaseError("could not switch to WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return _install(conn)


def _create(conn: sqlite3.Connection) -> sqlite3.Connection:
    conn.isolation_level = None
    return _install(conn)


def _install(conn: sqlite3.Connection) -> sqlite3.Connection:
    """Create the tables in an empty database, in one transaction (two processes may race here)."""
    if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return conn


def _usable(conn: sqlite3.Connection) -> bool:
    if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
        return False
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    return {"files", "sessions", "messages", "messages_fts", "usage"} <= names


def remove(path: Path) -> None:
    """Delete the index (a cache: the session files stay the truth)."""
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass


# ------------------------------------------------------------------ what one file contributes


@dataclass
class Source:
    """A session file the index should cover, and which harness wrote it."""

    path: Path
    harness: str = "pi"


@dataclass
class Found:
    """What reading (part of) one file gave: session fields, messages, usage rows."""

    header: dict | None = None
    name: str | None = None
    first_user: str | None = None
    models: list[str] = field(default_factory=list)
    updated_ms: int | None = None
    messages: list[tuple] = field(default_factory=list)  # entry_id, line, role, time_ms, model, tools, text
    usage: list[tuple] = field(default_factory=list)  # entry_id, time_ms, provider, model, 4 counts, total, cost
    offset: int = 0  # bytes read up to the end of the last complete line
    line: int = 0  # the number of the last line read


def _number(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    try:
        return int(value)
    except (OverflowError, ValueError):  # inf, nan, or a number beyond any count
        return 0


def _texts(content: object) -> tuple[list[str], list[str]]:
    """The searchable text of a content field, and the tool names it calls."""
    if isinstance(content, str):
        return [content], []
    texts: list[str] = []
    tools: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "toolCall":
                name = block.get("name")
                if isinstance(name, str):
                    tools.append(name)
                    texts.append(f"{name} {orjson.dumps(block.get('arguments')).decode()}")
    return texts, tools


def _cost(usage: dict) -> float | None:
    """The entry's own cost, when it says one: a cost object with a total, and not zeros standing in
    for "unknown" on a message that used tokens (pi and harnesskit write zeros for unpriced models)."""
    cost = usage.get("cost")
    if not isinstance(cost, dict):
        return None
    total = cost.get("total")
    if isinstance(total, bool) or not isinstance(total, int | float) or total != total:
        return None
    if total == 0 and any(_number(usage.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite")):
        return None
    return float(total)


def take_entry(found: Found, entry: dict, line: int) -> None:
    """Add what one v3 entry says to `found` (messages, usage, name, models, times)."""
    kind = entry.get("type")
    entry_id = entry.get("id") if isinstance(entry.get("id"), str) else None
    stamp = iso_to_ms(entry.get("timestamp"))
    role: str | None = None
    texts: list[str] = []
    tools: list[str] = []
    model = None
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return
        role = message.get("role") if isinstance(message.get("role"), str) else None
        if isinstance(message.get("timestamp"), int | float) and not isinstance(message.get("timestamp"), bool):
            stamp = _number(message["timestamp"])
        if role == "toolResult":
            texts, _ = _texts(message.get("content"))
            if isinstance(message.get("toolName"), str):
                tools = [message["toolName"]]
        elif role == "bashExecution":
            texts = [str(message.get("command", "")), str(message.get("output", ""))]
        else:
            texts, tools = _texts(message.get("content"))
        if role == "assistant":
            model = message.get("model") if isinstance(message.get("model"), str) else None
            provider = message.get("provider") if isinstance(message.get("provider"), str) else None
            if model and model not in found.models:
                found.models.append(model)
            usage = message.get("usage")
            if isinstance(usage, dict):
                counts = [_number(usage.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite")]
                total = _number(usage.get("totalTokens")) or sum(counts)
                found.usage.append((entry_id, stamp, provider, model, *counts, total, _cost(usage)))
        if role == "user" and found.first_user is None:
            found.first_user = " ".join(" ".join(texts).split())[:300] or None
    elif kind == "custom_message":
        role = "custom"
        texts, _ = _texts(entry.get("content"))
    elif kind in ("branch_summary", "compaction"):
        role = "branchSummary" if kind == "branch_summary" else "compactionSummary"
        texts = [str(entry.get("summary") or "")]
    elif kind == "session_info":
        name = entry.get("name")
        if isinstance(name, str):
            found.name = name.strip() or None
        return
    elif kind == "model_change":
        model_id = entry.get("modelId")
        if isinstance(model_id, str) and model_id not in found.models:
            found.models.append(model_id)
        return
    else:
        return
    if stamp is not None:
        found.updated_ms = stamp if found.updated_ms is None else max(found.updated_ms, stamp)
    found.messages.append((entry_id, line, role, stamp, model, ",".join(tools), segment("\n".join(texts))))


def read_pi(fp, found: Found, offset: int, line: int) -> Found:  # noqa: ANN001 - a binary file
    """Read a v3 file's lines from byte `offset` (the next line is `line` + 1). A last line without
    a newline is left for the next update: it may be a write still under way."""
    fp.seek(offset)
    loads = orjson.loads
    for raw in fp:
        if not raw.endswith(b"\n"):
            break
        line += 1
        offset += len(raw)
        try:
            entry = loads(raw)
        except orjson.JSONDecodeError:
            continue  # `validate` reports bad lines; the index only skips them
        if isinstance(entry, dict) and not is_header(entry):
            take_entry(found, entry, line)
    found.offset, found.line = offset, line
    return found


def read_header_line(fp) -> tuple[dict | None, int]:  # noqa: ANN001
    """The header and the byte offset after it (None when the file holds no readable v3 header)."""
    fp.seek(0)
    first = fp.readline()
    if not first.endswith(b"\n"):
        return None, 0
    try:
        header = orjson.loads(first.removeprefix(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError:
        return None, 0
    if not isinstance(header, dict) or not is_header(header):
        return None, 0
    return header, len(first)


def read_full(source: Source, fp) -> Found | None:  # noqa: ANN001
    """A whole file: v3 pi files line by line; legacy pi dialects (and other harnesses, through the
    core's loader) migrated in memory first."""
    header, start = read_header_line(fp)
    if header is not None and source.harness == "pi":
        try:
            dialect = detect(header)
        except UnsupportedSession:
            return None
        if not dialect.legacy:
            found = Found(header=header)
            return read_pi(fp, found, start, 1)
    return _read_loaded(source)


def _read_loaded(source: Source) -> Found | None:
    from .loader import SessionError, load_session

    try:
        session = load_session(source.path)
    except SessionError:
        return None
    found = Found(header=session.header)
    for entry, line in zip(session.entries, session.lines, strict=True):
        take_entry(found, entry, line)
    found.offset, found.line = session.size, 0  # read again in full whenever it changes
    return found


# ------------------------------------------------------------------ CJK


_CJK = "\u2e80-\u2fff\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
_CJK_PAIR = re.compile(f"(?<=[{_CJK}])(?=[{_CJK}])")
_CJK_RUN = re.compile(f"[{_CJK}]+")
ZWSP = "\u200b"  # not a letter or number: unicode61 splits tokens there


def segment(text: str) -> str:
    """Text as indexed: a zero-width space between CJK characters, so each is a token."""
    return _CJK_PAIR.sub(ZWSP, text)


def fts_query(query: str) -> str:
    """A user's FTS5 query with each CJK run outside quotes made a phrase (and inside quotes,
    segmented as the text is). Everything else passes through as FTS5 syntax."""
    parts = query.split('"')
    for i, part in enumerate(parts):
        if i % 2:  # inside a phrase
            parts[i] = segment(part)
        else:
            parts[i] = _CJK_RUN.sub(lambda m: '"' + " ".join(m.group()) + '"', part)
    return '"'.join(parts)


# ------------------------------------------------------------------ which files


def pi_sources(directories: Iterable[Path]) -> Iterator[Source]:
    """Every `*.jsonl` directly in each directory (pi's layout), listed without a stat per file."""
    for directory in directories:
        try:
            with os.scandir(directory) as found:
                for item in found:
                    if item.name.endswith(".jsonl") and item.is_file():
                        yield Source(Path(item.path), "pi")
        except OSError:
            continue


def refresh(path: Path | None, sources: Iterable[Source],
            progress: Callable[[int], None] | None = None) -> tuple[sqlite3.Connection, str | None, UpdateStats]:
    """Open the index (rebuilding what cannot be trusted) and bring it up to date: what `index`,
    `search` and `usage` all do first."""
    conn, note = open_catalog(path)
    try:
        stats = update(conn, sources, progress)
    except sqlite3.DatabaseError as error:  # damaged under us: start again from nothing, in memory if need be
        conn.close()
        if path is not None:
            remove(path)
        conn, again = open_catalog(path)
        note = f"{path}: damaged index ({error}); rebuilt" + (f"; {again}" if again else "")
        stats = update(conn, sources, progress)
    return conn, note, stats


# ------------------------------------------------------------------ updating


@dataclass
class UpdateStats:
    files: int = 0  # files the index covers after the update
    read_full: int = 0
    read_on: int = 0  # files read on from their last offset
    unchanged: int = 0
    dropped: int = 0
    bytes_read: int = 0
    messages: int = 0


def _head(fp, size: int) -> bytes:  # noqa: ANN001
    fp.seek(0)
    return hashlib.blake2b(fp.read(min(size, HEAD_BYTES)), digest_size=16).digest()


def update(conn: sqlite3.Connection, sources: Iterable[Source],
           progress: Callable[[int], None] | None = None) -> UpdateStats:
    """Bring the index up to date with `sources` (every file it should cover)."""
    stats = UpdateStats()
    known = {row[0]: row[1:] for row in conn.execute(
        "SELECT path, size, mtime_ns, inode, head, offset, line, session, harness FROM files")}
    seen: set[str] = set()
    work: list[tuple[Source, os.stat_result, tuple | None]] = []
    for source in sources:
        key = str(source.path)
        if key in seen:
            continue
        try:
            st = os.stat(key)
        except OSError:
            continue
        seen.add(key)
        old = known.get(key)
        if old is not None and old[0] == st.st_size and old[1] == st.st_mtime_ns and old[2] == st.st_ino \
                and old[7] == source.harness:
            stats.unchanged += 1
            continue
        work.append((source, st, old))
    gone = [path for path in known if path not in seen]
    conn.execute("BEGIN IMMEDIATE")
    try:
        for path in gone:
            _drop(conn, path, known[path][6])
            stats.dropped += 1
        for i, (source, st, old) in enumerate(work):
            if i and i % BATCH_FILES == 0:
                conn.execute("COMMIT")
                conn.execute("BEGIN IMMEDIATE")
            stats.bytes_read += _update_file(conn, source, st, old, stats)
            if progress is not None:
                progress(st.st_size)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    stats.files = conn.execute("SELECT count(*) FROM files").fetchone()[0]
    return stats


def _drop(conn: sqlite3.Connection, path: str, session: int) -> None:
    conn.execute("DELETE FROM messages_fts WHERE rowid IN (SELECT rowid FROM messages WHERE session = ?)", (session,))
    conn.execute("DELETE FROM messages WHERE session = ?", (session,))
    conn.execute("DELETE FROM usage WHERE session = ?", (session,))
    conn.execute("DELETE FROM sessions WHERE rowid = ?", (session,))
    conn.execute("DELETE FROM files WHERE path = ?", (path,))


def _update_file(conn: sqlite3.Connection, source: Source, st: os.stat_result, old: tuple | None,
                 stats: UpdateStats) -> int:
    """Index one changed file; returns the bytes read."""
    key = str(source.path)
    try:
        fp = open(key, "rb")  # noqa: SIM115 - closed below
    except OSError:
        return 0
    with fp:
        size = os.fstat(fp.fileno()).st_size
        head = _head(fp, size)
        found: Found | None = None
        session = None
        old_size, _, old_inode, old_head, old_offset, old_line, old_session, old_harness = old or (None,) * 8
        if (old is not None and source.harness == "pi" == old_harness and old_inode == st.st_ino
                and size > old_size and old_line > 0 and old_head == _head_of_old(fp, old_size, head)):
            # appended to: read on from where the last update stopped
            session = old_session
            found = read_pi(fp, Found(), old_offset, old_line)
            stats.read_on += 1
            read = found.offset - old_offset
        else:
            if old is not None:
                _drop(conn, key, old_session)
            found = read_full(source, fp)
            stats.read_full += 1
            read = size
    if found is None:  # not a session file we read: remember it, so it is not read again until it changes
        found = Found(offset=size)
        if session is None:
            session = _new_session(conn, key, source.harness, Found())
    elif session is None:
        session = _new_session(conn, key, source.harness, found)
    else:
        _extend_session(conn, session, found)
    _insert_rows(conn, session, found)
    stats.messages += len(found.messages)
    conn.execute("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (key, source.harness, st.st_size, st.st_mtime_ns, st.st_ino, head, found.offset, found.line, session))
    return read


def _head_of_old(fp, old_size: int, head_now: bytes) -> bytes:  # noqa: ANN001
    """The hash of the first bytes as they were when the file was `old_size` long."""
    if old_size >= HEAD_BYTES:
        return head_now
    fp.seek(0)
    return hashlib.blake2b(fp.read(old_size), digest_size=16).digest()


def _new_session(conn: sqlite3.Connection, path: str, harness: str, found: Found) -> int:
    header = found.header or {}
    cur = conn.execute(
        "INSERT INTO sessions(path, harness, id, cwd, name, first_user, created_ms, updated_ms, models, messages,"
        " parent) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
        (path, harness, _str(header.get("id")), _str(header.get("cwd")), found.name, found.first_user,
         iso_to_ms(header.get("timestamp")), found.updated_ms, orjson.dumps(found.models).decode(),
         _str(header.get("parentSession"))))
    return int(cur.lastrowid or 0)


def _extend_session(conn: sqlite3.Connection, session: int, found: Found) -> None:
    row = conn.execute("SELECT name, first_user, updated_ms, models FROM sessions WHERE rowid = ?",
                       (session,)).fetchone()
    name, first_user, updated, models = row
    models = orjson.loads(models)
    models += [m for m in found.models if m not in models]
    if found.updated_ms is not None:
        updated = found.updated_ms if updated is None else max(updated, found.updated_ms)
    conn.execute("UPDATE sessions SET name = ?, first_user = ?, updated_ms = ?, models = ? WHERE rowid = ?",
                 (found.name if found.name is not None else name, first_user or found.first_user, updated,
                  orjson.dumps(models).decode(), session))


def _insert_rows(conn: sqlite3.Connection, session: int, found: Found) -> None:
    if found.messages:
        cur = conn.execute("SELECT coalesce(max(rowid), 0) FROM messages")
        first = cur.fetchone()[0] + 1
        conn.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [(first + i, session, *m[:6]) for i, m in enumerate(found.messages)])
        conn.executemany("INSERT INTO messages_fts(rowid, text) VALUES (?, ?)",
                         [(first + i, m[6]) for i, m in enumerate(found.messages)])
        conn.execute("UPDATE sessions SET messages = messages + ? WHERE rowid = ?", (len(found.messages), session))
    if found.usage:
        conn.executemany("INSERT INTO usage VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [(session, *u) for u in found.usage])


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


# ------------------------------------------------------------------ asking


@dataclass
class Filters:
    harness: str | None = None
    cwd: str | None = None  # None: every directory
    since_ms: int | None = None
    until_ms: int | None = None  # exclusive
    role: str | None = None
    model: str | None = None
    tool: str | None = None


@dataclass
class Hit:
    path: str
    harness: str
    session_id: str | None
    cwd: str | None
    entry_id: str | None
    line: int | None
    role: str | None
    time_ms: int | None
    snippet: str  # the match marked with \x02 ... \x03
    rank: float


def _where(filters: Filters, time_column: str) -> tuple[list[str], list[object]]:
    clauses: list[str] = []
    args: list[object] = []
    if filters.harness:
        clauses.append("s.harness = ?")
        args.append(filters.harness)
    if filters.cwd is not None:
        clauses.append("s.cwd = ?")
        args.append(filters.cwd)
    if filters.since_ms is not None:
        clauses.append(f"{time_column} >= ?")
        args.append(filters.since_ms)
    if filters.until_ms is not None:
        clauses.append(f"{time_column} < ?")
        args.append(filters.until_ms)
    if filters.model:
        clauses.append("m.model = ?" if time_column.startswith("m.") else "u.model = ?")
        args.append(filters.model)
    return clauses, args


def search(conn: sqlite3.Connection, query: str, filters: Filters, limit: int) -> list[Hit]:
    """The best `limit` messages matching an FTS5 query, ranked by bm25."""
    clauses, args = _where(filters, "m.time_ms")
    if filters.role:
        clauses.append("m.role = ?")
        args.append(filters.role)
    if filters.tool:
        clauses.append("(',' || m.tools || ',') LIKE ?")
        args.append(f"%,{filters.tool},%")
    sql = ("SELECT s.path, s.harness, s.id, s.cwd, m.entry_id, m.line, m.role, m.time_ms,"
           " snippet(messages_fts, 0, char(2), char(3), '…', 16), bm25(messages_fts) AS rank"
           " FROM messages_fts JOIN messages m ON m.rowid = messages_fts.rowid"
           " JOIN sessions s ON s.rowid = m.session WHERE messages_fts MATCH ?"
           + "".join(f" AND {c}" for c in clauses) + " ORDER BY rank LIMIT ?")
    try:
        rows = conn.execute(sql, [fts_query(query), *args, limit]).fetchall()
    except sqlite3.OperationalError as error:
        raise QueryError(f"cannot search for {query!r}: {error}") from None
    return [Hit(*row[:8], row[8].replace(ZWSP, ""), row[9]) for row in rows]


@dataclass
class UsageRow:
    """One assistant message's usage, with what the grouping needs."""

    path: str
    session_id: str | None
    cwd: str | None
    harness: str
    entry_id: str | None
    time_ms: int | None
    provider: str | None
    model: str | None
    input: int
    output: int
    cache_read: int
    cache_write: int
    total: int
    cost: float | None


def usage_rows(conn: sqlite3.Connection, filters: Filters) -> Iterator[UsageRow]:
    clauses, args = _where(filters, "u.time_ms")
    sql = ("SELECT s.path, s.id, s.cwd, s.harness, u.entry_id, u.time_ms, u.provider, u.model, u.input, u.output,"
           " u.cache_read, u.cache_write, u.total, u.cost FROM usage u JOIN sessions s ON s.rowid = u.session"
           + (" WHERE " + " AND ".join(clauses) if clauses else "") + " ORDER BY u.time_ms, s.path")
    for row in conn.execute(sql, args):
        yield UsageRow(*row)


@dataclass
class SessionRow:
    path: str
    harness: str
    session_id: str | None
    cwd: str | None
    name: str | None
    first_user: str | None
    created_ms: int | None
    updated_ms: int | None
    models: list[str]
    messages: int
    parent: str | None


def sessions(conn: sqlite3.Connection, filters: Filters, limit: int | None = None) -> list[SessionRow]:
    """Sessions newest first by their last message's time (pi's picker order)."""
    clauses, args = _where(Filters(harness=filters.harness, cwd=filters.cwd), "s.updated_ms")
    sql = ("SELECT s.path, s.harness, s.id, s.cwd, s.name, s.first_user, s.created_ms, s.updated_ms, s.models,"
           " s.messages, s.parent FROM sessions s JOIN files f ON f.session = s.rowid"
           + (" WHERE " + " AND ".join(clauses) if clauses else "")
           + " ORDER BY coalesce(s.updated_ms, s.created_ms) DESC, s.path" + (" LIMIT ?" if limit else ""))
    rows = conn.execute(sql, [*args, limit] if limit else args).fetchall()
    return [SessionRow(*r[:8], orjson.loads(r[8]), *r[9:]) for r in rows]
