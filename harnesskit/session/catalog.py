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

import contextlib
import functools
import gc
import hashlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter, itemgetter
from pathlib import Path
from stat import S_ISREG
from typing import TypeVar

import orjson

from .migrate import UnsupportedSession, detect, iso_to_ms
from .reader import LineTooLong, open_reporting, parse_line
from .store import Summary, first_text, header_of, iso_ms, js_float

SCHEMA_VERSION = 3  # 2: what `list` shows (activity, model, entries; ctime in files); 3: what `list --harness` does
HEAD_BYTES = 4096  # "the first bytes": a replaced file differs here (its header has another id)
BATCH_FILES = 500  # files per transaction: a killed update loses at most one batch of work
# From scratch, 100,000 small sessions: SQLite's inserts cost 19% less CPU with 16 KiB pages (fewer
# B-tree pages to split and write) and an FTS5 hash that holds a whole transaction (its default,
# 1 MB, writes a level-0 segment every MB, which the automerge then merges again)
PAGE_SIZE = 16384
# WAL frames (pages) after which a commit checkpoints them into the database: SQLite's default, 1000,
# is 16 MB of 16 KiB pages, 25-76 ms when it landed in a one-file update (of 1-3 ms without); 128
# (2 MB) keeps what any checkpoint copies, in whichever update's commit it lands, near what one writes
CHECKPOINT_PAGES = 128

