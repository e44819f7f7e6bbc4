"""What reaches stdout or stderr, and how.

The one way text reaches the screen is through `visible`, so nothing read from a session file or
streamed by a model can send the terminal a control sequence, piped or not (JSON lines are
already escaped by `render.json_line`, and pass through unchanged); colour is added after.

A chat's `Screen` puts the assistant's answer (or, with --json, the agent's events) on stdout and
everything else (tool lines, status, the session's path) on stderr, so `chat -p hi > out` holds
just the answer, as with pi -p and llm. Colour only where asked or on a terminal (NO_COLOR
honoured), and a spinner on a terminal while the model has said nothing yet."""

from __future__ import annotations

import itertools
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import click

from harnesskit.agent.messages import text_of
from harnesskit.text import one_line, visible

if TYPE_CHECKING:
    from harnesskit.agent.events import Event
# the event classes are imported where events are shown: every command prints through `echo`, and
# their dataclasses cost a `list` ~4 ms of start-up
COLOR_CHOICES = ("auto", "always", "never")


def echo(message: object = "", *, err: bool = False, nl: bool = True) -> None:
    click.echo(visible(str(message)), err=err, nl=nl)
STYLES: dict[str, dict[str, Any]] = {
    "tool": {"fg": "cyan"},
    "result": {"fg": "cyan", "dim": True},
    "error": {"fg": "red", "bold": True},
    "banner": {"bold": True},
    "dim": {"dim": True},
}


def use_color(choice: str, stream: IO[str]) -> bool:
    """--color: always, never, or auto (a terminal, NO_COLOR unset, TERM not dumb)."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def event_json(event: Event) -> dict[str, Any]:
    """An agent event as one JSON object (`chat --json`), named as pi's json mode names them."""
    from harnesskit.agent.events import (
        AgentEnd,
        MessageEnd,
        TextDelta,
        ThinkingDelta,
        ToolCall,
        ToolResult,
        TurnEnd,
        TurnStart,
    )

    if isinstance(event, TurnStart):
        return {"type": "turn_start", "turn": event.turn}
    if isinstance(event, TextDelta):
        return {"type": "text_delta", "delta": event.text}
    if isinstance(event, ThinkingDelta):
        return {"type": "thinking_delta", "delta": event.text}
    if isinstance(event, ToolCall):
        call = event.call
        return {"type": "tool_execution_start", "toolCallId": call.get("id"), "toolName": call.get("name"),
                "args": call.get("arguments", {})}
    if isinstance(event, ToolResult):
        return {"type": "tool_execution_end", "toolCallId": event.message.get("toolCallId"),
                "toolName": event.message.get("toolName"), "result": event.message,
                "isError": bool(event.message.get("isError"))}
    if isinstance(event, MessageEnd):
        return {"type": "message_end", "message": event.message}
    if isinstance(event, TurnEnd):
        return {"type": "turn_end", "turn": event.turn, "message": event.message}
    if isinstance(event, AgentEnd):
        return {"type": "agent_end", "messages": event.messages, "aborted": event.aborted, "error": event.error}
    raise TypeError(f"not an agent event: {event!r}")


@dataclass
class Spinner:
    """A spinner on stderr while nothing has come back yet; stop() erases it."""

    color: bool
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        for frame in itertools.cycle("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"):
            text = click.style(f"{frame} thinking…", dim=True) if self.color else f"{frame} thinking…"
            sys.stderr.write(f"\r{text}")
            sys.stderr.flush()
            if self._stop.wait(0.1):
                return

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()


@dataclass
class Screen:
    json: bool = False
    color: bool = False  # for stderr (the notes); the answer itself is never styled
    spinner: Spinner | None = None  # on a terminal only
    notes_to_stderr: bool = True  # False for the demo, a narrated show on one stream
    _streamed: bool = False

    @classmethod
    def for_chat(cls, color: str, as_json: bool, interactive: bool) -> Screen:
        styled = use_color(color, sys.stderr)
        spin = interactive and not as_json and sys.stderr.isatty()
        return cls(json=as_json, color=styled, spinner=Spinner(styled) if spin else None)

    def note(self, text: str, style: str | None = None) -> None:
        """Anything that is not the answer: stderr, styled when colour is on."""
        self.stop_spinner()
        text = visible(text)
        if style and self.color:
            text = click.style(text, **STYLES[style])
        click.echo(text, err=self.notes_to_stderr, color=self.color)

    def error(self, message: str) -> None:
        self.note(f"harnesskit: error: {message}", "error")

    def stop_spinner(self) -> None:
        if self.spinner is not None:
            self.spinner.stop()

    def end_answer(self) -> None:
        """The newline after streamed text, once."""
        if self._streamed:
            click.echo()
            self._streamed = False

    def show(self, event: Event) -> None:
        """One agent event: JSON Lines with --json, else the answer streamed and the tools noted."""
        from harnesskit.agent.events import MessageEnd, TextDelta, ToolCall, ToolResult, TurnEnd, TurnStart

        if isinstance(event, TurnStart):
            if self.spinner is not None:
                self.spinner.start()
            if not self.json:
                return
        elif not isinstance(event, TurnEnd):
            self.stop_spinner()
        if self.json:
            from .render import json_line  # only --json: a chat prints no table (start-up counts)

            click.echo(json_line(event_json(event)))
            sys.stdout.flush()
            return
        if isinstance(event, TextDelta):
            echo(event.text, nl=False)
            sys.stdout.flush()
            self._streamed = True
        elif isinstance(event, MessageEnd) and event.message.get("role") == "assistant":
            self.end_answer()
        elif isinstance(event, ToolCall):
            import json

            args = json.dumps(event.call.get("arguments", {}), ensure_ascii=False)
            self.note(f"[tool] {event.call.get('name')} {args}", "tool")
        elif isinstance(event, ToolResult):
            mark = "✗" if event.message.get("isError") else "→"
            text = one_line(text_of(event.message))
            self.note(f"[result] {event.message.get('toolName')} {mark} {text}", "result")
