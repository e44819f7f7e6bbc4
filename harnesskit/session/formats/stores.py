"""Where other harnesses keep the sessions of a directory, and a line about each for `list`.

Claude Code: `$CLAUDE_CONFIG_DIR` (default `~/.claude`) `/projects/<cwd, every non-alphanumeric
character as ->/<session>.jsonl` (subagent transcripts, `agent-*.jsonl` and `<session>/subagents/`,
are not sessions of their own). Codex: `$CODEX_HOME` (default `~/.codex`)
`/sessions/YYYY/MM/DD/rollout-*.jsonl`, the directory told by each rollout's `session_meta.cwd`.
Files are read only as far as the answer needs (bytes tests first, like the pi listing).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from ..reader import open_lines

_SCAN_LINES = 400  # how far into a file the first prompt is looked for


@dataclass
class Found:
    harness: str  # "claude" or "codex"
    path: str  # a listing of thousands of sessions need not build a Path each
    modified: float
    session_id: str
    cwd: str | None
    first_user: str | None
    messages: int


def claude_root() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser() / "projects"


def claude_project_dir(cwd: str) -> Path:
    return claude_root() / re.sub(r"[^A-Za-z0-9]", "-", cwd)


def codex_root() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser() / "sessions"


def claude_files(cwd: str) -> list[str] | None:
    """Every `*.jsonl` of this directory's project (subagents' `agent-*` among them: an index covers
    them too); None when the store itself is not there."""
    if not claude_root().is_dir():
        return None
    return _files(str(claude_project_dir(cwd)), lambda name: name.endswith(".jsonl"))


def codex_files() -> list[str] | None:
    """Every dated rollout of the store, `*/*/*/rollout-*.jsonl` (any directory's: the cwd is inside
    each); None when the store itself is not there."""
    root = codex_root()
    if not root.is_dir():
        return None
    days = [d for y in _dirs(str(root)) for m in _dirs(y) for d in _dirs(m)]
    return [p for day in days for p in _files(day, _rollout)]


def _rollout(name: str) -> bool:
    return name.startswith("rollout-") and name.endswith(".jsonl")


def _files(directory: str, named: Callable[[str], bool]) -> list[str]:
    """The files directly in `directory` whose name passes (a directory entry's type, no stat each)."""
    try:
        with os.scandir(directory) as entries:
            return [e.path for e in entries if named(e.name) and _is(e.is_file)]
    except OSError:
        return []


def _dirs(directory: str) -> list[str]:
    try:
        with os.scandir(directory) as entries:
            return [e.path for e in entries if _is(e.is_dir)]
    except OSError:
        return []


def _is(test: Callable[[], bool]) -> bool:
    try:
        return test()
    except OSError:
        return False


def claude_sessions(cwd: str) -> list[Found]:
    every = claude_files(cwd) or []
    indexed = _from_index("claude", every, cwd)
    if indexed is not None:
        return _newest_first([f for f in indexed if not _name(f.path).startswith("agent-")])
    return _newest_first([f for p in every if not _name(p).startswith("agent-")
                          and (f := summarize(Path(p), "claude")) is not None])


def codex_sessions(cwd: str) -> list[Found]:
    files = codex_files() or []
    indexed = _from_index("codex", files, cwd)
    if indexed is not None:
        return _newest_first(indexed)
    return _newest_first([f for p in files if (f := summarize(Path(p), "codex")) is not None and f.cwd == cwd])


def _from_index(harness: str, files: list[str], cwd: str) -> list[Found] | None:
    """This directory's sessions among `files` as the index has them (Codex's: those whose cwd is
    this one), after it is brought up to date for every one of them and for what is gone from where
    they were listed; None where there is no index to trust: absent, foreign, of another version,
    damaged, locked or not writable when something changed, or a file name it cannot hold."""
    from harnesskit.session.store import home_dir

    if harness == "claude":
        where, in_scope, of_cwd = str(claude_project_dir(cwd)), _direct, None
    else:
        where, in_scope, of_cwd = str(codex_root()), _dated, cwd
    path = home_dir() / "index.sqlite"
    if not path.is_file() or not os.path.isabs(where):  # relative: its keys would name other files elsewhere
        return None
    import sqlite3

    from harnesskit.session import catalog

    conn = catalog.open_existing(path)
    if conn is None:
        return None
    try:
        rows = catalog.harness_listed(conn, harness, where, files, in_scope(where), of_cwd)
    except (sqlite3.Error, OSError):
        return None
    finally:
        conn.close()
    if rows is None:
        return None
    return [Found(harness, p, modified, session_id, found_cwd, first, messages)
            for p, modified, session_id, found_cwd, first, messages in rows]


def _direct(directory: str) -> Callable[[str], bool]:
    """Whether a path is one `directory`'s `*.jsonl` glob lists (directly in it, no dot file)."""
    prefix = os.path.join(directory, "")

    def listed(path: str) -> bool:
        name = path[len(prefix):]
        return path.startswith(prefix) and os.sep not in name and name.endswith(".jsonl")
    return listed


def _dated(root: str) -> Callable[[str], bool]:
    """Whether a path is one `root`'s `*/*/*/rollout-*.jsonl` glob lists."""
    prefix = os.path.join(root, "")

    def listed(path: str) -> bool:
        parts = path[len(prefix):].split(os.sep)
        return path.startswith(prefix) and len(parts) == 4 and _rollout(parts[3])
    return listed


def _newest_first(found: list[Found]) -> list[Found]:
    found.sort(key=newest_first, reverse=True)
    return found


def newest_first(found: Found) -> tuple[float, str]:
    """The sort key of `list --harness` (reversed): the file's mtime, then its name."""
    return found.modified, _name(found.path)


def _name(path: str) -> str:
    return path.rpartition(os.sep)[2]


_CLAUDE_MESSAGE = re.compile(rb'"type"\s*:\s*"(?:user|assistant)"')
_CODEX_MESSAGE = re.compile(rb'"type"\s*:\s*"message"')


def summarize(path: Path, harness: str) -> Found | None:
    """The line `list --harness` shows of one file; None when it is no session of that harness."""
    try:
        modified = path.stat().st_mtime
        fp = open_lines(path)
    except OSError:
        return None
    session_id: str | None = None
    cwd: str | None = None
    first: str | None = None
    count = 0
    with fp:
        for number, raw in enumerate(fp):
            if harness == "claude":
                if _CLAUDE_MESSAGE.search(raw) is None:
                    continue
                count += 1
                if first is not None and session_id is not None or number > _SCAN_LINES:
                    continue
                obj = _loads(raw)
                if obj is None:
                    continue
                session_id = session_id or _str(obj.get("sessionId"))
                cwd = cwd or _str(obj.get("cwd"))
                if first is None and obj.get("type") == "user" and not obj.get("isMeta"):
                    first = _prompt((obj.get("message") or {}).get("content"))
            else:
                if number == 0:
                    obj = _loads(raw)
                    if obj is None or obj.get("type") != "session_meta":
                        return None
                    meta = obj.get("payload") or {}
                    session_id, cwd = _str(meta.get("id")), _str(meta.get("cwd"))
                    continue
                if b'"user_message"' in raw and first is None:
                    obj = _loads(raw)
                    if obj is not None and isinstance((obj.get("payload") or {}).get("message"), str):
                        first = _prompt(obj["payload"]["message"])
                if b'"response_item"' in raw and _CODEX_MESSAGE.search(raw):
                    count += 1
    if harness == "claude" and count == 0:
        session_id = session_id or path.stem
    if session_id is None:
        return None
    return Found(harness, str(path), modified, session_id, cwd, first, count)


def _loads(raw: bytes) -> dict | None:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _prompt(content: object) -> str | None:
    """A prompt's text; harness markup (slash commands, caveats, environment context) is not one."""
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        content = " ".join(t for t in texts if isinstance(t, str))
    if not isinstance(content, str) or not content.strip() or content.lstrip().startswith("<"):
        return None
    return content.strip()
