"""How many tokens a context holds, as pi counts them, and when that calls for a compaction: the
part of compaction a chat needs before every request (the cut and the entry are in compaction.py,
loaded only when a compaction happens: start-up counts)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass

from .tree import Context, Tree

DEFAULT_RESERVE_TOKENS = 16384  # pi's defaults (settings `compaction.reserveTokens`, `keepRecentTokens`)
DEFAULT_KEEP_RECENT_TOKENS = 20000
MAX_RESERVE_SHARE = 0.3  # pi caps the reserve at 30% of the window (a small window still gets room)
SUMMARY_SHARE_OF_RESERVE = 0.8  # pi's cap on a summary's reply: 0.8 x reserve
IMAGE_CHARS = 4800  # pi counts an image as 1200 tokens


@dataclass(frozen=True)
class CompactionSettings:
    enabled: bool = True
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS


# ---------------------------------------------------------------- tokens


def usage_tokens(usage: object) -> int:
    """The context size one response measured: input + output + cache reads and writes (pi). An
    infinity (1e400, or an integer too long to read exactly) is no count, as in --stats."""
    if not isinstance(usage, dict):
        return 0
    total = 0
    for key in ("input", "output", "cacheRead", "cacheWrite"):
        value = usage.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < math.inf:
            total += int(value)
    return total


def _block_chars(blocks: object) -> int:
    if isinstance(blocks, str):
        return len(blocks)
    chars = 0
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            chars += len(str(block.get("text", "")))
        elif kind == "thinking":
            chars += len(str(block.get("thinking", "")))
        elif kind == "toolCall":
            chars += len(str(block.get("name", ""))) + len(json.dumps(block.get("arguments", {}), ensure_ascii=False))
        elif kind == "image":
            chars += IMAGE_CHARS
    return chars


def estimate_tokens(message: dict) -> int:
    """pi's estimate for one context message: characters / 4, rounded up."""
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        chars = len(str(message.get("summary") or ""))
    elif role == "bashExecution":
        chars = len(str(message.get("command") or "")) + len(str(message.get("output") or ""))
    else:
        chars = _block_chars(message.get("content"))
    return math.ceil(chars / 4)


def estimate_all(messages: Iterable[dict]) -> int:
    return sum(estimate_tokens(m) for m in messages)


def _usable_assistant(message: dict | None) -> bool:
    """An assistant whose usage measured a real request (pi skips aborted and failed ones)."""
    return (
        isinstance(message, dict)
        and message.get("role") == "assistant"
        and message.get("stopReason") not in ("aborted", "error")
        and usage_tokens(message.get("usage")) > 0
    )


def context_tokens(tree: Tree, context: Context) -> int:
    """The tokens of `context` as pi counts them: the last assistant's usage plus an estimate of
    every message after it. An assistant from before the latest compaction measured the old,
    longer context, so it is not used: then the whole context is estimated."""
    types = tree.types
    for pos in reversed(context.path):
        if types[pos] == "compaction":
            break
        if types[pos] != "message":
            continue
        message = tree.entries[pos].get("message")
        if _usable_assistant(message):
            after = next((i for i, m in enumerate(context.messages) if m is message), None)
            if after is None:
                break
            return usage_tokens(message["usage"]) + estimate_all(context.messages[after + 1 :])
    return estimate_all(context.messages)


def effective_reserve(window: int, settings: CompactionSettings) -> int:
    return min(settings.reserve_tokens, int(window * MAX_RESERVE_SHARE))


def should_compact(tokens: int, window: int, settings: CompactionSettings) -> bool:
    """pi's trigger: more tokens than the window minus the reserve."""
    return settings.enabled and tokens > window - effective_reserve(window, settings)


def summary_max_tokens(window: int, settings: CompactionSettings) -> int:
    """The cap on a summary's reply, so a summary never outgrows what it replaces."""
    return max(1, int(SUMMARY_SHARE_OF_RESERVE * effective_reserve(window, settings)))
