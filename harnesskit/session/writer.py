"""The append-only writer of contract §4: lazy creation, torn-tail repair, one lock, fsync policy.

Nothing here truncates or rewrites a session file; `migrate` (the one rewriter) lives in
`rewrite.py` and never goes through this class.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

import orjson

FSYNC_POLICIES = ("always", "turn", "never")


class SessionLocked(Exception):
    """Another process is writing this session."""

    def __init__(self, path: Path, pid: int | None) -> None:
        self.path = path
        self.pid = pid
        holder = f"process {pid}" if pid else "another process"
        super().__init__(f"{path} is being written by {holder}")


def encode(entry: dict) -> bytes:
    """One entry as one line of compact UTF-8 JSON."""
    try:
        return orjson.dumps(entry) + b"\n"
    except TypeError:  # integers beyond 64 bits or lone surrogates, which orjson refuses to write
        import json

        from harnesskit.text import escape_json

        return escape_json(json.dumps(entry, ensure_ascii=False, separators=(",", ":"))).encode() + b"\n"


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is out (a write may be partial)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def create_synced(path: Path, data: bytes) -> None:
    """A new file (never an existing one) holding `data`, fsynced before this returns."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def lock_holder(path: Path) -> int | None:
    """The pid holding a flock on `path`, read from /proc/locks (Linux); None when unknown."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as locks:
            rows = locks.read().splitlines()
    except OSError:
        return None
    wanted = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for row in rows:
        parts = row.split()
        if "->" in parts:
            continue  # a waiter, not the holder
        if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5] == wanted and parts[4].isdigit():
            return int(parts[4])
    return None


class SessionWriter:
    """Appends entries to one session file.

    A new file is written lazily: header and entries are buffered until the first assistant
    message (pi's rule), then go out together. An existing file is appended to, after a newline
    if its last line was torn, and never gets a second header.
    """

    def __init__(self, path: Path, *, header: dict | None, fsync: str = "turn") -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy must be one of {', '.join(FSYNC_POLICIES)}, not {fsync!r}")
        self.path = path
        self.fsync = fsync
        self._header = header  # None: the file exists and has its header
        self._pending: list[bytes] = []
        self._fd: int | None = None
        self._check_tail = False
        self._dirty = False
        self.written = 0  # entries appended by this writer
        if header is None:
            self._open(create=False)

    @property
    def created(self) -> bool:
        return self._fd is not None

    def _open(self, create: bool) -> None:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            flags |= os.O_CREAT | os.O_EXCL
        fd = os.open(self.path, flags, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SessionLocked(self.path, lock_holder(self.path)) from None
            raise
        self._fd = fd
        self._check_tail = not create  # done at the first append: reopening alone changes no byte
        if create and self.fsync != "never":
            _fsync_dir(self.path.parent)

    def _repair_tail(self) -> None:
        """A torn last line must never be glued to our first entry (pi loses both lines there)."""
        assert self._fd is not None
        with open(self.path, "rb") as fp:
            fp.seek(0, os.SEEK_END)
            if fp.tell() == 0:
                return
            fp.seek(-1, os.SEEK_END)
            last = fp.read(1)
        if last != b"\n":
            os.write(self._fd, b"\n")

    def lock_only(self) -> None:
        """Take the lock of an existing file now (so a second writer is refused before it starts)."""
        if self._fd is None and self._header is None:
            self._open(create=False)

    def append(self, entry: dict) -> None:
        line = encode(entry)
        if self._fd is None:
            self._pending.append(line)
            message = entry.get("message")
            if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "assistant":
                self._flush_pending()
            return
        self._write(line)

    def _flush_pending(self) -> None:
        assert self._header is not None
        self._open(create=True)
        self._write(encode(self._header) + b"".join(self._pending), count=len(self._pending))
        self._pending.clear()

    def _write(self, data: bytes, count: int = 1) -> None:
        assert self._fd is not None
        if self._check_tail:
            self._check_tail = False
            self._repair_tail()
        write_all(self._fd, data)
        self.written += count
        self._dirty = True
        if self.fsync == "always":
            self.sync()

    def sync(self) -> None:
        if self._fd is not None and self._dirty:
            os.fsync(self._fd)
            self._dirty = False

    def end_turn(self) -> None:
        if self.fsync in ("always", "turn"):
            self.sync()

    def close(self) -> None:
        if self._fd is None:
            return
        if self.fsync != "never":
            self.sync()
        os.close(self._fd)  # closing releases the flock
        self._fd = None

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
