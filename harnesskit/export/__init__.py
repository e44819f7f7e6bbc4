"""Views of a session to look at and to share: one self-contained HTML page, or Markdown.

A session file is untrusted input. The HTML page embeds the entries as JSON data that no browser
executes (every `<`, `>` and `&` escaped), renders them with `textContent` only, and carries a
Content-Security-Policy that allows its own script (by hash) and nothing else: no network, no
other script, wherever the page is opened.
"""

from __future__ import annotations

import base64
import hashlib
import html
import importlib.resources
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

import orjson

from harnesskit.session.format import is_header
from harnesskit.session.loader import accept_header, load_session, no_header, open_binary
from harnesskit.session.reader import Diagnostic, iter_lines, line_content, open_range, read_records
from harnesskit.session.split import count_newlines
from harnesskit.session.tree import Tree, build_context
from harnesskit.text import escape_json, raw_in_json, visible


def _asset(name: str) -> str:
    return importlib.resources.files("harnesskit.export").joinpath(name).read_text(encoding="utf-8")


def _escape(data: bytes) -> bytes:
    """JSON text made safe inside a <script type="application/json"> element: `</script>` (or any
    tag) cannot close it, and U+2028/2029 cannot break a parser. Only valid inside JSON strings, where
    these characters can only be, so the value is unchanged."""
    if b"<" in data or b">" in data or b"&" in data:
        data = data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
    if b"\xe2\x80" in data:
        data = data.replace("\u2028".encode(), b"\\u2028").replace("\u2029".encode(), b"\\u2029")
    if raw_in_json(data):  # DEL and C1, raw in JSON but not on a terminal (stdout)
        data = escape_json(data.decode()).encode()
    return data


_CHUNK_BYTES = 1 << 20  # the entries escaped and written at once


def script_json(value: object) -> bytes:
    """`value` as JSON for a script data element (see `_escape`)."""
    try:
        data = orjson.dumps(value)
    except TypeError:  # what orjson will not write (lone surrogates, huge integers, deep nesting)
        import json

        from harnesskit.session.reader import room_for_depth

        with room_for_depth():
            data = json.dumps(value).encode()
    return _escape(data)


def stream_entries(path: Path, warn: Callable[[Diagnostic], None],
                   split: Callable[[BinaryIO, dict, int], int | None] | None = None,
                   lane: Callable[[bytes], object | None] | None = None,
                   ) -> tuple[dict, Iterator[tuple[dict, bytes | None]]]:
    """The (v3) header and the entries of any session file the core reads, each with its line's JSON
    text as written (None where the entry is not the line: a migrated or converted one). A pi v3 file
    streams (memory does not grow with it); a legacy one, or another harness's, is read into the
    core's entries in memory first. `split(fp, header, its line)`, called for a streamed file once its
    header is read (`fp` just after it), may return a line start where the entries are to stop (the
    rest are another process's: see `tail`). `lane(line)` is offered each whole line of a streamed
    file first (a caller's faster decoder, held to this reading by its own tests): what it returns
    that is not None is yielded in place of the entry. Raises SessionError."""
    from harnesskit.session.formats import sniff

    if sniff(path) != "pi":
        return _loaded(path, warn)
    fp = open_binary(path)
    records = read_records(iter_lines(fp), from_start=True)
    for item in records:  # up to the header, the reader's way
        if isinstance(item, Diagnostic):
            warn(item)
            continue
        dialect = accept_header(path, item)
        if dialect.legacy:
            fp.close()
            return _loaded(path, warn)
        header = item.obj
        end = split(fp, header, item.line) if split is not None else None
        return header, _rest(fp, item.line, warn, end, lane)
    size = path.stat().st_size
    fp.close()
    raise no_header(path, size, [])


def tail(path: Path, start: int, warn: Callable[[Diagnostic], None],
         lane: Callable[[bytes], object | None] | None = None) -> tuple[int, Iterator[tuple[dict, bytes | None]]]:
    """The lines before `start` (a line start after a v3 header: see `stream_entries`' split) and
    the entries from there on, numbered as one reading from the top numbers them."""
    fp = open_binary(path)
    number = count_newlines(fp.fileno(), 0, start)
    fp.seek(start)
    return number, _rest(fp, number, warn, None, lane)


