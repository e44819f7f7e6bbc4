"""Where sessions live (contract §5), and reading just enough of each file to list or pick one."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import orjson

from .format import is_header
from .reader import parse_line


def home_dir() -> Path:
    return Path(os.environ.get("HARNESSKIT_HOME") or Path.home() / ".harnesskit").expanduser()


NAME_MAX = 255  # bytes in one directory name (Linux, macOS)


def encode_cwd(cwd: str) -> str:
    """pi's directory name for a cwd: leading separator dropped, / \\ : turned into -, wrapped in --.

    A deep cwd can make that longer than a directory name may be (pi then fails to create it):
    such a name keeps its first bytes and ends in a hash of the whole cwd, so it stays valid,
    distinct and the same on every run. Names that fit are exactly pi's."""
    trimmed = cwd.lstrip("/\\")
    for ch in "/\\:":
        trimmed = trimmed.replace(ch, "-")
    name = f"--{trimmed}--"
    if len(os.fsencode(name)) <= NAME_MAX:
        return name
    tail = f"-{hashlib.sha256(os.fsencode(cwd)).hexdigest()[:16]}--"
    room = NAME_MAX - len(tail)
    keep = name[:room]  # whole characters, then fewer until the bytes fit
    while len(os.fsencode(keep)) > room:
        keep = keep[:-1]
    return keep + tail


def sessions_root() -> Path:
    return home_dir() / "sessions"


def session_dir(cwd: str, override: str | os.PathLike[str] | None = None) -> Path:
    """The directory for this cwd's sessions. An override (flag or env) is used flat, as pi."""
    chosen = override or os.environ.get("HARNESSKIT_SESSION_DIR")
    if chosen:
        return Path(chosen).expanduser()
    return sessions_root() / encode_cwd(cwd)


def session_filename(timestamp: str, session_id: str) -> str:
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


def loads(raw: bytes) -> object:
    """orjson, and for what it refuses the stdlib, as the reader does: a lone surrogate escape is
    valid JSON (pi opens such a file), so a session holding one must still be listed and found."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        import json

        try:
            return json.loads(raw, parse_constant=_not_json)
        except (ValueError, RecursionError):
            raise error from None


def _not_json(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def read_header(path: Path) -> dict | None:
    """The header of a session file, reading only its first line (whatever its length), or None."""
    try:
        with path.open("rb") as fp:
            first = fp.readline()
    except OSError:
        return None
    return header_of(first)


def header_of(first: bytes) -> dict | None:
    """The header in a file's first line, read by the reader's rules (a bad UTF-8 byte read as
    U+FFFD, as pi does; nesting up to the reader's limit), or None."""
    header, _, _ = parse_line(first.removeprefix(b"\xef\xbb\xbf").rstrip(b"\r\n"), replace=True)
    return header if isinstance(header, dict) and is_header(header) else None


def session_files(directory: Path) -> list[Path]:
    try:
        return [p for p in directory.iterdir() if p.suffix == ".jsonl" and p.is_file()]
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []


def readable_header(path: Path) -> dict | None:
    """The header, if it is one harnesskit reads (a newer version is not a session we can go on with)."""
    from .migrate import UnsupportedSession, detect

    header = read_header(path)
    if header is None:
        return None
    try:
        detect(header)
    except UnsupportedSession:
        return None
    return header


def find_by_id_prefix(prefix: str, directories: list[Path]) -> list[Path]:
    """Session files whose header id starts with `prefix` (only first lines are read)."""
    return sorted({p for d in directories for p in session_files(d)
                   if str((read_header(p) or {}).get("id", "")).startswith(prefix)})


def most_recent(directory: Path) -> Path | None:
    """The valid session file (full header line parses, a version we read) with the newest mtime."""
    best: tuple[float, str] | None = None
    chosen = None
    for path in session_files(directory):
        if readable_header(path) is None:
            continue
        try:
            key = (path.stat().st_mtime, path.name)
        except OSError:
            continue
        if best is None or key > best:
            best, chosen = key, path
    return chosen


@dataclass(slots=True)
class Summary:
    file: str  # the path (a listing of 100,000 sessions need not build 100,000 Path objects)
    modified: float  # seconds: the last user/assistant message's time (pi's picker order); see activity_ms
    session_id: str
    cwd: str | None
    name: str | None
    first_user: str | None
    messages: int
    model: str | None = None

    @property
    def path(self) -> Path:
        return Path(self.file)


# A line whose JSON `type` is one of these holds one of the words literally, or spells it with a \u
# escape: only such lines need parsing (sound whatever the spacing: `"type": "message"` too).
_WORTH_PARSING = (b"message", b"session_info", b"model_change", b"\\u")


def activity_ms(obj: object) -> float | None:
    """The time a line counts for in pi's picker order (SM buildSessionInfo): a user or assistant message
    with content, at its message timestamp (ms) or else its entry timestamp; None for any other line."""
    if not isinstance(obj, dict) or obj.get("type") != "message":
        return None
    message = obj.get("message")
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant") or "content" not in message:
        return None
    stamp = message.get("timestamp")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return float(stamp) if stamp > 0 else None
    return iso_ms(obj.get("timestamp"))


def iso_ms(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        ms = datetime.fromisoformat(value).timestamp() * 1000
    except (ValueError, OverflowError, OSError):
        return None
    return ms if ms > 0 else None


def summarize(path: Path) -> Summary | None:
    """What `list` shows of one file, without building a tree: header, name, first prompt, count, model,
    and the time of the last user/assistant message. Only lines that can hold such an entry are parsed."""
    try:
        stat = path.stat()
        fp = path.open("rb")
    except OSError:
        return None
    with fp:
        header = header_of(fp.readline())
        if header is None:
            return None
        return summary_of(path, header, stat.st_mtime, fp)


def summary_of(path: Path, header: dict, mtime: float, lines: Iterable[bytes]) -> Summary:
    """The summary of a session from the lines after its header."""
    name = first_user = model = None
    count = 0
    last: float | None = None
    for raw in lines:
        if not any(word in raw for word in _WORTH_PARSING):
            continue
        try:
            entry = loads(raw)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(entry, dict):
            continue
        kind = entry.get("type")
        if kind == "message":
            count += 1
            message = entry.get("message")
            if isinstance(message, dict):
                if first_user is None and message.get("role") == "user":
                    first_user = _text(message.get("content"))
                elif message.get("role") == "assistant" and isinstance(message.get("model"), str):
                    model = message["model"]
            stamp = activity_ms(entry)
            if stamp is not None:
                last = stamp
        elif kind == "session_info":
            if isinstance(entry.get("name"), str):
                name = entry["name"].strip() or None
        elif kind == "model_change" and isinstance(entry.get("modelId"), str):
            model = entry["modelId"]
    modified = (last if last is not None else iso_ms(header.get("timestamp")) or mtime * 1000) / 1000
    cwd = header.get("cwd")
    return Summary(str(path), modified, str(header.get("id")), cwd if isinstance(cwd, str) else None, name,
                   first_user, count, model)


def _text(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return " ".join(t for t in texts if isinstance(t, str)) or None
    return None


def list_sessions(directories: list[Path], limit: int | None = None,
                  on_progress: Callable[[int, int], None] | None = None) -> list[Summary]:
    """Sessions of these directories in pi's picker order, newest first (see session/listing.py)."""
    from .listing import list_sessions as listing

    return listing(directories, limit, on_progress)


def all_session_dirs() -> list[Path]:
    root = sessions_root()
    try:
        return sorted(p for p in root.iterdir() if p.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []
