"""`harnesskit chat`, and the conversation driver that `continue` and `demo` share.

The driver renders agent events and passes each one to the live session, which appends finished
messages; the loop itself knows nothing of files.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click

from harnesskit.agent.events import AgentEnd, Event
from harnesskit.agent.loop import drive, run_agent
from harnesskit.agent.messages import text_of, user_message
from harnesskit.agent.models import Model, ModelError, Provider, parse_spec, resolve_model
from harnesskit.agent.summarize import SummaryError
from harnesskit.agent.tools import Tool, select_tools
from harnesskit.config import ConfigError, limit, load_config
from harnesskit.session import store
from harnesskit.session.fork import (
    ROOT,
    ForkError,
    fork_entries,
    fork_point,
    has_reply,
    path_entries,
    write_fork,
)
from harnesskit.session.live import LiveSession
from harnesskit.session.loader import SessionError, load_session
from harnesskit.session.tree import EntryNotFound
from harnesskit.session.writer import FSYNC_POLICIES, SessionLocked

from . import compacting, render
from .errors import Fail, warn
from .screen import COLOR_CHOICES, Screen

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


@dataclass
class ChatOptions:
    prompts: tuple[str, ...]
    model: str | None
    base_url: str | None
    session_dir: str | None
    no_session: bool
    fsync: str | None
    tools: str | None
    cwd: str | None = None
    as_json: bool = False
    color: str = "auto"


def chat_options(command: Callable) -> Callable:
    """The options chat and continue share."""
    decorators = [
        click.option("-p", "--prompt", "prompts", multiple=True, metavar="TEXT",
                     help="Run this prompt and exit (repeatable: prompts run in order)."),
        click.option("--model", metavar="M", help="demo (default), script:FILE.yaml, openai:MODEL or PROVIDER:MODEL."),
        click.option("--base-url", metavar="URL", help="OpenAI-compatible server (else OPENAI_BASE_URL)."),
        click.option("--session-dir", metavar="DIR", help="Where sessions are kept (used flat)."),
        click.option("--no-session", is_flag=True, help="Keep the conversation in memory only."),
        click.option("--fsync", type=click.Choice(FSYNC_POLICIES), default=None,
                     help="Durability: fsync every entry, at each turn end (default), or never."),
        click.option("--tools", metavar="LIST", help="Tools offered to the model, e.g. calc,read (default all)."),
        click.option("--cwd", type=click.Path(exists=True, file_okay=False), default=None, metavar="DIR",
                     help="Work as if started in DIR: tools are confined to it, sessions kept for it."),
        click.option("--json", "as_json", is_flag=True,
                     help="Write the agent's events as JSON Lines on stdout (notes stay on stderr)."),
        click.option("--color", type=click.Choice(COLOR_CHOICES, case_sensitive=False), default="auto",
                     show_default=True, help="Colour on stderr: auto means a terminal and NO_COLOR unset."),
    ]
    return functools.reduce(lambda f, d: d(f), reversed(decorators), command)


@dataclass
class Settings:
    """Options merged with the config files (flags win, then project, then user config)."""

    options: ChatOptions
    model_spec: str
    model_given: bool
    base_url: str | None
    session_dir: str | None
    fsync: str
    tools: list[Tool]
    limits: dict[str, float | int] = field(default_factory=dict)  # request_timeout, max_reply_bytes
    providers: dict[str, Provider] = field(default_factory=dict)
    cwd: str = field(default_factory=os.getcwd)
    compaction: compacting.Limits = field(default_factory=compacting.Limits.defaults)
    reasoning: str = "auto"  # config reasoning_effort: whether /thinking reaches an openai: model

    def directory(self) -> Path:
        return store.session_dir(self.cwd, self.session_dir)


def settings_from(options: ChatOptions) -> Settings:
    try:
        config = load_config()
    except ConfigError as error:
        raise Fail(str(error)) from None
    tool_names = options.tools if options.tools is not None else config.get("tools") or ""
    try:
        tools = select_tools([t.strip() for t in tool_names.split(",") if t.strip()])
    except ValueError as error:
        raise Fail(str(error)) from None
    fsync = options.fsync or config.get("fsync") or "turn"
    if fsync not in FSYNC_POLICIES:
        raise Fail(f"fsync must be one of {', '.join(FSYNC_POLICIES)}, not {fsync!r}")
    try:
        limits = {key: limit(key, config.get(key)) for key in ("request_timeout", "max_reply_bytes")}
    except ConfigError as error:
        raise Fail(str(error)) from None
    return Settings(
        options=options,
        model_spec=options.model or config.get("model") or "demo",
        model_given=options.model is not None,
        base_url=options.base_url or config.get("base_url"),
        session_dir=options.session_dir or config.get("session_dir"),
        fsync=fsync,
        tools=tools,
        limits=limits,
        providers=config.providers(),
        cwd=os.path.realpath(options.cwd) if options.cwd else os.getcwd(),
        compaction=compacting.limits_from(config),
        reasoning=config.get("reasoning_effort") or "auto",
    )


def make_model(spec: str, settings: Settings) -> Model:
    """The model of a spec: a named provider's server unless --base-url says otherwise (the
    config's base_url is for openai:MODEL only)."""
    try:
        kind, _ = parse_spec(spec, settings.providers)
        base_url = settings.options.base_url if kind in settings.providers else settings.base_url
        return resolve_model(spec, base_url=base_url, providers=settings.providers,
                             **settings.limits)  # type: ignore[arg-type]
    except (ValueError, ModelError) as error:
        raise Fail(str(error)) from None


