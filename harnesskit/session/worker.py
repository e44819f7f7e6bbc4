"""A generator run in a forked child process, its items streamed back (marshal: lists and tuples of
str, int, float, bytes and None, the fastest to pass): a second core reads and parses session files
while this process writes them into the index.

Only where `os.fork` exists and a core is idle: on a busy machine a second process only adds the
cost of passing the items. The parent does not wait on it either: `Stream.ready()` lets it read
batches of its own meanwhile (see catalog._add_new). The child touches nothing the parent holds (no
database, no terminal), writes only to its pipe and ends with `os._exit`. A child that
dies, or a parent that dies, ends the stream: the child on its next write (a broken pipe), the
parent with `Lost`, after which it can do the rest itself.
"""

from __future__ import annotations

import marshal
import os
import select
import signal
import struct
import time
from collections.abc import Iterable
from typing import Generic, TypeVar

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
    """Fork, and a core no one else is using: idle now (sampled from /proc/stat for a moment), or
    where that cannot be read, by the load average over the last minute (which also counts what
    this command itself just did, so it says "busy" for a while after any burst of work)."""
    if not hasattr(os, "fork"):
        return False
    idle = idle_cores()
    if idle is not None:
        return idle >= 1.5  # this process's core and most of another
    try:
        load = os.getloadavg()[0]
    except OSError:
        return False
    return load < cores() - 1


def idle_cores(seconds: float = 0.05) -> float | None:
    """How many cores were idle over the next `seconds` (Linux), or None."""
    try:
        before = _times()
        time.sleep(seconds)
        after = _times()
    except (OSError, ValueError, IndexError):
        return None
    busy, idle = (b - a for a, b in zip(before, after, strict=True))
    return (os.cpu_count() or 1) * idle / (busy + idle) if busy + idle else None


def _times() -> tuple[int, int]:
    """Jiffies spent busy and idle (idle and iowait) by all cores, from /proc/stat's first line."""
    with open("/proc/stat", "rb") as fp:  # noqa: PTH123 - one read
        fields = [int(x) for x in fp.readline().split()[1:9]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, idle


def forked(items: Iterable[T]) -> Stream[T]:
    """The items of `items`, produced in a child process. Raises `Lost` if it ends early; closing
    the stream early ends the child."""
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
    return Stream(pid, read_end)


class Stream(Generic[T]):
    """The child's items as they arrive; `ready()` says whether the next one has arrived whole
    (reading what is there meanwhile, without waiting), so the parent can do other work until then:
    a batch larger than the pipe arrives in parts, each as the child gets its turn to write it."""

    def __init__(self, pid: int, fd: int) -> None:
        os.set_blocking(fd, False)
        self._pid, self._fd = pid, fd
        self._data = bytearray()  # what has arrived of the next item: its size, then its bytes
        self._need = _SIZE.size

    def __iter__(self) -> Stream[T]:
        return self

    def ready(self) -> bool:
        while len(self._data) < self._need:
            try:
                chunk = os.read(self._fd, self._need - len(self._data))
            except BlockingIOError:
                return False
            if not chunk:
                return True  # the end (or a child that died): __next__ says which
            self._data += chunk
            if len(self._data) == _SIZE.size == self._need:
                (size,) = _SIZE.unpack(self._data)
                self._need = _SIZE.size if size == _END else _SIZE.size + size
                if size == _END:
                    return True
        return True

    def __next__(self) -> T:
        while not self.ready():
            select.select([self._fd], [], [])
        if len(self._data) < self._need:
            self.close()
            raise Lost("the worker process ended early")
        (size,) = _SIZE.unpack_from(self._data)
        if size == _END:
            self.close()
            raise StopIteration
        data, self._data, self._need = self._data, bytearray(), _SIZE.size
        return marshal.loads(memoryview(data)[_SIZE.size:])  # our own child's output

    def close(self) -> None:
        """Ends the child if it still runs."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            _reap(self._pid)


def _widen(fd: int) -> None:
    """A pipe that holds a whole batch (Linux: up to 1 MiB): with the 64 KiB default, every batch
    would pass in 16 hand-overs, each a wait for the other process's turn on a busy machine."""
    try:
        import fcntl

        limit = int(open("/proc/sys/fs/pipe-max-size").read())  # noqa: SIM115, PTH123 - one read
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, min(limit, _PIPE))
    except (ImportError, AttributeError, OSError, ValueError):
        pass


def _reap(pid: int) -> None:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    except (ChildProcessError, ProcessLookupError):
        pass
