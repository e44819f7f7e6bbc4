"""`harnesskit fork`: a new session file from an entry of an old one."""

from __future__ import annotations

import os
from pathlib import Path

import click

from harnesskit.session import ROOT, ForkError, fork_point, store, write_fork
from harnesskit.session.index import LazyDecodeError, LazySession, load_for_continue

from . import render
from .errors import Fail, warn
from .refs import open_for_reading, resolve_leaf, session_path
from .screen import echo


@click.command("fork")
@click.argument("session", metavar="SESSION")
@click.option("--at", "at_ref", metavar="ENTRY", help="Fork at ENTRY (id, prefix or label); default the leaf.")
@click.option("--all", "everything", is_flag=True, help="Copy every entry, all branches (as pi --fork).")
@click.option("--cwd", "cwd", type=click.Path(file_okay=False, path_type=Path),
              help="The new session's working directory (default: this one).")
@click.option("--session-dir", metavar="DIR", help="Where to put the new file (used flat).")
def fork(session: str, at_ref: str | None, everything: bool, cwd: Path | None, session_dir: str | None) -> None:
    """Start a new session file from SESSION, linked to it by parentSession.

    SESSION is a path, a session id prefix, or a session name (set with /name).

    By default the new file holds the path root → ENTRY with the labels of those entries; --all
    copies everything. ENTRY a user message forks before it, as pi's /fork does. A path without
    an assistant reply is refused (pi would damage such a file when continuing it): branch in
    place with `continue SESSION --from ENTRY` instead. The source is never modified. Prints the
    new file's path (and only that) on stdout.

    \b
    Examples:
      harnesskit fork session.jsonl
      harnesskit fork session.jsonl --at checkpoint-1
      harnesskit fork 01a23125                 # a session id prefix, or a name
      harnesskit fork session.jsonl --all --cwd ../other-checkout
    """
    if everything and at_ref:
        raise Fail("--all copies every entry; it does not take --at")
    file = session_path(session)
    source = open_for_reading(str(file), load_for_continue)  # an index; entries decoded as they are copied
    at = resolve_leaf(source, at_ref)
    note = None
    if at_ref is not None and at is not None:
        point, prompt = fork_point(source.tree, at)
        if prompt is not None:  # a user message: forked before it, as pi's /fork
            note = (f"{at} is a user message: the fork ends before it, at {point or 'the start'} "
                    f"(its text: {render.cut(render.one_line(prompt), 80)})")
            at = point if point is not None else ROOT
    target_cwd = str((cwd or Path.cwd()).resolve()) if cwd else os.getcwd()
    directory = store.session_dir(target_cwd, session_dir)
    try:
        try:
            path = write_fork(source, directory, target_cwd, at, everything)
        except LazyDecodeError:  # the file changed since it was indexed: read it in full
            path = write_fork(open_for_reading(str(file)), directory, target_cwd, at, everything)
    except (ForkError, OSError) as error:
        raise Fail(str(error)) from None
    finally:
        if isinstance(source, LazySession):
            source.close()
    if note is not None:
        warn(note)
    echo(str(path))
