"""A progress bar on stderr for commands that read big files: `with progress(total, label) as report:`
gives the core an `on_progress(bytes_read)` callback (or None, and the core then reads as fast as it
can without one).

Shown only when stderr is a terminal, only after the read has taken a second (HARNESSKIT_PROGRESS_AFTER
seconds: tests set 0), never with the command's `-q`/`--quiet`, and erased when the read ends, so
stdout and a piped stderr never see it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import TextIO

import click

from harnesskit.text import spelled

from .table import terminal_width

_EVERY = 0.1  # seconds between redraws


class Bar:
    def __init__(self, total: int, label: str, stream: TextIO, after: float) -> None:
        self.total, self.label, self.stream = max(total, 1), spelled(label), stream
        self.start = time.monotonic()
        self.after, self.drawn_at = after, 0.0
        self.shown = False

    def __call__(self, done: int) -> None:
        if done >= self.total:  # read to the end: the bar goes at once (what follows is not reading)
            self.close()
            return
        now = time.monotonic()
        if now - self.start < self.after or now - self.drawn_at < _EVERY:
            return
        self.drawn_at = now
        fraction = min(max(done / self.total, 0.0), 1.0)
        width = terminal_width(80)
        numbers = f" {fraction:4.0%} {done / 1e6:,.0f}/{self.total / 1e6:,.0f} MB"
        label = self.label if len(self.label) <= width // 3 else "…" + self.label[-(width // 3 - 1):]
        room = max(width - len(label) - len(numbers) - 4, 10)
        filled = int(room * fraction)
        self.stream.write(f"\r{label} [{'#' * filled}{'.' * (room - filled)}]{numbers}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")  # the bar leaves no trace
            self.stream.flush()
            self.shown = False


def _quiet() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.params.get("quiet"))


@contextlib.contextmanager
def progress(total: int, label: str, quiet: bool = False, stream: TextIO | None = None
             ) -> Iterator[Callable[[int], None] | None]:
    """An `on_progress(bytes_read)` for a read of `total` bytes, or None when no bar may be shown."""
    stream = stream or sys.stderr
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if quiet or _quiet() or not terminal:
        yield None
        return
    try:
        after = float(os.environ.get("HARNESSKIT_PROGRESS_AFTER", "1"))
    except ValueError:
        after = 1.0
    bar = Bar(total, label, stream, after)
    try:
        yield bar
    finally:
        bar.close()


def file_size(path: str | os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
