"""Rows of a big v3 file rendered by two processes, printed in file order, in the memory of two blocks.

A file printed row by row cannot be cut in two halves: the second half's rows would have to wait,
whole, until the first half is printed. So the file is cut into blocks of about `BLOCK` bytes (at line
starts) and the processes take turns: the parent renders the even blocks and yields their bytes as
it goes (the first row at once), while a forked worker renders the odd ones; after each of its own
blocks the parent takes the worker's next block from the pipe, and yields it. The worker is one
block ahead at most (it waits on the pipe), and numbers its lines by counting the newlines of the
parent's blocks. What crosses blocks is handled exactly: the tree's watch (`TreeWatch.absorb`), the
diagnostics (reported in file order), and the renderer's own carry (`Carry.absorb`: counts, the last
entry, a row held back). Where to split and the HARNESSKIT_SPLIT switches are `split.split_point`'s.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Protocol, TypeVar

from . import split
from .reader import Diagnostic
from .stream import Stream, TreeWatch

BLOCK = 1 << 20  # bytes: about a thousand entries of a typical session; a block's rows are held once


class Carry(Protocol):
    def absorb(self, later: Carry) -> bytes:
        """Take in the carry of the block that follows; the bytes to print before that block's rows."""


C = TypeVar("C", bound=Carry)
#: renders a block's items into chunks of encoded rows, updating the carry; diagnostics to the callback
Body = Callable[[Iterator, C, Callable[[Diagnostic], None]], Iterator[bytes]]


def bounds(fd: int, start: int, end: int, size: int | None = None) -> Iterator[tuple[int, int]]:
    """[start, end) in blocks of about `size` (default BLOCK) bytes, the odd ones 1.25 times that, that
    begin at line starts (a longer line makes a longer block); both processes compute the same ones."""
    size = size or BLOCK
    at, nominal, k = start, start, 0
    while at < end:
        # the worker's (odd) blocks are a quarter larger: the parent also copies the worker's rows out
        nominal += size if k % 2 == 0 else size + size // 4
        k += 1
        probe = max(nominal, at + 1) - 1  # the block ends after the first newline from here
        stop = end
        while probe < end:
            chunk = os.pread(fd, min(1 << 16, end - probe), probe)
            newline = chunk.find(b"\n")
            if newline >= 0:
                stop = probe + newline + 1
                break
            if not chunk:
                break
            probe += len(chunk)
        yield at, stop
        at = stop


def rows(stream: Stream, body: Body, carry: C, fresh: Callable[[], C], watch: TreeWatch,
         on_diagnostic: Callable[[Diagnostic], None]) -> Iterator[bytes] | None:
    """The rows of `stream` from two processes, or None when it should be read by one (see the module
    doc): a legacy file (its migration runs in file order), a small file, no second core. `body`
    renders a block's items into `carry` (the parent's, `fresh()` ones in the worker)."""
    if stream.dialect.legacy or split.split_point(stream._fp, stream._offset) is None:
        return None
    return _rows(stream, body, carry, fresh, watch, on_diagnostic)


def _rows(stream: Stream, body: Body, carry: C, fresh: Callable[[], C], watch: TreeWatch,
          on_diagnostic: Callable[[Diagnostic], None]) -> Iterator[bytes]:
    fd, start, end = stream._fp.fileno(), stream._offset, stream.size
    started = split.fork_worker(_worker, (replace(stream, on_progress=None), body, fresh), duplex=False)
    here = started[0] if started is not None else None
    if here is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):  # a block in fewer reads (Linux; the pipe's size is bounded)
            fcntl.fcntl(here.fileno(), fcntl.F_SETPIPE_SZ, BLOCK)
    line = stream._next_line
    done = False
    try:
        for k, (begin, stop) in enumerate(bounds(fd, start, end)):
            if k % 2 == 1 and here is not None:
                try:
                    diagnostics, theirs, seen, line = here.recv()
                    data = here.recv_bytes()
                except (EOFError, OSError):  # the worker died: the parent reads the rest itself
                    here = None
                else:
                    for d in diagnostics:
                        on_diagnostic(d)
                    watch.absorb(seen)
                    held = carry.absorb(theirs)
                    if held:
                        yield held
                    yield data
                    continue
            part = stream.part(begin, stop, line, with_before=k == 0)
            yield from body(part.items(watch), carry, on_diagnostic)
            line = part.next_line
        done = True
    finally:
        stream.close()
        if started is not None:
            conn, worker = started
            conn.close()
            if not done:  # stopped early (a closed pipe, Ctrl-C, an error): the worker goes at once
                worker.terminate()
            worker.join()


def _worker(stream: Stream, body: Body, fresh: Callable[[], Carry], conn) -> None:  # noqa: ANN001 - a Connection
    """The odd blocks, each sent as (diagnostics, carry, watch, next line number), then its bytes."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # (ignored while a pager runs)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it at once, with no traceback
    fd, line = stream._fp.fileno(), stream._next_line
    try:
        for k, (begin, stop) in enumerate(bounds(fd, stream._offset, stream.size)):
            if k % 2 == 0:  # the parent's: only its lines are counted
                line += split.count_newlines(fd, begin, stop)
                continue
            part = stream.part(begin, stop, line)
            diagnostics: list[Diagnostic] = []
            watch, carry = TreeWatch(block=True), fresh()
            data = b"".join(body(part.items(watch), carry, diagnostics.append))
            line = part.next_line
            conn.send((diagnostics, carry, watch, line))
            conn.send_bytes(data)
    except Exception:  # noqa: BLE001 - no traceback on the user's terminal: the parent reads the rest itself
        return