_SCHEMA = f"""
CREATE TABLE files(
  path TEXT PRIMARY KEY, harness TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
  inode INTEGER NOT NULL, head BLOB NOT NULL, offset INTEGER NOT NULL, line INTEGER NOT NULL,
  session INTEGER NOT NULL, ctime_ns INTEGER NOT NULL);
CREATE TABLE sessions(
  rowid INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, harness TEXT NOT NULL, id TEXT, cwd TEXT,
  name TEXT, first_user TEXT, created_ms INTEGER, updated_ms INTEGER, models TEXT NOT NULL DEFAULT '[]',
  messages INTEGER NOT NULL DEFAULT 0, parent TEXT, activity REAL, model TEXT, entries INTEGER,
  list_id TEXT, list_cwd TEXT, list_first TEXT, list_messages INTEGER);
CREATE TABLE messages(
  rowid INTEGER PRIMARY KEY, session INTEGER NOT NULL, entry_id TEXT, line INTEGER, role TEXT,
  time_ms INTEGER, model TEXT, tools TEXT NOT NULL DEFAULT '');
CREATE INDEX files_key ON files(path, size, mtime_ns, ctime_ns, inode, harness, line);
CREATE INDEX sessions_listed ON sessions(path, activity, entries);
CREATE INDEX messages_session ON messages(session);
CREATE VIRTUAL TABLE messages_fts USING fts5(text, tokenize = 'unicode61');
INSERT INTO messages_fts(messages_fts, rank) VALUES('hashsize', 67108864);
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
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # a new file only (WAL fixes it once written)
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
    except sqlite3.OperationalError as error:
        if "unable to open" in str(error) or "readonly" in str(error):
            raise OSError(13, "permission denied") from None
        raise
    if mode is None or str(mode[0]).lower() != "wal":
        raise sqlite3.DatabaseError("could not switch to WAL")
    _tune(conn)
    return _install(conn)


def _tune(conn: sqlite3.Connection) -> None:
    """What every connection to the database file sets (SQLite keeps neither in the file)."""
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")


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


def open_existing(path: Path, timeout: float = 1.0) -> sqlite3.Connection | None:
    """The index at `path` when it is there, ours and of this schema; else None. Never created,
    rebuilt or waited on for long: `list` works without it."""
    try:
        conn = sqlite3.connect(path.absolute().as_uri() + "?mode=rw", uri=True, timeout=timeout,
                               isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        if _usable(conn):
            _tune(conn)
            return conn
    except sqlite3.Error:
        pass
    conn.close()
    return None


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

    path: str | Path  # a listing of 100,000 files makes strings: a Path each would cost seconds
    harness: str = "pi"


@dataclass
class Found:
    """What reading (part of) one file gave: session fields, and its messages and usage as the rows
    stored (numbered already: the session's rowid, message rowids from `next`)."""

    header: dict | None = None
    name: str | None = None
    first_user: str | None = None
    models: list[str] = field(default_factory=list)
    updated_ms: int | None = None
    session: int = 0  # the session's rowid
    next: int = 1  # the rowid of the next message
    messages: list[tuple] = field(default_factory=list)  # rowid, session, entry_id, line, role, time_ms, model, tools
    texts: list[tuple] = field(default_factory=list)  # rowid, text
    usage: list[tuple] = field(default_factory=list)  # session, entry_id, time_ms, provider, model, 4 counts,
    # total, cost
    clean: bool = True  # every entry came from orjson, which refuses lone surrogates: every string is storable
    activity: float | None = None  # ms of the last user/assistant message (store.activity_ms): pi's picker order
    model: str | None = None  # the last model named (what `list` shows)
    entries: int = 0  # entries of type "message", as pi's picker counts them
    offset: int = 0  # bytes read up to the end of the last complete line
    line: int = 0  # the number of the last line read
    listing: tuple | None = None  # another harness's file: (id, cwd, first message, messages) as `list --harness`
    # shows them (formats.stores.summarize), None when it lists no session there


_INT64 = 1 << 63  # SQLite's integers; a count beyond them is no count (a file may say anything)


def count(value: object) -> int:
    if value.__class__ is int:
        return value if -_INT64 < value < _INT64 else 0  # type: ignore[return-value, operator]
    if value.__class__ is not float:
        return 0
    try:
        number = int(value)  # type: ignore[arg-type]
    except (OverflowError, ValueError):  # inf, nan
        return 0
    return number if -_INT64 < number < _INT64 else 0


def _str(value: object) -> str | None:
    return value if value.__class__ is str else None  # type: ignore[return-value]


def _texts(content: object) -> tuple[list[str], list[str]]:
    """The searchable text of a content field, and the tool names it calls."""
    if content.__class__ is str:
        return [content], []  # type: ignore[list-item]
    texts: list[str] = []
    tools: list[str] = []
    if content.__class__ is list:
        for block in content:  # type: ignore[attr-defined]
            if block.__class__ is not dict:
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if text.__class__ is str:
                    texts.append(text)
            elif kind == "toolCall":
                name = block.get("name")
                if name.__class__ is str:
                    tools.append(name)
                    texts.append(f"{name} {json_text(block.get('arguments'))}")
    return texts, tools


def json_text(value: object) -> str:
    """JSON text of a tool call's arguments, whatever they hold (orjson refuses lone surrogates,
    integers beyond 64 bits and nesting past 254 levels; the stdlib takes them)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        import json

        from .reader import room_for_depth

        with room_for_depth():
            return json.dumps(value, ensure_ascii=False)


def storable(value: str | None) -> str | None:
    """Text SQLite can store: a lone surrogate (valid JSON, no valid UTF-8) becomes U+FFFD."""
    return value if value is None or value.isascii() else _SURROGATE.sub("\ufffd", value)


_SURROGATE = re.compile("[\ud800-\udfff]")


def is_utf8(text: str) -> bool:
    """Whether `text` is UTF-8 as SQLite stores it: no lone surrogate (a name or argument with bytes
    that are not UTF-8 holds them as surrogates)."""
    return text.isascii() or not _SURROGATE.search(text)


def _cost(usage: dict, counts: list[int]) -> float | None:
    """The entry's own cost, when it says one: a cost object with a total, and not zeros standing in
    for "unknown" on a message that used tokens (pi and harnesskit write zeros for unpriced models)."""
    cost = usage.get("cost")
    if cost.__class__ is not dict:
        return None
    return recorded_cost(cost.get("total"), counts)


def recorded_cost(total: object, counts: list[int]) -> float | None:
    """A cost object's `total` as the message's own cost, or None: not a number, NaN, or zeros
    standing in for "unknown" on a message that used tokens. An integer past a float's range is an
    infinity, as 1e400 is read."""
    if total.__class__ is not int and total.__class__ is not float:
        return None
    if total != total or (total == 0 and any(counts)):  # type: ignore[operator]
        return None
    return js_float(total)  # type: ignore[arg-type]


def _stamp(entry: dict, message: dict | None) -> int | None:
    """A message's time in ms: its own `timestamp` (pi writes ms), else the entry's ISO one."""
    if message is not None:
        value = message.get("timestamp")
        if value.__class__ is int and -_INT64 < value < _INT64:  # type: ignore[operator]
            return value
        if value.__class__ is float and value == value and abs(value) < 1e15:
            return int(value)
    return iso_to_ms(entry.get("timestamp"))


_INTS = {int}


def take_entry(found: Found, entry: dict, line: int) -> None:
    """Add what one v3 entry says to `found` (messages, usage, name, models, times). The hot path of
    indexing (every entry of every file): checks inlined, each row built once as stored."""
    kind = entry.get("type")
    tools = ""
    model = None
    if kind == "message":
        found.entries += 1
        message = entry.get("message")
        if message.__class__ is not dict:
            return
        role = message.get("role")
        if role.__class__ is not str:
            role = None
        raw = message.get("timestamp")
        stamp = raw if raw.__class__ is int and -_INT64 < raw < _INT64 else _stamp(entry, message)
        content = message.get("content")
        if (role == "user" or role == "assistant") and (content is not None or "content" in message):
            # store.activity_ms, inlined (its checks are those above)
            if raw.__class__ is int or raw.__class__ is float:
                if raw > 0:
                    found.activity = js_float(raw)
            elif (activity := iso_ms(entry.get("timestamp"))) is not None:
                found.activity = activity
        if role == "toolResult":
            texts, _ = _texts(content)
            name = message.get("toolName")
            if name.__class__ is str:
                tools = name
        elif role == "bashExecution":
            texts = [str(message.get("command", "")), str(message.get("output", ""))]
        elif content.__class__ is str:
            texts = [content]
        elif (content.__class__ is list and len(content) == 1 and (block := content[0]).__class__ is dict
              and block.get("type") == "text" and (text := block.get("text")).__class__ is str):
            texts = [text]  # one text block (most messages): what _texts gives, without its loop
        else:
            texts, called = _texts(content)
            if called:
                tools = ",".join(called)
        if role == "assistant":
            model = message.get("model")
            if model.__class__ is not str:
                model = None
            else:
                found.model = model
                if model and model not in found.models:
                    found.models.append(model)
            usage = message.get("usage")
            if usage.__class__ is dict:
                counts = [usage.get("input"), usage.get("output"), usage.get("cacheRead"), usage.get("cacheWrite")]
                if not (set(map(type, counts)) == _INTS and -_INT64 < min(counts) and max(counts) < _INT64):
                    counts = list(map(count, counts))  # what `count` makes of anything else (in C above)
                total = usage.get("totalTokens")
                if total.__class__ is not int or not -_INT64 < total < _INT64:
                    total = count(total)
                provider = message.get("provider")
                entry_id = entry.get("id")
                found.usage.append((found.session, entry_id if entry_id.__class__ is str else None, stamp,
                                    provider if provider.__class__ is str else None, model, *counts,
                                    total or count(sum(counts)), _cost(usage, counts)))  # int64 each
        elif role == "user" and found.first_user is None:
            found.first_user = first_text(message.get("content"))  # as `list` shows it
    elif kind == "custom_message":
        role = "custom"
        stamp = _stamp(entry, None)
        texts, _ = _texts(entry.get("content"))
    elif kind == "branch_summary" or kind == "compaction":
        role = "branchSummary" if kind == "branch_summary" else "compactionSummary"
        stamp = _stamp(entry, None)
        texts = [str(entry.get("summary") or "")]
    elif kind == "session_info":
        name = entry.get("name")
        if name.__class__ is str:
            found.name = name.strip() or None
        return
    elif kind == "model_change":
        model_id = _str(entry.get("modelId"))
        if model_id is not None:
            found.model = model_id
            if model_id not in found.models:
                found.models.append(model_id)
        return
    else:
        return
    if stamp is not None and (found.updated_ms is None or stamp > found.updated_ms):
        found.updated_ms = stamp
    text = texts[0] if len(texts) == 1 else "\n".join(texts)
    rowid = found.next
    found.next = rowid + 1
    entry_id = entry.get("id")
    found.messages.append((rowid, found.session, entry_id if entry_id.__class__ is str else None, line, role, stamp,
                           model, tools))
    found.texts.append((rowid, text if text.isascii() else segment(text)))


def read_pi(lines: Iterable[bytes], found: Found, offset: int, line: int) -> Found:
    """Read a v3 file's complete lines, each without its "\n" (the next is line `line` + 1, at byte
    `offset`); a last line without a newline is not among them: it may be a write still under way."""
    loads = orjson.loads
    error = orjson.JSONDecodeError
    for raw in lines:
        line += 1
        offset += len(raw) + 1
        try:
            entry = loads(raw)
        except error:  # what orjson refuses the reader may still read (a lone surrogate, 1e400)
            entry, code, _ = parse_line(raw.rstrip(b"\r\n"))
            if code is not None:
                continue  # `validate` reports bad lines; the index only skips them
            found.clean = False
        if entry.__class__ is dict:  # a header (type "session" or "header") adds nothing
            take_entry(found, entry, line)
    found.offset, found.line = offset, line
    return found


def _make_storable(found: Found) -> None:
    """Replace lone surrogates in the rows of entries orjson did not parse (rare: only those can hold one)."""
    found.messages = [(*m[:2], storable(m[2]), m[3], storable(m[4]), m[5], storable(m[6]), storable(m[7]))
                      for m in found.messages]
    found.texts = [(rowid, storable(text)) for rowid, text in found.texts]
    found.usage = [(u[0], storable(u[1]), u[2], storable(u[3]), storable(u[4]), *u[5:]) for u in found.usage]
    found.clean = True


def parse_header(first: bytes) -> dict | None:
    """The header of a first line (None when it is no complete header line), by the reader's rules
    (store.header_of: a bad UTF-8 byte read as U+FFFD, as pi does)."""
    return header_of(first) if first.endswith(b"\n") else None


def _read_loaded(source: Source, found: Found) -> Found | None:
    """A file the fast reader does not take (a legacy dialect, another harness): through the core's
    loader, migrated in memory; read again in full whenever it changes."""
    from .loader import SessionError, load_session

    if source.harness != "pi":
        found.listing = _listing(source)
    try:
        session = load_session(source.path, fmt=source.harness)
    except SessionError:
        return None if found.listing is None else found  # no conversation, yet a line of `list --harness`
    found.header, found.clean = session.header, False
    for entry, line in zip(session.entries, session.lines, strict=True):
        take_entry(found, entry, line)
    found.offset, found.line = session.size, 0
    return found


def _listing(source: Source) -> tuple | None:
    """What `list --harness` shows of the file, by its own reader (the same rules, so the same row)."""
    from .formats.stores import summarize

    shown = summarize(Path(source.path), source.harness)
    if shown is None:
        return None
    return storable(shown.session_id), storable(shown.cwd), storable(shown.first_user), shown.messages



# ------------------------------------------------------------------ CJK


_CJK = "\u2e80-\u2fff\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
ZWSP = "\u200b"  # not a letter or number: unicode61 splits tokens there


@functools.cache
def _cjk() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(between two CJK characters, a CJK run): compiled when first needed, not at import (~5 ms
    of every `list`, which never needs them)."""
    return re.compile(f"(?<=[{_CJK}])(?=[{_CJK}])"), re.compile(f"[{_CJK}]+")


def segment(text: str) -> str:
    """Text as indexed: a zero-width space between CJK characters, so each is a token."""
    return _cjk()[0].sub(ZWSP, text)


def fts_query(query: str) -> str:
    """A user's FTS5 query with each CJK run outside quotes made a phrase (and inside quotes,
    segmented as the text is). Everything else passes through as FTS5 syntax."""
    parts = query.split('"')
    for i, part in enumerate(parts):
        if i % 2:  # inside a phrase
            parts[i] = segment(part)
        else:
            parts[i] = _cjk()[1].sub(lambda m: '"' + " ".join(m.group()) + '"', part)
    return '"'.join(parts)


# ------------------------------------------------------------------ which files


def pi_sources(directories: Iterable[Path]) -> Iterator[Source]:
    """Every `*.jsonl` directly in each directory (pi's layout), listed without a stat per file."""
    for directory in directories:
        try:
            with os.scandir(directory) as found:
                for item in found:
                    if item.name.endswith(".jsonl") and item.is_file():
                        yield Source(item.path, "pi")
        except OSError:
            continue


def harness_sources() -> Iterator[Source]:
    """The other harnesses' transcripts, each in its own store: Claude Code's projects (subagent
    transcripts included: their tokens were spent too) and Codex's dated rollouts."""
    from .formats.stores import claude_root, codex_root

    for harness, root, pattern in (("claude", claude_root(), "**/*.jsonl"),
                                   ("codex", codex_root(), "*/*/*/rollout-*.jsonl")):
        try:
            for path in sorted(root.glob(pattern)):
                if path.is_file():
                    yield Source(path, harness)
        except OSError:
            continue


def refresh(path: Path | None, sources: Iterable[Source], progress: Callable[[int, int], None] | None = None,
            partial: bool = False, directories: Iterable[str | Path] = ()) -> tuple[sqlite3.Connection, str | None,
                                                                                     UpdateStats]:
    """Open the index (rebuilding what cannot be trusted) and bring it up to date (see `update`):
    what `index`, `search` and `usage` all do first."""
    directories = list(directories)
    sources = list(sources)
    conn, note = open_catalog(path)
    try:
        stats = update(conn, sources, progress, partial=partial, directories=directories)
    except sqlite3.DatabaseError as error:  # damaged under us: start again from nothing, in memory if need be
        conn.close()
        if path is not None:
            remove(path)
        conn, again = open_catalog(path)
        note = f"{path}: damaged index ({error}); rebuilt" + (f"; {again}" if again else "")
        stats = update(conn, sources, progress, partial=partial, directories=directories)
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
    passed_over: int = 0  # files whose name is no UTF-8: not stored


SMALL_FILE = 1 << 20  # read whole, and split in memory; larger files are streamed
# new files' bytes per transaction: a killed update loses at most these (each commit writes FTS5 a
# segment that its automerge merges again: 32 MB against 8 MB saves 0.4 s CPU of 100,000 sessions)
COMMIT_BYTES = 32 << 20
WORKER_FILES = 2000  # new files from which a second process reads them while this one inserts


_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0)


def _digest(data: bytes) -> bytes:
    """The head's fingerprint: SHA-1 (hardware-assisted where the CPU has it: a third of blake2b's
    time here), cut to the 16 bytes stored; it tells a replaced file, it guards nothing."""
    return hashlib.sha1(data, usedforsecurity=False).digest()[:16]


_ROW = "SELECT path, size, mtime_ns, inode, head, offset, line, session, harness FROM files"
# what says a file is unchanged: the row of each file is compared with its stat, column by column
# (covering indexes hold these columns: a range of paths is read without a lookup per row)
_KEY = "SELECT path, size, mtime_ns, ctime_ns, inode, harness, line FROM files"
_first = itemgetter(0)
T = TypeVar("T")


def _under(conn: sqlite3.Connection, select: str, directory: str) -> list[tuple]:
    """The rows of `select` (path first) for the files directly in `directory`, by a range of the key."""
    prefix = os.path.join(directory, "")
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return conn.execute(f"{select} WHERE path >= ? AND path < ? AND instr(substr(path, ?), ?) = 0",
                        (prefix, end, len(prefix) + 1, os.sep)).fetchall()


def _by_path(rows: list[tuple]) -> dict[str, tuple]:
    return dict(zip(map(_first, rows), rows, strict=True))  # no bytecode per row: 100,000 of them


