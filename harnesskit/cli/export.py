"""`harnesskit export`: a session as one self-contained HTML page, or as Markdown."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from harnesskit.session.loader import SessionError
from harnesskit.session.reader import Diagnostic, LineTooLong

from .errors import Fail, warn
from .output import quiet_if_closed
from .refs import regular
from .screen import echo


@click.command("export")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="FILE…")
@click.option("--html", "as_html", is_flag=True, help="One self-contained HTML page (the whole tree).")
@click.option("--md", "as_md", is_flag=True, help="Markdown of the current branch (or --leaf).")
@click.option("--parquet", "dataset", metavar="DIR", type=click.Path(path_type=Path),
              help="Add the sessions (files, or directories of them) to the Parquet dataset DIR.")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write here (default: standard output).")
@click.option("--leaf", "leaf_ref", metavar="ENTRY", help="With --md: the branch to ENTRY (id, prefix or label).")
def export(paths: tuple[Path, ...], as_html: bool, as_md: bool, dataset: Path | None, output: Path | None,
           leaf_ref: str | None) -> None:
    """Write a session FILE as a page to look at and share, or as Markdown; or many sessions as
    Parquet tables (sessions, entries, messages, tool_calls, usage) for DuckDB or Spark.

    The HTML page works opened from disk and attached to a bug report: no network, no external
    script or font. It shows the whole tree (the current branch highlighted; click any entry to
    open its branch), filters like pi's (Default, No tools, User, Labeled, All), a search box,
    collapsible tool calls, results and thinking, summaries, labels, and token and cost totals
    per model. Everything from the file is shown as text: nothing in it can run.

    Each --parquet export writes files of its own into DIR and never touches another's, so many
    machines can export into one directory (or bucket) in parallel: `harnesskit query DIR "SQL"`.

    \b
    Examples:
      harnesskit export session.jsonl --html -o session.html
      harnesskit export session.jsonl --md > session.md
      harnesskit export session.jsonl --md --leaf checkpoint-1
      harnesskit export ~/.harnesskit/sessions --parquet /data/sessions
    """
    if sum([as_html, as_md, dataset is not None]) != 1:
        raise Fail("choose one of --html, --md and --parquet DIR")
    if dataset is not None:
        export_parquet(paths, dataset, output, leaf_ref)
        return
    if len(paths) != 1:
        raise Fail("--html and --md take one session FILE")
    file = regular(paths[0])
    if leaf_ref is not None and as_html:
        raise Fail("--leaf goes with --md (the page holds every branch)")
    if output is not None and output.exists() and output.resolve() == file.resolve():
        raise Fail(f"{output}: is the session file itself; choose another output")

    def report(d: Diagnostic) -> None:
        warn(f"{file}: line {d.line}: {d.reason} (skipped)")

    from harnesskit import export as exporter
    from harnesskit.session.tree import EntryNotFound

    try:
        if output is None:
            with quiet_if_closed():  # `export --md FILE | head` ends as `inspect FILE | head` does
                if as_html:
                    exporter.write_html(file, sys.stdout.buffer, report)
                else:
                    leaf = _leaf(file, leaf_ref)
                    exporter.write_markdown(file, sys.stdout, leaf, report)
                sys.stdout.flush()  # (and its buffer): a last write fails here, not at exit past the guard
            return
        # written beside the target and renamed, so a failure never leaves half a page
        fd, temp = tempfile.mkstemp(prefix=f".{output.name}.", dir=output.parent or Path("."))
        try:
            with os.fdopen(fd, "wb") as out:
                if as_html:
                    exporter.write_html(file, out, report)
                else:
                    import io

                    text = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
                    try:
                        exporter.write_markdown(file, text, _leaf(file, leaf_ref), report)
                    finally:
                        text.detach()  # `out` closes the file (a detached wrapper cannot be closed)
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(temp, 0o666 & ~mask)  # as an ordinary new file, not mkstemp's 0600
            os.replace(temp, output)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        echo(f"wrote {output}", err=True)
    except (SessionError, EntryNotFound) as error:
        raise Fail(str(error)) from None
    except LineTooLong as error:  # the session read, not the output written
        raise Fail(f"{file}: {error.strerror}") from None
    except OSError as error:
        raise Fail(f"{output or 'stdout'}: {error.strerror or error}") from None


def _leaf(file: Path, ref: str | None) -> str | None:
    if ref is None:
        return None
    from harnesskit.session.loader import load_session

    return load_session(file).tree.resolve(ref)


def session_paths(paths: tuple[Path, ...]) -> list[Path]:
    """Files as given; directories walked for *.jsonl (sorted, so an export is reproducible)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        elif path.exists():
            found.append(regular(path))
        else:
            raise Fail(f"{path}: no such file or directory")
    return found


def _steady_memory_pool() -> None:
    """Arrow's jemalloc pool for this process (and its worker), unless ARROW_DEFAULT_MEMORY_POOL
    chooses; set before pyarrow is imported, as Parquet's encoders take Arrow's C++ default pool,
    which `pyarrow.set_memory_pool` does not change. With the Linux wheels' default (mimalloc, which
    keeps freed pages by thread) the export's peak RSS swung from run to run with the writer threads'
    timing: 80,000 entries in two processes peaked at 163-213 MB against 125-136 MB with jemalloc
    (system malloc 140-143), at 1% fewer instructions (callgrind, 10,000 entries: 1.93 G against 1.95 G)."""
    if sys.platform.startswith("linux") and "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")


def export_parquet(paths: tuple[Path, ...], dataset: Path, output: Path | None, leaf_ref: str | None) -> None:
    if output is not None or leaf_ref is not None:
        raise Fail("--parquet writes into its DIR: -o and --leaf do not apply")
    _steady_memory_pool()
    try:
        from harnesskit.export import parquet
    except ImportError:
        raise Fail("--parquet needs pyarrow: pip install 'harnesskit[fleet]'") from None
    files = session_paths(paths)

    def report(d: Diagnostic) -> None:
        warn(f"line {d.line}: {d.reason} (skipped)")

    try:
        stats = parquet.write_dataset(files, dataset, report)
    except OSError as error:
        raise Fail(f"{dataset}: {error.strerror or error}") from None
    for reason in stats.skipped:
        warn(f"{reason} (not exported)")
    echo(f"exported {stats.sessions} sessions ({stats.entries} entries, {stats.messages} messages) "
               f"to {dataset} as export {stats.export_id}")
