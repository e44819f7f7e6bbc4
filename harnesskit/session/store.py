"""Where sessions live (contract §5), and reading just enough of each file to list or pick one."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
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


@dataclass
class Summary:
    path: Path
    modified: float
    session_id: str
    cwd: str | None
    name: str | None
    first_user: str | None
    messages: int


_MESSAGE = b'"type":"message"'
_INFO = b'"type":"session_info"'


def summarize(path: Path) -> Summary | None:
    """What `list` shows of one file, without building a tree: header, name, first prompt, count.

    Lines are tested as bytes first and only the few that matter (session_info, the first user
    message) are decoded, so a listing of thousands of sessions stays fast.
    """
    try:
        stat = path.stat()
        fp = path.open("rb")
    except OSError:
        return None
    with fp:
        header = header_of(fp.readline())
        if header is None:
            return None
        name = None
        first_user = None
        count = 0
        for raw in fp:
            if _MESSAGE in raw:
                count += 1
                if first_user is None and b'"role":"user"' in raw:
                    first_user = _first_text(raw)
            elif _INFO in raw:
                try:
                    info = loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(info, dict) and isinstance(info.get("name"), str):
                    name = info["name"].strip() or None
    return Summary(path, stat.st_mtime, str(header.get("id")), header.get("cwd"), name, first_user, count)


def _first_text(raw: bytes) -> str | None:
    try:
        entry = loads(raw)
    except orjson.JSONDecodeError:
        return None
    message = entry.get("message") if isinstance(entry, dict) else None
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return " ".join(t for t in texts if isinstance(t, str)) or None
    return None


def list_sessions(directories: list[Path]) -> list[Summary]:
    summaries = [s for d in directories for p in session_files(d) if (s := summarize(p)) is not None]
    summaries.sort(key=lambda s: (s.modified, s.path.name), reverse=True)
    return summaries


def all_session_dirs() -> list[Path]:
    root = sessions_root()
    try:
        return sorted(p for p in root.iterdir() if p.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return []
