"""`list`'s reading: choose the sessions to show by reading as little as possible, then summarize those.

Order is pi's picker order (SM buildSessionInfo): the time of the last user or assistant message,
else the header's timestamp, else the file's mtime. To choose, a file's header and the tail of the
file are enough (the last such message is found reading backwards); only the files shown are read
whole (message count, name, first prompt, model). pi takes the largest message time rather than the
last; the two differ only in a file whose messages go back in time, which neither writes.

A cache (one JSON file per directory under $HARNESSKIT_HOME/cache/list/) keeps both readings,
each under the file's (size, mtime, ctime, inode, device): any write to a session file changes its
ctime, so a cached answer is never used for content it was not read from. A directory none of whose
files changed (the same names, each with the same key) is taken from it whole, with one stat per
file and no Python per file; where the index is there, the cache holds what the index said of the
directory, and stands only while that index file is the same one. The cache is only ever an
optimisation: missing, unreadable or damaged, it is rebuilt; unwritable, it is skipped.

Above it, snapshot.py's output cache keeps what a whole listing printed.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
from collections.abc import Callable
from operator import attrgetter, itemgetter
from pathlib import Path

import msgspec
import orjson

from .reader import MAX_LINE, open_lines, open_reporting
from .snapshot import Key, Scan, index_source
from .store import Summary, activity_ms, header_of, home_dir, iso_ms, loads, summary_of

_VERSION = 2
_BLOCK = 1 << 16  # tail reads go backwards this many bytes at a time

Choice = tuple[float, str, str | None]  # modified seconds, session id, cwd: what a file is sorted by
Told = tuple[str | None, str | None, int, str | None]  # name, first user message, message count, model
Row = tuple[str, float, str, str | None, str | None, str | None, int, str | None]  # Summary's fields, in order


class _Cache(msgspec.Struct):
    """One directory's readings, a list per field in the order os.listdir gave the names: an
    unchanged directory is told by two list comparisons, with no Python per file. `source` says
    who read them: "files" (list's own reading), or the index (as "index DEV INODE" of its file)."""

    version: int
    dir: str
    source: str
    names: list[str]
    keys: list[Key]
    choices: list[Choice | None]  # None: no session file
    summaries: list[Told | None]  # None: not read whole yet


_DECODE = msgspec.json.Decoder(_Cache)


def cache_path(directory: Path) -> Path:
    key = hashlib.sha256(os.fsencode(os.path.abspath(directory))).hexdigest()[:32]
    return home_dir() / "cache" / "list" / f"{key}.json"


def _load_cache(directory: Path) -> _Cache | None:
    """The directory's cache, typed and whole (msgspec checks every field in C: a cache file is input
    too, and a wrong type must not reach the sort or the table); None when there is none usable."""
    try:
        data = cache_path(directory).read_bytes()
    except OSError:
        return None
    try:
        cache = _DECODE.decode(data)
    except msgspec.DecodeError:  # a lone surrogate escape (valid JSON, pi opens such files): the stdlib's
        try:
            cache = msgspec.convert(json.loads(data), _Cache)
        except (ValueError, RecursionError, msgspec.ValidationError):
            return None
    n = len(cache.names)
    if (cache.version != _VERSION or cache.dir != os.path.abspath(directory)
            or not len(cache.keys) == len(cache.choices) == len(cache.summaries) == n):
        return None
    return cache


def _save_cache(cache: _Cache) -> None:
    path = cache_path(Path(cache.dir))
    try:
        data = msgspec.json.encode(cache)
    except UnicodeEncodeError:  # a lone surrogate: the stdlib writes its escape
        data = json.dumps(msgspec.to_builtins(cache)).encode()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)  # readers see the old cache or the new one, never half of one
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _choose(path: Path, mtime: float) -> list | None:
    """[modified seconds, session id, cwd] from the header and the tail, or None: no session file."""
    try:
        with open_lines(path) as fp:
            header = header_of(fp.readline())
            if header is None:
                return None
            last = _last_activity(fp, fp.tell())
    except OSError:  # a first line past MAX_LINE too: no session file
        return None
    modified = (last if last is not None else iso_ms(header.get("timestamp")) or mtime * 1000) / 1000
    cwd = header.get("cwd")
    return [modified, str(header.get("id")), cwd if isinstance(cwd, str) else None]