def _compare(known: dict[str, tuple], directories: list[str], sources: list[Source], stats: UpdateStats
             ) -> tuple[list[tuple], list[tuple[Source, os.stat_result]], list[str]]:
    """Every `*.jsonl` directly in each directory (one stat each, from its directory entry) and the
    sources, against their rows in `known` (emptied): (the rows still true, the files to read, the
    paths gone)."""
    remaining = known  # what is left in it at the end is gone
    take = remaining.pop
    kept: list[tuple] = []
    work: list[tuple[Source, os.stat_result]] = []
    for directory in dict.fromkeys(directories):
        try:
            listing = os.scandir(directory)
        except OSError:
            continue
        with listing:
            for item in listing:
                key = item.path
                if not key.endswith(".jsonl"):
                    continue
                if not key.isascii() and _SURROGATE.search(key):
                    stats.passed_over += 1  # a name that is no UTF-8 cannot be stored
                    continue
                try:
                    if not item.is_file():
                        continue
                    st = item.stat()
                except OSError:
                    continue
                row = take(key, None)
                if (row is not None and row[1] == st.st_size and row[2] == st.st_mtime_ns
                        and row[3] == st.st_ctime_ns and row[4] == st.st_ino and row[5] == "pi"):
                    kept.append(row)
                else:
                    work.append((Source(key, "pi"), st))
    taken = {source.path for source, _ in work}
    if sources and directories:
        taken.update(row[0] for row in kept)
    for source in sources:
        key = str(source.path)
        if key in taken or (not key.isascii() and _SURROGATE.search(key)):
            continue
        try:
            st = os.stat(key)
        except OSError:
            continue
        if not S_ISREG(st.st_mode):  # a pipe would block the reading for ever, a device never end
            continue
        taken.add(key)
        row = take(key, None)
        if (row is not None and row[1] == st.st_size and row[2] == st.st_mtime_ns and row[3] == st.st_ctime_ns
                and row[4] == st.st_ino and row[5] == source.harness):
            kept.append(row)
        else:
            work.append((Source(key, source.harness), st))
    stats.unchanged += len(kept)
    return kept, work, list(remaining)


def update(conn: sqlite3.Connection, sources: Iterable[Source],
           progress: Callable[[int, int], None] | None = None, *, partial: bool = False,
           directories: Iterable[str | Path] = ()) -> UpdateStats:
    """Bring the index up to date with `sources` and every `*.jsonl` directly in `directories` (pi's
    layout, listed here: one stat per file from its directory entry): every file it should cover,
    or with `partial` just these (a chat's own file after a turn), leaving the others as they are;
    a named source that is gone is dropped. `progress` is told the bytes done and the bytes to do
    after each file read.

    A file is unchanged when its size, mtime, ctime and inode are (any write moves the ctime)."""
    sources = list(sources)
    directories = [os.fspath(d) for d in directories]
    return _retried(lambda bulk: _update(conn, sources, progress, partial, directories, bulk))


class _Raced(Exception):
    """A batch collided with rows another writer added since this update read the index."""


