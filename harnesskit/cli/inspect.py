"""`harnesskit inspect`: a tabulated dump, tree, context or stats of any session file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click
import tabulate as tabulate_module

from harnesskit.session.loader import Session, SessionError, load_session
from harnesskit.session.stats import session_stats
from harnesskit.session.tree import EntryNotFound, build_context

from . import render
from .errors import Fail, warn
from .screen import echo

FORMATS = sorted(tabulate_module.tabulate_formats)


def header_line(session: Session) -> str:
    h = session.header
    name = session.tree.name()
    parts = [
        f"session {session.dialect}",
        f"id={h.get('id')}",
        f"cwd={h.get('cwd')}",
        f"created={h.get('timestamp')}",
        f"entries={len(session.entries)}",
    ]
    if name:
        parts.append(f"name={name!r}")
    if h.get("parentSession"):
        parts.append(f"parent={h['parentSession']}")
    return "  ".join(parts)


def open_for_reading(path: str, load: Callable[[str], Session] = load_session) -> Session:
    """Load a session, or fail with one line (exit 2); skipped lines are listed on stderr."""
    try:
        session = load(path)
    except SessionError as error:
        raise Fail(str(error)) from None
    for d in session.diagnostics:
        where = f"line {d.line}: " if d.line > 0 else ""
        warn(f"{path}: {where}{d.reason}" + (" (skipped)" if d.severity == "error" and d.offset >= 0 else ""))
    return session


def resolve_leaf(session: Session, ref: str | None) -> str | None:
    if ref is None:
        return session.tree.leaf_id
    try:
        return session.tree.resolve(ref)
    except EntryNotFound as error:
        raise Fail(f"{session.path}: {error}") from None


@click.command("inspect")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--tree", "show_tree", is_flag=True, help="Draw the branch structure, leaf marked, labels shown.")
@click.option("--leaf", "leaf_ref", metavar="ENTRY", help="Only the path to ENTRY (id, unique prefix or label).")
@click.option("--context", "show_context", is_flag=True, help="The messages a model would see from the leaf.")
@click.option("--stats", "show_stats", is_flag=True, help="Entries per type/role, branches, depth, tools, tokens.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="simple", show_default=True,
              help="Any tabulate table format.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: one object per row (first: the header).")
@click.option("--width", type=int, default=None, help="Cut summaries to this many columns (default: terminal).")
@click.option("--from", "source", type=click.Choice(["pi", "claude", "codex"]), default=None,
              help="Read FILE as this harness's format (default: told by the first lines).")
def inspect(file: Path, show_tree: bool, leaf_ref: str | None, show_context: bool, show_stats: bool, fmt: str,
            as_json: bool, width: int | None, source: str | None) -> None:
    """Show what is in a session FILE (pi v1/v2/v3, tutorial v1, a Claude Code transcript or a
    Codex rollout, read into the same entries: see the README's sections per harness).

    \b
    Examples:
      harnesskit inspect session.jsonl
      harnesskit inspect session.jsonl --tree
      harnesskit inspect session.jsonl --leaf checkpoint-1 --context
      harnesskit inspect session.jsonl --stats --format github
      harnesskit inspect session.jsonl --json | jq -r .summary
      harnesskit inspect ~/.claude/projects/-home-me-proj/<uuid>.jsonl --context
    """
    if sum([show_tree, show_context, show_stats]) > 1:
        raise Fail("choose one of --tree, --context, --stats")
    session = open_for_reading(str(file), lambda path: load_session(path, fmt=source))
    tree = session.tree
    leaf = resolve_leaf(session, leaf_ref)
    cols = None if as_json else (width or render.terminal_width())

    if show_stats:
        stats = session_stats(tree)
        if as_json:
            echo(render.json_line(stats))
            return
        echo(header_line(session))
        summary = [[k, stats[k]] for k in ("entries", "roots", "branch_points", "leaves", "depth", "cost")]
        echo(render.tabulate([*summary], headers=["stat", "value"], tablefmt=fmt, disable_numparse=True))
        for title, key in (("type", "types"), ("role", "roles"), ("tool", "tool_calls"), ("tokens", "tokens")):
            if stats[key]:
                echo()
                echo(render.tabulate(list(stats[key].items()), headers=[title, "count"], tablefmt=fmt))
        return

    if show_context:
        # no --leaf: the file's last entry, even one without an id (pi: leafId undefined -> last entry)
        context = build_context(tree, leaf if leaf_ref is not None else ...)
        if as_json:
            for message in context.messages:
                echo(render.json_line(message))
            return
        echo(header_line(session))
        model = context.model or {}
        echo(f"context from leaf {context.leaf_id}: {len(context.messages)} messages, "
                   f"model {model.get('provider')}/{model.get('modelId')}, thinking {context.thinking_level}")
        rows = [[i + 1, m.get("role"), render.message_summary(m)] for i, m in enumerate(context.messages)]
        echo(render.table(rows, ["#", "role", "content"], fmt, cols, 2))
        return

    path = None if leaf_ref is None else tree.path(tree.by_id.get(leaf) if leaf else None)
    labels = tree.labels()
    if show_tree:
        if as_json:
            kids = tree.children()
            for pos in path if path is not None else range(len(tree)):
                row = _row(session, pos, labels, leaf)
                row["children"] = [tree.ids[c] for c in kids.get(pos, [])]
                echo(render.json_line(row))
            return
        echo(header_line(session))
        for line in render.draw_tree(tree, path, labels, leaf, cols):
            echo(line)
        return

    positions = path if path is not None else range(len(tree))
    if as_json:
        echo(render.json_line({"kind": "header", "line": session.header_line, "dialect": str(session.dialect),
                                     "header": session.header}))
        for pos in positions:
            echo(render.json_line(_row(session, pos, labels, leaf)))
        return
    echo(header_line(session))
    echo(entries_table(session, path, fmt, cols))


def entries_table(session: Session, path: list[int] | None, fmt: str, cols: int | None) -> str:
    """One row per entry (or per entry of `path`): line, id (+label), parent, type, summary."""
    tree = session.tree
    labels = tree.labels()
    rows = []
    for pos in path if path is not None else range(len(tree)):
        entry = session.entries[pos]
        entry_id = tree.ids[pos] or "-"
        label = f" [{labels[entry_id]}]" if entry_id in labels else ""
        rows.append([session.lines[pos], entry_id + label, tree.parents[pos] or "-", render.entry_kind(entry),
                     render.entry_summary(entry)])
    return render.table(rows, ["line", "id", "parent", "type", "summary"], fmt, cols, 4)


def _row(session: Session, pos: int, labels: dict[str, str], leaf: str | None) -> dict:
    entry = session.entries[pos]
    entry_id = session.tree.ids[pos]
    message = entry.get("message") if entry.get("type") == "message" else None
    return {
        "kind": "entry",
        "line": session.lines[pos],
        "id": entry_id,
        "parentId": session.tree.parents[pos],
        "type": entry.get("type"),
        "role": message.get("role") if isinstance(message, dict) else None,
        "label": labels.get(entry_id or ""),
        "leaf": entry_id == leaf,
        "summary": render.entry_summary(entry),
        "entry": entry,
    }
