"""The chat's /commands: what a line that starts with / does to the conversation. Loaded at the
first one, so a chat that types none (`chat -p`) never pays for them (start-up counts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from harnesskit.session import EntryNotFound, ForkFailed

from . import compacting
from .conversation import interactive, tune
from .errors import Fail
from .options import identity, make_model

if TYPE_CHECKING:
    from harnesskit.agent.models import Model

    from .conversation import Conversation

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high")
HELP_TEXT = """commands:
  /help              this list
  /exit              leave (Ctrl-D, or Ctrl-C on an empty line; Ctrl-C clears a typed line)
  /tree              the session's branches, leaf marked
  /label ID NAME     name an entry (ID: id, prefix or label)
  /name TEXT         name the session
  /model M           switch model (demo, script:FILE.yaml, openai:MODEL)
  /branch ID [--summary|--no-summary]
                     move the leaf: the next message starts a branch at ID (a user message:
                     at its parent, its text offered again); --summary summarises the branch left
  /compact [TEXT]    summarise the older messages now (TEXT: what the summary should focus on)
  /thinking [LEVEL]  show or set the thinking level: off, minimal, low, medium, high
  /fork [ID]         continue in a new session file holding the path to ID (default: the leaf)"""


def recoverable() -> tuple[type[Exception], ...]:
    """What a /command may fail with while the chat goes on (a file changed under a lazy read:
    SessionError); imported when one fails, not at start-up."""
    from harnesskit.agent.summarize import SummaryError
    from harnesskit.session import SessionError

    return (Fail, EntryNotFound, SessionError, SummaryError)


def run(chat: Conversation, line: str) -> bool:
    """Run a /command; False means leave the chat."""
    name, _, rest = line[1:].partition(" ")
    rest = rest.strip()
    try:
        if name in ("exit", "quit"):
            return False
        if name == "help":
            chat.screen.note(HELP_TEXT)
        elif name == "tree":
            from . import render

            tree = chat.live.tree
            for row in render.draw_tree(tree, None, tree.labels(), chat.live.leaf_id, render.terminal_width()):
                chat.screen.note(row)
        elif name == "label":
            ref, _, label = rest.partition(" ")
            if not ref or not label.strip():
                raise Fail("usage: /label ID NAME")
            target = chat.live.tree.resolve(ref)
            chat.live.append_label(target, label.strip())
            chat.screen.note(f"labelled {target} {label.strip()!r}")
        elif name == "name":
            if not rest:
                raise Fail("usage: /name TEXT")
            chat.live.append_session_name(rest)
            chat.screen.note(f"session named {rest!r}")
        elif name == "model":
            if not rest:
                chat.screen.note(f"model: {chat.model.provider}/{chat.model.model_id}")
            else:
                switch_model(chat, make_model(rest, chat.settings))
        elif name == "branch":
            words = rest.split()
            flags = {w for w in words if w in ("--summary", "--no-summary")}
            refs = [w for w in words if w not in flags]
            if len(refs) != 1 or len(flags) > 1:
                raise Fail("usage: /branch ID [--summary|--no-summary]")
            branch(chat, chat.live.tree.resolve(refs[0]), summary="--summary" in flags if flags else None)
        elif name == "compact":
            compact(chat, rest or None)
        elif name == "thinking":
            thinking(chat, rest)
        elif name == "fork":
            fork(chat, rest or None)
        else:
            raise Fail(f"unknown command /{name} (try /help)")
    except Exception as error:
        if not isinstance(error, recoverable()):
            raise
        message = error.format_message() if isinstance(error, Fail) else str(error)
        chat.screen.error(message)
    return True


def compact(chat: Conversation, instructions: str | None) -> None:
    done = compacting.compact(chat.live, chat.model, chat.settings.compaction, instructions)
    if done is None:
        raise Fail("nothing to compact yet: the context fits in the messages a compaction keeps")
    chat.context = chat.live.context().messages
    chat.report_compaction(done)


def thinking(chat: Conversation, level: str) -> None:
    if not level:
        chat.screen.note(f"thinking: {chat.live.context().thinking_level}")
        return
    if level not in THINKING_LEVELS:
        raise Fail(f"thinking level must be one of {', '.join(THINKING_LEVELS)}, not {level!r}")
    if level != chat.live.context().thinking_level:
        chat.live.append_thinking_level(level)
    tune(chat.model, level, chat.settings.reasoning)
    chat.screen.note(f"thinking: {level}")


def branch(chat: Conversation, target: str, *, summary: bool | None) -> None:
    """pi's tree navigation; `summary` None asks at a terminal (y/N), else no summary."""
    if summary is None:
        summary = interactive() and click.confirm("Summarise the branch being left?", default=False)
    done = compacting.branch(chat.live, target, model=chat.model if summary else None,
                             limits=chat.settings.compaction)
    chat.context = chat.live.context().messages
    where = done.new_leaf or "the start (a new root)"
    note = f"; branch of {done.left} messages summarised" if done.entry is not None else ""
    chat.screen.note(f"leaf moved to {where}{note}; {len(chat.context)} messages in context")
    chat.offer(done.prompt)


def switch_model(chat: Conversation, model: Model) -> None:
    if identity(model) != identity(chat.model):
        chat.live.append_model_change(model.provider, model.model_id)
    tune(model, chat.live.context().thinking_level, chat.settings.reasoning)
    chat.model = model
    chat.screen.note(f"model: {model.provider}/{model.model_id}")


def fork(chat: Conversation, ref: str | None) -> None:
    live = chat.live
    at = live.tree.resolve(ref) if ref else live.leaf_id
    if at is None:
        raise Fail("nothing to fork yet: the session is empty")
    from harnesskit.session import ROOT, fork_point

    point, offered = fork_point(live.tree, at) if ref else (at, None)
    try:
        forked = live.fork(point if point is not None else ROOT, chat.settings.directory(), chat.settings.cwd,
                           chat.settings.fsync)
    except ForkFailed as error:
        chat.live = error.session or live
        raise Fail(str(error)) from None
    chat.live = forked
    chat.context = forked.context().messages
    forked.uses_model(chat.model.provider, chat.model.model_id)  # e.g. a switch not written yet
    if forked.path is None:
        chat.screen.note(f"forked in memory: {len(chat.context)} messages in context")
    else:
        chat.screen.note(f"forked to {forked.path}")
        if not forked.created:
            chat.screen.note("(no reply on that path yet: the file is written with the first one, as pi does)")
    chat.offer(offered)
