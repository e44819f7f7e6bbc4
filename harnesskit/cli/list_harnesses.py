"""`harnesskit list --harness claude|codex|all`: this directory's sessions in each harness's own store."""

from __future__ import annotations

import os

from harnesskit.session import store
from harnesskit.session.format import shown_time
from harnesskit.session.formats import stores
from harnesskit.session.formats.stores import Found

from . import render
from .errors import Fail
from .screen import echo


def list_harnesses(harness: str, as_json: bool, limit: int | None, session_dir: str | None, everywhere: bool) -> None:
    if everywhere:
        raise Fail("--all lists harnesskit's own sessions; --harness lists this directory's")
    cwd = os.getcwd()
    found: list[Found] = []
    if harness == "all":
        found += [Found("pi", s.file, s.modified, s.session_id, s.cwd, s.name or s.first_user, s.messages)
                  for s in store.list_sessions([store.session_dir(cwd, session_dir)])]
    if harness in ("claude", "all"):
        found += stores.claude_sessions(cwd)
    if harness in ("codex", "all"):
        found += stores.codex_sessions(cwd)
    found.sort(key=stores.newest_first, reverse=True)
    found = found[:limit]
    if as_json:
        if not found and (missing := _missing(harness)):
            echo(f"no {harness} sessions{missing}", err=True)
        for f in found:
            echo(render.json_line({"harness": f.harness, "path": f.path, "id": f.session_id,
                                         "modified": f.modified, "cwd": f.cwd, "firstMessage": f.first_user,
                                         "messages": f.messages}))
        return
    if not found:
        echo(f"no {'' if harness == 'all' else harness + ' '}sessions of {cwd}" + _missing(harness), err=True)
        return
    rows = [[shown_time(f.modified), f.harness, f.session_id[:13],
             render.cut(render.one_line(f.first_user or ""), 48), f.messages, f.path] for f in found]
    echo(render.tabulate(rows, headers=["modified", "harness", "id", "first message", "messages", "path"],
                        disable_numparse=True))


_STORES = {"claude": ("Claude Code", stores.claude_root, "CLAUDE_CONFIG_DIR"),
           "codex": ("Codex", stores.codex_root, "CODEX_HOME")}


def _missing(harness: str) -> str:
    """Why a harness shows nothing when its store itself is not there (a path or variable to fix)."""
    if harness not in _STORES:
        return ""
    name, root, variable = _STORES[harness]
    where = root()
    return "" if where.is_dir() else f": no {name} store at {where} (set {variable} to where it keeps its sessions)"
