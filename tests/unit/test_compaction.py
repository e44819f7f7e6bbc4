"""session/compaction.py: tokens, the trigger, the cut, details; on files harnesskit writes.

Each test names the pi-mono test (packages/coding-agent/test/compaction.test.ts) it stands for.
Sessions are written through LiveSession (harnesskit's writer) and read back from the file, so
what is checked is what a later `continue` or pi would load.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import V1_LARGE, requires_shared

from harnesskit.agent.messages import assistant_message, tool_result_message, user_message
from harnesskit.session.compaction import (
    branch_to_summarise,
    file_operations,
    find_cut,
    navigation_for,
    plan_compaction,
)
from harnesskit.session.live import LiveSession
from harnesskit.session.loader import load_session
from harnesskit.session.tokens import CompactionSettings, context_tokens, estimate_tokens, should_compact, usage_tokens
from harnesskit.session.tree import build_context

MODEL = {"provider": "harnesskit", "modelId": "demo"}


def usage(input_: int, output: int, cache_read: int = 0, cache_write: int = 0) -> dict:
    return {"input": input_, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write}


def assistant(text: str, use: dict | None = None, stop: str = "stop", calls: list[dict] | None = None) -> dict:
    content = [{"type": "text", "text": text}, *(calls or [])]
    return assistant_message(content, api="harnesskit-demo", provider="harnesskit", model="demo",
                             usage=use or usage(100, 50), stop_reason=stop)


class Writer:
    """Writes a session through harnesskit's writer, entry by entry, and reads it back."""

    def __init__(self, tmp_path: Path) -> None:
        self.live = LiveSession.new(tmp_path / "sessions", str(tmp_path), "never", MODEL)
        self.ids: list[str] = []

    def message(self, message: dict) -> str:
        entry = self.live.append_message(message)
        self.ids.append(entry["id"])
        return entry["id"]

    def compaction(self, summary: str, first_kept: str, tokens_before: int) -> str:
        return self.live.append_compaction(summary, first_kept, tokens_before)["id"]

    def load(self):  # noqa: ANN201 - a Session
        self.live.close()
        assert self.live.path is not None
        return load_session(self.live.path)


# ---------------------------------------------------------------- tokens (compaction.test.ts "Token calculation")


def test_context_tokens_from_usage_add_input_output_and_cache() -> None:
    """pi: 'should calculate total context tokens from usage' (1000+500+200+100 = 1800)."""
    assert usage_tokens(usage(1000, 500, 200, 100)) == 1800


def test_context_tokens_of_zero_usage_are_zero() -> None:
    """pi: 'should handle zero values'."""
    assert usage_tokens(usage(0, 0, 0, 0)) == 0
    assert usage_tokens(None) == 0


