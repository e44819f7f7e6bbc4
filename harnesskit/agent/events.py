"""Events the agent loop yields.

The loop never persists anything itself: the session layer appends a message when its
``MessageEnd`` arrives, and may flush/fsync on ``TurnEnd``. ``AgentEnd`` always comes last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class TurnStart:
    """A model call is about to start (turns count from 1 within one ``run_agent``)."""

    turn: int


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of assistant text as it streams, for live display."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A piece of assistant reasoning as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool is about to run; ``call`` is the assistant's toolCall block."""

    call: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool finished (or failed); ``message`` is the toolResult message."""

    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class MessageEnd:
    """A message is final and already in the context: the moment to persist it."""

    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """One model call and its tool calls are done; ``message`` is that turn's assistant."""

    turn: int
    message: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AgentEnd:
    """The run is over. ``messages`` are the ones this run added, in order.

    ``aborted`` is True after a KeyboardInterrupt; ``error`` holds the model's error text (or the
    max-turns message) when the run failed.
    """

    messages: list[dict[str, Any]]
    aborted: bool = False
    error: str | None = None


Event = TurnStart | TextDelta | ThinkingDelta | ToolCall | ToolResult | MessageEnd | TurnEnd | AgentEnd
