"""The append-only writer of contract §4: lazy creation, torn-tail repair, one lock, fsync policy.

Nothing here truncates or rewrites a session file; `migrate` (the one rewriter) lives in
`rewrite.py` and never goes through this class.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable
from pathlib import Path

import orjson

from .format import FSYNC_POLICIES


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
    except TypeError:  # integers beyond 64 bits, lone surrogates, or nesting past orjson's 254 levels
        import json

        from harnesskit.text import escape_json

        from .reader import room_for_depth

        with room_for_depth():
            return escape_json(json.dumps(entry, ensure_ascii=False, separators=(",", ":"))).encode() + b"\n"


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is out (a write may be partial)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def create_synced(path: Path, data: bytes = b"", *, copy_of: int | None = None) -> None:
    """A new file (never an existing one) holding `data`, or every byte of the descriptor
    `copy_of`, fsynced before this returns. Complete or absent: a failure (a full disk) removes it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        if copy_of is not None:
            copy_fd(copy_of, fd)
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)


def check_creatable(directory: Path) -> None:
    """Raise OSError unless a session file can be created in `directory` (made when missing).

    A probe file is created and removed at once: the only check that holds for every cause (mode
    bits, a read-only mount, ACLs, root's bypass of mode bits, a file where the directory should
    be), where `os.access` answers for mode bits and read-only mounts only.
    """
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(directory))
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / f".harnesskit-probe-{os.getpid()}-{os.urandom(4).hex()}"
    os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    os.unlink(probe)


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


def is_first_reply(entry: dict) -> bool:
    """Whether this entry makes a new file worth creating: an assistant message (pi's rule), but
    not a failure before any reply (connection refused, 401): that leaves no file behind."""
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "assistant":
        return False
    return not (message.get("stopReason") == "error" and not message.get("content"))


class SessionWriter:
    """Appends entries to one session file.

    A new file is written lazily: header and entries are buffered until the first assistant
    message (pi's rule), then go out together. An existing file is appended to, after a newline
    if its last line was torn, and never gets a second header.

    If the path stops naming the open file (deleted, or replaced by another file), the next append
    first copies the whole file, from the descriptor still held, to a new file named by
    `fresh_name` in the same directory, and goes on there: `path` changes and `on_move(old, new)`
    is called. Nothing is written at the old path (whatever sits there now is someone else's).
    """

    def __init__(self, path: Path, *, header: dict | None, fsync: str = "turn",
                 fresh_name: Callable[[], str] | None = None,
                 on_move: Callable[[Path, Path], None] | None = None) -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy must be one of {', '.join(FSYNC_POLICIES)}, not {fsync!r}")
        self.path = path
        self.fsync = fsync
        self.fresh_name = fresh_name or (lambda: path.name)
        self.on_move = on_move
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
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = _open_locked(self.path, create)
        self._check_tail = not create  # done at the first append: reopening alone changes no byte
        if create and self.fsync != "never":
            fsync_dir(self.path.parent)

    def _repair_tail(self) -> None:
        """A torn last line must never be glued to our first entry (pi loses both lines there)."""
        assert self._fd is not None
        size = os.fstat(self._fd).st_size  # the descriptor, not the path: the file we hold
        if size and os.pread(self._fd, 1, size - 1) != b"\n":
            os.write(self._fd, b"\n")

    def moved(self) -> bool:
        """True when the path no longer names the file this writer holds (deleted or replaced)."""
        if self._fd is None:
            return False
        held = os.fstat(self._fd)
        try:
            now = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return True
        return (held.st_dev, held.st_ino) != (now.st_dev, now.st_ino)

    def _relocate(self) -> None:
        """Copy the held file, byte for byte, to a new file beside the old path and go on there."""
        assert self._fd is not None
        old_fd, old_path = self._fd, self.path
        directory = old_path.parent
        directory.mkdir(parents=True, exist_ok=True)  # the whole directory may have gone
        new_fd, new_path = _create_fresh(directory, self.fresh_name())
        try:
            copy_fd(old_fd, new_fd)
            if self.fsync != "never":
                os.fsync(new_fd)
                fsync_dir(directory)
        except BaseException:
            os.close(new_fd)
            new_path.unlink(missing_ok=True)
            raise
        self._fd, self.path = new_fd, new_path
        self._dirty = False
        os.close(old_fd)  # releases the old lock; the copy is locked already
        if self.on_move is not None:
            self.on_move(old_path, new_path)

    def append(self, entry: dict) -> None:
        line = encode(entry)
        if self._fd is None:
            self._pending.append(line)
            if is_first_reply(entry):
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
        if self.moved():
            self._relocate()
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
        if self.written and self.moved():  # what this run saved must not vanish with the old file
            self._relocate()
        if self.fsync != "never":
            self.sync()
        os.close(self._fd)  # closing releases the flock
        self._fd = None


def _open_locked(path: Path, create: bool) -> int:
    """Open for appending (and reading back: a copy is made from the descriptor), exclusively locked."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC
    if create:
        flags |= os.O_CREAT | os.O_EXCL
    fd = os.open(path, flags, 0o644)
    try:
        lock(fd, path)
    except OSError:
        os.close(fd)
        raise
    return fd


def lock(fd: int, path: Path) -> None:
    """The one writer's lock: exclusive, never waited for; held by another process, SessionLocked
    names it. Closing the descriptor releases it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise SessionLocked(path, lock_holder(path)) from None
        raise


def _create_fresh(directory: Path, name: str) -> tuple[int, Path]:
    """A new locked file in `directory` named `name` (or `stem-2.jsonl`...): never an existing one."""
    stem, suffix = os.path.splitext(name)
    for attempt in range(1, 1000):
        path = directory / (name if attempt == 1 else f"{stem}-{attempt}{suffix}")
        try:
            return _open_locked(path, create=True), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free file name", str(directory / name))


def copy_fd(source: int, target: int, block: int = 1 << 20) -> None:
    """Every byte of `source` (read by offset: it may be unlinked) appended to `target`."""
    offset = 0
    while data := os.pread(source, block, offset):
        write_all(target, data)
        offset += len(data)


def fsync_dir(directory: Path, *, must: bool = False) -> None:
    """Make a new or renamed name in `directory` durable. Best effort for an appended session (some
    filesystems refuse a directory fsync); `must` for a rewrite, where the rename is the point."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        if must:
            raise
        return
    try:
        os.fsync(fd)
    except OSError:
        if must:
            raise
    finally:
        os.close(fd)


def replace_synced(temp: Path, path: Path) -> None:
    """Put the complete, fsynced `temp` at `path` in one step (readers see the old file or the new
    one, never a mix) and make the rename itself durable."""
    os.replace(temp, path)
    fsync_dir(path.parent, must=True)
