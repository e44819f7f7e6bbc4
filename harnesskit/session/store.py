"""Where sessions live (contract §5), and reading just enough of each file to list or pick one."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from .format import home_dir, is_header, session_name
from .reader import LineTooLong, open_lines, parse_line, stdlib_loads

if TYPE_CHECKING:
    from .snapshot import Scan

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
        try:
            return stdlib_loads(raw)
        except (ValueError, RecursionError):
            raise error from None


def read_header(path: Path) -> dict | None:
    """The header of a session file, reading only its first line (whatever its length), or None."""
    try:
        with open_lines(path) as fp:
            first = fp.readline()
    except OSError:  # a first line past MAX_LINE too: no header
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


class SessionRefError(Exception):
    """A session reference that names no session, or more than one (`matches`, for the message)."""

    def __init__(self, ref: str, matches: list[Summary]) -> None:
        self.ref = ref
        self.matches = matches
        if not matches and (ref.endswith(".jsonl") or "/" in ref):
            message = f"{ref}: no such file or directory (nor a session id or name)"
        elif not matches:
            message = f"no session file, session id or session name matches {ref!r}"
        else:
            shown = "; ".join(_describe(m) for m in matches[:5])
            more = f"; and {len(matches) - 5} more" if len(matches) > 5 else ""
            message = (f"{ref!r} matches {len(matches)} sessions: {shown}{more} "
                       "(give more of the id, the name in full, or a path)")
        super().__init__(message)


def _describe(summary: Summary) -> str:
    said = summary.name or summary.first_user or "(no message)"
    said = " ".join(said.split())
    said = said if len(said) <= 40 else said[:39] + "…"
    return f"{summary.session_id} {said!r} {summary.path}"  # uuidv7 ids share their first digits


def find_session(ref: str, here: Path) -> Path:
    """The one way every command names a session: a path as given; else a session id prefix or a
    session name (set by /name), looked up in `here` first, then in every session directory.
    Raises SessionRefError when nothing, or more than one session, matches."""
    candidate = Path(ref).expanduser()
    if candidate.exists():
        return candidate
    if ref.endswith(".jsonl") or not ref.strip():  # a path that is not there
        raise SessionRefError(ref, [])
    wanted = " ".join(ref.split()).casefold()
    for directories in ([here], [d for d in all_session_dirs() if d != here]):
        matches = [s for d in directories for p in sorted(session_files(d)) if (s := summarize(p)) is not None
                   and (s.session_id.startswith(ref) or (s.name is not None and s.name.casefold() == wanted))]
        if len(matches) == 1:
            return matches[0].path
        if matches:
            raise SessionRefError(ref, matches)
    raise SessionRefError(ref, [])


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


def js_float(number: int | float) -> float:
    """A JSON number as JavaScript reads it: an integer past a float's range is an infinity (Python's
    float() raises OverflowError on it, and a session file may hold one)."""
    try:
        return float(number)
    except OverflowError:
        return float("inf") if number > 0 else float("-inf")


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
        return js_float(stamp) if stamp > 0 else None
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
        fp = open_lines(path)
    except OSError:
        return None
    with fp:
        try:
            header = header_of(fp.readline())
            if header is None:
                return None
            return summary_of(path, header, stat.st_mtime, fp)
        except LineTooLong:  # no session file: the reader says so where one is read
            return None


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
                    first_user = first_text(message.get("content"))
                elif message.get("role") == "assistant" and isinstance(message.get("model"), str):
                    model = message["model"]
            stamp = activity_ms(entry)
            if stamp is not None:
                last = stamp
        elif kind == "session_info":
            name = session_name(entry, name)
        elif kind == "model_change" and isinstance(entry.get("modelId"), str):
            model = entry["modelId"]
    modified = (last if last is not None else iso_ms(header.get("timestamp")) or mtime * 1000) / 1000
    cwd = header.get("cwd")
    return Summary(str(path), modified, str(header.get("id")), cwd if isinstance(cwd, str) else None, name,
                   first_user, count, model)


def first_text(content: object) -> str | None:
    """A message's text as `list` shows it: a string, or its text blocks joined by spaces."""
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


def list_rows(directories: list[Path], limit: int | None = None,
              on_progress: Callable[[int, int], None] | None = None, scanned: Scan | None = None) -> list[tuple]:
    """list_sessions as tuples of Summary's fields, in its order: a listing of 100,000 need no object each.
    `scanned`: the directories' snapshot.Scan when the caller took it (it checked its output cache by it)."""
    from .listing import list_rows as listing

    return listing(directories, limit, on_progress, scanned)


def all_session_dirs() -> list[Path]:
    root = sessions_root()
    try:
        return sorted(p for p in root.iterdir() if p.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []
