"""`harnesskit index`: bring the cross-session index up to date (search and usage do it too)."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import click

from harnesskit.session import catalog, store

from .errors import Fail
from .indexing import refreshed, utf8
from .refs import regular
from .screen import echo


def _source(file: Path) -> catalog.Source:
    """FILE as the index keys it (its real path), or one error line: a name that is not UTF-8 (the
    index holds UTF-8 text only) or a symlink loop. A file that is gone is its row to drop."""
    utf8(os.fspath(file), "FILE")
    try:
        os.stat(file)
    except OSError as error:
        if error.errno == errno.ELOOP:  # Path.resolve raises RuntimeError for it (Python 3.11, 3.12)
            raise Fail(f"{file}: {error.strerror}") from None
    return catalog.Source(regular(file).resolve())


@click.command("index")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--rebuild", is_flag=True, help="Throw the index away and read every session file again.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar, no summary.")
def index(files: tuple[Path, ...], rebuild: bool, quiet: bool) -> None:
    """Update $HARNESSKIT_HOME/index.sqlite from the session files (or just FILES).

    Session files are append-only, so a file that grew is read on from where the last update
    stopped; one that changed otherwise is read again, one that is gone is dropped. The index is
    a cache: delete it at any time, and a damaged one is rebuilt.

    \b
    Examples:
      harnesskit index
      harnesskit index --rebuild
      harnesskit index ~/.harnesskit/sessions/--home-me-proj--/*.jsonl
    """
    if files and rebuild:
        raise Fail("--rebuild reads every session file: give no FILES with it")
    started = time.monotonic()
    conn, stats = refreshed(quiet, rebuild, only=[_source(f) for f in files] or None)
    conn.close()
    if not quiet:
        echo(f"{catalog.default_path(store.home_dir())}: {stats.files} session files "
                   f"({stats.read_full} read, {stats.read_on} read on, {stats.unchanged} unchanged, "
                   f"{stats.dropped} dropped; {stats.messages} messages added) in "
                   f"{time.monotonic() - started:.2f} s")