def test_estimate_is_characters_over_four_rounded_up() -> None:
    assert estimate_tokens(user_message("x" * 9)) == 3
    call = {"type": "toolCall", "id": "c1", "name": "calc", "arguments": {"expression": "2+2"}}
    assert estimate_tokens(assistant("", calls=[call])) == -(-(len("calc") + len('{"expression": "2+2"}')) // 4)
    assert estimate_tokens({"role": "compactionSummary", "summary": "y" * 40}) == 10


# ---------------------------------------------------------------- getLastAssistantUsage


def test_tokens_use_the_last_assistant_usage_plus_what_came_after(tmp_path: Path) -> None:
    """pi: 'should find the last non-aborted assistant message usage'."""
    w = Writer(tmp_path)
    w.message(user_message("Hello"))
    w.message(assistant("Hi", usage(100, 50)))
    w.message(user_message("How are you?"))
    w.message(assistant("Good", usage(200, 100)))
    w.message(user_message("x" * 40))  # after the last assistant: estimated, 10 tokens
    session = w.load()
    assert context_tokens(session.tree, build_context(session.tree)) == 300 + 10


def test_an_aborted_assistant_usage_is_skipped(tmp_path: Path) -> None:
    """pi: 'should skip aborted messages'."""
    w = Writer(tmp_path)
    w.message(user_message("Hello"))
    w.message(assistant("Hi", usage(100, 50)))
    w.message(user_message("How are you?"))
    w.message(assistant("Aborted", usage(300, 150), stop="aborted"))
    session = w.load()
    context = build_context(session.tree)
    after = context.messages[2:]
    assert context_tokens(session.tree, context) == 150 + sum(estimate_tokens(m) for m in after)


def test_without_an_assistant_the_whole_context_is_estimated(tmp_path: Path) -> None:
    """pi: 'should return undefined if no assistant messages' (then pi estimates everything)."""
    w = Writer(tmp_path)
    w.message(user_message("Hello there, twenty characters"))
    w.message(assistant("reply"))  # the file needs an assistant to exist; cut it off by branching
    session = w.load()
    tree = session.tree
    context = build_context(tree, w.ids[0])
    assert context_tokens(tree, context) == estimate_tokens(context.messages[0]) > 0


def test_usage_from_before_a_compaction_is_not_trusted(tmp_path: Path) -> None:
    """A kept assistant measured the old, long context: after a compaction it must not count."""
    w = Writer(tmp_path)
    w.message(user_message("old"))
    w.message(assistant("old reply", usage(90_000, 100)))
    kept = w.message(user_message("kept"))
    w.message(assistant("kept reply", usage(95_000, 100)))
    w.compaction("S" * 40, kept, 95_100)
    session = w.load()
    context = build_context(session.tree)
    assert context_tokens(session.tree, context) == sum(estimate_tokens(m) for m in context.messages) < 100


# ---------------------------------------------------------------- shouldCompact


def test_should_compact_above_window_minus_reserve() -> None:
    """pi: 'should return true when context exceeds threshold'."""
    settings = CompactionSettings(True, 10_000, 20_000)
    assert should_compact(95_000, 100_000, settings)
    assert not should_compact(89_000, 100_000, settings)


def test_should_not_compact_when_disabled() -> None:
    """pi: 'should return false when disabled'."""
    assert not should_compact(95_000, 100_000, CompactionSettings(False, 10_000, 20_000))


def test_reserve_is_capped_at_30_percent_of_the_window() -> None:
    """pi: 'should cap reserveTokens to 30% of context window' and 'fallback from 1M to 200k'."""
    settings = CompactionSettings(True, 120_000, 20_000)
    assert should_compact(150_000, 200_000, settings)
    assert should_compact(158_000, 200_000, settings)
    assert not should_compact(130_000, 200_000, settings)


def test_reserve_below_the_cap_is_used_as_is() -> None:
    """pi: 'should use original reserveTokens when below 30% cap'."""
    settings = CompactionSettings(True, 10_000, 20_000)
    assert should_compact(90_001, 100_000, settings)
    assert not should_compact(90_000, 100_000, settings)


# ---------------------------------------------------------------- findCutPoint


def chat_of(w: Writer, turns: int, words: int = 40) -> None:
    for i in range(turns):
        w.message(user_message(f"User {i} " + "word " * words))
        w.message(assistant(f"Assistant {i} " + "word " * words, usage(0, 100, (i + 1) * 1000)))


def test_cut_lands_on_a_user_or_assistant_message(tmp_path: Path) -> None:
    """pi: 'should find cut point based on actual token differences'."""
    w = Writer(tmp_path)
    chat_of(w, 10)
    session = w.load()
    tree = session.tree
    cut = find_cut(tree, build_context(tree).path, 250)
    assert cut is not None
    message = tree.entries[cut.first_kept]["message"]
    assert message["role"] in ("user", "assistant")
    kept = build_context(tree).path[build_context(tree).path.index(cut.first_kept):]
    kept_tokens = sum(estimate_tokens(tree.entries[p]["message"]) for p in kept if tree.types[p] == "message")
    assert kept_tokens < 250 + 60  # about the budget: at most one message over


def test_no_cut_point_means_nothing_to_compact(tmp_path: Path) -> None:
    """pi: 'should return startIndex if no valid cut points in range' (nothing summarised)."""
    w = Writer(tmp_path)
    w.message(assistant("a"))
    session = w.load()
    assert find_cut(session.tree, build_context(session.tree).path, 1000) is None
    assert plan_compaction(session.tree, session.tree.leaf_id, CompactionSettings(keep_recent_tokens=1000)) is None


def test_everything_within_budget_is_kept(tmp_path: Path) -> None:
    """pi: 'should keep everything if all messages fit within budget'."""
    w = Writer(tmp_path)
    w.message(user_message("1"))
    w.message(assistant("a", usage(0, 50, 500)))
    w.message(user_message("2"))
    w.message(assistant("b", usage(0, 50, 1000)))
    session = w.load()
    assert find_cut(session.tree, build_context(session.tree).path, 50_000) is None


def test_a_cut_inside_a_turn_is_a_split_turn(tmp_path: Path) -> None:
    """pi: 'should indicate split turn when cutting at assistant message' (turn start = its user)."""
    w = Writer(tmp_path)
    w.message(user_message("Turn 1"))
    w.message(assistant("A1 " + "x" * 400))
    turn2 = w.message(user_message("Turn 2"))
    w.message(assistant("A2-1 " + "x" * 4000))
    a22 = w.message(assistant("A2-2 " + "x" * 4000))
    w.message(assistant("A2-3 " + "x" * 4000))
    session = w.load()
    tree = session.tree
    cut = find_cut(tree, build_context(tree).path, 1500)
    assert cut is not None
    assert tree.ids[cut.first_kept] == a22
    assert cut.turn_prefix  # a split turn
    assert tree.ids[cut.turn_prefix[0]] == turn2  # the turn's start is summarised on its own
    assert [tree.ids[p] for p in cut.history][-1] != turn2


def test_the_cut_never_separates_a_tool_result_from_its_call(tmp_path: Path) -> None:
    """The cut walks on to the next user/assistant entry rather than land on a tool result."""
    w = Writer(tmp_path)
    chat_of(w, 3)
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "/etc/hostname"}}
    w.message(user_message("read it"))
    w.message(assistant("", calls=[call], stop="toolUse"))
    w.message(tool_result_message("c1", "read", "y" * 2000, False))
    after = w.message(assistant("done"))
    session = w.load()
    tree = session.tree
    for budget in range(1, 700, 7):
        cut = find_cut(tree, build_context(tree).path, budget)
        if cut is None:
            continue
        assert tree.entries[cut.first_kept]["message"]["role"] != "toolResult", budget
    cut = find_cut(tree, build_context(tree).path, 400)
    assert cut is not None and tree.ids[cut.first_kept] == after


