"""A summary is one model call: messages in, text out (no files, no session).

Used for compaction (the history before the kept messages, and the start of a turn cut in two)
and for branch summaries (the branch being left). The prompt asks for a fixed structure, so a
summary of a summary keeps the same sections; the reply is capped (`max_tokens`), and the
conversation sent is trimmed from its oldest end to `budget_tokens`, so neither the request nor
the reply can outgrow the model's window.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from harnesskit.agent.messages import text_of, tool_calls_of, user_message
from harnesskit.agent.models import DoneChunk, Model, ModelError, TextChunk

PROMPT_HEAD = ("Write a handoff summary of the conversation below: another assistant will continue it "
               "from your summary alone.")
STRUCTURE = """Use exactly these sections, short bullet points, no preamble:
## Goal
What the user wants overall (keep earlier goals that still hold).
## Progress
What has been done so far, with concrete results (numbers, answers, names).
## Decisions
Choices made and constraints or preferences the user stated.
## Files
Files read or modified, with absolute paths where known.
## Next steps
What remains to do, in order."""
UPDATE_NOTE = ("The <previous-summary> covers the conversation before the messages below: merge them into one "
               "summary in the same sections, keeping what still matters from the previous one.")
TURN_NOTE = ("The messages below are the beginning of a turn whose end is kept verbatim after this summary: "
             "say what the user asked in it and what had been done so far, so the rest reads on.")
BRANCH_NOTE = ("The messages below are a branch of the conversation the user is leaving to try something else: "
               "summarise what was tried there and learned, so it is not lost.")
BRANCH_PREAMBLE = "The user explored another branch of this conversation before coming back here. What it found:\n\n"
TOOL_RESULT_CHARS = 2000  # a long tool output is cut in the request (pi does the same)
OMITTED = "[... earlier messages omitted to fit the model's window ...]\n"


class SummaryError(Exception):
    """The summary could not be made (the model failed or said nothing); nothing is written."""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"


def serialized(messages: Iterable[dict[str, Any]]) -> list[str]:
    """One labelled paragraph per message (or per part of an assistant message)."""
    lines: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "compactionSummary":
            lines.append(f"[Earlier summary]: {message.get('summary', '')}")
        elif role == "branchSummary":
            lines.append(f"[Summary of another branch]: {message.get('summary', '')}")
        elif role == "user":
            lines.append(f"[User]: {text_of(message)}")
        elif role == "assistant":
            text = text_of(message)
            if text:
                lines.append(f"[Assistant]: {text}")
            calls = [f"{c.get('name')}({json.dumps(c.get('arguments', {}), ensure_ascii=False)})"
                     for c in tool_calls_of(message)]
            if calls:
                lines.append(f"[Assistant tool calls]: {'; '.join(calls)}")
        elif role == "toolResult":
            mark = " (error)" if message.get("isError") else ""
            lines.append(f"[Tool result{mark}]: {_cut(text_of(message), TOOL_RESULT_CHARS)}")
        elif role == "bashExecution":
            output = _cut(str(message.get("output", "")), TOOL_RESULT_CHARS)
            lines.append(f"[Shell]: {message.get('command', '')}\n{output}")
        elif role == "custom":
            lines.append(f"[{message.get('customType') or 'Note'}]: {text_of(message)}")
    return lines


def build_prompt(messages: list[dict[str, Any]], *, kind: str = "history", previous: str | None = None,
                 instructions: str | None = None, budget_tokens: int | None = None) -> str:
    """The one user message of a summary request."""
    parts = [PROMPT_HEAD, STRUCTURE]
    if kind == "turn":
        parts.append(TURN_NOTE)
    elif kind == "branch":
        parts.append(BRANCH_NOTE)
    if previous:
        parts.append(UPDATE_NOTE)
    if instructions and instructions.strip():
        parts.append(f"The user asks the summary to focus on: {instructions.strip()}")
    head = "\n\n".join(parts)
    previous_block = f"\n\n<previous-summary>\n{previous}\n</previous-summary>" if previous else ""
    parts = serialized(messages)

    def whole(text: str) -> str:
        return f"{head}{previous_block}\n\n<conversation>\n{text}\n</conversation>"

    conversation = "\n\n".join(parts)
    if budget_tokens is None or len(whole(conversation)) <= budget_tokens * 4:
        return whole(conversation)
    room = max(0, budget_tokens * 4 - len(whole(OMITTED)))
    kept: list[str] = []  # the newest whole messages that fit; the oldest go first
    used = 0
    for part in reversed(parts):
        if used + len(part) + 2 > room:
            break
        kept.append(part)
        used += len(part) + 2
    if not kept and parts:  # even the newest alone is too long: its end
        kept = [parts[-1][len(parts[-1]) - room:] if room else ""]
    return whole(OMITTED + "\n\n".join(reversed(kept)))


def summarize(model: Model, messages: list[dict[str, Any]], *, max_tokens: int, kind: str = "history",
              previous: str | None = None, instructions: str | None = None,
              budget_tokens: int | None = None) -> str:
    """Ask `model` for the summary; raises SummaryError (never returns an empty summary).
    A Ctrl-C is not caught: an aborted summary, like a failed one, writes nothing."""
    prompt = build_prompt(messages, kind=kind, previous=previous, instructions=instructions,
                          budget_tokens=budget_tokens)
    pieces: list[str] = []
    done: DoneChunk | None = None
    try:
        for chunk in model.stream([user_message(prompt)], [], max_tokens=max_tokens):
            if isinstance(chunk, TextChunk):
                pieces.append(chunk.text)
            elif isinstance(chunk, DoneChunk):
                done = chunk
    except ModelError as error:
        raise SummaryError(f"the summary failed: {error.message}") from None
    except TypeError as error:  # a model without the max_tokens keyword
        raise SummaryError(f"the model cannot write a summary: {error}") from None
    summary = "".join(pieces).strip()
    if done is not None and done.stop_reason in ("error", "aborted"):
        raise SummaryError(f"the summary failed: the model stopped with {done.stop_reason}")
    if not summary:
        raise SummaryError("the summary failed: the model returned no text")
    return summary


def files_section(details: dict[str, list[str]]) -> str:
    """The files touched, appended to a summary as pi does (tracked in `details`, not by the model)."""
    parts = []
    if details.get("readFiles"):
        parts.append("<read-files>\n" + "\n".join(details["readFiles"]) + "\n</read-files>")
    if details.get("modifiedFiles"):
        parts.append("<modified-files>\n" + "\n".join(details["modifiedFiles"]) + "\n</modified-files>")
    return ("\n\n" + "\n\n".join(parts)) if parts else ""


def compaction_summary(model: Model, history: list[dict[str, Any]], turn_prefix: list[dict[str, Any]],
                       details: dict[str, list[str]], *, max_tokens: int, previous: str | None = None,
                       instructions: str | None = None, budget_tokens: int | None = None) -> str:
    """The whole compaction summary: the history (building on the previous summary), then, when
    a turn was cut in two, that turn's start summarised on its own (pi's split-turn summary)."""
    parts = []
    if history or previous:
        parts.append(summarize(model, history, max_tokens=max_tokens, previous=previous,
                               instructions=instructions, budget_tokens=budget_tokens))
    if turn_prefix:
        prefix = summarize(model, turn_prefix, max_tokens=max(1, max_tokens // 2), kind="turn",
                           instructions=instructions, budget_tokens=budget_tokens)
        parts.append(f"## The turn in progress (its start, summarised)\n{prefix}")
    return "\n\n---\n\n".join(parts) + files_section(details)


def branch_summary(model: Model, branch: list[dict[str, Any]], details: dict[str, list[str]], *,
                   max_tokens: int, instructions: str | None = None, budget_tokens: int | None = None) -> str:
    text = summarize(model, branch, max_tokens=max_tokens, kind="branch", instructions=instructions,
                     budget_tokens=budget_tokens)
    return BRANCH_PREAMBLE + text + files_section(details)
