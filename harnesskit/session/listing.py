"""`list`'s reading: choose the sessions to show by reading as little as possible, then summarize those.

Order is pi's picker order (SM buildSessionInfo): the time of the last user or assistant message,
else the header's timestamp, else the file's mtime. To choose, a file's header and the tail of the
file are enough (the last such message is found reading backwards); only the files shown are read
whole (message count, name, first prompt, model). pi takes the largest message time rather than the
last; the two differ only in a file whose messages go back in time, which neither writes.

A cache (one small JSON file per directory under $HARNESSKIT_HOME/cache/list/) keeps both readings,
each under the file's (size, mtime, ctime, inode, device): any write to a session file changes its
ctime, so a cached answer is never used for content it was not read from. The cache is only ever an
optimisation: missing, unreadable or damaged, it is rebuilt; unwritable, it is skipped.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
from collections.abc import Callable
from operator import itemgetter
from pathlib import Path

import orjson

from .reader import open_reporting
from .store import Summary, activity_ms, header_of, home_dir, iso_ms, loads, summary_of

_VERSION = 1
_BLOCK = 1 << 16  # tail reads go backwards this many bytes at a time


def cache_path(directory: Path) -> Path:
    key = hashlib.sha256(os.fsencode(os.path.abspath(directory))).hexdigest()[:32]
    return home_dir() / "cache" / "list" / f"{key}.json"


def _load_cache(directory: Path) -> dict[str, list]:
    """name -> [stat key, choice, summary or None]; {} when there is no usable cache."""
    try:
        data = loads(cache_path(directory).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if (not isinstance(data, dict) or data.get("version") != _VERSION or data.get("dir") != os.path.abspath(directory)
            or not isinstance(data.get("files"), dict)):
        return {}
    return data["files"]


def _save_cache(directory: Path, files: dict[str, list]) -> None:
    path = cache_path(directory)
    payload = {"version": _VERSION, "dir": os.path.abspath(directory), "files": files}
    try:
        data = orjson.dumps(payload)
    except TypeError:  # a lone surrogate (valid JSON, pi opens such files): the stdlib writes its escape
        data = json.dumps(payload).encode()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)  # readers see the old cache or the new one, never half of one
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


_NUMBER = (int, float)
_TEXT = (str, type(None))


def _valid_record(record: object) -> bool:
    """[stat key, [modified, id, cwd] or None, [name, first message, count, model] or None], exactly:
    a cache file is input too, and a wrong type must not reach the sort or the table."""
    if record.__class__ is not list or len(record) != 3:
        return False
    choice, summary = record[1], record[2]
    return ((choice is None or (choice.__class__ is list and len(choice) == 3 and choice[0].__class__ in _NUMBER
                                and choice[1].__class__ is str and choice[2].__class__ in _TEXT))
            and (summary is None or (summary.__class__ is list and len(summary) == 4
                                     and summary[0].__class__ in _TEXT and summary[1].__class__ in _TEXT
                                     and summary[2].__class__ is int and summary[3].__class__ in _TEXT)))


def _choose(path: Path, mtime: float) -> list | None:
    """[modified seconds, session id, cwd] from the header and the tail, or None: no session file."""
    try:
        with path.open("rb") as fp:
            header = header_of(fp.readline())
            if header is None:
                return None
            last = _last_activity(fp, fp.tell())
    except OSError:
        return None
    modified = (last if last is not None else iso_ms(header.get("timestamp")) or mtime * 1000) / 1000
    cwd = header.get("cwd")
    return [modified, str(header.get("id")), cwd if isinstance(cwd, str) else None]


def _last_activity(fp, start: int) -> float | None:  # noqa: ANN001 - a binary file
    """activity_ms of the last line (after `start`) that has one, reading the file backwards."""
    end = fp.seek(0, os.SEEK_END)
    tail = b""  # the start of the line that continues into the block read before
    while end > start:
        size = min(_BLOCK, end - start)
        end -= size
        fp.seek(end)
        block = fp.read(size) + tail
        lines = block.split(b"\n")
        tail = lines[0] if end > start else b""  # its beginning may lie in the next block back
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


def _candidates(directory: Path, cache: dict[str, list], fresh: dict[str, list]) -> tuple[list[tuple], bool]:
    """(modified, name, path, record, mtime) of every session file of `directory`, choosing from the
    cache where it is current, and whether any record was new; `fresh` receives every record."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return [], bool(cache)
    out = []
    changed = False
    for entry in entries:
        name = entry.name
        if not name.endswith(".jsonl"):
            continue
        try:
            if not entry.is_file():
                continue
            st = entry.stat()
        except OSError:
            continue
        key = _stat_key(st)
        record = cache.get(name)
        if not (record.__class__ is list and len(record) == 3 and record[0] == key and _valid_record(record)):
            record = [key, _choose(Path(entry.path), st.st_mtime), None]
            changed = True
        fresh[name] = record
        if record[1] is not None:
            out.append((record[1][0], name, entry.path, record, st.st_mtime))
    return out, changed or len(fresh) != len(cache)


def list_sessions(directories: list[Path], limit: int | None = None,
                  on_progress: Callable[[int, int], None] | None = None) -> list[Summary]:
    """The newest `limit` sessions of `directories` (all when None), newest first. `on_progress` hears
    (bytes read, bytes to read) while the sessions shown are read whole (a big one takes seconds)."""
    enabled = gc.isenabled()
    gc.disable()  # 100,000 cached records hold no cycles: the cyclic GC would only walk them, again and again
    try:
        return _list_sessions(directories, limit, on_progress)
    finally:
        if enabled:
            gc.enable()


def _from_index(directories: list[Path], limit: int | None,
                on_progress: Callable[[int, int], None] | None) -> list[Summary] | None:
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
        return catalog.listed(conn, directories, limit, on_progress)
    except (sqlite3.Error, OSError):
        return None
    finally:
        conn.close()


def _list_sessions(directories: list[Path], limit: int | None,
                   on_progress: Callable[[int, int], None] | None) -> list[Summary]:
    indexed = _from_index(directories, limit, on_progress)
    if indexed is not None:
        return indexed
    caches: list[tuple[Path, dict, bool]] = []
    rows: list[tuple] = []
    for directory in directories:
        fresh: dict[str, list] = {}
        found, changed = _candidates(directory, _load_cache(directory), fresh)
        rows.extend(found)
        caches.append((directory, fresh, changed))
    rows.sort(key=itemgetter(0, 1), reverse=True)
    shown = rows if limit is None else rows[:limit]
    out: list[Summary] = []
    summarized: set[int] = set()
    total = sum(r[3][0][0] for r in shown if r[3][2] is None) if on_progress is not None else 0
    done = 0
    for modified, _name, path, record, mtime in shown:
        if record[2] is None:
            report = None
            if on_progress is not None:
                def report(position: int, before: int = done) -> None:
                    on_progress(before + position, total)
            record[2] = _summary(Path(path), mtime, report)
            done += record[0][0]
            summarized.add(id(record))
        if record[2] is None:  # gone or no longer a session since it was chosen
            continue
        name, first_user, messages, model = record[2]
        out.append(Summary(path, modified, record[1][1], record[1][2], name, first_user, messages, model))
    for directory, fresh, changed in caches:
        if changed or (summarized and any(id(r) in summarized for r in fresh.values())):
            _save_cache(directory, fresh)
    return out