# ---------------------------------------------------------------- buildSessionContext after compactions


def test_context_without_compaction_has_every_message(tmp_path: Path) -> None:
    """pi: 'should load all messages when no compaction' (thinking off, model from the assistant)."""
    w = Writer(tmp_path)
    for text in ("1", "2"):
        w.message(user_message(text))
        w.message(assistant(text))
    context = build_context(w.load().tree)
    assert len(context.messages) == 4
    assert context.thinking_level == "off"
    assert context.model == MODEL


def test_single_compaction_context_is_summary_kept_then_after(tmp_path: Path) -> None:
    """pi: 'should handle single compaction' (summary + u2, a2 + u3, a3 = 5)."""
    w = Writer(tmp_path)
    w.message(user_message("1"))
    w.message(assistant("a"))
    u2 = w.message(user_message("2"))
    w.message(assistant("b"))
    w.compaction("Summary of 1,a,2,b", u2, 10_000)
    w.message(user_message("3"))
    w.message(assistant("c"))
    messages = build_context(w.load().tree).messages
    assert len(messages) == 5
    assert messages[0]["role"] == "compactionSummary"
    assert "Summary of 1,a,2,b" in messages[0]["summary"]


def test_only_the_latest_compaction_counts(tmp_path: Path) -> None:
    """pi: 'should handle multiple compactions (only latest matters)'."""
    w = Writer(tmp_path)
    u1 = w.message(user_message("1"))
    w.message(assistant("a"))
    w.compaction("First summary", u1, 10_000)
    w.message(user_message("2"))
    w.message(assistant("b"))
    u3 = w.message(user_message("3"))
    w.message(assistant("c"))
    w.compaction("Second summary", u3, 10_000)
    w.message(user_message("4"))
    w.message(assistant("d"))
    messages = build_context(w.load().tree).messages
    assert len(messages) == 5
    assert "Second summary" in messages[0]["summary"]


def test_first_kept_at_the_first_entry_keeps_everything(tmp_path: Path) -> None:
    """pi: 'should keep all messages when firstKeptEntryId is first entry'."""
    w = Writer(tmp_path)
    u1 = w.message(user_message("1"))
    w.message(assistant("a"))
    w.compaction("First summary", u1, 10_000)
    w.message(user_message("2"))
    w.message(assistant("b"))
    assert len(build_context(w.load().tree).messages) == 5


def test_model_and_thinking_level_are_tracked(tmp_path: Path) -> None:
    """pi: 'should track model and thinking level changes' (the assistant's model wins later)."""
    w = Writer(tmp_path)
    w.message(user_message("1"))
    w.live.append_model_change("openai", "gpt-4")
    w.message(assistant("a"))
    w.live.append_thinking_level("high")
    context = build_context(w.load().tree)
    assert context.model == MODEL
    assert context.thinking_level == "high"


def test_a_second_compaction_builds_on_the_first(tmp_path: Path) -> None:
    """Repeated compactions: the plan carries the previous summary and never cuts before what it kept."""
    w = Writer(tmp_path)
    chat_of(w, 4)
    session = w.load()
    live = LiveSession.reopen(session, "never")
    plan = plan_compaction(live.tree, live.leaf_id, CompactionSettings(keep_recent_tokens=80))
    assert plan is not None and plan.cut.previous_summary is None
    live.append_compaction("FIRST", plan.first_kept_id, plan.tokens_before, plan.details)
    for i in range(4, 8):
        live.append_message(user_message(f"User {i} " + "word " * 40))
        live.append_message(assistant(f"Assistant {i} " + "word " * 40))
    second = plan_compaction(live.tree, live.leaf_id, CompactionSettings(keep_recent_tokens=80))
    assert second is not None
    assert second.cut.previous_summary == "FIRST"
    kept_before = live.tree.by_id[plan.first_kept_id]
    assert all(p >= kept_before for p in second.cut.history)  # history = what the first one kept, and after
    live.close()


