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

With a `Handover` (the caller's output is a file descriptor the worker shares, not a pager), the
worker prints its own blocks there, in turn, instead of sending their bytes through the parent (which
copied about half of all the output): after each of its blocks it sends only what the parent carries
across, waits for the parent's word that everything before is out, writes, and says it is done; the
parent renders its next block meanwhile and prints nothing of it before that. The blocks are then of
one size for both.
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


class Handover(Protocol):
    """The caller's output, shared with the worker (see the module doc)."""

    def flush(self) -> None:
        """(In the parent) make what was printed so far reach the shared file descriptor."""

    def write(self, data: bytes) -> None:
        """(In the worker) print a block's chunks there as the caller's own output would."""


def bounds(fd: int, start: int, end: int, size: int | None = None, odd: float = 1.25) -> Iterator[tuple[int, int]]:
    """[start, end) in blocks of about `size` (default BLOCK) bytes, the odd ones `odd` times that, that
    begin at line starts (a longer line makes a longer block); both processes compute the same ones."""
    size = size or BLOCK
    at, nominal, k = start, start, 0
    while at < end:
        # the worker's (odd) blocks are larger when the parent also copies the worker's rows out
        nominal += size if k % 2 == 0 else int(size * odd)
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
         on_diagnostic: Callable[[Diagnostic], None], out: Handover | None = None,
         before_fork: Callable[[], object] | None = None) -> Iterator[bytes] | None:
    """The rows of `stream` from two processes, or None when it should be read by one (see the module
    doc): a legacy file (its migration runs in file order), a small file, no second core. `body`
    renders a block's items into `carry` (the parent's, `fresh()` ones in the worker). With `out`, the
    worker's blocks are printed by the worker itself, and not among the chunks returned. `before_fork`:
    what to import before the worker starts (a Ctrl-C landing as an import ends prints a traceback)."""
    if stream.dialect.legacy or split.split_point(stream._fp, stream._offset) is None:
        return None
    if before_fork is not None:
        before_fork()
    return _rows(stream, body, carry, fresh, watch, on_diagnostic, out)


def _rows(stream: Stream, body: Body, carry: C, fresh: Callable[[], C], watch: TreeWatch,
          on_diagnostic: Callable[[Diagnostic], None], out: Handover | None) -> Iterator[bytes]:
    fd, start, end = stream._fp.fileno(), stream._offset, stream.size
    odd = 1.25 if out is None else 1.0
    started = split.fork_worker(_worker, (replace(stream, on_progress=None), body, fresh, out, odd),
                                duplex=out is not None)
    here = started[0] if started is not None else None
    if here is not None and out is None and hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):  # a block in fewer reads (Linux; the pipe's size is bounded)
            fcntl.fcntl(here.fileno(), fcntl.F_SETPIPE_SZ, BLOCK)
    line = stream._next_line
    done = False
    writing = False  # the worker is printing a block: nothing is printed here until it is done
    try:
        for k, (begin, stop) in enumerate(bounds(fd, start, end, odd=odd)):
            if k % 2 == 1 and here is not None:
                if writing:  # (the parent's last block printed nothing)
                    writing = _written(started)  # type: ignore[arg-type]
                try:
                    diagnostics, theirs, seen, line = here.recv()
                    data = here.recv_bytes() if out is None else b""
                except (EOFError, OSError):  # the worker died: the parent reads the rest itself
                    here = None
                else:
                    for d in diagnostics:
                        on_diagnostic(d)
                    watch.absorb(seen)
                    held = carry.absorb(theirs)
                    if held:
                        yield held
                    if out is None:
                        yield data
                    else:
                        out.flush()
                        here.send(True)  # its turn
                        writing = True
                    continue
            part = stream.part(begin, stop, line, with_before=k == 0)
            for chunk in body(part.items(watch), carry, on_diagnostic):
                if writing:
                    writing = _written(started)  # type: ignore[arg-type]
                yield chunk
            line = part.next_line
        if writing:
            writing = _written(started)  # type: ignore[arg-type]
        done = True
    finally:
        stream.close()
        if started is not None:
            conn, worker = started
            conn.close()
            if not done:  # stopped early (a closed pipe, Ctrl-C, an error): the worker goes at once
                worker.terminate()
            worker.join()


def _written(started: tuple) -> bool:
    """Wait for the worker to have printed its block (False: nothing is being printed any more)."""
    here, worker = started
    try:
        said = here.recv()
    except (EOFError, OSError):
        said = None
    if said == "broken":  # the output was closed (`| head`): as the parent's own write would have found
        raise BrokenPipeError("the output was closed")
    if said != "done":
        worker.join()
        if worker.exitcode == -signal.SIGINT:  # a Ctrl-C ended it: this process has one coming too
            raise KeyboardInterrupt
        # killed while printing: how much of its block is out cannot be known
        raise RuntimeError("the second process ended while printing its rows; the output is incomplete")
    return False


def _worker(stream: Stream, body: Body, fresh: Callable[[], Carry], out: Handover | None, odd: float,
            conn) -> None:  # noqa: ANN001 - a Connection
    """The odd blocks, each sent as (diagnostics, carry, watch, next line number), then its bytes (or,
    with `out`, printed there when the parent says so)."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # (ignored while a pager runs)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it at once, with no traceback
    fd, line = stream._fp.fileno(), stream._next_line
    try:
        for k, (begin, stop) in enumerate(bounds(fd, stream._offset, stream.size, odd=odd)):
            if k % 2 == 0:  # the parent's: only its lines are counted
                line += split.count_newlines(fd, begin, stop)
                continue
            part = stream.part(begin, stop, line)
            diagnostics: list[Diagnostic] = []
            watch, carry = TreeWatch(block=True), fresh()
            data = b"".join(body(part.items(watch), carry, diagnostics.append))
            line = part.next_line
            conn.send((diagnostics, carry, watch, line))
            if out is None:
                conn.send_bytes(data)
                continue
            conn.recv()  # the parent's word: what comes before is out
            try:
                out.write(data)
            except BrokenPipeError:
                conn.send("broken")
                return
            conn.send("done")
    except Exception:  # noqa: BLE001 - no traceback on the user's terminal: the parent reads the rest itself
        return
