"""An offline, deterministic model for demos and tests.

It decides everything from the context it is given, never from hidden state, so a conversation
restored from a session file continues exactly as if it had never stopped: asked what it computed
before, it looks for the last calc call and its result in the messages.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from harnesskit.agent.messages import text_of, tool_calls_of
from harnesskit.agent.models import Chunk, DoneChunk, TextChunk, ToolCallChunk
from harnesskit.agent.summarize import PROMPT_HEAD
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


def _chars(message: dict[str, Any]) -> int:
    calls = tool_calls_of(message)
    return len(text_of(message)) + sum(len(str(c.get("name", ""))) + len(json.dumps(c.get("arguments", {})))
                                       for c in calls)


def is_summary_request(messages: list[dict[str, Any]]) -> bool:
    return len(messages) == 1 and messages[0].get("role") == "user" and text_of(messages[0]).startswith(PROMPT_HEAD)


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def demo_summary(prompt: str, max_tokens: int | None) -> str:
    """A deterministic summary from the request alone: the first and last requests and the
    results computed, in the prompt's sections. It stays small however long the history is."""
    previous = re.search(r"<previous-summary>\n(.*?)\n</previous-summary>", prompt, re.S)
    conversation = prompt.split("<conversation>", 1)[-1]
    asked = re.findall(r"^\[User\]: (.*)$", conversation, re.M)
    results = re.findall(r"^\[Tool result\]: (.*)$", conversation, re.M)
    goal = re.search(r"^## Goal\n- (.*)$", previous.group(1), re.M) if previous else None
    first = goal.group(1) if goal else (_clip(asked[0]) if asked else "(none stated)")
    building = ", building on the previous summary" if previous else ""
    lines = ["## Goal", f"- {first}", "## Progress", f"- {len(asked)} more user message(s) summarised{building}"]
    if results:
        lines.append(f"- last tool result: {_clip(results[-1], 40)}")
    lines += ["## Decisions", "- none recorded (offline demo model)", "## Files", "- see the file lists below",
              "## Next steps", f"- go on from: {_clip(asked[-1]) if asked else 'the kept messages'}"]
    text = "\n".join(lines)
    return text if max_tokens is None else text[: max(1, max_tokens) * 4]


class DemoModel:
    """Greets, calculates with the calc tool, and recalls earlier results from the context."""

    api = "harnesskit-demo"
    provider = "harnesskit"
    model_id = "demo"

    def stream(self, messages: list[dict[str, Any]], tools: list[Tool], *,
               max_tokens: int | None = None) -> Iterator[Chunk]:
        if is_summary_request(messages):
            text, calls = demo_summary(text_of(messages[-1]), max_tokens), []
        else:
            text, calls = self.reply(messages, tools)
        pieces = _split(text)
        yield from (TextChunk(piece) for piece in pieces)
        yield from calls
        # tokens as pi estimates them (characters / 4), so a context window means the same here
        prompt_tokens = math.ceil(sum(_chars(m) for m in messages) / 4) + 10 * len(tools)
        output_tokens = math.ceil(len(text) / 4) + 8 * len(calls)
        yield DoneChunk(
            stop_reason="toolUse" if calls else "stop",
            usage={"input": prompt_tokens, "output": output_tokens},
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
