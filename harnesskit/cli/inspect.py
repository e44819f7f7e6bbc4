"""`harnesskit inspect`: a tabulated dump, tree, context or stats of any session file.

The table and `--json` stream: each entry is printed as its line is read (the first row shows at
once, memory stays that of one line); a big v3 file is rendered by two processes taking turns by
blocks (`session.interleave`, with `Carry` what one block leaves to the next). `--stats` streams
too, keeping only the tree's columns. `--tree` of a whole v3 file is drawn from one read (in two
processes for a big one: tree_stream).
`--context`, `--leaf` and the other `--tree`s need the tree first: they index the file as `continue`
does (`index.load_for_continue`) and decode the entries they show one at a time, keeping none.
"""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import click
import orjson

from harnesskit.session import interleave
from harnesskit.session.format import session_name
from harnesskit.session.loader import Session, SessionError, load_session
from harnesskit.session.reader import MAX_DEPTH, Diagnostic
from harnesskit.session.stats import session_stats
from harnesskit.session.stream import Stream, TreeWatch, open_stream, tree_diagnostics
from harnesskit.session.tree import build_context
from harnesskit.text import escape_json, raw_in_json, spelled

from . import render, table
from .errors import Fail
from .output import Checked, emit, shared_output
from .progress import file_size, progress
from .refs import open_for_reading, resolve_leaf, session_path, warn_diagnostic
from .rows import COLUMNS, RIGHT, describe, entry_row, fit_line, header_line, label_of

JSON_SUMMARY = 240  # characters of `summary` in --json rows (the whole entry is in `entry`)
_FAST_MIN_BYTES = 4 << 20  # --json's msgspec lane (typed_rows) for this many bytes of lines or more (tests: 0)
















def entries_reader(session: Session) -> Callable[[list[int]], Iterator[dict]]:
    """The entries at many positions, read (from a lazy index: in runs) and kept by nobody."""
    decode_lines = getattr(session.entries, "decode_lines", None)
    if decode_lines is None:
        return lambda positions: map(session.entries.__getitem__, positions)
    return lambda positions: (entry for entry, _ in decode_lines(positions))


def reader_of(session: Session) -> Callable[[int], dict]:
    """entries[pos] without filling the lazy index's cache (a scan of every entry keeps none)."""
    entries = session.entries
    if hasattr(entries, "cache_limit"):
        entries.cache_limit = 0  # type: ignore[attr-defined]
    return entries.__getitem__


@click.command("inspect")
@click.argument("file", metavar="SESSION")
@click.option("--tree", "show_tree", is_flag=True, help="Draw the branch structure, leaf marked, labels shown.")
@click.option("--leaf", "leaf_ref", metavar="ENTRY", help="Only the path to ENTRY (id, unique prefix or label).")
@click.option("--context", "show_context", is_flag=True, help="The messages a model would see from the leaf.")
@click.option("--stats", "show_stats", is_flag=True, help="Entries per type/role, branches, depth, tools, tokens.")
@click.option("--format", "fmt", type=click.Choice(table.FORMATS, case_sensitive=False), default="simple",
              show_default=True, help="Table style of every table (the entries, --context, --stats).")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines: one object per row (first: the header).")
@click.option("--width", type=click.IntRange(table.MIN_WIDTH, table.MAX_WIDTH), default=None,
              help="Fit rows in this many columns (default: the terminal's, or $COLUMNS).")
@click.option("--no-pager", is_flag=True, help="Never page (a pager is used only when stdout is a terminal).")
@click.option("--from", "source", type=click.Choice(["pi", "claude", "codex"]), default=None,
              help="Read SESSION as this harness's format (default: told by the first lines).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar (one shows on a terminal's stderr after 1 s).")