def tune(model: Model, thinking_level: str, reasoning: str) -> None:
    """Hand the session's thinking level to a model that can use it (openai: reasoning_effort)."""
    if hasattr(model, "thinking_level"):
        model.thinking_level = thinking_level  # type: ignore[attr-defined]
        model.reasoning = reasoning  # type: ignore[attr-defined]


def identity(model: Model) -> dict:
    return {"provider": model.provider, "modelId": model.model_id}


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
        self.aborted = False
        self._streamed = False
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
            self.aborted = True
            self.screen.note("[aborted]", "dim")
        return end

    # -- in-chat commands ------------------------------------------------------------------
    def command(self, line: str) -> bool:
        """Run a /command; False means leave the chat."""
        name, _, rest = line[1:].partition(" ")
        rest = rest.strip()
        try:
            if name in ("exit", "quit"):
                return False
            if name == "help":
                self.screen.note(HELP_TEXT)
            elif name == "tree":
                tree = self.live.tree
                for row in render.draw_tree(tree, None, tree.labels(), self.live.leaf_id, render.terminal_width()):
                    self.screen.note(row)
            elif name == "label":
                ref, _, label = rest.partition(" ")
                if not ref or not label.strip():
                    raise Fail("usage: /label ID NAME")
                target = self.live.tree.resolve(ref)
                self.live.append("label", targetId=target, label=label.strip())
                self.screen.note(f"labelled {target} {label.strip()!r}")
            elif name == "name":
                if not rest:
                    raise Fail("usage: /name TEXT")
                self.live.append("session_info", name=rest)
                self.screen.note(f"session named {rest!r}")
            elif name == "model":
                if not rest:
                    self.screen.note(f"model: {self.model.provider}/{self.model.model_id}")
                else:
                    self.switch_model(make_model(rest, self.settings))
            elif name == "branch":
                words = rest.split()
                flags = {w for w in words if w in ("--summary", "--no-summary")}
                refs = [w for w in words if w not in flags]
                if len(refs) != 1 or len(flags) > 1:
                    raise Fail("usage: /branch ID [--summary|--no-summary]")
                self.branch(self.live.tree.resolve(refs[0]), summary="--summary" in flags if flags else None)
            elif name == "compact":
                self.compact(rest or None)
            elif name == "thinking":
                self.thinking(rest)
            elif name == "fork":
                self.fork(rest or None)
            else:
                raise Fail(f"unknown command /{name} (try /help)")
        # SessionError: the file changed under a lazy read
        except (Fail, EntryNotFound, SessionError, SummaryError) as error:
            message = error.format_message() if isinstance(error, Fail) else str(error)
            self.screen.error(message)
        return True

    # -- compaction and branch summaries (session/compaction.py plans, agent/summarize.py writes) --
    def _before_request(self, context: list[dict]) -> None:
        """Before every model request: compact when the context nears the window (pi's trigger)."""
        tokens = compacting.over_threshold(self.live, self.model, self.settings.compaction)
        if tokens is None:
            return
        limits = self.settings.compaction
        self.screen.note(f"[compacting: ~{tokens} tokens in context, above {limits.threshold(self.model)} "
                   f"of a {limits.window(self.model)} window]")
        try:
            done = compacting.compact(self.live, self.model, self.settings.compaction)
        except SummaryError as error:
            warn(f"{error}; going on without compacting")
            return
        if done is not None:
            context[:] = self.live.context().messages
            self._report_compaction(done)

    def _report_compaction(self, done: compacting.Compacted) -> None:
        self.screen.note(f"[compacted: {done.summarised} messages summarised, {done.kept} kept; "
                   f"~{done.tokens_after} tokens now]")

    def compact(self, instructions: str | None) -> None:
        done = compacting.compact(self.live, self.model, self.settings.compaction, instructions)
        if done is None:
            raise Fail("nothing to compact yet: the context fits in the messages a compaction keeps")
        self.context = self.live.context().messages
        self._report_compaction(done)

    def thinking(self, level: str) -> None:
        if not level:
            self.screen.note(f"thinking: {self.live.context().thinking_level}")
            return
        if level not in THINKING_LEVELS:
            raise Fail(f"thinking level must be one of {', '.join(THINKING_LEVELS)}, not {level!r}")
        if level != self.live.context().thinking_level:
            self.live.append("thinking_level_change", thinkingLevel=level)
        tune(self.model, level, self.settings.reasoning)
        self.screen.note(f"thinking: {level}")

    def branch(self, target: str, *, summary: bool | None) -> None:
        """pi's tree navigation; `summary` None asks at a terminal (y/N), else no summary."""
        if summary is None:
            summary = interactive() and click.confirm("Summarise the branch being left?", default=False)
        done = compacting.branch(self.live, target, model=self.model if summary else None,
                                 limits=self.settings.compaction)
        self.context = self.live.context().messages
        where = done.new_leaf or "the start (a new root)"
        note = f"; branch of {done.left} messages summarised" if done.entry is not None else ""
        self.screen.note(f"leaf moved to {where}{note}; {len(self.context)} messages in context")
        self.offer(done.prompt)

    def offer(self, prompt: str | None) -> None:
        """A user message's text given back after moving before it (pre-filled at a terminal)."""
        if prompt is not None:
            self.offered = prompt
            self.screen.note(f"offered again: {render.cut(render.one_line(prompt), 200)}")

    def switch_model(self, model: Model) -> None:
        if identity(model) != identity(self.model):
            self.live.append("model_change", **identity(model))
        tune(model, self.live.context().thinking_level, self.settings.reasoning)
        self.model = model
        self.screen.note(f"model: {model.provider}/{model.model_id}")

    def fork(self, ref: str | None) -> None:
        live = self.live
        if live.path is not None and not live.created:
            raise Fail("nothing to fork yet: the session has no file (no reply so far)")
        at = live.tree.resolve(ref) if ref else live.leaf_id
        if at is None:
            raise Fail("nothing to fork yet: the session is empty")
        point, offered = fork_point(live.tree, at) if ref else (at, None)
        if live.path is None:  # --no-session: the fork stays in memory too, as pi's
            self.live = LiveSession.forked(path_entries(live.tree, point if point is not None else ROOT), None,
                                           self.settings.cwd, self.settings.fsync, None)
            self.context = self.live.context().messages
            self.screen.note(f"forked in memory: {len(self.context)} messages in context")
            self.offer(offered)
            return
        live.close()
        try:
            source = load_session(live.path)
            entries = fork_entries(source, point if point is not None else ROOT, False)
            if has_reply(entries):
                new_path = write_fork(source, self.settings.directory(), self.settings.cwd, point)
                reopened = LiveSession.reopen(load_session(new_path), self.settings.fsync)
            else:  # nothing pi could continue safely yet: the file waits for the first reply
                reopened = LiveSession.forked(entries, self.settings.directory(), self.settings.cwd,
                                              self.settings.fsync, str(live.path.resolve()))
                new_path = reopened.path
        except (SessionError, ForkError, OSError) as error:
            self.live = LiveSession.reopen(load_session(live.path), self.settings.fsync, leaf_id=live.leaf_id)
            self.live.on_move = report_moved
            raise Fail(f"fork failed: {error}") from None
        self.live = reopened
        reopened.on_move = report_moved
        self.context = reopened.context().messages
        if reopened.context().model != identity(self.model):  # e.g. a model_change still deferred
            reopened.defer("model_change", **identity(self.model))
        self.screen.note(f"forked to {new_path}")
        if not reopened.created:
            self.screen.note("(no reply on that path yet: the file is written with the first one, as pi does)")
        self.offer(offered)

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


