"""Any OpenAI-compatible Chat Completions server (OpenAI, llama.cpp, vLLM, LM Studio, Ollama...).

Imported only when a spec says ``openai:MODEL``: the ``openai`` package is slow to import.
Every failure becomes a ``ModelError`` with one readable line, so the loop can persist it as an
error assistant message the way pi does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harnesskit.agent.messages import text_of, to_llm_messages, tool_calls_of
from harnesskit.agent.models import (
    DEFAULT_MAX_REPLY_BYTES,
    DEFAULT_REQUEST_TIMEOUT,
    Chunk,
    DoneChunk,
    ModelError,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
)
from harnesskit.agent.tools import Tool
from harnesskit.text import well_formed

READ_TIMEOUT = 120.0  # silence for this long ends a request sooner than its overall deadline
CONNECT_TIMEOUT = 30.0
# Models known to take `reasoning_effort` (config `reasoning_effort: auto` sends it only to these).
REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
_FINISH = {"stop": "stop", "length": "length", "tool_calls": "toolUse", "function_call": "toolUse"}


def _one_line(text: Any, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- pi -> Chat Completions


def _user_content(content: Any) -> Any:
    """A string when the message is only text (what every server accepts), else content parts."""
    if isinstance(content, str):
        return content
    blocks = [b for b in content or [] if isinstance(b, dict)]
    if all(b.get("type") == "text" for b in blocks):
        return "\n".join(str(b.get("text", "")) for b in blocks)
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "text":
            parts.append({"type": "text", "text": block.get("text", "")})
        elif block.get("type") == "image":
            url = f"data:{block.get('mimeType', 'image/png')};base64,{block.get('data', '')}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def to_chat_messages(context: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """pi context -> Chat Completions ``messages``.

    As pi-ai does, failed/aborted assistant turns are not replayed (they are incomplete), and
    every tool call gets exactly one tool message, so strict servers never see a dangling call.
    """
    out: list[dict[str, Any]] = []
    open_calls: dict[str, str] = {}  # id -> name, calls still waiting for a result

    def close_open_calls() -> None:
        for call_id in list(open_calls):
            out.append({"role": "tool", "tool_call_id": call_id, "content": "No result provided"})
        open_calls.clear()

    for message in to_llm_messages(context):
        role = message.get("role")
        if role == "toolResult":
            call_id = message.get("toolCallId")
            if call_id in open_calls:
                del open_calls[call_id]
                out.append({"role": "tool", "tool_call_id": call_id, "content": text_of(message)})
            continue
        close_open_calls()
        if role == "user":
            out.append({"role": "user", "content": _user_content(message.get("content"))})
        elif role == "assistant":
            if message.get("stopReason") in ("error", "aborted"):
                continue
            text = text_of(message)
            calls = tool_calls_of(message)
            if not text and not calls:
                continue
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": call.get("id"),
                        "type": "function",
                        "function": {"name": call.get("name"), "arguments": json.dumps(call.get("arguments", {}))},
                    }
                    for call in calls
                ]
                open_calls.update({str(c.get("id")): str(c.get("name")) for c in calls})
            out.append(entry)
    close_open_calls()
    return well_formed(out)  # type: ignore[return-value]


def to_chat_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def map_usage(usage: Any) -> dict[str, Any]:
    """Chat Completions usage -> pi's keys; cached prompt tokens count as cacheRead, as pi does."""
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    completion = getattr(usage, "completion_tokens", 0) or 0
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    cached = min(cached, prompt)
    return {
        "input": prompt - cached,
        "output": completion,
        "cacheRead": cached,
        "cacheWrite": 0,
        "totalTokens": prompt + completion,
    }


# ---------------------------------------------------------------- streaming


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


