"""The session layer's front door: what the CLI needs of sessions, named here once.

Names are loaded on first use (PEP 562), so `import harnesskit.session` costs nothing and a
command pays only for the modules it touches (inspect never loads the writer, chat never the
schema engines). Submodules (`harnesskit.session.store`, ...) import as usual."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "LiveSession": "live", "CannotAppend": "live", "ForkFailed": "live",
    "SessionLocked": "writer", "FSYNC_POLICIES": "format",
    "Session": "loader", "SessionError": "loader", "load_session": "loader",
    "EntryNotFound": "tree", "build_context": "tree",
    "ROOT": "fork", "ForkError": "fork", "fork_point": "fork", "write_fork": "fork",
}

__all__ = [  # noqa: RUF022 - grouped as _WHERE is
    "LiveSession", "CannotAppend", "ForkFailed", "SessionLocked", "FSYNC_POLICIES",
    "Session", "SessionError", "load_session", "EntryNotFound", "build_context",
    "ROOT", "ForkError", "fork_point", "write_fork",
]

if TYPE_CHECKING:
    from .fork import ROOT, ForkError, fork_point, write_fork
    from .format import FSYNC_POLICIES
    from .live import CannotAppend, ForkFailed, LiveSession
    from .loader import Session, SessionError, load_session
    from .tree import EntryNotFound, build_context
    from .writer import SessionLocked


def __getattr__(name: str) -> Any:  # noqa: ANN401 - whatever the name is
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'harnesskit.session' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
