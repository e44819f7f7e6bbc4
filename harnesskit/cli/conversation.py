"""The conversation driver chat, continue, compact and demo share: prompts in, agent events
rendered by the screen, every finished message appended through the live session (the loop itself
knows nothing of files)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import click

from harnesskit.agent.events import AgentEnd, Event
from harnesskit.agent.loop import drive, run_agent
from harnesskit.agent.messages import text_of, user_message
from harnesskit.agent.models import Model
from harnesskit.session import CannotAppend, LiveSession
from harnesskit.text import one_line

from . import compacting
from .errors import Fail, warn
from .options import ChatOptions, Settings, identity
from .screen import Screen


def tune(model: Model, thinking_level: str, reasoning: str) -> None:
    """Hand the session's thinking level to a model that can use it (openai: reasoning_effort)."""
    if hasattr(model, "thinking_level"):
        model.thinking_level = thinking_level  # type: ignore[attr-defined]
        model.reasoning = reasoning  # type: ignore[attr-defined]


class Conversation:
    """Prompts in, rendered events out, every finished message appended through the live session."""

    def __init__(self, live: LiveSession, model: Model, settings: Settings, screen: Screen | None = None) -> None:
        self.live = live
        live.on_move = report_moved
        self.model = model
        self.settings = settings
        self.screen = screen or Screen()
        self.context = live.context().messages
        self.failed = False
        self.offered: str | None = None  # a prompt offered again after /branch to a user message
        tune(model, live.context().thinking_level, settings.reasoning)  # continue restores the level

    def _handle(self, event: Event) -> None:
        try:
            self.live.on_event(event)  # persist first: the screen may fail, the file must not
        except OSError as error:  # the session cannot be written (a bad --session-dir, a full disk)
            raise Fail(f"{self.live.path}: cannot write the session: {error.strerror or error}") from None
        self.screen.show(event)

    def ask(self, text: str) -> AgentEnd:
        # the tools' root is where harnesskit runs (or --cwd), never a cwd read from the file
        events = run_agent(self.context, user_message(text), self.model, self.settings.tools,
                           cwd=Path(self.settings.cwd), before_request=self._before_request)
        try:
            end = drive(events, self._handle)
        finally:
            self.screen.stop_spinner()
        self.screen.end_answer()
        if self.live.writer is not None:
            self.live.writer.end_turn()
        if end.error:
            self.failed = True
            self.screen.error(end.error)
        if end.aborted:
            self.screen.note("[aborted]", "dim")
        return end

    def command(self, line: str) -> bool:
        """Run a /command (cli/slash.py); False means leave the chat."""
        from . import slash

        return slash.run(self, line)

    # -- compaction and branch summaries (session/compaction.py plans, agent/summarize.py writes) --
    def _before_request(self, context: list[dict]) -> None:
        """Before every model request: compact when the context nears the window (pi's trigger)."""
        tokens = compacting.over_threshold(self.live, self.model, self.settings.compaction)
        if tokens is None:
            return
        limits = self.settings.compaction
        self.screen.note(f"[compacting: ~{tokens} tokens in context, above {limits.threshold(self.model)} "
                   f"of a {limits.window(self.model)} window]")
        from harnesskit.agent.summarize import SummaryError  # only a compaction can raise it

        try:
            done = compacting.compact(self.live, self.model, self.settings.compaction)
        except SummaryError as error:
            warn(f"{error}; going on without compacting")
            return
        if done is not None:
            context[:] = self.live.context().messages
            self.report_compaction(done)

    def report_compaction(self, done: compacting.Compacted) -> None:
        self.screen.note(f"[compacted: {done.summarised} messages summarised, {done.kept} kept; "
                   f"~{done.tokens_after} tokens now]")

    def offer(self, prompt: str | None) -> None:
        """A user message's text given back after moving before it (pre-filled at a terminal)."""
        if prompt is not None:
            from .render import cut

            self.offered = prompt
            self.screen.note(f"offered again: {cut(one_line(prompt), 200)}")

    def _take_offer(self) -> str:
        offered, self.offered = self.offered, None
        return offered or ""

    # -- the prompt loop --------------------------------------------------------------------
    def run(self, prompts: tuple[str, ...]) -> int:
        """Run -p prompts, or read prompts from a terminal / a pipe. Returns the exit code."""
        report = True
        try:
            if prompts:
                for text in prompts:
                    if text.startswith("/") and not self.command(text):
                        break
                    if text.startswith("/"):
                        continue
                    end = self.ask(text)
                    if end.aborted:
                        return 130
                    if end.error:
                        return 1
                return 0
            try:
                for text in read_prompts(self.live, self.screen, self._take_offer):
                    if not text.strip():
                        continue
                    if text.startswith("/"):
                        if not self.command(text.strip()):
                            break
                        continue
                    end = self.ask(text)
                    if not sys.stdin.isatty() and (end.error or end.aborted):
                        return 130 if end.aborted else 1
            except KeyboardInterrupt:
                pass  # Ctrl-C between turns leaves, as at the prompt (inside a turn the loop aborts it)
            return 1 if self.failed else 0
        except Fail:
            report = False  # the one error line says it all: no "session: ..." after it
            raise
        finally:
            self.live.close()
            if report:
                report_saved(self.live, self.screen)


def interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def banner(live: LiveSession, model: Model, screen: Screen) -> None:
    """What a terminal chat starts with: which model, which file, how to get help."""
    where = str(live.path) if live.created else "not saved (--no-session)" if live.writer is None \
        else "new (saved at the first reply)"
    screen.note(f"harnesskit chat · model {model.provider}/{model.model_id}", "banner")
    screen.note(f"session: {where}", "dim")
    screen.note("/help for commands · Ctrl-C clears the line · Ctrl-D leaves", "dim")


def read_prompts(live: LiveSession, screen: Screen | None = None,
                 offer: Callable[[], str] | None = None) -> Iterator[str]:
    """Prompts from a terminal (line editing, history of this session's prompts) or a pipe (each
    line as it arrives, not at EOF). At the terminal prompt Ctrl-C clears a typed line and leaves
    on an empty one, as in a shell; Ctrl-D leaves."""
    if interactive():
        from prompt_toolkit import PromptSession
        from prompt_toolkit.formatted_text import ANSI
        from prompt_toolkit.history import InMemoryHistory
        from prompt_toolkit.key_binding import KeyBindings

        history = InMemoryHistory()
        for message in live.context().messages:
            if message.get("role") == "user":
                history.append_string(text_of(message))
        keys = KeyBindings()

        @keys.add("c-c")
        def _clear_or_leave(event) -> None:  # noqa: ANN001 - prompt_toolkit's KeyPressEvent
            if event.current_buffer.text:
                event.current_buffer.reset()
            else:
                event.app.exit(exception=EOFError())

        styled = screen is not None and screen.color
        prompt = ANSI(click.style("you> ", fg="green", bold=True)) if styled else "you> "
        session: PromptSession[str] = PromptSession(history=history, key_bindings=keys)
        while True:
            try:
                yield session.prompt(prompt, default=offer() if offer is not None else "")
            except (EOFError, KeyboardInterrupt):
                return
    else:
        while True:
            try:
                line = sys.stdin.readline()
            except KeyboardInterrupt:
                return
            if not line:
                return
            yield line.rstrip("\r\n")


def report_moved(old: Path, new: Path) -> None:
    warn(f"{old} was deleted or replaced during the chat; the whole session goes on in {new}")


def report_saved(live: LiveSession, screen: Screen) -> None:
    if live.path is None or live.writer is None:
        screen.note("session: not saved (--no-session)", "dim")
    elif live.created:
        screen.note(f"session: {live.path} ({live.saved_messages} messages saved this run)", "dim")
    else:
        screen.note("session: not created (no reply yet, nothing saved)", "dim")


def start_new(settings: Settings, model: Model) -> LiveSession:
    directory = None if settings.options.no_session else settings.directory()
    try:
        return LiveSession.new(directory, settings.cwd, settings.fsync, identity(model))
    except OSError as error:
        raise Fail(f"{directory}: cannot write the session there: {error.strerror or error} "
                   f"(choose another --session-dir, or --no-session)") from None


def screen_for(options: ChatOptions) -> Screen:
    return Screen.for_chat(options.color.lower(), options.as_json, interactive() and not options.prompts)


def open_live(path: Path, settings: Settings) -> LiveSession:
    """Reopen a session for writing: load, take the lock (refusing a second writer with the
    holder's pid, and a file that must not be appended to)."""
    from harnesskit.session import SessionLocked
    from harnesskit.session.index import load_for_continue

    from .refs import open_for_reading

    session = open_for_reading(str(path), load_for_continue)  # decodes only what the context needs
    try:
        return LiveSession.reopen(session, settings.fsync, write=not settings.options.no_session)
    except CannotAppend as error:
        raise Fail(str(error)) from None
    except SessionLocked as error:
        holder = f"process {error.pid}" if error.pid else "another process"
        raise Fail(f"{path} is held by {holder} (pid {error.pid or '?'}), which is writing it; "
                   f"to go on from it in a copy, run: harnesskit fork {path}") from None
    except OSError as error:
        raise Fail(f"{path}: cannot open for writing: {error.strerror or error}") from None


def announce(live: LiveSession, screen: Screen) -> None:
    messages = live.context().messages
    roles = " → ".join(str(m.get("role")) for m in messages)
    screen.note(f"Restored {len(messages)} messages: {roles}" if messages else "Restored 0 messages")
    if messages:
        from .render import cut

        screen.note(f"Last message: {cut(one_line(text_of(messages[-1])), 200)}", "dim")
