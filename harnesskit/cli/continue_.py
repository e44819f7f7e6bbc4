"""`harnesskit continue`: reopen the most recent session of this directory (or a given one)."""

from __future__ import annotations

from pathlib import Path

import click

from harnesskit.agent.models import model_spec
from harnesskit.agent.summarize import SummaryError
from harnesskit.session import EntryNotFound, LiveSession, build_context, store
from harnesskit.session.compaction import navigation_for

from . import compacting
from .conversation import Conversation, announce, banner, interactive, open_live, screen_for
from .conversation import start_new as start_new_session
from .errors import Fail, warn
from .options import ChatOptions, Settings, chat_options, make_model, settings_from
from .refs import session_path
from .screen import echo


@click.command("continue")
@click.argument("session", required=False, metavar="[SESSION]")
@click.option("--from", "from_ref", metavar="ENTRY",
              help="Branch in place from ENTRY (id, prefix or label); a user message: from its parent.")
@click.option("--summary/--no-summary", "summary", default=None,
              help="With --from: summarise the branch left behind into a branch_summary entry "
                   "(asked at a terminal; default without one: no summary).")
@click.option("--pick", is_flag=True, help="Choose the session in a list (type to filter, Enter resumes).")
@click.option("--all", "everywhere", is_flag=True, help="With --pick: the sessions of every directory.")
@chat_options
def continue_(session: str | None, from_ref: str | None, summary: bool | None, pick: bool, everywhere: bool,
              **kwargs: object) -> None:
    """Reopen a session and go on talking.

    SESSION is a path, a session id prefix, or a session name (set with /name), looked up among
    this directory's sessions first, then all. With no argument, the most recent session of this
    directory (newest valid file); with none found, says so and starts a new one. The model the
    session last used is restored unless --model is given. A session another process is writing
    is refused (fork it instead).
    Tools work in this directory (or --cwd DIR), never in the cwd the file records.

    \b
    Examples:
      harnesskit continue
      harnesskit continue -p "what did you compute before?"
      harnesskit continue 01a23125            # a session id prefix
      harnesskit continue "refactor parser"   # a session name
      harnesskit continue --pick --all        # choose from a list
      harnesskit continue path/to/session.jsonl --from checkpoint-1
      harnesskit continue downloaded.jsonl --cwd ~/proj   # tools see ~/proj, whatever the file says
      harnesskit continue path/to/session.jsonl --from 5e03ac9e --summary

    With --from a user message, the branch starts at its parent (as pi does) and the message's
    text is offered again as the first prompt (at a terminal, pre-filled).
    """
    if summary is not None and from_ref is None:
        raise Fail("--summary/--no-summary go with --from ENTRY")
    options = ChatOptions(**kwargs)  # type: ignore[arg-type]
    settings = settings_from(options)
    if everywhere and not pick:
        raise Fail("--all goes with --pick (to continue a session of another directory, name it)")
    if pick:
        if session is not None:
            raise Fail("give a SESSION or --pick, not both")
        path = _picked(settings, everywhere)
    elif session is None:
        path = store.most_recent(settings.directory())
        if path is None:
            warn(f"no session found in {settings.directory()}; starting a new one")
            model = make_model(settings.model_spec, settings)
            live = start_new_session(settings, model)
            screen = screen_for(options)
            if not options.prompts and interactive():
                banner(live, model, screen)
            raise SystemExit(Conversation(live, model, settings, screen).run(options.prompts))
    else:
        path = session_path(session, settings.directory())

    live = open_live(path, settings)
    try:
        target = navigation = None
        if from_ref is not None:
            try:
                target = live.tree.resolve(from_ref)
            except EntryNotFound as error:
                raise Fail(f"{path}: {error}") from None
            navigation = navigation_for(live.tree, target)
        context = live.context() if navigation is None else build_context(live.tree, navigation.new_leaf)
        restored = model_spec(context.model, settings.providers)
        spec = settings.model_spec if settings.model_given or restored is None else restored
        if not settings.model_given and restored is None and context.model:
            warn(f"the session's model {context.model.get('provider')}/{context.model.get('modelId')} is not one "
                 f"harnesskit runs; using {spec}")
        model = make_model(spec, settings)
        offered = None
        if target is not None:
            if summary is None:
                summary = interactive() and click.confirm("Summarise the branch being left?", default=False)
            try:
                done = compacting.branch(live, target, model=model if summary else None, limits=settings.compaction)
            except SummaryError as error:
                raise Fail(f"{path}: {error}; nothing was written", 1) from None
            offered = done.prompt
        live.uses_model(model.provider, model.model_id)  # a switch is written only if this run appends anything
    except BaseException:
        live.close()
        raise
    warn_elsewhere(live, settings)
    screen = screen_for(options)
    if not options.prompts and interactive():
        banner(live, model, screen)
    announce(live, screen)
    conversation = Conversation(live, model, settings, screen)
    conversation.offer(offered)
    raise SystemExit(conversation.run(options.prompts))


def warn_elsewhere(live: LiveSession, settings: Settings) -> None:
    """A file says where it was recorded; that is a claim, not a place to run tools in."""
    recorded = live.header.get("cwd")
    if isinstance(recorded, str) and recorded != settings.cwd:
        warn(f"{live.path}: recorded in {recorded!r}, not here; tools stay confined to {settings.cwd}")


def _picked(settings: Settings, everywhere: bool) -> Path:
    if not interactive():
        raise Fail("--pick needs a terminal; name the session instead (a path, an id prefix or a name)")
    directories = store.all_session_dirs() if everywhere else [settings.directory()]
    summaries = store.list_sessions(directories)
    if not summaries:
        where = "any directory" if everywhere else str(settings.directory())
        raise Fail(f"no session to pick in {where}", 1)
    from .picker import pick

    chosen = pick(summaries, "all sessions" if everywhere else "sessions of this directory")
    if chosen is None:
        echo("harnesskit: nothing picked", err=True)
        raise SystemExit(130)
    return chosen
