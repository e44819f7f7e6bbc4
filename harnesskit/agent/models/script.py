"""A model whose replies come from a YAML file, for tests and reproducible demos.

```yaml
- text: "Let me look."
  tool_calls: [{name: calc, arguments: {expression: "2+2"}}]
- text: "2+2 = 4."
  chunks: 3        # stream the text in 3 pieces
  delay: 0.5       # seconds to sleep before each chunk (slow model for crash tests)
- text: "partial"
  error: "HTTP 500 from the script"   # raised after the text has streamed
```

The file may also be ``{replies: [...], model: NAME}``. A reply may be a bare string (its text).
Replies are used in order by one model instance; asking for more is a ModelError.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesskit.agent.messages import STOP_REASONS, tool_calls_of
from harnesskit.agent.models import Chunk, DoneChunk, ModelError, TextChunk, ThinkingChunk, ToolCallChunk
from harnesskit.agent.tools import Tool

REPLY_KEYS = {"text", "thinking", "tool_calls", "error", "delay", "chunks", "stop_reason", "usage"}


@dataclass(frozen=True)
class Reply:
    """One scripted model response, validated at load time."""

    text: str = ""
    thinking: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    delay: float = 0.0
    chunks: int = 1
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None


def _fail(where: str, problem: str) -> ValueError:
    return ValueError(f"{where}: {problem}")


def parse_reply(raw: Any, where: str) -> Reply:
    """Check one reply's shape; every problem names the file and reply number."""
    if isinstance(raw, str):
        return Reply(text=raw)
    if not isinstance(raw, dict):
        raise _fail(where, f"a reply must be a mapping or a string, not {type(raw).__name__}")
    unknown = sorted(set(map(str, raw)) - REPLY_KEYS)
    if unknown:
        raise _fail(where, f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(REPLY_KEYS))})")
    for key in ("text", "thinking", "error", "stop_reason"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise _fail(where, f"{key!r} must be a string")
    delay, chunks = raw.get("delay", 0), raw.get("chunks", 1)
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
        raise _fail(where, "'delay' must be a number of seconds >= 0")
    if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
        raise _fail(where, "'chunks' must be an integer >= 1")
    stop_reason = raw.get("stop_reason")
    if stop_reason is not None and stop_reason not in STOP_REASONS:
        raise _fail(where, f"'stop_reason' must be one of {', '.join(STOP_REASONS)}")
    if raw.get("usage") is not None and not isinstance(raw["usage"], dict):
        raise _fail(where, "'usage' must be a mapping")
    calls = raw.get("tool_calls") or []
    if not isinstance(calls, list):
        raise _fail(where, "'tool_calls' must be a list")
    for number, call in enumerate(calls, 1):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            raise _fail(where, f"tool call {number} needs a 'name'")
        if not isinstance(call.get("arguments", {}), dict):
            raise _fail(where, f"tool call {number}: 'arguments' must be a mapping")
        if call.get("id") is not None and not isinstance(call["id"], str):
            raise _fail(where, f"tool call {number}: 'id' must be a string")
    return Reply(
        text=raw.get("text") or "",
        thinking=raw.get("thinking") or "",
        tool_calls=[dict(c) for c in calls],
        error=raw.get("error"),
        delay=float(delay),
        chunks=chunks,
        stop_reason=stop_reason,
        usage=raw.get("usage"),
    )


def load_script(path: str | Path) -> tuple[list[Reply], str | None]:
    """Read and validate a script file: (replies, model name or None). Problems are ValueErrors."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"script file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read script file {path}: {exc}") from None
    try:
        data = YAML(typ="safe", pure=True).load(source)
    except YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ValueError(f"script file {path} is not valid YAML: {detail}") from None
    model = None
    if isinstance(data, dict):
        model = data.get("model")
        if model is not None and not isinstance(model, str):
            raise ValueError(f"script file {path}: 'model' must be a string")
        data = data.get("replies")
    if not isinstance(data, list):
        raise ValueError(f"script file {path}: expected a list of replies (or a mapping with 'replies')")
    replies = [parse_reply(raw, f"script file {path}, reply {n}") for n, raw in enumerate(data, 1)]
    return replies, model


def _split(text: str, parts: int) -> list[str]:
    """``text`` in ``parts`` nearly equal pieces (fewer if the text is shorter)."""
    if not text:
        return []
    parts = min(parts, len(text))
    size, extra = divmod(len(text), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(text[start:end])
        start = end
    return out


class ScriptModel:
    """Plays back scripted replies in order."""

    api = "harnesskit-script"
    provider = "harnesskit"

    def __init__(self, replies: list[Reply], model_id: str = "script") -> None:
        self.replies = list(replies)
        self.model_id = model_id
        self.used = 0

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptModel:
        replies, model = load_script(path)
        return cls(replies, model or Path(path).stem)

    def stream(self, messages: list[dict[str, Any]], tools: list[Tool], *,
               max_tokens: int | None = None) -> Iterator[Chunk]:
        """The next reply, whatever was asked: a summary request takes the next reply too, so a
        script scripts its summaries in the order they are asked for."""
        if self.used >= len(self.replies):
            raise ModelError(f"script exhausted after {len(self.replies)} replies")
        reply = self.replies[self.used]
        self.used += 1
        yield from self._play(reply, messages)

    def _play(self, reply: Reply, messages: list[dict[str, Any]]) -> Iterator[Chunk]:
        def pause() -> None:
            if reply.delay:
                time.sleep(reply.delay)

        for piece in _split(reply.thinking, reply.chunks):
            pause()
            yield ThinkingChunk(piece)
        for piece in _split(reply.text, reply.chunks):
            pause()
            yield TextChunk(piece)
        if reply.error is not None:
            pause()
            raise ModelError(reply.error)
        already = sum(len(tool_calls_of(m)) for m in messages)
        calls = []
        for number, call in enumerate(reply.tool_calls, already + 1):
            calls.append(ToolCallChunk(call.get("id") or f"call_{number}", call["name"], call.get("arguments") or {}))
        for chunk in calls:
            pause()
            yield chunk
        pause()
        words = len(reply.text.split()) + len(reply.thinking.split()) + 8 * len(calls)
        yield DoneChunk(
            stop_reason=reply.stop_reason or ("toolUse" if calls else "stop"),
            usage=reply.usage if reply.usage is not None else {"input": 10 * len(messages), "output": words},
        )
