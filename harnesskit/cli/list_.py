"""`harnesskit list`: sessions of this directory (or all), in pi's picker order, in a table that fits."""

from __future__ import annotations

import codecs
import contextlib
import gc
import os
import sys
import time
import unicodedata
from pathlib import Path

import click
import orjson

from harnesskit.session import snapshot, store
from harnesskit.session.format import shown_time

from .table import ROWS, terminal_width

HEADERS = ("modified", "name", "msgs", "model", "first message", "path")
_NAME_MAX, _MODEL_MAX, _ROOM_MIN, _GAP = 20, 16, 30, "  "


@click.command("list")
@click.option("--all", "everywhere", is_flag=True, help="Sessions of every directory, not just this one.")
@click.option("--json", "as_json", is_flag=True, help="JSON Lines, one session per line.")
@click.option("-n", "limit", type=click.IntRange(*ROWS), default=None, help="At most N sessions.")
@click.option("--session-dir", metavar="DIR", help="List this directory instead.")
@click.option("--full-path", is_flag=True, help="Print each path whole (the table is otherwise cut to the terminal).")
@click.option("--harness", type=click.Choice(["pi", "claude", "codex", "all"]), default="pi", show_default=True,
              help="Whose sessions of this directory: harnesskit's (pi format), Claude Code's, Codex's, or all.")
def list_(everywhere: bool, as_json: bool, limit: int | None, session_dir: str | None, full_path: bool,
          harness: str) -> None:
    """List sessions, newest first (by their last message, as pi's picker): modified, name, message
    count, model, first message and path, cut to fit the terminal.

    Where the index ($HARNESSKIT_HOME/index.sqlite, made by `harnesskit index`) is there, the rows
    come from it (--harness's too), first brought up to date for what changed. Otherwise only the files shown are read
    whole: the others are chosen from their first and last lines (and a cache under
    $HARNESSKIT_HOME/cache that is checked against each file's size and times).

    \b
    Examples:
      harnesskit list
      harnesskit list --all -n 20
      harnesskit list --full-path -n 1
      harnesskit list --json | jq -r .path
      harnesskit list --harness claude      # ~/.claude/projects/<this dir>/ ($CLAUDE_CONFIG_DIR wins)
      harnesskit list --harness all -n 10
    """
    if harness != "pi":
        from .list_harnesses import list_harnesses

        list_harnesses(harness, as_json, limit, session_dir, everywhere)
        return
    directories = store.all_session_dirs() if everywhere else [store.session_dir(os.getcwd(), session_dir)]
    width = terminal_width(80)
    enabled = gc.isenabled()
    gc.disable()  # the keys and rows of 100,000 sessions hold no cycles: no collection needs to walk them
    try:
        _list(directories, everywhere, as_json, limit, full_path, width)
    finally:
        if enabled:
            gc.enable()


def _list(directories: list[Path], everywhere: bool, as_json: bool, limit: int | None, full_path: bool,
          width: int) -> None:
    """From the output cache when exactly this state was listed so before; else read (the progress
    bar, the rows and the table imported only then)."""
    scanned = snapshot.Scan(directories)
    where = "all" if everywhere else os.path.abspath(directories[0])
    try:
        shape = orjson.dumps([where, as_json, limit, full_path]).decode()
    except TypeError:  # a directory name that is not UTF-8 (run from one): its bytes, as orjson takes UTF-8 only
        shape = orjson.dumps([os.fsencode(where).hex(), as_json, limit, full_path]).decode()
    cache = snapshot.OutputCache(scanned, shape, {
        "width": None if as_json else width, "root": os.fspath(store.sessions_root()), "clock": _clock()})
    out = cache.load()
    if out is not None:  # exactly this state of every file was listed so before, with these options
        _write(out)
        return
    from .progress import progress
    from .screen import echo

    with progress(0, "reading sessions") as bar:
        def on_progress(done: int, total: int) -> None:
            bar.total = max(total, 1)
            bar(done)
        rows = store.list_rows(directories, limit, on_progress if bar is not None else None, scanned)
    text = _shown(rows, width, as_json, full_path)
    if text is None:
        echo("no sessions" + ("" if everywhere else f" in {directories[0]}"), err=True)
        return
    click.echo(text, nl=False)
    with contextlib.suppress(UnicodeEncodeError):
        cache.save(text.encode())


def _clock() -> list:
    """What the local time of a timestamp depends on: TZ and the zone file it names or the system's."""
    tz, tzdir = os.environ.get("TZ"), os.environ.get("TZDIR")
    zones = ["/etc/localtime"]
    if tz:
        zones.append(os.path.join(tzdir or "/usr/share/zoneinfo", tz.lstrip(":")))
    files = []
    for zone in zones:
        try:
            st = os.stat(zone)
        except (OSError, ValueError):
            files.append(None)
        else:
            files.append([st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev])
    return [tz, tzdir, list(time.tzname), time.timezone, time.altzone, files]


def _write(out: bytes) -> None:
    """A cached output printed as click.echo printed it: its bytes as they are where stdout writes
    UTF-8 (and no escape sequence could be stripped), else through click as text."""
    encoding = codecs.lookup(getattr(sys.stdout, "encoding", None) or "ascii").name
    if encoding == "utf-8" and b"\x1b" not in out:
        click.echo(out, nl=False)
    else:
        click.echo(out.decode(), nl=False)


