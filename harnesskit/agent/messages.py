"""pi-format messages (pi-ai ``Message`` plus pi's custom agent roles) as plain dicts.

Plain dicts, because that is what goes into the JSONL file unchanged; key order follows what pi
writes so files diff cleanly against pi's own.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

Message = dict[str, Any]

USAGE_KEYS = ("input", "output", "cacheRead", "cacheWrite")
COST_KEYS = ("input", "output", "cacheRead", "cacheWrite", "total")
STOP_REASONS = ("stop", "length", "toolUse", "error", "aborted")

# pi's wrappers (pi-coding-agent dist/core/messages.js). Note the branch suffix really has no
# leading newline in pi, unlike the compaction one.
COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"


def now_ms() -> int:
    """Unix time in milliseconds, the unit pi uses for ``message.timestamp``."""
    return time.time_ns() // 1_000_000


def _number(value: Any) -> int | float:
    """A usage number, or 0 for anything that is not one (servers send null, strings...)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return value


def make_usage(usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """A complete pi ``Usage`` object; missing keys are zeros, so pi and stats never see holes."""
    usage = usage or {}
    out: dict[str, Any] = {key: _number(usage.get(key)) for key in USAGE_KEYS}
    total = usage.get("totalTokens")
    out["totalTokens"] = _number(total) if total is not None else sum(out[k] for k in USAGE_KEYS)
    cost_in = usage.get("cost") if isinstance(usage.get("cost"), dict) else {}
    cost = {key: _number(cost_in.get(key)) for key in COST_KEYS[:-1]}
    cost_total = cost_in.get("total")
    cost["total"] = _number(cost_total) if cost_total is not None else sum(cost.values())
    out["cost"] = cost
    return out


def user_message(text: str) -> Message:
    """A user prompt, as pi writes it: a one-block array, never a bare string."""
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": now_ms()}


def assistant_message(
    content: list[dict[str, Any]],
    *,
    api: str,
    provider: str,
    model: str,
    usage: dict[str, Any] | None = None,
    stop_reason: str,
    error_message: str | None = None,
    response_id: str | None = None,
) -> Message:
    """An assistant message with every field pi requires (api, provider, model, full usage...)."""
    if stop_reason not in STOP_REASONS:
        raise ValueError(f"stop_reason must be one of {', '.join(STOP_REASONS)}, not {stop_reason!r}")
    message: Message = {
        "role": "assistant",
        "content": list(content),
        "api": api,
        "provider": provider,
        "model": model,
        "usage": make_usage(usage),
        "stopReason": stop_reason,
        "timestamp": now_ms(),
    }
    if error_message is not None:
        message["errorMessage"] = error_message
    if response_id is not None:
        message["responseId"] = response_id
    return message


def tool_result_message(tool_call_id: str, tool_name: str, text: str, is_error: bool) -> Message:
    """The answer to one toolCall block; ``toolCallId`` pairs it with the call."""
    return {
        "role": "toolResult",
        "toolCallId": tool_call_id,
        "toolName": tool_name,
        "content": [{"type": "text", "text": text}],
        "isError": bool(is_error),
        "timestamp": now_ms(),
    }


def bash_execution_text(message: Message) -> str:
    """pi's ``bashExecutionToText``: how a ``!cmd`` run is shown to the model."""
    text = f"Ran `{message.get('command', '')}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _as_user(content: Any, timestamp: Any) -> Message:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return {"role": "user", "content": blocks, "timestamp": timestamp}


def to_llm_messages(context: Iterable[Message]) -> list[Message]:
    """pi's ``convertToLlm``: fold pi-only roles into user messages the model can read.

    user/assistant/toolResult pass through unchanged (same objects); unknown roles are dropped.
    """
    out: list[Message] = []
    for message in context:
        role = message.get("role")
        stamp = message.get("timestamp")
        if role in ("user", "assistant", "toolResult"):
            out.append(message)
        elif role == "custom":
            out.append(_as_user(message.get("content", ""), stamp))
        elif role == "branchSummary":
            text = BRANCH_SUMMARY_PREFIX + str(message.get("summary", "")) + BRANCH_SUMMARY_SUFFIX
            out.append(_as_user(text, stamp))
        elif role == "compactionSummary":
            text = COMPACTION_SUMMARY_PREFIX + str(message.get("summary", "")) + COMPACTION_SUMMARY_SUFFIX
            out.append(_as_user(text, stamp))
        elif role == "bashExecution" and not message.get("excludeFromContext"):
            out.append(_as_user(bash_execution_text(message), stamp))
    return out


def text_of(message: Message) -> str:
    """The readable text of any message (text blocks joined by newlines), for display and matching."""
    role = message.get("role")
    if role in ("branchSummary", "compactionSummary"):
        return str(message.get("summary", ""))
    if role == "bashExecution":
        return bash_execution_text(message)
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(p for p in parts if isinstance(p, str))


def tool_calls_of(message: Message) -> list[dict[str, Any]]:
    """The toolCall blocks of an assistant message, in order (empty for other roles)."""
    if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
        return []
    return [b for b in message["content"] if isinstance(b, dict) and b.get("type") == "toolCall"]
