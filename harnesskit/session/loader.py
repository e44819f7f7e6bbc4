"""bytes -> records -> migrated entries -> tree: one call that opens a session for reading."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .format import is_header
from .migrate import Dialect, Migrator, UnsupportedSession, detect, migrate_header
from .reader import Diagnostic, Record, iter_lines, open_lines, read_records, reporting
from .tree import Tree


class SessionError(Exception):
    """A session file that cannot be opened at all (missing, a directory, no header, too new)."""


@dataclass
class Session:
    path: Path
    header: dict  # the v3 form
    source_header: dict  # as written
    header_line: int
    dialect: Dialect
    entries: list[dict]  # v3 entries in file order
    lines: list[int]  # the line number of each entry
    diagnostics: list[Diagnostic]
    tree: Tree
    ends_with_newline: bool
    size: int

    @classmethod
    def assemble(cls, path: Path, header: Record, dialect: Dialect, tree: Tree, diagnostics: list[Diagnostic],
                 ends_with_newline: bool, size: int) -> Session:
        """A session from what a loader read: the header's v3 form and the tree's diagnostics are
        derived here, once, for every loader."""
        return cls(
            path=path,
            header=migrate_header(header.obj, dialect),
            source_header=header.obj,
            header_line=header.line,
            dialect=dialect,
            entries=tree.entries,  # type: ignore[arg-type] - a list, or a lazy Sequence
            lines=tree.lines,
            diagnostics=diagnostics + tree.diagnostics,
            tree=tree,
            ends_with_newline=ends_with_newline,
            size=size,
        )


def open_binary(path: str | os.PathLike[str]):  # noqa: ANN201 - a BufferedReader
    """Open for reading with errors that say what is wrong in one line."""
    p = Path(path)
    try:
        if p.is_dir():
            raise SessionError(f"{p}: is a directory, not a session file")
        return open_lines(p)  # a line past MAX_LINE refused as it is read
    except FileNotFoundError:
        raise SessionError(f"{p}: no such file") from None
    except PermissionError:
        raise SessionError(f"{p}: permission denied") from None
    except OSError as error:
        raise SessionError(f"{p}: {error.strerror or error}") from None


def accept_header(path: Path, first: Record) -> Dialect:
    """The dialect of the first parsed object; SessionError when it is no header we read."""
    if not is_header(first.obj):
        raise SessionError(
            f"{path}: line {first.line} is a {first.obj.get('type')!r} entry, but the first JSON "
            "object must be a session header"
        )
    try:
        return detect(first.obj)
    except UnsupportedSession as error:
        raise SessionError(f"{path}: {error}") from None


def no_header(path: Path, size: int, diagnostics: list[Diagnostic]) -> SessionError:
    if size == 0:
        return SessionError(f"{path}: empty file, no session header")
    return SessionError(f"{path}: no readable session header ({len(diagnostics)} unreadable lines)")


def _tail(fp) -> tuple[int, bool]:  # noqa: ANN001
    """The file's size and whether it ends with a newline (an empty file counts as ended)."""
    size = os.fstat(fp.fileno()).st_size
    if size == 0:
        return 0, True
    fp.seek(size - 1)
    return size, fp.read(1) == b"\n"


def load_session(path: str | os.PathLike[str], *, exact: bool = False, fmt: str | None = None,
                 on_progress: Callable[[int], None] | None = None) -> Session:
    """Read a whole session into memory (inspect, fork, migrate). Raises SessionError.

    `fmt` ("pi", "claude", "codex") forces a format; by default the first lines tell. `on_progress`
    hears how many bytes have been read (about every 128 KiB)."""
    p = Path(path)
    from .formats import sniff  # small; the readers themselves load only for their files

    fmt = fmt or sniff(p)
    if fmt != "pi":
        return load_foreign(p, fmt, on_progress=on_progress)
    with open_binary(p) as fp:
        diagnostics: list[Diagnostic] = []
        header: Record | None = None
        dialect: Dialect | None = None
        migrator: Migrator | None = None
        entries: list[dict] = []
        lines: list[int] = []
        for item in read_records(iter_lines(reporting(fp, on_progress)), exact, from_start=True):
            if isinstance(item, Diagnostic):
                diagnostics.append(item)
                continue
            if header is None:
                dialect = accept_header(p, item)
                header = item
                migrator = Migrator(item.obj, dialect)
                continue
            if is_header(item.obj):
                diagnostics.append(
                    Diagnostic(item.line, item.offset,
                               f"a second header (first on line {header.line}); ignored", "extra-header")
                )
                continue
            assert migrator is not None
            entries.append(migrator.entry(item.obj, item.line))
            lines.append(item.line)
        size, terminated = _tail(fp)
    if header is None or dialect is None:
        raise no_header(p, size, diagnostics)
    tree = Tree.from_entries(entries, lines)
    return Session.assemble(p, header, dialect, tree, diagnostics, terminated, size)


def load_foreign(p: Path, fmt: str, reader=None,  # noqa: ANN001 - a formats reader
                 on_progress: Callable[[int], None] | None = None) -> Session:
    """Another harness's file through its reader (`reader`, to read what it learnt after): the same
    Session, tree and diagnostics as pi's."""
    from .formats import DIALECTS, reader_for

    reader = reader or reader_for(fmt, p)
    with open_binary(p) as fp:
        diagnostics: list[Diagnostic] = []
        header: Record | None = None
        entries: list[dict] = []
        lines: list[int] = []
        for item in reader.convert(read_records(iter_lines(reporting(fp, on_progress)))):
            if isinstance(item, Diagnostic):
                if item.severity != "info":  # remarks only validate --strict shows
                    diagnostics.append(item)
            elif header is None:
                header = item
            else:
                entries.append(item.obj)
                lines.append(item.line)
        size, terminated = _tail(fp)
    if size == 0:
        raise SessionError(f"{p}: empty file, nothing to read")
    assert header is not None  # a foreign reader always yields one
    tree = Tree.from_entries(entries, lines)
    return Session.assemble(p, header, Dialect(DIALECTS[fmt], 0), tree, diagnostics, terminated, size)
