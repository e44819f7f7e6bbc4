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
from dataclasses import dataclass
from pathlib import Path

import orjson

_SCAN_LINES = 400  # how far into a file the first prompt is looked for


@dataclass
class Found:
    harness: str  # "claude" or "codex"
    path: Path
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


def claude_sessions(cwd: str) -> list[Found]:
    directory = claude_project_dir(cwd)
    try:
        files = [p for p in directory.glob("*.jsonl") if p.is_file() and not p.name.startswith("agent-")]
    except OSError:
        return []
    found = [f for p in files if (f := _summarize(p, "claude")) is not None]
    return _newest_first(found)


def codex_sessions(cwd: str) -> list[Found]:
    root = codex_root()
    try:
        files = [p for p in root.glob("*/*/*/rollout-*.jsonl") if p.is_file()]
    except OSError:
        return []
    found = [f for p in files if (f := _summarize(p, "codex")) is not None and f.cwd == cwd]
    return _newest_first(found)


def _newest_first(found: list[Found]) -> list[Found]:
    found.sort(key=lambda f: (f.modified, f.path.name), reverse=True)
    return found


_CLAUDE_MESSAGE = re.compile(rb'"type"\s*:\s*"(?:user|assistant)"')
_CODEX_MESSAGE = re.compile(rb'"type"\s*:\s*"message"')


def _summarize(path: Path, harness: str) -> Found | None:
    try:
        modified = path.stat().st_mtime
        fp = path.open("rb")
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
    return Found(harness, path, modified, session_id, cwd, first, count)


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
