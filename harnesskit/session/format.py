"""Constants of the pi session format (v3) and the small constructors every writer shares.

Everything here matches what pi 0.73.1 writes, so files we write open in pi (contract §4).
"""

from __future__ import annotations

import os
import time
from collections.abc import Container
from datetime import UTC, datetime, tzinfo
from pathlib import Path

CURRENT_VERSION = 3
FSYNC_POLICIES = ("always", "turn", "never")  # the writer's durability: fsync every entry, each turn, never
HIGHEST_READABLE = CURRENT_VERSION

ENTRY_TYPES = (
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
)
ROLES = ("user", "assistant", "toolResult", "bashExecution", "custom")
STOP_REASONS = ("stop", "length", "toolUse", "error", "aborted")


def home_dir() -> Path:
    """$HARNESSKIT_HOME, else ~/.harnesskit: sessions, the config file and caches live under it."""
    return Path(os.environ.get("HARNESSKIT_HOME") or Path.home() / ".harnesskit").expanduser()


def zero_usage() -> dict:
    """pi needs `usage` to be an object on every assistant message (pi-reference §9)."""
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def iso_now() -> str:
    """ISO 8601 UTC with milliseconds and Z, like JavaScript's toISOString()."""
    return iso_from_ms(int(time.time() * 1000))


def iso_from_ms(ms: int) -> str:
    """pi's ISO form of a time in ms; the caller makes sure a datetime holds it (`datetime_at`)."""
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def datetime_at(when: float | None, tz: tzinfo | None = None, *, ms: bool = False) -> datetime | None:
    """The moment `when` seconds (or ms) after the Unix epoch, local unless `tz`; None where no
    datetime holds it. Every time shown goes through here: a file's timestamp may be in
    microseconds (year 57971 read as ms), NaN or past the platform's time_t, and must show as
    unknown rather than end the command."""
    if when is None:
        return None
    try:
        return datetime.fromtimestamp(when / 1000 if ms else when, tz)
    except (ValueError, OverflowError, OSError):
        return None


def shown_time(when: float | None, tz: tzinfo | None = None, *, ms: bool = False) -> str:
    """A time as listings and reports show it ("YYYY-MM-DD HH:MM"), "?" where none can be shown."""
    moment = datetime_at(when, tz, ms=ms)
    return "?" if moment is None else moment.strftime("%Y-%m-%d %H:%M")


def ms_now() -> int:
    return int(time.time() * 1000)


def new_session_id() -> str:
    """A UUIDv7 as pi draws (time-ordered), from os.urandom: neither uuid nor secrets (with hmac
    and hashlib) is loaded for it, and start-up counts."""
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms_now() & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 68 & 0xFFF) << 64
    value |= 0b10 << 62 | (rand & ((1 << 62) - 1))
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def new_entry_id(taken: Container[str]) -> str:
    """8 lowercase hex (os.urandom, as secrets.token_hex draws them), redrawn on collision (pi: up
    to 100 times, then a full UUID)."""
    for _ in range(100):
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            return candidate
    import uuid

    return str(uuid.uuid4())


def session_header(cwd: str, *, session_id: str | None = None, parent_session: str | None = None) -> dict:
    header = {
        "type": "session",
        "version": CURRENT_VERSION,
        "id": session_id or new_session_id(),
        "timestamp": iso_now(),
        "cwd": cwd,
    }
    if parent_session is not None:
        header["parentSession"] = parent_session
    return header


def entry(kind: str, entry_id: str, parent_id: str | None, **payload: object) -> dict:
    """An entry in pi's key order: type, id, parentId, timestamp, payload."""
    return {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": iso_now(), **payload}


def is_header(obj: dict) -> bool:
    """pi's header test (type "session" with a string id), plus the tutorial's "header" line."""
    kind = obj.get("type")
    return (kind == "session" and isinstance(obj.get("id"), str)) or kind == "header"


def session_name(entry: dict, current: str | None) -> str | None:
    """The session's name after a session_info entry: its name stripped, a blank one clearing it;
    a name that is not a string changes nothing."""
    value = entry.get("name")
    return (value.strip() or None) if isinstance(value, str) else current
