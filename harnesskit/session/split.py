"""Checking or indexing a big file in two processes: when to split, where, and the worker's life.

`check` and `index` each scan the first half themselves while a forked worker scans the rest;
what they exchange differs, how the worker is started and ended does not.
"""

from __future__ import annotations

import os
import signal
import stat
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:  # multiprocessing is imported only when a worker is started (start-up)
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

SPLIT_MIN_BYTES = 32 << 20  # below this one process is faster than forking a second


def split_point(fp: BinaryIO, start: int, share: float = 0.5) -> int | None:
    """The first line start after the middle of [start, end of file) (after its first `share` of bytes),
    or None when the file should be read by one process: small, not a regular file, one core, a threaded
    process that must not fork, or `HARNESSKIT_SPLIT=0` (`HARNESSKIT_SPLIT_MIN_BYTES=N` moves the
    threshold). Reads blocks with pread, so `fp` does not move and a huge line at the middle costs no memory."""
    if not worth_splitting(fp, start) or threading.active_count() > 1:
        return None
    fd = fp.fileno()
    info = os.fstat(fd)
    middle = start + int((info.st_size - start) * share)
    while True:
        block = os.pread(fd, 1 << 16, middle)
        if not block:
            return None
        newline = block.find(b"\n")
        if newline >= 0:
            cut = middle + newline + 1
            return cut if cut < info.st_size else None
        middle += len(block)


def worth_splitting(fp: BinaryIO, start: int) -> bool:
    """Whether [start, end of file) is worth a second process, threads aside (a caller running
    threads can stop them first, and only when this says yes)."""
    info = os.fstat(fp.fileno())
    setting = os.environ.get("HARNESSKIT_SPLIT_MIN_BYTES", "")
    least = int(setting) if setting.isdigit() else SPLIT_MIN_BYTES
    return (os.environ.get("HARNESSKIT_SPLIT") != "0" and stat.S_ISREG(info.st_mode)
            and info.st_size - start >= least and (os.cpu_count() or 1) >= 2)


def count_newlines(fd: int, start: int, stop: int) -> int:
    """The newlines in bytes [start, stop) of `fd`, read by pread in blocks (memory stays small, and
    the file's position does not move): how a process taking part of a file numbers its lines."""
    lines = 0
    while start < stop:
        block = os.pread(fd, min(1 << 20, stop - start), start)
        if not block:
            break
        lines += newlines(block)
        start += len(block)
    return lines


def newlines(block: bytes) -> int:
    """`block.count(b"\\n")`, found line to line by memchr while the lines are long: count looks at each
    byte in a plain C loop (5 instructions a byte), find skips a kilobyte line in a few dozen. Lines
    shorter than 256 bytes on average so far: the rest is counted, so short lines cost no more than
    before."""
    find = block.find
    n = 0
    at = find(b"\n")
    while at >= 0:
        n += 1
        if not n & 31 and at < n << 8:
            return n + block.count(b"\n", at + 1)
        at = find(b"\n", at + 1)
    return n


def fork_worker(target: Callable[..., None], args: tuple, duplex: bool) -> tuple[Connection, BaseProcess] | None:
    """Start `target(*args, conn)` in a forked process; this side's end of the pipe and the process,
    or None where fork is not available."""
    try:
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
    except (ImportError, ValueError):
        return None
    here, there = ctx.Pipe(duplex=duplex)
    worker = ctx.Process(target=_started, args=(target, (*args, there), here), daemon=True)
    # A Ctrl-C (to the whole process group) while the child is still in multiprocessing's start-up
    # would print multiprocessing's traceback there: the child is born with SIGINT blocked, and
    # unblocks it only inside a try. This side's own Ctrl-C waits for the fork only.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        worker.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    there.close()
    return here, worker


def _started(target: Callable[..., None], args: tuple, parents_end: Connection) -> None:
    """The worker's first steps: close the parent's end of the pipe, which the fork copied (held
    open here, a worker whose parent was killed would block on a full pipe forever instead of
    meeting a broken one), and take Ctrl-C again (it may be pending since the fork), quietly."""
    parents_end.close()
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        target(*args)
    except KeyboardInterrupt:
        return  # the parent has it too, and says so


def reap(here: Connection, worker: BaseProcess) -> None:
    """Close the pipe and make sure the worker is gone, however the exchange ended."""
    here.close()
    worker.join(5)
    if worker.is_alive():
        worker.terminate()
        worker.join()