def _rest(fp: BinaryIO, number: int, warn: Callable[[Diagnostic], None],
          end: int | None = None, lane: Callable[[bytes], object | None] | None = None,
          ) -> Iterator[tuple[dict, bytes | None]]:
    """The entries after the header line `number` (up to byte `end`): a line `lane` takes, or
    orjson reads as an entry, is taken as it is (its text as written); any other goes through the
    reader, for the reader's diagnostic. The loop is every export's cost, so `line_content` and
    `is_header` are inlined for the common line."""
    loads, error = orjson.loads, orjson.JSONDecodeError
    with fp:
        offset = fp.tell()
        for raw in fp if end is None else open_range(fp.fileno(), offset, end):
            number += 1
            if raw[-1:] == b"\n":
                content = raw[:-2] if raw[-2:-1] == b"\r" else raw[:-1]
                if lane is not None:
                    taken = lane(content)
                    if taken is not None:
                        yield taken, content
                        offset += len(raw)
                        continue
                try:
                    obj = loads(content)
                except error:
                    obj = None
                if obj.__class__ is dict:
                    kind = obj.get("type")
                    if kind.__class__ is str:
                        if (kind != "session" and kind != "header") or not is_header(obj):
                            yield obj, content
                        offset += len(raw)
                        continue
            content, terminated = line_content(raw, number)
            for record in read_records(((number, offset, content, terminated),)):
                if isinstance(record, Diagnostic):
                    warn(record)
                elif not is_header(record.obj):
                    yield record.obj, content
            offset += len(raw)


def _loaded(path: Path, warn: Callable[[Diagnostic], None]) -> tuple[dict, Iterator[tuple[dict, bytes | None]]]:
    session = load_session(path)
    for d in session.diagnostics:
        warn(d)
    return session.header, ((entry, None) for entry in session.entries)


