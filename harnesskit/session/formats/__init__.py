"""Other harnesses' session files read into the core's records: one reader per format.

A foreign reader turns the streaming reader's records into pi-v3-shaped entries (the first record
it yields is a synthesized v3 header) plus diagnostics, so tree, context, stats and the structural
checks stay one code path. `sniff` tells the formats apart from the first lines.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import orjson

from ..reader import open_lines

FORMATS = ("pi", "claude", "codex")
#: the dialect name each foreign format is shown as
DIALECTS = {"claude": "claude-code", "codex": "codex"}

_CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_CLAUDE_KEYS = ("uuid", "parentUuid", "sessionId", "leafUuid", "messageId")
_SNIFF_LINES = 20
_SNIFF_BYTES = 8 << 20


def sniff(path: str | os.PathLike[str]) -> str:
    """"pi", "claude" or "codex", from the first objects of the file (pi when nothing tells)."""
    try:
        fp = open_lines(path)
    except OSError:
        return "pi"
    with fp, contextlib.suppress(OSError):  # a line past MAX_LINE: the reader says so
        read = 0
        for number, raw in enumerate(fp):
            read += len(raw)
            kind = _kind(raw)
            if kind is not None:
                return kind
            if number >= _SNIFF_LINES or read >= _SNIFF_BYTES:
                break
    return "pi"


def _kind(raw: bytes) -> str | None:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    if not isinstance(kind, str):
        return None
    if kind in ("session", "header"):
        return "pi"
    if kind in _CODEX_TYPES and isinstance(obj.get("payload"), dict):
        return "codex"
    if isinstance(kind, str) and any(key in obj for key in _CLAUDE_KEYS):
        return "claude"
    return None


def reader_for(fmt: str, path: Path):  # noqa: ANN201 - a ClaudeReader or CodexReader
    """The reader of a foreign format; `.convert(records)` yields the v3 header first, then entries
    and diagnostics (a diagnostic of severity "info" is a remark only `validate --strict` shows)."""
    if fmt == "claude":
        from .claude import ClaudeReader

        return ClaudeReader(path)
    if fmt == "codex":
        from .codex import CodexReader

        return CodexReader(path)
    raise ValueError(f"no reader for format {fmt!r}")