def inspect(file: str, show_tree: bool, leaf_ref: str | None, show_context: bool, show_stats: bool, fmt: str,
            as_json: bool, width: int | None, no_pager: bool, source: str | None, quiet: bool) -> None:
    """Show what is in a SESSION: a path, a session id prefix, or a session name (set with /name).
    Any dialect: pi v1/v2/v3, tutorial v1, a Claude Code transcript or a Codex rollout, read into
    the same entries (see the README's sections per harness).

    The table and --json print each entry as it is read, so the first rows show at once on any size
    of file and `inspect SESSION | head` stops early. Their first line says what the file is; the
    table's last line counts its entries. Labels show as rows of their own there; --tree and --leaf
    show them on the entries they name (in --json too, as "label"). Column widths come from the
    terminal (wide characters count two columns); the summary is cut to fit. Every --format streams
    (tabulate's other styles need every row before the first, so they are not offered). On a
    terminal, output longer than the screen goes through $PAGER (default: less -FRX). A read that
    takes more than a second shows a progress bar on stderr when it is a terminal (not with -q, and
    for the table and --json only when their rows do not go to that terminal themselves).

    \b
    Examples:
      harnesskit inspect session.jsonl
      harnesskit inspect session.jsonl | head -20
      harnesskit inspect session.jsonl --tree
      harnesskit inspect session.jsonl --leaf checkpoint-1 --context
      harnesskit inspect session.jsonl --stats --format github
      harnesskit inspect session.jsonl --json | jq -r .summary
      harnesskit inspect ~/.claude/projects/-home-me-proj/<uuid>.jsonl --context
    """
    if sum([show_tree, show_context, show_stats]) > 1:
        raise Fail("choose one of --tree, --context, --stats")
    # Parsed JSON holds no cycles; with a million entries' columns alive, each full collection would
    # walk them all again (the reader and the index pause it too).
    enabled = gc.isenabled()
    gc.disable()
    try:
        path = session_path(file, pipes=not (show_context or leaf_ref))  # a pipe streams, unless they seek
        with contextlib.ExitStack() as bars:
            _inspect(path, show_tree, leaf_ref, show_context, show_stats, fmt.lower(), as_json, width,
                     no_pager, source, bars)
    finally:
        if enabled:
            gc.enable()


def _inspect(file: Path, show_tree: bool, leaf_ref: str | None, show_context: bool, show_stats: bool, fmt: str,
             as_json: bool, width: int | None, no_pager: bool, source: str | None, bars: contextlib.ExitStack) -> None:
    cols = None if as_json else (width or render.terminal_width())
    lines: Iterable[str | bytes | Checked] | None = None
    foreign = source not in (None, "pi") or (source is None and file.is_file() and _sniff(file) != "pi")
    if not foreign and show_tree and leaf_ref is None and not as_json and cols is not None and cols > 0:
        stream = _open_stream(file, bars)  # the whole tree of a v3 file: drawn from one read of it
        if stream.dialect.legacy:
            stream.close()
        else:
            lines = streamed_tree_lines(stream, cols)
    if lines is not None:
        pass
    elif foreign:  # another harness's file: its reader converts it whole (see session/formats)
        session = open_for_reading(str(file), lambda path, on_progress=None: load_session(path, fmt=source,
                                                                                          on_progress=on_progress))
    elif show_context or show_tree or leaf_ref is not None:
        from harnesskit.session.index import load_for_continue  # its worker's imports: only where used

        session = open_for_reading(str(file), load_for_continue)
    elif show_stats:
        lines = stats_lines(_open_stream(file, bars), fmt, cols, as_json)
    else:
        stream = _open_stream(file, bars, rows_as_read=True)
        lines = json_rows(stream) if as_json else table_rows(stream, fmt, cols)
    if lines is None:
        leaf = resolve_leaf(session, leaf_ref)
        if show_context:
            lines = context_lines(session, leaf if leaf_ref is not None else ..., fmt, cols, as_json)
        elif show_tree:
            lines = tree_lines(session, leaf_ref, leaf, cols, as_json)
        elif show_stats:
            lines = loaded_stats_lines(session, fmt, cols, as_json)
        else:
            lines = path_lines(session, leaf if leaf_ref is not None else None, fmt, cols, as_json)
    try:
        emit(lines, page=not no_pager)
    except SessionError as error:  # a LazyDecodeError: a damaged line that indexing could not see
        raise Fail(f"{error}; `harnesskit validate` shows every damaged line") from None


def _sniff(file: Path) -> str:
    from harnesskit.session.formats import sniff

    return sniff(file)


def _open_stream(file: Path, bars: contextlib.ExitStack, rows_as_read: bool = False) -> Stream:
    """The stream, with a progress bar while it is read (none beside rows written to the same terminal:
    they show the progress, and a bar would be drawn across them)."""
    busy = rows_as_read and sys.stdout.isatty()
    report = bars.enter_context(progress(file_size(file), str(file), quiet=busy))
    try:
        return open_stream(file, report)
    except SessionError as error:
        raise Fail(str(error)) from None