def _shown(rows: list[tuple], width: int, as_json: bool, full_path: bool) -> str | None:
    """The rows (Summary's fields, in order) as JSON Lines or as the table, as printed; None when
    there are none for the table."""
    from harnesskit.text import spelled

    from . import render

    if as_json:
        return "".join(render.json_line({
            "path": file, "id": session_id, "modified": modified, "cwd": cwd, "name": name,
            "firstMessage": first_user, "messages": messages, "model": model,
        }) + "\n" for file, modified, session_id, cwd, name, first_user, messages, model in rows)
    if not rows:
        return None
    files, modified, _ids, _cwds, names, first_users, messages, models = map(list, zip(*rows, strict=True))
    root = os.path.join(store.sessions_root(), "")
    when: dict[int | None, str] = {}
    if not full_path:
        files = [f[len(root):] if f.startswith(root) else f for f in files]
    columns = [[_when(m, when) for m in modified], _cleaned(names), list(map(str, messages)), _cleaned(models),
               _cleaned(first_users), files if "".join(files).isprintable() else list(map(spelled, files))]
    return table(columns, width, cut_path=not full_path) + "\n"


def _cleaned(texts: list[str | None]) -> list[str]:
    """_clean of each text ("" for none): one C pass over the column first, as most need no escape."""
    cut = [t[:400] if t else "" for t in texts]
    if "".join(cut).isprintable():
        return list(map(str.strip, cut))
    return [_clean(t) if t else "" for t in cut]


def table(cells: list[list[str]], width: int, cut_path: bool = True) -> str:
    """The columns (of HEADERS) as rows under their headers, every line at most `width` display
    columns (unless the path is whole).

    Column by column, so a listing of 100,000 sessions stays well under a second."""
    columns = [[h, *c] for h, c in zip(HEADERS, cells, strict=True)]
    plain = ["".join(c).isascii() for c in columns]  # one display column per character
    widths = [max(map(len if p else _width, c)) for p, c in zip(plain, columns, strict=True)]
    natural = widths[:]
    widths[1] = min(widths[1], max(_NAME_MAX, width // 5))  # a wide terminal shows longer names
    widths[3] = min(widths[3], _MODEL_MAX)
    room = width - sum(widths[:4]) - len(_GAP) * 5  # for the first message and the path
    for column in (1, 3):  # a narrow terminal: the name, then the model, give way (to 8 columns)
        give = min(max(_ROOM_MIN - room, 0), max(widths[column] - 8, 0))
        widths[column] -= give
        room += give
    message, path = widths[4], widths[5]
    if not cut_path:
        message = max(min(message, room - path), len(HEADERS[4]))
    elif message + path > room:
        path = max(min(path, room - min(message, room // 2)), 10)
        message = max(room - path, len(HEADERS[4]))
    widths[4], widths[5] = message, path
    fitted = []  # the cells of each column as its field of `spec` wants them
    spec = []  # one printf field a column: ASCII text is padded by `%`, at C speed (no Python per cell)
    for i, (column, w, longest) in enumerate(zip(columns, widths, natural, strict=True)):
        if i == 5:
            spec.append("%s")
            if not cut_path or longest <= w:
                fitted.append(column)
            elif plain[i]:  # _elide's ASCII case, inline: one row at a time costs seconds at 100,000
                head = (w - 1) // 3
                tail = w - 1 - head
                fitted.append([c if len(c) <= w else c[:head] + "…" + c[len(c) - tail:] for c in column])
            else:
                fitted.append([_elide(c, w) for c in column])
        elif i == 2:
            spec.append(f"%{w}s")
            fitted.append(column)
        elif plain[i]:
            spec.append(f"%-{w}s")
            fitted.append(column if longest <= w else [c if len(c) <= w else c[: w - 1] + "…" for c in column])
        else:
            spec.append("%s")
            fitted.append([_pad(_cut(c, w), w) for c in column])
    return "\n".join(map(str.rstrip, map(_GAP.join(spec).__mod__, zip(*fitted, strict=True))))


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _width(text))


def _when(seconds: float, memo: dict[int | None, str]) -> str:
    """The local minute of `seconds`, worked out once per minute (100,000 rows share few)."""
    minute = int(seconds // 60) if seconds == seconds and abs(seconds) < 1e18 else None  # NaN, infinities: "?"
    text = memo.get(minute)
    if text is None:
        text = memo[minute] = "?" if minute is None else shown_time(minute * 60)
    return text


def _clean(text: str) -> str:
    """One line, control characters made visible (a session file's text never drives the terminal)."""
    text = text[:400]  # more than a terminal row shows
    if text.isprintable():
        return text.strip()
    from harnesskit.text import visible

    from . import render

    return visible(render.one_line(text))


def _width(text: str) -> int:
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _prefix(text: str, width: int) -> str:
    """The longest start of `text` at most `width` columns wide."""
    if text.isascii():
        return text[:width]
    used = 0
    for i, c in enumerate(text):
        used += _width(c)
        if used > width:
            return text[:i]
    return text


def _cut(text: str, width: int) -> str:
    return text if _width(text) <= width else _prefix(text, width - 1) + "…"


def _elide(text: str, width: int) -> str:
    """The start and the end of a path (the file name's end tells sessions apart), "…" between."""
    if text.isascii():
        if len(text) <= width:
            return text
        head = (width - 1) // 3
        return text[:head] + "…" + text[len(text) - (width - 1 - head):]
    if _width(text) <= width:
        return text
    head = _prefix(text, (width - 1) // 3)
    tail = _prefix(text[::-1], width - 1 - _width(head))[::-1]
    return head + "…" + tail
