"""The state of the session directories as one listing saw it (Scan: each `*.jsonl` file's name
and key), and the output a listing printed, kept under it (OutputCache).

A listing of exactly the state listed before, with the same options, prints what was printed:
the cache's head holds everything the output was made from (every directory's names and keys as
scanned before the listing read anything, the options, the terminal's width, the time zone, the
index file and this package's modules) and must come out the same byte for byte. A change after
the scan moves a file's ctime past the one scanned, so only a file changed within the file
system's timestamp granularity before the scan could look unchanged after another write: while
any file is that new, no output is kept. This module is all a cached listing imports of the
listing (no msgspec, no reader).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import time
import zlib
from functools import partial
from operator import attrgetter, itemgetter
from pathlib import Path
from stat import S_ISREG

import orjson

from .format import home_dir

Key = tuple[int, int, int, int, int]  # a file's (size, mtime, ctime, inode, device)

_KEY_OF = attrgetter("st_size", "st_mtime_ns", "st_ctime_ns", "st_ino", "st_dev")
_MODE = attrgetter("st_mode")


def _scan(directory: Path) -> tuple[list[str], list[Key]]:
    """The `*.jsonl` regular files directly in `directory` (links followed), in os.listdir's order,
    and their keys: one stat each (by name, from the directory: no path walked again), and no
    Python per file unless one is odd (gone meanwhile, a folder, a dangling link)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return [], []
    try:
        names = [name for name in os.listdir(fd) if name.endswith(".jsonl")]
        stat = partial(os.stat, dir_fd=fd)
        try:
            found = list(map(stat, names))
            if all(map(S_ISREG, map(_MODE, found))):
                return names, list(map(_KEY_OF, found))
        except OSError:
            pass
        kept, keys = [], []
        for name in names:
            try:
                st = stat(name)
            except OSError:
                continue
            if S_ISREG(st.st_mode):
                kept.append(name)
                keys.append(_KEY_OF(st))
        return kept, keys
    except OSError:
        return [], []
    finally:
        os.close(fd)


class Scan:
    """The directories' files and their keys, taken once per listing: what the output cache is
    checked against, and what the listing reads from (so both stand for the same state)."""

    __slots__ = ("dirs", "names", "keys", "started_ns")

    def __init__(self, directories: list[Path]) -> None:
        self.started_ns = time.time_ns()  # before any stat: a change after it moves a file's ctime past this
        self.dirs = list(directories)
        self.names: list[list[str]] = []
        self.keys: list[list[Key]] = []
        for directory in self.dirs:
            names, keys = _scan(directory)
            self.names.append(names)
            self.keys.append(keys)

    def settled(self) -> bool:
        """Whether no file changed in the last _SETTLED_NS before the scan: a change within the
        file system's timestamp granularity of the stat could leave every key as it was."""
        newest = max((max(max(map(_CTIME, keys)), max(map(_MTIME, keys))) for keys in self.keys if keys), default=0)
        return newest < self.started_ns - _SETTLED_NS


_CTIME, _MTIME = itemgetter(2), itemgetter(1)
_SETTLED_NS = 2_000_000_000  # the coarsest timestamps in use (FAT, some NFS) are 2 s apart


_OUT_MAGIC = b"harnesskit list output 2\n"
_LENGTHS = struct.Struct("<QQ")
_CHECK = struct.Struct("<QI")  # after the head: the output's length and CRC-32


def output_path(shape: str) -> Path:
    """One file per kind of listing (`shape`: which directories, which options), whatever the
    terminal's width or the files' state: a new answer replaces the old one."""
    return home_dir() / "cache" / "list" / f"out-{hashlib.sha256(shape.encode()).hexdigest()[:32]}.bin"


def _code() -> list:
    """(path, size, mtime) of every module of this package: output made by other code is not ours."""
    root = Path(__file__).resolve().parent.parent
    out: list = []
    todo = [str(root)]
    while todo:
        folder = todo.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for e in sorted(entries, key=attrgetter("name")):
                if e.name.endswith(".py"):
                    st = e.stat()
                    out.append([e.path[len(str(root)):], st.st_size, st.st_mtime_ns])
                elif e.name != "__pycache__" and e.is_dir():
                    todo.append(e.path)
    return out


def _head(scanned: Scan, params: dict) -> bytes | None:
    """What an output cache must begin with to stand for this scan, these options and this code:
    the options, the index's identity, the code's files, then every directory's names and keys as
    they are now. None when they cannot be written (a name that is no UTF-8)."""
    try:
        meta = orjson.dumps({"params": params, "source": index_source(), "code": _code(),
                             "orjson": orjson.__version__})
        state = orjson.dumps([list(map(os.fspath, scanned.dirs)), scanned.names, scanned.keys])
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate (a name that is no UTF-8)
        return None
    return _OUT_MAGIC + _LENGTHS.pack(len(meta), len(state)) + meta + state


class OutputCache:
    """The output a listing of exactly this scan printed, with these options (`params`), kept under
    `shape`. Its head is compared whole, byte for byte: one changed key (size, times, inode) of one
    file, one name more or less, another index, other code, and the cache is passed over."""

    def __init__(self, scanned: Scan, shape: str, params: dict) -> None:
        self.scanned = scanned
        self.path = output_path(shape)
        self.head = _head(scanned, params)

    def load(self) -> bytes | None:
        """The output as it was printed (UTF-8), or None."""
        if self.head is None:
            return None
        try:
            data = self.path.read_bytes()
        except OSError:
            return None
        start = len(self.head) + _CHECK.size
        if len(data) <= start or not data.startswith(self.head):
            return None
        out = data[start:]
        # printed as it is: a damaged or cut output (the disk, another program) is passed over
        if _CHECK.unpack_from(data, len(self.head)) != (len(out), zlib.crc32(out)):
            return None
        return out

    def save(self, text: bytes) -> None:
        """Keep the output for the next listing of the same state, unless a file changed so
        recently that a change after the scan might have left its key as it was."""
        if self.head is None or not text or not self.scanned.settled():
            return
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fp:
                fp.write(self.head)
                fp.write(_CHECK.pack(len(text), zlib.crc32(text)))
                fp.write(text)
            os.replace(tmp, self.path)  # readers see the old output or the new one, never half of one
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()


def index_source() -> str | None:
    """"index DEV INODE" of the index file when there is one: a cache the index told stands only
    for that file (`index --rebuild` makes another)."""
    try:
        st = os.stat(home_dir() / "index.sqlite")
    except OSError:
        return None
    return f"index {st.st_dev} {st.st_ino}" if S_ISREG(st.st_mode) else None