def entries_of(stream: Stream) -> Iterator[tuple[int, dict, bytes]]:
    """The entries in file order; the reader's warnings on stderr as they come, and the tree's
    (duplicate ids, dangling parentIds, cycles) after the last entry, as `load_session` reports them."""
    watch = TreeWatch()
    for item in stream.items(watch):
        if type(item) is Diagnostic:
            warn_diagnostic(stream.path, item)
            continue
        yield item  # type: ignore[misc]
    tree_warnings(stream, watch)


def tree_warnings(stream: Stream, watch: TreeWatch) -> None:
    if watch.suspect:
        for d in tree_diagnostics(stream.path):
            warn_diagnostic(stream.path, d)


def entries_layout(fmt: str, cols: int | None, line_width: int) -> table.Layout:
    """Fixed widths: line numbers, 8-character ids (pi's; longer ones are cut), the type, and the
    summary in what is left."""
    kind = 21 if cols is None or cols >= 90 else 18 if cols >= 70 else 12
    return table.flexible(fmt, COLUMNS, [max(4, line_width), 8, 8, kind, 0], RIGHT, 4, cols)




@dataclass
class Carry:
    """What the rows of a run of entries leave to the rows after them: the table's last line (how many
    entries, the last one's id, the session's name) and --json's last row, held back as it may be the
    leaf's. One run is the whole file, or a block of it when two processes take turns
    (`session.interleave`): a block's carry is then absorbed by the one before it."""

    count: int = 0
    leaf: object = None
    named: bool = False  # a session_info with a string name was seen: `name` is the last one's
    name: str | None = None
    held: bytes = b""  # the last row, escaped, with "leaf": false
    held_leaf: bytes = b""  # and with "leaf": true

    def absorb(self, later: Carry) -> bytes:
        """`later` follows: the held row, when later rows come (it was not the leaf's)."""
        before = b""
        if later.count:
            before, self.held, self.held_leaf, self.leaf = self.held, later.held, later.held_leaf, later.leaf
        self.count += later.count
        if later.named:
            self.named, self.name = True, later.name
        return before


def carried_rows(stream: Stream, body: interleave.Body, carry: Carry, watch: TreeWatch,
                 checked: Callable[[bytes], bool]) -> Iterator[bytes]:
    """The body's chunks of the whole stream: from two processes taking turns when the file is big and a
    core is free (the worker printing its own blocks on stdout, unless that is a terminal), else from
    this one. `checked(chunk)`: the chunk needs no pass of emit's guard (see `output.Checked`)."""
    warn = partial(warn_diagnostic, stream.path)
    chunks = interleave.rows(stream, body, carry, Carry, watch, warn, shared_output(checked), table.load_widths)
    return body(stream.items(watch), carry, warn) if chunks is None else chunks


