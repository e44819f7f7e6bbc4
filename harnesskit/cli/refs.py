"""Naming and opening a session on the command line: the same for continue, fork, inspect and validate."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from harnesskit.session import store
from harnesskit.session.loader import Session, SessionError, load_session
from harnesskit.session.reader import Diagnostic
from harnesskit.session.tree import EntryNotFound

from .errors import Fail, warn


def session_path(ref: str, here: Path | None = None) -> Path:
    """The file `ref` names (looked up in `here`, default this directory's sessions, then all), or
    one error line: nothing matched, or the list of what did."""
    try:
        return store.find_session(ref, here if here is not None else store.session_dir(os.getcwd()))
    except store.SessionRefError as error:
        raise Fail(str(error)) from None


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
