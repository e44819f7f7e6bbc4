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


def session_path(ref: str, here: Path | None = None) -> Path:
    """The file `ref` names (looked up in `here`, default this directory's sessions, then all), or
    one error line: nothing matched, or the list of what did, or it is no regular file."""
    try:
        path = store.find_session(ref, here if here is not None else store.session_dir(os.getcwd()))
    except store.SessionRefError as error:
        raise Fail(str(error)) from None
    return regular(path)


_SPECIAL = ((stat.S_ISFIFO, "a pipe"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
            (stat.S_ISSOCK, "a socket"))


def regular(path: Path) -> Path:
    """`path`, unless it is a pipe, a device or a socket (`<(cmd)`, a FIFO, /dev/zero): one error line
    then. The readers take a file's size from its stat and read it more than once (the header, then
    the rest, by two processes), which such a file cannot give: it looked empty, or blocked for ever,
    or (/dev/zero) grew one line without end. Standard input is `-` where a command reads it."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return path  # not there, or not readable: each command says so its own way
    for test, kind in _SPECIAL:
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