def write_html(path: Path, out: BinaryIO, warn: Callable[[Diagnostic], None]) -> int:
    """The page for the session at `path`, written to `out`; returns the number of entries."""
    header, entries = stream_entries(path, warn)
    script = _asset("page.js")
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:"
    title = html.escape(visible(str(header.get("id") or path.name)))
    out.write(f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="harnesskit">
<title>{title} · harnesskit</title>
<style>{_asset("page.css")}</style>
</head><body>
<aside><header><input id="search" type="search" placeholder="search this session" autocomplete="off">
<div id="filters"><button data-filter="default" class="active">Default</button>
<button data-filter="no-tools">No tools</button><button data-filter="user">User</button>
<button data-filter="labeled">Labeled</button><button data-filter="all">All</button></div>
<div id="count"></div></header>
<div id="tree"><div id="tree-space"></div></div></aside>
<main><h1 id="title"></h1><div id="meta"></div><table id="totals"></table><div id="branch"></div>
<div id="messages"><div id="messages-more" class="more-marker"></div></div></main>
<script type="application/json" id="hk-header">""".encode())
    out.write(script_json(header))
    out.write(b'</script>\n<script type="application/json" id="hk-entries">[')
    # Entries go out escaped a chunk at a time (what _escape replaces occurs only inside JSON strings,
    # never in the ",\n" between entries, and escaping an escaped entry changes nothing).
    count = held = 0
    chunk: list[bytes] = []
    write = out.write
    separator = b""
    for entry, raw in entries:
        item = raw if raw is not None else script_json(entry)
        chunk.append(item)
        held += len(item)
        count += 1
        if held >= _CHUNK_BYTES:
            write(separator + _escape(b",\n".join(chunk)))
            separator = b",\n"
            chunk.clear()
            held = 0
    if chunk:
        write(separator + _escape(b",\n".join(chunk)))
    write(b"]</script>\n<script>")
    write(script.encode())
    write(b"</script>\n</body></html>\n")
    return count


# ------------------------------------------------------------------ Markdown


class _Visible:
    """A text stream whose every write is made `visible` first."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def write(self, text: str) -> int:
        return self._out.write(visible(text))


def _fence(text: str, info: str = "") -> str:
    """A fenced block that no run of backticks inside `text` can close."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}\n"


def _md_text(text: str) -> str:
    """Text as a Markdown paragraph that renders as written: no raw HTML, no accidental markup."""
    escaped = html.escape(text, quote=False)
    return "\n".join(line if line.strip() else "" for line in escaped.splitlines()) + "\n"


def _content_md(content: object) -> list[str]:
    if isinstance(content, str):
        return [_md_text(content)]
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(_md_text(str(block.get("text", ""))))
        elif kind == "thinking":
            parts.append("<details><summary>thinking</summary>\n\n" + _fence(str(block.get("thinking", "")))
                         + "\n</details>\n")
        elif kind == "toolCall":
            try:
                args = orjson.dumps(block.get("arguments", {}), option=orjson.OPT_INDENT_2).decode()
            except TypeError:  # lone surrogates, huge integers, deep nesting: the stdlib writes them
                import json

                from harnesskit.session.reader import room_for_depth

                with room_for_depth():
                    args = json.dumps(block.get("arguments", {}), indent=2, ensure_ascii=False)
            parts.append(f"**tool call** `{html.escape(str(block.get('name')))}`\n\n" + _fence(args, "json"))
        elif kind == "image":
            parts.append(f"*[image {html.escape(str(block.get('mimeType', '')))}]*\n")
    return parts


def write_markdown(path: Path, out: TextIO, leaf: str | None, warn: Callable[[Diagnostic], None]) -> int:
    """The branch to `leaf` (default: the last entry) as Markdown; returns the messages written.
    Everything goes out `visible`: no control byte or lone surrogate from the file, in a file or on
    a terminal."""
    out = _Visible(out)
    session = load_session(path)
    for d in session.diagnostics:
        warn(d)
    tree: Tree = session.tree
    context = build_context(tree, leaf if leaf is not None else ...)
    name = tree.name()
    header = session.header
    out.write(f"# {html.escape(name or 'Session ' + str(header.get('id')))}\n\n")
    model = context.model or {}
    out.write(f"- session: `{header.get('id')}`\n- directory: `{header.get('cwd')}`\n"
              f"- created: {header.get('timestamp')}\n- model: {model.get('provider')}/{model.get('modelId')}\n"
              f"- branch: to `{context.leaf_id}`, {len(context.messages)} messages\n\n")
    for message in context.messages:
        role = message.get("role")
        if role == "toolResult":
            mark = "error" if message.get("isError") else "result"
            text = "\n".join(str(b.get("text", "")) for b in message.get("content") or []
                             if isinstance(b, dict) and b.get("type") == "text")
            out.write(f"### Tool {mark}: `{html.escape(str(message.get('toolName')))}`\n\n{_fence(text)}\n")
        elif role in ("compactionSummary", "branchSummary"):
            title = "Compaction summary" if role == "compactionSummary" else "Branch summary"
            out.write(f"## {title}\n\n> " + _md_text(str(message.get("summary", ""))).rstrip("\n")
                      .replace("\n", "\n> ") + "\n\n")
        elif role == "bashExecution":
            out.write(f"### `$ {html.escape(str(message.get('command')))}` (exit {message.get('exitCode')})\n\n"
                      + _fence(str(message.get("output", ""))) + "\n")
        else:
            title = {"user": "User", "assistant": "Assistant", "custom": "Custom"}.get(str(role), str(role))
            out.write(f"## {title}\n\n" + "\n".join(_content_md(message.get("content"))) + "\n")
            if message.get("errorMessage"):
                out.write(f"*{html.escape(str(message.get('stopReason')))}: "
                          f"{html.escape(str(message['errorMessage']))}*\n\n")
    return len(context.messages)
