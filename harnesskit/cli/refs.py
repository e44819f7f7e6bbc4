"""Naming a session on the command line: the same for continue, fork, inspect and validate."""

from __future__ import annotations

import os
from pathlib import Path

from harnesskit.session import store

from .errors import Fail

REF_HELP = "a path, a session id prefix, or a session name (/name)"


def session_path(ref: str, here: Path | None = None) -> Path:
    """The file `ref` names (looked up in `here`, default this directory's sessions, then all), or
    one error line: nothing matched, or the list of what did."""
    try:
        return store.find_session(ref, here if here is not None else store.session_dir(os.getcwd()))
    except store.SessionRefError as error:
        raise Fail(str(error)) from None