def _last_activity(fp, start: int) -> float | None:  # noqa: ANN001 - a binary file
    """activity_ms of the last line (after `start`) that has one, reading the file backwards. A line
    longer than a block is gathered in pieces and joined once: re-splitting it with each block read
    made a 100 MB line take 79 s."""
    end = fp.seek(0, os.SEEK_END)
    pieces: list[bytes] = []  # the end of a line whose start lies further back, the last piece first
    while end > start:
        size = min(_BLOCK, end - start)
        end -= size
        fp.seek(end)
        block = fp.read(size)
        if end > start and b"\n" not in block:
            pieces.append(block)  # all of it belongs to that line
            if len(pieces) * _BLOCK > MAX_LINE:  # no line the reader reads: none to go by
                return None
            continue
        lines = block.split(b"\n")
        if pieces:
            lines[-1] += b"".join(reversed(pieces))
        pieces = [lines[0]] if end > start else []  # its beginning may lie in the next block back
        whole = lines[1:] if end > start else lines
        for raw in reversed(whole):
            stamp = _line_activity(raw)
            if stamp is not None:
                return stamp
    return None


def _line_activity(raw: bytes) -> float | None:
    if b"message" not in raw and b"\\u" not in raw:
        return None
    try:
        return activity_ms(loads(raw))
    except orjson.JSONDecodeError:
        return None


def _summary(path: Path, mtime: float, report: Callable[[int], None] | None = None) -> list | None:
    """[name, first user message, message count, model] of the whole file."""
    try:
        with path.open("rb", buffering=0) as raw, open_reporting(raw.fileno(), report) as fp:
            header = header_of(fp.readline())
            if header is None:
                return None
            s = summary_of(path, header, mtime, fp)
    except OSError:
        return None
    return [s.name, s.first_user, s.messages, s.model]


class _Dir:
    """One directory as this listing sees it: its files (names and keys) and, for each, what is
    known of it (`choices`, `summaries`: from the cache where it is current, else read)."""

    __slots__ = ("path", "names", "keys", "cache", "choices", "summaries", "source", "dirty")

    def __init__(self, path: Path, source: str, names: list[str], keys: list[Key]) -> None:
        self.path = path
        self.names, self.keys = names, keys
        self.choices: list | None = None  # None until known: from the cache, read, or (index) told
        self.summaries: list = []
        self.source = source
        self.dirty = False
        self.cache = _load_cache(path)
        cache = self.cache
        if cache is not None and cache.source == source and cache.names == self.names and cache.keys == self.keys:
            self.choices, self.summaries = cache.choices, cache.summaries  # nothing changed: taken whole
            self.cache = None
        else:
            self.dirty = True

    def read(self) -> None:
        """Each file's choice from the cache where the file is as it was (a cache of list's own
        reading), else from the file (its header and its tail)."""
        cache = self.cache
        known = {}
        if cache is not None and cache.source == "files":
            known = dict(zip(cache.names, zip(cache.keys, cache.choices, cache.summaries, strict=True), strict=True))
        self.choices, self.summaries = [], []
        for name, key in zip(self.names, self.keys, strict=True):
            record = known.get(name)
            if record is not None and record[0] == key:
                self.choices.append(record[1])
                self.summaries.append(record[2])
            else:
                self.choices.append(_choose(Path(self.path, name), _mtime(key[1])))
                self.summaries.append(None)
        self.source, self.cache = "files", None

    def told(self, rows: list[Row]) -> None:
        """The whole listing of this directory as the index gave it, kept for the next list."""
        prefix = os.path.join(self.path, "")
        by_name = {row[0][len(prefix):]: row for row in rows if row[0].startswith(prefix)}
        self.choices, self.summaries = [], []
        for name in self.names:
            row = by_name.get(name)
            self.choices.append(None if row is None else (row[1], row[2], row[3]))
            self.summaries.append(None if row is None else (row[4], row[5], row[6], row[7]))

    def candidates(self) -> list[tuple]:
        """(modified, name, row) of each session, or (modified, name, (self, i)) where it is not read whole yet."""
        prefix = os.path.join(self.path, "")
        known = list(zip(self.names, self.choices, self.summaries, strict=True))
        out = [(c[0], name, (prefix + name, c[0], c[1], c[2], *s)) for name, c, s in known
               if c is not None and s is not None]
        if len(out) != len(known) - self.choices.count(None):
            out += [(c[0], name, (self, i)) for i, (name, c, s) in enumerate(known) if c is not None and s is None]
        return out

    def save(self) -> None:
        if self.dirty and self.choices is not None:
            _save_cache(_Cache(_VERSION, os.path.abspath(self.path), self.source, self.names, self.keys,
                               self.choices, self.summaries))


