"""An entry as a table row, and a session's one-line description: inspect's table, and the demo's
print of a file, show entries the same way."""

from __future__ import annotations

from harnesskit.session.loader import Session
from harnesskit.session.migrate import Dialect
from harnesskit.session.tree import Tree
from harnesskit.text import spelled

from . import render, table

COLUMNS = ["line", "id", "parent", "type", "summary"]
RIGHT = [True, False, False, False, False]

def describe(dialect: Dialect, header: dict, entries: int | None = None, name: str | None = None) -> str:
    parts = [f"session {dialect}"]  # what matters most first: a narrow terminal cuts the end
    if entries is not None:
        parts.append(f"entries={entries}")
    if name:
        parts.append(f"name={name!r}")
    parts += [f"id={header.get('id')}", f"cwd={header.get('cwd')}", f"created={header.get('timestamp')}"]
    if header.get("parentSession"):
        parts.append(f"parent={header['parentSession']}")
    return "  ".join(parts)


def header_line(session: Session) -> str:
    return describe(session.dialect, session.header, len(session.entries), session.tree.name())


def fit_line(text: str, cols: int | None) -> str:
    text = spelled(text)
    return text if cols is None else table.fit(text, cols)


def entry_row(line: int, entry: dict, room: int, label: str = "") -> list[str]:
    entry_id, parent = entry.get("id"), entry.get("parentId")
    return [str(line), spelled((entry_id if type(entry_id) is str else "-") + label),
            spelled(parent) if type(parent) is str else "-", spelled(render.entry_kind(entry)),
            spelled(render.entry_summary(entry, room))]  # escapes first: they take columns too


def label_of(tree: Tree, pos: int, labels: dict[str, str]) -> str:
    entry_id = tree.ids[pos]
    return f" [{labels[entry_id]}]" if entry_id in labels else ""


def entries_table(session: Session, path: list[int] | None, fmt: str, cols: int | None) -> str:
    """One row per entry (or per entry of `path`) of a loaded session: line, id (+label), parent,
    type, summary."""
    tree = session.tree
    labels = tree.labels()
    positions = path if path is not None else range(len(tree))
    room = 1000 if cols is None else cols
    rows = [entry_row(tree.lines[pos], session.entries[pos], room, label_of(tree, pos, labels)) for pos in positions]
    return "\n".join(table.render(table.fitted(fmt, COLUMNS, rows, RIGHT, 4, cols), rows))
