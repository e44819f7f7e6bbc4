"""`harnesskit demo`: the chapter's demo, end to end, offline and deterministic."""

from __future__ import annotations

from pathlib import Path

import click

from harnesskit.agent.models import Model
from harnesskit.session import load_session, store
from harnesskit.session.tokens import CompactionSettings

from . import compacting
from .conversation import Conversation, announce, open_live, start_new
from .errors import Fail
from .options import ChatOptions, Settings, identity, make_model, settings_from
from .rows import entries_table, header_line
from .screen import Screen, echo

NEWLINE = b"\n"
FIRST_RUN = ("hello", "what is 12*8")
SECOND_RUN = ("what did you compute before?",)


def _show_file(path: Path) -> bytes:
    data = path.read_bytes()
    session = load_session(path)
    echo(f"\n[session file] {path} ({data.count(NEWLINE)} lines)")
    echo(header_line(session))
    echo(entries_table(session, None, "simple", 120))
    return data


def _talk(conversation: Conversation, prompts: tuple[str, ...]) -> None:
    for text in prompts:
        echo(f"\nyou> {text}")
        end = conversation.ask(text)
        if end.error or end.aborted:
            raise Fail(f"the demo model failed: {end.error or 'aborted'}")


LONG_WINDOW = 800  # tokens: small enough that a few dozen offline turns need compacting
LONG_KEEP_RECENT = 200
LONG_TURNS = 20


def long_prompts(turns: int = LONG_TURNS) -> list[str]:
    """A long offline chat: arithmetic (tool calls) between remarks, each turn a little different."""
    prompts = []
    for n in range(1, turns + 1):
        prompts.append(f"what is {n}*{n + 11}")
        prompts.append(f"note {n}: the plan's step {n} is to check the result above and keep going")
    return prompts


def run_long(settings: Settings, model: Model) -> None:
    """`demo --long`: one long chat in a small window; the automatic compaction is shown as it
    happens, then `inspect --context` of the file, which starts with the summary."""
    settings.compaction = compacting.Limits(CompactionSettings(keep_recent_tokens=LONG_KEEP_RECENT), LONG_WINDOW)
    echo(f"harnesskit demo --long: {LONG_TURNS * 2} prompts in a {LONG_WINDOW}-token window "
               f"(offline demo model); watch for [compacting]")
    conversation = Conversation(start_new(settings, model), model, settings, Screen(notes_to_stderr=False))
    _talk(conversation, tuple(long_prompts()))
    conversation.live.close()
    path = conversation.live.path
    assert path is not None
    compactions = sum(1 for t in conversation.live.tree.types if t == "compaction")
    echo(f"\nRun ended: {conversation.live.saved_messages} messages saved, {compactions} compaction(s).")
    echo(f"\n=== harnesskit inspect --context {path} ===")
    ctx = click.get_current_context()
    root = ctx.find_root()  # the command found by its name, as `harnesskit inspect` is: no command imports another
    inspect = root.command.get_command(root, "inspect")  # type: ignore[attr-defined]
    ctx.invoke(inspect, file=path, show_context=True)


@click.command("demo")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=Path(".demo"),
              show_default=True, help="Keep every file of the demo under this directory.")
@click.option("--long", "long_", is_flag=True,
              help="Instead: a long chat in a small window that compacts itself automatically.")
def demo(directory: Path, long_: bool) -> None:
    """Run the chapter's demo: a new session, then `continue` restoring it.

    The first run says "hello" and asks "what is 12*8" (the calc tool answers 96); the second run
    restores the 6 messages, asks what was computed before, and gets 96 from the context. The
    file is printed after each run: the second print keeps every line of the first unchanged.
    With --long: 40 prompts in an 800-token window; the context is compacted automatically
    (a summary replaces the older messages) and the file's context, printed at the end, starts
    with that summary.

    \b
    Examples:
      harnesskit demo
      harnesskit demo --dir /tmp/harnesskit-demo
      harnesskit demo --long
    """
    directory = directory.resolve()
    sessions = directory / "sessions"
    options = ChatOptions(prompts=(), model="demo", base_url=None, session_dir=str(sessions), no_session=False,
                          fsync="turn", tools="calc,read,ls")
    settings = settings_from(options)
    settings.cwd = str(directory)
    model = make_model("demo", settings)
    if long_:
        run_long(settings, model)
        return

    echo("harnesskit demo: a session saved, then restored (offline demo model)")
    echo("\n=== First run: a new session ===")
    screen = Screen(notes_to_stderr=False)
    first = Conversation(start_new(settings, model), model, settings, screen)
    _talk(first, FIRST_RUN)
    first.live.close()
    echo(f"\nRun ended, {first.live.saved_messages} messages saved.")
    assert first.live.path is not None
    before = _show_file(first.live.path)

    echo("\n=== Restart: `harnesskit continue` restores the session ===\n")
    path = store.most_recent(sessions)
    if path is None:
        raise Fail(f"no session found in {sessions}")
    live = open_live(path, settings)
    announce(live, screen)
    second = Conversation(live, model, settings, screen)
    if second.live.context().model != identity(model):
        raise Fail("the restored session lost its model")
    _talk(second, SECOND_RUN)
    second.live.close()
    echo(f"\nAfter continuing, the session has {len(second.context)} messages.")
    after = _show_file(path)
    unchanged = after.startswith(before)
    echo(f"\nEvery line of the first run is unchanged: {'yes' if unchanged else 'NO'}")
    if not unchanged:
        raise SystemExit(1)
