"""`harnesskit list`: sessions of this directory (or all), newest first."""

from __future__ import annotations

import os
from datetime import datetime

import click

from harnesskit.session import store
from harnesskit.text import visible

from . import render
from .screen import echo


@click.command("list")
@click.option("--all", "everywhere", is_flag=True, help="Sessions of every directory, not just this one.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one session per line.")
@click.option("-n", "limit", type=click.IntRange(min=1), default=None, help="At most N sessions.")
@click.option("--session-dir", metavar="DIR", help="List this directory instead.")
@click.option("--harness", type=click.Choice(["pi", "claude", "codex", "all"]), default="pi", show_default=True,
              help="Whose sessions of this directory: harnesskit's (pi format), Claude Code's, Codex's, or all.")
def list_(everywhere: bool, as_json: bool, limit: int | None, session_dir: str | None, harness: str) -> None:
    """List sessions, newest first: modified, id, name (or first prompt), messages, path.

    \b
    Examples:
      harnesskit list
      harnesskit list --all -n 20
      harnesskit list --json | jq -r .path
      harnesskit list --harness claude      # ~/.claude/projects/<this dir>/ ($CLAUDE_CONFIG_DIR wins)
      harnesskit list --harness all -n 10
    """
    if harness != "pi":
        from .list_harnesses import list_harnesses

        list_harnesses(harness, as_json, limit, session_dir, everywhere)
        return
    directories = store.all_session_dirs() if everywhere else [store.session_dir(os.getcwd(), session_dir)]
    summaries = store.list_sessions(directories)[:limit]
    if as_json:
        for s in summaries:
            echo(render.json_line({
                "path": str(s.path), "id": s.session_id, "modified": s.modified, "cwd": s.cwd,
                "name": s.name, "firstMessage": s.first_user, "messages": s.messages,
            }))
        return
    if not summaries:
        echo("no sessions" + ("" if everywhere else f" in {directories[0]}"), err=True)
        return
    rows = [[datetime.fromtimestamp(s.modified).strftime("%Y-%m-%d %H:%M"), s.session_id[:13],
             render.cut(visible(render.one_line(s.name or s.first_user or "")), 48), s.messages, str(s.path)]
            for s in summaries]
    echo(render.tabulate(rows, headers=["modified", "id", "name / first message", "messages", "path"],
                         disable_numparse=True))
