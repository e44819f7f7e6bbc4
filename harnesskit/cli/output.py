"""Lines to stdout as they are made: through a pager on a terminal, quietly ended by a closed pipe.

`emit(lines, page=True)` pipes into `$PAGER` (default `less`, with `LESS=FRX` unless LESS is set, so
output that fits the screen is printed and the pager leaves at once, as git does) only when stdout is
a terminal. `harnesskit inspect big | head -1` ends with exit 0: a reader that stops reading is not an
error (Click would make it exit 1, which `validate` uses for "problem found").
"""

from __future__ import annotations

import io
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable
from typing import TextIO

from harnesskit.text import visible

FLUSH_EVERY = 256  # lines; the first few are flushed at once, so the first row shows at once


def _pager_command() -> list[str] | None:
    spec = os.environ.get("PAGER")
    if spec is not None and spec.strip() in ("", "cat"):
        return None
    argv = shlex.split(spec) if spec else ["less"]
    return argv if argv and shutil.which(argv[0]) else None


def _write(lines: Iterable[str], out: TextIO) -> None:
    write, flush = out.write, out.flush
    for n, line in enumerate(lines):
        write(line if line.isprintable() else visible(line))  # the last guard: no control byte to a screen
        write("\n")
        if n < 4 or n % FLUSH_EVERY == 0:
            flush()
    flush()


def emit(lines: Iterable[str], page: bool = True) -> None:
    """Write `lines` (each without its newline) to stdout, or through a pager (see the module doc)."""
    argv = _pager_command() if page and sys.stdout.isatty() else None
    if argv is None:
        try:
            _write(lines, sys.stdout)
        except BrokenPipeError:
            # nobody reads any more: stop quietly, and keep Python from complaining at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(0) from None
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
