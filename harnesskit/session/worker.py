"""A generator run in a forked child process, its items streamed back (marshal: lists and tuples of
str, int, float, bytes and None, the fastest to pass): a second core reads and parses session files
while this process writes them into the index.

Only where `os.fork` exists and a core is idle: on a busy machine a second process only adds the
cost of passing the items (measured, passing them pickled: 100,000 sessions took 24% longer with
it at a load of 7 on 2 cores). The child touches nothing the parent holds (no database, no
terminal), writes only to its pipe and ends with `os._exit`. A child that
dies, or a parent that dies, ends the stream: the child on its next write (a broken pipe), the
parent with `Lost`, after which it can do the rest itself.
"""

from __future__ import annotations

import marshal
import os
import signal
import struct
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
_SIZE = struct.Struct("<Q")
_END = 0xFFFF_FFFF_FFFF_FFFF  # a size no item has: the child finished
_PIPE = 4 << 20


class Lost(RuntimeError):
    """The child ended before its last item (it was killed, or failed)."""


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def available() -> bool:
    """Fork, and a core no one else is using (the load average over the last minute leaves one)."""
    if not hasattr(os, "fork"):
        return False
    try:
        load = os.getloadavg()[0]
    except OSError:
        return False
    return load < cores() - 1


def forked(items: Iterable[T]) -> Iterator[T]:
    """The items of `items`, produced in a child process. Raises `Lost` if it ends early; closing
    the iterator early ends the child."""
    read_end, write_end = os.pipe()
    _widen(write_end)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child: measured by the parent's results
        os.close(read_end)
        code = 0
        try:
            with os.fdopen(write_end, "wb", buffering=1 << 16) as out:
                for item in items:
                    data = marshal.dumps(item)
                    out.write(_SIZE.pack(len(data)))
                    out.write(data)
                out.write(_SIZE.pack(_END))
        except BaseException:  # noqa: BLE001 - the parent sees the stream end early and does the rest
            code = 1
        os._exit(code)
    os.close(write_end)
    return _received(pid, read_end)


def _widen(fd: int) -> None:
    """A pipe that holds a whole batch (Linux: up to 1 MiB): with the 64 KiB default, every batch
    would pass in 16 hand-overs, each a wait for the other process's turn on a busy machine."""
    try:
        import fcntl

        limit = int(open("/proc/sys/fs/pipe-max-size").read())  # noqa: SIM115, PTH123 - one read
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, min(limit, _PIPE))
    except (ImportError, AttributeError, OSError, ValueError):
        pass


def _received(pid: int, read_end: int) -> Iterator[T]:
    try:
        with os.fdopen(read_end, "rb", buffering=1 << 16) as stream:
            while True:
                head = stream.read(_SIZE.size)
                if len(head) < _SIZE.size:
                    raise Lost("the worker process ended early")
                (size,) = _SIZE.unpack(head)
                if size == _END:
                    return
                data = stream.read(size)
                if len(data) < size:
                    raise Lost("the worker process ended early")
                yield marshal.loads(data)  # our own child's output
    finally:
        _reap(pid)


def _reap(pid: int) -> None:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    except (ChildProcessError, ProcessLookupError):
        pass
