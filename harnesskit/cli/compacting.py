"""Where the session side of compaction meets the summary call: the conversation driver, the
`compact` command and `/branch` use these. The plan comes from `session/compaction.py` (no
model), the text from `agent/summarize.py` (no files); only a finished summary is appended, so a
failed or interrupted one leaves the file as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from harnesskit.agent.models import Model, default_context_window
from harnesskit.agent.summarize import branch_summary, compaction_summary
from harnesskit.config import Config
from harnesskit.session.tokens import (
    CompactionSettings,
    context_tokens,
    effective_reserve,
    estimate_all,
    should_compact,
    summary_max_tokens,
)

if TYPE_CHECKING:
    from harnesskit.session.live import LiveSession


@dataclass(frozen=True)
class Limits:
    """The compaction settings and the window they apply to (config, else the model's default)."""

    settings: CompactionSettings
    window_override: int | None = None

    @classmethod
    def defaults(cls) -> Limits:
        return cls(CompactionSettings())

    def window(self, model: Model) -> int:
        return self.window_override or default_context_window(model.provider, model.model_id)

    def threshold(self, model: Model) -> int:
        window = self.window(model)
        return window - effective_reserve(window, self.settings)


def limits_from(config: Config) -> Limits:
    settings = CompactionSettings(
        enabled=bool(config.get("compaction.enabled")),
        reserve_tokens=int(config.get("compaction.reserve_tokens")),
        keep_recent_tokens=int(config.get("compaction.keep_recent_tokens")),
    )
    return Limits(settings, config.get("context_window"))


@dataclass
class Compacted:
    entry: dict
    summarised: int  # messages folded into the summary
    kept: int  # messages in the context after it
    tokens_after: int


def compact(live: LiveSession, model: Model, limits: Limits, instructions: str | None = None) -> Compacted | None:
    """Summarise what comes before the cut and append the `compaction` entry; None when there is
    nothing to summarise. Raises SummaryError (and writes nothing) when the summary fails."""
    from harnesskit.session.compaction import plan_compaction  # the cut: only when one is made

    plan = plan_compaction(live.tree, live.leaf_id, limits.settings)
    if plan is None:
        return None
    window = limits.window(model)
    max_tokens = summary_max_tokens(window, limits.settings)
    summary = compaction_summary(model, plan.history, plan.turn_prefix, plan.details, max_tokens=max_tokens,
                                 previous=plan.cut.previous_summary, instructions=instructions,
                                 budget_tokens=max(64, window - max_tokens))
    entry = live.append_compaction(summary, plan.first_kept_id, plan.tokens_before, plan.details)
    context = live.context().messages
    return Compacted(entry, len(plan.history) + len(plan.turn_prefix), len(context) - 1, estimate_all(context))


def over_threshold(live: LiveSession, model: Model, limits: Limits) -> int | None:
    """The context's tokens when they call for an automatic compaction, else None."""
    if not limits.settings.enabled:
        return None
    tokens = context_tokens(live.tree, live.context())
    return tokens if should_compact(tokens, limits.window(model), limits.settings) else None


@dataclass
class Branched:
    new_leaf: str | None
    prompt: str | None  # the user message's text, offered again
    entry: dict | None  # the branch_summary entry, when one was written
    left: int  # messages in the branch left behind


def branch(live: LiveSession, target: str, *, model: Model | None, limits: Limits,
           instructions: str | None = None) -> Branched:
    """Move the leaf to `target` as pi's tree navigation does; with a model, summarise the branch
    being left into a `branch_summary` entry at the new position. The summary is made before the
    leaf moves: when it fails, nothing changes."""
    from harnesskit.session.compaction import branch_details, branch_to_summarise, messages_at, navigation_for

    tree = live.tree
    navigation = navigation_for(tree, target)
    left = branch_to_summarise(tree, live.leaf_id, target) if target != live.leaf_id else []
    messages = messages_at(tree, left)
    summary = None
    if model is not None and messages:
        window = limits.window(model)
        max_tokens = summary_max_tokens(window, limits.settings)
        summary = branch_summary(model, messages, branch_details(tree, left), max_tokens=max_tokens,
                                 instructions=instructions, budget_tokens=max(64, window - max_tokens))
    live.branch(navigation.new_leaf)
    entry = None
    if summary is not None:
        entry = live.append_branch_summary(navigation.new_leaf, summary, branch_details(tree, left))
    return Branched(navigation.new_leaf, navigation.prompt, entry, len(messages))
