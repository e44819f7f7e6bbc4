"""What `index`, `search` and `usage` share: the catalog brought up to date, with a progress bar on
a terminal, and the date options."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from harnesskit.session import catalog, store

from .errors import Fail, warn
from .progress import progress


def pi_directories() -> list[Path]:
    """The directories of pi's session files the index covers: pi's layout under $HARNESSKIT_HOME,
    and the flat session directory of HARNESSKIT_SESSION_DIR when it is set."""
    directories = store.all_session_dirs()
    override = os.environ.get("HARNESSKIT_SESSION_DIR")
    if override:
        directories.append(Path(override).expanduser())
    return directories


def refreshed(quiet: bool = False, rebuild: bool = False, only: list[catalog.Source] | None = None
              ) -> tuple[sqlite3.Connection, catalog.UpdateStats]:
    """The catalog, up to date (with `only`, for just those files). Works without a usable database
    file: one in memory stands in."""
    path = catalog.default_path(store.home_dir())
    if rebuild:
        catalog.remove(path)
    found = only if only is not None else list(catalog.harness_sources())
    directories = pi_directories() if only is None else []  # listed by the update itself, one stat each
    with progress(0, "indexing", quiet) as bar:
        def report(done: int, total: int) -> None:  # the total is known once the changed files are
            if bar is not None:
                bar.total = max(total, 1)  # type: ignore[attr-defined]
                bar(done)

        conn, note, stats = catalog.refresh(path, found, report, partial=only is not None, directories=directories)
    if note and not quiet:
        warn(note)
    return conn, stats


_DAY_MS = 86_400_000


def utf8(value: str | None, what: str) -> str | None:
    """`value`, or one error line where it holds bytes that are not UTF-8 (Python keeps them as lone
    surrogates): the index holds UTF-8 text only, so nothing in it could match."""
    if value is not None and not catalog.is_utf8(value):
        raise Fail(f"{what} {value!r} is not UTF-8: the index holds UTF-8 text only")
    return value


T = TypeVar("T")
_DAMAGED = {11, 26}  # SQLITE_CORRUPT (and its extended codes), SQLITE_NOTADB


def damaged(error: sqlite3.Error) -> bool:
    """Whether an error says the database file is damaged (not busy, full or read-only: those pass)."""
    code = getattr(error, "sqlite_errorcode", None)
    return (code is not None and code & 0xFF in _DAMAGED) or "vtable constructor failed" in str(error)


def answered(query: Callable[[sqlite3.Connection], T]) -> T:
    """`query` asked of the index brought up to date. A damaged page the update did not read (it reads
    the files' rows only) shows when a query reaches it: the index is a cache, so it is rebuilt and
    asked again, once, instead of failing every later run."""
    conn, _ = refreshed()
    try:
        return query(conn)
    except sqlite3.DatabaseError as error:
        if not damaged(error):
            raise
        conn.close()
        path = catalog.default_path(store.home_dir())
        warn(f"{path}: damaged index ({error}); rebuilt")
        conn, _ = refreshed(rebuild=True)
        return query(conn)
    finally:
        conn.close()


def parse_day(value: str | None, option: str, end: bool = False) -> int | None:
    """YYYY-MM-DD, YYYYMMDD or an ISO time, as Unix ms (UTC). `end`: the day's end (an --until day
    is included whole)."""
    if value is None:
        return None
    text = value.strip()
    for layout in ("%Y-%m-%d", "%Y%m%d"):
        try:
            day = datetime.strptime(text, layout).replace(tzinfo=UTC)
        except ValueError:
            continue
        return int(day.timestamp() * 1000) + (_DAY_MS if end else 0)  # 9999-12-31's end: no datetime
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise Fail(f"{option} {value!r}: expected YYYY-MM-DD, YYYYMMDD or an ISO time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)