def table_rows(stream: Stream, fmt: str, cols: int | None) -> Iterator[str | bytes]:
    yield fit_line(describe(stream.dialect, stream.header), cols)
    layout = entries_layout(fmt, cols, len(str(max(stream.size // 20, 1))))
    yield from layout.head()
    carry, watch = Carry(), TreeWatch()
    yield from carried_rows(stream, partial(table_body, layout), carry, watch, _unchecked)
    tree_warnings(stream, watch)
    yield from layout.end()
    leaf, name = carry.leaf, carry.name
    yield fit_line("  ".join([f"entries={carry.count}", f"leaf={leaf if isinstance(leaf, str) else '-'}",
                              *([f"name={name!r}"] if name else [])]), cols)


def table_body(layout: table.Layout, items: Iterable[tuple[int, dict, bytes] | Diagnostic], carry: Carry,
               warn: Callable[[Diagnostic], None]) -> Iterator[bytes]:
    """The table's rows of `items`, in chunks of encoded lines."""
    fmt = layout.fmt
    room = layout.widths[4]
    count, leaf, name, named = carry.count, carry.leaf, carry.name, carry.named
    row, cells = layout.row, entry_row
    summary, kind_of, fit = render.entry_summary, render.entry_kind, table.fit_measured
    w0, w1, w2, w3, w4 = layout.widths
    numbers = 10 ** w0  # line numbers below this fit their column
    template = layout.template() if fmt in ("simple", "plain", "github", "psql") else None
    boxed = fmt in ("github", "psql")
    out: list[str] = []
    size = 1 if count == 0 else 1024  # the first rows go at once, then in bigger and bigger chunks
    for item in items:
        if type(item) is Diagnostic:
            warn(item)
            continue
        line, entry, _ = item  # type: ignore[misc]
        count += 1
        leaf = entry.get("id")
        if entry["type"] == "session_info":
            name = session_name(entry, name)
            named = named or isinstance(entry.get("name"), str)
        entry_id, parent = entry.get("id"), entry.get("parentId")
        c1 = entry_id if entry_id.__class__ is str else "-"
        c2 = parent if parent.__class__ is str else "-"
        c3 = kind_of(entry)
        head = c1 + c2 + c3
        if (template is not None and line < numbers and head.isascii() and head.isprintable() and len(c1) <= w1
                and len(c2) <= w2 and len(c3) <= w3):  # Layout.line of entry_row's cells, without the layers
            text = summary(entry, room)
            last, used = fit(text if text.isprintable() else spelled(text), w4)
            start = template.format(line, c1, c2, c3)
            out.append(start + last + " " * (w4 - used) + " |" if boxed else start + last)
        else:
            out.append(row(cells(line, entry, room)))
        if len(out) >= size:
            yield _text_chunk(out)
            out.clear()
            size = min(2 * size, 1024)
    if out:
        yield _text_chunk(out)
    carry.count, carry.leaf, carry.name, carry.named = count, leaf, name, named


def _text_chunk(rows: list[str]) -> bytes:
    rows.append("")
    return "\n".join(rows).encode()


def json_rows(stream: Stream) -> Iterator[str | bytes | Checked]:
    yield render.json_line({"kind": "header", "line": stream.header_record.line, "dialect": str(stream.dialect),
                            "header": stream.header})
    if stream.dialect.legacy:  # migrated entries are encoded again, row by row
        held: tuple[int, dict, bytes] | None = None
        for item in entries_of(stream):  # one row behind: the last entry is the leaf
            if held is not None:
                yield json_text(held, False, False)
            held = item
        if held is not None:
            yield json_text(held, True, False)
        return
    if stream.size - stream._offset >= _FAST_MIN_BYTES and sys.getrecursionlimit() <= MAX_DEPTH:
        from .typed_rows import json_facts  # msgspec and its decoder: only where they pay (see check._typed_lane)

        stream.fast = json_facts(JSON_SUMMARY)
    yield from raw_json_chunks(stream)


def raw_json_chunks(stream: Stream) -> Iterator[bytes | Checked]:
    """The rows of v3 entries in chunks of encoded lines: each entry is its line as written (exact JSON,
    not encoded again), after a head encoded by orjson; DEL and C1 as escapes (see `escape_json`)."""
    carry, watch = Carry(), TreeWatch()
    for chunk in carried_rows(stream, json_body, carry, watch, _without_cr):
        yield Checked(chunk) if _without_cr(chunk) else chunk
    if carry.count:
        yield carry.held_leaf
    tree_warnings(stream, watch)


def _without_cr(chunk: bytes) -> bool:
    # valid JSON has no raw control byte but whitespace: of what the guard of `emit` changes, only a
    # CR between tokens (DEL and C1 are escaped), so a chunk without one skips its pass over every byte
    return b"\r" not in chunk


def _unchecked(chunk: bytes) -> bool:
    return False


def json_body(items: Iterable[tuple[int, dict | tuple, bytes] | Diagnostic], carry: Carry,
              warn: Callable[[Diagnostic], None]) -> Iterator[bytes]:
    """raw_json_chunks' rows of `items`, the last one held back in `carry` (it may be the leaf's). An
    entry is a dict, or the facts of the --json lane (typed_rows.json_facts) for a line it took."""
    dumps, summary, cut = orjson.dumps, render.entry_summary, table.fit
    out: list[bytes] = [carry.held] if carry.count else []  # the last row waits: it may be the leaf
    size = 1 if carry.count == 0 else 256  # the first rows go at once, then in bigger and bigger chunks
    last: tuple[int, dict | tuple, bytes] | None = None
    for item in items:
        if type(item) is Diagnostic:
            warn(item)
            continue
        last = item  # type: ignore[assignment]
        line, entry, content = item  # type: ignore[misc]
        if type(entry) is tuple:  # the lane's (id, parentId, role, summary): the row in one format, no dict
            out.append(_LANE_ROW % (line, dumps(entry[0]), dumps(entry[1]), entry[2], dumps(entry[3]), content))
        else:
            entry_id, parent, kind = entry.get("id"), entry.get("parentId"), entry["type"]
            message = entry.get("message") if kind == "message" else None
            try:
                head = dumps({"kind": "entry", "line": line, "id": entry_id if type(entry_id) is str else None,
                              "parentId": parent if type(parent) is str else None, "type": kind,
                              "role": message.get("role") if type(message) is dict else None, "leaf": False,
                              "summary": cut(summary(entry, JSON_SUMMARY), JSON_SUMMARY)})
            except TypeError:  # a lone surrogate: the stdlib encodes it (render.json_line)
                head = json_text(last, False, True).encode()  # type: ignore[arg-type]
                out.append(head + b"\n")
                continue
            out.append(head[:-1] + b',"entry":' + content + b"}\n")
        if len(out) > size:
            yield _json_chunk(out[:-1])  # the last row waits: it may be the leaf
            del out[:-1]
            size = min(2 * size, 256)  # rows of about a kilobyte: chunks of a few hundred KB
    if last is not None:
        carry.count += 1  # (rows were made: the held one is not the leaf's; the count is the table's)
        carry.held, carry.held_leaf = _json_chunk(out[-1:]), _json_chunk([_leaf_row(last)])
        del out[-1:]
    elif out:
        del out[-1:]  # the held row, still held
    if out:
        yield _json_chunk(out)


#: a row of the lane's facts as orjson.dumps writes the dict of `_leaf_row` (with "leaf": false), then
#: the line as written: the same bytes (held to it by tests/cli/test_json_lane.py)
_LANE_ROW = (b'{"kind":"entry","line":%d,"id":%b,"parentId":%b,"type":"message","role":%b,"leaf":false,'
             b'"summary":%b,"entry":%b}\n')


def _leaf_row(item: tuple[int, dict | tuple, bytes]) -> bytes:
    line, entry, content = item
    if type(entry) is not tuple:
        return json_text(item, True, True).encode() + b"\n"  # type: ignore[arg-type]
    head = orjson.dumps({"kind": "entry", "line": line, "id": entry[0], "parentId": entry[1], "type": "message",
                         "role": orjson.loads(entry[2]), "leaf": True, "summary": entry[3]})
    return head[:-1] + b',"entry":' + content + b"}\n"  # (DEL and C1: escaped by _json_chunk)


def _json_chunk(rows: list[bytes]) -> bytes:
    chunk = b"".join(rows)
    return escape_json(chunk.decode()).encode() if raw_in_json(chunk) else chunk  # raw in JSON strings


def json_text(item: tuple[int, dict, bytes], leaf: bool, raw: bool) -> str:
    line, entry, content = item
    if not raw:
        return render.json_line(json_row(line, entry, leaf))
    head = render.json_line(json_row(line, entry, leaf, with_entry=False))
    text = content.decode()
    if raw_in_json(content):  # DEL or C1, raw in a JSON string: as escapes (text.py)
        text = escape_json(text)
    return f'{head[:-1]},"entry":{text}}}'  # the line as written: exact JSON, not re-encoded


def json_row(line: int, entry: dict, leaf: bool, label: object = ..., with_entry: bool = True) -> dict:
    entry_id, parent = entry.get("id"), entry.get("parentId")
    message = entry.get("message") if entry.get("type") == "message" else None
    row = {
        "kind": "entry",
        "line": line,
        "id": entry_id if isinstance(entry_id, str) else None,
        "parentId": parent if isinstance(parent, str) else None,
        "type": entry.get("type"),
        "role": message.get("role") if isinstance(message, dict) else None,
        "leaf": leaf,
        "summary": table.fit(render.entry_summary(entry, JSON_SUMMARY), JSON_SUMMARY),
    }
    if label is not ...:
        row["label"] = label
    if with_entry:
        row["entry"] = entry
    return row


def path_lines(session: Session, leaf: str | None, fmt: str, cols: int | None, as_json: bool) -> Iterator[str]:
    """The path root -> `leaf` (None: every entry) of a loaded or indexed session (labels known), as a
    table or JSON rows."""
    tree = session.tree
    if leaf is None:
        path: Iterable[int] = range(len(tree))
        leaf = tree.leaf_id
    else:
        path = tree.path(tree.by_id.get(leaf))
    labels = tree.labels()
    get = reader_of(session)
    if as_json:
        yield render.json_line({"kind": "header", "line": session.header_line, "dialect": str(session.dialect),
                                "header": session.header})
        for pos in path:
            entry_id = tree.ids[pos]
            yield render.json_line(json_row(tree.lines[pos], get(pos), entry_id == leaf, labels.get(entry_id or "")))
        return
    yield fit_line(header_line(session), cols)
    widths = entries_layout(fmt, cols, len(str(max(tree.lines, default=1)))).widths
    widths[1] = min(max([8, *(table.display_width(f"{t} [{n}]") for t, n in labels.items())]), 40)
    layout = table.flexible(fmt, COLUMNS, widths, RIGHT, 4, cols)
    yield from table.render(layout, (entry_row(tree.lines[pos], get(pos), layout.widths[4], label_of(tree, pos, labels))
                                     for pos in path))




def tree_lines(session: Session, leaf_ref: str | None, leaf: str | None, cols: int | None,
               as_json: bool) -> Iterator[str]:
    tree = session.tree
    path = None if leaf_ref is None else tree.path(tree.by_id.get(leaf) if leaf else None)
    labels = tree.labels()
    get = reader_of(session)
    if as_json:
        kids = tree.children()
        for pos in path if path is not None else range(len(tree)):
            entry_id = tree.ids[pos]
            row = json_row(tree.lines[pos], get(pos), entry_id == leaf, labels.get(entry_id or ""))
            row["children"] = [tree.ids[c] for c in kids.get(pos, [])]
            yield render.json_line(row)
        return
    yield fit_line(header_line(session), cols)
    yield from render.draw_tree(tree, path, labels, leaf, cols, entries_reader(session))


def streamed_tree_lines(stream: Stream, cols: int) -> Iterator[str | Checked]:
    """`--tree` of a whole v3 file from one read (in two processes for a big one: see tree_stream),
    each entry keeping only what its line shows; labels and the name gathered on the way. The same
    lines as `tree_lines` of the indexed file."""
    from .tree_stream import UNNAMED, draw, read_columns, release, shape

    columns = read_columns(stream, cols, lambda d: warn_diagnostic(stream.path, d))
    try:  # (a worker that draws its half is ended however this ends)
        parent_at, diagnostics, starts = shape(columns)
        for d in diagnostics:
            warn_diagnostic(stream.path, d)
        labels = {target: label for target, label in columns.labels.items() if label is not None}
        name = None if columns.name is UNNAMED else columns.name
        yield fit_line(describe(stream.dialect, stream.header, len(columns.ids), name), cols)  # type: ignore[arg-type]
        yield from draw(columns, cols, parent_at, labels, starts)
    finally:
        release(columns)


def context_lines(session: Session, leaf: object, fmt: str, cols: int | None, as_json: bool) -> Iterator[str]:
    # no --leaf: the file's last entry, even one without an id (pi: leafId undefined -> last entry)
    context = build_context(session.tree, leaf)  # type: ignore[arg-type]
    if as_json:
        for message in context.messages:
            yield render.json_line(message)
        return
    yield fit_line(header_line(session), cols)
    model = context.model or {}
    yield fit_line(f"context from leaf {context.leaf_id}: {len(context.messages)} messages, "
               f"model {model.get('provider')}/{model.get('modelId')}, thinking {context.thinking_level}", cols)
    room = 1000 if cols is None else cols
    rows = [[str(i + 1), spelled(str(m.get("role"))), spelled(render.message_summary(m, room))]
            for i, m in enumerate(context.messages)]
    yield from table.render(table.fitted(fmt, ["#", "role", "content"], rows, [False, False, False], 2, cols), rows)


def stats_lines(stream: Stream, fmt: str, cols: int | None, as_json: bool) -> Iterator[str]:
    from harnesskit.session.stream_stats import stream_stats

    stats, entries, name = stream_stats(stream, lambda d: warn_diagnostic(stream.path, d))
    yield from _stats_table(stats, describe(stream.dialect, stream.header, entries, name), fmt, cols, as_json)


def loaded_stats_lines(session: Session, fmt: str, cols: int | None, as_json: bool) -> Iterator[str]:
    yield from _stats_table(session_stats(session.tree), header_line(session), fmt, cols, as_json)


def _stats_table(stats: dict, head: str, fmt: str, cols: int | None, as_json: bool) -> Iterator[str]:
    if as_json:
        yield render.json_line(stats)
        return
    yield fit_line(head, cols)
    summary = [[k, str(stats[k])] for k in ("entries", "roots", "branch_points", "leaves", "depth", "cost")]
    yield from table.render(table.fitted(fmt, ["stat", "value"], summary, [False, True]), summary)
    for title, key in (("type", "types"), ("role", "roles"), ("tool", "tool_calls"), ("tokens", "tokens")):
        if stats[key]:
            yield ""
            rows = [[spelled(str(k)), str(v)] for k, v in stats[key].items()]
            yield from table.render(table.fitted(fmt, [title, "count"], rows, [False, True], 0, cols), rows)
