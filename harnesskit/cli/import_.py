"""`harnesskit import`: a Claude Code transcript or a Codex rollout as a new pi v3 session."""

from __future__ import annotations

import os
from pathlib import Path

import click

from harnesskit.session.loader import SessionError

from .errors import Fail, warn
from .refs import regular
from .screen import echo


@click.command("import")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here (default: the session directory of the session's cwd, the source's when it "
                   "exists here, else this one; so `continue` there finds it).")
@click.option("--from", "source", type=click.Choice(["claude", "codex"]), default=None,
              help="The source's format (default: told by its first lines).")
def import_(file: Path, out: Path | None, source: str | None) -> None:
    """Write a pi v3 session from another harness's FILE (Claude Code, Codex CLI).

    FILE is never modified. The new session opens in pi and goes on with `harnesskit continue`
    and any model; it names its source in a `harnesskit/import` entry. A Claude Code session's
    subagent transcripts become sessions of their own beside it (parentSession: the new file).
    Prints the new file's path on stdout, then one line per subagent session.

    \b
    Examples:
      harnesskit import ~/.claude/projects/-home-me-proj/<uuid>.jsonl
      harnesskit import ~/.codex/sessions/2026/05/11/rollout-….jsonl -o session.jsonl
      harnesskit import transcript.jsonl && harnesskit continue -p "go on"
    """
    try:
        result = import_file(regular(file), out, fmt=source, here=os.getcwd())
    except SessionError as error:
        raise Fail(str(error)) from None
    except OSError as error:
        raise Fail(f"{out or file}: {error.strerror or error}") from None
    for note in result.notes:
        warn(note)
    for sub in result.subagents:
        for note in sub.notes:
            warn(f"{sub.source.name}: {note}")
    echo(str(result.path))
    for sub in result.subagents:
        echo(str(sub.path))
    echo(f"imported {file} ({result.header['id']}): {result.entries} entries, {result.messages} messages"
               + (f", {len(result.subagents)} subagent session(s)" if result.subagents else ""), err=True)


def import_file(*args: object, **kwargs: object):  # noqa: ANN201 - imported late: start-up counts
    from harnesskit.session.importer import import_file as run

    return run(*args, **kwargs)  # type: ignore[arg-type]
