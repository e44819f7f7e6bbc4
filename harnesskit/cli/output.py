"""Lines to stdout as they are made: through a pager on a terminal, quietly ended by a closed pipe.

`emit(lines, page=True)` pipes into `$PAGER` (default `less`, with `LESS=FRX` unless LESS is set, so
output that fits the screen is printed and the pager leaves at once, as git does) only when stdout is
a terminal. `harnesskit inspect big | head -1` ends with exit 0: a reader that stops reading is not an
error (Click would make it exit 1, which `validate` uses for "problem found").

An item is a line (str, without its newline) or a chunk of whole lines already encoded (bytes, each
line ending in a newline): the fast modes of `inspect` hand over thousands of rows at once, written in
one call. Both pass the same last guard against control bytes, but for a `Checked` chunk, whose maker
has already made sure that the guard would change nothing (it costs a pass over every byte).
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple, TextIO

from harnesskit.text import LEAD_BYTES, raw_utf8, visible

FLUSH_EVERY = 256  # lines; the first few are flushed at once, so the first row shows at once
# what `visible` spells out, as UTF-8 bytes (C0 but tab and newline, DEL; C1 and the invisible ones
# start with a lead byte, no surrogate): every other byte is deleted by a C loop, and only lead bytes
# left over need a look with a pattern
_SAFE_BYTES = bytes(b for b in range(256) if not (b < 0x09 or 0x0b <= b < 0x20 or b == 0x7f or b in LEAD_BYTES))


def _unsafe(chunk: bytes) -> bool:
    found = chunk.translate(None, _SAFE_BYTES)
    return bool(found) and (bool(found.translate(None, LEAD_BYTES)) or raw_utf8(chunk))


class Checked(NamedTuple):
    """A chunk of encoded lines in which the guard would change no byte (its maker made sure)."""

    data: bytes


class SharedOutput:
    """stdout as a forked worker shares it to print its own chunks in turn (session.interleave's
    Handover): the parent flushes what it has written, the worker writes a chunk as `_write` would,
    through the same guard unless `checked(chunk)` vouches, as `Checked` does, that it changes nothing."""

    def __init__(self, fd: int, checked: Callable[[bytes], bool]) -> None:
        self.fd, self.checked = fd, checked

    def flush(self) -> None:
        sys.stdout.flush()
        sys.stdout.buffer.flush()

    def write(self, data: bytes) -> None:
        if not self.checked(data) and _unsafe(data):
            data = visible(data.decode("utf-8", "replace")).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]


def shared_output(checked: Callable[[bytes], bool]) -> SharedOutput | None:
    """stdout to share, or None where `emit` may not write to its file descriptor: a terminal (where
    a pager may take the lines), or no descriptor at all (output captured in memory)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # (io.UnsupportedOperation is both)
        return None
    return None if sys.stdout.isatty() else SharedOutput(fd, checked)


def _pager_command() -> list[str] | None:
    spec = os.environ.get("PAGER")
    if spec is not None and spec.strip() in ("", "cat"):
        return None
    argv = shlex.split(spec) if spec else ["less"]
    return argv if argv and shutil.which(argv[0]) else None


def _write(lines: Iterable[str | bytes | Checked], out: TextIO) -> None:
    write, flush = out.write, out.flush
    for n, line in enumerate(lines):
        if type(line) is Checked:
            flush()
            out.buffer.write(line.data)  # type: ignore[attr-defined]
            out.buffer.flush()  # type: ignore[attr-defined]
            continue
        if type(line) is bytes:  # whole lines: written as they are, after the text written before them
            if _unsafe(line):  # the same guard (newlines are left alone by `visible`)
                line = visible(line.decode("utf-8", "replace")).encode()
            flush()
            out.buffer.write(line)  # type: ignore[attr-defined]
            out.buffer.flush()  # type: ignore[attr-defined]
            continue
        write(line if line.isprintable() else visible(line))  # the last guard: no control byte to a screen
        write("\n")
        if n < 4 or n % FLUSH_EVERY == 0:
            flush()
    flush()


@contextlib.contextmanager
def quiet_if_closed() -> Iterator[None]:
    """Around writes to stdout: when nobody reads it any more (`| head`), stop quietly with exit 0,
    and keep Python from complaining at exit (Click would exit 1, validate's "problem found")."""
    try:
        yield
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(0) from None


def emit(lines: Iterable[str | bytes | Checked], page: bool = True) -> None:
    """Write `lines` (each without its newline) to stdout, or through a pager (see the module doc)."""
    argv = _pager_command() if page and sys.stdout.isatty() else None
    if argv is None:
        with quiet_if_closed():
            _write(lines, sys.stdout)
        return
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    sys.stdout.flush()
    pager = subprocess.Popen(argv, stdin=subprocess.PIPE, env=env)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the pager (as git does)
    try:
        with io.TextIOWrapper(pager.stdin, encoding="utf-8", errors="replace") as into:  # type: ignore[arg-type]
            try:
                _write(lines, into)
            except BrokenPipeError:
                pass  # the pager was quit before the end
    except BrokenPipeError:
        pass  # closing a pipe nobody reads
    finally:
        pager.wait()
        signal.signal(signal.SIGINT, previous)
