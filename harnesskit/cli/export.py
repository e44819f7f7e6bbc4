"""`harnesskit export`: a session as one self-contained HTML page, or as Markdown."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from harnesskit.session.loader import SessionError
from harnesskit.session.reader import Diagnostic

from .errors import Fail, warn


@click.command("export")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--html", "as_html", is_flag=True, help="One self-contained HTML page (the whole tree).")
@click.option("--md", "as_md", is_flag=True, help="Markdown of the current branch (or --leaf).")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write here (default: standard output).")
@click.option("--leaf", "leaf_ref", metavar="ENTRY", help="With --md: the branch to ENTRY (id, prefix or label).")
def export(file: Path, as_html: bool, as_md: bool, output: Path | None, leaf_ref: str | None) -> None:
    """Write a session FILE as a page to look at and share, or as Markdown.

    The HTML page works opened from disk and attached to a bug report: no network, no external
    script or font. It shows the whole tree (the current branch highlighted; click any entry to
    open its branch), filters like pi's (Default, No tools, User, Labeled, All), a search box,
    collapsible tool calls, results and thinking, summaries, labels, and token and cost totals
    per model. Everything from the file is shown as text: nothing in it can run.

    \b
    Examples:
      harnesskit export session.jsonl --html -o session.html
      harnesskit export session.jsonl --md > session.md
      harnesskit export session.jsonl --md --leaf checkpoint-1
    """
    if as_html == as_md:
        raise Fail("choose one of --html and --md")
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
            if as_html:
                exporter.write_html(file, sys.stdout.buffer, report)
            else:
                leaf = _leaf(file, leaf_ref)
                exporter.write_markdown(file, sys.stdout, leaf, report)
            return
        # written beside the target and renamed, so a failure never leaves half a page
        fd, temp = tempfile.mkstemp(prefix=f".{output.name}.", dir=output.parent or Path("."))
        try:
            with os.fdopen(fd, "wb") as out:
                if as_html:
                    exporter.write_html(file, out, report)
                else:
                    import io

                    with io.TextIOWrapper(out, encoding="utf-8", write_through=True) as text:
                        exporter.write_markdown(file, text, _leaf(file, leaf_ref), report)
                        text.detach()
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(temp, 0o666 & ~mask)  # as an ordinary new file, not mkstemp's 0600
            os.replace(temp, output)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        click.echo(f"wrote {output}", err=True)
    except (SessionError, EntryNotFound) as error:
        raise Fail(str(error)) from None
    except OSError as error:
        raise Fail(f"{output or 'stdout'}: {error.strerror or error}") from None


def _leaf(file: Path, ref: str | None) -> str | None:
    if ref is None:
        return None
    from harnesskit.session.loader import load_session

    return load_session(file).tree.resolve(ref)