@contextlib.contextmanager
def _writing(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, committed whole or rolled back: `BEGIN IMMEDIATE` (one writer at a
    time; readers go on), and a row another writer added meanwhile raises `_Raced`."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except sqlite3.IntegrityError:
        conn.execute("ROLLBACK")
        raise _Raced from None
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _retried(step: Callable[[bool], T]) -> T:
    """`step(bulk=True)` again while it collides with another writer's rows (each time from what the
    index holds now), at last without the bulk insert of new files, which cannot collide."""
    for _ in range(3):
        try:
            return step(True)
        except _Raced:
            continue  # another writer indexed some of these files meanwhile: again, from what it holds now
    return step(False)


def _update(conn: sqlite3.Connection, sources: list[Source], progress: Callable[[int, int], None] | None,
            partial: bool, directories: list[str], bulk: bool) -> UpdateStats:
    stats = UpdateStats()
    if partial:
        rows = [row for directory in directories for row in _under(conn, _KEY, directory)]
        for source in sources:
            if is_utf8(str(source.path)):  # one that is not is passed over by _compare
                rows += conn.execute(_KEY + " WHERE path = ?", (str(source.path),)).fetchall()
        known = _by_path(rows)
    else:
        known = _by_path(conn.execute(_KEY).fetchall())
    _, work, gone = _compare(known, directories, sources, stats)
    _apply(conn, work, gone, progress, stats, bulk)
    stats.files = conn.execute("SELECT count(*) FROM files").fetchone()[0]
    return stats


_LISTED = "SELECT path, activity, entries, rowid FROM sessions"
_LISTED_ALL = "SELECT path, activity, entries, rowid, id, cwd, name, first_user, model FROM sessions"
_SHOWN = "SELECT rowid, id, cwd, name, first_user, entries, model FROM sessions"
_MANY = 1000  # sessions shown past which one pass over the table beats a lookup each
_ORDER = itemgetter(0, 1)


def listed(conn: sqlite3.Connection, directories: Iterable[str | Path], limit: int | None = None,
           progress: Callable[[int, int], None] | None = None) -> list[Summary] | None:
    """The newest `limit` pi sessions directly in `directories` (all when None) in pi's picker
    order, as `list` shows them, the index first brought up to date for them (as `update` does, in
    the same pass over the files). The texts are fetched for the sessions shown only.

    Each directory is checked in one step first (`_unchanged`: one stat per file, compared with its
    rows all at once); only one where anything differs goes through `_compare` and `_apply`.

    None when the index cannot say what `list` would: a file it passes over (a name that is no
    UTF-8), one of a legacy dialect (read migrated, where `list` reads the lines as they are), or a
    text shown holding U+FFFD (maybe a lone surrogate the index could not store)."""
    directories = list(dict.fromkeys(os.fspath(d) for d in directories))
    if not all(map(is_utf8, directories)):
        return None  # its files' names are no UTF-8 either: none of them is in the index

    def step(bulk: bool) -> tuple[list[tuple], list[tuple[Source, os.stat_result]], UpdateStats]:
        files: list[tuple] = []
        changed: list[tuple] = []
        changed_dirs = []
        for directory in directories:
            rows = _under(conn, _KEY, directory)
            if _unchanged(directory, rows):
                files += rows
            else:
                changed += rows
                changed_dirs.append(directory)
        stats = UpdateStats()
        work: list[tuple[Source, os.stat_result]] = []
        if changed_dirs:
            kept, work, gone = _compare(_by_path(changed), changed_dirs, [], stats)
            files += kept
            _apply(conn, work, gone, progress, stats, bulk)
        return files, work, stats

    files, work, stats = _retried(step)
    if stats.passed_over:
        return None
    for source, _ in work:
        files += conn.execute(_KEY + " WHERE path = ?", (source.path,)).fetchall()
    whole = len(files) > _MANY and (limit is None or limit > _MANY)
    sessions = _by_path(conn.execute(_LISTED_ALL + " WHERE entries IS NOT NULL").fetchall() if whole else
                        [row for directory in directories for row in _under(conn, _LISTED, directory)])
    rows = []
    for path, _size, mtime_ns, _ctime, _inode, _harness, line in files:
        session = sessions.get(path)
        if session is None or session[2] is None:
            continue  # no session file (kept so it is not read again)
        if line == 0:  # read through the loader: a legacy dialect, migrated
            return None
        activity = session[1]
        if activity is None:  # no message, no header time: the file's mtime as os.stat gives it
            activity = (mtime_ns // 1_000_000_000 + mtime_ns % 1_000_000_000 * 1e-9) * 1000
        rows.append((activity / 1000, path.rpartition(os.sep)[2], path, session))
    rows.sort(key=_ORDER, reverse=True)
    rows = rows[:limit]
    if whole:  # the texts came with the sort keys
        out = [Summary(path, modified, "None" if s[4] is None else s[4], s[5], s[6], s[7], s[2], s[8])
               for modified, _name, path, s in rows]
    else:
        texts = {t[0]: t for t in conn.execute(_SHOWN + f" WHERE rowid IN ({','.join('?' * len(rows))})",
                                               [r[3][3] for r in rows])}
        out = []
        for modified, _name, path, session in rows:
            _, session_id, cwd, name, first_user, entries, model = texts[session[3]]
            out.append(Summary(path, modified, "None" if session_id is None else session_id, cwd, name, first_user,
                               entries, model))
    return None if _replaced(chain.from_iterable(map(_SHOWN_TEXTS, out))) else out


_SHOWN_TEXTS = attrgetter("session_id", "cwd", "name", "first_user", "model")


def _replaced(texts: Iterable[object]) -> bool:
    """Whether a text to be shown holds U+FFFD, which may stand for a lone surrogate `storable`
    replaced: the files then say what `list` shows, exactly as without the index (one pass in C)."""
    return "\ufffd" in "\x00".join(map(str, texts))


_HARNESS_KEY = _KEY + " WHERE path >= ? AND path < ? AND harness = ?"
_HARNESS_LISTED = ("SELECT f.path, f.mtime_ns, s.list_id, s.list_cwd, s.list_first, s.list_messages FROM files f"
                   " JOIN sessions s ON s.rowid = f.session WHERE f.path >= ? AND f.path < ? AND f.harness = ?"
                   " AND s.list_messages IS NOT NULL")


def harness_listed(conn: sqlite3.Connection, harness: str, where: str, paths: list[str],
                   in_scope: Callable[[str], bool], cwd: str | None = None) -> list[tuple] | None:
    """Another harness's sessions among `paths` (the files its listing found under `where`; with
    `cwd`, only those of that directory) as `list --harness` shows them: (path, mtime as os.stat
    gives it, id, cwd, first message, messages). The index is first brought up to date for them, and
    the files it holds under `where` that `in_scope` says the listing would have found, and did not,
    are dropped (deleted since). None when a name is no UTF-8 (the index cannot hold it), or a text
    shown holds U+FFFD (maybe a lone surrogate the index could not store)."""
    if not all(map(is_utf8, paths)):
        return None
    prefix = os.path.join(where, "")
    bounds = (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1), harness)
    sources = [Source(p, harness) for p in paths]

    def step(bulk: bool) -> None:
        known = _by_path([row for row in conn.execute(_HARNESS_KEY, bounds) if in_scope(row[0])])
        _, work, gone = _compare(known, [], sources, UpdateStats())
        _apply(conn, work, gone, None, UpdateStats(), bulk)

    _retried(step)
    wanted = set(paths)
    sql, args = (_HARNESS_LISTED, bounds) if cwd is None else (_HARNESS_LISTED + " AND s.list_cwd = ?", (*bounds, cwd))
    rows = [(path, mtime_ns // 1_000_000_000 + mtime_ns % 1_000_000_000 * 1e-9, *shown)
            for path, mtime_ns, *shown in conn.execute(sql, args) if path in wanted]
    return None if _replaced(chain.from_iterable(row[2:5] for row in rows)) else rows


def _unchanged(directory: str, rows: list[tuple]) -> bool:
    """Whether the `*.jsonl` files directly in `directory` are exactly those of its `_KEY` rows, each
    a regular file with its row's size, mtime, ctime and inode, indexed as pi's: what `_compare`
    finds when nothing changed, with one stat per file and no Python per file. False whenever
    anything differs or cannot be told (an unreadable directory, a file gone meanwhile): `_compare`
    then says what."""
    prefix = os.path.join(directory, "")
    try:
        paths = [prefix + name for name in os.listdir(directory) if name.endswith(".jsonl")]
    except OSError:
        return False
    if len(paths) != len(rows) or not all(map("pi".__eq__, map(_HARNESS, rows))):
        return False
    try:
        found = list(map(os.stat, paths))  # as DirEntry.is_file and .stat see a file: symlinks followed
    except OSError:
        return False
    return (all(map(S_ISREG, map(_MODE, found)))
            and dict(zip(paths, map(_STAT_OF, found), strict=True))
            == dict(zip(map(_first, rows), map(_STAT_KEY, rows), strict=True)))


_MODE = attrgetter("st_mode")
_STAT_OF = attrgetter("st_size", "st_mtime_ns", "st_ctime_ns", "st_ino")
_STAT_KEY, _HARNESS = itemgetter(1, 2, 3, 4), itemgetter(5)  # of a _KEY row


def _apply(conn: sqlite3.Connection, work: list[tuple[Source, os.stat_result]], gone: list[str],
           progress: Callable[[int, int], None] | None, stats: UpdateStats, bulk: bool = True) -> None:
    """Read the changed files into the index and drop the gone ones, a batch per transaction; with
    `bulk`, the files it has never seen first (`_add_new`). Raises `_Raced` on another writer's rows."""
    if not work and not gone:  # nothing to write: no transaction, so a read-only index answers too
        return
    old_rows = {}
    if conn.execute("SELECT 1 FROM files LIMIT 1").fetchone() is not None:  # from scratch: no lookup per file
        for source, _ in work:
            row = conn.execute(_ROW + " WHERE path = ?", (source.path,)).fetchone()
            if row is not None:
                old_rows[row[0]] = row[1:]
    sessions_gone = {}
    for path in gone:
        row = conn.execute("SELECT session FROM files WHERE path = ?", (path,)).fetchone()
        if row is not None:
            sessions_gone[path] = row[0]
    total = sum(st.st_size for _, st in work)
    done = 0
    if bulk:
        new = [(str(source.path), source.harness, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
               for source, st in work if source.path not in old_rows]
        new.sort()  # in path order, the path indexes (four) grow at their end instead of splitting pages
        if new:
            done = _add_new(conn, new, stats, progress, total)
            work = [item for item in work if item[0].path in old_rows]
    for start in range(0, max(len(work), 1), BATCH_FILES):
        with _writing(conn):
            batch = _Batch(conn)
            if start == 0:
                _resume_merging(conn)  # a bulk run killed before it set it back (see _AUTOMERGE)
                for path, session in sessions_gone.items():
                    batch.drop(path, session)
                    stats.dropped += 1
            for source, st in work[start:start + BATCH_FILES]:
                stats.bytes_read += _update_file(batch, source, st, old_rows.get(source.path), stats)
                done += st.st_size
                if progress is not None:
                    progress(done, total)
            _insert(conn, batch.rows, "INSERT OR REPLACE")


@dataclass
class Rows:
    """The rows of a batch of files, as inserted: in one transaction, a few executemany calls."""

    sessions: list[tuple] = field(default_factory=list)
    messages: list[tuple] = field(default_factory=list)
    texts: list[tuple] = field(default_factory=list)
    usage: list[tuple] = field(default_factory=list)
    files: list[tuple] = field(default_factory=list)
    count: int = 0  # files
    size: int = 0  # their bytes
    messages_added: int = 0
    next_session: int = 1  # the rowids after this batch's
    next_message: int = 1

    def fields(self) -> tuple:
        """The batch as plain lists and numbers (what a worker process passes back), in field order."""
        return (self.sessions, self.messages, self.texts, self.usage, self.files, self.count, self.size,
                self.messages_added, self.next_session, self.next_message)

    def add(self, found: Found) -> None:
        self.messages += found.messages
        self.texts += found.texts
        self.usage += found.usage
        self.messages_added += len(found.messages)


_FTS_INSERT = "INSERT INTO messages_fts(rowid, text) VALUES (?, ?)"


def _insert(conn: sqlite3.Connection, rows: Rows, files: str = "INSERT", texts: bool = True) -> None:
    """The batch's rows, the FTS rows last (`texts` False: the caller inserts them, with `_insert_texts`,
    at the end of its transaction). Before any FTS row: a statement of many rows opens a savepoint,
    and FTS5 writes its pending terms out as a segment at every savepoint (sqlite's fts5SavepointMethod)."""
    _bind_fast()
    _insert_many(conn, "INSERT INTO sessions", 19, rows.sessions)
    _insert_many(conn, "INSERT INTO messages", 8, rows.messages)
    _insert_many(conn, "INSERT INTO usage", 11, rows.usage)
    _insert_many(conn, f"{files} INTO files", 10, rows.files)
    if texts:
        conn.executemany(_FTS_INSERT, rows.texts)


def _insert_texts(conn: sqlite3.Connection, texts: Iterable[tuple]) -> None:
    """FTS rows, one at a time (a statement of many rows into FTS5 would flush its terms each time)."""
    _bind_fast()
    conn.executemany(_FTS_INSERT, texts)


# Rows per INSERT statement: one statement of many rows costs SQLite one program run (its start, halt
# and reset) instead of one per row; kept within 999 parameters (the limit of SQLite before 3.32).
# From scratch, 20,000 sessions: the non-FTS inserts 0.51 s -> 0.40 s CPU (load 9).
_PARAMETERS = 999


def _insert_many(conn: sqlite3.Connection, insert: str, columns: int, rows: list[tuple]) -> None:
    """`insert` ("INSERT INTO t") of `rows`, `_PARAMETERS // columns` of them per statement."""
    per = _PARAMETERS // columns
    whole = len(rows) - len(rows) % per if per > 1 else 0
    one = "(" + ", ".join("?" * columns) + ")"
    if whole:
        many = f"{insert} VALUES {', '.join([one] * per)}"
        flat = chain.from_iterable
        execute = conn.execute
        for start in range(0, whole, per):
            execute(many, list(flat(rows[start:start + per])))
    if whole < len(rows):
        conn.executemany(f"{insert} VALUES {one}", rows[whole:])


@functools.cache
def _bind_fast() -> None:
    """None and bytes bound as they are without sqlite3's adapter search: the module looks for an adapter
    of every value that is not an int, float or str (a dict lookup, then `__adapt__` and `__conform__`),
    and then binds None and bytes as they are anyway. Registering adapters that give the value back
    (`{}.get(None)` is None, `bytes(b)` is b) binds the same, with one dict lookup and a C call: 7% of
    the inserts' instructions (callgrind, 20,000 sessions: 7.19G -> 6.69G)."""
    sqlite3.register_adapter(type(None), {}.get)
    sqlite3.register_adapter(bytes, bytes)


def session_row(found: Found, path: str, harness: str, listed: bool = True) -> tuple:
    """A file's row in `sessions`; `listed` False: no session file (kept with no `entries`: `list` skips it)."""
    header = found.header or {}
    timestamp = header.get("timestamp")
    activity = found.activity if found.activity is not None else iso_ms(timestamp)
    return (found.session, storable(path), harness, storable(_str(header.get("id"))),
            storable(_str(header.get("cwd"))), storable(found.name), storable(found.first_user),
            iso_to_ms(timestamp), found.updated_ms, storable(json_text(found.models)),
            len(found.messages), storable(_str(header.get("parentSession"))), activity,
            storable(found.model), found.entries if listed else None, *(found.listing or (None,) * 4))


def read_new(items: list[tuple[str, str, int, int, int, int]], first_session: int, first_message: int
             ) -> Iterator[Rows]:
    """The rows of files the index has never seen (path, harness, size, mtime_ns, inode, ctime_ns), BATCH_FILES
    at a time, numbered from the given rowids as `_bases` says (so any batch can be read on its own, by
    either process, and number its rows as when read in turn). Touches no database: a worker runs it too."""
    bases = _bases(items, first_session, first_message)
    for start, (session, message) in zip(range(0, len(items), BATCH_FILES), bases, strict=True):
        rows = Rows()
        loaded = False  # a file read through the core's loader (its objects hold cycles)
        for path, harness, size, mtime_ns, ino, ctime_ns in items[start:start + BATCH_FILES]:
            rows.count += 1
            rows.size += size
            read = _read_file(path, harness, size, ino, None, Found(session=session, next=message))
            if read is None:
                continue  # cannot be opened: left until it can
            _, found, head, _ = read
            listed = found is not None
            if found is None:  # not a session file we read: kept, so it is not read again until it changes
                found = Found(session=session, next=message, offset=size)
                loaded = True
            elif found.line == 0:  # read by _read_loaded
                loaded = True
            rows.sessions.append(session_row(found, path, harness, listed))
            rows.add(found)
            rows.files.append((path, harness, size, mtime_ns, ino, head, found.offset, found.line, session,
                               ctime_ns))
            session += 1
            message = found.next
        rows.next_session, rows.next_message = session, message
        if loaded and not gc.isenabled():  # paused by _add_new: what reading the batch left in cycles
            # (a loader's objects) goes now, a young collection over this batch's objects only; v3 files
            # leave none, and a collection over a batch of their rows cost 0.3 s of 100,000 sessions
            gc.collect(1)
        yield rows


def _bases(items: list[tuple[str, str, int, int, int, int]], session: int, message: int) -> Iterator[tuple[int, int]]:
    """The first session and message rowid of each batch: a session per file before it, and room for
    as many messages as the bytes before it (a message is a line) and 2**32 more per batch (lines
    appended while it is read). The gaps cost nothing: rowids only order rows."""
    for start in range(0, len(items), BATCH_FILES):
        yield session + start, message
        message += (1 << 32) + sum(item[2] for item in items[start:start + BATCH_FILES])


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic collector paused: a batch's rows are many small containers in no cycle, and its
    passes over them cost a tenth of the reading and free nothing (read_new collects once a batch)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# FTS5 merges its segments as it writes them (each commit writes one): from scratch, the merging is
# paused while new files go in, and the next writes merge little by little again (FTS5's default
# automerge, 4). What a query finds and how it ranks does not depend on the segments. 100,000
# sessions, the inserts alone, two rounds at load 11: commits 0.89/0.87 s -> 0.59/0.48 s CPU,
# all inserts 4.47/5.49 s -> 4.27/4.27 s. A killed run leaves it paused: the next update that
# writes sets it back (`_resume_merging`).
#
# At its end a run from scratch merges its segments into one itself (`optimize`): left as they were
# (one a commit, up to 15 on level 0), the 16th, written by some later one-file update, made that
# update merge them all at once (FTS5's crisis merge): 830 ms of 100,000 sessions, 105 ms of 20,000.
# Not onto an index that had rows: optimize rewrites every segment, the older index's too.
_AUTOMERGE = "INSERT INTO messages_fts(messages_fts, rank) VALUES('automerge', ?)"
_OPTIMIZE = "INSERT INTO messages_fts(messages_fts) VALUES('optimize')"
_AUTOMERGE_DEFAULT = 4


def _resume_merging(conn: sqlite3.Connection) -> None:
    """FTS5's merging back on where a bulk run was killed before it set it back (it keeps its
    settings in the `_config` shadow table): otherwise every later commit's segment would stay as
    written until 16 of a level pile up."""
    row = conn.execute("SELECT v FROM messages_fts_config WHERE k = 'automerge'").fetchone()
    if row is not None and row[0] == 0:
        conn.execute(_AUTOMERGE, (_AUTOMERGE_DEFAULT,))


@_no_gc()  # the fork included: the worker runs without it too
def _add_new(conn: sqlite3.Connection, items: list[tuple[str, str, int, int, int, int]], stats: UpdateStats,
             progress: Callable[[int, int], None] | None, total: int) -> int:
    """Index files the index has never seen, a few batches per transaction, each numbered ahead. With
    many files and a second core, a worker process reads batches from the first on while this one
    inserts them, and reads batches itself from the last one back whenever the worker's next is not
    ready yet (so both cores parse, whatever the machine's load). A batch colliding with another
    writer's rows raises `_Raced`. Returns the bytes done."""
    from . import worker

    session, message = conn.execute("SELECT (SELECT coalesce(max(rowid), 0) + 1 FROM sessions),"
                                    " (SELECT coalesce(max(rowid), 0) + 1 FROM messages)").fetchone()
    starts = range(0, len(items), BATCH_FILES)
    bases = list(_bases(items, session, message))
    stream = None
    if len(items) >= WORKER_FILES and worker.available():
        try:
            stream = worker.forked(rows.fields() for rows in read_new(items, session, message))
        except OSError:  # no process to be had: all of it here
            pass

    def own(batch: int) -> Rows:
        return next(read_new(items[starts[batch]:starts[batch] + BATCH_FILES], *bases[batch]))

    def take() -> Rows:
        nonlocal low, high, stream
        while stream is not None:
            if high - low >= 2 and not stream.ready():
                high -= 1
                return own(high)
            try:
                rows = Rows(*next(stream))
            except (worker.Lost, StopIteration):  # the worker died: the rest here
                stream.close()
                stream = None
                continue
            low += 1
            return rows
        low += 1
        return own(low - 1)

    done = 0
    low, high = 0, len(starts)  # the batches not inserted yet; the worker's next is `low`
    if progress is not None:
        progress(done, total)  # the bar is there from the start: it moves a batch at a time
    merging = sum(item[2] for item in items) > COMMIT_BYTES  # more than one transaction: see _AUTOMERGE
    paused = False
    try:
        while low < high:
            rows = take()  # the first read before the transaction (others wait on it only while it inserts)
            with _writing(conn):  # a few batches per transaction: each commit costs FTS5 a segment
                if merging:
                    conn.execute(_AUTOMERGE, (0,))  # in the transaction: a rollback leaves it as it was
                    merging = False
                    paused = True
                written = 0
                texts: list[list[tuple]] = []  # the FTS rows go in last (see _insert)
                while True:
                    _insert(conn, rows, texts=False)
                    texts.append(rows.texts)
                    written += rows.size
                    stats.read_full += len(rows.files)
                    stats.bytes_read += sum(row[2] for row in rows.files)
                    stats.messages += rows.messages_added
                    done += rows.size
                    if progress is not None:
                        progress(done, total)
                    if low >= high or written >= COMMIT_BYTES:
                        break
                    rows = take()
                _insert_texts(conn, chain.from_iterable(texts))
        if paused:  # merging back on, and this run's segments merged by this run (see _OPTIMIZE)
            with _writing(conn):
                conn.execute(_AUTOMERGE, (_AUTOMERGE_DEFAULT,))
                if message == 1:  # from scratch (see _OPTIMIZE)
                    conn.execute(_OPTIMIZE)
            paused = False
        return done
    finally:
        if stream is not None:
            stream.close()  # ends the worker if it still runs
        if paused:  # also after a race or an error (the next try may be no bulk one)
            with contextlib.suppress(sqlite3.Error), _writing(conn):  # no terms written: no merging now
                conn.execute(_AUTOMERGE, (_AUTOMERGE_DEFAULT,))


class _Batch:
    """A transaction over changed files: drops, sessions extended, rows added."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn  # inside _writing's transaction: the rowids below stay ours
        self.next_session = conn.execute("SELECT coalesce(max(rowid), 0) + 1 FROM sessions").fetchone()[0]
        self.next_message = conn.execute("SELECT coalesce(max(rowid), 0) + 1 FROM messages").fetchone()[0]
        self.rows = Rows()

    def drop(self, path: str, session: int) -> None:
        conn = self.conn
        conn.execute("DELETE FROM messages_fts WHERE rowid IN (SELECT rowid FROM messages WHERE session = ?)",
                     (session,))
        conn.execute("DELETE FROM messages WHERE session = ?", (session,))
        conn.execute("DELETE FROM usage WHERE session = ?", (session,))
        conn.execute("DELETE FROM sessions WHERE rowid = ?", (session,))
        conn.execute("DELETE FROM files WHERE path = ?", (path,))

    def extend_session(self, session: int, found: Found) -> None:
        row = self.conn.execute("SELECT name, first_user, updated_ms, models, activity, model FROM sessions"
                                " WHERE rowid = ?", (session,)).fetchone()
        name, first_user, updated, models, activity, model = row
        models = orjson.loads(models)
        models += [m for m in found.models if m not in models]
        if found.updated_ms is not None:
            updated = found.updated_ms if updated is None else max(updated, found.updated_ms)
        self.conn.execute(
            "UPDATE sessions SET name = ?, first_user = ?, updated_ms = ?, models = ?, messages = messages + ?,"
            " activity = ?, model = ?, entries = entries + ? WHERE rowid = ?",
            (storable(found.name) if found.name is not None else name,
             first_user if first_user is not None else storable(found.first_user), updated,
             storable(json_text(models)), len(found.messages),
             found.activity if found.activity is not None else activity,
             storable(found.model) if found.model is not None else model, found.entries, session))


def _update_file(batch: _Batch, source: Source, st: os.stat_result, old: tuple | None,
                 stats: UpdateStats) -> int:
    """Index one changed file; returns the bytes read."""
    key = str(source.path)
    read = _read_file(key, source.harness, st.st_size, st.st_ino, old,
                      Found(session=batch.next_session, next=batch.next_message))
    if read is None:  # unreadable now: what was read of it before is no longer what it holds
        if old is not None:
            batch.drop(key, old[6])
        return 0
    read_on, found, head, size = read
    if read_on:
        stats.read_on += 1
        batch.extend_session(found.session, found)  # type: ignore[union-attr]
    else:
        if old is not None:
            batch.drop(key, old[6])
        stats.read_full += 1
        listed = found is not None
        if found is None:  # not a session file we read: kept, so it is not read again until it changes
            found = Found(session=batch.next_session, next=batch.next_message, offset=st.st_size)
        batch.next_session += 1
        batch.rows.sessions.append(session_row(found, key, source.harness, listed))
    batch.next_message = found.next  # type: ignore[union-attr]
    batch.rows.add(found)  # type: ignore[arg-type]
    stats.messages += len(found.messages)  # type: ignore[union-attr]
    batch.rows.files.append((key, source.harness, st.st_size, st.st_mtime_ns, st.st_ino, head,
                             found.offset, found.line, found.session, st.st_ctime_ns))  # type: ignore[union-attr]
    return size


def _read_file(path: str, harness: str, size: int, inode: int, old: tuple | None,
               found: Found) -> tuple[bool, Found | None, bytes, int] | None:
    """Read a changed file into `found` (numbered as it says): on from where the last update stopped
    when it only grew, else whole. Returns (read on?, what it gave, its head's digest, bytes read);
    None when it cannot be opened. The Found is None for a file that is no session we read."""
    try:
        fd = os.open(path, _READ)
    except OSError:
        return None
    try:
        # a small file is read whole, as big as it was stat'ed (one call: no file object; a buffer of
        # SMALL_FILE would cost malloc an mmap and its page faults: 17 us a file, 1.7 s of 100,000),
        # and split in memory; a large one is hashed here and streamed
        data = _read_up_to(fd, size if size < SMALL_FILE else HEAD_BYTES, size)
        head = _digest(data[:HEAD_BYTES])
        whole = len(data) < SMALL_FILE and size < SMALL_FILE
        if old is not None:
            old_size, _, old_inode, old_head, old_offset, old_line, old_session, old_harness = old
            if (harness == "pi" == old_harness and old_inode == inode and size > old_size and old_line > 0
                    and old_head == (head if old_size >= HEAD_BYTES else _digest(data[:old_size]))):
                # appended to: read on from where the last update stopped
                found.session = old_session
                read_pi(_lines(data, fd, whole, old_offset), found, old_offset, old_line)
                if not found.clean:
                    _make_storable(found)
                return True, found, head, found.offset - old_offset
        result = _read_whole(path, harness, data, fd, whole, found)
    except LineTooLong:  # no session file we read: kept as such, not read again until it changes
        return False, None, head, size
    finally:
        os.close(fd)
    if result is not None and not result.clean:
        _make_storable(result)
    return False, result, head, size


def _read_up_to(fd: int, limit: int, size: int) -> bytes:
    """Up to `limit` bytes from the start, in one call when the file is the `size` it was stat'ed
    at (a short read asks again, to the limit or the end; bytes appended since are read next time)."""
    data = os.read(fd, limit)
    if len(data) < min(limit, size):
        while len(data) < limit and (more := os.read(fd, limit - len(data))):
            data += more
    return data


def _lines(data: bytes, fd: int, whole: bool, offset: int) -> Iterable[bytes]:
    """The complete lines from byte `offset`, each without its "\n" (split on "\n" only, as reading a
    file does); what follows the last "\n" is left out."""
    if not whole:
        return _streamed(fd, offset)
    lines = data[offset:].split(b"\n")
    lines.pop()  # after the last newline: nothing, or a line not yet complete
    return lines


def _streamed(fd: int, offset: int) -> Iterator[bytes]:
    with open_reporting(fd, None) as fp:  # a line past MAX_LINE refused as it is read
        fp.seek(offset)
        for raw in fp:
            if not raw.endswith(b"\n"):
                return
            yield raw[:-1]


def _read_whole(path: str, harness: str, data: bytes, fd: int, whole: bool, found: Found) -> Found | None:
    """A whole file: v3 pi files line by line; legacy pi dialects (and other harnesses, through the
    core's loader) migrated in memory first."""
    if whole:
        end = data.find(b"\n")
        first = data[: end + 1] if end >= 0 else data
    else:
        with open_reporting(fd, None) as fp:
            fp.seek(0)
            first = fp.readline()
    end = len(first) - 1
    header = parse_header(first)
    if header is not None and harness == "pi":
        try:
            dialect = detect(header)
        except UnsupportedSession:
            return None
        if not dialect.legacy:
            found.header = header
            return read_pi(_lines(data, fd, whole, end + 1), found, end + 1, 1)
    return _read_loaded(Source(path, harness), found)


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
    if filters.tool:  # exactly one of the comma-joined names (LIKE took % and _ as wildcards, and any case)
        clauses.append("instr(',' || m.tools || ',', ',' || ? || ',') > 0 AND instr(?, ',') = 0")
        args += [filters.tool, filters.tool]  # a name with a comma would match two in a row: it is neither
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

