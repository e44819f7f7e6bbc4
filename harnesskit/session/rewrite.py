"""`migrate`'s safe rewrite (contract §4): a new file beside the old, fsync, FILE.bak, atomic rename.

The only code in harnesskit that replaces a session file. It refuses anything it could not read
fully, so a rewrite can never drop a line.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .fork import has_reply
from .formats import sniff
from .loader import Session, SessionError, load_session, open_binary
from .stream import read_header
from .writer import create_synced, encode, lock, replace_synced


class MigrationRefused(Exception):
    pass


@dataclass
class Plan:
    path: Path
    source: str  # the dialect, e.g. "pi v1"
    entries: int | None  # None: not counted (a v3 file, whose entries are not read)
    needed: bool
    replied: bool = True  # has an assistant message: without one, pi damages the file when continuing it


def plan(path: Path, on_progress: Callable[[int], None] | None = None) -> tuple[Plan, Session | None]:
    """What migrating `path` means. A v3 file is judged by its header alone (nothing to migrate: its
    entries are not read); a legacy one is read in full (None: no session, nothing to do)."""
    try:
        if not path.is_file() or sniff(path) == "pi":  # (a FIFO is not sniffed: that would eat its lines)
            with open_binary(path) as fp:
                dialect = read_header(fp, path)[1]
            if not dialect.legacy:
                return Plan(path, str(dialect), None, False), None
        session = load_session(path, exact=True, on_progress=on_progress)
    except SessionError as error:
        raise MigrationRefused(str(error)) from None
    if session.dialect.foreign:
        raise MigrationRefused(f"{path}: a {session.dialect} file belongs to another harness and is never rewritten; "
                               f"`harnesskit import {path}` writes a pi session from it")
    needed = session.dialect.legacy
    if needed and not isinstance(session.header.get("id"), str):  # a tutorial header: nothing checked its id
        has = "no id" if "id" not in session.header else f"{_shown(session.header['id'])} as its id"
        raise MigrationRefused(f"{path}: the header has {has}: pi takes such a file for no session at all (and "
                               "starts it anew); give the header a string id first; nothing was changed")
    if needed:
        unread = [d for d in session.diagnostics if d.severity == "error" and d.offset >= 0]
        if unread:
            first = unread[0]
            raise MigrationRefused(
                f"{path}: cannot read it fully ({len(unread)} unreadable line(s), first: line {first.line}: "
                f"{first.reason}); nothing was changed"
            )
    return Plan(path, str(session.dialect), len(session.entries), needed, has_reply(session.entries)), session


def migrate_file(path: Path, on_progress: Callable[[int], None] | None = None) -> Plan:
    """Rewrite one legacy file as v3; a v3 file is left untouched (migrating is idempotent).
    `on_progress` hears how far the reading of it has come."""
    result, session = plan(path, on_progress)
    if not result.needed or session is None:
        return result
    backup = path.with_name(path.name + ".bak")
    if backup.exists():
        raise MigrationRefused(f"{path}: {backup.name} already exists; move it away first (nothing was changed)")
    data = encode(session.header) + b"".join(encode(e) for e in session.entries)
    temp = path.with_name(f".{path.name}.migrating-{os.getpid()}")
    backup_temp = path.with_name(f".{backup.name}.writing-{os.getpid()}")
    with open(path, "rb") as original:
        lock(original.fileno(), path)
        try:
            create_synced(temp, data)
            try:
                check = load_session(temp, exact=True)
            except SessionError as error:  # a refusal naming the user's file, never the temporary one
                reason = str(error).removeprefix(f"{temp}: ")
                raise MigrationRefused(f"{path}: the migrated copy does not read back ({reason}); "
                                       "nothing was changed") from None
            if check.entries != session.entries or check.header != session.header:
                raise MigrationRefused(f"{path}: the migrated copy did not read back the same; nothing was changed")
            # FILE.bak is complete or absent (a full disk must not leave a torn one that blocks a retry)
            create_synced(backup_temp, copy_of=original.fileno())
            shutil.copystat(path, backup_temp)
            os.rename(backup_temp, backup)  # made durable with the replace below: the same directory
            replace_synced(temp, path)
        finally:
            temp.unlink(missing_ok=True)
            backup_temp.unlink(missing_ok=True)
    return result


def _shown(value: object) -> str:
    """A JSON value for a message: a number, true, false or null as JSON (integers beyond 64 bits too:
    the file was read exactly), an array or object by its kind (it may be as big or deep as the line)."""
    if isinstance(value, list | dict):
        return "an array" if isinstance(value, list) else "an object"
    return json.dumps(value)
