"""The agent loop: context + model + tools -> events.

``run_agent`` appends every message it creates to the caller's ``context`` and announces it with
``MessageEnd`` right after; it never raises for model or tool failures and never writes anything.
Invariants the session layer can rely on:

* every message added to ``context`` gets exactly one ``MessageEnd``, in context order;
* every toolCall block that is persisted has a toolResult (failed/aborted assistants carry none);
* ``AgentEnd`` is always the last event; ``aborted``/``error`` say how the run ended.

Ctrl-C: a KeyboardInterrupt raised inside the model stream or a tool is handled here. One raised
in the caller's event handler must be thrown back into the generator (``events.throw``) to get the
same clean ending; ``drive`` does that for you.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

from harnesskit.agent.events import (
    AgentEnd,
    Event,
    MessageEnd,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolResult,
    TurnEnd,
    TurnStart,
)
from harnesskit.agent.messages import STOP_REASONS, assistant_message, tool_calls_of, tool_result_message
from harnesskit.agent.models import DoneChunk, Model, ModelError, TextChunk, ThinkingChunk, ToolCallChunk
from harnesskit.agent.tools import Tool, ToolError

ABORTED_MESSAGE = "Request was aborted"  # pi's errorMessage for an aborted request
ABORTED_TOOL_TEXT = "aborted"

Message = dict[str, Any]


class _Partial:
    """What has streamed so far in one model call; becomes the assistant message."""

    def __init__(self) -> None:
        self.thinking: list[str] = []
        self.text: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.done: DoneChunk | None = None

    def add(self, chunk: object) -> Event | None:
        """Record a chunk; return the delta event to show, if any."""
        if isinstance(chunk, TextChunk) and chunk.text:
            self.text.append(chunk.text)
            return TextDelta(chunk.text)
        if isinstance(chunk, ThinkingChunk) and chunk.text:
            self.thinking.append(chunk.text)
            return ThinkingDelta(chunk.text)
        if isinstance(chunk, ToolCallChunk):
            arguments = chunk.arguments if isinstance(chunk.arguments, dict) else {}
            block = {"type": "toolCall", "id": chunk.id, "name": chunk.name, "arguments": arguments}
            self.calls.append(block)
        elif isinstance(chunk, DoneChunk):
            self.done = chunk
        return None

    def finish(self, model: Model, failure: tuple[str, str] | None) -> Message:
        """The assistant message: thinking, text, then toolCalls (dropped when the call failed)."""
        content: list[dict[str, Any]] = []
        if self.thinking:
            content.append({"type": "thinking", "thinking": "".join(self.thinking)})
        if self.text:
            content.append({"type": "text", "text": "".join(self.text)})
        identity = {"api": model.api, "provider": model.provider, "model": model.model_id}
        if failure is not None:
            return assistant_message(content, **identity, stop_reason=failure[0], error_message=failure[1])
        content.extend(self.calls)
        done = self.done
        stop = done.stop_reason if done is not None else ("toolUse" if self.calls else "stop")
        if stop not in STOP_REASONS or stop in ("error", "aborted"):
            stop = "toolUse" if self.calls else "stop"
        return assistant_message(
            content,
            **identity,
            usage=done.usage if done is not None else None,
            stop_reason=stop,
            response_id=done.response_id if done is not None else None,
        )


def execute_tool(call: dict[str, Any], tools: dict[str, Tool], cwd: Path) -> Message:
    """Run one toolCall and return its toolResult; every failure becomes an isError result."""
    call_id, name = str(call.get("id", "")), str(call.get("name", ""))
    tool = tools.get(name)
    if tool is None:
        available = ", ".join(tools) or "none"
        return tool_result_message(call_id, name, f"unknown tool {name!r} (available: {available})", True)
    arguments = call.get("arguments")
    if not isinstance(arguments, dict):
        return tool_result_message(call_id, name, "arguments must be a JSON object", True)
    try:
        output = tool.run(arguments, cwd)
    except ToolError as exc:
        return tool_result_message(call_id, name, str(exc) or f"{name} failed", True)
    except Exception as exc:  # a bug in a tool must not end the conversation
        return tool_result_message(call_id, name, f"{name} failed: {type(exc).__name__}: {exc}", True)
    return tool_result_message(call_id, name, output if isinstance(output, str) else str(output), False)


def _deliver(events: Iterable[Event]) -> Generator[Event, None, bool]:
    """Yield final events even if the consumer is interrupted; True if it was."""
    interrupted = False
    for event in events:
        try:
            yield event
        except KeyboardInterrupt:
            interrupted = True
    return interrupted


def run_agent(
    context: list[Message],
    user: Message,
    model: Model,
    tools: Iterable[Tool],
    *,
    cwd: Path | None = None,
    max_turns: int = 20,
    before_request: Callable[[list[Message]], None] | None = None,
) -> Generator[Event, None, None]:
    """Run one user prompt to completion, yielding events (see the module docstring).

    ``before_request`` is called with ``context`` before every model request, after every
    earlier event was handled; it may rewrite the list in place (compaction shortens it). A
    Ctrl-C inside it aborts the turn like one inside the model stream."""
    tool_list = list(tools)
    by_name = {tool.name: tool for tool in tool_list}
    workdir = Path.cwd() if cwd is None else Path(cwd)
    added: list[Message] = []

    def add(message: Message) -> Message:
        context.append(message)
        added.append(message)
        return message

    def end(aborted: bool = False, error: str | None = None) -> AgentEnd:
        return AgentEnd(list(added), aborted, error)

    add(user)
    try:
        yield MessageEnd(user)
    except KeyboardInterrupt:
        yield from _deliver([end(aborted=True)])
        return

    for turn in range(1, max_turns + 1):
        partial = _Partial()
        failure: tuple[str, str] | None = None
        stream = None
        try:
            yield TurnStart(turn)
            if before_request is not None:
                before_request(context)
            stream = model.stream(list(context), tool_list)
            for chunk in stream:
                event = partial.add(chunk)
                if event is not None:
                    yield event
        except ModelError as exc:
            failure = ("error", exc.message or str(exc) or "model error")
        except KeyboardInterrupt:
            failure = ("aborted", ABORTED_MESSAGE)
        except Exception as exc:  # a model bug is reported like any model failure
            failure = ("error", f"model failed: {type(exc).__name__}: {exc}")
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # releases an HTTP response left half-read by an interrupt
        assistant = add(partial.finish(model, failure))

        if failure is not None:
            interrupted = yield from _deliver([MessageEnd(assistant), TurnEnd(turn, assistant)])
            kind, text = failure
            yield from _deliver(
                [end(aborted=kind == "aborted" or interrupted, error=text if kind == "error" else None)]
            )
            return

        calls = tool_calls_of(assistant)
        first_result = len(added)
        announced = 0  # results whose MessageEnd has been yielded
        turn_end_reached = False
        try:
            yield MessageEnd(assistant)
            for call in calls:
                yield ToolCall(call)
                result = add(execute_tool(call, by_name, workdir))
                yield ToolResult(result)
                announced += 1
                yield MessageEnd(result)
            turn_end_reached = True
            yield TurnEnd(turn, assistant)
        except KeyboardInterrupt:
            results = added[first_result:]
            yield from _abort_after_tools(
                model, assistant, calls[len(results) :], results[announced:], turn, turn_end_reached, add, end
            )
            return

        if not calls:
            yield from _deliver([end()])
            return

    yield from _deliver([end(error=f"stopped after {max_turns} turns: the model kept calling tools")])


def _abort_after_tools(
    model: Model,
    assistant: Message,
    remaining: list[dict[str, Any]],
    unannounced: list[Message],
    turn: int,
    turn_end_reached: bool,
    add: Callable[[Message], Message],
    end: Callable[..., AgentEnd],
) -> Generator[Event, None, None]:
    """Ctrl-C after the assistant was final: close every open toolCall, then end as pi does.

    pi answers the pending calls with error results, and the next request, already aborted,
    becomes an assistant with empty content and stopReason "aborted"; the file ends the same way.
    """
    events: list[Event] = [MessageEnd(message) for message in unannounced]
    for call in remaining:
        result = add(tool_result_message(str(call.get("id", "")), str(call.get("name", "")), ABORTED_TOOL_TEXT, True))
        events += [ToolResult(result), MessageEnd(result)]
    if not turn_end_reached:
        events.append(TurnEnd(turn, assistant))
    if tool_calls_of(assistant):
        identity = {"api": model.api, "provider": model.provider, "model": model.model_id}
        aborted = add(assistant_message([], **identity, stop_reason="aborted", error_message=ABORTED_MESSAGE))
        events += [TurnStart(turn + 1), MessageEnd(aborted), TurnEnd(turn + 1, aborted)]
    yield from _deliver(events)
    yield from _deliver([end(aborted=True)])


def drive(events: Generator[Event, None, None], handle: Callable[[Event], None]) -> AgentEnd:
    """Feed every event to ``handle``; a Ctrl-C inside ``handle`` aborts the run cleanly.

    Returns the ``AgentEnd`` (``aborted`` is True if the interrupt came while handling it).
    """
    pending: KeyboardInterrupt | None = None
    final: AgentEnd | None = None
    while True:
        try:
            event = events.throw(pending) if pending is not None else next(events)
        except StopIteration:
            break
        pending = None
        if isinstance(event, AgentEnd):
            final = event
        try:
            handle(event)
        except KeyboardInterrupt as exc:
            pending = exc
    if final is None:
        raise RuntimeError("the agent run ended without an AgentEnd event")
    if pending is not None:
        final = dataclasses.replace(final, aborted=True)
    return final