def list_rows(directories: list[Path], limit: int | None = None,
              on_progress: Callable[[int, int], None] | None = None, scanned: Scan | None = None) -> list[Row]:
    """The newest `limit` sessions of `directories` (all when None), newest first, as tuples of
    Summary's fields (100,000 of them need no object each). `on_progress` hears (bytes read, bytes
    to read) while the sessions shown are read whole (a big one takes seconds). `scanned`: the
    directories' scan when the caller has taken it (for the output cache), else taken here."""
    enabled = gc.isenabled()
    gc.disable()  # 100,000 cached records hold no cycles: the cyclic GC would only walk them, again and again
    try:
        if scanned is None or scanned.dirs != list(directories):
            scanned = Scan(directories)
        return _list_rows(scanned, limit, on_progress)
    finally:
        if enabled:
            gc.enable()


def list_sessions(directories: list[Path], limit: int | None = None,
                  on_progress: Callable[[int, int], None] | None = None) -> list[Summary]:
    """list_rows as Summary objects."""
    return [Summary(*row) for row in list_rows(directories, limit, on_progress)]


def _from_index(directories: list[Path], limit: int | None,
                on_progress: Callable[[int, int], None] | None) -> list[Row] | None:
    """The sessions as the index has them, after it is brought up to date for these directories
    (what changed re-read, what is gone dropped, what is new read); None where there is no index
    to trust: absent, foreign, of another version, damaged, or not writable when something changed."""
    path = home_dir() / "index.sqlite"
    if not path.is_file() or not all(d.is_absolute() for d in directories):
        return None
    import sqlite3

    from . import catalog

    conn = catalog.open_existing(path)
    if conn is None:
        return None
    try:
        summaries = catalog.listed(conn, directories, limit, on_progress)
    except (sqlite3.Error, OSError):
        return None
    finally:
        conn.close()
    return None if summaries is None else list(map(_ROW_OF, summaries))


_ROW_OF = attrgetter(*Summary.__slots__)


def _list_rows(scanned: Scan, limit: int | None, on_progress: Callable[[int, int], None] | None) -> list[Row]:
    """Each directory from its cache when nothing in it changed; the others from the index when it
    is there (then cached whole for the next list), else from the files themselves."""
    index = index_source()
    dirs = [_Dir(directory, index or "files", names, keys)
            for directory, names, keys in zip(scanned.dirs, scanned.names, scanned.keys, strict=True)]
    missed = [d for d in dirs if d.choices is None]
    told: dict[Path, list[Row]] = {}  # what the index said of the newest `limit` of the missed directories
    if missed and index is not None:
        rows = _from_index([d.path for d in missed], limit, on_progress)
        if rows is not None:
            for d in missed:
                if limit is None:
                    d.told(rows)
                else:  # only the shown ones were told: they are shown as told, and nothing is cached
                    told[d.path] = []
                    d.dirty = False
            for row in rows if told else ():
                told[Path(os.path.dirname(row[0]))].append(row)
            missed = []
    for d in missed:
        d.read()
    candidates: list[tuple] = []  # (modified, name, the row, or (directory, i) when not read whole yet)
    for d in dirs:
        if d.choices is None:
            candidates += [(row[1], os.path.basename(row[0]), row) for row in told.get(d.path, ())]
        else:
            candidates += d.candidates()
    candidates.sort(key=_ORDER, reverse=True)
    shown = candidates if limit is None else candidates[:limit]
    unread = [c[2] for c in shown if len(c[2]) == 2]
    if not unread:
        out = list(map(_THIRD, shown))
    else:
        out = _read_shown(shown, sum(d.keys[i][0] for d, i in unread), on_progress)
    for d in dirs:
        d.save()
    return out


def _read_shown(shown: list[tuple], total: int, on_progress: Callable[[int, int], None] | None) -> list[Row]:
    """The rows shown, each session not read whole yet read now (its summary kept for the cache)."""
    done = 0
    out: list[Row] = []
    for modified, name, row in shown:
        if len(row) != 2:
            out.append(row)
            continue
        d, i = row
        report = None
        if on_progress is not None:
            def report(position: int, before: int = done) -> None:
                on_progress(before + position, total)
        summary = d.summaries[i] = _summary(Path(d.path, name), _mtime(d.keys[i][1]), report)
        done += d.keys[i][0]
        d.dirty = True
        if summary is not None:  # else gone or no longer a session since it was chosen
            choice = d.choices[i]
            out.append((os.path.join(d.path, name), modified, choice[1], choice[2], *summary))
    return out


_ORDER, _THIRD = itemgetter(0, 1), itemgetter(2)


def _mtime(ns: int) -> float:
    """st_mtime as os.stat gives it, from st_mtime_ns."""
    return ns // 1_000_000_000 + ns % 1_000_000_000 * 1e-9
