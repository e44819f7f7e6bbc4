"""Naming and opening a session on the command line: the same for continue, fork, inspect and validate."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from harnesskit.session import store
from harnesskit.session.loader import Session, SessionError, load_session
from harnesskit.session.reader import Diagnostic
from harnesskit.session.tree import EntryNotFound

from .errors import Fail, warn


def session_path(ref: str, here: Path | None = None, pipes: bool = False) -> Path:
    """The file `ref` names (looked up in `here`, default this directory's sessions, then all), or
    one error line: nothing matched, or the list of what did, or it is no file to read (`regular`)."""
    try:
        path = store.find_session(ref, here if here is not None else store.session_dir(os.getcwd()))
    except store.SessionRefError as error:
        raise Fail(str(error)) from None
    return regular(path, pipes)


_SPECIAL = ((stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


def regular(path: Path, pipes: bool = False) -> Path:
    """`path`, unless it is a device or a socket (no session file: /dev/zero is one line without
    end), or a pipe (`<(cmd)`, a FIFO) where `pipes` is False: one error line then. A pipe is read
    as it comes only by what reads a file once from its start (the table, --json, --stats, --tree,
    `migrate --check`); the rest take its size from its stat, seek in it or read it twice, which a
    pipe cannot give: it looked empty, failed on a seek, or blocked for ever."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return path  # not there, or not readable: each command says so its own way
    for test, kind in ((stat.S_ISFIFO, "a pipe"), *_SPECIAL) if not pipes else _SPECIAL:
        if test(mode):
            raise Fail(f"{path}: {kind}, not a regular file: save what it gives to a file first")
    return path


def warn_diagnostic(path: str | Path, d: Diagnostic) -> None:
    where = f"line {d.line}: " if d.line > 0 else ""
    warn(f"{path}: {where}{d.reason}" + (" (skipped)" if d.severity == "error" and d.offset >= 0 else ""))


def open_for_reading(path: str, load: Callable[..., Session] = load_session) -> Session:
    """Load a session, or fail with one line (exit 2); skipped lines are listed on stderr. A load that
    takes more than a second shows a progress bar on a terminal's stderr (`load(path, on_progress=)`)."""
    from .progress import file_size, progress

    try:
        with progress(file_size(path), path) as report:
            session = load(path, on_progress=report)
    except SessionError as error:
        raise Fail(str(error)) from None
    for d in session.diagnostics:
        warn_diagnostic(path, d)
    return session


def resolve_leaf(session: Session, ref: str | None) -> str | None:
    if ref is None:
        return session.tree.leaf_id
    try:
        return session.tree.resolve(ref)
    except EntryNotFound as error:
        raise Fail(f"{session.path}: {error}") from None
