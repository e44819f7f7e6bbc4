"""`harnesskit search`: full-text search over the messages of every session."""

from __future__ import annotations

import os
import shlex
import sys
from datetime import UTC

import click

from harnesskit.session import catalog
from harnesskit.session.format import shown_time
from harnesskit.text import spelled, visible

from . import render
from .errors import Fail, warn
from .indexing import answered, parse_day, utf8
from .screen import echo
from .table import ROWS

ROLES = ("user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary")


def opens(hit: catalog.Hit) -> list[str]:
    """The commands that open a hit where it is."""
    path = shlex.quote(hit.path)
    if not hit.entry_id:
        return [f"harnesskit inspect {path}"]
    entry = shlex.quote(hit.entry_id)
    return [f"harnesskit continue {path} --from {entry}", f"harnesskit inspect {path} --leaf {entry}"]


def _stored(scope: str | None) -> str | None:
    """The directory searched as the index stores a session's cwd. A name that is not UTF-8 is
    looked up with U+FFFD for those bytes, as a header's cwd is stored; the sessions kept under
    such a name are not indexed at all, and a warning says so."""
    if scope is None or catalog.is_utf8(scope):
        return scope
    warn(f"{scope} is not UTF-8: the sessions kept under its name are not indexed (`harnesskit list` "
         "lists them); searching those that record it, with U+FFFD for the bytes that are not UTF-8")
    return catalog.storable(scope)


def _marked(snippet: str, bold: bool) -> str:
    """The snippet made safe for a terminal, then its matches marked (bold, or [ ] into a pipe)."""
    start, end = ("\x1b[1m", "\x1b[22m") if bold else ("[", "]")
    pieces = render.one_line(snippet).split("\x02")
    out = [visible(pieces[0])]
    for piece in pieces[1:]:
        match, _, rest = piece.partition("\x03")
        out.append(start + visible(match) + end + visible(rest))
    return "".join(out)


@click.command("search")
@click.argument("query")
@click.option("--harness", type=click.Choice(["pi", "claude", "codex"], case_sensitive=False),
              help="Only sessions of this harness.")
@click.option("--cwd", "cwd", metavar="DIR", help="Only sessions of DIR (default: this directory).")
@click.option("--all", "everywhere", is_flag=True, help="Sessions of every directory.")
@click.option("--since", metavar="DAY", help="Messages from this day on (YYYY-MM-DD, YYYYMMDD or ISO).")
@click.option("--until", metavar="DAY", help="Messages up to the end of this day.")
@click.option("--role", type=click.Choice(ROLES, case_sensitive=False), help="Only messages of this role.")
@click.option("--model", metavar="M", help="Only assistant messages of this model.")
@click.option("--tool", metavar="NAME", help="Only messages that call this tool or hold its result.")
@click.option("-n", "limit", type=click.IntRange(*ROWS), default=20, show_default=True, help="At most N hits.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one hit per line.")
def search(query: str, harness: str | None, cwd: str | None, everywhere: bool, since: str | None,
           until: str | None, role: str | None, model: str | None, tool: str | None, limit: int,
           as_json: bool) -> None:
    """Find messages across sessions, best match first (FTS5, ranked by bm25).

    QUERY is FTS5 syntax: words (all must match), "a phrase", prefix*, AND / OR / NOT, NEAR(a b).
    Chinese, Japanese and Korean text is matched character by character, so 结果 finds 结果.
    Every hit names the commands that open it.

    \b
    Examples:
      harnesskit search "flaky test"
      harnesskit search 'compact* NOT summary' --all --since 2026-11-01
      harnesskit search calc --tool calc --role assistant --json | jq -r .path
    """
    if everywhere and cwd:
        raise Fail("choose one of --cwd DIR and --all")
    utf8(query, "QUERY")
    roles = {r.lower(): r for r in ROLES}
    scope = None if everywhere else os.path.realpath(os.path.expanduser(cwd)) if cwd else os.getcwd()
    filters = catalog.Filters(harness=harness.lower() if harness else None, cwd=_stored(scope),
                              since_ms=parse_day(since, "--since"), until_ms=parse_day(until, "--until", end=True),
                              role=roles[role.lower()] if role else None, model=utf8(model, "--model"),
                              tool=utf8(tool, "--tool"))
    try:
        hits = answered(lambda conn: catalog.search(conn, query, filters, limit))
    except catalog.QueryError as error:
        raise Fail(str(error)) from None
    if as_json:
        for hit in hits:
            echo(render.json_line({
                "path": hit.path, "harness": hit.harness, "sessionId": hit.session_id, "cwd": hit.cwd,
                "entryId": hit.entry_id, "line": hit.line, "role": hit.role, "timestamp": hit.time_ms,
                "snippet": hit.snippet.replace("\x02", "").replace("\x03", ""), "rank": hit.rank,
                "open": opens(hit)}))
        return
    if not hits:
        where = "" if scope is None else f" in sessions of {scope} (--all for every directory)"
        echo(f"no match for {query!r}{where}", err=True)
        return
    bold = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for number, hit in enumerate(hits, 1):
        when = shown_time(hit.time_ms, UTC, ms=True)
        # each on one line: a newline in a file's role, id, cwd or path must not forge a line of its own
        echo(spelled(f"{number}. {when}  {hit.role}  {(hit.session_id or '?')[:13]}  {hit.cwd or ''}"))
        click.echo(f"   {_marked(hit.snippet, bold)}")  # made visible piece by piece: only our marks are raw
        for command in opens(hit):
            echo(f"   {spelled(command)}")
