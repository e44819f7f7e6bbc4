"""pi v1, pi v2 and the tutorial's v1 files -> v3, in memory, one entry at a time (contract §1).

v1 ids are derived from the session id and the line number, so every run migrates a file to the
same ids (pi draws random ones) and `--leaf`, `fork --at` work the same each time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .format import CURRENT_VERSION, HIGHEST_READABLE, zero_usage


class UnsupportedSession(Exception):
    """A file we must refuse rather than guess at (newer version, unknown header)."""


@dataclass(frozen=True)
class Dialect:
    name: str  # "pi", "tutorial", or another harness's format ("claude-code", "codex")
    version: int

    @property
    def legacy(self) -> bool:
        return self.name != "pi" or self.version < CURRENT_VERSION

    @property
    def foreign(self) -> bool:
        """Another harness's file: read through its reader, never appended to or rewritten."""
        return self.name not in ("pi", "tutorial")

    def __str__(self) -> str:
        if self.foreign:
            return self.name
        return f"{'tutorial ' if self.name == 'tutorial' else 'pi '}v{self.version}"


def detect(header: dict) -> Dialect:
    """Which dialect a header line speaks; refuses what we cannot read."""
    kind = header.get("type")
    version = header.get("version")
    if kind == "header":
        if version != 1:
            raise UnsupportedSession(f"tutorial header version {version!r}; the highest we read is 1")
        return Dialect("tutorial", 1)
    if kind != "session" or not isinstance(header.get("id"), str):
        raise UnsupportedSession("the first JSON object is not a session header")
    if version is None:
        return Dialect("pi", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UnsupportedSession(f"session version {version!r} is not a version we know")
    if version > HIGHEST_READABLE:
        raise UnsupportedSession(
            f"session version {version} is newer than this harnesskit reads (highest: {HIGHEST_READABLE})"
        )
    return Dialect("pi", version)


def iso_to_ms(value: object) -> int | None:
    """JavaScript's new Date(iso).getTime(), None where pi would get NaN."""
    if not isinstance(value, str):
        return None
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def migrate_header(header: dict, dialect: Dialect) -> dict:
    if not dialect.legacy:
        return header
    migrated = dict(header)
    if dialect.name == "tutorial":
        migrated["type"] = "session"
        created = migrated.pop("createdAt", None)
        migrated.setdefault("timestamp", created)
    # pi assigns header.version: a header that has the key keeps it in place (JavaScript keeps
    # an object's key order), one without gets it last (a v1 header)
    migrated["version"] = CURRENT_VERSION
    return migrated


@dataclass
class Migrator:
    """Carries what migrating one entry needs to know about the entries before it."""

    header: dict
    dialect: Dialect
    _previous_id: str | None = None
    _ids_by_position: list[str | None] = field(default_factory=list)
    _taken: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._ids_by_position.append(None)  # position 0 is the header, as in pi's array
        self._created_ms = iso_to_ms(self.header.get("createdAt") or self.header.get("timestamp"))

    def entry(self, obj: dict, line: int) -> dict:
        """The v3 form of one entry (a new dict when anything changes; v3 entries pass as they are)."""
        if not self.dialect.legacy:
            return obj
        if self.dialect.name == "tutorial":
            return self._tutorial(obj)
        migrated = dict(obj)
        if self.dialect.version == 1:
            entry_id = self._v1_id(line)
            migrated["id"] = entry_id
            migrated["parentId"] = self._previous_id
            self._previous_id = entry_id
            self._ids_by_position.append(entry_id)
            if migrated.get("type") == "compaction" and "firstKeptEntryIndex" in migrated:
                index = migrated.pop("firstKeptEntryIndex")
                if isinstance(index, int) and 0 <= index < len(self._ids_by_position):
                    migrated["firstKeptEntryId"] = self._ids_by_position[index]
        message = migrated.get("message")
        if isinstance(message, dict) and message.get("role") == "hookMessage":
            migrated["message"] = {**message, "role": "custom"}
        return migrated

    def _v1_id(self, line: int) -> str:
        import hashlib  # only v1 files need it

        seed = f"{self.header.get('id')}:{line}"
        salt = 0
        while True:
            candidate = hashlib.sha256(f"{seed}:{salt}".encode()).hexdigest()[:8]
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate
            salt += 1

    def _tutorial(self, obj: dict) -> dict:
        migrated = dict(obj)
        migrated.setdefault("parentId", None)
        if "timestamp" not in migrated and self.header.get("createdAt") is not None:
            migrated["timestamp"] = self.header["createdAt"]
        message = migrated.get("message")
        if isinstance(message, dict):
            message = dict(message)
            if self._created_ms is not None:
                message.setdefault("timestamp", self._created_ms)
            if message.get("role") == "assistant":
                # pi needs usage on every assistant; the tutorial recorded no model.
                message.setdefault("api", "unknown")
                message.setdefault("provider", "unknown")
                message.setdefault("model", "unknown")
                message.setdefault("usage", zero_usage())
                message.setdefault("stopReason", "stop")
            migrated["message"] = message
        return migrated
