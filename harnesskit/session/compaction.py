"""Compaction and branch summaries, the session side: entries in, a cut and an entry out.

No model is called here (that is `agent/summarize.py`) and nothing is written (the caller appends
the payloads through the live session's writer). The rules follow pi's (pi-mono
`packages/coding-agent/src/core/compaction/`): tokens are the last assistant's `usage` plus a
chars/4 estimate of what came after it; the cut keeps about `keep_recent_tokens` of the newest
messages and lands only on a user, assistant, custom-message or branch-summary entry, never on a
tool result, so a tool result always stays with its call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .tokens import CompactionSettings, context_tokens, estimate_tokens
from .tree import Tree, build_context, context_message

READ_TOOLS = ("read",)  # the tool that reads a file, as pi counts it
WRITE_TOOLS = ("write", "edit")  # none in harnesskit today; kept so a foreign session's calls count
SETTING_TYPES = ("model_change", "thinking_level_change", "label", "session_info", "custom")


# ---------------------------------------------------------------- the cut


def _message_at(tree: Tree, pos: int) -> dict | None:
    if tree.types[pos] not in ("message", "custom_message", "branch_summary"):
        return None
    return context_message(tree.entries[pos])


CUT_KINDS = frozenset({"custom_message", "branch_summary", "user", "assistant", "bashExecution", "custom"})
TURN_STARTS = frozenset({"custom_message", "branch_summary", "user", "bashExecution"})


def _kind(tree: Tree, pos: int) -> str | None:
    """A custom_message or branch_summary entry's type, a message entry's role, else None."""
    kind = tree.types[pos]
    if kind in ("custom_message", "branch_summary"):
        return kind
    message = tree.entries[pos].get("message") if kind == "message" else None
    return message.get("role") if isinstance(message, dict) else None


def is_cut_point(tree: Tree, pos: int) -> bool:
    """Where a compaction may start keeping: never a tool result (it belongs to its call)."""
    return _kind(tree, pos) in CUT_KINDS


def is_turn_start(tree: Tree, pos: int) -> bool:
    return _kind(tree, pos) in TURN_STARTS


@dataclass
class Cut:
    """Positions (into the tree) of what a compaction summarises and where it starts keeping."""

    first_kept: int  # the position of firstKeptEntryId
    history: list[int] = field(default_factory=list)  # summarised as the history
    turn_prefix: list[int] = field(default_factory=list)  # the start of a split turn, summarised apart
    previous_summary: str | None = None  # the summary of the compaction this one builds on
    previous_details: object = None


def live_positions(tree: Tree, path: Sequence[int]) -> tuple[list[int], int | None]:
    """The path positions still in the context (after the latest compaction, plus what it kept),
    and the index in `path` of that compaction (None without one)."""
    types = tree.types
    at = next((i for i in range(len(path) - 1, -1, -1) if types[path[i]] == "compaction"), None)
    if at is None:
        return list(path), None
    first_kept = tree.entries[path[at]].get("firstKeptEntryId")
    start = next((i for i in range(at) if tree.ids[path[i]] == first_kept), at)
    kept = [p for p in path[start:at] if types[p] != "compaction"]
    return kept + list(path[at + 1 :]), at


def find_cut(tree: Tree, path: Sequence[int], keep_recent_tokens: int) -> Cut | None:
    """Where to cut the path so about `keep_recent_tokens` of the newest messages stay.

    Walks back from the newest message adding estimates; at the first message that reaches the
    budget it takes the nearest cut point at or after it (so it keeps a bit less rather than cut
    at a tool result), then pulls in the settings entries just before it. A cut at an assistant
    splits its turn: the turn's start is summarised apart (pi's turn-prefix summary). None when
    there is nothing before the cut to summarise.
    """
    live, compaction_at = live_positions(tree, path)
    previous = tree.entries[path[compaction_at]] if compaction_at is not None else None
    if not live:
        return None
    cut_index = 0  # everything fits: keep all (nothing to summarise unless a summary exists)
    total = 0
    for i in range(len(live) - 1, -1, -1):
        message = _message_at(tree, live[i])
        if message is None:
            continue
        total += estimate_tokens(message)
        if total >= keep_recent_tokens:
            after = [j for j in range(i, len(live)) if is_cut_point(tree, live[j])]
            before = [j for j in range(i) if is_cut_point(tree, live[j])]
            if not after and not before:
                return None
            cut_index = after[0] if after else before[-1]  # never a tool result
            break
    while cut_index > 0 and tree.types[live[cut_index - 1]] in SETTING_TYPES:
        cut_index -= 1
    if cut_index == 0:
        return None
    first_kept_index = cut_index
    while tree.types[live[first_kept_index]] in SETTING_TYPES and first_kept_index < len(live) - 1:
        first_kept_index += 1
    cut = Cut(live[cut_index])
    if previous is not None:
        cut.previous_summary = previous.get("summary") if isinstance(previous.get("summary"), str) else None
        cut.previous_details = previous.get("details")
    head = live[:cut_index]
    if not is_turn_start(tree, live[first_kept_index]):
        start = next((j for j in range(cut_index - 1, -1, -1) if is_turn_start(tree, live[j])), None)
        if start is not None:
            cut.history, cut.turn_prefix = head[:start], head[start:]
            return cut
    cut.history = head
    return cut


def messages_at(tree: Tree, positions: Iterable[int]) -> list[dict]:
    """The context messages these positions contribute, in order."""
    out = []
    for pos in positions:
        message = _message_at(tree, pos)
        if message is not None:
            out.append(message)
    return out


# ---------------------------------------------------------------- files touched


def file_operations(messages: Iterable[dict], *previous: object) -> dict[str, list[str]]:
    """pi's `details`: files the summarised messages read or modified, carried over from the
    compactions (or branch summaries) they build on. A file both read and modified is listed as
    modified only."""
    read: set[str] = set()
    modified: set[str] = set()
    for details in previous:
        if not isinstance(details, dict):
            continue
        for key, into in (("readFiles", read), ("modifiedFiles", modified)):
            values = details.get(key)
            if isinstance(values, list):
                into.update(v for v in values if isinstance(v, str))
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for block in message.get("content") or []:
            if not isinstance(block, dict) or block.get("type") != "toolCall":
                continue
            arguments = block.get("arguments")
            path = arguments.get("path") if isinstance(arguments, dict) else None
            if not isinstance(path, str) or not path:
                continue
            if block.get("name") in READ_TOOLS:
                read.add(path)
            elif block.get("name") in WRITE_TOOLS:
                modified.add(path)
    return {"readFiles": sorted(read - modified), "modifiedFiles": sorted(modified)}


# ---------------------------------------------------------------- entries


@dataclass
class Plan:
    """Everything a compaction needs from the session, before the summary exists."""

    cut: Cut
    first_kept_id: str
    tokens_before: int
    history: list[dict]
    turn_prefix: list[dict]
    details: dict[str, list[str]]


def plan_compaction(tree: Tree, leaf_id: str | None, settings: CompactionSettings) -> Plan | None:
    """What to summarise and what to keep from the leaf; None when there is nothing to compact."""
    context = build_context(tree, leaf_id)
    if not context.path:
        return None
    cut = find_cut(tree, context.path, settings.keep_recent_tokens)
    if cut is None:
        return None
    first_kept_id = tree.ids[cut.first_kept]
    if not isinstance(first_kept_id, str):
        return None
    history = messages_at(tree, cut.history)
    turn_prefix = messages_at(tree, cut.turn_prefix)
    if not history and not turn_prefix:
        return None
    summaries = [tree.entries[p].get("details") for p in cut.history if tree.types[p] == "branch_summary"]
    details = file_operations([*history, *turn_prefix], cut.previous_details, *summaries)
    return Plan(cut, first_kept_id, context_tokens(tree, context), history, turn_prefix, details)


# ---------------------------------------------------------------- branch summaries


def branch_to_summarise(tree: Tree, old_leaf: str | None, target: str) -> list[int]:
    """The entries left behind when the leaf goes from `old_leaf` to `target`: from just after
    their common ancestor down to the old leaf (pi's collectEntriesForBranchSummary)."""
    if old_leaf is None or old_leaf not in tree.by_id:
        return []
    old_path = tree.path(tree.by_id[old_leaf])
    target_on_path = set(tree.path(tree.by_id[target]))
    common = max((i for i, p in enumerate(old_path) if p in target_on_path), default=-1)
    return old_path[common + 1 :]


@dataclass
class Navigation:
    """Where the leaf goes for a target entry, and the prompt to offer back (pi's navigateTree)."""

    new_leaf: str | None
    prompt: str | None


def navigation_for(tree: Tree, target: str) -> Navigation:
    """A user (or custom) message puts the leaf on its parent and offers its text again, so a
    branch never starts with a dangling user message; anything else is the new leaf itself."""
    pos = tree.by_id[target]
    entry = tree.entries[pos]
    message = entry.get("message") if tree.types[pos] == "message" else None
    if isinstance(message, dict) and message.get("role") == "user":
        return Navigation(tree.parents[pos] if tree.parent_pos(pos) is not None else None,
                          _text(message.get("content")))
    if tree.types[pos] == "custom_message":
        return Navigation(tree.parents[pos] if tree.parent_pos(pos) is not None else None,
                          _text(entry.get("content")))
    return Navigation(target, None)


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    parts = [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"] \
        if isinstance(content, list) else []
    return "".join(parts)


def branch_details(tree: Tree, positions: Sequence[int]) -> dict[str, list[str]]:
    """The files a branch touched, with those of the summaries inside it."""
    earlier = [tree.entries[p].get("details") for p in positions if tree.types[p] in ("compaction", "branch_summary")]
    return file_operations(messages_at(tree, positions), *earlier)
