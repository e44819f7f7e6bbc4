"""agent/summarize.py: the summary request (messages in, text out, no files)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from harnesskit.agent.messages import assistant_message, tool_result_message, user_message
from harnesskit.agent.models import DoneChunk, ModelError, TextChunk
from harnesskit.agent.models.demo import DemoModel
from harnesskit.agent.summarize import (
    OMITTED,
    PROMPT_HEAD,
    SummaryError,
    build_prompt,
    compaction_summary,
    serialized,
    summarize,
)


def reply(text: str, calls: list[dict] | None = None) -> dict:
    return assistant_message([{"type": "text", "text": text}, *(calls or [])], api="x", provider="p", model="m",
                             stop_reason="stop")


class Fixed:
    api, provider, model_id = "x", "p", "m"

    def __init__(self, *chunks: Any, error: str | None = None) -> None:
        self.chunks, self.error, self.asked = chunks, error, []

    def stream(self, messages: list, tools: list, *, max_tokens: int | None = None) -> Iterator[Any]:
        self.asked.append((messages, tools, max_tokens))
        if self.error:
            raise ModelError(self.error)
        yield from self.chunks


def test_the_conversation_is_serialised_with_labels() -> None:
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.txt"}}
    text = "\n\n".join(serialized([user_message("hi"), reply("let me read", [call]),
                      tool_result_message("c1", "read", "x" * 3000, False)]))
    assert text.startswith("[User]: hi\n\n[Assistant]: let me read\n\n[Assistant tool calls]: read(")
    assert '"path": "a.txt"' in text
    assert "[Tool result]: " + "x" * 2000 + " [... 1000 more characters]" in text


def test_a_request_is_trimmed_to_its_budget_dropping_the_oldest_whole_messages() -> None:
    messages = [user_message(f"message number {n} " + "word " * 30) for n in range(60)]
    prompt = build_prompt(messages, previous="PREVIOUS", instructions="the numbers", budget_tokens=600)
    assert math.ceil(len(prompt) / 4) <= 600  # pi's estimate: four characters a token
    assert OMITTED in prompt and "message number 59 " in prompt and "message number 0 " not in prompt
    conversation = prompt.split("<conversation>\n", 1)[1]
    assert conversation.startswith(OMITTED + "[User]: message number ")  # a whole message first
    assert "<previous-summary>\nPREVIOUS\n</previous-summary>" in prompt and "focus on: the numbers" in prompt
    untrimmed = build_prompt(messages[:2], budget_tokens=600)
    assert OMITTED not in untrimmed and untrimmed.startswith(PROMPT_HEAD)


def test_the_reply_is_capped_and_sent_without_tools() -> None:
    model = Fixed(TextChunk("## Goal\n"), TextChunk("- things"), DoneChunk("stop"))
    assert summarize(model, [user_message("hi")], max_tokens=123) == "## Goal\n- things"
    [(messages, tools, max_tokens)] = model.asked
    assert tools == [] and max_tokens == 123 and len(messages) == 1 and messages[0]["role"] == "user"


@pytest.mark.parametrize("model,needle", [
    (Fixed(error="HTTP 500"), "HTTP 500"),
    (Fixed(TextChunk("  "), DoneChunk("stop")), "no text"),
    (Fixed(TextChunk("partial"), DoneChunk("aborted")), "aborted"),
])
def test_a_failed_summary_is_an_error_never_an_empty_summary(model: Fixed, needle: str) -> None:
    with pytest.raises(SummaryError, match=needle):
        summarize(model, [user_message("hi")], max_tokens=10)


def test_a_split_turn_has_two_parts_and_the_files_follow() -> None:
    model = Fixed(TextChunk("S"), DoneChunk("stop"))
    text = compaction_summary(model, [user_message("old")], [user_message("turn start")],
                              {"readFiles": ["a.txt"], "modifiedFiles": []}, max_tokens=100)
    assert text == ("S\n\n---\n\n## The turn in progress (its start, summarised)\nS"
                    "\n\n<read-files>\na.txt\n</read-files>")
    assert [m[2] for m in model.asked] == [100, 50]


def test_the_demo_model_summary_is_deterministic_and_small() -> None:
    messages = [user_message(f"what is {n}*2") for n in range(300)]
    first = summarize(DemoModel(), messages, max_tokens=200)
    assert first == summarize(DemoModel(), messages, max_tokens=200)
    assert first.startswith("## Goal\n- what is 0*2") and "300 more user message(s)" in first
    assert len(first) <= 800
    again = summarize(DemoModel(), [user_message("more")], max_tokens=200, previous=first)
    assert again.startswith("## Goal\n- what is 0*2") and "building on the previous summary" in again