@click.command("chat")
@chat_options
def chat(**kwargs: object) -> None:
    """Talk to a model; every message is appended to a new session file as it is finalised.

    Interactive with line editing when stdin is a terminal; with a pipe, each line is a prompt
    (acted on as it arrives); -p runs the given prompts and exits. Only the assistant's answer goes
    to stdout (--json: the agent's events as JSON Lines); tool lines, status and the session's path
    go to stderr. Type /help in a chat for its commands. Exit 1 after a model error, 130 after
    Ctrl-C during a -p prompt.

    \b
    Examples:
      harnesskit chat
      harnesskit chat -p "hello" -p "what is 12*8"
      printf 'hello\\nwhat is 2+2\\n' | harnesskit chat
      harnesskit chat --model openai:llama3 --base-url http://localhost:11434/v1
      harnesskit chat --model script:replies.yaml --no-session
      harnesskit chat -p "summarise README.md" > summary.txt
      harnesskit chat --json -p "what is 12*8" | jq -c 'select(.type == "tool_execution_end")'
      harnesskit chat --color never
    """
    options = ChatOptions(**kwargs)  # type: ignore[arg-type]
    settings = settings_from(options)
    model = make_model(settings.model_spec, settings)
    live = start_new(settings, model)
    screen = screen_for(options)
    if not options.prompts and interactive():
        banner(live, model, screen)
    raise SystemExit(Conversation(live, model, settings, screen).run(options.prompts))