# ---------------------------------------------------------------- files touched


def test_files_read_are_tracked_across_compactions() -> None:
    """pi's details {readFiles, modifiedFiles}: carried over, a modified file is not listed as read."""
    call = {"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": "b.txt"}}
    write = {"type": "toolCall", "id": "d", "name": "write", "arguments": {"path": "a.txt"}}
    details = file_operations([assistant("", calls=[call, write])], {"readFiles": ["a.txt", "z.txt"]})
    assert details == {"readFiles": ["b.txt", "z.txt"], "modifiedFiles": ["a.txt"]}


# ---------------------------------------------------------------- the large fixture


@requires_shared
def test_cut_in_the_large_pi_session_lands_on_a_message() -> None:
    """pi: 'should find cut point in large session' and 'should load session correctly'."""
    session = load_session(V1_LARGE)
    tree = session.tree
    context = build_context(tree)
    assert len(context.messages) > 100
    cut = find_cut(tree, context.path, 20_000)
    assert cut is not None
    assert tree.types[cut.first_kept] == "message"
    assert tree.entries[cut.first_kept]["message"]["role"] in ("user", "assistant")


# ---------------------------------------------------------------- navigation


def test_navigating_to_a_user_message_moves_to_its_parent_and_offers_its_text(tmp_path: Path) -> None:
    """pi's navigateTree: a user message's parent becomes the leaf; its text goes back to the editor."""
    w = Writer(tmp_path)
    u1 = w.message(user_message("u1"))
    a1 = w.message(assistant("a1"))
    u2 = w.message(user_message("u2"))
    a2 = w.message(assistant("a2"))
    tree = w.load().tree
    assert (navigation_for(tree, u2).new_leaf, navigation_for(tree, u2).prompt) == (a1, "u2")
    # u1's parent is the thinking_level_change harnesskit (like pi) writes first: no messages there
    first = navigation_for(tree, u1)
    assert (first.new_leaf, first.prompt) == (tree.parents[tree.by_id[u1]], "u1")
    assert tree.types[tree.by_id[first.new_leaf]] == "thinking_level_change"
    assert build_context(tree, first.new_leaf).messages == []
    assert (navigation_for(tree, a1).new_leaf, navigation_for(tree, a1).prompt) == (a1, None)
    assert [tree.ids[p] for p in branch_to_summarise(tree, a2, u2)] == [a2]
    assert [tree.ids[p] for p in branch_to_summarise(tree, a2, u1)] == [a1, u2, a2]


@pytest.mark.parametrize("keep", [1, 50, 400])
def test_a_written_compaction_reads_as_summary_then_the_kept_entries(tmp_path: Path, keep: int) -> None:
    """Every file with a compaction harnesskit writes reads with pi's context: the summary first,
    then the kept entries from firstKeptEntryId, in path order."""
    w = Writer(tmp_path)
    chat_of(w, 6)
    session = w.load()
    live = LiveSession.reopen(session, "never")
    plan = plan_compaction(live.tree, live.leaf_id, CompactionSettings(keep_recent_tokens=keep))
    assert plan is not None
    live.append_compaction("THE SUMMARY", plan.first_kept_id, plan.tokens_before, plan.details)
    live.close()
    reread = load_session(session.path)
    messages = build_context(reread.tree).messages
    assert messages[0] == {"role": "compactionSummary", "summary": "THE SUMMARY",
                           "tokensBefore": plan.tokens_before, "timestamp": messages[0]["timestamp"]}
    first_kept = reread.tree.by_id[plan.first_kept_id]
    expected = [reread.tree.entries[p]["message"] for p in build_context(reread.tree).path
                if p >= first_kept and reread.tree.types[p] == "message"]
    assert messages[1:] == expected


def test_appending_to_a_lazily_read_session_wraps_its_entries_once(tmp_path: Path) -> None:
    """Every request of a continued chat builds the context again: the appended entries must not
    pile one wrapper per entry on the lazy sequence (each read then walked them all)."""
    from harnesskit.session.index import load_for_continue
    from harnesskit.session.tree import _Extended

    w = Writer(tmp_path)
    chat_of(w, 3)
    session = w.load()
    live = LiveSession.reopen(load_for_continue(session.path), "never")
    for i in range(50):
        live.append_message(user_message(f"more {i}"))
    entries = live.tree.entries
    assert isinstance(entries, _Extended) and not isinstance(entries._base, _Extended)
    assert len(build_context(live.tree, live.leaf_id).messages) == 6 + 50
    live.close()
