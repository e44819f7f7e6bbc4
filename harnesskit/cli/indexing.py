"""What `index`, `search` and `usage` share: the catalog brought up to date, with a progress bar on
a terminal, and the date options."""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from harnesskit.session import catalog, store

from .errors import Fail, warn

PROGRESS_AFTER = 1.0  # seconds of reading before a bar is worth showing


def sources() -> list[catalog.Source]:
    """Every session file the index covers: pi's layout under $HARNESSKIT_HOME, the flat session
    directory of HARNESSKIT_SESSION_DIR when it is set, and Claude Code's and Codex's stores."""
    directories = store.all_session_dirs()
    override = os.environ.get("HARNESSKIT_SESSION_DIR")
    if override:
        directories.append(Path(override).expanduser())
    return [*catalog.pi_sources(directories), *catalog.harness_sources()]


class _Progress:
    """Bytes read of the total, on stderr, only when it is a terminal and reading takes a while."""

    def __init__(self, quiet: bool) -> None:
        self.enabled = not quiet and sys.stderr.isatty()
        self.started = time.monotonic()
        self.shown = 0
        self.bar = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            if time.monotonic() - self.started < PROGRESS_AFTER:
                return
            self.bar = click.progressbar(length=max(total, 1), label="indexing", file=sys.stderr)
        self.bar.update(done - self.shown)
        self.shown = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.render_finish()


def refreshed(quiet: bool = False, rebuild: bool = False, only: list[catalog.Source] | None = None
              ) -> tuple[sqlite3.Connection, catalog.UpdateStats]:
    """The catalog, up to date (with `only`, for just those files). Works without a usable database
    file: one in memory stands in."""
    path = catalog.default_path(store.home_dir())
    if rebuild:
        catalog.remove(path)
    found = only if only is not None else sources()
    progress = _Progress(quiet)
    try:
        conn, note, stats = catalog.refresh(path, found, progress, partial=only is not None)
    finally:
        progress.close()
    if note and not quiet:
        warn(note)
    return conn, stats


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
        if end:
            day += timedelta(days=1)
        return int(day.timestamp() * 1000)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise Fail(f"{option} {value!r}: expected YYYY-MM-DD, YYYYMMDD or an ISO time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)
