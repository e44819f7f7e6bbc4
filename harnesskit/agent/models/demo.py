"""An offline, deterministic model for demos and tests.

It decides everything from the context it is given, never from hidden state, so a conversation
restored from a session file continues exactly as if it had never stopped: asked what it computed
before, it looks for the last calc call and its result in the messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from harnesskit.agent.messages import text_of, tool_calls_of
from harnesskit.agent.models import Chunk, DoneChunk, TextChunk, ToolCallChunk
from harnesskit.agent.tools import Tool

GREETING_REPLY = "Hello! This conversation is being written to a session file."
NOTHING_COMPUTED = "I have not computed anything yet."

_GREETING = re.compile(r"^\W*(hello|hi|hey|hiya|howdy|greetings|good (morning|afternoon|evening))\b", re.I)
_RECALL = re.compile(r"\b(comput|calculat|result|earlier|before|previous|last time)\w*", re.I)
# A run of arithmetic characters that contains "number operator number".
_EXPR_RUN = re.compile(r"[-+(]*\d[\d\s.()+\-*/%]*")
_HAS_OPERATOR = re.compile(r"\d\s*\)*\s*(\*\*|//|[+\-*/%])\s*[-+(]*\s*\d")


def find_expression(text: str) -> str | None:
    """The first arithmetic expression in a prompt ("what is 12*8?" -> "12*8"), if any."""
    for match in _EXPR_RUN.finditer(text):
        candidate = match.group(0).strip().rstrip(".").strip()
        if _HAS_OPERATOR.search(candidate):
            return candidate
    return None


def last_calc(messages: list[dict[str, Any]]) -> tuple[str, str] | None:
    """(expression, result) of the last successful calc call found in the messages."""
    results = {m.get("toolCallId"): m for m in messages if m.get("role") == "toolResult" and not m.get("isError")}
    for message in reversed(messages):
        for call in reversed(tool_calls_of(message)):
            result = results.get(call.get("id"))
            if call.get("name") == "calc" and result is not None:
                return str(call.get("arguments", {}).get("expression", "")), text_of(result).strip()
    return None


def _words(text: str) -> int:
    return len(text.split())


class DemoModel:
    """Greets, calculates with the calc tool, and recalls earlier results from the context."""

    api = "harnesskit-demo"
    provider = "harnesskit"
    model_id = "demo"

    def stream(self, messages: list[dict[str, Any]], tools: list[Tool]) -> Iterator[Chunk]:
        text, calls = self.reply(messages, tools)
        pieces = _split(text)
        yield from (TextChunk(piece) for piece in pieces)
        yield from calls
        prompt_words = sum(_words(text_of(m)) for m in messages) + 10 * len(tools)
        output_words = _words(text) + 8 * len(calls)
        yield DoneChunk(
            stop_reason="toolUse" if calls else "stop",
            usage={"input": prompt_words, "output": output_words},
        )

    def reply(self, messages: list[dict[str, Any]], tools: list[Tool]) -> tuple[str, list[ToolCallChunk]]:
        """The whole answer for this context: text plus any tool calls."""
        if not messages:
            return "There is nothing to answer yet.", []
        last = messages[-1]
        if last.get("role") == "toolResult":
            return self._after_tools(messages), []
        prompt = text_of(last) if last.get("role") == "user" else ""
        expression = find_expression(prompt)
        if expression is not None:
            if not any(tool.name == "calc" for tool in tools):
                return f"I would calculate {expression} with the calc tool, but it is not enabled.", []
            call_id = f"call_{sum(len(tool_calls_of(m)) for m in messages) + 1}"
            return "Let me calculate.", [ToolCallChunk(call_id, "calc", {"expression": expression})]
        if _RECALL.search(prompt):
            found = last_calc(messages[:-1])
            if found is None:
                return NOTHING_COMPUTED, []
            return f"Earlier I computed {found[0]}, and the result was {found[1]}.", []
        if _GREETING.search(prompt):
            return GREETING_REPLY, []
        short = " ".join(prompt.split())
        short = short if len(short) <= 60 else short[:57] + "..."
        return (
            f'You said: "{short}". I am the offline demo model: I can greet you, calculate '
            '(try "what is 12*8") and recall what I computed earlier.',
            [],
        )

    def _after_tools(self, messages: list[dict[str, Any]]) -> str:
        """Answer from the tool results that follow the last assistant message."""
        results = {}
        for message in reversed(messages):
            if message.get("role") != "toolResult":
                calls = tool_calls_of(message)
                break
            results[message.get("toolCallId")] = message
        else:
            calls = []
        lines = []
        for call in calls:
            result = results.get(call.get("id"))
            if result is None:
                continue
            output = text_of(result).strip()
            expression = call.get("arguments", {}).get("expression")
            if call.get("name") == "calc" and not result.get("isError"):
                lines.append(f"{expression} = {output}.")
            elif call.get("name") == "calc":
                lines.append(f"I could not calculate {expression}: {output}")
            else:
                lines.append(f"The {call.get('name')} tool said: {output}")
        return " ".join(lines) or "The tools returned nothing I can use."


def _split(text: str, parts: int = 3) -> list[str]:
    """Split text into a few streaming pieces at word boundaries (joined they give ``text``)."""
    words = re.findall(r"\S+\s*", text)
    if len(words) <= 1:
        return [text] if text else []
    size = -(-len(words) // parts)
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]