def _delta_reasoning(delta: Any) -> str | None:
    """Reasoning text from servers that stream it (llama.cpp/vLLM/DeepSeek use these names)."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(delta, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def _parse_arguments(call: _PendingCall) -> dict[str, Any]:
    if not call.arguments.strip():
        return {}
    try:
        arguments = json.loads(call.arguments)
    except ValueError as exc:
        raise ModelError(f"malformed tool call arguments for {call.name or '?'}: {exc}") from None
    if not isinstance(arguments, dict):
        raise ModelError(f"malformed tool call arguments for {call.name or '?'}: not a JSON object")
    return arguments


_DEFAULT_BASE_URL = "https://api.openai.com/v1"  # the SDK's own default


class OpenAIModel:
    """Streams from ``{base_url}/chat/completions`` with tools and usage; every request ends within
    `timeout` seconds overall and `max_reply_bytes` received (see http_guard)."""

    api = "openai-completions"
    provider = "openai"
    thinking_level = "off"  # the session's level (pi's thinking_level_change), set by the chat
    reasoning = "auto"  # send it as reasoning_effort: auto (known reasoning models), always, never

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        provider: str = "openai",
    ) -> None:
        self.model_id = model_id
        self.provider = provider
        self.timeout = timeout
        self.max_reply_bytes = max_reply_bytes
        kwargs: dict[str, Any] = {}
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        if base_url:
            kwargs["base_url"] = base_url
        self._client_args = {"api_key": api_key or os.environ.get("OPENAI_API_KEY") or "not-needed", **kwargs}
        self._client: Any = None  # the SDK is imported at the first request: a `continue` that runs no turn
        self.base_url = (base_url or _DEFAULT_BASE_URL).rstrip("/")  # never pays for it (start-up)

    def _make_client(self) -> Any:
        import openai

        from harnesskit.agent.models.http_guard import guarded_client

        http = guarded_client(self.timeout, self.max_reply_bytes, read_timeout=READ_TIMEOUT,
                              connect_timeout=CONNECT_TIMEOUT, describe=lambda: self.base_url)
        return openai.OpenAI(max_retries=0, timeout=http.timeout, http_client=http, **self._client_args)

    def stream(self, messages: list[dict[str, Any]], tools: list[Tool], *,
               max_tokens: int | None = None) -> Iterator[Chunk]:
        request: dict[str, Any] = {
            "model": self.model_id,
            "messages": to_chat_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        effort = self.reasoning_effort() if max_tokens is None else None  # a summary reasons not (pi)
        if effort is not None:
            request["reasoning_effort"] = effort
        if tools:
            request["tools"] = to_chat_tools(tools)
        import openai

        from harnesskit.agent.models.http_guard import ReplyCut

        try:
            if self._client is None:
                self._client = self._make_client()
            yield from self._stream(request)
        except ModelError:
            raise
        except ReplyCut as exc:
            raise ModelError(exc.message) from None
        except openai.APIStatusError as exc:
            raise ModelError(f"HTTP {exc.status_code} from {self.base_url}: {self._status_detail(exc)}") from None
        except openai.APITimeoutError as exc:
            if "Connect" in type(exc.__cause__).__name__:
                raise ModelError(f"timed out after {min(CONNECT_TIMEOUT, self.timeout):g}s connecting to "
                                 f"{self.base_url}") from None
            raise ModelError(f"timed out after {READ_TIMEOUT:g}s of silence from {self.base_url}") from None
        except openai.APIConnectionError as exc:
            if isinstance(exc.__cause__, ReplyCut):  # older openai releases wrap what the client raises
                raise ModelError(exc.__cause__.message) from None
            raise ModelError(self._connection_detail(exc)) from None
        except openai.APIError as exc:
            raise ModelError(f"error from {self.base_url}: {_one_line(exc.message)}") from None
        except (ValueError, AttributeError, TypeError, KeyError, IndexError) as exc:
            # sse.json() on garbage, or chunks that lack the fields of a Chat Completions chunk
            raise ModelError(f"malformed stream from {self.base_url}: {_one_line(exc)}") from None
        except openai.OpenAIError as exc:
            raise ModelError(f"{self.base_url}: {_one_line(exc)}") from None

    def reasoning_effort(self) -> str | None:
        """The thinking level as `reasoning_effort`, where the model takes it; off sends nothing."""
        if self.thinking_level in (None, "", "off") or self.reasoning == "never":
            return None
        name = self.model_id.lower().rsplit("/", 1)[-1]
        if self.reasoning == "auto" and not name.startswith(REASONING_PREFIXES):
            return None
        return self.thinking_level

    def _stream(self, request: dict[str, Any]) -> Iterator[Chunk]:
        response = self._client.chat.completions.create(**request)
        calls: dict[int, _PendingCall] = {}
        finish: str | None = None
        usage: dict[str, Any] | None = None
        response_id: str | None = None
        seen = 0
        with response:
            for chunk in response:
                seen += 1
                response_id = response_id or getattr(chunk, "id", None) or None
                if getattr(chunk, "usage", None) is not None:
                    usage = map_usage(chunk.usage)
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta is not None:
                        reasoning = _delta_reasoning(delta)
                        if reasoning:
                            yield ThinkingChunk(reasoning)
                        if delta.content:
                            yield TextChunk(delta.content)
                        for part in delta.tool_calls or []:
                            pending = calls.setdefault(part.index if part.index is not None else 0, _PendingCall())
                            pending.id = pending.id or (part.id or "")
                            if part.function is not None:
                                pending.name = pending.name or (part.function.name or "")
                                pending.arguments += part.function.arguments or ""
                    if choice.finish_reason:
                        finish = choice.finish_reason
        if seen == 0:
            raise ModelError(f"malformed stream from {self.base_url}: no data events in the response")
        if finish is None and not calls and usage is None:
            raise ModelError(f"malformed stream from {self.base_url}: the stream ended without a finish_reason")
        if finish == "content_filter":
            raise ModelError(f"{self.base_url} stopped the response: content_filter")
        for index in sorted(calls):
            call = calls[index]
            if not call.name:
                raise ModelError(f"malformed stream from {self.base_url}: a tool call without a name")
            yield ToolCallChunk(call.id or f"call_{index + 1}", call.name, _parse_arguments(call))
        stop_reason = "toolUse" if calls else _FINISH.get(finish or "stop", "stop")
        yield DoneChunk(stop_reason=stop_reason, usage=usage, response_id=response_id)

    def _status_detail(self, exc: Any) -> str:
        body = getattr(exc, "body", None)
        if isinstance(body, dict):
            error = body.get("error", body)
            message = error.get("message") if isinstance(error, dict) else error
            if message:
                return _one_line(message)
        try:
            text = exc.response.text
        except Exception:  # a detail is never worth a second failure
            text = ""
        return _one_line(text) if text.strip() else _one_line(getattr(exc, "message", "") or "no details")

    def _connection_detail(self, exc: Exception) -> str:
        cause = exc.__cause__ or exc.__context__
        detail = _one_line(cause) if cause is not None else _one_line(exc)
        if "refused" in detail.lower():
            return f"connection refused: {self.base_url} ({detail})"
        return f"connection failed: {self.base_url}: {detail or 'no details'}"
