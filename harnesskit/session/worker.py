"""A generator run in a forked child process, its items streamed back (marshal: lists and tuples of
str, int, float, bytes and None, the fastest to pass): a second core reads and parses session files
while this process writes them into the index.

Only where `os.fork` exists and a core is idle: on a busy machine a second process only adds the
cost of passing the items. The parent does not wait on it either: `Stream.ready()` lets it read
batches of its own meanwhile (see catalog._add_new), while a thread drains the pipe (see Stream).
The child touches nothing the parent holds (no database, no terminal), writes only to its pipe and
ends with `os._exit`. A child that dies, or a parent that dies, ends the stream: the child on its
next write (a broken pipe), the parent with `Lost`, after which it can do the rest itself.
"""

from __future__ import annotations

import marshal
import os
import signal
import struct
import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Generic, TypeVar

T = TypeVar("T")
_SIZE = struct.Struct("<Q")
_END = 0xFFFF_FFFF_FFFF_FFFF  # a size no item has: the child finished
_PIPE = 4 << 20
_AHEAD = 32 << 20  # bytes of whole items the parent holds before the child must wait (about 36 batches)


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
    """The child's items as they arrive; `ready()` says whether the next one has arrived whole, so the
    parent can do other work until then.

    A thread of the parent drains the pipe into whole items as they come, up to `ahead` bytes of them:
    a pipe holds 1 MiB (Linux's limit for an unprivileged process), about one batch of the index, so
    a child that could only write while the parent reads would wait whenever the parent was busy
    (inserting, or reading a batch of its own) and run at most one batch ahead. The thread spends its
    time in `os.read`, without the GIL, as the parent's SQLite statements run without it too.
    """

    def __init__(self, pid: int, fd: int, ahead: int = _AHEAD) -> None:
        self._pid, self._fd, self._ahead = pid, fd, ahead
        self._items: deque[bytes] = deque()  # whole items, not yet unmarshalled
        self._held = 0  # their bytes
        self._finished = False  # the child sent its end
        self._stopped = False  # the thread is done: finished, or the pipe ended early, or closing
        self._closing = False
        self._turn = threading.Condition()
        self._drain = threading.Thread(target=self._drained, name="harnesskit-worker-pipe", daemon=True)
        self._drain.start()

    def __iter__(self) -> Stream[T]:
        return self

    def ready(self) -> bool:
        """The next item (or the end) is here: `next` will not wait."""
        with self._turn:
            return bool(self._items) or self._stopped

    def __next__(self) -> T:
        with self._turn:
            while not self._items and not self._stopped:
                self._turn.wait()
            if self._items:
                data = self._items.popleft()
                self._held -= len(data)
                self._turn.notify_all()
            else:
                data = None
                finished = self._finished
        if data is None:
            self.close()
            if finished:
                raise StopIteration
            raise Lost("the worker process ended early")
        return marshal.loads(data)  # our own child's output

    def _drained(self) -> None:
        """(The thread) whole items from the pipe, until the end, an early end or `close`."""
        fd, turn = self._fd, self._turn
        try:
            while True:
                with turn:
                    while self._held >= self._ahead and not self._closing:
                        turn.wait()
                    if self._closing:
                        return
                head = _read_exactly(fd, _SIZE.size)
                if head is None:
                    return
                (size,) = _SIZE.unpack(head)
                if size == _END:
                    with turn:
                        self._finished = True
                    return
                data = _read_exactly(fd, size)
                if data is None:
                    return
                with turn:
                    self._items.append(data)
                    self._held += size
                    turn.notify_all()
        except OSError:
            return
        finally:
            with turn:
                self._stopped = True
                turn.notify_all()

    def close(self) -> None:
        """Ends the child if it still runs (its pipe then ends, and with it the thread)."""
        if self._fd < 0:
            return
        with self._turn:
            self._closing = True
            self._turn.notify_all()
        _reap(self._pid)
        self._drain.join()
        os.close(self._fd)
        self._fd = -1


def _read_exactly(fd: int, size: int) -> bytes | None:
    """`size` bytes from the pipe, or None when it ends first."""
    parts: list[bytes] = []
    got = 0
    while got < size:
        more = os.read(fd, size - got)
        if not more:
            return None
        parts.append(more)
        got += len(more)
    return parts[0] if len(parts) == 1 else b"".join(parts)


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