def screen_for(options: ChatOptions) -> Screen:
    return Screen.for_chat(options.color.lower(), options.as_json, interactive() and not options.prompts)


def open_live(path: Path, settings: Settings, leaf_ref: str | None) -> LiveSession:
    """Reopen a session for writing: load, resolve the leaf, take the lock (refusing a second
    writer with the holder's pid)."""
    from harnesskit.session.index import load_for_continue

    from .inspect import open_for_reading

    session = open_for_reading(str(path), load_for_continue)  # decodes only what the context needs
    if session.dialect.foreign and not settings.options.no_session:
        raise Fail(f"{path}: a {session.dialect} file is another harness's and is never appended to; run "
                   f"`harnesskit import {path}` and continue the pi session it writes")
    if session.dialect.legacy and not settings.options.no_session:
        # Appending v3 entries to a legacy file would make a mixed file pi cannot read as one
        # (and v1 ids are re-derived from line order on every read, so appended ids would be lost).
        raise Fail(f"{path}: a legacy {session.dialect} file cannot be appended to; run "
                   f"`harnesskit migrate {path}` first, or `harnesskit fork {path}` to go on in a v3 copy")
    leaf = None
    if leaf_ref is not None:
        try:
            leaf = session.tree.resolve(leaf_ref)
        except EntryNotFound as error:
            raise Fail(f"{path}: {error}") from None
    try:
        return LiveSession.reopen(session, settings.fsync, write=not settings.options.no_session, leaf_id=leaf)
    except SessionLocked as error:
        holder = f"process {error.pid}" if error.pid else "another process"
        raise Fail(f"{path} is held by {holder} (pid {error.pid or '?'}), which is writing it; "
                   f"to go on from it in a copy, run: harnesskit fork {path}") from None
    except OSError as error:
        raise Fail(f"{path}: cannot open for writing: {error.strerror or error}") from None
